"""The queue service: the public API (PodSched), admission, the scheduling queue and the
scheduling cycles.

It follows the binder's log into a replica of the cluster, which feeds the scheduling queue exactly
as `simulate` feeds it (podsched.queue.cluster_feed). One cycle: pop the next pod -> Filter
(filter service) -> Bind (binder), or on failure PostFilter (preemption service) -> RecordFailure
(binder: evictions, nominations, FailedScheduling) -> back to the queue. Every downstream request
names the resource version of the last write this service saw acknowledged, so the other
services answer on copies at least that new. Reads (Get, ListEvents) wait the same way, so a
client reads its own writes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, StatusCode
from prometheus_client import Counter, Gauge, Histogram

from podsched.api.documents import parse_json
from podsched.api.errors import ApiError, fit_status_message, shorten
from podsched.api.manifests import decode_object
from podsched.api.resources import RESOURCE_TYPES, ResourceType, find_resource_type
from podsched.api.types import (
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_PRIORITY_CLASS,
    KIND_RESOURCE_QUOTA,
    ApiObject,
    Pod,
)
from podsched.cluster import events as ev
from podsched.cluster.admission import CREATED, UNCHANGED
from podsched.cluster.dry_run import admit_without_storing
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, REMOVED, Change
from podsched.queue import scheduling_queue as sq
from podsched.queue.cluster_feed import queue_feed
from podsched.scheduler.profile import only_responsible
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.audit.v1 import audit_pb2
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_proto.events.v1 import events_pb2
from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc
from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from podsched_service import telemetry
from podsched_service.codec import change_message, event_to_proto, status_code, to_json
from podsched_service.replica import Replica
from podsched_service.scheduling import (
    DRY_RUN_UID,
    decision_nominations,
    load_admission_config,
    load_scheduler_config,
)
from podsched_service.server import CHANNEL_OPTIONS
from podsched_service.tls import ClientTLS

from .access import ApiAccess, ApiCall, Target, events_target
from .binder_writes import BinderWrites
from .config import QueueConfig

log = logging.getLogger(__name__)

ALL_KINDS = frozenset(resource.kind for resource in RESOURCE_TYPES)
RPC_TIMEOUT = 60.0
WATCH_WRITER = ""  # Watch items are rebuilt from the replica, which does not keep the record's writer
LEFTOVER_FLUSH_INTERVAL = 30.0  # upstream flushes unschedulable pods older than 5 minutes every 30 s
# Pods after a preemptor that one PostFilterRun may decide. Shorter runs hand their failures to the
# binder sooner (its commits overlap the next run's dry runs) and keep the preemption service's
# event loop free for its log between runs.
POST_FILTER_RUN_LIMIT = 32
API_PATH = "/" + api_pb2.DESCRIPTOR.services_by_name["PodSched"].full_name + "/"  # + method: the gRPC path

# kube-scheduler's own metric names, labels and buckets.
SCHEDULE_ATTEMPTS = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.",
    ["result", "profile"],
)
ATTEMPT_DURATION = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=[0.001 * 2**i for i in range(15)],
)
PENDING_PODS = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
    "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods.",
    ["queue"],
)
QUEUE_LABELS = {sq.ACTIVE: "active", sq.BACKOFF: "backoff", sq.UNSCHEDULABLE: "unschedulable"}


@dataclass
class Attempt:
    """One pod's scheduling attempt within a batch: its span (in the pod's trace) and its metrics."""

    info: sq.QueuedPodInfo
    pod: Pod
    span: Span
    began: float
    finished: bool = False
    # Its outcome comes after its batch ends: a Bind still in flight, or a failure still settling.
    outcome_pending: bool = False

    @staticmethod
    def start(info: sq.QueuedPodInfo, pod: Pod, pod_trace: otel_context.Context | None) -> Attempt:
        span = telemetry.tracer().start_span(
            "scheduling attempt", context=pod_trace, attributes=telemetry.pod_attributes(pod)
        )
        span.set_attribute("podsched.attempt", info.attempts)
        return Attempt(info, pod, span, time.perf_counter())

    def finish(self, result: str) -> None:
        """kube-scheduler's result label (scheduled, unschedulable, error); "requeued" for a pod the
        batch returned untried, which is not an attempt and is not counted."""
        if self.finished:
            return
        self.finished = True
        self.span.set_attribute("podsched.result", result)
        if result == "error":
            self.span.set_status(StatusCode.ERROR)
        self.span.end()
        if result != "requeued":
            profile = self.pod.spec.scheduler_name  # upstream's profile label: the pod's profile
            SCHEDULE_ATTEMPTS.labels(result, profile).inc()
            ATTEMPT_DURATION.labels(result, profile).observe(time.perf_counter() - self.began)


def peer_channel(config: QueueConfig, address: str) -> grpc.aio.Channel:
    """A channel to the filter, preemption or binder service: TLS when PODSCHED_INTERNAL_TLS_CA_FILE
    is set (with the queue's client certificate, if configured, for services that require mutual TLS)."""
    interceptors = telemetry.client_interceptors()
    if not config.internal_tls_ca_file:
        return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS, interceptors=interceptors)
    tls = ClientTLS(config.internal_tls_ca_file, config.internal_tls_cert_file, config.internal_tls_key_file)
    try:
        credentials = tls.credentials()
    except ValueError as error:
        raise ValueError(f"PODSCHED_INTERNAL_TLS_CA_FILE/CERT_FILE/KEY_FILE: {error}") from None
    return grpc.aio.secure_channel(address, credentials, options=CHANNEL_OPTIONS, interceptors=interceptors)


