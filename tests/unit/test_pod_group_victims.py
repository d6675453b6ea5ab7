"""SelectVictimsOnNode with GenericWorkload on: victims are units (a pod, or a whole disruptionMode
All group across its nodes) at their group's priority. Ported from upstream's TestSelectVictimsOnNode
"Workload Aware" and "Cross-node PodGroup" cases (default_preemption_test.go)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from builders import make_node, make_pdb, make_pod
from podsched.api.types import Pod, PodDisruptionBudget
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.status import Code
from podsched.plugins.registry import build_framework
from podsched.preemption.eligibility import NOT_ELIGIBLE_TERMINATING, pod_eligible_to_preempt_others
from podsched.preemption.victims import select_victims_on_node
from podsched.queue.nominator import Nominator

LOW, MID, HIGH, VERY_HIGH = 0, 100, 1000, 10000  # upstream's lowPriority ... veryHighPriority
SMALL, MEDIUM, LARGE = (
    {"cpu": "100m", "memory": "100"},
    {"cpu": "200m", "memory": "200"},
    {"cpu": "300m", "memory": "300"},
)
NODE = {"cpu": "500m", "memory": "500", "pods": 110}  # veryLargeRes
NOW = 1_000_000.0


@dataclass(frozen=True)
class Group:
    name: str
    priority: int
    disruption_mode: str = "All"
    preemption_policy: str | None = None

    @property
    def group_priority(self) -> int:
        return self.priority


class Groups:
    """The PodGroup lister: groups by name, members by pod name."""

    def __init__(self, groups: Sequence[Group], members: dict[str, str], pods: Sequence[Pod]) -> None:
        self.groups = {g.name: g for g in groups}
        self.members = members
        self.pods = pods

    def pod_group(self, namespace: str, name: str) -> Group | None:
        return self.groups.get(name)

    def pod_group_name(self, pod: Pod) -> str | None:
        return self.members.get(pod.name)

    def scheduled_pods(self, namespace: str, name: str) -> list[Pod]:
        return [p for p in self.pods if self.members.get(p.name) == name and p.spec.node_name]


@dataclass
class UnitCase:
    name: str
    pods: list[Pod]
    preemptor: Pod
    expected: set[str] | None  # None: the node is no candidate
    groups: list[Group] = field(default_factory=list)
    members: dict[str, str] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    violations: int = 0
    nodes: tuple[tuple[str, str], ...] = (("node1", "z1"),)  # (name, zone)
    main: str = "node1"


def pod(name: str, node: str, priority: int, **requests: str) -> Pod:
    return make_pod(name).priority(priority).req(**requests).node(node).obj()


def labelled(name: str, node: str, priority: int, **requests: str) -> Pod:
    return make_pod(name).priority(priority).label("app", "foo").req(**requests).node(node).obj()


FOO_PDB = [make_pdb("pdb", allowed=0, app="foo")]

CASES = [
    UnitCase(
        "Workload Aware: Atomic preemption of PodGroup",
        [pod("g1-1", "node1", LOW, **SMALL), pod("g1-2", "node1", LOW, **MEDIUM)],
        make_pod("p").priority(HIGH).req(**LARGE).obj(),
        {"g1-1", "g1-2"},
        [Group("pg1", LOW)],
        {"g1-1": "pg1", "g1-2": "pg1"},
    ),
    UnitCase(
        "Workload Aware: prefer single pod over podGroup for preemption candidate",
        [pod("p1", "node1", LOW, **SMALL), pod("g1-1", "node1", LOW, **SMALL), pod("g1-2", "node1", LOW, **SMALL)],
        make_pod("p").priority(HIGH).req(**LARGE).obj(),
        {"p1"},
        [Group("pg1", LOW)],
        {"g1-1": "pg1", "g1-2": "pg1"},
    ),
    UnitCase(
        "Workload Aware: preempt lower priority pod group instead of higher priority single pod",
        [pod("p1", "node1", HIGH, **MEDIUM), pod("g1-1", "node1", LOW, **MEDIUM)],
        make_pod("p").priority(VERY_HIGH).req(**LARGE).obj(),
        {"g1-1"},
        [Group("pg1", LOW)],
        {"g1-1": "pg1"},
    ),
    UnitCase(
        "Workload Aware: preempt lower priority single pod instead of higher priority pod group",
        [pod("p1", "node1", LOW, **MEDIUM), pod("g1-1", "node1", HIGH, **MEDIUM)],
        make_pod("p").priority(VERY_HIGH).req(**LARGE).obj(),
        {"p1"},
        [Group("pg1", HIGH)],
        {"g1-1": "pg1"},
    ),
    UnitCase(
        "Workload Aware: PDB: PodGroup as victim with 2 PDB violations",
        [labelled("g1-1", "node1", LOW, **MEDIUM), labelled("g1-2", "node1", LOW, **MEDIUM)],
        make_pod("p").priority(HIGH).req(**LARGE).obj(),
        {"g1-1", "g1-2"},
        [Group("pg1", LOW)],
        {"g1-1": "pg1", "g1-2": "pg1"},
        FOO_PDB,
        violations=2,
    ),
    UnitCase(
        "Workload Aware: PDB: Prefer non-violating PodGroup over lower-priority violating PodGroup (All)",
        [labelled("g1-1", "node1", LOW, **MEDIUM), pod("g2-1", "node1", MID, **MEDIUM)],
        make_pod("p").priority(HIGH).req(**LARGE).obj(),
        {"g2-1"},
        [Group("pg-violating", LOW), Group("pg-non-violating", MID)],
        {"g1-1": "pg-violating", "g2-1": "pg-non-violating"},
        FOO_PDB,
    ),
    UnitCase(
        "Workload Aware: PDB: Prefer non-violating PodGroup over lower-priority violating PodGroup (Single)",
        [labelled("g1-1", "node1", LOW, **MEDIUM), pod("g2-1", "node1", MID, **MEDIUM)],
        make_pod("p").priority(HIGH).req(**LARGE).obj(),
        {"g2-1"},
        [Group("pg-violating", LOW, "Single"), Group("pg-non-violating", MID, "Single")],
        {"g1-1": "pg-violating", "g2-1": "pg-non-violating"},
        FOO_PDB,
    ),
    UnitCase(
        "a pod of a higher-priority group is no victim even though its own priority is lower",
        [pod("g1-1", "node1", LOW, **LARGE)],
        make_pod("p").priority(MID).req(**LARGE).obj(),
        None,
        [Group("pg1", HIGH, "Single")],
        {"g1-1": "pg1"},
    ),
    UnitCase(
        "Cross-node PodGroup: zone anti-affinity blocks reprieve via PreFilterExtension on node-a",
        [
            make_pod("pod-x").priority(LOW).node("node-a").obj(),
            make_pod("pod-y").priority(LOW).label("foo", "").node("node-b").obj(),
        ],
        make_pod("p").priority(HIGH).pod_anti_affinity("zone", foo="").obj(),
        {"pod-x", "pod-y"},
        [Group("pg1", LOW)],
        {"pod-x": "pg1", "pod-y": "pg1"},
        nodes=(("node-a", "zone1"), ("node-b", "zone1")),
        main="node-a",
    ),
    UnitCase(
        "Cross-node PodGroup: zone anti-affinity blocks reprieve via PreFilterExtension on node-b",
        [
            make_pod("pod-x").priority(LOW).node("node-a").obj(),
            make_pod("pod-y").priority(LOW).label("foo", "").node("node-b").obj(),
        ],
        make_pod("p").priority(HIGH).pod_anti_affinity("zone", foo="").obj(),
        {"pod-x", "pod-y"},
        [Group("pg1", LOW)],
        {"pod-x": "pg1", "pod-y": "pg1"},
        nodes=(("node-a", "zone1"), ("node-b", "zone1")),
        main="node-b",
    ),
]


def snapshot_of(nodes: Sequence[tuple[str, str]], pods: Sequence[Pod]) -> Snapshot:
    infos = {name: NodeInfo(make_node(name).capacity(**NODE).label("zone", zone).obj()) for name, zone in nodes}
    for p in pods:
        infos[p.spec.node_name].add_pod(PodInfo(p))
    return Snapshot(infos.values())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_select_victim_units_on_node(case: UnitCase) -> None:
    snapshot = snapshot_of(case.nodes, case.pods)
    groups = Groups(case.groups, case.members, case.pods)
    framework = build_framework(SchedulerConfig(), Nominator())
    state = CycleState()
    framework.run_pre_filter_plugins(state, case.preemptor, snapshot.node_info_list)
    main = snapshot.get(case.main)
    assert main is not None
    before = {n.name: len(n.pods) for n in snapshot.node_info_list}

    outcome = select_victims_on_node(
        framework, state, case.preemptor, main.clone(), case.pdbs, NOW, pod_groups=groups, snapshot=snapshot
    )

    if case.expected is None:
        assert outcome.status is not None and outcome.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    else:
        assert outcome.status is None, outcome.status
        assert {p.name for p in outcome.victims} == case.expected
        assert outcome.num_pdb_violations == case.violations
    assert {n.name: len(n.pods) for n in snapshot.node_info_list} == before, "the dry run changes no real node"


def test_a_terminating_member_of_a_lower_priority_group_makes_the_preemptor_wait() -> None:
    """PodEligibleToPreemptOthers counts the terminating pod at its group's priority."""
    terminating = make_pod("victim").priority(HIGH).node("n1").terminating().obj()
    snapshot = snapshot_of((("n1", "z"),), [terminating])
    preemptor = make_pod("p").priority(MID).nominated("n1").obj()
    groups = Groups([Group("pg", LOW)], {"victim": "pg"}, [terminating])
    assert pod_eligible_to_preempt_others(preemptor, snapshot, None) == (True, "")
    assert pod_eligible_to_preempt_others(preemptor, snapshot, None, groups) == (False, NOT_ELIGIBLE_TERMINATING)
