"""Pod-group preemption (podsched.preemption.pod_group_preemption), ported from upstream's
podgrouppreemption_test.go: TestPodGroupEvaluator_SelectVictimsOnDomain (the whole table, generated
from the Go source, with its capacity-counting Filter plugin and round-robin scheduling function),
TestPodGroupEvaluator_Preempt (ongoing preemption, preemptionPolicy Never), and the unit helpers of
types.go and util.go."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from builders import make_node, make_pdb, make_pod
from podsched.api.types import PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER, Pod
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.runtime import Framework
from podsched.framework.status import Code, Status
from podsched.preemption.domain import (
    VictimKind,
    cross_nodes_victims,
    filter_victims_with_pdb_violation,
    get_pod_priority,
    importance_key,
)
from podsched.preemption.pod_group_preemption import (
    NO_VICTIMS_MESSAGE,
    ONGOING_MESSAGE,
    PodGroupAssignments,
    PodGroupEvaluator,
    PodGroupPreemptor,
    ProposedAssignment,
    new_pod_group_preemptor,
    resolve_preemption_policy,
)

LOW, MID, HIGH = 10, 100, 1000  # upstream's lowPriority, midPriority, highPriority
NOW = 1_000_000.0
NAMESPACE = "default"


@dataclass(frozen=True)
class G:
    """A PodGroup as the tables write it (st.MakePodGroup())."""

    name: str
    priority: int | None = None
    disruption: str = "Single"
    min_count: int | None = None  # a gang's minCount; None: not a gang
    policy: str | None = None

    @property
    def group_priority(self) -> int:
        return self.priority if self.priority is not None else 0

    @property
    def disruption_mode(self) -> str:
        return self.disruption

    @property
    def preemption_policy(self) -> str | None:
        return self.policy


class P:
    """A pod as the tables write it (st.MakePod()), its group kept aside for the lister."""

    def __init__(self) -> None:
        self._calls: list[tuple[str, tuple[object, ...]]] = []
        self.group_name: str | None = None
        self.pod_name = ""

    def named(self, name: str) -> P:
        self.pod_name = name
        return self

    def group(self, name: str) -> P:
        self.group_name = name
        return self

    def __getattr__(self, method: str):  # node, priority, label, start_time, terminating, nominated...
        def record(*args: object) -> P:
            self._calls.append((method, args))
            return self

        return record

    def obj(self) -> Pod:
        builder = make_pod(self.pod_name, NAMESPACE)
        for method, args in self._calls:
            builder = getattr(builder, method)(*args)
        return builder.obj()


class Groups:
    """The PodGroup lister over the table's groups and pods."""

    def __init__(self, groups: Sequence[G], pods: dict[str, str], scheduled: Sequence[Pod]) -> None:
        self.groups = {g.name: g for g in groups}
        self.pods = pods  # pod uid -> group name
        self.scheduled = scheduled

    def pod_group(self, namespace: str, name: str) -> G | None:
        return self.groups.get(name)

    def pod_group_name(self, pod: Pod) -> str | None:
        return self.pods.get(pod.uid)

    def scheduled_pods(self, namespace: str, name: str) -> list[Pod]:
        return [p for p in self.scheduled if self.pods.get(p.uid) == name and p.spec.node_name]


def size(pod: Pod) -> int:
    value = pod.labels.get("size", "")
    return int(value) if value.isdigit() else 1


Capacities = Sequence[tuple[str, int]]


class CapacityFilter:
    """mockFilterPlugin: a node holds pods whose "size" labels (default 1) add up to its capacity
    (the first entry naming the node; none: 0)."""

    name = "mockFilterPlugin"

    def __init__(self, capacities: Capacities) -> None:
        self.capacities = capacities

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        used = sum(size(pi.pod) for pi in node_info.pods)
        capacity = next((c for name, c in self.capacities if name == node_info.name), 0)
        if used + size(pod) > capacity:
            return Status.unschedulable(self.name, "not enough capacity")
        return None


