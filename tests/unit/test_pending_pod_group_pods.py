"""A pod of a pod group that arrives while the group is in flight (popped, its cycle running: in the
queue service, records are applied while the cycle's requests are awaited) waits in upstream's
pendingPodGroupPods and joins the group when its attempt ends; a pod whose PodGroup has not been
observed counts in incompletePodGroupPods. Each case names the upstream function
(pkg/scheduler/backend/queue/scheduling_queue.go, v1.37) whose outcome it asserts."""

from __future__ import annotations

from builders import make_node, make_pod
from clocks import FakeClock
from podsched.api.types import (
    DISRUPTION_MODE_SINGLE,
    KIND_POD_GROUP,
    SCHEDULING_POLICY_GANG,
    ObjectMeta,
    Pod,
    PodGroup,
)
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.status import Code
from podsched.plugins import names
from podsched.plugins.gang_scheduling import GangScheduling
from podsched.queue import scheduling_queue as sq
from podsched.scheduler.driver import PodGroupMember, ScheduleOneDriver
from podsched.simulator.engine import Simulator

START = 1_000.0
GROUP = "trainers"
REJECTED = "minCount (3) cannot be satisfied"


def worker(name: str) -> Pod:
    return make_pod(name).req(cpu="1").group(GROUP).obj()


class Cluster:
    """The scheduler's view of the pods and a queue fed with them (GenericWorkload on, PreEnqueue
    admitting every pod), with the driver that ends each pod-group cycle."""

    def __init__(self, clock: FakeClock, *pods: Pod) -> None:
        self.clock = clock
        self.queue = sq.SchedulingQueue(clock, pre_enqueue=lambda pod: None)
        self.pods: dict[str, Pod] = {}
        self.driver = ScheduleOneDriver(self.queue, self.pods.get)
        for pod in pods:
            self.add(pod)

    def add(self, pod: Pod) -> None:
        self.pods[pod.uid] = pod
        self.queue.add(pod)

    def pop_group(self) -> list[sq.QueuedPodInfo]:
        popped = self.queue.pop()
        assert popped is not None
        return [popped, *self.queue.take_group_members("default", GROUP)]

    def locations(self, *pods: Pod) -> list[str]:
        return [self.queue.location(pod.uid) for pod in pods]

    def infos(self, *pods: Pod) -> list[sq.QueuedPodInfo]:
        """The queued pods' infos (each still queued)."""
        infos = [self.queue.info(pod.uid) for pod in pods]
        assert all(info is not None for info in infos)
        return [info for info in infos if info is not None]


def rejected(infos: list[sq.QueuedPodInfo], error: bool = False) -> list[PodGroupMember]:
    return [PodGroupMember(info, False, REJECTED, frozenset({names.GANG_SCHEDULING}), error) for info in infos]


def group_in_flight_with_a_late_pod() -> tuple[Cluster, list[Pod], Pod]:
    """Two pods popped as their group at START; a third pod of the group arrives half a second
    into the cycle, which ends at START + 1."""
    clock = FakeClock(START)
    pods = [worker("w-0"), worker("w-1")]
    cluster = Cluster(clock, *pods)
    cluster.pop_group()
    clock.now += 0.5
    late = worker("w-2")
    cluster.add(late)
    clock.now += 0.5
    return cluster, pods, late


def test_a_pod_arriving_while_its_group_is_in_flight_waits_in_pending_pod_group_pods() -> None:
    # addPodGroupMember: the group is the last popped entity (isLastPoppedEntity), so the pod goes
    # to pendingPodGroupPods: no entity of its own in activeQ, nothing to pop, and
    # scheduler_pending_pods{queue="pending"} counts it.
    cluster, pods, late = group_in_flight_with_a_late_pod()
    assert cluster.locations(*pods, late) == [sq.IN_FLIGHT, sq.IN_FLIGHT, sq.PENDING]
    counts = cluster.queue.pending_counts()
    assert counts[sq.PENDING] == 1 and counts[sq.ACTIVE] == 0
    assert cluster.queue.pop() is None and not cluster.queue.can_pop()
    assert cluster.queue.on_event(sq.NODE_ADD) == 0


