"""ScheduleOneDriver (podsched.scheduler.driver): what `simulate` and the queue service both do around a
scheduling cycle. First the driver on a real scheduling queue and a fake clock (which popped pods are
scheduled, a failed pod's record and where it goes back, where a pod group goes back); then the queue
service's Scheduler on fakes of its Filter, Preemption and Binder interfaces, retrying a rejected pod
group as `simulate` does: no Kafka, no gRPC."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from builders import make_node, make_pod
from clocks import FakeClock
from podsched.api.types import DISRUPTION_MODE_SINGLE, SCHEDULING_POLICY_GANG, ObjectMeta, Pod, PodGroup
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.interface import NodeToStatus, PostFilterResult
from podsched.framework.status import Code, Status
from podsched.plugins import names
from podsched.queue import scheduling_queue as sq
from podsched.scheduler.driver import (
    PodGroupMember,
    ScheduleOneDriver,
    SchedulingFailure,
    bind_failure,
    failure_of_cycle,
)
from podsched.scheduler.fit_error import FitError
from podsched.scheduler.schedule_one import CycleResult
from podsched.simulator.engine import Simulator
from podsched_proto.binder.v1 import binder_pb2
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2
from podsched_queue.instrumentation import AttemptTelemetry
from podsched_queue.pipeline import ERROR, UNSCHEDULABLE, Attempt
from podsched_queue.scheduler import Scheduler

START = 1_000.0
GROUP = "trainers"
REJECTED = "minCount (3) cannot be satisfied"
GATE_ON = SchedulerConfig(feature_gates=(("GenericWorkload", True),))


def gang(min_count: int = 3) -> PodGroup:
    return PodGroup(
        ObjectMeta(name=GROUP, namespace="default"), SCHEDULING_POLICY_GANG, min_count, DISRUPTION_MODE_SINGLE
    )


def worker(name: str) -> Pod:
    return make_pod(name).req(cpu="1").group(GROUP).obj()


class Cluster:
    """The pods as the scheduler's view holds them, and a queue fed with them (GenericWorkload on:
    PreEnqueue admits every pod, so the queue knows each pod's group)."""

    def __init__(self, clock: FakeClock, *pods: Pod) -> None:
        self.queue = sq.SchedulingQueue(clock, pre_enqueue=lambda pod: None)
        self.pods = {pod.uid: pod for pod in pods}
        self.driver = ScheduleOneDriver(self.queue, self.pods.get)
        for pod in pods:
            self.queue.add(pod)

    def pop_group(self) -> list[sq.QueuedPodInfo]:
        popped = self.queue.pop()
        assert popped is not None
        return [popped, *self.queue.take_group_members("default", GROUP)]


def fit_error(plugin: str = names.NODE_RESOURCES_FIT) -> FitError:
    statuses = NodeToStatus()
    statuses.set("n1", Status(Code.UNSCHEDULABLE, ["Insufficient cpu"], plugin))
    return FitError(1, statuses)


# --- before the cycle ------------------------------------------------------------------------------


def test_a_popped_pod_deleted_or_bound_meanwhile_is_skipped_and_the_queue_forgets_it() -> None:
    clock = FakeClock(START)
    gone, bound, pending = make_pod("gone").obj(), make_pod("bound").obj(), make_pod("pending").obj()
    cluster = Cluster(clock, gone, bound, pending)
    del cluster.pods[gone.uid]
    cluster.pods[bound.uid] = make_pod("bound").uid(bound.uid).node("n1").obj()
    scheduled = []
    while (info := cluster.queue.pop()) is not None:
        pod = cluster.driver.skip_pod_schedule(info)
        if pod is not None:
            scheduled.append(pod.name)
        else:
            assert not cluster.queue.contains(info.pod.uid)
    assert scheduled == ["pending"]


