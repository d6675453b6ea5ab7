"""The scheduling queue's handling of a pod group where it follows one named upstream function
(kube-scheduler v1.37: pkg/scheduler/framework/types.go and pkg/scheduler/backend/queue/
scheduling_queue.go): the order of a group's pods in its cycle, PreEnqueue on a group coming back
from its asynchronous preemption, and Activate."""

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

    def __init__(self, clock: FakeClock, min_count: int, observed: bool = True) -> None:
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
        if observed:
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


# --- PreEnqueue on a group coming back from its preemption (moveToActiveQ, moveToBackoffQ) -----------


def preempting_gang(clock: FakeClock) -> tuple[GangCluster, list[Pod]]:
    """A gang of two (minCount 2) whose cycle started an asynchronous preemption: it waits in the
    pool, gated by DefaultPreemption, until an assigned pod's deletion."""
    cluster = GangCluster(clock, min_count=2)
    pods = [worker("w-0"), worker("w-1")]
    for pod in pods:
        cluster.add(pod)
    rejectors = frozenset({names.GANG_SCHEDULING, names.NODE_RESOURCES_FIT})
    members = [PodGroupMember(info, False, "0/1 nodes are available", rejectors) for info in cluster.pop_group()]
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, members, preempting=True)
    assert cluster.locations(*pods) == [sq.UNSCHEDULABLE] * 2
    return cluster, pods


def test_a_preempting_gang_short_of_min_count_when_its_victim_goes_waits_gated_by_gang_scheduling() -> None:
    # requeueEntityWithQueueingStrategy -> moveToBackoffQ / moveToActiveQ -> runPreEnqueuePlugins: the
    # gating plugin (DefaultPreemption) passes once the preemption is over, then every other
    # PreEnqueue plugin runs; GangScheduling's refuses a gang whose pod was deleted meanwhile, and
    # the group stays in unschedulableEntities with GangScheduling as its gating plugin.
    clock = FakeClock(START)
    cluster, pods = preempting_gang(clock)
    cluster.delete(pods[1])
    clock.now += 10
    assert cluster.queue.on_event(sq.ASSIGNED_POD_DELETE) == 0
    assert cluster.locations(pods[0]) == [sq.UNSCHEDULABLE]
    status = cluster.queue.gated_status(pods[0].uid)
    assert status is not None and status.plugin == names.GANG_SCHEDULING
    assert cluster.queue.pending_counts()[sq.GATED] == 1
    assert cluster.queue.pop() is None

    # GangScheduling's UnscheduledPodAdd: a new pod completes minCount and lets the group in.
    late = worker("w-2")
    cluster.add(late)
    assert cluster.locations(pods[0], late) == [sq.ACTIVE] * 2


def test_a_preempting_gang_with_its_pods_when_its_victim_goes_is_let_in() -> None:
    clock = FakeClock(START)
    cluster, pods = preempting_gang(clock)
    clock.now += 10
    assert cluster.queue.on_event(sq.ASSIGNED_POD_DELETE) == 2
    assert cluster.locations(*pods) == [sq.ACTIVE] * 2
    assert cluster.queue.gated_status(pods[0].uid) is None


# --- Activate ----------------------------------------------------------------------------------------


def test_activating_a_gang_short_of_min_count_leaves_it_gated() -> None:
    # Activate -> activate -> moveToActiveQ runs the PreEnqueue plugins on an entity taken from
    # unschedulableEntities: GangScheduling refuses a gang of one pod out of minCount 2 again.
    cluster = GangCluster(FakeClock(START), min_count=2)
    pod = worker("w-0")
    cluster.add(pod)
    assert cluster.queue.pending_counts()[sq.GATED] == 1
    cluster.queue.activate(pod.uid)
    assert cluster.locations(pod) == [sq.UNSCHEDULABLE]
    assert cluster.queue.pending_counts()[sq.GATED] == 1
    assert cluster.queue.pop() is None


def test_activating_a_pod_whose_pod_group_is_not_observed_does_nothing() -> None:
    # Activate: a pod group's pod with no root in the workload forest (its PodGroup not observed:
    # incompletePodGroupPods) is skipped.
    cluster = GangCluster(FakeClock(START), min_count=1, observed=False)
    pod = worker("w-0")
    cluster.add(pod)
    cluster.queue.activate(pod.uid)
    assert cluster.locations(pod) == [sq.UNSCHEDULABLE]
    assert cluster.queue.pending_counts()[sq.INCOMPLETE] == 1
    assert cluster.queue.pop() is None


def test_activating_one_pod_of_a_backing_off_group_moves_the_whole_group() -> None:
    # Activate looks up the pod's root entity (getRootLookupInfoForPod): the rejected group, which
    # backoffQ holds as one entity, moves to activeQ as one, without PreEnqueue again
    # (moveToActiveQ with movesFromBackoffQ under SchedulerPopFromBackoffQ).
    clock = FakeClock(START)
    cluster = GangCluster(clock, min_count=2)
    pods = [worker("w-0"), worker("w-1")]
    for pod in pods:
        cluster.add(pod)
    rejectors = frozenset({names.GANG_SCHEDULING})
    members = [
        PodGroupMember(info, False, "minCount (2) cannot be satisfied", rejectors) for info in cluster.pop_group()
    ]
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, members)
    assert cluster.locations(*pods) == [sq.BACKOFF] * 2
    cluster.queue.activate(pods[1].uid)
    assert cluster.locations(*pods) == [sq.ACTIVE] * 2


def test_activating_a_preempting_gang_short_of_min_count_leaves_it_gated_by_gang_scheduling() -> None:
    # prepareCandidateAsync activates the preemptor's pods once its preemption ended in an error;
    # DefaultPreemption's PreEnqueue passes then, GangScheduling's refuses a gang a pod left.
    clock = FakeClock(START)
    cluster, pods = preempting_gang(clock)
    cluster.delete(pods[1])
    cluster.queue.activate(pods[0].uid)
    assert cluster.locations(pods[0]) == [sq.UNSCHEDULABLE]
    status = cluster.queue.gated_status(pods[0].uid)
    assert status is not None and status.plugin == names.GANG_SCHEDULING


def test_activating_a_preempting_gang_with_its_pods_moves_it_to_active() -> None:
    clock = FakeClock(START)
    cluster, pods = preempting_gang(clock)
    cluster.queue.activate(pods[0].uid)
    assert cluster.locations(*pods) == [sq.ACTIVE] * 2
