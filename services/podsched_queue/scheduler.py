"""The scheduling loop: pods popped from the scheduling queue in batches, each batch's cycles driven
through the filter, preemption and binder services.

One cycle, as kube-scheduler's schedule_one: pop the next pod -> Filter -> Bind, or on failure
PostFilter -> RecordFailure (the binder writes evictions, the nomination and FailedScheduling) ->
back to the queue. A batch decides what that many one-pod cycles would (see `schedule_batch`); the
writes it leaves in flight are the pipeline's state (pipeline.py).

The scheduler knows its peers only through the few calls it makes (`Filter`, `Preemption`,
`Binder`), its log through `WrittenLog` (read-your-writes versions), its time through a `Clock`, and
reports through a `SchedulingObserver` (instrumentation.py): so it runs in unit tests on fakes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from podsched.api.types import Pod, PodGroup
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.status import Code
from podsched.queue import scheduling_queue as sq
from podsched.scheduler.driver import PodGroupMember, ScheduleOneDriver, SchedulingFailure, bind_failure
from podsched.scheduler.pod_group_scheduler import sends_evictions
from podsched_proto.binder.v1 import binder_pb2
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2
from podsched_service.scheduling import decision_nominations

from .clock import Clock
from .pipeline import (
    ERROR,
    REQUEUED,
    SCHEDULED,
    UNSCHEDULABLE,
    Attempt,
    AttemptState,
    Batch,
    BatchPipeline,
    PendingFailure,
    PendingPodGroup,
)

log = logging.getLogger(__name__)

LEFTOVER_FLUSH_INTERVAL = 30.0  # upstream flushes unschedulable pods older than 5 minutes every 30 s
# Pods after a preemptor that one PostFilterRun may decide: at 128 (the default batch's rest), a
# batch of fresh preemptors is one FindNodes and one PostFilterRun. Runs of 32 made it four of each,
# and the three more round trips (a FindNodes of 15-30 ms whose first pod fits nowhere) were on the
# burst's critical path: PreemptionBasic/1000Nodes latency p50 2266 -> 2123 ms, CPU 4.47 -> 4.25 ms
# per preemptor (docs/performance.md). The binder still commits a batch's failures while the next
# batch's run decides.
POST_FILTER_RUN_LIMIT = 128
RETRY_PAUSE = 0.2  # after a peer failed a batch, before the next one


class Filter(Protocol):
    async def find_nodes(self, request: filter_pb2.FindNodesRequest) -> filter_pb2.FindNodesResponse: ...


class Preemption(Protocol):
    async def post_filter_run(
        self, request: preemption_pb2.PostFilterRunRequest
    ) -> preemption_pb2.PostFilterRunResponse: ...

    async def schedule_pod_groups(
        self, request: preemption_pb2.SchedulePodGroupsRequest
    ) -> preemption_pb2.SchedulePodGroupsResponse: ...


class Binder(Protocol):
    async def bind(self, request: binder_pb2.BindRequest) -> binder_pb2.BindResponse: ...

    async def record_failure(self, request: binder_pb2.RecordFailureRequest) -> binder_pb2.RecordFailureResponse: ...

    async def record_pod_group_result(
        self, request: binder_pb2.RecordPodGroupResultRequest
    ) -> binder_pb2.RecordPodGroupResultResponse: ...


class WrittenLog(Protocol):
    """The versions of the binder's log this scheduler has seen acknowledged (read-your-writes)."""

    @property
    def view_version(self) -> int:
        """What downstream services must have applied before answering."""
        ...

    def saw(self, version: int, event_sequence: int) -> None: ...

    async def caught_up(self) -> None:
        """Until the queue's own replica holds every write seen acknowledged."""
        ...


class SchedulingObserver(Protocol):
    """What the loop reports at each step of an attempt (instrumentation.AttemptTelemetry)."""

    def started(self, attempt: Attempt) -> None: ...
    def batch(self, attempts: list[Attempt]) -> contextlib.AbstractContextManager[None]: ...
    def within(self, attempt: Attempt) -> contextlib.AbstractContextManager[None]: ...
    def carrier(self, attempt: Attempt) -> dict[str, str]: ...
    def filtered(self, attempt: Attempt, placement: filter_pb2.Placement, *, preemption_run: bool = False) -> None: ...
    def bind_answered(self, attempt: Attempt, node_name: str, bound: bool) -> None: ...
    def fit_nowhere(self, attempt: Attempt, placement: filter_pb2.Placement) -> None: ...
    def stale_filter_result(self, attempt: Attempt) -> None: ...
    def decided(self, attempt: Attempt, decision: preemption_pb2.PostFilterResponse) -> None: ...
    def in_pod_group(self, attempt: Attempt, group: PodGroup, size: int) -> None: ...
    def pod_group_finished(self, profile: str, result: str, began: float) -> None: ...
    def finished(self, attempt: Attempt) -> None: ...