def test_a_rejected_group_takes_its_late_pod_into_its_backoff() -> None:
    # AddAttemptedPodGroupIfNeeded with a rejection: pendingPodGroupPods.clear gives the cycle's pods
    # (back through the failure handler) and the late one; rootInfo.AddPod adds them all to the
    # group, which counts one more unschedulable attempt, takes Timestamp = now and goes to
    # backoffQ (moveToBackoffQ) as an entity of three pods.
    cluster, pods, late = group_in_flight_with_a_late_pod()
    infos = cluster.infos(*pods)
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, rejected(infos))
    assert cluster.locations(*pods, late) == [sq.BACKOFF] * 3
    assert cluster.queue.pending_counts()[sq.PENDING] == 0
    [late_info] = cluster.infos(late)
    assert late_info.attempts == 0, "its attempts are its own: it was never tried"
    assert late_info.timestamp == START + 1, "the group's Timestamp, refreshed when it was requeued"
    assert late_info.unschedulable_plugins == {names.GANG_SCHEDULING}
    assert cluster.queue.pod_group_backoff_count() == 3
    # The group's 1 s backoff from START + 1, to the end of its 1 s window; nothing pops it earlier.
    assert cluster.queue.next_backoff_expiry() == START + 3
    assert cluster.queue.pop() is None
    cluster.clock.now = START + 3
    retried = cluster.pop_group()
    # PodGroupMemberPodsOrderingFunc: more attempts first, so the late pod comes last.
    assert [info.pod.name for info in retried] == ["w-0", "w-1", "w-2"]
    assert [info.attempts for info in retried] == [2, 2, 1]


def test_a_group_whose_cycle_failed_with_an_error_takes_its_late_pod_into_its_error_backoff() -> None:
    # AddAttemptedPodGroupIfNeeded with an error: ConsecutiveErrorsCount++ on the group, which the
    # late pod joins.
    cluster, pods, late = group_in_flight_with_a_late_pod()
    infos = cluster.infos(*pods)
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.ERROR, rejected(infos, error=True))
    assert cluster.locations(*pods, late) == [sq.BACKOFF] * 3
    assert [info.consecutive_errors for info in cluster.infos(*pods, late)] == [1, 1, 1]


def test_a_scheduled_group_sends_its_late_pod_to_active_queued_from_the_end_of_its_attempt() -> None:
    # AddAttemptedPodGroupIfNeeded with a success and every pod of the cycle placed: the pending pods
    # make the requeued group alone (hadUnschedulableOrErrorPods is false), without backoff
    # (requeueWithoutBackoff), with Timestamp = now.
    cluster, pods, late = group_in_flight_with_a_late_pod()
    infos = cluster.infos(*pods)
    cluster.driver.add_attempted_pod_group_if_needed(
        "default", GROUP, Code.SUCCESS, [PodGroupMember(info, bound=True) for info in infos]
    )
    # The bound pods reach the queue through its cluster feed.
    assert cluster.locations(*pods, late) == [sq.IN_FLIGHT, sq.IN_FLIGHT, sq.ACTIVE]
    assert cluster.infos(late)[0].timestamp == START + 1
    popped = cluster.queue.pop()
    assert popped is not None and popped.pod.name == "w-2"


def test_a_scheduled_groups_late_pod_joins_its_leftover_pods_with_the_groups_queue_time() -> None:
    # AddAttemptedPodGroupIfNeeded with a success and a pod of the cycle not placed
    # (preserveTimestamp): the group keeps its Timestamp, and the late pod goes with it to activeQ.
    cluster, pods, late = group_in_flight_with_a_late_pod()
    infos = cluster.infos(*pods)
    outcome = [
        PodGroupMember(infos[0], bound=True),
        PodGroupMember(infos[1], False, "0/1 nodes are available", frozenset({names.NODE_RESOURCES_FIT})),
    ]
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.SUCCESS, outcome)
    assert cluster.locations(*pods, late) == [sq.IN_FLIGHT, sq.ACTIVE, sq.ACTIVE]
    assert [info.timestamp for info in cluster.infos(pods[1], late)] == [START, START]
    assert [info.pod.name for info in cluster.pop_group()] == ["w-1", "w-2"]


def test_a_group_whose_cycle_sent_evictions_takes_its_late_pod_into_the_pool() -> None:
    # AddAttemptedPodGroupIfNeeded: the requeued group, late pod included, meets DefaultPreemption's
    # PreEnqueue while its preemption runs and waits in unschedulableEntities as one entity, until an
    # assigned pod's deletion moves it.
    cluster, pods, late = group_in_flight_with_a_late_pod()
    infos = cluster.infos(*pods)
    members = [
        PodGroupMember(info, False, REJECTED, frozenset({names.GANG_SCHEDULING, names.NODE_RESOURCES_FIT}))
        for info in infos
    ]
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, members, preempting=True)
    assert cluster.locations(*pods, late) == [sq.UNSCHEDULABLE] * 3
    cluster.clock.now += 10
    assert cluster.queue.pop() is None
    assert cluster.queue.on_event(sq.ASSIGNED_POD_DELETE) == 3
    assert cluster.locations(*pods, late) == [sq.ACTIVE] * 3