def test_a_group_pod_being_deleted_drops_out_and_the_others_come_in_queue_order() -> None:
    clock = FakeClock(START)
    pods = [worker("w-0"), worker("w-1"), worker("w-2")]
    cluster = Cluster(clock, *pods)
    cluster.pods[pods[1].uid] = make_pod("w-1").uid(pods[1].uid).group(GROUP).terminating(at=START).obj()
    popped = cluster.pop_group()
    queued = cluster.driver.skip_pod_group_pod_schedule(reversed(popped))
    assert [pod.name for _, pod in queued] == ["w-0", "w-2"]
    assert not cluster.queue.contains(pods[1].uid)


# --- a failed pod ----------------------------------------------------------------------------------


def test_a_nominating_post_filter_records_its_victims_and_the_nominations_it_clears() -> None:
    pod, victim, cleared = make_pod("p").obj(), make_pod("v").obj(), make_pod("c").obj()
    result = CycleResult(
        pod,
        fit_error=fit_error(),
        rejector_plugins={names.NODE_RESOURCES_FIT},
        post_filter=PostFilterResult("n1", victims=[victim], lower_priority_nominated_pods=[cleared]),
    )
    assert failure_of_cycle(result) == SchedulingFailure(
        pod.uid,
        result.message,
        frozenset({names.NODE_RESOURCES_FIT}),
        nominated_node_name="n1",
        victim_uids=(victim.uid,),
        clear_nomination_uids=(cleared.uid,),
    )


@pytest.mark.parametrize(
    ("case", "post_filter", "clears_own_nomination"),
    [
        ("a PostFilter that nominated nothing clears the pod's own nomination", PostFilterResult(), True),
        ("a cycle where no PostFilter ran leaves the nomination as it is", None, False),
    ],
)
def test_a_post_filter_that_did_not_nominate_records_no_victims(
    case: str, post_filter: PostFilterResult | None, clears_own_nomination: bool
) -> None:
    victim = make_pod("v").obj()
    if post_filter is not None:
        post_filter.victims.append(victim)  # candidates weighed, none chosen: no victim is evicted
    failure = failure_of_cycle(CycleResult(make_pod("p").obj(), fit_error=fit_error(), post_filter=post_filter))
    assert (failure.nominated_node_name, failure.victim_uids, failure.clear_own_nomination) == (
        "",
        (),
        clears_own_nomination,
    )


@pytest.mark.parametrize(
    ("case", "failure", "goes_to"),
    [
        (
            "a pod its plugins rejected waits in the pool for an event they care about",
            SchedulingFailure("", "0/1 nodes are available", frozenset({names.NODE_RESOURCES_FIT})),
            sq.UNSCHEDULABLE,
        ),
        ("a pod whose bind the binder refused backs off", bind_failure("", "node n1 is full"), sq.BACKOFF),
        ("a pod no plugin rejected backs off", SchedulingFailure("", "no nodes available"), sq.BACKOFF),
    ],
)
def test_handle_scheduling_failure_sends_the_pod_where_upstream_does(
    case: str, failure: SchedulingFailure, goes_to: str
) -> None:
    clock = FakeClock(START)
    pod = make_pod("p").obj()
    cluster = Cluster(clock, pod)
    info = cluster.queue.pop()
    assert info is not None
    assert cluster.driver.handle_scheduling_failure(info, failure) == goes_to
    assert cluster.queue.info(pod.uid) is info and info.last_failure_message == failure.message


def test_a_pod_deleted_while_its_failure_was_recorded_does_not_come_back() -> None:
    clock = FakeClock(START)
    pod = make_pod("p").obj()
    cluster = Cluster(clock, pod)
    info = cluster.queue.pop()
    assert info is not None
    cluster.queue.delete(pod)
    assert cluster.driver.handle_scheduling_failure(info, bind_failure(pod.uid, "gone")) == ""
    assert not cluster.queue.contains(pod.uid)


# --- a pod group -----------------------------------------------------------------------------------


def members(infos: list[sq.QueuedPodInfo], error: bool = False) -> list[PodGroupMember]:
    """Every pod of a popped group not placed, rejected by NodeResourcesFit (or failed with an error)."""
    return [PodGroupMember(info, False, REJECTED, frozenset({names.NODE_RESOURCES_FIT}), error) for info in infos]


