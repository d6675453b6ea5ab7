"""The binder: the single writer of the cluster's state.

Each RPC becomes an operation on the binder's `Cluster` (admission, binds that never overcommit,
evictions with graceful termination, nominations). Operations run one batch at a time: the batch's
changes and events are sent to Kafka in one transaction, and every RPC in the batch is answered
after the commit, so an acknowledged write is durable and a crash mid-batch leaves no trace of it.
If a commit fails the in-memory state may be ahead of the log, so the binder exits and is rebuilt
from the log on restart (crash-only: there is no other recovery path to get wrong)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
from aiokafka import AIOKafkaProducer
from aiokafka.producer import sender as aiokafka_sender
from aiokafka.producer.message_accumulator import BatchBuilder

from podsched.api.documents import parse_json
from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object
from podsched.api.types import ObjectMeta, Pod
from podsched.cluster import events as ev
from podsched.cluster.binder import BindError
from podsched.cluster.delete_collection import Listed, ListedDeletion, delete_listed
from podsched.cluster.failure import record_scheduling_failure
from podsched.cluster.state import Cluster
from podsched.cluster.store import REMOVED, Change
from podsched.framework.status import Code, Status
from podsched.scheduler.pod_group_scheduler import (
    PodGroupWrite,
    actuate_pod_group_result,
    recorded_pod_group_result,
)
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service.clock import Clock, SystemClock
from podsched_service.codec import (
    change_record,
    event_record,
    mark_record,
    record_partition,
    status_code,
    status_code_of,
    to_json,
    topics,
)
from podsched_service.kafka_log import ensure_topics
from podsched_service.leader_election import BINDER_ROLE, QUEUE_ROLE, EpochFence, LeaderElection, latest_epoch
from podsched_service.replica import Replica
from podsched_service.scheduling import load_admission_config

from .config import BinderConfig
from .instrumentation import BinderTelemetry, RecordHeaders, TraceContext

log = logging.getLogger(__name__)

# BindResult.reason of a decision refused because its queue leader was deposed.
DEPOSED = "Deposed"
WRITER = "podsched-binder"
# The most record bytes per partition in one produce request (aiokafka's max_batch_size; 16 KiB by
# default): half of a broker's default message.max.bytes, the largest batch it accepts.
MAX_RECORD_BATCH_BYTES = 512 * 1024

# How long aiokafka waits before it asks again to add a partition to a transaction that the
# coordinator still calls busy (CONCURRENT_TRANSACTIONS): the previous transaction's commit markers
# are still being written. aiokafka waits 20 ms (its BACKOFF_OVERRIDE, from KAFKA-5477); the broker
# writes the markers in about 2.5 ms (its request log, WRITE_TXN_MARKERS), and a binder that starts
# its next transaction at once met the answer in one transaction of ten. The constant is aiokafka's
# for the whole process; only a transactional producer reads it, and the binder's is the only one.
CONCURRENT_TRANSACTIONS_BACKOFF = 0.003

# Event records a restarting binder reads back: it numbers new events after the newest and matches a
# repeat against a pod's recent events (EventRecorder looks at the last 50), so the newest records are
# enough, however many the events topic keeps for its retention time.
EVENTS_REPLAYED = 5000

# A record waiting for the batch's transaction: (topic, key, value, the trace it belongs to); a None
# value is a tombstone.
PendingRecord = tuple[str, bytes, bytes | None, TraceContext]


class BinderObserver(Protocol):
    """What the binder reports of its writes (instrumentation.BinderTelemetry): it hands over the
    trace each write and record belongs to, and names each step; spans and metrics are the observer's."""

    def current_trace(self) -> TraceContext: ...
    def trace_of(self, carrier: Mapping[str, str]) -> TraceContext | None: ...
    def within(self, context: TraceContext | None) -> AbstractContextManager[None]: ...
    def batch_started(self, operations: int) -> None: ...
    def change_recorded(self, change: Change) -> TraceContext: ...
    def event_recorded(self, event: ev.Event, pods_by_uid: Mapping[str, Pod]) -> TraceContext: ...
    def batch_applied(self) -> None: ...
    def committing(
        self, records: Sequence[tuple[str, TraceContext]]
    ) -> AbstractContextManager[list[RecordHeaders]]: ...
    def binding(
        self, context: TraceContext | None, pod: Pod | None, node_name: str
    ) -> AbstractContextManager[None]: ...
    def recording_pod_group_result(
        self, request: binder_pb2.RecordPodGroupResultRequest
    ) -> AbstractContextManager[None]: ...
    def pod_group_bound(self, count: int) -> None: ...
    def recording_failure(
        self, request: binder_pb2.RecordFailureRequest, pods_by_uid: Mapping[str, Any]
    ) -> AbstractContextManager[None]: ...