def round_robin_scheduling(members: Sequence[Pod], group: G, nodes: Sequence[str], capacities: Capacities):
    """mockSchedulingFunc: each member on the first node, from the last one's successor on, with
    room (the i-th node has the i-th capacity); success once minCount (1 unless a gang) members are
    placed."""
    min_count = group.min_count if group.min_count is not None else 1
    node_names = list(nodes)

    def schedule(snapshot: Snapshot) -> PodGroupAssignments:
        used = {name: sum(size(pi.pod) for pi in snapshot.get(name).pods) for name in node_names}
        assignments: list[ProposedAssignment] = []
        index = 0
        for pod in members:
            for step in range(len(node_names)):
                i = (index + step) % len(node_names)
                name = node_names[i]
                if used[name] + size(pod) <= capacities[i][1]:
                    assignments.append(ProposedAssignment(PodInfo(pod), name, CycleState()))
                    used[name] += size(pod)
                    index = (i + 1) % len(node_names)
                    break
        if len(assignments) >= min_count:
            return PodGroupAssignments(assignments, Status(Code.SUCCESS))
        return PodGroupAssignments([], Status(Code.UNSCHEDULABLE))

    return schedule


@dataclass
class DomainCase:
    name: str
    nodes: list[str]
    capacities: list[tuple[str, int]]
    running: list[P]
    groups: list[G]
    preemptor: G
    members: list[P]
    victims: set[str]
    code: Code
    pdb_allowed: int | None = None
    group_disruptions: int = 0
    pdb_violations: int = 0
    extra: dict[str, object] = field(default_factory=dict)


