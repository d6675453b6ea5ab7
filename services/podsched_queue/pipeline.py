"""The batch pipeline of the scheduling loop: what each popped pod's attempt waits for, and which
writes are still on their way to the binder. Pure state with validated transitions, beside the I/O:
scheduler.py sends the calls and calls these transitions; an illegal one raises PipelineError.

A batch's cycles overlap three kinds of writes with the cycles after them:
- up to two Binds in flight: the pods the last FindNodes placed, each batch's bound in one binder
  transaction while the next FindNodes runs with them assumed on their nodes (kube-scheduler's
  assume + asynchronous bind);
- one batch settling: a finished batch's failures (RecordFailure: nominations, evictions,
  FailedScheduling) committed and read back while the next batch runs with their nominations assumed;
- one batch of pod-group writes in flight: the RecordPodGroupResult calls of pod groups whose every
  pod was placed, committed while the next batch's pod-group cycles (SchedulePodGroups) run with
  those pods assumed on their nodes. Only such groups are left in flight: their writes are binds,
  and no pod of theirs goes back to the queue unless the binder refuses them.

The pipeline (`BatchPipeline`), three kinds of slot: MAX_BINDS_IN_FLIGHT bind slots (answered in
the order they were sent), one of each other kind; a Bind and pod-group writes are never in flight
together (each kind of batch assumes only its own kind of placements):

    bind slots:        IDLE --start_bind--> BINDING --finish_bind (the oldest)--> IDLE
    settle slot:       IDLE --start_settling--> SETTLING --finish_settling--> IDLE
    group-write slot:  IDLE --start_group_writes--> WRITING --finish_group_writes--> IDLE

One pod's attempt (`Attempt`):

    TRYING --bind_started--> BINDING --finish(scheduled | error)--> FINISHED
      |                         `--failure_sent (bind refused)--.
      |--failure_sent--> SETTLING <-----------------------------'
      |                     `--finish(unschedulable | error)--> FINISHED
      `--finish(requeued | error)--> FINISHED   (sent back untried, or cut short by an error)

An attempt is FINISHED exactly once: its result is then final and counted (requeued is not an attempt
and is not counted)."""

from __future__ import annotations

import asyncio
import collections
import enum
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from podsched.api.types import Pod, PodGroup
from podsched.framework.status import Code
from podsched.queue import scheduling_queue as sq
from podsched.scheduler.driver import SchedulingFailure
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2

# Binds in flight at once. With one, the loop waited for its answer after each FindNodes: a third
# of a SchedulingBasic run's scheduling (1.6 of 5.0 s), 80-130 ms at a time when the binder's write
# loop was busy with the creates. With two, the next batch is filtered with both assumed, and the
# binder finds the next Bind queued when it is done with the last. A refused bind is then seen
# when its answer comes, and what was decided meanwhile with it assumed stands, as in
# kube-scheduler, whose cycles go on while a binding goes on.
MAX_BINDS_IN_FLIGHT = 2


def _answered(call: Awaitable[Any]) -> bool:
    return isinstance(call, asyncio.Future) and call.done()


class PipelineError(RuntimeError):
    """A transition the pipeline's state does not allow (a bug in the scheduling loop)."""


class AttemptState(enum.Enum):
    TRYING = "trying"  # in its batch's cycles
    BINDING = "binding"  # in a Bind in flight
    SETTLING = "settling"  # its RecordFailure sent; back to the queue once settled
    FINISHED = "finished"


# kube-scheduler's result label of scheduler_schedule_attempts_total, and "requeued".
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"
REQUEUED = "requeued"

# The states each result may end an attempt from.
_FINISHED_FROM = {
    SCHEDULED: {AttemptState.BINDING},
    UNSCHEDULABLE: {AttemptState.SETTLING},
    ERROR: {AttemptState.TRYING, AttemptState.BINDING, AttemptState.SETTLING},
    REQUEUED: {AttemptState.TRYING},
}