@dataclass
class PendingFailure:
    """A failed attempt whose RecordFailure is on its way to the binder."""

    attempt: Attempt
    call: asyncio.Future[Any]
    message: str
    rejectors: set[str]
    error: bool


@dataclass
class PendingBind:
    """Placed pods whose Bind is on its way to the binder: the next FindNodes assumes them on their
    nodes, as kube-scheduler's cache assumes a pod while its binding goes on."""

    placed: list[tuple[Attempt, filter_pb2.Placement]]
    call: asyncio.Future[Any]


class QueueService:
    def __init__(self, config: QueueConfig) -> None:
        self.config = config
        self.scheduler_config = load_scheduler_config(config.scheduler_config)
        # The binder enforces ResourceQuota; this copy answers dry runs with the same configuration.
        self.cluster = Cluster(
            time.time, authoritative=False, quota_admission=load_admission_config(config.admission_config)
        )
        self.queue = sq.SchedulingQueue(
            time.time, self.scheduler_config.pod_initial_backoff_seconds, self.scheduler_config.pod_max_backoff_seconds
        )
        # Only pods some profile schedules are queued; the others are another scheduler's.
        self.cluster.listeners.append(only_responsible(self.scheduler_config, queue_feed(self.queue)))
        self.replica = Replica(self.cluster, config.kafka_bootstrap_servers, config.topic_prefix, follow_events=True)
        self._wake = asyncio.Event()
        self.replica.on_applied.append(self._wake.set)
        # The newest write this service saw acknowledged by the binder.
        self.known_version = 0
        self.known_event_sequence = -1
        self.access = ApiAccess.from_config(config)
        self.channels = [
            peer_channel(config, address)
            for address in (config.filter_address, config.preemption_address, config.binder_address)
        ]
        self.filter = filter_pb2_grpc.FilterStub(self.channels[0])
        self.preemption = preemption_pb2_grpc.PreemptionStub(self.channels[1])
        self.binder = binder_pb2_grpc.BinderStub(self.channels[2])
        self.writes = BinderWrites(self.binder, RPC_TIMEOUT)
        # At most one Bind in flight: the next FindNodes (in this batch or the next) runs while it
        # commits, with its pods assumed, instead of waiting for the commit and the log.
        self._bind_in_flight: PendingBind | None = None
        # The previous batch's failures being committed and read back, and the nominations they carry.
        self._settling: asyncio.Future[None] | None = None
        self._unsettled_nominations: list[filter_pb2.Nomination] = []
        self._loop_task: asyncio.Task[None] | None = None
        self.watchers: list[asyncio.Queue[api_pb2.WatchEvent | None]] = []
        self.cluster.listeners.append(self._publish_change)
        self.cluster.event_listeners.append(self._publish_event)
        self.cycles = 0
        # Each pod's trace: the context its creation arrived in (the consumer span of the record that
        # added it), so every scheduling attempt of the pod joins the trace its apply started.
        self.pod_contexts: dict[str, otel_context.Context] = {}
        if telemetry.tracing_enabled():
            self.cluster.listeners.append(self._remember_pod_context)
        for queue_name, label in QUEUE_LABELS.items():
            PENDING_PODS.labels(label).set_function(lambda name=queue_name: self.queue.pending_counts()[name])

    def _remember_pod_context(self, change: Change) -> None:
        if change.kind != KIND_POD:
            return
        if change.type == ADDED and change.new is not None:
            if trace.get_current_span().get_span_context().is_valid:
                self.pod_contexts[change.new.uid] = otel_context.get_current()
        elif change.type == REMOVED and change.old is not None:
            self.pod_contexts.pop(change.old.uid, None)

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        await self.access.start()
        await self.replica.start()
        self.known_version = self.replica.version
        self.known_event_sequence = self.replica.event_sequence
        self._loop_task = asyncio.create_task(self._scheduling_loop(), name="scheduling-loop")

    async def stop(self) -> None:
        for task in (self._loop_task, self._settling):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        for watcher in self.watchers:
            watcher.put_nowait(None)
        await self.replica.stop()
        for channel in self.channels:
            await channel.close()
        await self.access.stop()

    @property
    def view_version(self) -> int:
        """The version downstream services must have applied before answering: every write this
        service saw acknowledged, and every change its own replica has applied (a retry triggered
        by, say, a victim's deletion must not be filtered on a copy without that deletion)."""
        return max(self.known_version, self.replica.version)

    def saw(self, version: int, event_sequence: int) -> None:
        self.known_version = max(self.known_version, version)
        self.known_event_sequence = max(self.known_event_sequence, event_sequence)

    async def caught_up(self, timeout: float = 20.0) -> None:
        """Until the replica holds every write this service saw acknowledged."""
        await self.replica.wait_for(self.known_version, self.known_event_sequence, timeout)

    # --- scheduling cycles -----------------------------------------------------------------------

    async def _scheduling_loop(self) -> None:
        last_flush = time.time()
        while True:
            now = time.time()
            if now - last_flush >= LEFTOVER_FLUSH_INTERVAL:
                self.queue.flush_unschedulable_leftover()
                last_flush = now
            batch = self._pop_batch()
            if not batch and self._settling is not None:
                await self._finish_settling()  # its pods may be ready to go again
                continue
            if not batch and self._bind_in_flight is not None:
                await self._drain_bind()  # nothing to overlap it with: finish it before waiting
                continue
            if not batch:
                self._wake.clear()
                timeout = LEFTOVER_FLUSH_INTERVAL
                expiry = self.queue.next_backoff_expiry()
                if expiry is not None:
                    timeout = min(timeout, max(0.0, expiry - time.time()))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
                continue
            try:
                await self._schedule_batch(batch)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a peer is down or restarting: retry the pods with backoff
                log.warning("scheduling %d pod(s) from %s failed: %s", len(batch), batch[0].pod.name, error)
                for info in batch:
                    self._back_off(info, error)
                await asyncio.sleep(0.2)

    async def _drain_bind(self) -> None:
        failures: list[PendingFailure] = []
        try:
            await self._finish_bind(failures)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the binder is down or restarting: _finish_bind requeued the pods
            log.warning("binding failed: %s", error)
            await asyncio.sleep(0.2)
        finally:
            await self._settle(failures)

    def _back_off(self, info: sq.QueuedPodInfo, error: BaseException) -> None:
        """A pod whose attempt an error cut short (a peer down or restarting), if it is still in flight
        (not resolved before the error): back to the queue, retried after its backoff."""
        if self.queue.location(info.pod.uid) == sq.IN_FLIGHT:
            self.queue.add_unschedulable_if_not_present(info, set(), error=True, message=str(error))

    def _pop_batch(self) -> list[sq.QueuedPodInfo]:
        """Up to batch_size pods, popped in queue order."""
        batch: list[sq.QueuedPodInfo] = []
        while len(batch) < self.config.batch_size and (info := self.queue.pop()) is not None:
            batch.append(info)
        return batch

    async def _schedule_batch(self, batch: list[sq.QueuedPodInfo]) -> None:
        """Consecutive scheduling cycles of the popped pods (see `_place`).

        The filter places the pods in queue order, each on the cluster with the earlier ones assumed
        on their nodes, and stops at the first pod that fits nowhere: exactly what that many
        one-pod cycles decide. The placed pods are bound together (one binder transaction), then the
        pod that did not fit goes through PostFilter on a view that includes those binds, and the
        pods after it are filtered next, with its nomination assumed: by the preemption service, on
        the copy PostFilter read, while they fit nowhere (a run of preemptors), else by FindNodes."""
        attempts: list[Attempt] = []
        for info in batch:
            pod = self.cluster.pods_by_uid.get(info.pod.uid)
            if pod is None or pod.spec.node_name:
                self.queue.done(info.pod.uid)
                continue
            attempts.append(Attempt.start(info, pod, self.pod_contexts.get(pod.uid)))
        if not attempts:
            return
        self.cycles += len(attempts)
        # The calls of a one-pod batch belong to that pod's attempt; a larger batch's calls get a span
        # of their own, linked to every pod's attempt (each pod's own outcome is in its trace anyway).
        if len(attempts) == 1:
            calls_span = attempts[0].span
        else:
            calls_span = telemetry.tracer().start_span(
                "scheduling batch",
                links=[Link(a.span.get_span_context()) for a in attempts],
                attributes={"podsched.batch_size": len(attempts)},
            )
        try:
            with trace.use_span(calls_span, end_on_exit=len(attempts) > 1):
                await self._place(attempts)
        finally:
            for attempt in attempts:
                if not attempt.outcome_pending:
                    attempt.finish("error")  # only those an exception interrupted are still open

    async def _place(self, attempts: list[Attempt]) -> None:
        """The batch's cycles: FindNodes for the pods not yet tried, Bind for the placed prefix,
        PostFilter for the pod that fit nowhere (in a PostFilterRun that also decides the pods after it
        for as long as they fit nowhere too), then FindNodes again for the pods after those.

        A failed pod's RecordFailure (its nomination, evictions, FailedScheduling) is sent without
        waiting for Kafka: the later cycles of the batch get its nomination as an assumed one, as a
        later cycle of one kube-scheduler sees the nominations its earlier cycles made before the API
        server has them. The batch's failures are committed and read back once, at the end, before
        the failed pods go back to the queue; that settling goes on while the next batch runs, which
        assumes the nominations this batch decided until it is done (at most one batch settles at a
        time)."""
        remaining = attempts
        # Nominations (and clearings) decided by this batch, and by the previous one if it is still
        # settling, which the log may not carry yet.
        carried = list(self._unsettled_nominations)
        assumed: list[filter_pb2.Nomination] = list(carried)
        failures: list[PendingFailure] = []
        try:
            while remaining:
                remaining = await self._cycle(remaining, assumed, failures)
        except BaseException:
            await self._settle(failures)
            raise
        await self._finish_settling()
        if failures:
            self._unsettled_nominations = assumed[len(carried) :]
            self._settling = asyncio.ensure_future(self._settle_in_background(failures))

    async def _finish_settling(self) -> None:
        """Wait for the previous batch's failures to settle; its nominations are then in the log."""
        settling, self._settling = self._settling, None
        if settling is not None:
            await settling
        self._unsettled_nominations = []

    async def _settle_in_background(self, failures: list[PendingFailure]) -> None:
        try:
            await self._settle(failures)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the pods went back to the queue all the same (see _settle)
            log.warning("settling %d failed attempt(s) failed: %s", len(failures), error)

    async def _cycle(
        self, attempts: list[Attempt], assumed: list[filter_pb2.Nomination], failures: list[PendingFailure]
    ) -> list[Attempt]:
        """One FindNodes over `attempts` and what follows from it; returns the pods still to try."""
        found = await self.filter.FindNodes(
            filter_pb2.FindNodesRequest(
                pods=[
                    filter_pb2.PodToPlace(uid=a.pod.uid, trace_context=telemetry.carrier_of(a.span)) for a in attempts
                ],
                min_resource_version=self.view_version,
                assumed_nominations=assumed,
                assumed_binds=self._assumed_binds(),
            ),
            timeout=RPC_TIMEOUT,
        )
        placements = list(found.placements)
        for attempt, placement in zip(attempts, placements, strict=False):
            attempt.span.set_attributes(
                {
                    "podsched.feasible_nodes": placement.feasible_nodes,
                    "podsched.evaluated_nodes": placement.evaluated_nodes,
                }
            )
        placed = [(a, p) for a, p in zip(attempts, placements, strict=False) if p.node_name]
        all_bound = await self._finish_bind(failures)
        if placed:
            self._start_bind(placed)
        unplaced = [(a, p) for a, p in zip(attempts, placements, strict=False) if not p.node_name]
        untried = attempts[len(placements) :]  # after the pod that fit nowhere: not attempted yet
        for attempt, placement in unplaced:
            if placement.error:  # the pod is gone or already bound: an error, not a diagnosis
                failures.append(self._send_failure(attempt, placement.error, error=True))
        fit_nowhere = [(a, p) for a, p in unplaced if not p.error]
        if not fit_nowhere:
            return untried
        attempt, placement = fit_nowhere[0]
        # PostFilter reads a view with every earlier placement bound, not assumed.
        all_bound = await self._finish_bind(failures) and all_bound
        if not all_bound:
            # That pod was filtered with every earlier pod assumed in place, and one of those binds
            # was refused: its diagnosis is of a cluster that does not exist. It and the pods after
            # it go back untried and are filtered again next batch.
            self._requeue([attempt, *untried])
            return []
        with trace.use_span(attempt.span, end_on_exit=False):
            decided = await self._post_filter(attempt, placement, found.resource_version, assumed, untried)
        if decided is None:  # a stale diagnosis: filter it (and the pods after it) again
            self._requeue([attempt, *untried])
            return []
        failures.extend(decided)
        return untried[len(decided) - 1 :]

    def _requeue(self, attempts: list[Attempt]) -> None:
        for attempt in attempts:
            self.queue.unpop(attempt.info)
            attempt.finish("requeued")

    def _assumed_binds(self) -> list[filter_pb2.AssumedBind]:
        pending = self._bind_in_flight
        if pending is None:
            return []
        return [filter_pb2.AssumedBind(pod_uid=a.pod.uid, node_name=p.node_name) for a, p in pending.placed]

    def _start_bind(self, placed: list[tuple[Attempt, filter_pb2.Placement]]) -> None:
        """Send the Bind of the placed pods (one request, one binder transaction); `_finish_bind`
        takes its answer."""
        request = binder_pb2.BindRequest(
            bindings=[
                binder_pb2.Binding(pod_uid=a.pod.uid, node_name=p.node_name, trace_context=telemetry.carrier_of(a.span))
                for a, p in placed
            ]
        )
        for attempt, _ in placed:
            attempt.outcome_pending = True
        call = asyncio.ensure_future(self.binder.Bind(request, timeout=RPC_TIMEOUT))
        self._bind_in_flight = PendingBind(placed, call)

    async def _finish_bind(self, failures: list[PendingFailure]) -> bool:
        """Wait for the Bind in flight, if any; True if every bind in it was accepted. A refused bind
        is a failed attempt (added to `failures`). If the call fails, its pods go back to the queue
        with backoff and the error is raised."""
        pending, self._bind_in_flight = self._bind_in_flight, None
        if pending is None:
            return True
        try:
            bound = await pending.call
        except Exception as error:
            for attempt, _ in pending.placed:
                fresh = self.queue.info(attempt.pod.uid)
                if fresh is not None:
                    self._back_off(fresh, error)
                attempt.finish("error")
            raise
        self.saw(bound.resource_version, bound.event_sequence)
        all_bound = True
        for (attempt, placement), result in zip(pending.placed, bound.results, strict=True):
            pod = attempt.pod
            attempt.span.set_attribute("k8s.node.name", placement.node_name)
            if not result.bound:
                all_bound = False
                failures.append(self._send_failure(attempt, result.message, error=True))
                continue
            with trace.use_span(attempt.span, end_on_exit=False):
                telemetry.decision(
                    log,
                    "Scheduled %s/%s to %s",
                    pod.namespace,
                    pod.name,
                    placement.node_name,
                    decision=ev.SCHEDULED,
                    pod=f"{pod.namespace}/{pod.name}",
                    node=placement.node_name,
                    attempt=attempt.info.attempts,
                )
            attempt.finish("scheduled")
        return all_bound

    async def _post_filter(
        self,
        attempt: Attempt,
        placement: filter_pb2.Placement,
        filter_version: int,
        assumed: list[filter_pb2.Nomination],
        untried: list[Attempt],
    ) -> list[PendingFailure] | None:
        """PostFilter for a pod that fit nowhere (the filter answered at `filter_version`), then the
        cycles of the pods after it while they fit nowhere too, in one PostFilterRun: upstream's
        one-pod-at-a-time cycles, each seeing the nominations of the ones before, without a FindNodes
        and a PostFilter round trip per preemptor. Returns the failures, sent, of the pod and of the
        run's first len(result) - 1 pods of `untried`; None if PostFilter found the Filter outcome
        stale. Adds the decisions' nominations to `assumed`."""
        pod, span = attempt.pod, attempt.span
        span.set_attribute("podsched.message", placement.message)
        rejectors = set(placement.rejector_plugins)
        profile = self.scheduler_config.profile_named(pod.spec.scheduler_name)
        if profile is None or not profile.preemption_enabled:  # the pod's profile has no PostFilter
            return [self._send_failure(attempt, placement.message, rejectors=rejectors)]
        run = untried[:POST_FILTER_RUN_LIMIT]
        answer = await self.preemption.PostFilterRun(
            preemption_pb2.PostFilterRunRequest(
                first=preemption_pb2.PostFilterRequest(
                    pod=filter_pb2.PodToPlace(uid=pod.uid),
                    filter_result=placement,
                    min_resource_version=self.view_version,
                    filter_resource_version=filter_version,
                    assumed_nominations=assumed,
                ),
                next=[filter_pb2.PodToPlace(uid=a.pod.uid, trace_context=telemetry.carrier_of(a.span)) for a in run],
            ),
            timeout=RPC_TIMEOUT,
        )
        first = answer.decisions[0].decision
        if first.stale_filter_result:
            # Room was made after the filter answered (PostFilter's copy is newer): not a failed
            # attempt; the pod is filtered again once the filter has that version.
            span.set_attribute("podsched.stale_filter_result", True)
            self.saw(answer.resource_version, -1)
            return None
        failures = [self._record_decision(attempt, rejectors, first, assumed)]
        for later, item in zip(run, answer.decisions[1:], strict=False):
            filtered = item.filter_result
            later.span.set_attributes(
                {
                    "podsched.feasible_nodes": filtered.feasible_nodes,
                    "podsched.evaluated_nodes": filtered.evaluated_nodes,
                    "podsched.preemption_run": True,
                }
            )
            with trace.use_span(later.span, end_on_exit=False):
                failures.append(self._record_decision(later, set(filtered.rejector_plugins), item.decision, assumed))
        return failures

    def _record_decision(
        self,
        attempt: Attempt,
        rejectors: set[str],
        decision: preemption_pb2.PostFilterResponse,
        assumed: list[filter_pb2.Nomination],
    ) -> PendingFailure:
        """A PostFilter decision on the pod's span and in the decision log, its nominations added to
        `assumed`, and its failure's writes (evictions, nominations, FailedScheduling) sent."""
        pod, span = attempt.pod, attempt.span
        victims = [f"{v.namespace}/{v.name}" for v in decision.victims]
        span.set_attributes(
            {
                "podsched.candidates": decision.candidates,
                "podsched.nominated_node": decision.nominated_node_name,
                "podsched.victims": victims,
                "podsched.pdb_violations": decision.pdb_violations,
                "podsched.message": decision.message,
            }
        )
        fields = {
            "decision": ev.FAILED_SCHEDULING,
            "pod": f"{pod.namespace}/{pod.name}",
            "attempt": attempt.info.attempts,
        }
        if decision.nominated_node_name:
            telemetry.decision(
                log,
                "%s/%s nominated to %s, preempting %s",
                pod.namespace,
                pod.name,
                decision.nominated_node_name,
                ", ".join(victims),
                **{**fields, "decision": ev.NOMINATED},
                node=decision.nominated_node_name,
                victims=victims,
                pdb_violations=decision.pdb_violations,
            )
        else:
            telemetry.decision(log, "FailedScheduling %s/%s: %s", pod.namespace, pod.name, decision.message, **fields)
        assumed.extend(decision_nominations(pod.uid, decision))
        return self._send_failure(
            attempt,
            decision.message,
            rejectors=rejectors,
            request=binder_pb2.RecordFailureRequest(
                nominated_node_name=decision.nominated_node_name,
                victim_uids=[v.uid for v in decision.victims],
                clear_nomination_uids=[p.uid for p in decision.nominations_to_clear],
                clear_own_nomination=decision.clear_own_nomination,
            ),
        )

    def _send_failure(
        self,
        attempt: Attempt,
        message: str,
        rejectors: set[str] | None = None,
        error: bool = False,
        request: binder_pb2.RecordFailureRequest | None = None,
    ) -> PendingFailure:
        """Start the failed attempt's RecordFailure; `_settle` waits for it."""
        request = request or binder_pb2.RecordFailureRequest()
        request.pod_uid = attempt.pod.uid
        request.message = message
        with trace.use_span(attempt.span, end_on_exit=False):
            call = asyncio.ensure_future(self.binder.RecordFailure(request, timeout=RPC_TIMEOUT))
        attempt.outcome_pending = True
        return PendingFailure(attempt, call, message, rejectors or set(), error)

    async def _settle(self, failures: list[PendingFailure]) -> None:
        """Wait for the batch's failures to be committed, then until the queue's replica holds
        them: the failures' own writes must reach the queue while the pods are still in flight,
        as in one process, so an update made by a failure itself does not count as a new event.
        Then the pods go back to the queue."""
        if not failures:
            return
        results = await asyncio.gather(*(f.call for f in failures), return_exceptions=True)
        for result in results:
            if not isinstance(result, BaseException):
                self.saw(result.resource_version, result.event_sequence)
        try:
            await self.caught_up()
        finally:
            for failure, result in zip(failures, results, strict=True):
                attempt = failure.attempt
                fresh = self.queue.info(attempt.pod.uid)
                if isinstance(result, BaseException):
                    log.warning("recording the failure of %s failed: %s", attempt.pod.name, result)
                    if fresh is not None:
                        self.queue.add_unschedulable_if_not_present(fresh, set(), error=True, message=str(result))
                    attempt.finish("error")
                    continue
                if fresh is not None:  # else deleted meanwhile
                    self.queue.add_unschedulable_if_not_present(
                        fresh, failure.rejectors, error=failure.error, message=failure.message
                    )
                attempt.finish("error" if failure.error else "unschedulable")

    # --- watch fan-out -----------------------------------------------------------------------------

    def _publish_change(self, change: Change) -> None:
        if not self.watchers:
            return
        obj = change.new if change.new is not None else change.old
        assert obj is not None
        item = api_pb2.WatchEvent(change=change_message(change.type, obj, WATCH_WRITER, time.time()))
        for watcher in self.watchers:
            watcher.put_nowait(item)

    def _publish_event(self, event: ev.Event) -> None:
        if not self.watchers:
            return
        item = api_pb2.WatchEvent(event=event_to_proto(event))
        for watcher in self.watchers:
            watcher.put_nowait(item)


