"""The batch pipeline of the scheduling loop: what each popped pod's attempt waits for, and which
writes are still on their way to the binder. Pure state with validated transitions, beside the I/O:
scheduler.py sends the calls and calls these transitions; an illegal one raises PipelineError.

A batch's cycles overlap two kinds of writes with the cycles after them:
- one Bind in flight: the pods the last FindNodes placed, bound in one binder transaction while the
  next FindNodes runs with them assumed on their nodes (kube-scheduler's assume + asynchronous bind);
- one batch settling: a finished batch's failures (RecordFailure: nominations, evictions,
  FailedScheduling) committed and read back while the next batch runs with their nominations assumed.

The pipeline (`BatchPipeline`), two independent slots, at most one of each:

    bind slot:    IDLE --start_bind--> BINDING --finish_bind--> IDLE
    settle slot:  IDLE --start_settling--> SETTLING --finish_settling--> IDLE

One pod's attempt (`Attempt`):

    TRYING --bind_started--> BINDING --finish(scheduled | error)--> FINISHED
      |                         `--failure_sent (bind refused)--.
      |--failure_sent--> SETTLING <-----------------------------'
      |                     `--finish(unschedulable | error)--> FINISHED
      `--finish(requeued | error)--> FINISHED   (sent back untried, or cut short by an error)

An attempt is FINISHED exactly once: its result is then final and counted (requeued is not an attempt
and is not counted)."""

from __future__ import annotations

import enum
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from podsched.api.types import Pod
from podsched.queue import scheduling_queue as sq
from podsched.scheduler.driver import SchedulingFailure
from podsched_proto.filter.v1 import filter_pb2


class PipelineError(RuntimeError):
    """A transition the pipeline's state does not allow (a bug in the scheduling loop)."""


class AttemptState(enum.Enum):
    TRYING = "trying"  # in its batch's cycles
    BINDING = "binding"  # in the Bind in flight
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
    """One pod's scheduling attempt within a batch. `began` is on the scheduler's monotonic clock."""

    info: sq.QueuedPodInfo
    pod: Pod
    began: float
    state: AttemptState = AttemptState.TRYING
    result: str = ""  # set when FINISHED

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
    """At most one Bind in flight and at most one batch settling (see the module docstring)."""

    def __init__(self) -> None:
        self.bind: PendingBind | None = None
        self.settling: Settling | None = None

    def start_bind(self, placed: list[tuple[Attempt, str]], call: Awaitable[Any]) -> None:
        if self.bind is not None:
            raise PipelineError("a Bind is already in flight: finish it before starting another")
        if not placed:
            raise PipelineError("a Bind needs at least one placed pod")
        for attempt, _ in placed:
            attempt.bind_started()
        self.bind = PendingBind(placed, call)

    def finish_bind(self) -> PendingBind:
        """The Bind in flight, whose answer the caller now takes; the bind slot is free again."""
        if self.bind is None:
            raise PipelineError("no Bind in flight")
        pending, self.bind = self.bind, None
        return pending

    def assumed_binds(self) -> list[filter_pb2.AssumedBind]:
        """The pods of the Bind in flight on their nodes, for the next FindNodes."""
        if self.bind is None:
            return []
        return [filter_pb2.AssumedBind(pod_uid=a.pod.uid, node_name=node) for a, node in self.bind.placed]

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