def test_a_rejected_group_backs_off_as_one_entity_with_its_pods_rejectors_and_gang_scheduling() -> None:
    clock = FakeClock(START)
    cluster = Cluster(clock, worker("w-0"), worker("w-1"))
    for attempt, backoff in enumerate([1, 2, 4], start=1):
        infos = cluster.pop_group()
        assert [info.attempts for info in infos] == [attempt, attempt]
        cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.UNSCHEDULABLE, members(infos))
        assert {cluster.queue.location(info.pod.uid) for info in infos} == {sq.BACKOFF}
        assert all(info.unschedulable_plugins == {names.GANG_SCHEDULING, names.NODE_RESOURCES_FIT} for info in infos)
        # No event moves it and nothing pops it before its backoff ends (where backoffQ's 1 s window
        # after it begins); then it is retried.
        assert cluster.queue.on_event(sq.NODE_ADD) == 0 and cluster.queue.pop() is None
        assert cluster.queue.next_backoff_expiry() == clock.now + backoff + 1
        clock.now += backoff + 1


def test_a_rejected_group_whose_cycle_sent_evictions_waits_in_the_pool_for_a_deletion() -> None:
    clock = FakeClock(START)
    cluster = Cluster(clock, worker("w-0"), worker("w-1"))
    infos = cluster.pop_group()
    cluster.driver.add_attempted_pod_group_if_needed(
        "default", GROUP, Code.UNSCHEDULABLE, members(infos), preempting=True
    )
    assert {cluster.queue.location(info.pod.uid) for info in infos} == {sq.UNSCHEDULABLE}
    clock.now += 10
    assert cluster.queue.pop() is None
    assert cluster.queue.on_event(sq.ASSIGNED_POD_DELETE) == 2
    assert {cluster.queue.location(info.pod.uid) for info in infos} == {sq.ACTIVE}


@pytest.mark.parametrize(
    ("case", "code", "error", "consecutive_errors"),
    [
        ("an Unschedulable group counts a rejection", Code.UNSCHEDULABLE, False, 0),
        ("an UnschedulableAndUnresolvable group counts a rejection", Code.UNSCHEDULABLE_AND_UNRESOLVABLE, False, 0),
        ("a group whose cycle failed with an error counts an error", Code.ERROR, True, 1),
        ("a group the binder refused to bind counts an error", Code.SUCCESS, True, 1),
        ("a rejected group with a pod that failed with an error counts an error", Code.UNSCHEDULABLE, True, 1),
    ],
)
def test_a_group_that_was_not_scheduled_counts_a_rejection_or_an_error(
    case: str, code: Code, error: bool, consecutive_errors: int
) -> None:
    clock = FakeClock(START)
    cluster = Cluster(clock, worker("w-0"), worker("w-1"))
    infos = cluster.pop_group()
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, code, members(infos, error=error))
    assert {cluster.queue.location(info.pod.uid) for info in infos} == {sq.BACKOFF}
    assert [info.consecutive_errors for info in infos] == [consecutive_errors] * 2


def test_a_scheduled_groups_leftover_pods_go_to_active_at_once_even_one_that_failed_with_an_error() -> None:
    # submitPodGroupAlgorithmResult sends every pod not placed through the failure handler, which
    # puts a pod group's pod into the group's pending pods whether it was rejected or failed with
    # an error; AddAttemptedPodGroupIfNeeded then requeues the scheduled group to activeQ without
    # backoff, its queue time kept.
    clock = FakeClock(START)
    pods = [worker("w-0"), worker("w-1"), worker("w-2")]
    cluster = Cluster(clock, *pods)
    infos = sorted(cluster.pop_group(), key=lambda i: i.pod.name)
    outcome = [
        PodGroupMember(infos[0], bound=True),
        PodGroupMember(infos[1], False, "0/1 nodes are available", frozenset({names.NODE_RESOURCES_FIT})),
        PodGroupMember(infos[2], False, "pod is gone", error=True),
    ]
    cluster.driver.add_attempted_pod_group_if_needed("default", GROUP, Code.SUCCESS, outcome)
    # The bound pod reaches the queue through its cluster feed: the driver leaves it in flight.
    assert [cluster.queue.location(p.uid) for p in pods] == [sq.IN_FLIGHT, sq.ACTIVE, sq.ACTIVE]
    assert infos[1].unschedulable_plugins == {names.NODE_RESOURCES_FIT}
    assert [info.timestamp for info in infos[1:]] == [START, START]


