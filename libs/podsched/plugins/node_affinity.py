"""NodeAffinity: the pod's nodeSelector and required node affinity must match the node (Filter);
matching preferred terms add their weights (Score). Upstream plugins/nodeaffinity/node_affinity.go.

The scheduler-wide `addedAffinity` plugin argument is not modelled: a profile here cannot add node
affinity to every pod."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from podsched.api.labels import node_selector_matches, node_selector_term_matches
from podsched.api.types import Node, NodeSelectorTerm, Pod, PreferredSchedulingTerm
from podsched.framework.cycle_state import CycleState
from podsched.framework.events import NODE_ADD, NODE_UPDATE, ClusterEventWithHint
from podsched.framework.interface import (
    MAX_NODE_SCORE,
    NodeSignature,
    PreFilterExtensions,
    PreFilterResult,
    default_normalize_score,
)
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Code, Status
from podsched.plugins import names

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
OBJECT_NAME_FIELD = "metadata.name"

_PRE_FILTER_STATE_KEY = "PreFilter" + names.NODE_AFFINITY
_PRE_SCORE_STATE_KEY = "PreScore" + names.NODE_AFFINITY


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """component-helpers nodeaffinity.RequiredNodeAffinity: the pod's nodeSelector ANDed with its
    required node affinity terms (which are ORed). `terms is None` means no required affinity;
    an empty tuple of terms matches no node."""

    node_selector: Mapping[str, str]
    terms: tuple[NodeSelectorTerm, ...] | None

    def match(self, node: Node) -> bool:
        labels = node.metadata.labels
        for key, value in self.node_selector.items():
            if labels.get(key) != value:
                return False
        if self.terms is None:
            return True
        return node_selector_matches(self.terms, labels, node.metadata.name)


def _required_terms(pod: Pod) -> tuple[NodeSelectorTerm, ...] | None:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    return affinity.node_affinity.required


def get_required_node_affinity(pod: Pod) -> RequiredNodeAffinity:
    """nodeaffinity.GetRequiredNodeAffinity: parse once, then `match` per node."""
    return RequiredNodeAffinity(pod.spec.node_selector, _required_terms(pod))


def pod_matches_node_selector_and_affinity(pod: Pod, node: Node) -> bool:
    """True when the node satisfies the pod's nodeSelector and required node affinity."""
    return get_required_node_affinity(pod).match(node)


def _preferred_terms(pod: Pod) -> tuple[PreferredSchedulingTerm, ...]:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return ()
    # NewPreferredSchedulingTerms drops zero-weight terms.
    return tuple(t for t in affinity.node_affinity.preferred if t.weight != 0)


def _node_names_pinned(terms: Sequence[NodeSelectorTerm]) -> bool:
    """Whether some term names nodes through `matchFields metadata.name In`."""
    return any(r.key == OBJECT_NAME_FIELD and r.operator == "In" for term in terms for r in term.match_fields)


def _node_names_pinned_by(terms: tuple[NodeSelectorTerm, ...]) -> set[str] | None:
    """The node names the terms can only match through `matchFields metadata.name In`, or None when
    some term does not pin names (terms are ORed, so then every node is possible)."""
    node_names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for requirement in term.match_fields:
            if requirement.key == OBJECT_NAME_FIELD and requirement.operator == "In":
                # Requirements within a term are ANDed: intersect.
                values = set(requirement.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        node_names |= term_names
    return node_names


class NodeAffinity:
    """Filter on nodeSelector + required node affinity (UnschedulableAndUnresolvable: preemption
    cannot change a node's labels); score by the weights of matching preferred terms."""

    name = names.NODE_AFFINITY

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable."""
        return [ClusterEventWithHint(NODE_ADD), ClusterEventWithHint(NODE_UPDATE)]

    def sign_pod(self, pod: Pod) -> NodeSignature | None:
        """Filter reads the nodeSelector and the required terms, Score the preferred terms, all
        against the node's labels (and its name, through matchFields). None when the required terms
        pin node names: PreFilter then narrows the nodes."""
        required = _required_terms(pod) or ()
        if _node_names_pinned(required):
            return None
        affinity = pod.spec.affinity
        node_affinity = affinity.node_affinity if affinity is not None else None
        preferred = tuple(t for t in node_affinity.preferred if t.weight != 0) if node_affinity is not None else ()
        selector = pod.spec.node_selector
        key = (tuple(sorted(selector.items())), _required_terms(pod), preferred)
        if any(term.match_fields for term in required) or any(t.preference.match_fields for t in preferred):
            return NodeSignature(key, None)
        keys = set(selector) | {r.key for term in required for r in term.match_expressions}
        keys |= {r.key for t in preferred for r in t.preference.match_expressions}
        return NodeSignature(key, tuple(sorted(keys)))

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        terms = _required_terms(pod)
        if terms is None and not pod.spec.node_selector:
            return None, Status(Code.SKIP)
        state.write(_PRE_FILTER_STATE_KEY, get_required_node_affinity(pod))
        if not terms:
            return None, None
        node_names = _node_names_pinned_by(terms)
        if node_names is None:
            return None, None
        if not node_names:
            # Every term pins disjoint names: no node can match.
            return None, Status.unresolvable(self.name, ERR_REASON_CONFLICT)
        return PreFilterResult(node_names), None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        # Node affinity does not depend on the pods on a node.
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        required = state.get(_PRE_FILTER_STATE_KEY)
        if not isinstance(required, RequiredNodeAffinity):
            # PreFilter disabled (or skipped and Filter called anyway): compute here.
            required = get_required_node_affinity(pod)
        if not required.match(node_info.node):
            return Status.unresolvable(self.name, ERR_REASON_POD)
        return None

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        preferred = _preferred_terms(pod)
        if not preferred:
            return Status(Code.SKIP)
        state.write(_PRE_SCORE_STATE_KEY, preferred)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Sum of the weights of the preferred terms the node matches."""
        preferred = state.get(_PRE_SCORE_STATE_KEY)
        if preferred is None:
            preferred = _preferred_terms(pod)
        node = node_info.node
        return sum(
            term.weight
            for term in preferred
            if node_selector_term_matches(term.preference, node.metadata.labels, node.metadata.name)
        )

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