@dataclass
class Operation:
    """One RPC's change: `apply` runs against the cluster inside a batch, in the submitting RPC's
    trace (the operation's spans and records join it)."""

    apply: Callable[[Cluster], Any]
    trace: TraceContext
    done: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class Binder:
    def __init__(
        self, config: BinderConfig, clock: Clock | None = None, observer: BinderObserver | None = None
    ) -> None:
        self.config = config
        self.clock = clock or SystemClock()  # timestamps of changes and events, grace-period deadlines
        self.observer = observer or BinderTelemetry(self.clock)
        self.objects_topic, self.events_topic = topics(config.topic_prefix)
        self.cluster = Cluster(
            self.clock.time,
            uid_factory=lambda: str(uuid.uuid4()),
            # ResourceQuota admission runs here, in the single writer's serialized batches.
            quota_admission=load_admission_config(config.admission_config),
        )
        # Scheduling decisions come from the queue leader of the newest epoch only.
        self.fence = EpochFence()
        self.election: LeaderElection | None = None  # this binder's own, when several may run
        self.cluster.listeners.append(self._on_change)
        self.cluster.event_listeners.append(self._on_event)
        self._recording = False
        self._records: list[PendingRecord] = []
        # The version of the last change recorded on the objects topic: each record names it as its
        # predecessor (readers detect compaction's gaps) and each transaction marks it (compaction
        # never takes the highest version away). Set from the log on rebuild.
        self._last_recorded_version = 0
        # The JSON of each object this batch recorded, by id (the object is held, so no id is reused
        # within the batch): a write answers with the JSON its record carries instead of encoding again.
        self._batch_json: dict[int, tuple[Any, bytes]] = {}
        self._operations: asyncio.Queue[Operation] = asyncio.Queue()
        self._wake_timer = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.producer: AIOKafkaProducer | None = None
        self.failed = asyncio.Event()  # a commit failed: the process must restart

    # --- change capture ------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if not self._recording:
            return
        obj, key, value, object_json = change_record(change, WRITER, self.clock.time(), self._last_recorded_version)
        self._last_recorded_version = obj.metadata.resource_version
        self._batch_json[id(obj)] = (obj, object_json)
        trace = self.observer.change_recorded(change)
        self._records.append((self.objects_topic, key, value, trace))
        if change.type == REMOVED:
            # The tombstone lets compaction remove the object's records, the DELETED one included,
            # once followers have had delete.retention.ms to see it; the DELETED record before it
            # tells live followers what was deleted, at which version.
            self._records.append((self.objects_topic, key, None, trace))

    def _on_event(self, event: ev.Event) -> None:
        if not self._recording:
            return
        trace = self.observer.event_recorded(event, self.cluster.pods_by_uid)
        key, value = event_record(event)
        self._records.append((self.events_topic, key, value, trace))

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        await ensure_topics(config.kafka_bootstrap_servers, config.topic_prefix, config.topic_settings())
        if config.leader_election:
            await self._until_elected()
        aiokafka_sender.BACKOFF_OVERRIDE = CONCURRENT_TRANSACTIONS_BACKOFF
        self.producer = AIOKafkaProducer(
            bootstrap_servers=config.kafka_bootstrap_servers,
            transactional_id=config.transactional_id,
            enable_idempotence=True,
            acks="all",
            linger_ms=0,
            max_request_size=16 * 1024 * 1024,
            # A produce request carries one batch per partition, and the next waits for its answer:
            # at aiokafka's 16 KiB a Bind of 128 pods (about 200 KiB of records) was a dozen round
            # trips to the broker in a row. Within the broker's default message.max.bytes (1 MiB).
            max_batch_size=MAX_RECORD_BATCH_BYTES,
            partitioner=record_partition,
        )
        # Registering the transactional id fences a previous binder and aborts its open
        # transaction, so the log read next is final.
        await self.producer.start()
        # A restarted binder fences from the newest leader's epoch on, not from whoever writes first.
        self.fence = EpochFence(await latest_epoch(config.kafka_bootstrap_servers, config.topic_prefix, QUEUE_ROLE))
        await self._rebuild()
        self._tasks = [
            asyncio.create_task(self._write_loop(), name="binder-writes"),
            asyncio.create_task(self._termination_timer(), name="binder-terminations"),
        ]

    async def _until_elected(self) -> None:
        """Wait to lead the binders' election. A standby waits here, before it listens: its port is
        closed, so clients (which list every binder) reach the leader. Once elected it registers the
        transactional id, which fences the previous leader's producer, and rebuilds from the log."""
        elected = asyncio.Event()
        identity = self.config.replica_id or f"{socket.gethostname()}-{self.config.listen_address.rsplit(':', 1)[-1]}"
        self.election = LeaderElection(
            self.config.kafka_bootstrap_servers,
            self.config.topic_prefix,
            BINDER_ROLE,
            identity,
            on_elected=lambda epoch: elected.set(),
            on_deposed=self._deposed,
            clock=self.clock,
        )
        await self.election.start()
        if not elected.is_set():
            log.info("%s is a standby binder: waiting to lead", identity)
        await elected.wait()

    def _deposed(self) -> None:
        """Another binder leads: exit (its transactional id already fences this one's commits)."""
        log.error("deposed as the leading binder: stopping")
        self.failed.set()
        os.kill(os.getpid(), signal.SIGTERM)

    async def _rebuild(self) -> None:
        """Replay the log into the binder's own state, exactly as a replica does (nothing is
        recorded meanwhile: `_recording` is off)."""
        replica = Replica(
            self.cluster,
            self.config.kafka_bootstrap_servers,
            self.config.topic_prefix,
            follow_events=True,
            events_tail=EVENTS_REPLAYED,
        )
        try:
            count = await replica.replay()
        finally:
            await replica.stop()
        # The newest change or mark in the log: compaction may have removed the change records of
        # the highest versions (deleted objects), never the mark of the last transaction.
        self._last_recorded_version = replica.version
        log.info(
            "rebuilt from %d records: %d pods, %d nodes, resource version %d, %d events",
            count,
            len(self.cluster.pods),
            len(self.cluster.nodes),
            self.cluster.resource_version,
            len(self.cluster.events),
        )

    async def stop(self) -> None:
        if self.election is not None:
            await self.election.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.producer is not None:
            await self.producer.stop()

    # --- the write path --------------------------------------------------------------------------

    async def submit(self, apply: Callable[[Cluster], Any]) -> tuple[Any, tuple[int, int]]:
        """Run `apply` in the next batch; once the batch is committed, returns its result and the
        committed (resource version, last event sequence)."""
        (done,) = self.submit_all([(apply, None)])
        return await done

    def submit_all(
        self, applies: Sequence[tuple[Callable[[Cluster], Any], TraceContext | None]]
    ) -> list[asyncio.Future[Any]]:
        """Queue several operations, in order and one after the other, each in its trace (None: the
        caller's); each future is what `submit` would return for it. Each is its own operation (its
        changes all or none), and they usually share the next batch's transaction."""
        if self.failed.is_set():
            raise RuntimeError("binder is restarting after a failed commit")
        current = self.observer.current_trace()
        operations = [Operation(apply, current if trace is None else trace) for apply, trace in applies]
        for operation in operations:
            self._operations.put_nowait(operation)
        return [operation.done for operation in operations]

    async def _write_loop(self) -> None:
        while True:
            batch = [await self._operations.get()]
            while len(batch) < self.config.max_batch and not self._operations.empty():
                batch.append(self._operations.get_nowait())
            await self._run_batch(batch)

    async def _run_batch(self, batch: list[Operation]) -> None:
        outcomes: list[tuple[bool, Any]] = []
        self.observer.batch_started(len(batch))
        self._recording = True
        try:
            for operation in batch:
                with self.observer.within(operation.trace):
                    try:
                        outcomes.append((True, operation.apply(self.cluster)))
                    except (ApiError, BindError) as error:  # refused: changed nothing
                        outcomes.append((False, error))
                    except Exception as error:  # a bug: fail this write, keep the write loop alive
                        log.exception("applying a write failed unexpectedly")
                        outcomes.append((False, error))
            # Node-pressure eviction and the controllers react to this batch's changes in the same
            # transaction (a preempted pod's replacement commits with its eviction).
            try:
                self.cluster.reconcile()
            except Exception:  # a bug: the batch's own writes still commit; the next batch retries
                log.exception("node-pressure eviction or the workload controllers failed")
            self.cluster.refresh_pdb_status()
        finally:
            self._recording = False
            self.observer.batch_applied()
            self._batch_json.clear()
        records, self._records = self._records, []
        last_change = next((r for r in reversed(records) if r[0] == self.objects_topic), None)
        if last_change is not None:  # sent under the last change's trace context: no trace of its own
            key, value = mark_record(self._last_recorded_version)
            records.append((self.objects_topic, key, value, last_change[3]))
        if records:
            try:
                await self._commit(records)
            except Exception as error:
                log.exception("commit of %d records failed; restarting to rebuild from the log", len(records))
                self.failed.set()
                for operation in batch:
                    if not operation.done.done():
                        operation.done.set_exception(RuntimeError(f"write not committed: {error}"))
                os._exit(3)  # crash-only: the state in memory is ahead of the log
        self._wake_timer.set()
        # Events the topic no longer keeps, and more than a rebuilt binder reads, are forgotten: a
        # binder running for weeks holds what one restarted now would (repeats match recent events).
        self.cluster.recorder.expire(self.clock.time() - self.config.events_retention_ms / 1000, EVENTS_REPLAYED)
        # The versions as committed: by the time a caller resumes, the next batch may have been
        # applied but not committed, and a caller must never wait for a version that may vanish.
        committed = self.versions()
        for operation, (ok, value) in zip(batch, outcomes, strict=True):
            if operation.done.done():
                continue
            if ok:
                operation.done.set_result((value, committed))
            else:
                operation.done.set_exception(value)

    async def _commit(self, records: list[PendingRecord]) -> None:
        """Send the batch's records in one transaction and wait for its commit. The records go to the
        producer as record batches the binder fills itself, one per partition (another when one is
        full), in the order they were recorded: `producer.send` gave each record two coroutines and
        a delivery future of its own, and the commit waited on every one of them."""
        producer = self.producer
        assert producer is not None
        with self.observer.committing([(topic, trace) for topic, _, _, trace in records]) as headers:
            async with producer.transaction():
                partitions = {topic: sorted(await producer.partitions_for(topic)) for topic in {r[0] for r in records}}
                filling: dict[tuple[str, int], BatchBuilder] = {}
                delivered: list[asyncio.Future[Any]] = []
                for (topic, key, value, _), record_headers in zip(records, headers, strict=True):
                    all_partitions = partitions[topic]
                    partition = record_partition(key, all_partitions, all_partitions)
                    batch = filling.get((topic, partition))
                    if batch is None:
                        batch = filling[(topic, partition)] = producer.create_batch()
                    if batch.append(key=key, value=value, timestamp=None, headers=record_headers) is None:
                        # Full: send it, and start the next (an empty batch takes any one record).
                        delivered.append(await producer.send_batch(batch, topic, partition=partition))
                        batch = filling[(topic, partition)] = producer.create_batch()
                        batch.append(key=key, value=value, timestamp=None, headers=record_headers)
                for (topic, partition), batch in filling.items():
                    delivered.append(await producer.send_batch(batch, topic, partition=partition))
                await asyncio.gather(*delivered)

    async def _termination_timer(self) -> None:
        """The node agent's clock: remove terminating pods when their grace period ends."""
        while True:
            due = self.cluster.next_termination_time()
            self._wake_timer.clear()
            timeout = None if due is None else max(0.0, due - self.clock.time())
            try:
                await asyncio.wait_for(self._wake_timer.wait(), timeout)
                continue  # something changed: recompute
            except TimeoutError:
                pass
            await self.submit(lambda cluster: cluster.complete_terminations())

    def json_of(self, obj: Any) -> bytes:
        """`to_json(obj)`, from this batch's records when one of them carries `obj` (call it inside
        the operation that stored `obj`)."""
        recorded = self._batch_json.get(id(obj))
        return recorded[1] if recorded is not None and recorded[0] is obj else to_json(obj)

    def admit_leader(self, epoch: int) -> None:
        """Refuse a scheduling decision (Bind, RecordFailure) from a deposed queue leader. Runs in the
        write loop, so the check and the write are one step: nothing a deposed leader sends after its
        successor's first write is applied."""
        problem = self.fence.admit(epoch)
        if problem is not None:
            raise BindError(DEPOSED, problem)

    def versions(self) -> tuple[int, int]:
        return self.cluster.resource_version, self.cluster.recorder.next_sequence - 1


