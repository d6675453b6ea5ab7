"""The queue service: the scheduling queue and the scheduling cycles, and the state the public API
(api.py) answers from.

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
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, StatusCode
from prometheus_client import Counter, Gauge, Histogram

from podsched.api.types import (
    KIND_POD,
    Pod,
)
from podsched.cluster import events as ev
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, REMOVED, Change
from podsched.queue import scheduling_queue as sq
from podsched.queue.cluster_feed import queue_feed
from podsched.scheduler.profile import only_responsible
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc
from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from podsched_service import telemetry
from podsched_service.replica import Replica
from podsched_service.scheduling import (
    decision_nominations,
    load_admission_config,
    load_scheduler_config,
)

from .access import ApiAccess
from .binder_writes import BinderWrites
from .clock import Clock, SystemClock
from .config import QueueConfig
from .peers import RPC_TIMEOUT, peer_channel
from .watch import WatchFanOut

log = logging.getLogger(__name__)

LEFTOVER_FLUSH_INTERVAL = 30.0  # upstream flushes unschedulable pods older than 5 minutes every 30 s
# Pods after a preemptor that one PostFilterRun may decide. Shorter runs hand their failures to the
# binder sooner (its commits overlap the next run's dry runs) and keep the preemption service's
# event loop free for its log between runs.
POST_FILTER_RUN_LIMIT = 32

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
    def __init__(self, config: QueueConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.scheduler_config = load_scheduler_config(config.scheduler_config)
        # The binder enforces ResourceQuota; this copy answers dry runs with the same configuration.
        self.cluster = Cluster(
            self.clock.time, authoritative=False, quota_admission=load_admission_config(config.admission_config)
        )
        self.queue = sq.SchedulingQueue(
            self.clock.time,
            self.scheduler_config.pod_initial_backoff_seconds,
            self.scheduler_config.pod_max_backoff_seconds,
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
        self.watch = WatchFanOut(self.clock)
        self.cluster.listeners.append(self.watch.on_change)
        self.cluster.event_listeners.append(self.watch.on_event)
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
        self.watch.close()
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