@dataclass(eq=False)
class Attempt:
    """One pod's scheduling attempt within a batch. `began` is on the scheduler's monotonic clock;
    so is `answered`, when its Bind's answer came (the loop may take it later, with a Bind after it
    in flight): where kube-scheduler's binding cycle ends the attempt."""

    info: sq.QueuedPodInfo
    pod: Pod
    began: float
    state: AttemptState = AttemptState.TRYING
    result: str = ""  # set when FINISHED
    answered: float | None = None

    def duration(self, now: float) -> float:
        """Seconds from the pop to the Bind's answer, or to `now` (an attempt that ended otherwise,
        or whose answer's callback has not run yet though the loop took it this turn)."""
        return (self.answered if self.answered is not None else now) - self.began

    def _move(self, allowed: set[AttemptState], to: AttemptState) -> None:
        if self.state not in allowed:
            raise PipelineError(f"attempt of {self.pod.name}: {self.state.value} -> {to.value} is not a transition")
        self.state = to

    def bind_started(self) -> None:
        self._move({AttemptState.TRYING}, AttemptState.BINDING)

    def failure_sent(self) -> None:
        self._move({AttemptState.TRYING, AttemptState.BINDING}, AttemptState.SETTLING)

    def finish(self, result: str) -> None:
        if result not in _FINISHED_FROM:
            raise PipelineError(f"attempt of {self.pod.name}: unknown result {result!r}")
        self._move(_FINISHED_FROM[result], AttemptState.FINISHED)
        self.result = result

    @property
    def outcome_pending(self) -> bool:
        """Its outcome comes after its batch ends: a Bind still in flight, or a failure still settling."""
        return self.state in (AttemptState.BINDING, AttemptState.SETTLING)


@dataclass
class PendingBind:
    """Placed pods (each with its node) whose Bind is on its way to the binder: the next FindNodes
    assumes them on their nodes, as kube-scheduler's cache assumes a pod while its binding goes on."""

    placed: list[tuple[Attempt, str]]
    call: Awaitable[Any]


@dataclass
class PendingFailure:
    """A failed attempt whose RecordFailure is on its way to the binder, and the failure the queue
    takes the pod back with once it is settled (ScheduleOneDriver.handle_scheduling_failure)."""

    attempt: Attempt
    call: Awaitable[Any]
    failure: SchedulingFailure
    failed_at: float  # the queue clock's time of the decision: the pod's backoff counts from it


@dataclass
class PendingPodGroup:
    """A decided pod group whose writes (RecordPodGroupResult: its binds, or its evictions and
    failures) are on their way to the binder. `preempting`: its pod-group preemption sends
    evictions (starts_async_preemption), read before the binder evicted the victims."""

    group: PodGroup
    attempts: list[Attempt]
    decided: preemption_pb2.SchedulePodGroupResponse
    preempting: bool
    written: Awaitable[Any]

    @property
    def placed(self) -> list[tuple[Attempt, str]]:
        return [(a, p.node_name) for a, p in zip(self.attempts, self.decided.pods, strict=True) if p.node_name]

    @property
    def binds_only(self) -> bool:
        """Scheduled with every pod placed: the writes are its binds, and its pods leave the queue
        once they are accepted."""
        return self.decided.code == int(Code.SUCCESS) and all(p.node_name for p in self.decided.pods)


@dataclass
class Settling:
    """A finished batch's failures being committed and read back, and the nominations they carry,
    which the next batch assumes until the log has them."""

    nominations: list[filter_pb2.Nomination]
    done: Awaitable[None]


@dataclass
class Batch:
    """The cycles of one batch: the nominations they assume (those carried over from the batch still
    settling, then the ones this batch decides) and the failures sent so far."""

    assumed: list[filter_pb2.Nomination]
    carried: int  # the first `carried` of `assumed` are the settling batch's
    failures: list[PendingFailure] = field(default_factory=list)

    @property
    def decided_nominations(self) -> list[filter_pb2.Nomination]:
        return self.assumed[self.carried :]


