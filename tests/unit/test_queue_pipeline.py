"""The queue service's scheduling loop and its batch pipeline (services/podsched_queue/scheduler.py,
pipeline.py), on fakes of the scheduler's own interfaces to the filter, preemption and binder
services and a fake clock: no Kafka, no gRPC. The live suites (tests/services) drive the same loop
against the real services."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest

from builders import HIGH_PRIORITY, LOW_PRIORITY, MID_PRIORITY, make_pod
from clocks import FakeClock
from podsched.api.types import SCHEDULING_POLICY_GANG, ObjectMeta, Pod, PodGroup
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.status import Code
from podsched.queue import scheduling_queue as sq
from podsched.scheduler.driver import SchedulingFailure
from podsched_proto.binder.v1 import binder_pb2
from podsched_proto.events.v1 import events_pb2
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2
from podsched_queue.instrumentation import AttemptTelemetry
from podsched_queue.pipeline import (
    ERROR,
    REQUEUED,
    SCHEDULED,
    UNSCHEDULABLE,
    Attempt,
    AttemptState,
    BatchPipeline,
    PendingFailure,
    PendingPodGroup,
    PipelineError,
)
from podsched_queue.scheduler import Scheduler

START = 1_000.0
INITIAL_BACKOFF = 1.0  # SchedulerConfig's default podInitialBackoffSeconds
FIT_NOWHERE = "0/2 nodes are available: 2 Insufficient cpu."


class FakeFilter:
    """Places pods in order on the node `nodes` names for each (none: fits nowhere) and, like the
    filter service, stops after the first pod that fits nowhere."""

    def __init__(self, nodes: dict[str, str]) -> None:
        self.nodes = nodes  # pod name -> node; absent = fits nowhere
        self.requests: list[filter_pb2.FindNodesRequest] = []
        self.names: dict[str, str] = {}  # uid -> name, filled by the test's cluster

    async def find_nodes(self, request: filter_pb2.FindNodesRequest) -> filter_pb2.FindNodesResponse:
        self.requests.append(request)
        await asyncio.sleep(0)  # a call suspends the loop, as a gRPC call does: answers in flight arrive
        placements = []
        for ref in request.pods:
            node = self.nodes.get(self.names[ref.uid], "")
            placements.append(
                filter_pb2.Placement(
                    node_name=node,
                    feasible_nodes=1 if node else 0,
                    evaluated_nodes=2,
                    message="" if node else FIT_NOWHERE,
                    rejector_plugins=[] if node else ["NodeResourcesFit"],
                )
            )
            if not node:
                break
        return filter_pb2.FindNodesResponse(placements=placements, resource_version=10)


class FakePreemption:
    """Nominates every pod it is asked about to `node`, evicting `victim`; or answers that the
    filter's outcome is stale."""

    def __init__(self, node: str = "n2", victim: Pod | None = None, stale: bool = False) -> None:
        self.node, self.victim, self.stale = node, victim, stale
        self.requests: list[preemption_pb2.PostFilterRunRequest] = []
        self.group_nodes: dict[str, str] = {}  # PodGroup name -> the node its pods go to; absent: rejected
        self.group_requests: list[preemption_pb2.SchedulePodGroupsRequest] = []

    async def schedule_pod_groups(
        self, request: preemption_pb2.SchedulePodGroupsRequest
    ) -> preemption_pb2.SchedulePodGroupsResponse:
        """Places every pod of a group on its node, or rejects the group (no preemption); like the
        preemption service, decides the groups up to the first one rejected."""
        self.group_requests.append(request)
        decided = []
        for group in request.groups:
            node = self.group_nodes.get(group.name, "")
            pods = [
                binder_pb2.PodGroupPodOutcome(
                    pod_uid=ref.uid,
                    node_name=node,
                    message="" if node else FIT_NOWHERE,
                    rejector_plugins=[] if node else ["NodeResourcesFit"],
                )
                for ref in group.pods
            ]
            code = Code.SUCCESS if node else Code.UNSCHEDULABLE
            decided.append(
                preemption_pb2.SchedulePodGroupResponse(
                    code=int(code), message="" if node else FIT_NOWHERE, pods=pods, resource_version=12
                )
            )
            if not node:
                break
        return preemption_pb2.SchedulePodGroupsResponse(decided=decided, resource_version=12)

    async def post_filter_run(
        self, request: preemption_pb2.PostFilterRunRequest
    ) -> preemption_pb2.PostFilterRunResponse:
        self.requests.append(request)
        if self.stale:
            stale = preemption_pb2.PostFilterResponse(stale_filter_result=True)
            return preemption_pb2.PostFilterRunResponse(decisions=[preemption_pb2.RunDecision(decision=stale)])
        victims = []
        if self.victim is not None:
            victims.append(
                events_pb2.ObjectReference(uid=self.victim.uid, name=self.victim.name, namespace=self.victim.namespace)
            )
        decision = preemption_pb2.PostFilterResponse(
            nominated_node_name=self.node, victims=victims, candidates=1, message=FIT_NOWHERE
        )
        return preemption_pb2.PostFilterRunResponse(
            decisions=[preemption_pb2.RunDecision(filter_result=request.first.filter_result, decision=decision)],
            resource_version=11,
        )