class BinderServicer(binder_pb2_grpc.BinderServicer):
    def __init__(self, binder: Binder) -> None:
        self.binder = binder
        self.observer = binder.observer

    async def _run(
        self, context: grpc.aio.ServicerContext, apply: Callable[[Cluster], Any]
    ) -> tuple[Any, tuple[int, int]]:
        try:
            return await self.binder.submit(apply)
        except (ApiError, BindError, RuntimeError) as error:
            await context.abort(*_refusal(error))

    async def _run_each(
        self, applies: Sequence[tuple[Callable[[Cluster], Any], TraceContext | None]]
    ) -> list[tuple[Any, tuple[int, int]] | Refused]:
        """Several operations of one call, each as `_run` runs it alone: its result and the committed
        versions, or the refusal its own call would have ended with."""
        try:
            submitted = self.binder.submit_all(applies)
        except RuntimeError as error:  # restarting after a failed commit: every one is refused
            return [Refused(*_refusal(error))] * len(applies)
        outcomes: list[tuple[Any, tuple[int, int]] | Refused] = []
        for done in submitted:
            try:
                outcomes.append(await done)
            except Exception as error:  # a bug in one operation is that operation's error alone
                outcomes.append(Refused(*_refusal(error)))
        return outcomes

    async def Write(self, request: binder_pb2.WriteRequest, context: grpc.aio.ServicerContext) -> Any:
        (outcome,) = await self._write_all([request])
        if outcome.code:
            code = status_code_of(outcome.code)
            await context.abort(code, outcome.message)
        return outcome.response

    async def WriteMany(self, request: binder_pb2.WriteManyRequest, context: grpc.aio.ServicerContext) -> Any:
        return binder_pb2.WriteManyResponse(outcomes=await self._write_all(request.writes))

    async def _write_all(self, writes: Sequence[binder_pb2.WriteRequest]) -> list[binder_pb2.WriteOutcome]:
        """Each write as Write answers it, in order: the stored object, or the status code and kubectl
        line of the refusal. Every object is decoded first, then all are submitted at once, each its
        own operation in the trace its request carries (the RPC's own if none): no task per object,
        as a gather of one coroutine per object had."""
        outcomes: list[binder_pb2.WriteOutcome | None] = []
        applies: list[tuple[Callable[[Cluster], Any], TraceContext | None]] = []
        for write in writes:
            decoded = _decoded_write(write)
            if isinstance(decoded, binder_pb2.WriteOutcome):
                outcomes.append(decoded)
            else:
                outcomes.append(None)
                applies.append((self._storing(decoded), self.observer.trace_of(write.trace_context)))
        try:
            submitted = iter(self.binder.submit_all(applies))
        except RuntimeError as error:  # the binder is restarting after a failed commit
            return [_refused_write(error) if outcome is None else outcome for outcome in outcomes]
        written: list[binder_pb2.WriteOutcome] = []
        for outcome in outcomes:
            if outcome is None:
                try:
                    (action, stored_json, uid), (version, sequence) = await next(submitted)
                except Exception as error:  # an admission refusal, or a bug logged by the write loop
                    outcome = _refused_write(error)
                else:
                    response = binder_pb2.WriteResponse(
                        action=action,
                        object_json=stored_json,
                        resource_version=version,
                        event_sequence=sequence,
                        uid=uid,
                    )
                    outcome = binder_pb2.WriteOutcome(response=response)
            written.append(outcome)
        return written

    def _storing(self, obj: Any) -> Callable[[Cluster], tuple[str, bytes, str]]:
        """The operation that stores a decoded object: (action, the stored object's JSON, its uid)."""

        def apply(cluster: Cluster) -> tuple[str, bytes, str]:
            action, stored = cluster.apply(obj)
            return action, self.binder.json_of(stored), stored.metadata.uid

        return apply

    async def Delete(self, request: binder_pb2.DeleteRequest, context: grpc.aio.ServicerContext) -> Any:
        grace = request.grace_period_seconds if request.HasField("grace_period_seconds") else None

        def delete(cluster: Cluster) -> bytes:
            return self.binder.json_of(cluster.delete(request.kind, request.namespace, request.name, grace))

        deleted_json, (version, sequence) = await self._run(context, delete)
        return binder_pb2.DeleteResponse(object_json=deleted_json, resource_version=version, event_sequence=sequence)

    async def DeleteMany(self, request: binder_pb2.DeleteManyRequest, context: grpc.aio.ServicerContext) -> Any:
        """A DeleteCollection's listed objects, one operation of the write loop: their records commit
        in one transaction instead of one per object."""
        grace = request.grace_period_seconds if request.HasField("grace_period_seconds") else None
        listed = [Listed(o.namespace, o.name, o.uid) for o in request.objects]

        def delete_all(cluster: Cluster) -> list[ListedDeletion]:
            return delete_listed(cluster, request.kind, listed, grace)

        deletions, (version, sequence) = await self._run(context, delete_all)
        return binder_pb2.DeleteManyResponse(
            outcomes=[_delete_many_outcome(deletion) for deletion in deletions],
            resource_version=version,
            event_sequence=sequence,
        )

    async def Bind(self, request: binder_pb2.BindRequest, context: grpc.aio.ServicerContext) -> Any:
        bindings = [(b.pod_uid, b.node_name, self.observer.trace_of(b.trace_context)) for b in request.bindings]

        def bind_all(cluster: Cluster) -> list[binder_pb2.BindResult]:
            self.binder.admit_leader(request.leader_epoch)
            results = []
            for pod_uid, node_name, pod_trace in bindings:
                try:
                    with self.observer.binding(pod_trace, cluster.pods_by_uid.get(pod_uid), node_name):
                        cluster.bind(pod_uid, node_name)
                except BindError as error:
                    results.append(
                        binder_pb2.BindResult(pod_uid=pod_uid, bound=False, reason=error.reason, message=error.message)
                    )
                else:
                    results.append(binder_pb2.BindResult(pod_uid=pod_uid, bound=True))
            return results

        results, (version, sequence) = await self._run(context, bind_all)
        return binder_pb2.BindResponse(results=results, resource_version=version, event_sequence=sequence)

    async def RecordPodGroupResult(
        self, request: binder_pb2.RecordPodGroupResultRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        """A pod-group cycle's writes, one operation of the write loop, so one transaction: the gang
        binds whole or not at all, even if the binder dies right after (crash-only)."""
        done, versions = await self._run(context, self._pod_group_result_writes(request))
        return _pod_group_result_response(request, done, versions)

    async def RecordPodGroupResults(
        self, request: binder_pb2.RecordPodGroupResultsRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        """Each group's writes as RecordPodGroupResult writes them (one operation each), all queued at
        once so that they usually commit in one transaction."""
        applies = [
            (self._pod_group_result_writes(result), self.observer.trace_of(result.trace_context))
            for result in request.results
        ]
        outcomes = await self._run_each(applies)
        return binder_pb2.RecordPodGroupResultsResponse(
            outcomes=[
                _outcome(
                    binder_pb2.RecordPodGroupResultOutcome,
                    outcome,
                    functools.partial(_pod_group_result_response, result),
                )
                for result, outcome in zip(request.results, outcomes, strict=True)
            ]
        )

    def _pod_group_result_writes(
        self, request: binder_pb2.RecordPodGroupResultRequest
    ) -> Callable[[Cluster], list[PodGroupWrite]]:
        writes = [
            PodGroupWrite(
                Pod(ObjectMeta(name="", uid=p.pod_uid)),
                node_name=p.node_name,
                message=p.message,
                nominated_node_name=p.nominated_node_name,
                rejector_plugins=frozenset(p.rejector_plugins),
                error=p.error,
            )
            for p in request.pods
        ]

        def record(cluster: Cluster) -> list[PodGroupWrite]:
            self.binder.admit_leader(request.leader_epoch)
            with self.observer.recording_pod_group_result(request):
                status = Status(Code(request.code), [request.message] if request.message else [])
                result = recorded_pod_group_result(
                    cluster,
                    request.namespace,
                    request.name,
                    status,
                    request.waiting_on_preemption,
                    writes,
                    list(request.victim_uids),
                )
                done = actuate_pod_group_result(cluster, result, cluster.clock())
                self.observer.pod_group_bound(sum(1 for write in done if write.node_name))
                return done

        return record

    async def RecordFailure(self, request: binder_pb2.RecordFailureRequest, context: grpc.aio.ServicerContext) -> Any:
        _, (version, sequence) = await self._run(context, self._failure_writes(request))
        return binder_pb2.RecordFailureResponse(resource_version=version, event_sequence=sequence)

    async def RecordFailures(self, request: binder_pb2.RecordFailuresRequest, context: grpc.aio.ServicerContext) -> Any:
        """Each failure's writes as RecordFailure writes them (one operation each), all queued at once
        so that they usually commit in one transaction."""
        applies = [
            (self._failure_writes(failure), self.observer.trace_of(failure.trace_context))
            for failure in request.failures
        ]
        outcomes = await self._run_each(applies)
        return binder_pb2.RecordFailuresResponse(
            outcomes=[
                _outcome(
                    binder_pb2.RecordFailureOutcome,
                    outcome,
                    lambda _, versions: binder_pb2.RecordFailureResponse(
                        resource_version=versions[0], event_sequence=versions[1]
                    ),
                )
                for outcome in outcomes
            ]
        )

    def _failure_writes(self, request: binder_pb2.RecordFailureRequest) -> Callable[[Cluster], None]:
        def record(cluster: Cluster) -> None:
            self.binder.admit_leader(request.leader_epoch)
            with self.observer.recording_failure(request, cluster.pods_by_uid):
                record_scheduling_failure(
                    cluster,
                    request.pod_uid,
                    request.message,
                    request.nominated_node_name,
                    list(request.victim_uids),
                    list(request.clear_nomination_uids),
                    request.clear_own_nomination,
                )

        return record


@dataclass(frozen=True)
class Refused:
    """One operation of a call that carries several, refused: the status its own call would end with."""

    code: grpc.StatusCode
    message: str


def _decoded_write(write: binder_pb2.WriteRequest) -> Any:
    """The write's object, decoded and validated, or the outcome refusing it (a WriteOutcome)."""
    try:
        return decode_object(parse_json(write.object_json), owned=True)
    except ApiError as error:
        return binder_pb2.WriteOutcome(code=status_code(error).value[0], message=error.kubectl_message())
    except ValueError as error:
        code = grpc.StatusCode.INVALID_ARGUMENT.value[0]
        return binder_pb2.WriteOutcome(code=code, message=f"error: invalid JSON: {error}")


def _refused_write(error: Exception) -> binder_pb2.WriteOutcome:
    """A write's refusal: an admission error's own code and kubectl line, UNAVAILABLE while the
    binder restarts after a failed commit, UNKNOWN for a bug."""
    if isinstance(error, ApiError):
        return binder_pb2.WriteOutcome(code=status_code(error).value[0], message=error.kubectl_message())
    if isinstance(error, RuntimeError):
        return binder_pb2.WriteOutcome(code=grpc.StatusCode.UNAVAILABLE.value[0], message=str(error))
    return binder_pb2.WriteOutcome(code=grpc.StatusCode.UNKNOWN.value[0], message=str(error))


def _refusal(error: Exception) -> tuple[grpc.StatusCode, str]:
    """The status a refused operation's call ends with: an admission error's own code and kubectl
    line, FAILED_PRECONDITION for a refused decision (BindError), UNAVAILABLE while the binder
    restarts after a failed commit, UNKNOWN for a bug."""
    if isinstance(error, ApiError):
        return status_code(error), error.kubectl_message()
    if isinstance(error, BindError):
        return grpc.StatusCode.FAILED_PRECONDITION, str(error)
    if isinstance(error, RuntimeError):
        return grpc.StatusCode.UNAVAILABLE, str(error)
    return grpc.StatusCode.UNKNOWN, str(error)


def _outcome(
    outcome_type: Any, outcome: tuple[Any, tuple[int, int]] | Refused, response: Callable[[Any, tuple[int, int]], Any]
) -> Any:
    """One operation's answer within a batched call: its refusal (status code and message), or the
    response its own unbatched RPC would have given, made by `response` from what it wrote and the
    (resource version, event sequence) it committed at."""
    if isinstance(outcome, Refused):
        return outcome_type(code=outcome.code.value[0], message=outcome.message)
    return outcome_type(response=response(*outcome))


def _pod_group_result_response(
    request: binder_pb2.RecordPodGroupResultRequest, done: list[PodGroupWrite], versions: tuple[int, int]
) -> binder_pb2.RecordPodGroupResultResponse:
    placed = sum(1 for p in request.pods if p.node_name)
    bound_uids = [write.pod.uid for write in done if write.node_name]
    bind_error = "" if len(bound_uids) == placed else next((w.message for w in done if not w.node_name), "")
    version, sequence = versions
    return binder_pb2.RecordPodGroupResultResponse(
        bound_pod_uids=bound_uids, bind_error=bind_error, resource_version=version, event_sequence=sequence
    )


def _delete_many_outcome(deletion: ListedDeletion) -> binder_pb2.DeleteManyOutcome:
    if deletion.deleted:
        return binder_pb2.DeleteManyOutcome(
            deleted=True, resource_version=deletion.resource_version, terminating=deletion.terminating
        )
    if deletion.error is not None:
        return binder_pb2.DeleteManyOutcome(
            code=status_code(deletion.error).value[0], message=deletion.error.kubectl_message()
        )
    return binder_pb2.DeleteManyOutcome(code=grpc.StatusCode.NOT_FOUND.value[0])