# --- the queue service and simulate, one driver ----------------------------------------------------------


class NoFilter:
    async def find_nodes(self, request: filter_pb2.FindNodesRequest) -> filter_pb2.FindNodesResponse:
        raise AssertionError("a pod group's cycle runs on the preemption service, not FindNodes")


@dataclass
class RejectingPreemption:
    """The preemption service's pod-group cycle, rejecting every group as GangScheduling does when
    minCount cannot be met."""

    cycles: list[list[str]] = field(default_factory=list)

    async def post_filter_run(
        self, request: preemption_pb2.PostFilterRunRequest
    ) -> preemption_pb2.PostFilterRunResponse:
        raise AssertionError("no single pod is scheduled here")

    async def schedule_pod_groups(
        self, request: preemption_pb2.SchedulePodGroupsRequest
    ) -> preemption_pb2.SchedulePodGroupsResponse:
        """The first group is rejected, and the batch ends there (as the service's does)."""
        group = request.groups[0]
        self.cycles.append([pod.uid for pod in group.pods])
        outcomes = [
            binder_pb2.PodGroupPodOutcome(pod_uid=pod.uid, message=REJECTED, rejector_plugins=[names.GANG_SCHEDULING])
            for pod in group.pods
        ]
        rejected = preemption_pb2.SchedulePodGroupResponse(
            code=int(Code.UNSCHEDULABLE), message=REJECTED, pods=outcomes
        )
        return preemption_pb2.SchedulePodGroupsResponse(decided=[rejected])


@dataclass
class RecordingBinder:
    results: list[binder_pb2.RecordPodGroupResultRequest] = field(default_factory=list)

    async def bind(self, request: binder_pb2.BindRequest) -> binder_pb2.BindResponse:
        raise AssertionError("a rejected group binds nothing")

    async def record_failure(self, request: binder_pb2.RecordFailureRequest) -> binder_pb2.RecordFailureResponse:
        raise AssertionError("a pod group's failures are written with its result")

    async def record_pod_group_result(
        self, request: binder_pb2.RecordPodGroupResultRequest
    ) -> binder_pb2.RecordPodGroupResultResponse:
        self.results.append(request)
        return binder_pb2.RecordPodGroupResultResponse(resource_version=len(self.results))


class WrittenLog:
    view_version = 0

    def saw(self, version: int, event_sequence: int) -> None:
        self.view_version = max(self.view_version, version)

    async def caught_up(self) -> None:
        return None


class Results(AttemptTelemetry):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.results: list[str] = []

    def finished(self, attempt: Attempt) -> None:
        self.results.append(attempt.result)
        super().finished(attempt)


def pod_group_scheduler(
    cluster: Cluster, clock: FakeClock, preemption: RejectingPreemption, results: Results
) -> Scheduler:
    """The queue service's Scheduler over `cluster`'s queue, its pods in the gang `GROUP`."""
    group = gang()
    return Scheduler(
        queue=cluster.queue,
        pods_by_uid=cluster.pods.get,
        scheduler_config=GATE_ON,
        batch_size=16,
        filter=NoFilter(),
        preemption=preemption,
        binder=RecordingBinder(),
        written=WrittenLog(),
        clock=clock,
        observer=results,
        pod_group_of=lambda pod: group if pod.spec.pod_group_name == GROUP else None,
    )