@dataclass
class FakeBinder:
    """Accepts every bind unless `refuse` names the pod (a pod group's: none of its pods binds);
    `down` makes every Bind and RecordPodGroupResult fail as a lost connection does; a Bind waits
    for `gate` when one is set."""

    refuse: set[str] = field(default_factory=set)
    down: bool = False
    gate: asyncio.Event | None = None
    binds: list[binder_pb2.BindRequest] = field(default_factory=list)
    failures: list[binder_pb2.RecordFailureRequest] = field(default_factory=list)
    group_results: list[binder_pb2.RecordPodGroupResultRequest] = field(default_factory=list)
    version: int = 100

    async def bind(self, request: binder_pb2.BindRequest) -> binder_pb2.BindResponse:
        self.binds.append(request)
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            raise ConnectionError("binder unavailable")
        self.version += 1
        results = [
            binder_pb2.BindResult(bound=b.pod_uid not in self.refuse, message="refused") for b in request.bindings
        ]
        return binder_pb2.BindResponse(results=results, resource_version=self.version, event_sequence=self.version)

    async def record_failure(self, request: binder_pb2.RecordFailureRequest) -> binder_pb2.RecordFailureResponse:
        self.failures.append(request)
        self.version += 1
        return binder_pb2.RecordFailureResponse(resource_version=self.version, event_sequence=self.version)

    async def record_pod_group_result(
        self, request: binder_pb2.RecordPodGroupResultRequest
    ) -> binder_pb2.RecordPodGroupResultResponse:
        self.group_results.append(request)
        if self.down:
            raise ConnectionError("binder unavailable")
        self.version += 1
        bound = [p.pod_uid for p in request.pods if p.node_name] if request.code == int(Code.SUCCESS) else []
        refused = "refused" if self.refuse.intersection(bound) else ""
        return binder_pb2.RecordPodGroupResultResponse(
            bound_pod_uids=[] if refused else bound,
            bind_error=refused,
            resource_version=self.version,
            event_sequence=self.version,
        )


class FakeWrittenLog:
    def __init__(self) -> None:
        self.view_version = 5
        self.seen: list[int] = []

    def saw(self, version: int, event_sequence: int) -> None:
        self.seen.append(version)
        self.view_version = max(self.view_version, version)

    async def caught_up(self) -> None:
        return None