def test_a_late_pod_deleted_or_updated_while_pending_is_deleted_or_updated_there() -> None:
    # PriorityQueue.Delete and Update: pendingPodGroupPods.delete / .update.
    cluster, pods, late = group_in_flight_with_a_late_pod()
    later = worker("w-3")
    cluster.add(later)
    relabelled = make_pod("w-3").uid(later.uid).req(cpu="1").group(GROUP).label("tier", "a").obj()
    cluster.queue.update(later, relabelled)
    assert cluster.queue.location(later.uid) == sq.PENDING
    assert cluster.infos(later)[0].pod is relabelled
    cluster.queue.delete(late)
    assert cluster.queue.pending_counts()[sq.PENDING] == 1
    infos = cluster.infos(*pods)
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, rejected(infos))
    assert cluster.locations(*pods, late, later) == [sq.BACKOFF, sq.BACKOFF, "", sq.BACKOFF]
    assert cluster.queue.pod_group_backoff_count() == 3


def test_a_late_pod_of_a_group_whose_pods_all_bound_before_its_attempt_ended_goes_to_active() -> None:
    # The queue service may read a scheduled group's binds back before the group's end of attempt:
    # the last of its pods leaving the queue ends the attempt as AddAttemptedPodGroupIfNeeded with a
    # success and no pod left over would (activeQ, Timestamp = now).
    cluster, pods, late = group_in_flight_with_a_late_pod()
    for pod in pods:
        cluster.queue.done(pod.uid)
    assert cluster.queue.location(late.uid) == sq.ACTIVE
    assert cluster.infos(late)[0].timestamp == START + 1


def test_a_group_put_back_untried_takes_its_late_pod_with_its_own_queue_time() -> None:
    # A batch that stops before a group puts it back as if never popped; the late pod then joins it
    # as addToPodGroupIfExists adds a new pod to a queued group (activeQ, the pod's own Timestamp).
    clock = FakeClock(START)
    pods = [worker("w-0"), worker("w-1")]
    cluster = Cluster(clock, *pods)
    infos = cluster.pop_group()
    clock.now += 0.5
    late = worker("w-2")
    cluster.add(late)
    for info in infos:
        cluster.queue.unpop(info)
    assert cluster.locations(*pods, late) == [sq.ACTIVE] * 3
    assert cluster.infos(late)[0].timestamp == START + 0.5
    assert [info.attempts for info in infos] == [0, 0]


def test_a_pod_whose_pod_group_is_not_observed_counts_as_incomplete_then_gated_for_min_count() -> None:
    # addPodGroupMember: no root PodGroup in the workload forest puts the pod in
    # incompletePodGroupPods (scheduler_pending_pods{queue="incomplete"}); once the PodGroup is
    # observed, GangScheduling's PreEnqueue holds the gang back until minCount pods exist
    # (queue="gated").
    groups: dict[tuple[str, str], PodGroup] = {}
    pods: list[Pod] = []
    gang = GangScheduling(
        lambda namespace, name: groups.get((namespace, name)),
        lambda namespace, name: sum(1 for p in pods if (p.namespace, p.spec.pod_group_name) == (namespace, name)),
    )
    queue = sq.SchedulingQueue(FakeClock(START), pre_enqueue=gang.pre_enqueue)
    pods.append(worker("w-0"))
    queue.add(pods[0])
    counts = queue.pending_counts()
    assert (counts[sq.INCOMPLETE], counts[sq.GATED], counts[sq.UNSCHEDULABLE]) == (1, 0, 0)
    groups[("default", GROUP)] = PodGroup(
        ObjectMeta(name=GROUP, namespace="default"), SCHEDULING_POLICY_GANG, 2, DISRUPTION_MODE_SINGLE
    )
    assert queue.group_changed("default", GROUP) == 0
    counts = queue.pending_counts()
    assert (counts[sq.INCOMPLETE], counts[sq.GATED]) == (0, 1)
    pods.append(worker("w-1"))
    queue.add(pods[1])
    counts = queue.pending_counts()
    assert (counts[sq.INCOMPLETE], counts[sq.GATED], counts[sq.ACTIVE]) == (0, 0, 2)