class BatchPipeline:
    """At most MAX_BINDS_IN_FLIGHT Binds in flight, at most one batch settling and at most one batch
    of pod-group writes in flight (see the module docstring)."""

    def __init__(self) -> None:
        self.binds: collections.deque[PendingBind] = collections.deque()
        self.settling: Settling | None = None
        self.group_writes: list[PendingPodGroup] | None = None

    @property
    def binding(self) -> bool:
        """A Bind is in flight."""
        return bool(self.binds)

    @property
    def binds_full(self) -> bool:
        """MAX_BINDS_IN_FLIGHT Binds are in flight: the next waits for the oldest's answer."""
        return len(self.binds) >= MAX_BINDS_IN_FLIGHT

    @property
    def oldest_bind_answered(self) -> bool:
        return bool(self.binds) and _answered(self.binds[0].call)

    def start_bind(self, placed: list[tuple[Attempt, str]], call: Awaitable[Any]) -> None:
        if self.binds_full:
            raise PipelineError(f"{MAX_BINDS_IN_FLIGHT} Binds are already in flight: finish the oldest first")
        if self.group_writes is not None:
            raise PipelineError("pod-group writes are in flight: finish them before a Bind")
        if not placed:
            raise PipelineError("a Bind needs at least one placed pod")
        for attempt, _ in placed:
            attempt.bind_started()
        self.binds.append(PendingBind(placed, call))

    def finish_bind(self) -> PendingBind:
        """The oldest Bind in flight, whose answer the caller now takes (Binds are answered in the
        order they were sent: one binder write loop); its slot is free again."""
        if not self.binds:
            raise PipelineError("no Bind in flight")
        return self.binds.popleft()

    def start_group_writes(self, groups: list[PendingPodGroup]) -> None:
        """Leave the decided groups' writes in flight; the attempts of their pods are BINDING."""
        if self.group_writes is not None:
            raise PipelineError("pod-group writes are already in flight: finish them before sending more")
        if self.binds:
            raise PipelineError("a Bind is in flight: finish it before leaving pod-group writes in flight")
        if not groups:
            raise PipelineError("pod-group writes need at least one group")
        for group in groups:
            if not group.binds_only:
                raise PipelineError(
                    f"pod group {group.group.namespace}/{group.group.name}: only a group whose every pod "
                    "was placed is left in flight"
                )
            for attempt in group.attempts:
                if attempt.state is not AttemptState.BINDING:
                    raise PipelineError(f"attempt of {attempt.pod.name}: {attempt.state.value}, not binding")
        self.group_writes = groups

    def finish_group_writes(self) -> list[PendingPodGroup]:
        """The pod-group writes in flight, whose answers the caller now takes; the slot is free again."""
        if self.group_writes is None:
            raise PipelineError("no pod-group writes in flight")
        groups, self.group_writes = self.group_writes, None
        return groups

    def assumed_binds(self) -> list[filter_pb2.AssumedBind]:
        """The pods of the Binds or of the pod-group writes in flight on their nodes, for the next
        FindNodes or SchedulePodGroups."""
        placed = [entry for pending in self.binds for entry in pending.placed]
        for group in self.group_writes or ():
            placed.extend(group.placed)
        return [filter_pb2.AssumedBind(pod_uid=a.pod.uid, node_name=node) for a, node in placed]

    def begin_batch(self) -> Batch:
        """A batch's cycles assume the nominations of the batch still settling, if one is."""
        carried = list(self.settling.nominations) if self.settling is not None else []
        return Batch(assumed=list(carried), carried=len(carried))

    def start_settling(self, batch: Batch, done: Awaitable[None]) -> None:
        if self.settling is not None:
            raise PipelineError("a batch is already settling: finish it before starting another")
        if not batch.failures:
            raise PipelineError("a batch without failures has nothing to settle")
        self.settling = Settling(batch.decided_nominations, done)

    def finish_settling(self) -> Settling:
        """The batch settling, which the caller now waits for; its nominations are no longer assumed."""
        if self.settling is None:
            raise PipelineError("no batch settling")
        settling, self.settling = self.settling, None
        return settling