class RecordingTelemetry(AttemptTelemetry):
    """The service's own instrumentation, with each finished attempt's result kept for the test."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.results: list[tuple[str, str]] = []
        self.durations: dict[str, float] = {}  # pod name -> the attempt's duration, as observed

    def finished(self, attempt: Attempt) -> None:
        self.results.append((attempt.pod.name, attempt.result))
        self.durations[attempt.pod.name] = attempt.duration(self.clock.monotonic())
        super().finished(attempt)


class Harness:
    def __init__(
        self,
        pods: list[Pod],
        nodes: dict[str, str],
        *,
        batch_size: int = 128,
        pod_group_batch_size: int | None = None,
        preemption: FakePreemption | None = None,
        binder: FakeBinder | None = None,
        pod_groups: dict[str, PodGroup] | None = None,
    ) -> None:
        self.clock = FakeClock(START)
        # GenericWorkload when there are pod groups: PreEnqueue admits every pod (its gang is complete).
        admit = (lambda pod: None) if pod_groups is not None else None
        self.queue = sq.SchedulingQueue(self.clock.time, INITIAL_BACKOFF, 10.0, pre_enqueue=admit)
        self.pods = {pod.uid: pod for pod in pods}
        self.filter = FakeFilter(nodes)
        self.filter.names = {pod.uid: pod.name for pod in pods}
        self.preemption = preemption or FakePreemption()
        self.binder = binder or FakeBinder()
        self.written = FakeWrittenLog()
        self.telemetry = RecordingTelemetry(self.clock)
        self.scheduler = Scheduler(
            queue=self.queue,
            pods_by_uid=self.pods.get,
            scheduler_config=SchedulerConfig(),
            batch_size=batch_size,
            pod_group_batch_size=pod_group_batch_size,
            filter=self.filter,
            preemption=self.preemption,
            binder=self.binder,
            written=self.written,
            clock=self.clock,
            observer=self.telemetry,
            pod_group_of=(
                (lambda pod: pod_groups.get(pod.spec.pod_group_name or "")) if pod_groups is not None else None
            ),
        )
        for pod in pods:
            self.queue.add(pod)

    def uid(self, name: str) -> str:
        return next(uid for uid, pod in self.pods.items() if pod.name == name)


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), timeout=10))


def pod(name: str, priority: int) -> Pod:
    return make_pod(name).priority(priority).req(cpu="1").obj()


def test_a_batch_where_every_pod_fits_binds_them_all_in_one_bind() -> None:
    async def scenario() -> None:
        h = Harness(
            [pod("a", HIGH_PRIORITY), pod("b", MID_PRIORITY), pod("c", LOW_PRIORITY)], {"a": "n1", "b": "n2", "c": "n1"}
        )
        await h.scheduler.run_once()  # the batch: one FindNodes, its Bind sent and left in flight
        assert len(h.filter.requests) == 1 and [p.uid for p in h.filter.requests[0].pods] == [
            h.uid("a"),
            h.uid("b"),
            h.uid("c"),
        ]
        assert h.scheduler.pipeline.binding
        await h.scheduler.run_once()  # nothing left to pop: the Bind in flight is drained
        assert not h.scheduler.pipeline.binding
        (bind,) = h.binder.binds
        assert [(b.pod_uid, b.node_name) for b in bind.bindings] == [
            (h.uid("a"), "n1"),
            (h.uid("b"), "n2"),
            (h.uid("c"), "n1"),
        ]
        assert h.telemetry.results == [("a", SCHEDULED), ("b", SCHEDULED), ("c", SCHEDULED)]
        assert h.binder.failures == [] and h.preemption.requests == []
        assert h.written.seen == [101]  # the Bind's version: later requests read at least that

    run(scenario)


def gang(name: str, size: int) -> PodGroup:
    return PodGroup(ObjectMeta(name=name, namespace="default"), SCHEDULING_POLICY_GANG, size)


def member(name: str, group: str, priority: int) -> Pod:
    return make_pod(name).priority(priority).req(cpu="1").group(group).obj()


def test_groups_popped_in_a_row_are_cycled_in_one_request_and_written_at_once() -> None:
    async def scenario() -> None:
        groups = {name: gang(name, 2) for name in ("g1", "g2", "g3")}
        pods = [member(f"{g}-{i}", g, HIGH_PRIORITY - k) for k, g in enumerate(groups) for i in range(2)]
        h = Harness([*pods, pod("loose", LOW_PRIORITY)], {"loose": "n1"}, pod_groups=groups)
        h.preemption.group_nodes = {"g1": "n1", "g2": "n2", "g3": "n3"}
        await h.scheduler.run_once()  # the three groups, not the pod outside any group
        (request,) = h.preemption.group_requests
        assert [(g.name, [p.uid for p in g.pods]) for g in request.groups] == [
            (g, [h.uid(f"{g}-0"), h.uid(f"{g}-1")]) for g in groups
        ]
        assert request.min_resource_version == 5
        # Every pod placed: the writes are left in flight for the next batch to overlap.
        writes = h.scheduler.pipeline.group_writes
        assert writes is not None and [w.group.name for w in writes] == ["g1", "g2", "g3"]
        assert h.telemetry.results == []
        await h.scheduler.run_once()  # then the pod outside any group, once the writes are answered
        assert [r.name for r in h.binder.group_results] == ["g1", "g2", "g3"]  # one write per group
        assert sorted(h.written.seen)[:3] == [101, 102, 103]
        assert [name for name, result in h.telemetry.results if result == SCHEDULED][:6] == [p.name for p in pods]
        (find,) = h.filter.requests
        assert [p.uid for p in find.pods] == [h.uid("loose")]
        # FindNodes does not assume a group's binds: it reads them from the log.
        assert find.min_resource_version == 103 and list(find.assumed_binds) == []

    run(scenario)


def test_a_rejected_group_ends_the_batch_and_the_groups_after_it_go_back_untried() -> None:
    async def scenario() -> None:
        groups = {name: gang(name, 2) for name in ("g1", "g2", "g3")}
        pods = [member(f"{g}-{i}", g, HIGH_PRIORITY - k) for k, g in enumerate(groups) for i in range(2)]
        h = Harness(pods, {}, pod_groups=groups)
        h.preemption.group_nodes = {"g1": "n1", "g3": "n3"}  # g2 fits nowhere
        await h.scheduler.run_once()
        assert [r.name for r in h.binder.group_results] == ["g1", "g2"]  # the rejection is written too
        assert h.telemetry.results == [
            ("g3-0", REQUEUED),
            ("g3-1", REQUEUED),
            ("g1-0", SCHEDULED),
            ("g1-1", SCHEDULED),
            ("g2-0", UNSCHEDULABLE),
            ("g2-1", UNSCHEDULABLE),
        ]
        for name in ("g3-0", "g3-1"):  # as if never popped: still in activeQ, no attempt counted
            info = h.queue.info(h.uid(name))
            assert info is not None and info.attempts == 0
            assert h.queue.location(h.uid(name)) == sq.ACTIVE
        await h.scheduler.run_once()  # g3 first in the next batch, on a view with the writes before it
        request = h.preemption.group_requests[-1]
        assert [g.name for g in request.groups] == ["g3"] and request.min_resource_version == 102
        await h.scheduler.run_once()  # nothing left to pop: g3's writes, left in flight, are settled
        assert h.telemetry.results[6:] == [("g3-0", SCHEDULED), ("g3-1", SCHEDULED)]

    run(scenario)


def test_groups_popped_in_a_row_fill_the_pod_group_batch_size_and_single_pods_the_batch_size() -> None:
    async def scenario() -> None:
        groups = {name: gang(name, 2) for name in ("g1", "g2", "g3")}
        pods = [member(f"{g}-{i}", g, HIGH_PRIORITY - k) for k, g in enumerate(groups) for i in range(2)]
        loose = [pod(f"loose-{i}", LOW_PRIORITY) for i in range(3)]
        h = Harness(
            [*pods, *loose], {p.name: "n1" for p in loose}, batch_size=2, pod_group_batch_size=4, pod_groups=groups
        )
        h.preemption.group_nodes = {"g1": "n1", "g2": "n2", "g3": "n3"}
        await h.scheduler.run_once()  # g1 and g2: four pods, more than a batch of single pods
        await h.scheduler.run_once()  # g3: the next group would have made the batch five pods
        assert [[g.name for g in r.groups] for r in h.preemption.group_requests] == [["g1", "g2"], ["g3"]]
        await h.scheduler.run_once()  # then the single pods, two at a time
        await h.scheduler.run_once()
        assert [[p.uid for p in r.pods] for r in h.filter.requests] == [
            [h.uid("loose-0"), h.uid("loose-1")],
            [h.uid("loose-2")],
        ]

    run(scenario)


def one_group_per_batch(group_nodes: dict[str, str], *, binder: FakeBinder | None = None) -> Harness:
    """Gangs g1, g2, g3 of two pods in that order, one per batch; `group_nodes`: where each fits."""
    groups = {name: gang(name, 2) for name in ("g1", "g2", "g3")}
    pods = [member(f"{g}-{i}", g, HIGH_PRIORITY - k) for k, g in enumerate(groups) for i in range(2)]
    h = Harness(pods, {}, batch_size=2, pod_groups=groups, binder=binder)
    h.preemption.group_nodes = group_nodes
    return h


def binds_of(request: preemption_pb2.SchedulePodGroupsRequest) -> list[tuple[str, str]]:
    return [(b.pod_uid, b.node_name) for b in request.assumed_binds]


def test_the_next_groups_are_cycled_with_the_binds_in_flight_assumed_and_written_after_them() -> None:
    async def scenario() -> None:
        h = one_group_per_batch({"g1": "n1", "g2": "n2", "g3": "n3"})
        await h.scheduler.run_once()  # g1, its writes left in flight
        await h.scheduler.run_once()  # g2, cycled while g1 binds
        first, second = h.preemption.group_requests
        assert binds_of(first) == []
        # g2's cycle did not wait for g1's write to reach the log: it assumed g1's pods on n1.
        assert second.min_resource_version == 5
        assert binds_of(second) == [(h.uid("g1-0"), "n1"), (h.uid("g1-1"), "n1")]
        # g1's write answered before g2's was sent: the binder gets them in queue order.
        assert [r.name for r in h.binder.group_results] == ["g1"]
        assert h.telemetry.results == [("g1-0", SCHEDULED), ("g1-1", SCHEDULED)]
        writes = h.scheduler.pipeline.group_writes
        assert writes is not None and [w.group.name for w in writes] == ["g2"]
        await h.scheduler.run_once()  # g3, with g2 assumed
        assert binds_of(h.preemption.group_requests[2]) == [(h.uid("g2-0"), "n2"), (h.uid("g2-1"), "n2")]
        await h.scheduler.run_once()  # nothing to pop: g3's writes are settled
        assert h.scheduler.pipeline.group_writes is None
        assert [r.name for r in h.binder.group_results] == ["g1", "g2", "g3"]
        assert [result for _, result in h.telemetry.results] == [SCHEDULED] * 6

    run(scenario)


def test_a_group_rejected_while_binds_were_assumed_goes_back_and_is_cycled_again_on_the_log() -> None:
    async def scenario() -> None:
        h = one_group_per_batch({"g1": "n1", "g3": "n3"})  # g2 fits nowhere
        await h.scheduler.run_once()  # g1, its writes left in flight
        await h.scheduler.run_once()  # g2, rejected on a view with g1 assumed: given up
        assert [r.name for r in h.binder.group_results] == ["g1"]
        assert h.telemetry.results[2:] == [("g2-0", REQUEUED), ("g2-1", REQUEUED)]
        for name in ("g2-0", "g2-1"):  # as if never popped
            info = h.queue.info(h.uid(name))
            assert info is not None and info.attempts == 0 and h.queue.location(h.uid(name)) == sq.ACTIVE
        assert h.scheduler.pipeline.group_writes is None
        await h.scheduler.run_once()  # g2 again, on the log with g1's binds
        third = h.preemption.group_requests[2]
        assert [g.name for g in third.groups] == ["g2"]
        assert binds_of(third) == [] and third.min_resource_version == 101
        assert [r.name for r in h.binder.group_results] == ["g1", "g2"]
        assert h.telemetry.results[4:] == [("g2-0", UNSCHEDULABLE), ("g2-1", UNSCHEDULABLE)]
        assert h.queue.location(h.uid("g2-0")) == sq.BACKOFF

    run(scenario)


def test_a_refused_group_write_sends_the_groups_cycled_on_it_back_untried() -> None:
    async def scenario() -> None:
        h = one_group_per_batch({"g1": "n1", "g2": "n2", "g3": "n3"})
        h.binder.refuse = {h.uid("g1-0")}
        await h.scheduler.run_once()  # g1, its writes left in flight
        await h.scheduler.run_once()  # g2, cycled on g1's binds, which the binder refuses
        assert [r.name for r in h.binder.group_results] == ["g1"]
        assert h.telemetry.results == [
            ("g1-0", ERROR),
            ("g1-1", ERROR),
            ("g2-0", REQUEUED),
            ("g2-1", REQUEUED),
        ]
        assert h.queue.location(h.uid("g1-0")) == sq.BACKOFF
        assert h.queue.location(h.uid("g2-0")) == sq.ACTIVE
        await h.scheduler.run_once()  # g2 again, on the log without g1
        third = h.preemption.group_requests[2]
        assert [g.name for g in third.groups] == ["g2"] and binds_of(third) == []
        assert third.min_resource_version == 101

    run(scenario)


def test_a_failed_group_write_backs_its_pods_off_and_sends_the_next_groups_back_untried() -> None:
    async def scenario() -> None:
        h = one_group_per_batch({"g1": "n1", "g2": "n2", "g3": "n3"}, binder=FakeBinder(down=True))
        await h.scheduler.run_once()  # g1, its writes left in flight
        await h.scheduler.run_once()  # g2, cycled while g1's write fails
        assert h.telemetry.results == [
            ("g1-0", ERROR),
            ("g1-1", ERROR),
            ("g2-0", REQUEUED),
            ("g2-1", REQUEUED),
        ]
        assert h.queue.location(h.uid("g1-0")) == sq.BACKOFF
        assert h.queue.location(h.uid("g2-0")) == sq.ACTIVE
        assert h.scheduler.pipeline.group_writes is None

    run(scenario)


def test_a_group_popped_again_while_its_writes_are_in_flight_is_cycled_once_they_are_in_the_log() -> None:
    async def scenario() -> None:
        h = one_group_per_batch({"g1": "n1", "g2": "n2", "g3": "n3"})
        await h.scheduler.run_once()  # g1, its writes left in flight
        late = member("g1-2", "g1", HIGH_PRIORITY)  # a third pod of g1, queued while g1 binds
        h.pods[late.uid] = late
        h.queue.add(late)
        await h.scheduler.run_once()
        second = h.preemption.group_requests[1]
        assert [g.name for g in second.groups] == ["g1", "g2"]
        # g1's bound pods count towards its quorum only once they are in the log.
        assert binds_of(second) == [] and second.min_resource_version == 101
        assert h.telemetry.results[:2] == [("g1-0", SCHEDULED), ("g1-1", SCHEDULED)]

    run(scenario)


def test_a_pod_that_fits_nowhere_goes_to_post_filter_and_its_decision_is_recorded() -> None:
    async def scenario() -> None:
        victim = make_pod("victim").priority(LOW_PRIORITY).node("n2").obj()
        h = Harness([pod("preemptor", HIGH_PRIORITY)], {}, preemption=FakePreemption("n2", victim))
        await h.scheduler.run_once()
        (run_request,) = h.preemption.requests
        assert run_request.first.pod.uid == h.uid("preemptor")
        assert run_request.first.filter_result.message == FIT_NOWHERE
        assert run_request.first.filter_resource_version == 10
        # The batch's failures settle in the background; the pod is back in the queue once they have.
        assert h.scheduler.pipeline.settling is not None
        await h.scheduler.run_once()
        assert h.scheduler.pipeline.settling is None
        (failure,) = h.binder.failures
        assert failure.pod_uid == h.uid("preemptor") and failure.nominated_node_name == "n2"
        assert list(failure.victim_uids) == [victim.uid] and failure.message == FIT_NOWHERE
        assert h.queue.location(h.uid("preemptor")) in (sq.UNSCHEDULABLE, sq.BACKOFF)
        assert h.telemetry.results == [("preemptor", UNSCHEDULABLE)]

    run(scenario)


def test_the_next_batch_assumes_the_bind_in_flight_and_the_nominations_still_settling() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        h = Harness(
            [pod("preemptor", HIGH_PRIORITY), pod("placed", MID_PRIORITY), pod("next", LOW_PRIORITY)],
            {"placed": "n1", "next": "n1"},
            batch_size=2,
            binder=FakeBinder(gate=gate),
        )
        await h.scheduler.run_once()  # preemptor nominated to n2, then placed on n1 (Bind held)
        assert [[p.uid for p in r.pods] for r in h.filter.requests] == [
            [h.uid("preemptor"), h.uid("placed")],
            [h.uid("placed")],
        ]
        assert [(n.pod_uid, n.node_name) for n in h.filter.requests[1].assumed_nominations] == [
            (h.uid("preemptor"), "n2")
        ]
        assert h.scheduler.pipeline.binding and h.scheduler.pipeline.settling is not None
        gate.set()
        await h.scheduler.run_once()  # the next batch
        third = h.filter.requests[2]
        assert [p.uid for p in third.pods] == [h.uid("next")]
        assert [(b.pod_uid, b.node_name) for b in third.assumed_binds] == [(h.uid("placed"), "n1")]
        assert [(n.pod_uid, n.node_name) for n in third.assumed_nominations] == [(h.uid("preemptor"), "n2")]
        # That batch had no failures of its own: it did not wait for the previous one to settle,
        # which goes on with its nominations assumed by the batches after it.
        assert h.scheduler.pipeline.settling is not None
        await h.scheduler.run_once()  # nothing popped: the settling batch is finished
        assert h.scheduler.pipeline.settling is None
        await h.scheduler.run_once()
        assert sorted(h.telemetry.results) == [("next", SCHEDULED), ("placed", SCHEDULED), ("preemptor", UNSCHEDULABLE)]

    run(scenario)


def test_two_binds_stay_in_flight_and_the_third_waits_for_the_oldest() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        h = Harness(
            [pod("a", HIGH_PRIORITY), pod("b", MID_PRIORITY), pod("c", LOW_PRIORITY)],
            {"a": "n1", "b": "n1", "c": "n2"},
            batch_size=1,
            binder=FakeBinder(gate=gate),
        )
        await h.scheduler.run_once()  # a placed, its Bind held
        await h.scheduler.run_once()  # b filtered with a assumed, its Bind sent without waiting for a's
        await asyncio.sleep(0)  # the Bind calls start
        assert [[b.pod_uid for b in r.bindings] for r in h.binder.binds] == [[h.uid("a")], [h.uid("b")]]
        assert [(b.pod_uid, b.node_name) for b in h.filter.requests[1].assumed_binds] == [(h.uid("a"), "n1")]
        assert h.scheduler.pipeline.binds_full and h.telemetry.results == []
        third = asyncio.ensure_future(h.scheduler.run_once())
        for _ in range(5):
            await asyncio.sleep(0)
        # c was filtered with both Binds assumed, and its own Bind waits for the oldest's answer.
        assert [(b.pod_uid, b.node_name) for b in h.filter.requests[2].assumed_binds] == [
            (h.uid("a"), "n1"),
            (h.uid("b"), "n1"),
        ]
        assert not third.done() and len(h.binder.binds) == 2
        h.clock.now = START + 1.0
        gate.set()
        await third
        assert h.telemetry.results[:2] == [("a", SCHEDULED), ("b", SCHEDULED)]
        assert [b.pod_uid for b in h.binder.binds[2].bindings] == [h.uid("c")]
        for _ in range(5):
            await asyncio.sleep(0)  # c's answer comes at 1.0; the loop takes it at 5.0
        h.clock.now = START + 5.0
        await h.scheduler.run_once()  # nothing to pop: c's Bind is drained
        assert h.telemetry.results == [("a", SCHEDULED), ("b", SCHEDULED), ("c", SCHEDULED)]
        # Each attempt ends when its Bind's answer came, as kube-scheduler's binding cycle does, not
        # when the loop takes it.
        assert h.telemetry.durations == {"a": 1.0, "b": 1.0, "c": 1.0}
        assert not h.scheduler.pipeline.binding

    run(scenario)


def test_a_failed_bind_sends_its_pods_back_to_the_queue_with_backoff() -> None:
    async def scenario() -> None:
        h = Harness(
            [pod("a", HIGH_PRIORITY), pod("b", LOW_PRIORITY)], {"a": "n1", "b": "n1"}, binder=FakeBinder(down=True)
        )
        await h.scheduler.run_once()
        await h.scheduler.run_once()  # draining the Bind finds the binder down
        assert not h.scheduler.pipeline.binding
        for name in ("a", "b"):
            assert h.queue.location(h.uid(name)) == sq.BACKOFF
        # The error backoffQ: 1 s, up to where the next 1 s window begins, and never popped early.
        backoff_end = sq.SchedulingQueue.backoff_window_end(START + INITIAL_BACKOFF)
        assert h.queue.next_backoff_expiry() == backoff_end
        assert h.telemetry.results == [("a", ERROR), ("b", ERROR)]
        # The binder is back: the pods are tried again and bound.
        h.binder.down = False
        h.clock.now = backoff_end
        await h.scheduler.run_once()
        await h.scheduler.run_once()
        assert h.telemetry.results[2:] == [("a", SCHEDULED), ("b", SCHEDULED)]

    run(scenario)


def test_a_pod_that_fits_nowhere_goes_to_post_filter_with_the_bind_in_flight_assumed() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        h = Harness([pod("a", HIGH_PRIORITY), pod("b", LOW_PRIORITY)], {"a": "n1"}, binder=FakeBinder(gate=gate))
        await h.scheduler.run_once()
        # b's PostFilter did not wait for a's Bind: it sees a on n1, as kube-scheduler's PostFilter
        # sees a pod its earlier cycle assumed while the binding goes on.
        (run_request,) = h.preemption.requests
        assert run_request.first.pod.uid == h.uid("b")
        assert [(b.pod_uid, b.node_name) for b in run_request.first.assumed_binds] == [(h.uid("a"), "n1")]
        assert h.scheduler.pipeline.binding and h.telemetry.results == []
        gate.set()
        await h.scheduler.run_once()  # nothing popped: the Bind is drained, then the failure settles
        await h.scheduler.run_once()
        assert sorted(h.telemetry.results) == [("a", SCHEDULED), ("b", UNSCHEDULABLE)]

    run(scenario)


def test_a_refused_bind_fails_its_pod_and_sends_the_pod_filtered_on_it_back_untried() -> None:
    async def scenario() -> None:
        h = Harness([pod("a", HIGH_PRIORITY), pod("preemptor", MID_PRIORITY), pod("b", LOW_PRIORITY)], {"a": "n1"})
        h.binder.refuse = {h.uid("a")}
        await h.scheduler.run_once()
        # The preemptor's PostFilter ran with a's Bind in flight assumed; b was filtered next with a
        # still assumed on n1, and the binder had refused a by then: no PostFilter on that view.
        (run_request,) = h.preemption.requests
        assert run_request.first.pod.uid == h.uid("preemptor")
        assert h.queue.location(h.uid("b")) == sq.ACTIVE
        await asyncio.sleep(0)  # a's RecordFailure leaves
        refused = [f for f in h.binder.failures if f.pod_uid == h.uid("a")]
        assert [f.message for f in refused] == ["refused"]
        assert h.telemetry.results == [("b", REQUEUED)]
        await h.scheduler.run_once()  # b's next batch waits for the failures to settle
        assert sorted(h.telemetry.results[1:3]) == [("a", ERROR), ("preemptor", UNSCHEDULABLE)]

    run(scenario)


def test_a_stale_filter_result_sends_the_pod_back_untried() -> None:
    async def scenario() -> None:
        h = Harness([pod("a", HIGH_PRIORITY)], {}, preemption=FakePreemption(stale=True))
        await h.scheduler.run_once()
        assert h.binder.failures == [] and h.scheduler.pipeline.settling is None
        assert h.queue.location(h.uid("a")) == sq.ACTIVE
        assert h.telemetry.results == [("a", REQUEUED)]

    run(scenario)


def test_unschedulable_leftovers_are_flushed_once_per_interval_of_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        h = Harness([pod("a", HIGH_PRIORITY)], {}, preemption=FakePreemption(stale=True))
        calls: list[int] = []
        flush = h.queue.flush_unschedulable_leftover

        def counted() -> int:
            calls.append(1)
            return flush()

        monkeypatch.setattr(h.queue, "flush_unschedulable_leftover", counted)
        await h.scheduler.run_once()
        assert calls == []
        h.clock.now += 30.0
        await h.scheduler.run_once()
        assert calls == [1]

    run(scenario)


# --- the pipeline's transitions ----------------------------------------------------------------


def attempt(name: str = "a") -> Attempt:
    p = pod(name, LOW_PRIORITY)
    queue = sq.SchedulingQueue(lambda: START)
    queue.add(p)
    info = queue.pop()
    assert info is not None
    return Attempt(info, p, START)


@pytest.mark.parametrize(
    ("case", "steps"),
    [
        ("a pod not bound cannot be scheduled", ["finish:scheduled"]),
        ("a pod without a failure sent cannot be unschedulable", ["finish:unschedulable"]),
        ("a pod in a Bind cannot be requeued", ["bind", "finish:requeued"]),
        ("a finished attempt cannot finish again", ["finish:requeued", "finish:error"]),
        ("a finished attempt cannot start a Bind", ["finish:error", "bind"]),
        ("a settling pod cannot start a Bind", ["fail", "bind"]),
        ("a settling pod cannot fail again", ["fail", "fail"]),
        ("an unknown result is refused", ["finish:lost"]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_illegal_attempt_transitions_raise(case: str, steps: list[str]) -> None:
    a = attempt()
    *legal, illegal = steps

    def step(name: str) -> None:
        if name == "bind":
            a.bind_started()
        elif name == "fail":
            a.failure_sent()
        else:
            a.finish(name.partition(":")[2])

    for name in legal:
        step(name)
    with pytest.raises(PipelineError):
        step(illegal)


def test_legal_attempt_transitions_end_in_their_result() -> None:
    paths = {
        SCHEDULED: ["bind"],
        UNSCHEDULABLE: ["fail"],
        ERROR: ["bind", "fail"],
        REQUEUED: [],
    }
    for result, steps in paths.items():
        a = attempt()
        for name in steps:
            (a.bind_started if name == "bind" else a.failure_sent)()
        assert a.outcome_pending == bool(steps)
        a.finish(result)
        assert (a.state, a.result, a.outcome_pending) == (AttemptState.FINISHED, result, False)


def test_illegal_pipeline_transitions_raise() -> None:
    async def scenario() -> None:
        pipeline = BatchPipeline()
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        with pytest.raises(PipelineError):
            pipeline.finish_bind()
        with pytest.raises(PipelineError):
            pipeline.finish_settling()
        with pytest.raises(PipelineError):
            pipeline.start_bind([], done)
        first, second = attempt("a"), attempt("a2")
        pipeline.start_bind([(first, "n1")], done)
        pipeline.start_bind([(second, "n2")], done)
        assert pipeline.binds_full and not pipeline.oldest_bind_answered
        assert [(b.pod_uid, b.node_name) for b in pipeline.assumed_binds()] == [
            (first.pod.uid, "n1"),
            (second.pod.uid, "n2"),
        ]
        with pytest.raises(PipelineError):  # at most MAX_BINDS_IN_FLIGHT Binds in flight
            pipeline.start_bind([(attempt("b"), "n1")], done)
        assert [a.pod.name for a, _ in pipeline.finish_bind().placed] == ["a"]  # the oldest first
        batch = pipeline.begin_batch()
        with pytest.raises(PipelineError):  # nothing to settle
            pipeline.start_settling(batch, done)
        failed = attempt("c")
        failed.failure_sent()
        batch.failures.append(PendingFailure(failed, done, SchedulingFailure(failed.pod.uid, "message"), 0.0))
        pipeline.start_settling(batch, done)
        with pytest.raises(PipelineError):  # at most one batch settling
            pipeline.start_settling(batch, done)
        placed = attempt("d")
        placed.bind_started()
        group = PodGroup(ObjectMeta(name="g", namespace="default"))
        bound = preemption_pb2.SchedulePodGroupResponse(
            code=int(Code.SUCCESS), pods=[binder_pb2.PodGroupPodOutcome(pod_uid=placed.pod.uid, node_name="n1")]
        )
        with pytest.raises(PipelineError):  # a Bind and pod-group writes are never in flight together
            pipeline.start_group_writes([PendingPodGroup(group, [placed], bound, False, done)])
        pipeline.finish_bind()
        rejected = attempt("e")
        rejected.failure_sent()
        unplaced = preemption_pb2.SchedulePodGroupResponse(
            code=int(Code.UNSCHEDULABLE), pods=[binder_pb2.PodGroupPodOutcome(pod_uid=rejected.pod.uid)]
        )
        with pytest.raises(PipelineError):  # only a group whose every pod was placed is left in flight
            pipeline.start_group_writes([PendingPodGroup(group, [rejected], unplaced, False, done)])
        with pytest.raises(PipelineError):
            pipeline.start_group_writes([])
        pipeline.start_group_writes([PendingPodGroup(group, [placed], bound, False, done)])
        assert [(b.pod_uid, b.node_name) for b in pipeline.assumed_binds()] == [(placed.pod.uid, "n1")]
        with pytest.raises(PipelineError):  # at most one batch of pod-group writes in flight
            pipeline.start_group_writes([PendingPodGroup(group, [placed], bound, False, done)])
        with pytest.raises(PipelineError):
            pipeline.start_bind([(attempt("f"), "n1")], done)
        pipeline.finish_group_writes()
        with pytest.raises(PipelineError):
            pipeline.finish_group_writes()
        done.cancel()

    run(scenario)