def test_a_group_with_every_pod_placed_ends_its_attempt_at_the_decision_before_its_binds() -> None:
    # schedulePodGroup's cycle ends (AddAttemptedPodGroupIfNeeded) before the binding cycles run:
    # a pod that arrived during the cycle goes to activeQ then (Timestamp = now), and one that
    # arrives while the binds are written makes an entity of its own (addPodGroupMember's
    # newQueuedPodGroupInfoFromRootLookup, Timestamp = the pod's), which pops as a new attempt; the
    # first attempt's end, once its binds are answered, leaves that one in flight.
    cluster, pods, late = group_in_flight_with_a_late_pod()
    infos = cluster.infos(*pods)
    cluster.driver.pod_group_decided("default", GROUP, [p.uid for p in pods], placed_all=True)
    assert cluster.locations(*pods, late) == [sq.IN_FLIGHT, sq.IN_FLIGHT, sq.ACTIVE]
    assert cluster.infos(late)[0].timestamp == START + 1
    cluster.clock.now += 0.5
    later = worker("w-3")
    cluster.add(later)
    assert cluster.queue.location(later.uid) == sq.ACTIVE
    assert cluster.infos(later)[0].timestamp == START + 1.5
    second = cluster.pop_group()
    assert [info.pod.name for info in second] == ["w-2", "w-3"]
    cluster.clock.now += 0.5
    latest = worker("w-4")
    cluster.add(latest)
    assert cluster.queue.location(latest.uid) == sq.PENDING
    cluster.driver.add_attempted_pod_group_if_needed(
        "default", GROUP, Code.SUCCESS, [PodGroupMember(info, bound=True) for info in infos]
    )
    assert cluster.queue.location(latest.uid) == sq.PENDING, "the second attempt is still in flight"
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, rejected(second))
    assert cluster.locations(late, later, latest) == [sq.BACKOFF] * 3


# --- the PodGroup deleted (DeletePodGroup) -----------------------------------------------------------


class GangCluster:
    """A queue behind GangScheduling's PreEnqueue, the PodGroups and pods as the scheduler sees
    them, fed through the cluster feed's calls."""

    def __init__(self, clock: FakeClock, min_count: int = 2) -> None:
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
        self.min_count = min_count

    def add_group(self) -> None:
        self.groups[("default", GROUP)] = PodGroup(
            ObjectMeta(name=GROUP, namespace="default"), SCHEDULING_POLICY_GANG, self.min_count, DISRUPTION_MODE_SINGLE
        )
        self.queue.group_changed("default", GROUP)

    def delete_group(self) -> None:
        del self.groups[("default", GROUP)]
        self.queue.pod_group_deleted("default", GROUP)

    def add(self, pod: Pod) -> None:
        self.pods[pod.uid] = pod
        self.queue.add(pod)


def test_a_deleted_pod_groups_queued_pods_become_incomplete_until_it_is_observed_again() -> None:
    # DeletePodGroup: the group's entity leaves backoffQ and its pods go to incompletePodGroupPods,
    # so nothing schedules them as pods of no group; AddPodGroup brings them back (addPodGroupMember,
    # PreEnqueue on the way).
    clock = FakeClock(START)
    cluster = GangCluster(clock)
    cluster.add_group()
    pods = [worker("w-0"), worker("w-1")]
    for pod in pods:
        cluster.add(pod)
    infos = [cluster.queue.pop(), *cluster.queue.take_group_members("default", GROUP)]
    cluster.driver.add_attempted_pod_group_if_needed(
        "default", GROUP, Code.UNSCHEDULABLE, rejected([i for i in infos if i is not None])
    )
    assert [cluster.queue.location(p.uid) for p in pods] == [sq.BACKOFF] * 2
    cluster.delete_group()
    counts = cluster.queue.pending_counts()
    assert (counts[sq.INCOMPLETE], counts[sq.BACKOFF]) == (2, 0)
    clock.now += 20
    assert cluster.queue.pop() is None and cluster.queue.flush_unschedulable_leftover() == 0
    assert cluster.queue.on_event(sq.NODE_ADD) == 0
    cluster.add_group()
    counts = cluster.queue.pending_counts()
    assert (counts[sq.INCOMPLETE], counts[sq.ACTIVE]) == (0, 2)


