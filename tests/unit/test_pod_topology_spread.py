"""PodTopologySpread, ported from upstream's TestSingleConstraint, TestMultipleConstraints,
TestPreFilterStateAddPod/RemovePod (filtering_test.go) and TestPodTopologySpreadScore
(scoring_test.go) in pkg/scheduler/framework/plugins/podtopologyspread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from builders import change_through_extension, make_node, make_pod
from podsched.api.types import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    Affinity,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    TopologySpreadConstraint,
)
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo, PodInfo
from podsched.framework.status import Code, Status
from podsched.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    LABEL_HOSTNAME,
    PodTopologySpread,
    _CriticalPaths,
)

OK = Code.SUCCESS
UNSCHEDULABLE = Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# --- local builders ------------------------------------------------------------------------------


def exists(key: str) -> LabelSelector:
    return LabelSelector(match_expressions=(LabelSelectorRequirement(key, "Exists"),))


FOO_EXISTS = exists("foo")


def spread(
    max_skew: int,
    topology_key: str,
    when: str = DO_NOT_SCHEDULE,
    selector: LabelSelector | None = FOO_EXISTS,
    *,
    min_domains: int | None = None,
    node_affinity_policy: str = "Honor",
    node_taints_policy: str = "Ignore",
    match_label_keys: tuple[str, ...] = (),
) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(
        max_skew,
        topology_key,
        when,
        selector,
        min_domains,
        node_affinity_policy,
        node_taints_policy,
        match_label_keys,
    )


def pod(
    name: str = "p",
    *,
    labels: dict[str, str] | None = None,
    node: str = "",
    namespace: str = "default",
    constraints: Sequence[TopologySpreadConstraint] = (),
    terminating: bool = False,
    node_affinity_exists: str = "",
    node_selector: dict[str, str] | None = None,
) -> Pod:
    builder = make_pod(name, namespace)
    for key, value in ({"foo": ""} if labels is None else labels).items():
        builder.label(key, value)
    if node:
        builder.node(node)
    if terminating:
        builder.terminating(by_preemption=False)
    if node_selector:
        builder.node_selector(**node_selector)
    obj = builder.obj()
    obj.spec.topology_spread_constraints = tuple(constraints)
    if node_affinity_exists:
        requirement = NodeSelectorRequirement(node_affinity_exists, "Exists")
        obj.spec.affinity = Affinity(
            node_affinity=NodeAffinity(required=(NodeSelectorTerm(match_expressions=(requirement,)),))
        )
    return obj


def pods_on(node_name: str, count: int, **kwargs: object) -> list[Pod]:
    return [pod(f"p-{node_name}-{i}", node=node_name, **kwargs) for i in range(count)]  # type: ignore[arg-type]


def node(name: str, *, taint: str = "", **labels: str) -> Node:
    builder = make_node(name)
    for key, value in labels.items():
        builder.label(key, value)
    if taint:
        builder.taint(taint)
    return builder.obj()


def zone_nodes() -> list[Node]:
    """node-a and node-b in zone1, node-x and node-y in zone2; each labelled `node: <name>`."""
    return [
        node(name, zone=zone, node=name)
        for name, zone in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))
    ]


def cluster(nodes: Sequence[Node], pods: Sequence[Pod]) -> list[NodeInfo]:
    infos = {n.name: NodeInfo(n) for n in nodes}
    for p in pods:
        infos[p.spec.node_name].add_pod(PodInfo(p))
    return list(infos.values())


def codes(plugin: PodTopologySpread, state: CycleState, incoming: Pod, node_infos: Sequence[NodeInfo]) -> list[Code]:
    statuses = [plugin.filter(state, incoming, n) for n in node_infos]
    return [OK if s is None else s.code for s in statuses]


# 2/1/0/3 matching pods on node-a/node-b/node-x/node-y.
SPREAD_2_1_0_3 = pods_on("node-a", 2) + pods_on("node-b", 1) + pods_on("node-y", 3)


# --- Filter --------------------------------------------------------------------------------------


@dataclass
class FilterCase:
    name: str
    pod: Pod
    pods: list[Pod]
    want: list[Code]
    nodes: list[Node] = field(default_factory=zone_nodes)


FILTER_CASES = [
    FilterCase("with no existing pods every node fits", pod(constraints=[spread(1, "zone")]), [], [OK, OK, OK, OK]),
    FilterCase(
        "with no existing pods every node fits even when the pod does not match itself",
        pod(constraints=[spread(1, "zone", selector=exists("bar"))]),
        [],
        [OK, OK, OK, OK],
    ),
    FilterCase(
        "existing pods in a different namespace do not count",
        pod(constraints=[spread(1, "zone")]),
        [
            pod("p-a1", namespace="ns1", node="node-a"),
            pod("p-b1", namespace="ns2", node="node-a"),
            pod("p-x1", node="node-x"),
            pod("p-y1", node="node-y"),
        ],
        [OK, OK, UNSCHEDULABLE, UNSCHEDULABLE],
    ),
    FilterCase(
        "pods spread across zones as 3/3: every node fits",
        pod(constraints=[spread(1, "zone")]),
        pods_on("node-a", 2) + pods_on("node-b", 1) + pods_on("node-y", 3),
        [OK, OK, OK, OK],
    ),
    FilterCase(
        "a node lacking the zone label is unresolvable and its pods do not count (spread 1/2)",
        pod(constraints=[spread(1, "zone")]),
        pods_on("node-a", 1) + pods_on("node-b", 1) + pods_on("node-x", 1) + pods_on("node-y", 1),
        [OK, UNRESOLVABLE, UNSCHEDULABLE, UNSCHEDULABLE],
        nodes=[
            node("node-a", zone="zone1", node="node-a"),
            node("node-b", zon="zone1", node="node-b"),
            node("node-x", zone="zone2", node="node-x"),
            node("node-y", zone="zone2", node="node-y"),
        ],
    ),
    FilterCase(
        "no node has the rack label, so every node is unresolvable",
        pod(constraints=[spread(1, "rack")]),
        [],
        [UNRESOLVABLE, UNRESOLVABLE, UNRESOLVABLE, UNRESOLVABLE],
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3: only node-x fits with maxSkew 1",
        pod(constraints=[spread(1, "node")]),
        SPREAD_2_1_0_3,
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, UNSCHEDULABLE],
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3: node-b and node-x fit with maxSkew 2",
        pod(constraints=[spread(2, "node")]),
        SPREAD_2_1_0_3,
        [UNSCHEDULABLE, OK, OK, UNSCHEDULABLE],
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3 and the pod does not match itself: node-b and node-x fit",
        pod(labels={"bar": ""}, constraints=[spread(1, "node")]),
        SPREAD_2_1_0_3,
        [UNSCHEDULABLE, OK, OK, UNSCHEDULABLE],
    ),
    FilterCase(
        "only nodes matching the pod's node affinity count (2/~1~/~0~/3), so node-a fits",
        pod(node_affinity_exists="affine", constraints=[spread(1, "node")]),
        SPREAD_2_1_0_3,
        # node-b and node-x fit here only because NodeAffinity's own Filter is not running.
        [OK, OK, OK, UNSCHEDULABLE],
        nodes=[
            node("node-a", zone="zone1", node="node-a", affine=""),
            node("node-b", zone="zone1", node="node-b"),
            node("node-x", zone="zone2", node="node-x"),
            node("node-y", zone="zone2", node="node-y", affine=""),
        ],
    ),
    FilterCase(
        "terminating pods do not count",
        pod(constraints=[spread(1, "node")]),
        [pod("p-a", node="node-a", terminating=True), pod("p-b", node="node-b")],
        [OK, UNSCHEDULABLE],
        nodes=[node("node-a", node="node-a"), node("node-b", node="node-b")],
    ),
    FilterCase(
        "two constraints on zone and node (3/3 and 2/1/0/3): only node-x satisfies both",
        pod(constraints=[spread(1, "zone"), spread(1, "node")]),
        SPREAD_2_1_0_3,
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, UNSCHEDULABLE],
    ),
    FilterCase(
        "two constraints on zone and node (3/2 and 3/0/1/1): zones allow x and y, nodes only b: none fits",
        pod(constraints=[spread(1, "zone"), spread(1, "node")]),
        pods_on("node-a", 3) + pods_on("node-x", 1) + pods_on("node-y", 1),
        [UNSCHEDULABLE, UNSCHEDULABLE, UNSCHEDULABLE, UNSCHEDULABLE],
    ),
    FilterCase(
        "minDomains above the number of domains makes the global minimum 0",
        pod(constraints=[spread(2, "zone", min_domains=3)]),
        pods_on("node-a", 1) + pods_on("node-b", 1) + pods_on("node-x", 1) + pods_on("node-y", 1),
        [UNSCHEDULABLE, UNSCHEDULABLE, UNSCHEDULABLE, UNSCHEDULABLE],
    ),
    FilterCase(
        "minDomains equal to the number of domains keeps the real global minimum",
        pod(constraints=[spread(2, "zone", min_domains=2)]),
        pods_on("node-a", 1) + pods_on("node-b", 1) + pods_on("node-x", 1) + pods_on("node-y", 1),
        [OK, OK, OK, OK],
    ),
    FilterCase(
        "minDomains above the number of nodes makes one more pod on any node exceed maxSkew",
        pod(constraints=[spread(1, "node", min_domains=5)]),
        pods_on("node-a", 1) + pods_on("node-b", 1) + pods_on("node-x", 1) + pods_on("node-y", 1),
        [UNSCHEDULABLE, UNSCHEDULABLE, UNSCHEDULABLE, UNSCHEDULABLE],
    ),
    FilterCase(
        "nodeAffinityPolicy Honor leaves a zone the pod cannot select out of the minimum",
        pod(node_selector={"disk": "ssd"}, constraints=[spread(1, "zone")]),
        pods_on("node-a", 1) + pods_on("node-x", 1),
        [OK, OK, OK],
        nodes=[
            node("node-a", zone="zone1", disk="ssd"),
            node("node-x", zone="zone2", disk="ssd"),
            node("node-z", zone="zone3"),
        ],
    ),
    FilterCase(
        "nodeAffinityPolicy Ignore counts the empty zone the pod cannot select, so the others are full",
        pod(node_selector={"disk": "ssd"}, constraints=[spread(1, "zone", node_affinity_policy="Ignore")]),
        pods_on("node-a", 1) + pods_on("node-x", 1),
        [UNSCHEDULABLE, UNSCHEDULABLE, OK],
        nodes=[
            node("node-a", zone="zone1", disk="ssd"),
            node("node-x", zone="zone2", disk="ssd"),
            node("node-z", zone="zone3"),
        ],
    ),
    FilterCase(
        "nodeTaintsPolicy Ignore (the default) counts the empty zone on a tainted node",
        pod(constraints=[spread(1, "zone")]),
        pods_on("node-a", 1) + pods_on("node-x", 1),
        [UNSCHEDULABLE, UNSCHEDULABLE, OK],
        nodes=[
            node("node-a", zone="zone1"),
            node("node-x", zone="zone2"),
            node("node-z", zone="zone3", taint="t"),
        ],
    ),
    FilterCase(
        "nodeTaintsPolicy Honor leaves a zone on an untolerated tainted node out of the minimum",
        pod(constraints=[spread(1, "zone", node_taints_policy="Honor")]),
        pods_on("node-a", 1) + pods_on("node-x", 1),
        [OK, OK, OK],
        nodes=[
            node("node-a", zone="zone1"),
            node("node-x", zone="zone2"),
            node("node-z", zone="zone3", taint="t"),
        ],
    ),
    FilterCase(
        "matchLabelKeys restrict counting to pods with the same value (the other revision is ignored)",
        pod(labels={"foo": "", "rev": "v2"}, constraints=[spread(1, "node", match_label_keys=("rev",))]),
        pods_on("node-a", 2, labels={"foo": "", "rev": "v1"}) + pods_on("node-b", 1, labels={"foo": "", "rev": "v2"}),
        [OK, UNSCHEDULABLE],
        nodes=[node("node-a", node="node-a"), node("node-b", node="node-b")],
    ),
    FilterCase(
        "without matchLabelKeys every revision counts",
        pod(labels={"foo": "", "rev": "v2"}, constraints=[spread(1, "node")]),
        pods_on("node-a", 2, labels={"foo": "", "rev": "v1"}) + pods_on("node-b", 1, labels={"foo": "", "rev": "v2"}),
        [UNSCHEDULABLE, OK],
        nodes=[node("node-a", node="node-a"), node("node-b", node="node-b")],
    ),
    FilterCase(
        "an empty label selector counts no existing pod (upstream's countPodsMatchSelector), so all fit",
        pod(constraints=[spread(1, "node", selector=LabelSelector())]),
        SPREAD_2_1_0_3,
        [OK, OK, OK, OK],
    ),
    FilterCase(
        "a missing label selector selects nothing, so all fit",
        pod(constraints=[spread(1, "node", selector=None)]),
        SPREAD_2_1_0_3,
        [OK, OK, OK, OK],
    ),
    FilterCase(
        "a ScheduleAnyway constraint does not filter",
        pod(constraints=[spread(1, "node", SCHEDULE_ANYWAY), spread(1, "zone")]),
        SPREAD_2_1_0_3,
        [OK, OK, OK, OK],
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=lambda c: c.name)
def test_filter(case: FilterCase) -> None:
    plugin = PodTopologySpread()
    node_infos = cluster(case.nodes, case.pods)
    state = CycleState()
    _, status = plugin.pre_filter(state, case.pod, node_infos)
    assert status is None
    assert codes(plugin, state, case.pod, node_infos) == case.want


def test_filter_reasons_are_upstreams() -> None:
    plugin = PodTopologySpread()
    node_infos = cluster(
        [node("node-a", zone="zone1"), node("node-b"), node("node-x", zone="zone2")], pods_on("node-a", 2)
    )
    incoming = pod(constraints=[spread(1, "zone")])
    state = CycleState()
    plugin.pre_filter(state, incoming, node_infos)
    assert plugin.filter(state, incoming, node_infos[0]) == Status.unschedulable(
        "PodTopologySpread", ERR_REASON_CONSTRAINTS_NOT_MATCH
    )
    assert plugin.filter(state, incoming, node_infos[1]) == Status.unresolvable(
        "PodTopologySpread", ERR_REASON_NODE_LABEL_NOT_MATCH
    )
    assert (
        ERR_REASON_NODE_LABEL_NOT_MATCH
        == "node(s) didn't match pod topology spread constraints (missing required label)"
    )


@pytest.mark.parametrize(
    "constraints",
    [(), (spread(1, "zone", SCHEDULE_ANYWAY),)],
    ids=["a pod without constraints skips Filter", "a pod with only ScheduleAnyway constraints skips Filter"],
)
def test_pre_filter_skips_without_do_not_schedule_constraints(
    constraints: tuple[TopologySpreadConstraint, ...],
) -> None:
    _, status = PodTopologySpread().pre_filter(CycleState(), pod(constraints=constraints), cluster(zone_nodes(), []))
    assert status is not None and status.code == Code.SKIP


# --- AddPod / RemovePod --------------------------------------------------------------------------


@dataclass
class AddRemoveCase:
    name: str
    pod: Pod
    pods: list[Pod]
    change: str  # "add" or "remove"
    changed_pod: Pod
    want_before: list[Code]
    want_after: list[Code]
    nodes: list[Node] = field(default_factory=zone_nodes)


ADD_REMOVE_CASES = [
    AddRemoveCase(
        "adding a matching pod to the emptiest node raises the minimum and frees the others",
        pod(constraints=[spread(1, "node")]),
        pods_on("node-a", 1) + pods_on("node-b", 1) + pods_on("node-y", 1),
        "add",
        pod("new", node="node-x"),
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, UNSCHEDULABLE],
        [OK, OK, OK, OK],
    ),
    AddRemoveCase(
        "adding a matching pod in another namespace changes nothing",
        pod(constraints=[spread(1, "node")]),
        pods_on("node-a", 1) + pods_on("node-b", 1) + pods_on("node-y", 1),
        "add",
        pod("new", node="node-x", namespace="other"),
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, UNSCHEDULABLE],
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, UNSCHEDULABLE],
    ),
    AddRemoveCase(
        "adding a pod that does not match the selector changes nothing",
        pod(constraints=[spread(1, "node")]),
        pods_on("node-a", 1) + pods_on("node-b", 1) + pods_on("node-y", 1),
        "add",
        pod("new", node="node-x", labels={"bar": ""}),
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, UNSCHEDULABLE],
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, UNSCHEDULABLE],
    ),
    AddRemoveCase(
        "removing a matching pod (a preemption victim) from a crowded zone makes it fit",
        pod(constraints=[spread(1, "zone")]),
        pods_on("node-a", 2) + pods_on("node-x", 1),
        "remove",
        pod("p-node-a-0", node="node-a"),
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, OK],
        [OK, OK, OK, OK],
    ),
    AddRemoveCase(
        "removing the only pod of the least crowded node lowers the minimum",
        pod(constraints=[spread(1, "node")]),
        pods_on("node-a", 1) + pods_on("node-b", 1) + pods_on("node-x", 1) + pods_on("node-y", 1),
        "remove",
        pod("p-node-x-0", node="node-x"),
        [OK, OK, OK, OK],
        [UNSCHEDULABLE, UNSCHEDULABLE, OK, UNSCHEDULABLE],
    ),
    AddRemoveCase(
        "a pod on a node the preemptor's node affinity excludes is not counted (Honor)",
        pod(node_affinity_exists="affine", constraints=[spread(1, "node")]),
        pods_on("node-a", 2),
        "add",
        pod("new", node="node-b"),
        # Counting the new pod would make node-b the minimum (1) and node-a's skew 2.
        [OK, OK],
        [OK, OK],
        nodes=[node("node-a", node="node-a", affine=""), node("node-b", node="node-b")],
    ),
]


@pytest.mark.parametrize("case", ADD_REMOVE_CASES, ids=lambda c: c.name)
def test_add_pod_and_remove_pod_change_the_filter_outcome_on_a_clone_only(case: AddRemoveCase) -> None:
    plugin = PodTopologySpread()
    node_infos = cluster(case.nodes, case.pods)
    state = CycleState()
    _, status = plugin.pre_filter(state, case.pod, node_infos)
    assert status is None
    assert codes(plugin, state, case.pod, node_infos) == case.want_before

    what_if, after = change_through_extension(plugin, state, case.pod, node_infos, case.change, case.changed_pod)
    assert codes(plugin, what_if, case.pod, after) == case.want_after
    assert codes(plugin, state, case.pod, node_infos) == case.want_before


def test_remove_then_add_back_restores_the_filter_outcome_like_a_reprieve() -> None:
    plugin = PodTopologySpread()
    incoming = pod(constraints=[spread(1, "node")])
    node_infos = cluster(zone_nodes(), SPREAD_2_1_0_3)
    state = CycleState()
    plugin.pre_filter(state, incoming, node_infos)
    before = codes(plugin, state, incoming, node_infos)
    node_y = node_infos[3]
    for victim in list(node_y.pods):
        assert plugin.remove_pod(state, incoming, victim, node_y) is None
    for victim in list(node_y.pods):
        assert plugin.add_pod(state, incoming, victim, node_y) is None
    assert codes(plugin, state, incoming, node_infos) == before


def test_extensions_without_pre_filter_state_report_an_error() -> None:
    node_info = NodeInfo(zone_nodes()[0])
    status = PodTopologySpread().remove_pod(CycleState(), pod(), PodInfo(pod("x", node="node-a")), node_info)
    assert status is not None and status.code == Code.ERROR


@pytest.mark.parametrize(
    ("updates", "want_min"),
    [
        ([("a", 0), ("b", 1)], 0),
        ([("b", 1), ("a", 0)], 0),
        ([("a", 0), ("b", 1), ("a", 1)], 1),
        ([("a", 3), ("b", 2), ("c", 1), ("c", 2)], 2),
        # Only two values are tracked: after "c" left the two, raising "b" above "c" is not seen.
        ([("a", 1), ("b", 2), ("c", 2), ("a", 2), ("a", 3), ("b", 3)], 3),
    ],
    ids=[
        "the smaller of two values is the minimum",
        "the minimum does not depend on the order values arrive",
        "raising the minimum's value promotes the other tracked value",
        "a value moving up keeps the minimum among the two tracked values",
        "like upstream, a third value that dropped out of the two tracked ones is forgotten",
    ],
)
def test_critical_paths_keep_the_minimum_of_two_tracked_values(updates: list[tuple[str, int]], want_min: int) -> None:
    paths = _CriticalPaths()
    for value, num in updates:
        paths.update(value, num)
    assert paths.nums[0] == want_min
    assert paths.nums[0] <= paths.nums[1]


# --- Score ---------------------------------------------------------------------------------------


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    pods: list[Pod]
    want: list[int]
    nodes: list[Node] = field(default_factory=zone_nodes)
    scored: list[str] | None = None  # nodes that passed Filter (default: all)


def hostnames() -> list[Node]:
    return [node(name, **{LABEL_HOSTNAME: name}) for name in ("node-a", "node-b", "node-x", "node-y")]


SCORE_CASES = [
    ScoreCase(
        "with no existing pods every node scores the maximum",
        pod(constraints=[spread(1, "node", SCHEDULE_ANYWAY)]),
        [],
        [100, 100, 100, 100],
    ),
    ScoreCase(
        "pods spread 2/1/0/3 across nodes: the emptiest node scores highest",
        pod(constraints=[spread(1, "node", SCHEDULE_ANYWAY)]),
        SPREAD_2_1_0_3,
        [20, 60, 100, 0],
    ),
    ScoreCase(
        "a hostname constraint counts each node's own pods in Score and scores the same",
        pod(constraints=[spread(1, LABEL_HOSTNAME, SCHEDULE_ANYWAY)]),
        SPREAD_2_1_0_3,
        [20, 60, 100, 0],
        nodes=hostnames(),
    ),
    ScoreCase(
        "only one node is a candidate: it scores the maximum",
        pod(constraints=[spread(1, "node", SCHEDULE_ANYWAY)]),
        SPREAD_2_1_0_3,
        [100],
        scored=["node-a"],
    ),
    ScoreCase(
        "pods spread 3/1 across zones; a node lacking the zone label scores 0",
        pod(constraints=[spread(1, "zone", SCHEDULE_ANYWAY)]),
        pods_on("node-a", 2) + pods_on("node-b", 1) + pods_on("node-y", 1),
        [25, 25, 100, 100, 0],
        nodes=[*zone_nodes(), node("node-z", node="node-z")],
    ),
    ScoreCase(
        "pods on nodes that did not pass Filter still count for their zone",
        pod(constraints=[spread(1, "zone", SCHEDULE_ANYWAY)]),
        pods_on("node-a", 2) + pods_on("node-y", 1),
        [33, 100],
        scored=["node-b", "node-x"],
    ),
    ScoreCase(
        "nodeAffinityPolicy Honor: pods on nodes the pod cannot select do not count",
        pod(node_affinity_exists="affine", constraints=[spread(1, "zone", SCHEDULE_ANYWAY)]),
        pods_on("node-b", 3) + pods_on("node-x", 1),
        [100, 0],
        nodes=[
            node("node-a", zone="zone1", affine=""),
            node("node-b", zone="zone1"),
            node("node-x", zone="zone2", affine=""),
        ],
        scored=["node-a", "node-x"],
    ),
    ScoreCase(
        "nodeAffinityPolicy Ignore: pods on nodes the pod cannot select count",
        pod(
            node_affinity_exists="affine",
            constraints=[spread(1, "zone", SCHEDULE_ANYWAY, node_affinity_policy="Ignore")],
        ),
        pods_on("node-b", 3) + pods_on("node-x", 1),
        [25, 100],
        nodes=[
            node("node-a", zone="zone1", affine=""),
            node("node-b", zone="zone1"),
            node("node-x", zone="zone2", affine=""),
        ],
        scored=["node-a", "node-x"],
    ),
    ScoreCase(
        "a larger maxSkew waters the differences down",
        pod(constraints=[spread(5, "node", SCHEDULE_ANYWAY)]),
        SPREAD_2_1_0_3,
        # raw round(count * log(6) + 4): 8, 6, 4, 9
        [55, 77, 100, 44],
    ),
    ScoreCase(
        "two ScheduleAnyway constraints add up",
        pod(constraints=[spread(1, "zone", SCHEDULE_ANYWAY), spread(1, "node", SCHEDULE_ANYWAY)]),
        SPREAD_2_1_0_3,
        # raw round(zone * log(4) + node * log(6)): 8, 6, 4, 10
        [60, 80, 100, 40],
    ),
]


def run_score(plugin: PodTopologySpread, incoming: Pod, scored: list[NodeInfo], state: CycleState) -> list[int]:
    status = plugin.pre_score(state, incoming, scored)
    assert status is None
    scores = [plugin.score(state, incoming, n) for n in scored]
    plugin.normalize_score(state, incoming, scores)
    return scores


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_score(case: ScoreCase) -> None:
    node_infos = cluster(case.nodes, case.pods)
    scored = [n for n in node_infos if case.scored is None or n.name in case.scored]
    plugin = PodTopologySpread(all_nodes=lambda: node_infos)
    assert run_score(plugin, case.pod, scored, CycleState()) == case.want


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_score_without_a_lister_uses_the_nodes_pre_filter_saw(case: ScoreCase) -> None:
    node_infos = cluster(case.nodes, case.pods)
    scored = [n for n in node_infos if case.scored is None or n.name in case.scored]
    plugin = PodTopologySpread()
    state = CycleState()
    plugin.pre_filter(state, case.pod, node_infos)
    assert run_score(plugin, case.pod, scored, state) == case.want


@pytest.mark.parametrize(
    "constraints",
    [(), (spread(1, "zone"),)],
    ids=["a pod without constraints skips Score", "a pod with only DoNotSchedule constraints skips Score"],
)
def test_pre_score_skips_without_schedule_anyway_constraints(
    constraints: tuple[TopologySpreadConstraint, ...],
) -> None:
    node_infos = cluster(zone_nodes(), [])
    status = PodTopologySpread(all_nodes=lambda: node_infos).pre_score(
        CycleState(), pod(constraints=constraints), node_infos
    )
    assert status is not None and status.code == Code.SKIP


def test_normalize_score_rejects_scores_not_aligned_with_the_pre_scored_nodes() -> None:
    node_infos = cluster(zone_nodes(), [])
    plugin = PodTopologySpread(all_nodes=lambda: node_infos)
    state = CycleState()
    incoming = pod(constraints=[spread(1, "zone", SCHEDULE_ANYWAY)])
    plugin.pre_score(state, incoming, node_infos)
    with pytest.raises(ValueError, match="scores for the 4 nodes"):
        plugin.normalize_score(state, incoming, [0, 0])
