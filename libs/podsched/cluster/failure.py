"""The writes that follow a failed scheduling attempt (upstream handleSchedulingFailure, with
DefaultPreemption's prepareCandidate before it), as one function over the cluster so that
`simulate` and the binder service actuate a decision identically."""

from __future__ import annotations

from collections.abc import Sequence

from podsched.api.types import Pod
from podsched.cluster.binder import NOT_LOWER_PRIORITY, BindError
from podsched.cluster.state import Cluster


def record_scheduling_failure(
    cluster: Cluster,
    pod_uid: str,
    message: str,
    nominated_node: str = "",
    victim_uids: Sequence[str] = (),
    clear_nomination_uids: Sequence[str] = (),
    clear_own_nomination: bool = False,
) -> Pod | None:
    """Evict the victims (DisruptionTarget, graceful delete), clear the nominations of
    lower-priority pods on that node, then PodScheduled=False with the pod's nomination in the same
    status update (a Nominated and a FailedScheduling event); or, when PostFilter found no candidate,
    PodScheduled=False with the pod's own nomination cleared in the same update (a NominationCleared
    and a FailedScheduling event).

    Refuses the whole decision (BindError, nothing changed) if any victim does not have lower
    priority than the pod. Victims already gone are skipped: the decision was made on an older
    view, and their resources are free either way."""
    pod = cluster.pods_by_uid.get(pod_uid)
    if pod is None or pod.spec.node_name:
        return pod
    if nominated_node:
        victims = [cluster.pods_by_uid[uid] for uid in victim_uids if uid in cluster.pods_by_uid]
        for victim in victims:
            # A PodGroup's pod is weighed at its group's priority (GenericWorkload), as the binder checks.
            if min(victim.priority, cluster.binder.effective_priority(victim)) >= pod.priority:
                raise BindError(
                    NOT_LOWER_PRIORITY,
                    f"victim {victim.namespace}/{victim.name} (priority {victim.priority}) does not have lower "
                    f"priority than its preemptor {pod.namespace}/{pod.name} (priority {pod.priority})",
                )
        for victim in victims:
            cluster.preempt_victim(victim.uid, pod, nominated_node)
        for uid in clear_nomination_uids:
            cluster.clear_nomination(uid, f"pod {pod.namespace}/{pod.name} with higher priority preempted on that node")
        # The nomination and PodScheduled=False in one status update, as upstream's updatePod patches them.
        return cluster.mark_unschedulable(pod.uid, message, nominated_node, len(victim_uids))
    if clear_own_nomination:
        return cluster.mark_unschedulable(pod.uid, message, clear_nomination="preemption is not helpful for scheduling")
    return cluster.mark_unschedulable(pod.uid, message)
