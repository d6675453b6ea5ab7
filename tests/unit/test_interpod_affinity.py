"""InterPodAffinity, ported from upstream's TestRequiredAffinitySingleNode,
TestRequiredAffinityMultipleNodes, TestPreFilterStateAddRemovePod (filtering_test.go) and
TestPreferredAffinity (scoring_test.go) in pkg/scheduler/framework/plugins/interpodaffinity.

Namespaces: podsched has no Namespace objects, so a namespaceSelector can only select on the
well-known `kubernetes.io/metadata.name` label; upstream's `team` label cases select on that instead."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from builders import change_through_extension, make_node, make_pod
from podsched.api.types import (
    NAMESPACE_NAME_LABEL,
    Affinity,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
)
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo, PodInfo
from podsched.framework.status import Code, Status
from podsched.plugins.interpod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
)

PLUGIN = "InterPodAffinity"
AFFINITY_NOT_MATCH = Status.unresolvable(PLUGIN, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI_AFFINITY_NOT_MATCH = Status.unschedulable(PLUGIN, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING_ANTI_AFFINITY_NOT_MATCH = Status.unschedulable(PLUGIN, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
SKIP = Status(Code.SKIP)


# --- local builders ------------------------------------------------------------------------------


def expr(key: str, operator: str, *values: str) -> LabelSelector:
    return LabelSelector(match_expressions=(LabelSelectorRequirement(key, operator, tuple(values)),))


def all_of(*selectors: LabelSelector) -> LabelSelector:
    return LabelSelector(match_expressions=tuple(r for s in selectors for r in s.match_expressions))


def term(
    topology_key: str,
    selector: LabelSelector,
    namespaces: tuple[str, ...] = (),
    namespace_selector: LabelSelector | None = None,
) -> PodAffinityTerm:
    return PodAffinityTerm(topology_key, selector, namespaces, namespace_selector)


def weighted(weight: int, topology_key: str, selector: LabelSelector) -> WeightedPodAffinityTerm:
    return WeightedPodAffinityTerm(weight, term(topology_key, selector))


def pod(
    name: str = "incoming",
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    node: str = "",
    affinity: Sequence[PodAffinityTerm] = (),
    anti: Sequence[PodAffinityTerm] = (),
    preferred: Sequence[WeightedPodAffinityTerm] = (),
    preferred_anti: Sequence[WeightedPodAffinityTerm] = (),
) -> Pod:
    builder = make_pod(name, namespace)
    for key, value in (labels or {}).items():
        builder.label(key, value)
    if node:
        builder.node(node)
    obj = builder.obj()
    if affinity or anti or preferred or preferred_anti:
        obj.spec.affinity = Affinity(
            pod_affinity=PodAffinity(tuple(affinity), tuple(preferred)),
            pod_anti_affinity=PodAffinity(tuple(anti), tuple(preferred_anti)),
        )
    return obj


def node(name: str, **labels: str) -> Node:
    builder = make_node(name)
    for key, value in labels.items():
        builder.label(key, value)
    return builder.obj()


def cluster(nodes: Sequence[Node], pods: Sequence[Pod]) -> list[NodeInfo]:
    infos = {n.name: NodeInfo(n) for n in nodes}
    for p in pods:
        infos[p.spec.node_name].add_pod(PodInfo(p))
    return list(infos.values())


def reasons(status: Status | None) -> tuple[Code, list[str]] | None:
    return None if status is None else (status.code, status.reasons)


def run_filter(incoming: Pod, node_infos: list[NodeInfo]) -> tuple[Status | None, list[Status | None]]:
    """PreFilter, then Filter on every node unless PreFilter skipped it (every node then passes)."""
    plugin = InterPodAffinity()
    state = CycleState()
    _, pre_filter_status = plugin.pre_filter(state, incoming, node_infos)
    if pre_filter_status is not None:
        return pre_filter_status, [None] * len(node_infos)
    return None, [plugin.filter(state, incoming, n) for n in node_infos]


# --- Filter on one node --------------------------------------------------------------------------

SECURITY_SCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
NODE1 = node("node1", region="r1", zone="z11")
EXISTING = pod("existing", labels=SECURITY_SCAN, node="node1")


@dataclass
class SingleNodeCase:
    name: str
    pod: Pod
    pods: list[Pod]
    want_pre_filter: Status | None = None
    want: Status | None = None


SINGLE_NODE_CASES = [
    SingleNodeCase(
        "a pod without required pod affinity on a node with no pods skips Filter",
        pod(),
        [],
        want_pre_filter=SKIP,
    ),
    SingleNodeCase(
        "required affinity with the In operator is satisfied by the existing pod",
        pod(labels=S1, affinity=[term("region", expr("service", "In", "securityscan", "value2"))]),
        [EXISTING],
    ),
    SingleNodeCase(
        "required affinity with the NotIn operator is satisfied by the existing pod",
        pod(labels=S1, affinity=[term("region", expr("service", "NotIn", "securityscan3", "value3"))]),
        [EXISTING],
    ),
    SingleNodeCase(
        "required affinity is not satisfied by a matching pod in a namespace the term does not list",
        pod(
            labels=S1,
            affinity=[term("region", expr("service", "In", "securityscan", "value2"), namespaces=("DiffNameSpace",))],
        ),
        [pod("existing", namespace="ns", labels=SECURITY_SCAN, node="node1")],
        want=AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "required affinity whose selector matches no existing pod is not satisfied",
        pod(labels=SECURITY_SCAN, affinity=[term("region", expr("service", "In", "antivirusscan", "value2"))]),
        [EXISTING],
        want=AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "several required affinity terms with different operators are all satisfied",
        pod(
            labels=S1,
            affinity=[
                term("region", all_of(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"))),
                term(
                    "region",
                    all_of(expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue")),
                ),
            ],
        ),
        [EXISTING],
    ),
    SingleNodeCase(
        "matchExpressions are ANDed: one expression not matching fails the affinity",
        pod(
            labels=S1,
            affinity=[
                term("region", all_of(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"))),
                term(
                    "region",
                    all_of(expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue")),
                ),
            ],
        ),
        [EXISTING],
        want=AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "required affinity and anti-affinity are both satisfied by the existing pod",
        pod(
            labels=S1,
            affinity=[term("region", expr("service", "In", "securityscan", "value2"))],
            anti=[term("node", expr("service", "In", "antivirusscan", "value2"))],
        ),
        [EXISTING],
    ),
    SingleNodeCase(
        "affinity, anti-affinity and the existing pod's anti-affinity are all satisfied",
        pod(
            labels=S1,
            affinity=[term("region", expr("service", "In", "securityscan", "value2"))],
            anti=[term("node", expr("service", "In", "antivirusscan", "value2"))],
        ),
        [
            pod(
                "existing",
                labels=SECURITY_SCAN,
                node="node1",
                anti=[term("node", expr("service", "In", "antivirusscan", "value2"))],
            )
        ],
    ),
    SingleNodeCase(
        "affinity is satisfied but the pod's own anti-affinity matches the existing pod",
        pod(
            labels=S1,
            affinity=[term("region", expr("service", "In", "securityscan", "value2"))],
            anti=[term("zone", expr("service", "In", "securityscan", "value2"))],
        ),
        [EXISTING],
        want=ANTI_AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "the existing pod's anti-affinity rejects the incoming pod (symmetry)",
        pod(
            labels=SECURITY_SCAN,
            affinity=[term("region", expr("service", "In", "securityscan", "value2"))],
            anti=[term("node", expr("service", "In", "antivirusscan", "value2"))],
        ),
        [
            pod(
                "existing",
                labels=SECURITY_SCAN,
                node="node1",
                anti=[term("zone", expr("service", "In", "securityscan", "value2"))],
            )
        ],
        want=EXISTING_ANTI_AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "a pod that does not match its own NotIn affinity is not let in as the first of its group",
        pod(
            labels=SECURITY_SCAN,
            affinity=[term("region", expr("service", "NotIn", "securityscan", "value2"))],
        ),
        [pod("existing", labels=SECURITY_SCAN, node="node1")],
        want=AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "the existing pod's anti-affinity is respected when the incoming pod has no affinity at all",
        pod(labels=SECURITY_SCAN),
        [
            pod(
                "existing",
                labels=SECURITY_SCAN,
                node="node1",
                anti=[term("zone", expr("service", "In", "securityscan", "value2"))],
            )
        ],
        want=EXISTING_ANTI_AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "an existing pod's anti-affinity that does not match the incoming pod lets PreFilter skip",
        pod(labels=SECURITY_SCAN),
        [
            pod(
                "existing",
                labels=SECURITY_SCAN,
                node="node1",
                anti=[term("zone", expr("service", "NotIn", "securityscan", "value2"))],
            )
        ],
        want_pre_filter=SKIP,
    ),
    SingleNodeCase(
        "the incoming pod's anti-affinity rejects the node although the existing pod's does not match it",
        pod(
            labels=SECURITY_SCAN,
            anti=[term("region", expr("service", "Exists")), term("region", expr("security", "Exists"))],
        ),
        [pod("existing", labels=S1, node="node1", anti=[term("zone", expr("security", "Exists"))])],
        want=ANTI_AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "symmetry a2: only the existing pod's anti-affinity matches the incoming pod",
        pod(labels=S1, anti=[term("zone", expr("security", "Exists"))]),
        [
            pod(
                "existing",
                labels=SECURITY_SCAN,
                node="node1",
                anti=[term("zone", expr("service", "Exists")), term("zone", expr("security", "Exists"))],
            )
        ],
        want=EXISTING_ANTI_AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "affinity whose namespaceSelector selects the existing pod's namespace is satisfied",
        pod(
            labels=S1,
            affinity=[
                term(
                    "region",
                    expr("service", "In", "securityscan", "value2"),
                    namespace_selector=expr(NAMESPACE_NAME_LABEL, "In", "subteam1"),
                )
            ],
        ),
        [pod("existing", namespace="subteam1", labels=SECURITY_SCAN, node="node1")],
    ),
    SingleNodeCase(
        "affinity whose namespaceSelector does not select the existing pod's namespace is not satisfied",
        pod(
            labels=S1,
            affinity=[
                term(
                    "region",
                    expr("service", "In", "securityscan", "value2"),
                    namespace_selector=expr(NAMESPACE_NAME_LABEL, "In", "subteam1"),
                )
            ],
        ),
        [pod("existing", namespace="subteam2", labels=SECURITY_SCAN, node="node1")],
        want=AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "anti-affinity whose namespaceSelector selects the existing pod's namespace rejects the node",
        pod(
            namespace="subteam1",
            labels=S1,
            anti=[
                term(
                    "zone",
                    expr("service", "In", "securityscan", "value2"),
                    namespace_selector=expr(NAMESPACE_NAME_LABEL, "In", "subteam2"),
                )
            ],
        ),
        [pod("existing", namespace="subteam2", labels=SECURITY_SCAN, node="node1")],
        want=ANTI_AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "anti-affinity with an empty namespaceSelector covers every namespace",
        pod(
            namespace="subteam1",
            labels=S1,
            anti=[
                term(
                    "zone",
                    expr("service", "In", "securityscan", "value2"),
                    namespace_selector=LabelSelector(),
                )
            ],
        ),
        [pod("existing", namespace="subteam2", labels=SECURITY_SCAN, node="node1")],
        want=ANTI_AFFINITY_NOT_MATCH,
    ),
    SingleNodeCase(
        "anti-affinity whose namespaceSelector does not select the existing pod's namespace is satisfied",
        pod(
            namespace="subteam1",
            labels=S1,
            anti=[
                term(
                    "zone",
                    expr("service", "In", "securityscan", "value2"),
                    namespace_selector=expr(NAMESPACE_NAME_LABEL, "In", "subteam2"),
                )
            ],
        ),
        [pod("existing", namespace="subteam3", labels=SECURITY_SCAN, node="node1")],
    ),
]


@pytest.mark.parametrize("case", SINGLE_NODE_CASES, ids=lambda c: c.name)
def test_required_affinity_single_node(case: SingleNodeCase) -> None:
    pre_filter_status, statuses = run_filter(case.pod, cluster([NODE1], case.pods))
    assert reasons(pre_filter_status) == reasons(case.want_pre_filter)
    assert [reasons(s) for s in statuses] == [reasons(case.want)]


# --- Filter on several nodes ---------------------------------------------------------------------

FOO_BAR = {"foo": "bar"}


@dataclass
class MultipleNodesCase:
    name: str
    pod: Pod
    pods: list[Pod]
    nodes: list[Node]
    want: list[Status | None]
    want_pre_filter: Status | None = None


MULTIPLE_NODES_CASES = [
    MultipleNodesCase(
        "every node in the topology domain of a matching pod fits, other domains do not",
        pod(affinity=[term("region", expr("foo", "In", "bar"))]),
        [pod("p1", labels=FOO_BAR, node="node1")],
        [
            node("node1", region="China"),
            node("node2", region="China", az="az1"),
            node("node3", region="India"),
        ],
        [None, None, AFFINITY_NOT_MATCH],
    ),
    MultipleNodesCase(
        "the first pod of a group with affinity to itself may go to any node with the topology key",
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            affinity=[
                term("zone", expr("foo", "In", "bar")),
                term("zone", expr("service", "In", "securityscan")),
            ],
        ),
        [pod("p1", labels=FOO_BAR, node="nodeA")],
        [node("nodeA", zone="az1", hostname="h1"), node("nodeB", zone="az2", hostname="h2")],
        [None, None],
    ),
    MultipleNodesCase(
        "the first pod of a group may only go to nodes labelled with the requested topology keys",
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            affinity=[
                term("zone", expr("foo", "In", "bar")),
                term("zone", expr("service", "In", "securityscan")),
            ],
        ),
        [pod("p1", labels=FOO_BAR, node="nodeA")],
        [node("nodeA", zoneLabel="az1", hostname="h1"), node("nodeB", zoneLabel="az2", hostname="h2")],
        [AFFINITY_NOT_MATCH, AFFINITY_NOT_MATCH],
    ),
    MultipleNodesCase(
        "anti-affinity rejects every node sharing the matching pod's region",
        pod(anti=[term("region", expr("foo", "In", "abc"))]),
        [pod("p1", labels={"foo": "abc"}, node="nodeA")],
        [node("nodeA", region="r1", hostname="nodeA"), node("nodeB", region="r1", hostname="nodeB")],
        [ANTI_AFFINITY_NOT_MATCH, ANTI_AFFINITY_NOT_MATCH],
    ),
    MultipleNodesCase(
        "anti-affinity matches a pod when any one of its terms matches",
        pod(
            anti=[
                term("region", expr("foo", "In", "abc")),
                term("zone", expr("service", "In", "securityscan")),
            ]
        ),
        [pod("p1", labels={"foo": "abc", "service": "securityscan"}, node="nodeA")],
        [node("nodeA", region="r1", zone="z1"), node("nodeB", region="r1", zone="z2")],
        [ANTI_AFFINITY_NOT_MATCH, ANTI_AFFINITY_NOT_MATCH],
    ),
    MultipleNodesCase(
        "anti-affinity leaves nodes of other regions free",
        pod(anti=[term("region", expr("foo", "In", "abc"))]),
        [pod("p1", labels={"foo": "abc"}, node="nodeA")],
        [
            node("nodeA", region="China"),
            node("nodeB", region="China", az="az1"),
            node("nodeC", region="India"),
        ],
        [ANTI_AFFINITY_NOT_MATCH, ANTI_AFFINITY_NOT_MATCH, None],
    ),
    MultipleNodesCase(
        "an existing pod's anti-affinity in another namespace does not apply to the incoming pod",
        pod(namespace="NS1", labels={"foo": "123"}, anti=[term("region", expr("foo", "In", "bar"))]),
        [
            pod("p1", namespace="NS1", labels=FOO_BAR, node="nodeA"),
            pod("p2", namespace="NS2", node="nodeC", anti=[term("region", expr("foo", "In", "123"))]),
        ],
        [
            node("nodeA", region="China"),
            node("nodeB", region="China", az="az1"),
            node("nodeC", region="India"),
        ],
        [ANTI_AFFINITY_NOT_MATCH, ANTI_AFFINITY_NOT_MATCH, None],
    ),
    MultipleNodesCase(
        "an existing pod's anti-affinity on a topology key no node has lets PreFilter skip",
        pod(labels={"foo": ""}),
        [pod("p1", node="nodeA", anti=[term("invalid-node-label", expr("foo", "Exists"))])],
        [node("nodeA", region="r1", zone="z1"), node("nodeB", region="r1", zone="z1")],
        [None, None],
        want_pre_filter=SKIP,
    ),
    MultipleNodesCase(
        "the incoming pod's anti-affinity on a topology key no node has rejects nothing",
        pod(anti=[term("invalid-node-label", expr("foo", "Exists"))]),
        [pod("p1", labels={"foo": ""}, node="nodeA")],
        [node("nodeA", region="r1", zone="z1"), node("nodeB", region="r1", zone="z1")],
        [None, None],
    ),
    MultipleNodesCase(
        "existing pods' anti-affinity terms each reject their own topology domain",
        pod(labels={"foo": "", "bar": ""}),
        [
            pod("p1", node="nodeA", anti=[term("zone", expr("foo", "Exists"))]),
            pod("p2", node="nodeA", anti=[term("region", expr("bar", "Exists"))]),
        ],
        [
            node("nodeA", region="r1", zone="z1"),
            node("nodeB", region="r1", zone="z2"),
            node("nodeC", region="r2"),
        ],
        [EXISTING_ANTI_AFFINITY_NOT_MATCH, EXISTING_ANTI_AFFINITY_NOT_MATCH, None],
    ),
]


@pytest.mark.parametrize("case", MULTIPLE_NODES_CASES, ids=lambda c: c.name)
def test_required_affinity_multiple_nodes(case: MultipleNodesCase) -> None:
    pre_filter_status, statuses = run_filter(case.pod, cluster(case.nodes, case.pods))
    assert reasons(pre_filter_status) == reasons(case.want_pre_filter)
    assert [reasons(s) for s in statuses] == [reasons(w) for w in case.want]


# --- AddPod / RemovePod --------------------------------------------------------------------------

ZONE_NODES = [
    node("n1", zone="z1", hostname="n1"),
    node("n2", zone="z1", hostname="n2"),
    node("n3", zone="z2"),
]
DB = {"app": "db"}


@dataclass
class AddRemoveCase:
    name: str
    pod: Pod
    pods: list[Pod]
    change: str  # "add" or "remove"
    changed_pod: Pod
    want_before: list[Status | None]
    want_after: list[Status | None]


ADD_REMOVE_CASES = [
    AddRemoveCase(
        "adding a pod the incoming pod has affinity to opens its whole zone",
        pod(labels={"app": "web"}, affinity=[term("zone", expr("app", "In", "db"))]),
        [pod("other", labels={"app": "cache"}, node="n3")],
        "add",
        pod("db", labels=DB, node="n1"),
        [AFFINITY_NOT_MATCH, AFFINITY_NOT_MATCH, AFFINITY_NOT_MATCH],
        [None, None, AFFINITY_NOT_MATCH],
    ),
    AddRemoveCase(
        "removing the only pod the incoming pod has affinity to closes its zone again",
        pod(labels={"app": "web"}, affinity=[term("zone", expr("app", "In", "db"))]),
        [pod("db", labels=DB, node="n1"), pod("db-2", labels=DB, node="n3")],
        "remove",
        pod("db", labels=DB, node="n1"),
        [None, None, None],
        [AFFINITY_NOT_MATCH, AFFINITY_NOT_MATCH, None],
    ),
    AddRemoveCase(
        "adding a pod the incoming pod has anti-affinity to closes that host only",
        pod(anti=[term("hostname", expr("app", "In", "db"))]),
        [],
        "add",
        pod("db", labels=DB, node="n2"),
        [None, None, None],
        [None, ANTI_AFFINITY_NOT_MATCH, None],
    ),
    AddRemoveCase(
        "removing the pod the incoming pod has anti-affinity to opens its zone",
        pod(anti=[term("zone", expr("app", "In", "db"))]),
        [pod("db", labels=DB, node="n1")],
        "remove",
        pod("db", labels=DB, node="n1"),
        [ANTI_AFFINITY_NOT_MATCH, ANTI_AFFINITY_NOT_MATCH, None],
        [None, None, None],
    ),
    AddRemoveCase(
        "adding a pod whose anti-affinity matches the incoming pod closes its zone",
        pod(labels=DB, anti=[term("zone", expr("app", "In", "nothing"))]),
        [],
        "add",
        pod("guard", node="n3", anti=[term("zone", expr("app", "In", "db"))]),
        [None, None, None],
        [None, None, EXISTING_ANTI_AFFINITY_NOT_MATCH],
    ),
    AddRemoveCase(
        "removing the pod whose anti-affinity rejects the incoming pod (a preemption victim) opens its zone",
        pod(labels=DB),
        [pod("guard", node="n1", anti=[term("zone", expr("app", "In", "db"))])],
        "remove",
        pod("guard", node="n1", anti=[term("zone", expr("app", "In", "db"))]),
        [EXISTING_ANTI_AFFINITY_NOT_MATCH, EXISTING_ANTI_AFFINITY_NOT_MATCH, None],
        [None, None, None],
    ),
]


@pytest.mark.parametrize("case", ADD_REMOVE_CASES, ids=lambda c: c.name)
def test_add_pod_and_remove_pod_change_the_filter_outcome_on_a_clone_only(case: AddRemoveCase) -> None:
    plugin = InterPodAffinity()
    node_infos = cluster(ZONE_NODES, case.pods)
    state = CycleState()
    _, status = plugin.pre_filter(state, case.pod, node_infos)
    assert status is None
    assert [reasons(plugin.filter(state, case.pod, n)) for n in node_infos] == [reasons(w) for w in case.want_before]

    what_if, after = change_through_extension(plugin, state, case.pod, node_infos, case.change, case.changed_pod)
    assert [reasons(plugin.filter(what_if, case.pod, n)) for n in after] == [reasons(w) for w in case.want_after]

    # The original state is untouched.
    assert [reasons(plugin.filter(state, case.pod, n)) for n in node_infos] == [reasons(w) for w in case.want_before]


@pytest.mark.parametrize("case", ADD_REMOVE_CASES, ids=lambda c: c.name)
def test_add_then_remove_restores_the_counts(case: AddRemoveCase) -> None:
    plugin = InterPodAffinity()
    node_infos = cluster(ZONE_NODES, case.pods)
    state = CycleState()
    plugin.pre_filter(state, case.pod, node_infos)
    target = {n.name: n for n in node_infos}[case.changed_pod.spec.node_name]
    pod_info = PodInfo(case.changed_pod)
    assert plugin.add_pod(state, case.pod, pod_info, target) is None
    assert plugin.remove_pod(state, case.pod, pod_info, target) is None
    fresh = CycleState()
    plugin.pre_filter(fresh, case.pod, node_infos)
    for n in node_infos:
        assert reasons(plugin.filter(state, case.pod, n)) == reasons(plugin.filter(fresh, case.pod, n))


def test_extensions_without_pre_filter_state_report_an_error() -> None:
    plugin = InterPodAffinity()
    node_info = NodeInfo(ZONE_NODES[0])
    status = plugin.add_pod(CycleState(), pod(), PodInfo(pod("x", node="n1")), node_info)
    assert status is not None and status.code == Code.ERROR


# --- Score ---------------------------------------------------------------------------------------

SEC_S1 = expr("security", "In", "S1")
SEC_S2 = expr("security", "In", "S2")


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    pods: list[Pod]
    nodes: list[Node]
    want: list[int]
    want_skip: bool = False
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}


def nodes_with(*labels: dict[str, str]) -> list[Node]:
    return [node(f"node{i + 1}", **lab) for i, lab in enumerate(labels)]


SCORE_CASES = [
    ScoreCase(
        "all nodes score the same when no pod has any affinity (PreScore skips)",
        pod(),
        [pod("p1", labels={"security": "S1"}, node="node1")],
        nodes_with(CHINA, INDIA, {"az": "az1"}),
        [0, 0, 0],
        want_skip=True,
    ),
    ScoreCase(
        "preferred affinity favors the node whose region holds a matching pod",
        pod(preferred=[weighted(5, "region", SEC_S1)]),
        [
            pod("p1", labels={"security": "S1"}, node="node1"),
            pod("p2", labels={"security": "S2"}, node="node2"),
        ],
        nodes_with(CHINA, INDIA, {"az": "az1"}),
        [100, 0, 0],
    ),
    ScoreCase(
        "preferred affinity favors every node in the region of the matching pod",
        pod(preferred=[weighted(5, "region", SEC_S1)]),
        [pod("p1", labels={"security": "S1"}, node="node1")],
        nodes_with(CHINA, CHINA_AZ1, INDIA),
        [100, 100, 0],
    ),
    ScoreCase(
        "more matching pods in a region score higher, scaled between the minimum and the maximum",
        pod(preferred=[weighted(5, "region", SEC_S1)]),
        [
            pod("p1", labels={"security": "S1"}, node="node1"),
            pod("p2", labels={"security": "S1"}, node="node2"),
            pod("p3", labels={"security": "S1"}, node="node3"),
            pod("p4", labels={"security": "S1"}, node="node3"),
            pod("p5", labels={"security": "S1"}, node="node3"),
        ],
        nodes_with(CHINA, CHINA_AZ1, INDIA, {"region": "Japan"}),
        [66, 66, 100, 0],
    ),
    ScoreCase(
        "preferred anti-affinity favors nodes away from matching pods",
        pod(preferred_anti=[weighted(5, "region", SEC_S1)]),
        [
            pod("p1", labels={"security": "S1"}, node="node1"),
            pod("p2", labels={"security": "S2"}, node="node2"),
        ],
        nodes_with(CHINA, INDIA),
        [0, 100],
    ),
    ScoreCase(
        "preferred affinity and anti-affinity combine, negative totals included",
        pod(preferred=[weighted(5, "region", SEC_S1)], preferred_anti=[weighted(5, "az", SEC_S2)]),
        [
            pod("p1", labels={"security": "S1"}, node="node1"),
            pod("p2", labels={"security": "S2"}, node="node2"),
        ],
        nodes_with(CHINA, CHINA_AZ1, {"region": "India", "az": "az1"}),
        # region China +5 (S1 pod), az az1 -5 (S2 pod): node1 5, node2 0, node3 -5
        [100, 50, 0],
    ),
    ScoreCase(
        "an existing pod's preferred affinity toward the incoming pod draws it to that pod's region",
        pod(labels={"security": "S1"}),
        [
            pod("p1", labels={"security": "S2"}, node="node1", preferred=[weighted(5, "region", SEC_S1)]),
        ],
        nodes_with(CHINA, CHINA_AZ1, INDIA),
        [100, 100, 0],
    ),
    ScoreCase(
        "an existing pod's preferred anti-affinity toward the incoming pod pushes it away",
        pod(labels={"security": "S1"}),
        [pod("p1", labels={"security": "S2"}, node="node1", preferred_anti=[weighted(5, "region", SEC_S1)])],
        nodes_with(CHINA, INDIA),
        [0, 100],
    ),
    ScoreCase(
        "an existing pod's required affinity toward the incoming pod counts with hardPodAffinityWeight",
        pod(labels={"security": "S1"}),
        [pod("p1", labels={"security": "S2"}, node="node1", affinity=[term("region", SEC_S1)])],
        nodes_with(CHINA, INDIA),
        [100, 0],
    ),
    ScoreCase(
        "with hardPodAffinityWeight 0 an existing pod's required affinity does not score",
        pod(labels={"security": "S1"}),
        [pod("p1", labels={"security": "S2"}, node="node1", affinity=[term("region", SEC_S1)])],
        nodes_with(CHINA, INDIA),
        [0, 0],
        want_skip=True,
        hard_pod_affinity_weight=0,
    ),
    ScoreCase(
        "ignoring existing pods' preferred terms skips scoring a pod without preferred terms",
        pod(labels={"security": "S1"}),
        [pod("p1", labels={"security": "S2"}, node="node1", preferred=[weighted(5, "region", SEC_S1)])],
        nodes_with(CHINA, INDIA),
        [0, 0],
        want_skip=True,
        ignore_preferred_terms_of_existing_pods=True,
    ),
    ScoreCase(
        "when every node scores the same the normalized scores are all zero",
        pod(preferred_anti=[weighted(5, "region", SEC_S1)]),
        [
            pod("p1", labels={"security": "S1"}, node="node1"),
            pod("p2", labels={"security": "S1"}, node="node2"),
        ],
        nodes_with(CHINA, INDIA),
        [0, 0],
    ),
]


def run_score(
    plugin: InterPodAffinity, incoming: Pod, scored: list[NodeInfo], state: CycleState | None = None
) -> list[int] | None:
    """PreScore, Score and NormalizeScore on `scored`; None when PreScore skips."""
    state = state or CycleState()
    status = plugin.pre_score(state, incoming, scored)
    if status is not None:
        assert status.code == Code.SKIP
        return None
    scores = [plugin.score(state, incoming, n) for n in scored]
    plugin.normalize_score(state, incoming, scores)
    return scores


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_preferred_affinity_scores(case: ScoreCase) -> None:
    plugin = InterPodAffinity(
        hard_pod_affinity_weight=case.hard_pod_affinity_weight,
        ignore_preferred_terms_of_existing_pods=case.ignore_preferred_terms_of_existing_pods,
    )
    node_infos = cluster(case.nodes, case.pods)
    scores = run_score(plugin, case.pod, node_infos)
    if case.want_skip:
        assert scores is None
    else:
        assert scores == case.want


def test_pods_on_nodes_filtered_out_still_count_for_their_domain() -> None:
    incoming = pod(preferred=[weighted(5, "zone", SEC_S1)])
    node_infos = cluster(
        [node("n1", zone="a"), node("n2", zone="a"), node("n3", zone="b")],
        [pod("p1", labels={"security": "S1"}, node="n1")],
    )
    scored = node_infos[1:]  # n1 did not pass Filter

    with_lister = InterPodAffinity(all_nodes=lambda: node_infos)
    assert run_score(with_lister, incoming, scored) == [100, 0]

    # Without a lister, the node list PreFilter saw in the same cycle is used.
    plugin = InterPodAffinity()
    state = CycleState()
    plugin.pre_filter(state, incoming, node_infos)
    assert run_score(plugin, incoming, scored, state) == [100, 0]


def test_pre_score_skips_when_there_are_no_nodes_to_score() -> None:
    status = InterPodAffinity().pre_score(CycleState(), pod(preferred=[weighted(5, "zone", SEC_S1)]), [])
    assert status is not None and status.code == Code.SKIP


def test_hard_pod_affinity_weight_outside_0_to_100_is_rejected() -> None:
    with pytest.raises(ValueError, match="hardPodAffinityWeight"):
        InterPodAffinity(hard_pod_affinity_weight=101)