def service_backoffs(retries: int) -> list[float]:
    """The backoff the queue service's Scheduler gives a gang of three rejected `retries` times, and
    that nothing but the backoff's end brings it back."""
    clock = FakeClock(START)
    pods = [worker(f"w-{i}") for i in range(3)]
    cluster = Cluster(clock, *pods)
    preemption, results = RejectingPreemption(), Results(clock)
    scheduler = pod_group_scheduler(cluster, clock, preemption, results)
    backoffs = []
    for retry in range(retries):
        asyncio.run(scheduler.run_once())
        assert len(preemption.cycles) == retry + 1 and len(preemption.cycles[-1]) == 3
        assert {cluster.queue.location(p.uid) for p in pods} == {sq.BACKOFF}
        assert cluster.queue.on_event(sq.NODE_ADD) == 0 and scheduler.pop_batch() == []
        expiry = cluster.queue.next_backoff_expiry()
        assert expiry is not None
        backoffs.append(expiry - clock.now)
        clock.now = expiry
    assert results.results == [UNSCHEDULABLE] * 3 * retries
    assert ERROR not in results.results
    return backoffs


def simulate_backoffs(retries: int) -> list[float]:
    """The same gang, too large for its one node, in `simulate`."""
    sim = Simulator(GATE_ON)
    sim.cluster.apply(make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).obj())
    sim.cluster.apply(gang())
    for i in range(3):
        sim.cluster.apply(worker(f"w-{i}"))
    backoffs = []
    for _ in range(retries):
        assert sim.schedule_one() is not None
        expiry = sim.queue.next_backoff_expiry()
        assert expiry is not None and not sim.queue.can_pop()
        backoffs.append(expiry - sim.now)
        sim.now = expiry
    return backoffs


def test_the_queue_service_retries_a_rejected_group_after_its_backoff_as_simulate_does() -> None:
    # 1 s doubling, at most 10 s x sqrt(3) = 17.32 s, each ending where backoffQ's next 1 s window
    # begins (the clocks start on a whole second), whatever happens meanwhile.
    expected = [2.0, 3.0, 5.0, 9.0, 17.0, 18.0]
    assert service_backoffs(6) == expected
    assert simulate_backoffs(6) == expected


@dataclass
class RejectingAsAPodArrives(RejectingPreemption):
    """As RejectingPreemption, with `arrive` run while the first request is awaited: the queue
    service applies the records it reads meanwhile."""

    arrive: Callable[[], None] | None = None

    async def schedule_pod_groups(
        self, request: preemption_pb2.SchedulePodGroupsRequest
    ) -> preemption_pb2.SchedulePodGroupsResponse:
        arrive, self.arrive = self.arrive, None
        if arrive is not None:
            arrive()
        return await super().schedule_pod_groups(request)


def test_the_queue_service_backs_off_a_rejected_group_with_the_pod_that_arrived_during_its_cycle() -> None:
    # addPodGroupMember holds the new pod in pendingPodGroupPods while its group is the last popped
    # entity; AddAttemptedPodGroupIfNeeded adds it to the rejected group, which backs off whole and
    # is retried, with it, once its backoff ends (not at once through the new pod's own entry).
    clock = FakeClock(START)
    pods = [worker(f"w-{i}") for i in range(3)]
    cluster = Cluster(clock, *pods)
    late = worker("w-3")

    def arrive() -> None:
        cluster.pods[late.uid] = late
        cluster.queue.add(late)
        assert cluster.queue.location(late.uid) == sq.PENDING

    preemption, results = RejectingAsAPodArrives(arrive=arrive), Results(clock)
    scheduler = pod_group_scheduler(cluster, clock, preemption, results)
    asyncio.run(scheduler.run_once())
    assert sorted(preemption.cycles[0]) == sorted(p.uid for p in pods)
    assert [cluster.queue.location(p.uid) for p in (*pods, late)] == [sq.BACKOFF] * 4
    assert cluster.queue.pod_group_backoff_count() == 4 and scheduler.pop_batch() == []
    expiry = cluster.queue.next_backoff_expiry()
    assert expiry is not None
    clock.now = expiry
    asyncio.run(scheduler.run_once())
    assert len(preemption.cycles) == 2
    assert preemption.cycles[1][-1] == late.uid and sorted(preemption.cycles[1]) == sorted(p.uid for p in (*pods, late))