MAX_APPLY_BATCH = 1000


class ItemContext:
    """The servicer context of one object of an ApplyBatch: the call's metadata, peer and
    credentials, but an abort ends only this object (its code and message become its result)."""

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self._context = context
        self._code: grpc.StatusCode | None = None
        self._details: str | None = None

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> None:
        self._code, self._details = code, details
        raise grpc.aio.AbortError()

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def details(self) -> str | None:
        return self._details

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class PodSchedServicer(api_pb2_grpc.PodSchedServicer):
    """The public API: thin translation to the binder (writes), the replica (reads) and the filter
    and preemption services (dry runs)."""

    def __init__(self, service: QueueService) -> None:
        self.service = service

    async def _resource_type(self, word: str, context: grpc.aio.ServicerContext) -> ResourceType:
        found = find_resource_type(word)
        if found is None:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f'error: the server doesn\'t have a resource type "{shorten(word)}"'
            )
        assert found is not None
        return found

    async def _caught_up(self, context: grpc.aio.ServicerContext) -> None:
        try:
            await self.service.caught_up()
        except TimeoutError:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                "Error from server (ServiceUnavailable): the queue service is catching up with the log; retry",
            )

    async def _forward_error(self, context: grpc.aio.ServicerContext, error: grpc.aio.AioRpcError) -> None:
        code = error.code()
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, f"Error from server (ServiceUnavailable): {error.details()}"
            )
        await context.abort(code, error.details() or "")

    # Every call is authenticated and authorized (services/podsched_queue/access.py); a write's
    # outcome, whatever it is, goes to the API audit log before the client hears it.

    async def Apply(self, request: api_pb2.ApplyRequest, context: grpc.aio.ServicerContext) -> Any:
        # "create" until the object is known to exist (and the caller may see it): then "patch".
        call = ApiCall(
            API_PATH + "Apply", write=not request.dry_run, verb="create", target=Target.of_document(request.object_json)
        )
        return await self.service.access.audited(context, call, self._apply(request, context, call))

    async def ApplyBatch(self, request: api_pb2.ApplyBatchRequest, context: grpc.aio.ServicerContext) -> Any:
        if len(request.requests) > MAX_APPLY_BATCH:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"error: {len(request.requests)} objects in one ApplyBatch; at most {MAX_APPLY_BATCH}",
            )

        async def one(item: api_pb2.ApplyRequest) -> api_pb2.ApplyResult:
            item_context = ItemContext(context)
            try:
                return api_pb2.ApplyResult(response=await self.Apply(item, item_context))
            except grpc.aio.AbortError:
                code = item_context.code() or grpc.StatusCode.UNKNOWN
                return api_pb2.ApplyResult(code=code.value[0], message=item_context.details() or "")

        results = await asyncio.gather(*(one(item) for item in request.requests))
        return api_pb2.ApplyBatchResponse(results=results)

    async def _apply(self, request: api_pb2.ApplyRequest, context: grpc.aio.ServicerContext, call: ApiCall) -> Any:
        service = self.service
        access = service.access
        user = await access.authenticate(context, call)
        try:
            document = parse_json(request.object_json)
        except ValueError as error:
            message = f"error: error parsing {shorten(request.source)}: {error}"
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        await self._caught_up(context)
        target = call.target
        # kubectl apply creates a new object and patches an existing one. An object the caller may
        # not read counts as new, so a refusal does not tell whether it exists.
        stored = stored_object(service.cluster, target) if target.known is not None else None
        readable = stored is not None and access.decide(target.attributes(user, "get")).allowed
        call.verb = "patch" if readable else "create"
        attributes = target.attributes(user, call.verb, named=call.verb != "create")
        # kubectl sends no patch for an unchanged object (only its GET): a caller who may read but
        # not patch may re-apply it unchanged. Decided after admission, which says whether it changed.
        unchanged_only = False
        if target.resource:  # else the body names no kind and admission refuses it below
            if call.verb == "patch" and not access.decide(attributes).allowed:
                unchanged_only = True
            else:
                await access.authorize(context, call, attributes)
        try:
            obj = decode_object(document, owned=True)
            with telemetry.tracer().start_as_current_span("admission") as span:
                span.set_attributes(_object_attributes(obj))
                action, admitted = admit_without_storing(service.cluster, obj)
                if isinstance(admitted, Pod):
                    span.set_attribute("podsched.pod.priority", admitted.spec.priority or 0)
        except ApiError as error:
            trace.get_current_span().set_status(StatusCode.ERROR, error.kubectl_message())
            await context.abort(status_code(error), error.kubectl_message())
        if unchanged_only:
            if action != UNCHANGED:
                await access.deny(context, call, attributes)
            call.decision = audit_pb2.AuditEvent.ALLOW
            call.reason = f"unchanged, so only get is needed: {access.decide(target.attributes(user, 'get')).reason}"
        if request.dry_run:
            response = api_pb2.ApplyResponse(action=action, object_json=to_json(admitted))
            if isinstance(admitted, Pod) and not admitted.spec.node_name:
                response.dry_run.CopyFrom(await self._predict(admitted, context))
            return response
        try:
            written = await service.writes.write(request.object_json)
        except grpc.aio.AioRpcError as error:
            await self._forward_error(context, error)
        service.saw(written.resource_version, written.event_sequence)
        call.resource_version = written.resource_version
        call.object_json = written.object_json
        call.created = written.action == CREATED
        return api_pb2.ApplyResponse(action=written.action, object_json=written.object_json)

    async def _predict(self, pod: Pod, context: grpc.aio.ServicerContext) -> api_pb2.DryRunOutcome:
        """Filter, then PostFilter, for a pod that is not stored: where it would go now."""
        service = self.service
        pod.metadata.uid = pod.metadata.uid or DRY_RUN_UID
        ref = filter_pb2.PodToPlace(pod_json=to_json(pod))
        try:
            found = await service.filter.FindNodes(
                filter_pb2.FindNodesRequest(pods=[ref], min_resource_version=service.view_version, dry_run=True),
                timeout=RPC_TIMEOUT,
            )
            placement = found.placements[0]
            if placement.node_name:
                return api_pb2.DryRunOutcome(node_name=placement.node_name)
            profile = service.scheduler_config.profile_named(pod.spec.scheduler_name)
            if placement.error or profile is None or not profile.preemption_enabled:
                return api_pb2.DryRunOutcome(message=placement.error or placement.message)
            decision = await service.preemption.PostFilter(
                preemption_pb2.PostFilterRequest(
                    pod=ref, filter_result=placement, min_resource_version=service.view_version
                ),
                timeout=RPC_TIMEOUT,
            )
        except grpc.aio.AioRpcError as error:
            await self._forward_error(context, error)
        return api_pb2.DryRunOutcome(
            nominated_node_name=decision.nominated_node_name, victims=decision.victims, message=decision.message
        )

    async def Get(self, request: api_pb2.GetRequest, context: grpc.aio.ServicerContext) -> Any:
        service = self.service
        call = ApiCall(API_PATH + "Get", write=False)
        user = await service.access.authenticate(context, call)
        resource = await self._resource_type(request.resource, context)
        kind = resource.kind
        namespace = request.namespace or "default"
        # A list across namespaces is a list at the cluster scope, as upstream authorizes it.
        target = Target.of(resource, "" if request.all_namespaces else namespace, request.name)
        await service.access.authorize(context, call, target.attributes(user, "get" if request.name else "list"))
        await self._caught_up(context)
        objects = [
            obj
            for obj in objects_of(service.cluster, kind)
            if (not resource.namespaced or request.all_namespaces or obj.metadata.namespace == namespace)
            and (not request.name or obj.metadata.name == request.name)
        ]
        if request.name and not objects:
            ns = namespace if resource.namespaced else ""
            await context.abort(grpc.StatusCode.NOT_FOUND, ApiError.not_found(kind, request.name, ns).kubectl_message())
        objects.sort(key=lambda o: (o.metadata.namespace, o.metadata.name))
        return api_pb2.GetResponse(objects_json=[to_json(obj) for obj in objects])

    async def Delete(self, request: api_pb2.DeleteRequest, context: grpc.aio.ServicerContext) -> Any:
        found = find_resource_type(request.resource)
        namespace = request.namespace or "default"
        target = (
            Target.of(found, namespace, request.name)
            if found is not None
            else Target(request.resource, namespace=namespace, name=request.name)
        )
        call = ApiCall(API_PATH + "Delete", write=True, verb="delete", target=target)
        return await self.service.access.audited(context, call, self._delete(request, context, call))

    async def _delete(self, request: api_pb2.DeleteRequest, context: grpc.aio.ServicerContext, call: ApiCall) -> Any:
        access = self.service.access
        user = await access.authenticate(context, call)
        resource = await self._resource_type(request.resource, context)
        kind = resource.kind
        namespace = (request.namespace or "default") if resource.namespaced else ""
        await access.authorize(context, call, call.target.attributes(user, "delete"))
        delete = binder_pb2.DeleteRequest(kind=kind, namespace=namespace, name=request.name)
        if request.HasField("grace_period_seconds"):
            delete.grace_period_seconds = request.grace_period_seconds
        try:
            deleted = await self.service.binder.Delete(delete, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as error:
            await self._forward_error(context, error)
        self.service.saw(deleted.resource_version, deleted.event_sequence)
        call.resource_version = deleted.resource_version
        call.object_json = deleted.object_json
        return api_pb2.DeleteResponse(object_json=deleted.object_json)

    async def ListEvents(self, request: api_pb2.ListEventsRequest, context: grpc.aio.ServicerContext) -> Any:
        service = self.service
        access = service.access
        call = ApiCall(API_PATH + "ListEvents", write=False)
        user = await access.authenticate(context, call)
        namespace = request.namespace or "default"
        events_here = events_target("" if request.all_namespaces else namespace)
        await access.authorize(context, call, events_here.attributes(user, "list"))
        # Events about cluster-scoped objects (nodes), and one object's events wherever they are, are
        # for callers who may list events at the cluster scope; others see their namespace's only.
        wide = request.all_namespaces or access.decide(events_target("").attributes(user, "list")).allowed
        await self._caught_up(context)
        events = [
            event_to_proto(event)
            for event in service.cluster.events
            if (not request.involved_uid or event.involved_object.uid == request.involved_uid)
            and (
                request.all_namespaces
                or (wide and request.involved_uid)
                or event.involved_object.namespace == namespace
                or (wide and event.involved_object.namespace == "")
            )
        ]
        return api_pb2.ListEventsResponse(events=events)

    async def Watch(self, request: api_pb2.WatchRequest, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        service = self.service
        access = service.access
        call = ApiCall(API_PATH + "Watch", write=False)
        user = await access.authenticate(context, call)
        kinds = set(request.kinds)
        unknown = kinds - ALL_KINDS
        if unknown:
            message = fit_status_message(f"error: unknown kinds {sorted(unknown)}")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        # Asked-for kinds must each be watchable; no kinds means every kind the caller may watch there.
        watched: set[str] = set()
        refused = []
        for resource in RESOURCE_TYPES:
            if kinds and resource.kind not in kinds:
                continue
            attributes = Target.of(resource, request.namespace).attributes(user, "watch")
            if access.decide(attributes).allowed:
                watched.add(resource.kind)
            else:
                refused.append(attributes)
        if refused and (kinds or not watched):
            await access.deny(context, call, refused[0])
        if request.include_events:
            await access.authorize(context, call, events_target(request.namespace).attributes(user, "watch"))
        # As ListEvents: cluster-scoped objects and their events pass a namespace filter only for
        # callers who may watch all of it at the cluster scope.
        everywhere = [Target.of(r, "") for r in RESOURCE_TYPES if r.kind in watched]
        if request.include_events:
            everywhere.append(events_target(""))
        wide = not request.namespace or all(access.decide(t.attributes(user, "watch")).allowed for t in everywhere)
        await self._caught_up(context)
        watcher: asyncio.Queue[api_pb2.WatchEvent | None] = asyncio.Queue()
        service.watchers.append(watcher)

        def wanted(ref: events_pb2.ObjectReference, *, event: bool = False) -> bool:
            # An event passes the kinds asked for (its involved object's kind), a change the kinds watched.
            return (ref.kind in watched if not event else not kinds or ref.kind in kinds) and (
                not request.namespace or ref.namespace == request.namespace or (wide and ref.namespace == "")
            )

        try:
            if request.since_resource_version == 0:
                for kind in sorted(watched):
                    for obj in objects_of(service.cluster, kind):
                        change = change_message(ADDED, obj, WATCH_WRITER, time.time())
                        if wanted(change.object):
                            yield api_pb2.WatchEvent(change=change)
            while True:
                item = await watcher.get()
                if item is None:
                    return
                if item.HasField("change"):
                    if wanted(item.change.object) and item.change.resource_version > request.since_resource_version:
                        yield item
                elif request.include_events and wanted(item.event.involved_object, event=True):
                    yield item
        finally:
            service.watchers.remove(watcher)


def _object_attributes(obj: ApiObject) -> dict[str, Any]:
    if isinstance(obj, Pod):
        return {"k8s.pod.name": obj.name, "k8s.namespace.name": obj.namespace, "podsched.kind": KIND_POD}
    return {"podsched.kind": obj.kind, "podsched.name": obj.metadata.name}


def stored_object(cluster: Cluster, target: Target) -> ApiObject | None:
    """The stored object a request names, if there is one."""
    if target.known is None:
        return None
    kind, key = target.known.kind, (target.namespace, target.name)
    if kind == KIND_POD:
        return cluster.pods.get(key)
    if kind == KIND_PDB:
        return cluster.pdbs.get(key)
    if kind == KIND_NODE:
        return cluster.nodes.get(target.name)
    if kind == KIND_PRIORITY_CLASS:
        return cluster.priority_classes.get(target.name)
    return next((o for o in objects_of(cluster, kind) if (o.metadata.namespace, o.metadata.name) == key), None)


def objects_of(cluster: Cluster, kind: str) -> list[ApiObject]:
    if kind == KIND_POD:
        return list(cluster.pods.values())
    if kind == KIND_NODE:
        return list(cluster.nodes.values())
    if kind == KIND_PRIORITY_CLASS:
        return list(cluster.priority_classes.values())
    if kind == KIND_RESOURCE_QUOTA:
        return list(cluster.resource_quotas.values())  # each with the status.used this copy derives
    return list(cluster.pdbs.values())