def test_a_pod_group_deleted_while_in_flight_sends_its_late_and_returning_pods_to_incomplete() -> None:
    # DeletePodGroup while the group is the last popped entity: its pendingPodGroupPods go to
    # incompletePodGroupPods, and the cycle's pods, back through the failure handler, find no root
    # (addPodGroupMember) and follow them.
    clock = FakeClock(START)
    cluster = GangCluster(clock)
    cluster.add_group()
    pods = [worker("w-0"), worker("w-1")]
    for pod in pods:
        cluster.add(pod)
    infos = [cluster.queue.pop(), *cluster.queue.take_group_members("default", GROUP)]
    late = worker("w-2")
    cluster.add(late)
    assert cluster.queue.location(late.uid) == sq.PENDING
    cluster.delete_group()
    assert cluster.queue.pending_counts()[sq.INCOMPLETE] == 1
    cluster.driver.add_attempted_pod_group_if_needed(
        "default", GROUP, Code.UNSCHEDULABLE, rejected([i for i in infos if i is not None])
    )
    counts = cluster.queue.pending_counts()
    assert (counts[sq.INCOMPLETE], counts[sq.BACKOFF], counts[sq.PENDING]) == (3, 0, 0)


def test_simulate_binds_no_pod_of_a_deleted_pod_group() -> None:
    # A rejected gang whose PodGroup is deleted while it backs off: upstream's pods wait in
    # incompletePodGroupPods, so the room that comes later binds none of them as pods of no group.
    sim = Simulator(SchedulerConfig(feature_gates=(("GenericWorkload", True),)))
    sim.cluster.apply(make_node("n1").capacity(cpu="1", memory="8Gi", pods=10).obj())
    sim.cluster.apply(
        PodGroup(ObjectMeta(name=GROUP, namespace="default"), SCHEDULING_POLICY_GANG, 2, DISRUPTION_MODE_SINGLE)
    )
    pods = [worker(f"w-{i}") for i in range(2)]
    for pod in pods:
        sim.cluster.apply(pod)
    assert sim.schedule_one() is not None
    assert [sim.queue.location(p.uid) for p in pods] == [sq.BACKOFF] * 2
    sim.cluster.delete(KIND_POD_GROUP, "default", GROUP)
    sim.cluster.apply(make_node("n2").capacity(cpu="1", memory="8Gi", pods=10).obj())
    sim.run_until_quiescent()
    assert [p["spec"].get("nodeName", "") for p in sim.result()["pods"]] == ["", ""]
    assert sim.queue.pending_counts()[sq.INCOMPLETE] == 2


def test_a_rejected_gang_short_of_min_count_when_it_comes_back_waits_gated_for_a_new_pod() -> None:
    # AddAttemptedPodGroupIfNeeded -> moveToBackoffQ runs the PreEnqueue plugins on the group
    # (SchedulerPopFromBackoffQ): a gang whose pod was deleted during its cycle is short of minCount
    # and waits gated in unschedulableEntities, not retried on its backoff; a new pod of it
    # (GangScheduling's UnscheduledPodAdd) lets it in, to backoffQ while its backoff runs.
    clock = FakeClock(START)
    cluster = GangCluster(clock, min_count=3)
    cluster.add_group()
    pods = [worker("w-0"), worker("w-1"), worker("w-2")]
    for pod in pods:
        cluster.add(pod)
    infos = [cluster.queue.pop(), *cluster.queue.take_group_members("default", GROUP)]
    gone = pods.pop()
    del cluster.pods[gone.uid]
    cluster.queue.delete(gone)
    failed = [i for i in infos if i is not None and i.pod.uid != gone.uid]
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, rejected(failed))
    assert [cluster.queue.location(p.uid) for p in pods] == [sq.UNSCHEDULABLE] * 2
    assert cluster.queue.pending_counts()[sq.GATED] == 2
    clock.now += 30
    assert cluster.queue.pop() is None and cluster.queue.on_event(sq.NODE_ADD) == 0
    assert cluster.queue.flush_unschedulable_leftover() == 0
    cluster.add(worker("w-3"))
    assert cluster.queue.pending_counts()[sq.ACTIVE] == 3, "its 1 s backoff is over"


def test_a_gang_let_in_while_its_backoff_runs_goes_to_backoff() -> None:
    clock = FakeClock(START)
    cluster = GangCluster(clock, min_count=3)
    cluster.add_group()
    pods = [worker("w-0"), worker("w-1"), worker("w-2")]
    for pod in pods:
        cluster.add(pod)
    infos = [cluster.queue.pop(), *cluster.queue.take_group_members("default", GROUP)]
    gone = pods.pop()
    del cluster.pods[gone.uid]
    cluster.queue.delete(gone)
    failed = [i for i in infos if i is not None and i.pod.uid != gone.uid]
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, rejected(failed))
    late = worker("w-3")
    cluster.add(late)
    assert [cluster.queue.location(p.uid) for p in (*pods, late)] == [sq.BACKOFF] * 3
    assert cluster.queue.next_backoff_expiry() == START + 2
