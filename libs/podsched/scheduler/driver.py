"""What ScheduleOne does around the scheduling algorithm, once for `podsched simulate` and the queue
service: which popped pods are scheduled at all, what a failed attempt records in the cluster, and
where each pod goes back in the queue after its cycle (upstream schedule_one.go and
schedule_one_podgroup.go: skipPodSchedule, skipPodGroupPodSchedule, handleSchedulingFailure,
submitPodGroupAlgorithmResult's AddAttemptedPodGroupIfNeeded).

No I/O: plain decisions in; queue calls (and, for `simulate`, cluster writes) out. How a decision
is reached and how its record is written are the caller's: `simulate` runs the algorithm in process
and writes the record to its cluster at once (`record_failure`); the queue service gets the
decision from the filter and preemption services and sends the same record to the binder, then
hands the pod back through `handle_scheduling_failure` once the write is read back. Both therefore
requeue a pod, and a pod group, the same way.

For one pod:

    popped --skip_pod_schedule--> gone or bound: done
       `--cycle--> bound: the bind reaches the queue through its cluster feed
                   failed: record_failure (nomination, victims, nominations to clear,
                           FailedScheduling), then handle_scheduling_failure:
                           add_unschedulable_if_not_present (an error backs off; otherwise the
                           pool, or backoff/active if an event it cares about came meanwhile)

For a pod group (GenericWorkload), after its cycle's writes (binds, evictions, failures):

    scheduled (at least one pod bound) -> each pod not bound, rejected or failed with an error:
                                          requeue_after_group_success (activeQ at once, its queue
                                          time kept); then the pods that arrived while the group
                                          was in flight join it there
                                          (add_pending_pod_group_pods_after_success)
    otherwise                          -> add_attempted_pod_group: the pods go back as one entity,
                                          those that arrived meanwhile with them, that backs off
                                          (1 s doubling, at most max x sqrt(size)) and is retried
                                          when the backoff ends, whatever happens; one whose cycle
                                          sent evictions waits in the pool (gated by
                                          DefaultPreemption) for an assigned pod's deletion
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from podsched.api.types import Pod
from podsched.cluster.failure import record_scheduling_failure
from podsched.cluster.state import Cluster
from podsched.framework.status import Code, Status
from podsched.queue import scheduling_queue as sq
from podsched.scheduler.pod_group_scheduler import group_rejectors
from podsched.scheduler.schedule_one import CycleResult


@dataclass(frozen=True, slots=True)
class SchedulingFailure:
    """One pod's failed attempt: what handleSchedulingFailure records about it (PodScheduled=False
    with `message` and a FailedScheduling event; with `nominated_node_name`, the victims' evictions,
    the lower-priority nominations cleared and the pod's nomination; with `clear_own_nomination`,
    its nomination cleared because PostFilter found no candidate) and what the queue does with it
    (`rejector_plugins`: the events that may make it schedulable; `error`: it backs off)."""

    pod_uid: str
    message: str
    rejector_plugins: frozenset[str] = frozenset()
    error: bool = False
    nominated_node_name: str = ""
    victim_uids: tuple[str, ...] = ()
    clear_nomination_uids: tuple[str, ...] = ()
    clear_own_nomination: bool = False


def failure_of_cycle(result: CycleResult) -> SchedulingFailure:
    """The failure of a one-pod cycle that bound nothing, as PostFilter left it: victims and
    nominations to clear only with a nomination, the pod's own nomination cleared when PostFilter
    ran and nominated nothing (a PostFilter that did not run leaves the nomination as it is)."""
    post_filter = result.post_filter
    nominated = post_filter.nominated_node_name if post_filter is not None else ""
    victims = post_filter.victims if post_filter is not None and nominated else []
    to_clear = post_filter.lower_priority_nominated_pods if post_filter is not None and nominated else []
    return SchedulingFailure(
        result.pod.uid,
        result.message,
        frozenset(result.rejector_plugins),
        error=bool(result.error),
        nominated_node_name=nominated,
        victim_uids=tuple(v.uid for v in victims),
        clear_nomination_uids=tuple(p.uid for p in to_clear),
        clear_own_nomination=post_filter is not None and not nominated,
    )


def bind_failure(pod_uid: str, message: str) -> SchedulingFailure:
    """A pod whose placement the binder refused, or whose attempt could not run (the pod gone or
    bound meanwhile, a peer down): an error, retried after its backoff."""
    return SchedulingFailure(pod_uid, message, error=True)


def record_failure(cluster: Cluster, failure: SchedulingFailure) -> Pod | None:
    """The cluster half of handleSchedulingFailure, written in process (`simulate`; the binder
    service writes the same from a RecordFailure request). Raises BindError, writing nothing, when
    a victim does not have lower priority than the pod."""
    return record_scheduling_failure(
        cluster,
        failure.pod_uid,
        failure.message,
        failure.nominated_node_name,
        failure.victim_uids,
        failure.clear_nomination_uids,
        clear_own_nomination=failure.clear_own_nomination,
    )


@dataclass(frozen=True, slots=True)
class PodGroupMember:
    """One pod's outcome in a pod-group cycle, after the cycle's writes: `bound` if it is bound now;
    otherwise its failure (`message`, `rejector_plugins`, `error`: its own attempt failed with an
    error, or the binder refused the group)."""

    info: sq.QueuedPodInfo
    bound: bool
    message: str = ""
    rejector_plugins: frozenset[str] = frozenset()
    error: bool = False


def pod_group_scheduled(code: Code, members: Sequence[PodGroupMember]) -> bool:
    """A group is scheduled when its cycle succeeded and its placed pods bound (a binder that
    refused them makes it a failed cycle with an error)."""
    return code == Code.SUCCESS and any(member.bound for member in members)


class ScheduleOneDriver:
    """The queue's side of ScheduleOne for one scheduler (see the module docstring). `pod_of` gives
    a pod as the scheduler's cluster view holds it now (None: deleted)."""

    def __init__(self, queue: sq.SchedulingQueue, pod_of: Callable[[str], Pod | None]) -> None:
        self.queue = queue
        self.pod_of = pod_of

    # --- before the cycle -------------------------------------------------------------------------

    def skip_pod_schedule(self, info: sq.QueuedPodInfo) -> Pod | None:
        """The popped pod as stored now, to schedule; None, and the queue is done with it, when it
        was deleted or bound meanwhile."""
        pod = self.pod_of(info.pod.uid)
        if pod is None or pod.spec.node_name:
            self.queue.done(info.pod.uid)
            return None
        return pod

    def skip_pod_group_pod_schedule(self, infos: Iterable[sq.QueuedPodInfo]) -> list[tuple[sq.QueuedPodInfo, Pod]]:
        """skipPodGroupPodSchedule over a popped group's pods: those still to schedule, in the
        group's order (PodGroupMemberPodsOrderingFunc: priority, then attempts, then queue time),
        each with its pod as stored now. Pods deleted, being deleted or bound meanwhile drop out,
        and the queue is done with them."""
        queued: list[tuple[sq.QueuedPodInfo, Pod]] = []
        for info in sorted(infos, key=sq.pod_group_member_pods_order):
            pod = self.pod_of(info.pod.uid)
            if pod is None or pod.spec.node_name or pod.metadata.deletion_timestamp is not None:
                self.queue.done(info.pod.uid)
            else:
                queued.append((info, pod))
        return queued

    def pod_group_decided(self, namespace: str, name: str, attempted: Sequence[str], placed_all: bool) -> None:
        """A pod-group cycle's decision, before its writes: a group with every pod placed
        (`placed_all`; `attempted`: its pods' uids) ends its attempt now, as upstream's scheduling
        cycle ends before the binding cycles, and the pods that arrived during the cycle go to
        activeQ (`SchedulingQueue.add_pending_pod_group_pods_after_success`). Any other group ends
        it when its pods go back (`add_attempted_pod_group_if_needed`): the pods that arrive until
        then join it where it goes, as upstream adds them to the requeued group."""
        if placed_all:
            self.queue.add_pending_pod_group_pods_after_success(namespace, name, attempted)

    # --- after the cycle ----------------------------------------------------------------------------

    def handle_scheduling_failure(
        self, info: sq.QueuedPodInfo, failure: SchedulingFailure, failed_at: float | None = None
    ) -> str:
        """The queue half of handleSchedulingFailure, once the failure's record is written (and, in
        the service, read back: an update the failure itself made must not count as an event that
        moves the pod). `failed_at`: when the attempt failed (default: now), which upstream stamps
        before it writes anything; the service returns the pod only after its writes are read
        back, and that round trip must not lengthen the pod's backoff. Returns where the pod went
        ("" if it was deleted meanwhile)."""
        fresh = self.queue.info(info.pod.uid) or info
        return self.queue.add_unschedulable_if_not_present(
            fresh, set(failure.rejector_plugins), error=failure.error, message=failure.message, failed_at=failed_at
        )

    def add_attempted_pod_group_if_needed(
        self,
        namespace: str,
        name: str,
        code: Code,
        members: Sequence[PodGroupMember],
        preempting: bool = False,
    ) -> None:
        """After a pod-group cycle (`code`: its status) and its writes: the pods that did not bind go
        back to the queue (see the module docstring). A scheduled group's leftover pods each keep
        their own rejectors; a group that was not scheduled carries, in every pod, the union of its
        pods' rejectors with GangScheduling's (what they report), and backs off as one entity:
        counted as rejected for an Unschedulable, UnschedulableAndUnresolvable or Pending status
        with no pod failing with an error, else as an error. `preempting`: the cycle sent
        evictions (`pod_group_scheduler.starts_async_preemption`), and the group waits in the pool
        until an assigned pod's deletion instead (`SchedulingQueue.add_attempted_pod_group`)."""
        scheduled = pod_group_scheduled(code, members)
        together = group_rejectors(m.rejector_plugins for m in members if not m.bound)
        failed: list[tuple[sq.QueuedPodInfo, set[str], str]] = []
        for member in members:
            if member.bound:
                continue  # the bind reaches the queue through its cluster feed
            fresh = self.queue.info(member.info.pod.uid) or member.info
            failed.append((fresh, set(together) if not scheduled else set(member.rejector_plugins), member.message))
        if scheduled:
            # Each pod that was not placed goes through the failure handler into the group's
            # pending pods, and the group, with them, to activeQ (requeueWithoutBackoff), a pod
            # whose own attempt failed with an error too.
            for info, rejectors, message in failed:
                self.queue.requeue_after_group_success(info, rejectors, message)
            leftover = next((info for info, _, _ in failed if self.queue.contains(info.pod.uid)), None)
            attempted = [member.info.pod.uid for member in members]
            self.queue.add_pending_pod_group_pods_after_success(namespace, name, attempted, leftover)
        else:
            error = not Status(code).is_rejected or any(member.error for member in members)
            self.queue.add_attempted_pod_group(namespace, name, failed, error=error, preempting=preempting)
