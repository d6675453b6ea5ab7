"""NodeAffinity, ported from upstream's TestNodeAffinity and TestNodeAffinityPriority
(pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from builders import make_node, make_pod
from podsched.api.types import (
    Affinity,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodAffinity,
    PreferredSchedulingTerm,
)
from podsched.api.types import (
    NodeAffinity as NodeAffinitySpec,
)
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Code, Status
from podsched.plugins.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_POD,
    NodeAffinity,
    pod_matches_node_selector_and_affinity,
)

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
NAME = "metadata.name"


# --- local builders ------------------------------------------------------------------------------


def req(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, operator, tuple(values))


def term(*expressions: NodeSelectorRequirement, fields: tuple[NodeSelectorRequirement, ...] = ()) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=expressions, match_fields=fields)


def pod(
    *,
    node_selector: dict[str, str] | None = None,
    required: tuple[NodeSelectorTerm, ...] | None = None,
    preferred: tuple[PreferredSchedulingTerm, ...] = (),
    affinity_without_node_affinity: bool = False,
) -> Pod:
    obj = make_pod("p").node_selector(**(node_selector or {})).obj()
    if required is not None or preferred:
        obj.spec.affinity = Affinity(node_affinity=NodeAffinitySpec(required=required, preferred=preferred))
    elif affinity_without_node_affinity:
        obj.spec.affinity = Affinity(pod_affinity=PodAffinity())
    return obj


def node(name: str = "node1", **labels: str) -> Node:
    return labelled(name, labels)


def labelled(name: str, labels: dict[str, str]) -> Node:
    """For label keys that are not Python identifiers."""
    builder = make_node(name)
    for key, value in labels.items():
        builder.label(key, value)
    return builder.obj()


def reasons(status: Status | None) -> tuple[Code, list[str]] | None:
    return None if status is None else (status.code, status.reasons)


# --- Filter --------------------------------------------------------------------------------------


@dataclass
class FilterCase:
    name: str
    pod: Pod
    node: Node
    want_filter: Status | None = None
    want_pre_filter_nodes: set[str] | None = None
    want_pre_filter: Status | None = None


NO_MATCH = Status.unresolvable("NodeAffinity", ERR_REASON_POD)
GPU = {"GPU": "NVIDIA-GRID-K1"}

FILTER_CASES = [
    FilterCase(
        "a pod whose nodeSelector names a label the node lacks does not fit",
        pod(node_selector={"foo": "bar"}),
        node(),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "a pod whose nodeSelector equals the node's labels fits",
        pod(node_selector={"foo": "bar"}),
        node(foo="bar"),
    ),
    FilterCase(
        "a pod fits when the node's labels are a superset of its nodeSelector",
        pod(node_selector={"foo": "bar"}),
        node(foo="bar", baz="blah"),
    ),
    FilterCase(
        "a pod does not fit when the node's labels are a subset of its nodeSelector",
        pod(node_selector={"foo": "bar", "baz": "blah"}),
        node(foo="bar"),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "matchExpressions with the In operator matching the node's label fit",
        pod(required=(term(req("foo", "In", "bar", "value2")),)),
        node(foo="bar"),
    ),
    FilterCase(
        "matchExpressions with the Gt operator fit a node with a greater integer value",
        pod(required=(term(req("kernel-version", "Gt", "0204")),)),
        labelled("node1", {"kernel-version": "0206"}),
    ),
    FilterCase(
        "matchExpressions with the Lt operator do not fit a node with a greater integer value",
        pod(required=(term(req("kernel-version", "Lt", "0204")),)),
        labelled("node1", {"kernel-version": "0206"}),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "matchExpressions with the NotIn operator fit a node whose value is not listed",
        pod(required=(term(req("mem-type", "NotIn", "DDR", "DDR2")),)),
        labelled("node1", {"mem-type": "DDR3"}),
    ),
    FilterCase(
        "matchExpressions with the Exists operator fit a node that has the key",
        pod(required=(term(req("GPU", "Exists")),)),
        labelled("node1", GPU),
    ),
    FilterCase(
        "matchExpressions with the DoesNotExist operator do not fit a node that has the key",
        pod(required=(term(req("GPU", "DoesNotExist")),)),
        labelled("node1", GPU),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "an affinity whose values do not include the node's value does not fit",
        pod(required=(term(req("foo", "In", "value1", "value2")),)),
        node(foo="bar"),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "an empty list of nodeSelectorTerms matches no node",
        pod(required=()),
        node(foo="bar"),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "a nodeSelectorTerm with no expressions and no fields matches no node",
        pod(required=(term(),)),
        node(foo="bar"),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "a pod with no affinity and no nodeSelector fits every node and skips Filter",
        pod(),
        node(foo="bar"),
        want_pre_filter=Status(Code.SKIP),
    ),
    FilterCase(
        "a pod with an affinity but no node affinity skips Filter",
        pod(affinity_without_node_affinity=True),
        node(foo="bar"),
        want_pre_filter=Status(Code.SKIP),
    ),
    FilterCase(
        "matchExpressions within a term are ANDed: Exists and NotIn both hold",
        pod(required=(term(req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER")),)),
        labelled("node1", GPU),
    ),
    FilterCase(
        "matchExpressions within a term are ANDed: one failing expression fails the term",
        pod(required=(term(req("GPU", "Exists"), req("GPU", "In", "AMD", "INTER")),)),
        labelled("node1", GPU),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "nodeSelectorTerms are ORed: one matching term is enough",
        pod(required=(term(req("foo", "In", "bar", "value2")), term(req("diffkey", "In", "wrong", "value2")))),
        node(foo="bar"),
    ),
    FilterCase(
        "a pod fits when both its affinity and its nodeSelector are satisfied",
        pod(node_selector={"foo": "bar"}, required=(term(req("foo", "Exists")),)),
        node(foo="bar"),
    ),
    FilterCase(
        "a pod does not fit when its affinity matches but its nodeSelector does not",
        pod(node_selector={"foo": "bar"}, required=(term(req("foo", "Exists")),)),
        node(foo="barrrrrr"),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "a Gt value that is not an integer matches no node",
        pod(required=(term(req("kernel-version", "Gt", "invalid value: ___@#$%^")),)),
        labelled("node1", {"kernel-version": "0206"}),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "matchFields metadata.name In pins the pod to that node, which fits",
        pod(required=(term(fields=(req(NAME, "In", "node1"),)),)),
        node("node1"),
        want_pre_filter_nodes={"node1"},
    ),
    FilterCase(
        "matchFields metadata.name In does not fit another node",
        pod(required=(term(fields=(req(NAME, "In", "node1"),)),)),
        node("node2"),
        want_filter=NO_MATCH,
        want_pre_filter_nodes={"node1"},
    ),
    FilterCase(
        "two terms: a non-matching matchFields term is ORed with a matching matchExpressions term",
        pod(required=(term(fields=(req(NAME, "In", "node1"),)), term(req("foo", "In", "bar")))),
        node("node2", foo="bar"),
    ),
    FilterCase(
        "one term: matchFields and matchExpressions are ANDed, so the wrong name fails",
        pod(required=(term(req("foo", "In", "bar"), fields=(req(NAME, "In", "node1"),)),)),
        node("node2", foo="bar"),
        want_filter=NO_MATCH,
        want_pre_filter_nodes={"node1"},
    ),
    FilterCase(
        "one term: both matchFields and matchExpressions match",
        pod(required=(term(req("foo", "In", "bar"), fields=(req(NAME, "In", "node1"),)),)),
        node("node1", foo="bar"),
        want_pre_filter_nodes={"node1"},
    ),
    FilterCase(
        "two terms: neither the matchFields term nor the matchExpressions term matches",
        pod(required=(term(fields=(req(NAME, "In", "node1"),)), term(req("foo", "In", "not-match-to-bar")))),
        node("node2", foo="bar"),
        want_filter=NO_MATCH,
    ),
    FilterCase(
        "two terms pinning different node names allow the union of the names",
        pod(required=(term(fields=(req(NAME, "In", "node1"),)), term(fields=(req(NAME, "In", "node2"),)))),
        node("node2"),
        want_pre_filter_nodes={"node1", "node2"},
    ),
    FilterCase(
        "two conflicting matchFields requirements in one term are rejected in PreFilter",
        pod(required=(term(fields=(req(NAME, "In", "node1"), req(NAME, "In", "node2"))),)),
        node("node1"),
        want_pre_filter=Status.unresolvable("NodeAffinity", ERR_REASON_CONFLICT),
    ),
    FilterCase(
        "matchFields with NotIn does not pin node names",
        pod(required=(term(fields=(req(NAME, "NotIn", "node1"),)),)),
        node("node2"),
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=lambda c: c.name)
def test_filter(case: FilterCase) -> None:
    plugin = NodeAffinity()
    state = CycleState()
    node_info = NodeInfo(case.node)
    result, pre_filter_status = plugin.pre_filter(state, case.pod, [node_info])

    assert reasons(pre_filter_status) == reasons(case.want_pre_filter)
    got_nodes = result.node_names if result is not None else None
    assert got_nodes == case.want_pre_filter_nodes
    if pre_filter_status is not None:
        return
    assert reasons(plugin.filter(state, case.pod, node_info)) == reasons(case.want_filter)


# Cases whose pod PreFilter does not reject (a skipped Filter means every node fits).
NOT_REJECTED_IN_PRE_FILTER = [
    c for c in FILTER_CASES if c.want_pre_filter is None or c.want_pre_filter.code == Code.SKIP
]


@pytest.mark.parametrize("case", NOT_REJECTED_IN_PRE_FILTER, ids=lambda c: c.name)
def test_filter_without_pre_filter_state_computes_the_same_answer(case: FilterCase) -> None:
    got = NodeAffinity().filter(CycleState(), case.pod, NodeInfo(case.node))
    assert reasons(got) == reasons(case.want_filter)


@pytest.mark.parametrize("case", NOT_REJECTED_IN_PRE_FILTER, ids=lambda c: c.name)
def test_pod_matches_node_selector_and_affinity_agrees_with_filter(case: FilterCase) -> None:
    assert pod_matches_node_selector_and_affinity(case.pod, case.node) == (case.want_filter is None)


# --- Score ---------------------------------------------------------------------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

AFFINITY1 = (PreferredSchedulingTerm(2, term(req("foo", "In", "bar"))),)
AFFINITY2 = (
    PreferredSchedulingTerm(2, term(req("foo", "In", "bar"))),
    PreferredSchedulingTerm(4, term(req("key", "In", "value"))),
    PreferredSchedulingTerm(5, term(req("foo", "In", "bar"), req("key", "In", "value"), req("az", "In", "az1"))),
)


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    nodes: list[Node]
    want: list[int]
    want_skip: bool = False


SCORE_CASES = [
    ScoreCase(
        "all nodes score the same when the pod has no node affinity (PreScore skips)",
        pod(),
        [labelled("node1", LABEL1), labelled("node2", LABEL2), labelled("node3", LABEL3)],
        [0, 0, 0],
        want_skip=True,
    ),
    ScoreCase(
        "no node matches the preferred terms, so every node scores zero",
        pod(preferred=AFFINITY1),
        [labelled("node1", LABEL4), labelled("node2", LABEL2), labelled("node3", LABEL3)],
        [0, 0, 0],
    ),
    ScoreCase(
        "only node1 matches the preferred terms and gets the maximum score",
        pod(preferred=AFFINITY1),
        [labelled("node1", LABEL1), labelled("node2", LABEL2), labelled("node3", LABEL3)],
        [100, 0, 0],
    ),
    ScoreCase(
        "every node matches some preferred terms; scores are the summed weights scaled to 100",
        pod(preferred=AFFINITY2),
        [labelled("node1", LABEL1), labelled("node5", LABEL5), labelled("node2", LABEL2)],
        [18, 100, 36],
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_score(case: ScoreCase) -> None:
    plugin = NodeAffinity()
    state = CycleState()
    node_infos = [NodeInfo(n) for n in case.nodes]
    status = plugin.pre_score(state, case.pod, node_infos)
    if case.want_skip:
        assert status is not None and status.code == Code.SKIP
        return
    assert status is None
    scores = [plugin.score(state, case.pod, n) for n in node_infos]
    plugin.normalize_score(state, case.pod, scores)
    assert scores == case.want
