"""GangScheduling (upstream framework/plugins/gangscheduling, GenericWorkload gate): all or nothing
for the pods of a PodGroup whose policy is `gang`.

- PreEnqueue holds a gang's pods out of the active queue until the group exists and at least
  minCount of its pods do.
- PlacementFeasible, asked before and after each pod of the pod-group scheduling cycle, says
  whether minCount can still be met (Wait), is met (Success), or can no longer be (Unschedulable,
  which ends the cycle early).
- Its events: a pod of the same group added (pending or bound), the PodGroup added, or its
  minCount lowered, may make a held or rejected pod schedulable.

Upstream's Permit (waiting for the quorum while pods bind one by one) is not needed here: the pod
group cycle binds a gang's pods together or not at all (`podsched.scheduler.pod_group_cycle`).
Composite (nested) groups are not supported."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from podsched.api.types import Pod, PodGroup
from podsched.framework.events import ClusterEventWithHint
from podsched.framework.status import Code, Status
from podsched.plugins.names import GANG_SCHEDULING

# Cluster events GangScheduling registers for (fwk.ClusterEvent resources PodGroup and the pods).
POD_GROUP_ADD = "PodGroupAdd"
POD_GROUP_UPDATE = "PodGroupUpdate"
UNSCHEDULED_POD_ADD = "UnscheduledPodAdd"

WAITING_FOR_MIN_COUNT_PODS = "waiting for minCount pods from a gang to appear in scheduling queue"


def waiting_for_pod_group(name: str) -> str:
    return f"waiting for pods's pod group {json.dumps(name)} to appear in scheduling queue"


@dataclass(frozen=True, slots=True)
class PlacementProgress:
    """framework.PlacementProgress: pods of the group not yet evaluated in this cycle, and pods
    counted as scheduled (bound or assumed before the cycle, plus those placed in it so far)."""

    remaining: int
    scheduled: int


class GangScheduling:
    name = GANG_SCHEDULING

    def __init__(
        self,
        pod_group: Callable[[str, str], PodGroup | None],
        all_pods_count: Callable[[str, str], int],
    ) -> None:
        # The scheduler cache's PodGroups and each group's pod count (AllPodsCount: every known
        # pod of the group, scheduled or not).
        self.pod_group = pod_group
        self.all_pods_count = all_pods_count

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # The hints need the group's keys, which the queue compares itself (`group_changed`): a
        # change of a group moves only that group's pods.
        return (
            ClusterEventWithHint(UNSCHEDULED_POD_ADD),
            ClusterEventWithHint(POD_GROUP_ADD),
            ClusterEventWithHint(POD_GROUP_UPDATE),
        )

    def pre_enqueue(self, pod: Pod, unstored: bool = False) -> Status | None:
        """preEnqueueHierarchiesDisabled: None lets the pod into the active queue. `unstored`: the pod
        is not in the cluster yet (a dry run), so it counts on top of the group's stored pods."""
        name = pod.spec.pod_group_name
        if name is None:
            return None
        group = self.pod_group(pod.namespace, name)
        if group is None:
            return Status.unresolvable(GANG_SCHEDULING, waiting_for_pod_group(name))
        if not group.is_gang:
            return None
        if self.all_pods_count(pod.namespace, name) + unstored < group.min_count:
            return Status.unresolvable(GANG_SCHEDULING, WAITING_FOR_MIN_COUNT_PODS)
        return None


def min_count(group: PodGroup) -> int:
    """getMinCount: a basic group needs one pod."""
    return group.min_count if group.is_gang else 1


def placement_feasible(group: PodGroup, progress: PlacementProgress) -> Status | None:
    """GangScheduling.PlacementFeasible. None: minCount is met."""
    needed = min_count(group)
    remaining, scheduled = progress.remaining, progress.scheduled
    if remaining + scheduled < needed:
        return Status.unschedulable(
            GANG_SCHEDULING,
            f"minCount ({needed}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining",
        )
    if scheduled < needed:
        return Status(
            Code.WAIT,
            [f"minCount ({needed}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"],
            GANG_SCHEDULING,
        )
    return None
