"""PodEligibleToPreemptOthers (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go):
whether a pod may preempt at all."""

from __future__ import annotations

from podsched.api.types import CONDITION_DISRUPTION_TARGET, PREEMPT_NEVER, REASON_PREEMPTION_BY_SCHEDULER, Pod
from podsched.framework.node_info import Snapshot
from podsched.framework.pod_groups import PodGroupLister
from podsched.framework.status import Code, Status
from podsched.preemption.domain import get_pod_priority

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."


def is_terminating_by_preemption(pod: Pod) -> bool:
    """deletionTimestamp set and DisruptionTarget=True with reason PreemptionByScheduler."""
    if pod.metadata.deletion_timestamp is None:
        return False
    condition = pod.condition(CONDITION_DISRUPTION_TARGET)
    return condition is not None and condition.status == "True" and condition.reason == REASON_PREEMPTION_BY_SCHEDULER


def pod_eligible_to_preempt_others(
    pod: Pod, snapshot: Snapshot, nominated_node_status: Status | None, pod_groups: PodGroupLister | None = None
) -> tuple[bool, str]:
    """False for `preemptionPolicy: Never`; false while earlier victims of this pod's preemption are
    still terminating on its nominated node (wait for them rather than preempt more), unless that
    node has become hopeless (UnschedulableAndUnresolvable) this cycle. A terminating pod counts if
    its priority (its group's, with `pod_groups`) is below the pod's."""
    if pod.spec.preemption_policy == PREEMPT_NEVER:
        return False, NOT_ELIGIBLE_NEVER
    nominated = pod.status.nominated_node_name
    if nominated:
        if nominated_node_status is not None and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        node_info = snapshot.get(nominated)
        if node_info is not None:
            for pod_info in node_info.pods:
                other = pod_info.pod
                if get_pod_priority(other, pod_groups) < pod.priority and is_terminating_by_preemption(other):
                    return False, NOT_ELIGIBLE_TERMINATING
    return True, ""