SELECT_VICTIMS_ON_DOMAIN_CASES = [
    DomainCase(
        "Priority: mix of no groups and pod groups",
        nodes=["node1"],
        capacities=[("node1", 2)],
        running=[
            P().named("p1").node("node1").priority(LOW).label("size", "1"),
            P().named("p2").node("node1").priority(LOW).label("size", "1").group("pg1"),
        ],
        groups=[G("pg1", priority=LOW)],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH).label("size", "1")],
        victims={"p1"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Priority: StartTime of pods from same group with disruption mode single ",
        nodes=["node1"],
        capacities=[("node1", 2)],
        running=[
            P().named("p1").node("node1").priority(LOW).group("pg1").start_time(1),
            P().named("p2").node("node1").priority(LOW).group("pg1").start_time(0),
        ],
        groups=[G("pg1", priority=LOW)],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"p1"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "Pod group with disruption mode group not reprieved",
        nodes=["node1", "node2"],
        capacities=[("node1", 1), ("node2", 1)],
        running=[
            P().named("p1").node("node1").priority(LOW).group("pg1"),
            P().named("p2").node("node2").priority(LOW).group("pg1"),
        ],
        groups=[G("pg1", priority=LOW, disruption="All")],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"p1", "p2"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "Complex Mixed: Shared, different, and no groups",
        nodes=["node1", "node2", "node3", "node4", "node5"],
        capacities=[("node1", 2), ("node2", 1), ("node3", 2), ("node4", 2), ("node5", 2)],
        running=[
            P().named("p1").node("node1").priority(LOW).group("pg1").start_time(2),
            P().named("p2").node("node2").priority(LOW).group("pg1").start_time(1),
            P().named("p3").node("node3").priority(LOW).group("pg2").start_time(0),
            P().named("p4").node("node4").priority(MID),
            P().named("p5").node("node5").priority(HIGH).group("pg3").start_time(0),
        ],
        groups=[G("pg1", priority=LOW), G("pg2", priority=LOW), G("pg3", priority=HIGH)],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p-1").priority(HIGH), P().named("p-2").priority(HIGH), P().named("p-3").priority(HIGH)],
        victims={"p2"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "PDB: Mixed groups",
        nodes=["node1"],
        capacities=[("node1", 2)],
        running=[
            P().named("victim-pdb").node("node1").label("app", "foo").priority(LOW).group("pg1"),
            P().named("victim-no-pdb").node("node1").priority(LOW).group("pg1"),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        pdb_allowed=0,
        victims={"victim-no-pdb"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption",
        nodes=["node1", "node2", "node3"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("p2").node("node2").priority(LOW).group("pg1"),
            P().named("p3").node("node3").priority(LOW).group("pg2"),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p-1").priority(HIGH)],
        victims={"p1"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption, ignoring member pod preemption policy",  # noqa: E501 (upstream's case name)
        nodes=["node1", "node2", "node3"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("p2").node("node2").priority(LOW).group("pg1"),
            P().named("p3").node("node3").priority(LOW).group("pg2"),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p-1").priority(HIGH).preemption_policy(PREEMPT_NEVER)],
        victims={"p1"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Preemptor group is eligible if terminating pods are on non-nominated nodes",
        nodes=["node1", "node2"],
        capacities=[("node1", 1), ("node2", 1)],
        running=[
            P().named("victim").node("node2").priority(LOW).terminating(),
            P().named("other-victim").node("node1").priority(LOW),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p1").priority(HIGH), P().named("p2").priority(HIGH).nominated("node1")],
        victims={"other-victim", "victim"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Preemptor group is eligible if nominated node has terminating pod belonging to a pod group of higher priority",
        nodes=["node1", "node2"],
        capacities=[("node1", 2), ("node2", 1)],
        running=[
            P().named("victim").node("node1").priority(LOW).group("victim-pg").terminating(),
            P().named("other-victim").node("node1").priority(LOW),
        ],
        groups=[G("victim-pg", priority=HIGH, disruption="All")],
        preemptor=G("preemptor-pg", priority=MID),
        members=[P().named("p1").priority(MID), P().named("p2").priority(MID).nominated("node1")],
        victims={"other-victim"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Preemptor group is eligible if nominated node has terminating pod belonging to a pod group of higher priority with nil DisruptionMode",  # noqa: E501 (upstream's case name)
        nodes=["node1", "node2"],
        capacities=[("node1", 2), ("node2", 1)],
        running=[
            P().named("victim").node("node1").priority(LOW).group("victim-pg").terminating(),
            P().named("other-victim").node("node1").priority(LOW),
        ],
        groups=[G("victim-pg", priority=HIGH)],
        preemptor=G("preemptor-pg", priority=MID),
        members=[P().named("p1").priority(MID), P().named("p2").priority(MID).nominated("node1")],
        victims={"other-victim"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Preempt single lower priority pod",
        nodes=["node1"],
        capacities=[("node1", 1)],
        running=[P().named("p1").node("node1").priority(LOW)],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"p1"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Priority: Prefer lower priority victim",
        nodes=["node1"],
        capacities=[("node1", 2)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("p2").node("node1").priority(MID),
            P().named("p3").node("node1").priority(HIGH),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"p1", "p2"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Efficiency: Preempt minimum number of victims",
        nodes=["node1"],
        capacities=[("node1", 3)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("p2").node("node1").priority(LOW),
            P().named("p3").node("node1").priority(LOW),
            P().named("p4").node("node1").priority(LOW),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"p3", "p4"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "PDB: Prefer non-violating victim",
        nodes=["node1"],
        capacities=[("node1", 2)],
        running=[
            P().named("victim-pdb").node("node1").label("app", "foo").priority(LOW),
            P().named("victim-no-pdb").node("node1").priority(LOW),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        pdb_allowed=0,
        victims={"victim-no-pdb"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "PDB: Prefer removing non-violating victim over lower priority violating victim",
        nodes=["node1"],
        capacities=[("node1", 2)],
        running=[
            P().named("victim-pdb").node("node1").label("app", "foo").priority(LOW),
            P().named("victim-no-pdb").node("node1").priority(MID),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        pdb_allowed=0,
        victims={"victim-no-pdb"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption with PodGroup victims",
        nodes=["node1", "node2", "node3"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("p2").node("node2").priority(LOW).group("pg1"),
            P().named("p3").node("node3").priority(LOW).group("pg2"),
        ],
        groups=[G("pg1", priority=LOW), G("pg2", priority=LOW)],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p-1").priority(HIGH)],
        victims={"p1"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption with PodGroup victims, ignoring member pod preemption policy",  # noqa: E501 (upstream's case name)
        nodes=["node1", "node2", "node3"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("p2").node("node2").priority(LOW).group("pg1"),
            P().named("p3").node("node3").priority(LOW).group("pg2"),
        ],
        groups=[G("pg1", priority=LOW), G("pg2", priority=LOW)],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p-1").priority(HIGH).preemption_policy(PREEMPT_NEVER)],
        victims={"p1"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "PDB: Prefer lower priority pod for preemption, when preemption without pdb violation is not possible",
        nodes=["node1"],
        capacities=[("node1", 2)],
        running=[
            P().named("p1").node("node1").label("app", "foo").priority(LOW),
            P().named("p2").node("node1").label("app", "foo").priority(MID),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        pdb_allowed=0,
        victims={"p1"},
        code=Code.SUCCESS,
        pdb_violations=1,
    ),
    DomainCase(
        "PodGroup: Preempt group as a whole",
        nodes=["node1", "node2"],
        capacities=[("node1", 1), ("node1", 2)],
        running=[
            P().named("p1").node("node1").priority(LOW).group("pg1"),
            P().named("p2").node("node2").priority(LOW).group("pg1"),
        ],
        groups=[G("pg1", priority=LOW, disruption="All")],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"p1", "p2"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "PodGroup: Prefer single pod over podGroup for preemption candidate",
        nodes=["node1"],
        capacities=[("node1", 3)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("g1-1").node("node1").group("pg1").priority(LOW),
            P().named("g1-2").node("node1").group("pg1").priority(LOW),
        ],
        groups=[G("pg1", priority=LOW, disruption="All")],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"p1"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "PodGroup: Preempt group as a whole on single node",
        nodes=["node1"],
        capacities=[("node1", 3)],
        running=[
            P().named("g1-1").node("node1").group("pg1").priority(LOW),
            P().named("g1-2").node("node1").group("pg1").priority(LOW),
            P().named("p1").node("node1").priority(MID),
        ],
        groups=[G("pg1", priority=LOW, disruption="All")],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"g1-1", "g1-2"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "PDB: Unit violation if any member violates",
        nodes=["node1"],
        capacities=[("node1", 3)],
        running=[
            P().named("g1-1").node("node1").label("app", "foo").group("pg1").priority(LOW),
            P().named("g1-2").node("node1").group("pg1").priority(LOW),
            P().named("p1").node("node1").priority(LOW),
        ],
        groups=[G("pg1", priority=LOW, disruption="All")],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        pdb_allowed=0,
        victims={"p1"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Failure: Cannot preempt the victim with higher priority",
        nodes=["node1"],
        capacities=[("node1", 100)],
        running=[P().named("p1").node("node1").priority(HIGH)],
        groups=[],
        preemptor=G("preemptor-pg", priority=MID),
        members=[P().named("p").priority(MID)],
        victims={},
        code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    DomainCase(
        "Failure: Cannot preempt the victim with equal priority",
        nodes=["node1"],
        capacities=[("node1", 100)],
        running=[P().named("p1").node("node1").priority(MID)],
        groups=[],
        preemptor=G("preemptor-pg", priority=MID),
        members=[P().named("p").priority(MID)],
        victims={},
        code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    DomainCase(
        "Failure: Cannot preempt if node is empty",
        nodes=["node1"],
        capacities=[("node1", 100)],
        running=[],
        groups=[],
        preemptor=G("preemptor-pg", priority=MID),
        members=[P().named("p").priority(MID)],
        victims={},
        code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    DomainCase(
        "Priority divergence: candidate victim PodGroup has lower priority than the Pods from that group",
        nodes=["node1", "node2"],
        capacities=[("node1", 1), ("node2", 1)],
        running=[
            P().named("p1").node("node1").priority(HIGH).group("pg1"),
            P().named("p2").node("node2").priority(HIGH).group("pg1"),
        ],
        groups=[G("pg1", priority=MID, disruption="All")],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p").priority(HIGH)],
        victims={"p1", "p2"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "Priority divergence: candidate victim PodGroup has higher priority than the Pods from that group",
        nodes=["node1", "node2"],
        capacities=[("node1", 1), ("node2", 1)],
        running=[
            P().named("p1").node("node1").priority(LOW).group("pg1"),
            P().named("p2").node("node2").priority(LOW).group("pg1"),
        ],
        groups=[G("pg1", priority=MID, disruption="All")],
        preemptor=G("preemptor-pg", priority=MID),
        members=[P().named("p").priority(MID)],
        victims={},
        code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    DomainCase(
        "Gang scheduling: schedule as many pods as possible without preempting higher priority pods, but still more than minCount",  # noqa: E501 (upstream's case name)
        nodes=["node1", "node2", "node3", "node4"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("p2").node("node2").priority(LOW),
            P().named("p3").node("node3").priority(HIGH),
            P().named("p4").node("node4").priority(HIGH),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH, min_count=1),
        members=[P().named("p-a").priority(HIGH), P().named("p-b").priority(HIGH), P().named("p-c").priority(HIGH)],
        victims={"p1", "p2"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Gang scheduling: do not reprieve victim pod group of lower priority",
        nodes=["node1", "node2", "node3"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1)],
        running=[
            P().named("v1").node("node1").group("victim-pg").priority(MID),
            P().named("v2").node("node2").group("victim-pg").priority(MID),
            P().named("v3").node("node3").priority(LOW),
        ],
        groups=[G("victim-pg", priority=MID, disruption="All", min_count=1)],
        preemptor=G("preemptor-pg", priority=HIGH, min_count=1),
        members=[P().named("p-a").priority(HIGH), P().named("p-b").priority(HIGH), P().named("p-c").priority(HIGH)],
        victims={"v1", "v2", "v3"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "Gang scheduling: preempt a pod group victim but do not schedule full pod group",
        nodes=["node1", "node2", "node3", "node4"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)],
        running=[
            P().named("v1").node("node1").group("victim-pg").priority(MID),
            P().named("v2").node("node2").group("victim-pg").priority(MID),
            P().named("v3").node("node3").group("victim-pg2").priority(HIGH),
            P().named("v4").node("node4").group("victim-pg2").priority(HIGH),
        ],
        groups=[
            G("victim-pg", priority=MID, disruption="All", min_count=2),
            G("victim-pg2", priority=HIGH, disruption="All", min_count=2),
        ],
        preemptor=G("preemptor-pg", priority=HIGH, disruption="All", min_count=1),
        members=[P().named("p-a").priority(HIGH), P().named("p-b").priority(HIGH), P().named("p-c").priority(HIGH)],
        victims={"v1", "v2"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "Basic scheduling: schedule as many pods as possible without preempting higher priority pods",
        nodes=["node1", "node2", "node3", "node4"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)],
        running=[
            P().named("p1").node("node1").priority(LOW),
            P().named("p2").node("node2").priority(LOW),
            P().named("p3").node("node3").priority(HIGH),
            P().named("p4").node("node4").priority(HIGH),
        ],
        groups=[],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p-a").priority(HIGH), P().named("p-b").priority(HIGH), P().named("p-c").priority(HIGH)],
        victims={"p1", "p2"},
        code=Code.SUCCESS,
    ),
    DomainCase(
        "Basic scheduling: do not reprieve victim pod group of lower priority",
        nodes=["node1", "node2", "node3"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1)],
        running=[
            P().named("v1").node("node1").group("victim-pg").priority(MID),
            P().named("v2").node("node2").group("victim-pg").priority(MID),
            P().named("v3").node("node3").priority(LOW),
        ],
        groups=[G("victim-pg", priority=MID, disruption="All", min_count=1)],
        preemptor=G("preemptor-pg", priority=HIGH),
        members=[P().named("p-a").priority(HIGH), P().named("p-b").priority(HIGH), P().named("p-c").priority(HIGH)],
        victims={"v1", "v2", "v3"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
    DomainCase(
        "Basic scheduling: preempt a pod group victim but do not schedule full pod group",
        nodes=["node1", "node2", "node3", "node4"],
        capacities=[("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)],
        running=[
            P().named("v1").node("node1").group("victim-pg").priority(MID),
            P().named("v2").node("node2").group("victim-pg").priority(MID),
            P().named("v3").node("node3").group("victim-pg2").priority(HIGH),
            P().named("v4").node("node4").group("victim-pg2").priority(HIGH),
        ],
        groups=[
            G("victim-pg", priority=MID, disruption="All", min_count=2),
            G("victim-pg2", priority=HIGH, disruption="All", min_count=2),
        ],
        preemptor=G("preemptor-pg", priority=HIGH, disruption="All"),
        members=[P().named("p-a").priority(HIGH), P().named("p-b").priority(HIGH), P().named("p-c").priority(HIGH)],
        victims={"v1", "v2"},
        code=Code.SUCCESS,
        group_disruptions=1,
    ),
]


def build(running: Sequence[P], nodes: Sequence[str], extra_pods: Sequence[P] = ()):
    """The snapshot (nodes in table order), every pod object, and pod uid -> group name."""
    pods = [p.obj() for p in running]
    infos = {name: NodeInfo(make_node(name).obj()) for name in nodes}
    for pod in pods:
        infos[pod.spec.node_name].add_pod(PodInfo(pod))
    members = [p.obj() for p in extra_pods]
    grouping = {pod.uid: p.group_name for p, pod in zip(running, pods, strict=True) if p.group_name}
    return Snapshot(infos.values()), pods, members, grouping


@pytest.mark.parametrize("case", SELECT_VICTIMS_ON_DOMAIN_CASES, ids=lambda c: c.name)
def test_select_victims_on_domain(case: DomainCase) -> None:
    snapshot, running, members, grouping = build(case.running, case.nodes, case.members)
    groups = Groups(case.groups, grouping, running)
    pdbs = [make_pdb("pdb", NAMESPACE, case.pdb_allowed, app="foo")] if case.pdb_allowed is not None else []
    framework = Framework([], [CapacityFilter(case.capacities)], [], [])
    preemptor = PodGroupPreemptor(
        NAMESPACE, case.preemptor.name, case.preemptor.group_priority, tuple(members), PREEMPT_LOWER_PRIORITY
    )
    before = {name: [pi.pod.name for pi in info.pods] for name, info in snapshot.node_info_map.items()}

    outcome = PodGroupEvaluator(framework).preempt(
        preemptor,
        round_robin_scheduling(members, case.preemptor, case.nodes, case.capacities),
        snapshot,
        pdbs,
        groups,
        NOW,
    )

    assert outcome.status.code == case.code, outcome.status.message
    assert {name: [pi.pod.name for pi in info.pods] for name, info in snapshot.node_info_map.items()} == before
    if case.code != Code.SUCCESS:
        return
    assert {pod.name for pod in outcome.victims} == case.victims
    assert outcome.num_pod_group_disruptions == case.group_disruptions
    assert outcome.num_pdb_violations == case.pdb_violations


def test_the_placed_members_are_nominated_and_the_unplaced_ones_are_not() -> None:
    """TestPodGroupEvaluator_SelectVictimsOnDomain_NominatedNodes."""
    snapshot, running, members, grouping = build(
        [P().named("p3").node("node1").priority(LOW)], ["node1"], [P().named("p1"), P().named("p2")]
    )
    groups = Groups([], grouping, running)
    p1, p2 = members

    def schedule(working: Snapshot) -> PodGroupAssignments:
        return PodGroupAssignments(
            [ProposedAssignment(PodInfo(p1), "node1", CycleState()), ProposedAssignment(PodInfo(p2), "", CycleState())],
            Status(Code.SUCCESS),
        )

    preemptor = PodGroupPreemptor(NAMESPACE, "preemptor-pg", HIGH, (p1, p2), PREEMPT_LOWER_PRIORITY)
    outcome = PodGroupEvaluator(Framework([], [], [], [])).preempt(preemptor, schedule, snapshot, [], groups, NOW)

    assert outcome.status.is_success
    assert outcome.nominations == {(NAMESPACE, "p1"): "node1"}


@dataclass
class PreemptCase:
    name: str
    running: list[P]
    groups: list[G]
    preemptor: G
    members: list[P]
    code: Code
    message: str
    nominations: dict[str, str] | None = None


PREEMPT_CASES = [
    PreemptCase(
        "a member nominated to a node where a lower-priority pod is still terminating waits for it",
        [P().named("victim").node("node1").priority(LOW).terminating()],
        [],
        G("preemptor-pg", priority=HIGH),
        [P().named("p1").priority(HIGH), P().named("p2").priority(HIGH).nominated("node1")],
        Code.SUCCESS,
        ONGOING_MESSAGE,
        {"p1": "", "p2": "node1"},
    ),
    PreemptCase(
        "the terminating pod's lower group priority counts, not its own higher priority",
        [P().named("victim").node("node1").priority(HIGH).group("victim-pg").terminating()],
        [G("victim-pg", priority=LOW, disruption="All")],
        G("preemptor-pg", priority=HIGH),
        [P().named("p1").priority(HIGH), P().named("p2").priority(HIGH).nominated("node1")],
        Code.SUCCESS,
        ONGOING_MESSAGE,
        {"p1": "", "p2": "node1"},
    ),
    PreemptCase(
        "the terminating pod's lower group priority counts in a Single group too",
        [P().named("victim").node("node1").priority(HIGH).group("victim-pg").terminating()],
        [G("victim-pg", priority=LOW)],
        G("preemptor-pg", priority=HIGH),
        [P().named("p1").priority(HIGH), P().named("p2").priority(HIGH).nominated("node1")],
        Code.SUCCESS,
        ONGOING_MESSAGE,
        {"p1": "", "p2": "node1"},
    ),
    PreemptCase(
        "a group whose preemptionPolicy is Never does not preempt",
        [P().named("p1").node("node1").priority(LOW), P().named("p2").node("node2").priority(LOW).group("pg1")],
        [],
        G("preemptor-pg", priority=HIGH, policy=PREEMPT_NEVER),
        [P().named("p-1").priority(HIGH), P().named("p-2").priority(HIGH)],
        Code.UNSCHEDULABLE,
        "not eligible due to preemptionPolicy=Never.",
    ),
    PreemptCase(
        "a group whose preemptionPolicy is Never does not preempt pod group victims either",
        [P().named("p1").node("node1").priority(LOW), P().named("p2").node("node2").priority(LOW).group("pg1")],
        [G("pg1", priority=LOW)],
        G("preemptor-pg", priority=HIGH, policy=PREEMPT_NEVER),
        [P().named("p-1").priority(HIGH), P().named("p-2").priority(HIGH)],
        Code.UNSCHEDULABLE,
        "not eligible due to preemptionPolicy=Never.",
    ),
]


@pytest.mark.parametrize("case", PREEMPT_CASES, ids=lambda c: c.name)
def test_preempt(case: PreemptCase) -> None:
    nodes, capacities = ["node1", "node2"], [("node1", 1), ("node2", 1)]
    snapshot, running, members, grouping = build(case.running, nodes, case.members)
    groups = Groups(case.groups, grouping, running)
    preemptor = new_pod_group_preemptor(NAMESPACE, case.preemptor.name, case.preemptor, members, True)
    scheduling = round_robin_scheduling(members, case.preemptor, nodes, capacities)

    outcome = PodGroupEvaluator(Framework([], [CapacityFilter(capacities)], [], [])).preempt(
        preemptor, scheduling, snapshot, [], groups, NOW
    )

    assert (outcome.status.code, outcome.status.message) == (case.code, case.message)
    expected = {(NAMESPACE, name): node for name, node in case.nominations.items()} if case.nominations else None
    assert outcome.nominations == expected
    assert outcome.victims == []


def test_with_the_policy_gate_the_groups_policy_wins_over_its_members() -> None:
    members = [make_pod("p").preemption_policy(PREEMPT_NEVER).obj()]
    assert resolve_preemption_policy(G("g", policy=PREEMPT_LOWER_PRIORITY), members, True) == PREEMPT_LOWER_PRIORITY
    assert resolve_preemption_policy(G("g"), members, True) == PREEMPT_LOWER_PRIORITY
    assert resolve_preemption_policy(G("g", policy=PREEMPT_NEVER), [], True) == PREEMPT_NEVER


def test_without_the_policy_gate_one_member_saying_never_stops_the_group() -> None:
    never = make_pod("a").preemption_policy(PREEMPT_NEVER).obj()
    lower = make_pod("b").obj()
    assert resolve_preemption_policy(G("g", policy=PREEMPT_LOWER_PRIORITY), [lower, never], False) == PREEMPT_NEVER
    assert resolve_preemption_policy(G("g", policy=PREEMPT_NEVER), [lower], False) == PREEMPT_LOWER_PRIORITY


def test_a_pod_is_judged_by_its_groups_priority_and_by_its_own_outside_one() -> None:
    grouped, lone, orphan = (
        make_pod("g").priority(HIGH).obj(),
        make_pod("l").priority(MID).obj(),
        make_pod("o").priority(MID).obj(),
    )
    groups = Groups([G("pg", priority=LOW)], {grouped.uid: "pg", orphan.uid: "missing"}, [])
    assert [get_pod_priority(p, groups) for p in (grouped, lone, orphan)] == [LOW, MID, MID]
    assert get_pod_priority(grouped, None) == HIGH


def test_an_all_group_is_one_victim_spanning_its_nodes_and_found_once() -> None:
    running = [
        P().named("a1").node("n1").priority(LOW).group("all"),
        P().named("s1").node("n1").priority(LOW).group("single"),
        P().named("a2").node("n2").priority(LOW).group("all"),
        P().named("x").node("n2").priority(MID),
    ]
    snapshot, pods, _, grouping = build(running, ["n1", "n2"])
    groups = Groups([G("all", priority=LOW, disruption="All"), G("single", priority=MID)], grouping, pods)

    victims = cross_nodes_victims(snapshot, groups, snapshot.node_info_list)

    assert [([p.name for p in v.pods], v.priority, v.kind, sorted(v.affected_nodes)) for v in victims] == [
        (["a1", "a2"], LOW, VictimKind.POD_GROUP, ["n1", "n2"]),
        (["s1"], MID, VictimKind.POD_GROUP, ["n1"]),
        (["x"], MID, VictimKind.POD, ["n2"]),
    ]
    # On one node only, the group still brings its member from the other node.
    on_n2 = cross_nodes_victims(snapshot, groups, [snapshot.get("n2")])
    assert [[p.name for p in v.pods] for v in on_n2] == [["a1", "a2"], ["x"]]


def test_victims_rank_by_priority_then_group_then_size_then_start_time() -> None:
    running = [
        P().named("plain").node("n1").priority(LOW).start_time(1),
        P().named("member").node("n1").priority(LOW).start_time(5).group("single"),
        P().named("big1").node("n1").priority(LOW).start_time(9).group("big"),
        P().named("big2").node("n1").priority(LOW).start_time(9).group("big"),
        P().named("high").node("n1").priority(MID).start_time(9),
    ]
    snapshot, pods, _, grouping = build(running, ["n1"])
    groups = Groups([G("single", priority=LOW), G("big", priority=LOW, disruption="All")], grouping, pods)

    ordered = sorted(cross_nodes_victims(snapshot, groups, snapshot.node_info_list), key=importance_key(NOW))

    assert [[p.name for p in v.pods] for v in ordered] == [["high"], ["big1", "big2"], ["member"], ["plain"]]


def test_a_group_violates_a_pdb_if_any_member_does() -> None:
    running = [
        P().named("g1").node("n1").priority(LOW).label("app", "foo").group("g"),
        P().named("g2").node("n1").priority(LOW).group("g"),
        P().named("p").node("n1").priority(LOW),
    ]
    snapshot, pods, _, grouping = build(running, ["n1"])
    groups = Groups([G("g", priority=LOW, disruption="All")], grouping, pods)
    victims = cross_nodes_victims(snapshot, groups, snapshot.node_info_list)

    violating, non_violating = filter_victims_with_pdb_violation(victims, [make_pdb("pdb", NAMESPACE, 0, app="foo")])

    assert [([p.name for p in v.victim.pods], v.violate_count) for v in violating] == [(["g1", "g2"], 1)]
    assert [[p.name for p in v.pods] for v in non_violating] == [["p"]]


def test_no_lower_priority_unit_anywhere_is_unresolvable() -> None:
    snapshot, pods, members, grouping = build(
        [P().named("p1").node("node1").priority(HIGH)], ["node1"], [P().named("p")]
    )
    preemptor = PodGroupPreemptor(NAMESPACE, "pg", HIGH, tuple(members), PREEMPT_LOWER_PRIORITY)
    outcome = PodGroupEvaluator(Framework([], [], [], [])).preempt(
        preemptor,
        round_robin_scheduling(members, G("pg"), ["node1"], [("node1", 1)]),
        snapshot,
        [],
        Groups([], grouping, pods),
        NOW,
    )
    assert (outcome.status.code, outcome.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pod group preemption: " + NO_VICTIMS_MESSAGE,
    )
