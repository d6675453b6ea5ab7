"""The scheduling queue's handling of a pod group where it follows one named upstream function
(kube-scheduler v1.37: pkg/scheduler/framework/types.go and pkg/scheduler/backend/queue/
scheduling_queue.go): the order of a group's pods in its cycle."""

from __future__ import annotations

import pytest

from builders import make_pod
from clocks import FakeClock
from podsched.api.types import DISRUPTION_MODE_SINGLE, SCHEDULING_POLICY_GANG, ObjectMeta, Pod, PodGroup
from podsched.framework.node_info import PodInfo
from podsched.framework.status import Code
from podsched.plugins import names
from podsched.plugins.gang_scheduling import GangScheduling
from podsched.queue import scheduling_queue as sq
from podsched.scheduler.driver import PodGroupMember, ScheduleOneDriver

START = 1_000.0
GROUP = "trainers"
MID_PRIORITY = 100
HIGH_PRIORITY = 1_000


def worker(name: str, priority: int = 0) -> Pod:
    return make_pod(name).req(cpu="1").priority(priority).group(GROUP).obj()


class GangCluster:
    """A queue behind GangScheduling's PreEnqueue, with the PodGroups and pods as the scheduler sees
    them and the driver that ends each pod-group cycle."""

    def __init__(self, clock: FakeClock, min_count: int) -> None:
        self.clock = clock
        self.groups: dict[tuple[str, str], PodGroup] = {}
        self.pods: dict[str, Pod] = {}
        gang = GangScheduling(
            lambda namespace, name: self.groups.get((namespace, name)),
            lambda namespace, name: sum(
                1 for p in self.pods.values() if (p.namespace, p.spec.pod_group_name) == (namespace, name)
            ),
        )
        self.queue = sq.SchedulingQueue(clock, pre_enqueue=gang.pre_enqueue)
        self.driver = ScheduleOneDriver(self.queue, self.pods.get)
        self.groups[("default", GROUP)] = PodGroup(
            ObjectMeta(name=GROUP, namespace="default"), SCHEDULING_POLICY_GANG, min_count, DISRUPTION_MODE_SINGLE
        )

    def add(self, pod: Pod) -> None:
        self.pods[pod.uid] = pod
        self.queue.add(pod)

    def delete(self, pod: Pod) -> None:
        del self.pods[pod.uid]
        self.queue.delete(pod)

    def pop_group(self) -> list[sq.QueuedPodInfo]:
        popped = self.queue.pop()
        assert popped is not None
        return [popped, *self.queue.take_group_members("default", GROUP)]

    def locations(self, *pods: Pod) -> list[str]:
        return [self.queue.location(pod.uid) for pod in pods]


# --- PodGroupMemberPodsOrderingFunc (framework/types.go) ---------------------------------------------


def queued(name: str, priority: int, attempts: int, timestamp: float) -> sq.QueuedPodInfo:
    pod = make_pod(name).priority(priority).group(GROUP).obj()
    return sq.QueuedPodInfo(PodInfo(pod), timestamp=timestamp, attempts=attempts)


# upstream's TestPodGroupMemberPodsOrderingFunc, its five pods and its cases.
POD1 = queued("pod1", MID_PRIORITY, 1, START)
POD2 = queued("pod2", MID_PRIORITY, 1, START + 1)
POD3 = queued("pod3", HIGH_PRIORITY, 1, START)
POD4 = queued("pod4", MID_PRIORITY, 1, START)
POD5 = queued("pod5", MID_PRIORITY, 2, START)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(POD3, POD1, id="the higher priority comes first"),
        pytest.param(POD5, POD1, id="of equal priority, the pod with more attempts comes first"),
        pytest.param(POD1, POD2, id="of equal priority and attempts, the older timestamp comes first"),
        pytest.param(POD1, POD4, id="of equal priority, attempts and timestamp, the lower name comes first"),
    ],
)
def test_pod_group_member_pods_order_follows_upstreams_ordering_func(
    first: sq.QueuedPodInfo, second: sq.QueuedPodInfo
) -> None:
    assert sq.pod_group_member_pods_order(first) < sq.pod_group_member_pods_order(second)
    assert sorted([second, first], key=sq.pod_group_member_pods_order) == [first, second]


def test_upstreams_five_pods_sort_into_its_desired_order() -> None:
    ordered = sorted([POD1, POD2, POD3, POD4, POD5], key=sq.pod_group_member_pods_order)
    assert [info.pod.name for info in ordered] == ["pod3", "pod5", "pod1", "pod4", "pod2"]


def test_a_groups_cycle_tries_its_leftover_pods_before_a_pod_that_joined_it_untried() -> None:
    # PodGroupMemberPodsOrderingFunc puts the attempts before the Timestamp. A group scheduled with
    # two pods not placed keeps its queue time (AddAttemptedPodGroupIfNeeded, preserveTimestamp), and
    # a pod that arrived during the cycle joins it with that time: by queue time alone it would
    # come between the two leftover pods; with no attempt yet it comes after both.
    clock = FakeClock(START)
    cluster = GangCluster(clock, min_count=1)
    first, second, third = worker("w-0"), worker("w-1"), worker("w-2")
    for pod, added_at in ((first, START), (second, START + 5), (third, START + 6)):
        clock.now = added_at
        cluster.add(pod)
    infos = cluster.pop_group()
    assert [info.pod.name for info in infos] == ["w-0", "w-1", "w-2"]
    clock.now += 0.5
    late = worker("w-3")
    cluster.add(late)
    assert cluster.locations(late) == [sq.PENDING]
    not_placed = frozenset({names.NODE_RESOURCES_FIT})
    outcome = [
        PodGroupMember(infos[0], bound=True),
        PodGroupMember(infos[1], False, "0/1 nodes are available", not_placed),
        PodGroupMember(infos[2], False, "0/1 nodes are available", not_placed),
    ]
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.SUCCESS, outcome)
    assert cluster.locations(second, third, late) == [sq.ACTIVE] * 3

    cycle = cluster.driver.skip_pod_group_pod_schedule(cluster.pop_group())
    assert [(info.pod.name, info.attempts) for info, _ in cycle] == [("w-1", 2), ("w-2", 2), ("w-3", 1)]