def pod_group_result_label(
    decided: preemption_pb2.SchedulePodGroupResponse, written: binder_pb2.RecordPodGroupResultResponse
) -> str:
    """scheduler_podgroup_schedule_attempts_total's result for one pod-group cycle."""
    if written.bind_error or decided.code == int(Code.ERROR):
        return "error"
    if decided.code == int(Code.SUCCESS):
        return "scheduled"
    return "waiting_on_preemption" if decided.waiting_on_preemption else "unschedulable"


class Scheduler:
    def __init__(
        self,
        *,
        queue: sq.SchedulingQueue,
        pods_by_uid: Callable[[str], Pod | None],
        scheduler_config: SchedulerConfig,
        batch_size: int,
        filter: Filter,
        preemption: Preemption,
        binder: Binder,
        written: WrittenLog,
        clock: Clock,
        observer: SchedulingObserver,
        pod_group_of: Callable[[Pod], PodGroup | None] | None = None,
        pod_group_batch_size: int | None = None,
    ) -> None:
        self.queue = queue
        self.pods_by_uid = pods_by_uid
        # What happens to a popped pod before and after its cycle, as in `simulate`.
        self.driver = ScheduleOneDriver(queue, pods_by_uid)
        self.scheduler_config = scheduler_config
        self.batch_size = batch_size
        # Pods of the groups popped in a row for one SchedulePodGroups (None: batch_size).
        self.pod_group_batch_size = batch_size if pod_group_batch_size is None else pod_group_batch_size
        self.filter = filter
        self.preemption = preemption
        self.binder = binder
        self.written = written
        self.clock = clock
        self.observer = observer
        # GenericWorkload: the group a popped pod is scheduled with (None: the gate is off).
        self.pod_group_of = pod_group_of
        self._popped_groups: list[tuple[PodGroup, list[sq.QueuedPodInfo]]] = []
        self.pipeline = BatchPipeline()
        self.wake = asyncio.Event()  # set when the replica applied something: pods may be ready
        self.cycles = 0
        self._last_flush = clock.time()

    # --- the loop --------------------------------------------------------------------------------

    async def run(self) -> None:
        self._last_flush = self.clock.time()
        while True:
            await self.run_once()

    async def run_once(self) -> None:
        """One turn of the loop: schedule the next batch, else finish what the pipeline has in flight
        (its pods may be ready to go again), else wait for the replica or the next backoff expiry."""
        now = self.clock.time()
        if now - self._last_flush >= LEFTOVER_FLUSH_INTERVAL:
            self.queue.flush_unschedulable_leftover()
            self._last_flush = now
        batch = self.pop_batch()
        groups, self._popped_groups = self._popped_groups, []
        if batch and groups:
            await self._schedule_or_back_off(batch, groups)
        elif batch:
            await self._schedule_or_back_off(batch)
        elif self.pipeline.settling is not None:
            await self._finish_settling()
        elif self.pipeline.binding:
            await self._drain_bind()  # nothing to overlap it with: finish it before waiting
        elif self.pipeline.group_writes is not None:
            await self._drain_group_writes()
        else:
            await self._wait()

    async def _wait(self) -> None:
        self.wake.clear()
        timeout = LEFTOVER_FLUSH_INTERVAL
        expiry = self.queue.next_backoff_expiry()
        if expiry is not None:
            timeout = min(timeout, max(0.0, expiry - self.clock.time()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), timeout)

    async def _schedule_or_back_off(
        self, batch: list[sq.QueuedPodInfo], groups: list[tuple[PodGroup, list[sq.QueuedPodInfo]]] | None = None
    ) -> None:
        try:
            if groups:
                await self.schedule_pod_groups(groups)
            else:
                if self.pipeline.group_writes is not None:  # FindNodes does not assume a group's binds
                    await self._finish_group_writes_before(batch)
                await self.schedule_batch(batch)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a peer is down or restarting: retry the pods with backoff
            log.warning("scheduling %d pod(s) from %s failed: %s", len(batch), batch[0].pod.name, error)
            for info in batch:
                self._back_off(info, error)
            await asyncio.sleep(RETRY_PAUSE)

    async def _drain_bind(self) -> None:
        batch = Batch(assumed=[], carried=0)
        try:
            await self._finish_bind(batch)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the binder is down or restarting: _finish_bind requeued the pods
            log.warning("binding failed: %s", error)
            await asyncio.sleep(RETRY_PAUSE)
        finally:
            await self._settle(batch.failures)

    async def stop(self) -> None:
        """Cancel the batch settling in the background and the pod-group writes in flight, if any
        (the loop task is the caller's). A write the binder already took may still commit: the next
        leader reads it from the log."""
        if self.pipeline.settling is not None:
            settling = self.pipeline.finish_settling().done
            if isinstance(settling, asyncio.Future):
                settling.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await settling
        if self.pipeline.group_writes is not None:
            for sent in self.pipeline.finish_group_writes():
                if isinstance(sent.written, asyncio.Future):
                    sent.written.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await sent.written

    def _back_off(self, info: sq.QueuedPodInfo, error: BaseException) -> None:
        """A pod whose attempt an error cut short (a peer down or restarting), if it is still in flight
        (not resolved before the error): back to the queue, retried after its backoff."""
        if self.queue.location(info.pod.uid) == sq.IN_FLIGHT:
            self.queue.add_unschedulable_if_not_present(info, set(), error=True, message=str(error))

    def pop_batch(self) -> list[sq.QueuedPodInfo]:
        """Up to batch_size pods, popped in queue order. Pods of PodGroups (GenericWorkload) are batched
        apart from other pods: a popped pod of a group comes with its group's other queued pods, as one
        entity, and the groups popped in a row, up to pod_group_batch_size pods (a first group whole
        whatever its size), are kept for `run_once` (`schedule_pod_groups`). A pod that would mix the
        two kinds, or bring a group a second time, goes back to be first next time.

        A pod-group batch may be larger than a batch of single pods: its cycles run in the preemption
        service, and what a batch costs beyond them (the round trip, the preemption service catching up
        with the log, the binder's transaction) is the same for 43 gangs of three as for 128."""
        batch: list[sq.QueuedPodInfo] = []
        groups: list[tuple[PodGroup, list[sq.QueuedPodInfo]]] = []
        popped_groups: set[tuple[str, str]] = set()
        while (
            len(batch) < (self.pod_group_batch_size if groups else self.batch_size)
            and (info := self.queue.pop()) is not None
        ):
            group = self.pod_group_of(info.pod) if self.pod_group_of is not None else None
            if group is None and not groups:
                batch.append(info)
                continue
            if group is None or (batch and not groups) or (group.namespace, group.name) in popped_groups:
                self.queue.unpop(info)
                break
            members = [info, *self.queue.take_group_members(group.namespace, group.name)]
            groups.append((group, members))
            popped_groups.add((group.namespace, group.name))
            batch.extend(members)
        self._popped_groups = groups
        return batch

    # --- a pod group's cycle (GenericWorkload) -------------------------------------------------------

    async def schedule_pod_groups(self, groups: list[tuple[PodGroup, list[sq.QueuedPodInfo]]]) -> None:
        """scheduleOnePodGroup for each group popped in a row, in queue order, in one request to the
        preemption service (SchedulePodGroups): each group's pods go through one pod-group cycle
        (Filter and Score per pod with the earlier ones assumed, all or nothing for a gang, pod-group
        preemption when it cannot be placed) with the pods of the groups scheduled before it assumed
        on their nodes, as kube-scheduler's cache holds a scheduled group's pods while their binds go
        on. The request stops after the first group that is not scheduled (its nominations and
        evictions must be in the log before another cycle runs): the groups after it go back to the
        queue untried. Each decided group's writes are one binder operation (RecordPodGroupResult:
        the gang binds whole or not at all), all sent at once, so the binder commits them in one or
        a few transactions.

        The previous batch's writes overlap this batch's cycles when they are binds only (every
        group scheduled with every pod placed, nothing sent back): this request assumes those pods
        on their nodes (`assumed_binds`) instead of waiting for the log to have them, and this
        batch's writes are sent once those are answered, in the same order as one batch after the
        other. What such an assumption cannot stand for is given up and cycled again on the log
        (see `_decided_on_the_log_as_it_is`). Every other batch's writes are read back before the
        next cycle. Once a group's writes are answered (and, when pods go back, read back), the
        pods that did not bind go back to the queue as in `simulate` (ScheduleOneDriver): a
        rejected group as one entity that backs off and is retried when its backoff ends."""
        await self._finish_settling()
        while self.pipeline.binding:
            await self._drain_bind()
        if self._writing(groups):
            # The group's own pods in the writes count as its scheduled pods (GangScheduling's
            # quorum), which an assumed bind does not: its cycle runs on the log with them.
            await self._finish_group_writes_before([info for _, infos in groups for info in infos])
        cycled = [(group, attempts) for group, infos in groups if (attempts := self._pod_group_attempts(group, infos))]
        started = [attempt for _, attempts in cycled for attempt in attempts]
        if not started:
            return
        self.cycles += len(started)
        try:
            with self.observer.batch(started):
                overlapped = self.pipeline.group_writes is not None
                answer = await self.preemption.schedule_pod_groups(
                    preemption_pb2.SchedulePodGroupsRequest(
                        groups=[
                            preemption_pb2.PodGroupToSchedule(
                                namespace=group.namespace,
                                name=group.name,
                                pods=[
                                    filter_pb2.PodToPlace(uid=a.pod.uid, trace_context=self.observer.carrier(a))
                                    for a in attempts
                                ],
                            )
                            for group, attempts in cycled
                        ],
                        min_resource_version=self.written.view_version,
                        assumed_binds=self.pipeline.assumed_binds(),
                    )
                )
                decided = list(zip(cycled, answer.decided, strict=False))
                if overlapped:
                    decided = await self._decided_on_the_log_as_it_is(decided, started)
                self._requeue([a for _, attempts in cycled[len(decided) :] for a in attempts])
                sent = [self._send_pod_group_result(group, attempts, outcome) for (group, attempts), outcome in decided]
            if sent and len(decided) == len(cycled) and all(group.binds_only for group in sent):
                self.pipeline.start_group_writes(sent)  # answered while the next batch is cycled
            elif sent:
                await self._finish_pod_groups(sent, read_back=True)
        except BaseException:
            for attempt in started:
                if attempt.state is not AttemptState.FINISHED:  # an exception cut its cycle short
                    self._finish(attempt, ERROR)
            raise

    async def _decided_on_the_log_as_it_is(
        self,
        decided: list[tuple[tuple[PodGroup, list[Attempt]], preemption_pb2.SchedulePodGroupResponse]],
        started: list[Attempt],
    ) -> list[tuple[tuple[PodGroup, list[Attempt]], preemption_pb2.SchedulePodGroupResponse]]:
        """The decisions of a batch cycled while the previous batch's binds were in flight (assumed),
        once those are answered, cut to what one batch after the other would have decided:
        - a bind refused or a write failed: the batch was cycled on pods that did not bind, and every
          group goes back untried (a failed write raises once they are back);
        - the last group not scheduled: its rejection or pod-group preemption reads more of the
          cluster than where pods sit (the victims' start times and groups, the PDBs), which an
          assumed bind does not give; it goes back untried and, with this batch's writes read back
          first, is cycled again on the log. The scheduled groups before it stand: Filter and Score
          see an assumed pod as a bound one."""
        try:
            all_bound = await self._finish_group_writes()
        except Exception:
            self._requeue(started)
            raise
        if not all_bound:
            return []
        if decided and decided[-1][1].code != int(Code.SUCCESS):
            return decided[:-1]
        return decided

    def _pod_group_attempts(self, group: PodGroup, infos: list[sq.QueuedPodInfo]) -> list[Attempt]:
        """The group's popped pods that are still to schedule (skipPodGroupPodSchedule), in queue
        order, each attempt started."""
        attempts: list[Attempt] = []
        for info, pod in self.driver.skip_pod_group_pod_schedule(infos):
            attempt = Attempt(info, pod, self.clock.monotonic())
            self.observer.started(attempt)
            self.observer.in_pod_group(attempt, group, len(infos))
            attempts.append(attempt)
        return attempts

    def _send_pod_group_result(
        self, group: PodGroup, attempts: list[Attempt], decided: preemption_pb2.SchedulePodGroupResponse
    ) -> PendingPodGroup:
        """Start a decided group's RecordPodGroupResult; `_finish_pod_groups` takes its answer."""
        placed_all = decided.code == int(Code.SUCCESS) and all(pod.node_name for pod in decided.pods)
        self.driver.pod_group_decided(group.namespace, group.name, [a.pod.uid for a in attempts], placed_all)
        # starts_async_preemption: read before the binder evicts the victims.
        preempting = decided.waiting_on_preemption and sends_evictions(
            self.pods_by_uid(uid) for uid in decided.victim_uids
        )
        for attempt, pod_outcome in zip(attempts, decided.pods, strict=True):
            if pod_outcome.node_name:
                attempt.bind_started()
            else:
                attempt.failure_sent()
        written = asyncio.ensure_future(
            self.binder.record_pod_group_result(
                binder_pb2.RecordPodGroupResultRequest(
                    namespace=group.namespace,
                    name=group.name,
                    code=decided.code,
                    message=decided.message,
                    waiting_on_preemption=decided.waiting_on_preemption,
                    pods=decided.pods,
                    victim_uids=decided.victim_uids,
                )
            )
        )
        return PendingPodGroup(group, attempts, decided, preempting, written)

    def _writing(self, groups: list[tuple[PodGroup, list[sq.QueuedPodInfo]]]) -> bool:
        """Whether one of `groups` has pods in the pod-group writes in flight."""
        in_flight = {(sent.group.namespace, sent.group.name) for sent in self.pipeline.group_writes or ()}
        return any((group.namespace, group.name) in in_flight for group, _ in groups)

    async def _finish_group_writes(self) -> bool:
        """Wait for the pod-group writes in flight, if any, and settle their pods; True if every pod
        in them bound. A failed write raises once the others are settled, its pods backed off."""
        if self.pipeline.group_writes is None:
            return True
        return await self._finish_pod_groups(self.pipeline.finish_group_writes(), read_back=False)

    async def _finish_group_writes_before(self, popped: list[sq.QueuedPodInfo]) -> None:
        """Settle the pod-group writes in flight before cycling pods that must see them in the log;
        if a write failed, the popped pods go back untried and the error is raised."""
        try:
            await self._finish_group_writes()
        except Exception:
            for info in popped:
                self.queue.unpop(info)
            raise

    async def _drain_group_writes(self) -> None:
        """Nothing popped to overlap the pod-group writes with: settle them before waiting."""
        try:
            await self._finish_group_writes()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the binder is down or restarting: the pods backed off
            log.warning("writing pod groups failed: %s", error)
            await asyncio.sleep(RETRY_PAUSE)

    async def _finish_pod_groups(self, sent: list[PendingPodGroup], *, read_back: bool) -> bool:
        """The groups' writes answered, then each pod's outcome: bound, or back to the queue once
        this queue's replica has read the writes back (the failures' own writes must not count as
        new events). `read_back`: wait for the replica even if every pod bound, so the next cycle
        pops after the binds' events. Returns whether every pod bound. A write that failed raises
        once the others are settled, its pods backed off (`_schedule_or_back_off` pauses)."""
        answers = await asyncio.gather(*(group.written for group in sent), return_exceptions=True)
        all_bound = True
        for group, answer in zip(sent, answers, strict=True):
            if isinstance(answer, binder_pb2.RecordPodGroupResultResponse):
                self.written.saw(answer.resource_version, answer.event_sequence)
                bound = set(answer.bound_pod_uids)
                all_bound = all_bound and all(attempt.pod.uid in bound for attempt in group.attempts)
            else:
                all_bound = False
        failed: BaseException | None = None
        try:
            if read_back or not all_bound:
                await self.written.caught_up()
        finally:
            for group, answer in zip(sent, answers, strict=True):
                if isinstance(answer, BaseException):
                    failed = failed or answer
                    self._pod_group_not_written(group, answer)
                else:
                    self._pod_group_written(group, answer)
        if failed is not None:
            raise failed
        return all_bound

    def _pod_group_not_written(self, sent: PendingPodGroup, error: BaseException) -> None:
        """A group whose write failed (the binder down or restarting): its pods back off with an error."""
        attempts = sent.attempts
        self.observer.pod_group_finished(attempts[0].pod.spec.scheduler_name, ERROR, attempts[0].began)
        for attempt in attempts:
            fresh = self.queue.info(attempt.pod.uid)
            if fresh is not None:
                self._back_off(fresh, error)
            self._finish(attempt, ERROR)

    def _pod_group_written(self, sent: PendingPodGroup, written: binder_pb2.RecordPodGroupResultResponse) -> None:
        """One group's pods after its writes are in the log: bound, or back to the queue."""
        attempts, decided = sent.attempts, sent.decided
        self.observer.pod_group_finished(
            attempts[0].pod.spec.scheduler_name, pod_group_result_label(decided, written), attempts[0].began
        )
        bound = set(written.bound_pod_uids)
        members = [
            PodGroupMember(
                attempt.info,
                attempt.pod.uid in bound,
                written.bind_error or outcome.message,
                frozenset(outcome.rejector_plugins),
                outcome.error or bool(written.bind_error),
            )
            for attempt, outcome in zip(attempts, decided.pods, strict=True)
        ]
        self.driver.add_attempted_pod_group_if_needed(
            sent.group.namespace, sent.group.name, Code(decided.code), members, preempting=sent.preempting
        )
        for attempt, outcome, member in zip(attempts, decided.pods, members, strict=True):
            self.observer.bind_answered(attempt, outcome.node_name, member.bound)
            self._finish(attempt, SCHEDULED if member.bound else ERROR if member.error else UNSCHEDULABLE)

    # --- a batch's cycles ----------------------------------------------------------------------------

    async def schedule_batch(self, batch: list[sq.QueuedPodInfo]) -> None:
        """Consecutive scheduling cycles of the popped pods (see `_place`).

        The filter places the pods in queue order, each on the cluster with the earlier ones assumed
        on their nodes, and stops at the first pod that fits nowhere: exactly what that many
        one-pod cycles decide. The placed pods are bound together (one binder transaction), then the
        pod that did not fit goes through PostFilter with those binds assumed while they go on, and the
        pods after it are filtered next, with its nomination assumed: by the preemption service, on
        the copy PostFilter read, while they fit nowhere (a run of preemptors), else by FindNodes."""
        attempts: list[Attempt] = []
        for info in batch:
            pod = self.driver.skip_pod_schedule(info)
            if pod is None:
                continue
            attempt = Attempt(info, pod, self.clock.monotonic())
            self.observer.started(attempt)
            attempts.append(attempt)
        if not attempts:
            return
        self.cycles += len(attempts)
        try:
            with self.observer.batch(attempts):
                await self._place(attempts)
        finally:
            for attempt in attempts:
                if attempt.state is AttemptState.TRYING:  # an exception cut its cycle short
                    self._finish(attempt, ERROR)

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
        time: a batch with failures of its own waits for the one before to settle first; a batch
        without, such as the retries that bind after their preemption, does not wait, and the
        batches after it keep assuming the settling batch's nominations)."""
        batch = self.pipeline.begin_batch()
        remaining = attempts
        try:
            while remaining:
                remaining = await self._cycle(remaining, batch)
        except BaseException:
            await self._settle(batch.failures)
            raise
        if batch.failures:
            await self._finish_settling()
            self.pipeline.start_settling(batch, asyncio.ensure_future(self._settle_in_background(batch.failures)))

    async def _finish_settling(self) -> None:
        """Wait for the previous batch's failures to settle; its nominations are then in the log."""
        if self.pipeline.settling is not None:
            await self.pipeline.finish_settling().done

    async def _settle_in_background(self, failures: list[PendingFailure]) -> None:
        try:
            await self._settle(failures)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the pods went back to the queue all the same (see _settle)
            log.warning("settling %d failed attempt(s) failed: %s", len(failures), error)

    async def _cycle(self, attempts: list[Attempt], batch: Batch) -> list[Attempt]:
        """One FindNodes over `attempts` and what follows from it; returns the pods still to try."""
        # 1. Filter the pods in order, each with the earlier ones (and the Binds in flight) assumed.
        found = await self.filter.find_nodes(
            filter_pb2.FindNodesRequest(
                pods=[filter_pb2.PodToPlace(uid=a.pod.uid, trace_context=self.observer.carrier(a)) for a in attempts],
                min_resource_version=self.written.view_version,
                assumed_nominations=batch.assumed,
                assumed_binds=self.pipeline.assumed_binds(),
            )
        )
        placements = list(found.placements)
        for attempt, placement in zip(attempts, placements, strict=False):
            self.observer.filtered(attempt, placement)
        # 2. Bind the placed prefix, once the oldest Bind is answered if as many as may be are in
        # flight (the answers already in are taken first).
        placed = [(a, p.node_name) for a, p in zip(attempts, placements, strict=False) if p.node_name]
        all_bound = await self._finish_binds(batch)
        if placed:
            self._start_bind(placed)
        # 3. The pods the filter could not look at (gone, already bound) fail with an error.
        unplaced = [(a, p) for a, p in zip(attempts, placements, strict=False) if not p.node_name]
        untried = attempts[len(placements) :]  # after the pod that fit nowhere: not attempted yet
        for attempt, placement in unplaced:
            if placement.error:  # the pod is gone or already bound: an error, not a diagnosis
                batch.failures.append(self._send_failure(attempt, bind_failure(attempt.pod.uid, placement.error)))
        fit_nowhere = [(a, p) for a, p in unplaced if not p.error]
        if not fit_nowhere:
            return untried
        # 4. PostFilter for the pod that fit nowhere, with the placed pods' Bind still in flight
        # assumed on their nodes, as kube-scheduler's PostFilter sees the pods its earlier cycles
        # assumed while their binding goes on.
        attempt, placement = fit_nowhere[0]
        if not all_bound:
            # That pod was filtered with the in-flight Binds' pods assumed in place, and one of those
            # binds was refused: its diagnosis is of a cluster that does not exist. It and the pods
            # after it go back untried and are filtered again next batch.
            self._requeue([attempt, *untried])
            return []
        with self.observer.within(attempt):
            decided = await self._post_filter(attempt, placement, found.resource_version, batch, untried)
        if decided is None:  # a stale diagnosis: filter it (and the pods after it) again
            self._requeue([attempt, *untried])
            return []
        # 5. The pods after the run are filtered next, with its nominations assumed.
        batch.failures.extend(decided)
        return untried[len(decided) - 1 :]

    def _finish(self, attempt: Attempt, result: str) -> None:
        attempt.finish(result)
        self.observer.finished(attempt)

    def _requeue(self, attempts: list[Attempt]) -> None:
        for attempt in attempts:
            self.queue.unpop(attempt.info)
            self._finish(attempt, REQUEUED)

    def _start_bind(self, placed: list[tuple[Attempt, str]]) -> None:
        """Send the Bind of the placed pods (one request, one binder transaction); `_finish_bind`
        takes its answer."""
        request = binder_pb2.BindRequest(
            bindings=[
                binder_pb2.Binding(pod_uid=a.pod.uid, node_name=node, trace_context=self.observer.carrier(a))
                for a, node in placed
            ]
        )
        call = asyncio.ensure_future(self.binder.bind(request))

        # The attempts end when the answer comes (kube-scheduler's binding cycle), which the loop may
        # take a FindNodes later with another Bind in flight.
        def answered(_: asyncio.Future[Any]) -> None:
            now = self.clock.monotonic()
            for attempt, _node in placed:
                attempt.answered = now

        call.add_done_callback(answered)
        self.pipeline.start_bind(placed, call)

    async def _finish_binds(self, batch: Batch) -> bool:
        """Take the answers of the Binds already answered, and wait for the oldest if as many as
        may be are still in flight; True if every bind in those was accepted."""
        all_bound = True
        while self.pipeline.oldest_bind_answered or self.pipeline.binds_full:
            all_bound = await self._finish_bind(batch) and all_bound
        return all_bound

    async def _finish_bind(self, batch: Batch) -> bool:
        """Wait for the oldest Bind in flight, if any; True if every bind in it was accepted. A refused bind
        is a failed attempt (added to the batch's failures). If the call fails, its pods go back to
        the queue with backoff and the error is raised."""
        if not self.pipeline.binding:
            return True
        pending = self.pipeline.finish_bind()
        try:
            bound = await pending.call
        except Exception as error:
            for attempt, _ in pending.placed:
                fresh = self.queue.info(attempt.pod.uid)
                if fresh is not None:
                    self._back_off(fresh, error)
                self._finish(attempt, ERROR)
            raise
        self.written.saw(bound.resource_version, bound.event_sequence)
        all_bound = True
        for (attempt, node_name), result in zip(pending.placed, bound.results, strict=True):
            self.observer.bind_answered(attempt, node_name, result.bound)
            if result.bound:
                self._finish(attempt, SCHEDULED)
            else:
                all_bound = False
                batch.failures.append(self._send_failure(attempt, bind_failure(attempt.pod.uid, result.message)))
        return all_bound

    async def _post_filter(
        self,
        attempt: Attempt,
        placement: filter_pb2.Placement,
        filter_version: int,
        batch: Batch,
        untried: list[Attempt],
    ) -> list[PendingFailure] | None:
        """PostFilter for a pod that fit nowhere (the filter answered at `filter_version`), then the
        cycles of the pods after it while they fit nowhere too, in one PostFilterRun: upstream's
        one-pod-at-a-time cycles, each seeing the nominations of the ones before, without a FindNodes
        and a PostFilter round trip per preemptor. Returns the failures, sent, of the pod and of the
        run's first len(result) - 1 pods of `untried`; None if PostFilter found the Filter outcome
        stale. Adds the decisions' nominations to the batch's assumed ones."""
        pod = attempt.pod
        self.observer.fit_nowhere(attempt, placement)
        rejectors = frozenset(placement.rejector_plugins)
        profile = self.scheduler_config.profile_named(pod.spec.scheduler_name)
        if profile is None or not profile.preemption_enabled:  # the pod's profile has no PostFilter
            return [self._send_failure(attempt, SchedulingFailure(pod.uid, placement.message, rejectors))]
        run = untried[:POST_FILTER_RUN_LIMIT]
        answer = await self.preemption.post_filter_run(
            preemption_pb2.PostFilterRunRequest(
                first=preemption_pb2.PostFilterRequest(
                    pod=filter_pb2.PodToPlace(uid=pod.uid),
                    filter_result=placement,
                    min_resource_version=self.written.view_version,
                    filter_resource_version=filter_version,
                    assumed_nominations=batch.assumed,
                    assumed_binds=self.pipeline.assumed_binds(),
                ),
                next=[filter_pb2.PodToPlace(uid=a.pod.uid, trace_context=self.observer.carrier(a)) for a in run],
            )
        )
        first = answer.decisions[0].decision
        if first.stale_filter_result:
            # Room was made after the filter answered (PostFilter's copy is newer): not a failed
            # attempt; the pod is filtered again once the filter has that version.
            self.observer.stale_filter_result(attempt)
            self.written.saw(answer.resource_version, -1)
            return None
        failures = [self._record_decision(attempt, rejectors, first, batch)]
        for later, item in zip(run, answer.decisions[1:], strict=False):
            self.observer.filtered(later, item.filter_result, preemption_run=True)
            with self.observer.within(later):
                failures.append(
                    self._record_decision(later, frozenset(item.filter_result.rejector_plugins), item.decision, batch)
                )
        return failures

    def _record_decision(
        self,
        attempt: Attempt,
        rejectors: frozenset[str],
        decision: preemption_pb2.PostFilterResponse,
        batch: Batch,
    ) -> PendingFailure:
        """A PostFilter decision reported, its nominations added to the batch's assumed ones, and its
        failure's writes (evictions, nominations, FailedScheduling) sent."""
        self.observer.decided(attempt, decision)
        batch.assumed.extend(decision_nominations(attempt.pod.uid, decision))
        failure = SchedulingFailure(
            attempt.pod.uid,
            decision.message,
            rejectors,
            nominated_node_name=decision.nominated_node_name,
            victim_uids=tuple(v.uid for v in decision.victims),
            clear_nomination_uids=tuple(p.uid for p in decision.nominations_to_clear),
            clear_own_nomination=decision.clear_own_nomination,
        )
        return self._send_failure(attempt, failure)

    def _send_failure(self, attempt: Attempt, failure: SchedulingFailure) -> PendingFailure:
        """Start the failed attempt's RecordFailure; `_settle` waits for it."""
        request = binder_pb2.RecordFailureRequest(
            pod_uid=failure.pod_uid,
            message=failure.message,
            nominated_node_name=failure.nominated_node_name,
            victim_uids=failure.victim_uids,
            clear_nomination_uids=failure.clear_nomination_uids,
            clear_own_nomination=failure.clear_own_nomination,
        )
        with self.observer.within(attempt):
            call: Awaitable[Any] = asyncio.ensure_future(self.binder.record_failure(request))
        attempt.failure_sent()
        return PendingFailure(attempt, call, failure, self.clock.time())

    async def _settle(self, failures: list[PendingFailure]) -> None:
        """Wait for the batch's failures to be committed, then until the queue's replica holds
        them: the failures' own writes must reach the queue while the pods are still in flight,
        as in one process, so an update made by a failure itself does not count as a new event.
        Then the pods go back to the queue (handleSchedulingFailure's queue half)."""
        if not failures:
            return
        results = await asyncio.gather(*(f.call for f in failures), return_exceptions=True)
        for result in results:
            if not isinstance(result, BaseException):
                self.written.saw(result.resource_version, result.event_sequence)
        try:
            await self.written.caught_up()
        finally:
            for pending, result in zip(failures, results, strict=True):
                attempt, failure = pending.attempt, pending.failure
                if isinstance(result, BaseException):
                    log.warning("recording the failure of %s failed: %s", attempt.pod.name, result)
                    failure = bind_failure(attempt.pod.uid, str(result))
                self.driver.handle_scheduling_failure(attempt.info, failure, pending.failed_at)
                self._finish(attempt, ERROR if failure.error else UNSCHEDULABLE)
