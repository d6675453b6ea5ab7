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
import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from aiokafka import AIOKafkaProducer

from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object
from podsched.cluster import events as ev
from podsched.cluster.failure import record_scheduling_failure
from podsched.cluster.state import BindError, Change, Cluster
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service.codec import (
    change_record,
    event_record,
    status_code,
    to_json,
    topics,
)
from podsched_service.kafka_log import ensure_topics
from podsched_service.replica import Replica

from .config import BinderConfig

log = logging.getLogger(__name__)
WRITER = "podsched-binder"


@dataclass
class Operation:
    """One RPC's change: `apply` runs against the cluster inside a batch."""

    apply: Callable[[Cluster], Any]
    done: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class Binder:
    def __init__(self, config: BinderConfig) -> None:
        self.config = config
        self.objects_topic, self.events_topic = topics(config.topic_prefix)
        self.cluster = Cluster(time.time, uid_factory=lambda: str(uuid.uuid4()))
        self.cluster.listeners.append(self._on_change)
        self.cluster.event_listeners.append(self._on_event)
        self._recording = False
        self._records: list[tuple[str, bytes, bytes]] = []
        self._operations: asyncio.Queue[Operation] = asyncio.Queue()
        self._wake_timer = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.producer: AIOKafkaProducer | None = None
        self.failed = asyncio.Event()  # a commit failed: the process must restart

    # --- change capture ------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if self._recording:
            key, value = change_record(change, WRITER, time.time())
            self._records.append((self.objects_topic, key, value))

    def _on_event(self, event: ev.Event) -> None:
        if self._recording:
            key, value = event_record(event)
            self._records.append((self.events_topic, key, value))

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        await ensure_topics(config.kafka_bootstrap_servers, config.topic_prefix)
        self.producer = AIOKafkaProducer(
            bootstrap_servers=config.kafka_bootstrap_servers,
            transactional_id=config.transactional_id,
            enable_idempotence=True,
            acks="all",
            linger_ms=0,
            max_request_size=16 * 1024 * 1024,
        )
        # Registering the transactional id fences a previous binder and aborts its open
        # transaction, so the log read next is final.
        await self.producer.start()
        await self._rebuild()
        self._tasks = [
            asyncio.create_task(self._write_loop(), name="binder-writes"),
            asyncio.create_task(self._termination_timer(), name="binder-terminations"),
        ]

    async def _rebuild(self) -> None:
        """Replay the log into the binder's own state, exactly as a replica does (nothing is
        recorded meanwhile: `_recording` is off)."""
        replica = Replica(self.cluster, self.config.kafka_bootstrap_servers, self.config.topic_prefix, True)
        try:
            count = await replica.replay()
        finally:
            await replica.stop()
        log.info(
            "rebuilt from %d records: %d pods, %d nodes, resource version %d, %d events",
            count,
            len(self.cluster.pods),
            len(self.cluster.nodes),
            self.cluster.resource_version,
            len(self.cluster.events),
        )

    async def stop(self) -> None:
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
        if self.failed.is_set():
            raise RuntimeError("binder is restarting after a failed commit")
        operation = Operation(apply)
        self._operations.put_nowait(operation)
        return await operation.done

    async def _write_loop(self) -> None:
        while True:
            batch = [await self._operations.get()]
            while len(batch) < self.config.max_batch and not self._operations.empty():
                batch.append(self._operations.get_nowait())
            await self._run_batch(batch)

    async def _run_batch(self, batch: list[Operation]) -> None:
        outcomes: list[tuple[bool, Any]] = []
        self._recording = True
        try:
            for operation in batch:
                try:
                    outcomes.append((True, operation.apply(self.cluster)))
                except (ApiError, BindError) as error:  # refused: changed nothing
                    outcomes.append((False, error))
            self.cluster.refresh_pdb_status()
        finally:
            self._recording = False
        records, self._records = self._records, []
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

    async def _commit(self, records: list[tuple[str, bytes, bytes]]) -> None:
        producer = self.producer
        assert producer is not None
        async with producer.transaction():
            futures = [await producer.send(topic, value=value, key=key) for topic, key, value in records]
            await asyncio.gather(*futures)

    async def _termination_timer(self) -> None:
        """The node agent's clock: remove terminating pods when their grace period ends."""
        while True:
            due = self.cluster.next_termination_time()
            self._wake_timer.clear()
            timeout = None if due is None else max(0.0, due - time.time())
            try:
                await asyncio.wait_for(self._wake_timer.wait(), timeout)
                continue  # something changed: recompute
            except TimeoutError:
                pass
            await self.submit(lambda cluster: cluster.complete_terminations())

    def versions(self) -> tuple[int, int]:
        return self.cluster.resource_version, len(self.cluster.events) - 1


class BinderServicer(binder_pb2_grpc.BinderServicer):
    def __init__(self, binder: Binder) -> None:
        self.binder = binder

    async def _run(
        self, context: grpc.aio.ServicerContext, apply: Callable[[Cluster], Any]
    ) -> tuple[Any, tuple[int, int]]:
        try:
            return await self.binder.submit(apply)
        except ApiError as error:
            await context.abort(status_code(error), error.kubectl_message())
        except BindError as error:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(error))
        except RuntimeError as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(error))

    async def Write(self, request: binder_pb2.WriteRequest, context: grpc.aio.ServicerContext) -> Any:
        try:
            document = json.loads(request.object_json)
            obj = decode_object(document)
        except ApiError as error:
            await context.abort(status_code(error), error.kubectl_message())
        except ValueError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"error: invalid JSON: {error}")
        (action, stored), (version, sequence) = await self._run(context, lambda cluster: cluster.apply(obj))
        return binder_pb2.WriteResponse(
            action=action, object_json=to_json(stored), resource_version=version, event_sequence=sequence
        )

    async def Delete(self, request: binder_pb2.DeleteRequest, context: grpc.aio.ServicerContext) -> Any:
        grace = request.grace_period_seconds if request.HasField("grace_period_seconds") else None
        deleted, (version, sequence) = await self._run(
            context, lambda cluster: cluster.delete(request.kind, request.namespace, request.name, grace)
        )
        return binder_pb2.DeleteResponse(
            object_json=to_json(deleted), resource_version=version, event_sequence=sequence
        )

    async def Bind(self, request: binder_pb2.BindRequest, context: grpc.aio.ServicerContext) -> Any:
        bindings = [(b.pod_uid, b.node_name) for b in request.bindings]

        def bind_all(cluster: Cluster) -> list[binder_pb2.BindResult]:
            results = []
            for pod_uid, node_name in bindings:
                try:
                    cluster.bind(pod_uid, node_name)
                    results.append(binder_pb2.BindResult(pod_uid=pod_uid, bound=True))
                except BindError as error:
                    results.append(
                        binder_pb2.BindResult(pod_uid=pod_uid, bound=False, reason=error.reason, message=error.message)
                    )
            return results

        results, (version, sequence) = await self._run(context, bind_all)
        return binder_pb2.BindResponse(results=results, resource_version=version, event_sequence=sequence)

    async def RecordFailure(self, request: binder_pb2.RecordFailureRequest, context: grpc.aio.ServicerContext) -> Any:
        _, (version, sequence) = await self._run(
            context,
            lambda cluster: record_scheduling_failure(
                cluster,
                request.pod_uid,
                request.message,
                request.nominated_node_name,
                list(request.victim_uids),
                list(request.clear_nomination_uids),
                request.clear_own_nomination,
            ),
        )
        return binder_pb2.RecordFailureResponse(resource_version=version, event_sequence=sequence)
