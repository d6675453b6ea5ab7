"""InterPodAffinity: required pod affinity / anti-affinity (Filter) and preferred terms (Score), as
upstream plugins/interpodaffinity (filtering.go, scoring.go).

Filter works on counts per topology pair (topologyKey, value) built once in PreFilter from every
node's pods; preemption's dry run keeps them exact through the AddPod/RemovePod extensions, so Filter
never looks at pods directly. Terms come pre-resolved from PodInfo (namespaces defaulted, the
namespaceSelector and matchLabelKeys folded in)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from podsched.api.labels import selector_matches
from podsched.api.types import Node, Pod
from podsched.framework.cycle_state import CycleState
from podsched.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    ASSIGNED_POD_UPDATE,
    NODE_ADD,
    NODE_UPDATE,
    ClusterEventWithHint,
    PodEvent,
)
from podsched.framework.interface import MAX_NODE_SCORE, PreFilterExtensions, PreFilterResult
from podsched.framework.node_info import AffinityTerm, NodeInfo, PodInfo, WeightedAffinityTerm, resolve_affinity_term
from podsched.framework.status import Code, Status
from podsched.plugins import names

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MAX_HARD_POD_AFFINITY_WEIGHT = 100

_PRE_FILTER_STATE_KEY = "PreFilter" + names.INTER_POD_AFFINITY
_PRE_SCORE_STATE_KEY = "PreScore" + names.INTER_POD_AFFINITY
# The node list PreFilter was given (every node in the snapshot), for PreScore when no lister is wired.
_ALL_NODES_STATE_KEY = "AllNodes" + names.INTER_POD_AFFINITY

TopologyPair = tuple[str, str]  # (topologyKey, value)


# --- counts per topology pair ----------------------------------------------------------------------


def _update(counts: dict[TopologyPair, int], node: Node, topology_key: str, value: int) -> None:
    """Add `value` to the node's pair for the key (if the node has the key); drop pairs at zero."""
    topology_value = node.metadata.labels.get(topology_key)
    if topology_value is None:
        return
    pair = (topology_key, topology_value)
    count = counts.get(pair, 0) + value
    if count == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = count


def _pod_matches_all_affinity_terms(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms: no terms is no match."""
    if not terms:
        return False
    return all(term.matches(pod) for term in terms)


def _update_with_affinity_terms(
    counts: dict[TopologyPair, int], terms: Sequence[AffinityTerm], pod: Pod, node: Node, value: int
) -> None:
    """Every term's pair counts the pod, but only when the pod matches ALL the terms."""
    if _pod_matches_all_affinity_terms(terms, pod):
        for term in terms:
            _update(counts, node, term.topology_key, value)


def _update_with_anti_affinity_terms(
    counts: dict[TopologyPair, int], terms: Sequence[AffinityTerm], pod: Pod, node: Node, value: int
) -> None:
    """Each anti-affinity term the pod matches counts on its own."""
    for term in terms:
        if term.matches(pod):
            _update(counts, node, term.topology_key, value)


class _PreFilterState:
    """preFilterState. Mutated by AddPod/RemovePod, hence clone()."""

    __slots__ = ("affinity_counts", "anti_affinity_counts", "existing_anti_affinity_counts", "pod_info")

    def __init__(
        self,
        pod_info: PodInfo,
        existing_anti_affinity_counts: dict[TopologyPair, int],
        affinity_counts: dict[TopologyPair, int],
        anti_affinity_counts: dict[TopologyPair, int],
    ) -> None:
        self.pod_info = pod_info
        # Existing pods whose required anti-affinity terms match the incoming pod.
        self.existing_anti_affinity_counts = existing_anti_affinity_counts
        # Existing pods matching all the incoming pod's required affinity terms.
        self.affinity_counts = affinity_counts
        # Existing pods matching the incoming pod's required anti-affinity terms.
        self.anti_affinity_counts = anti_affinity_counts

    def clone(self) -> _PreFilterState:
        return _PreFilterState(
            self.pod_info,
            dict(self.existing_anti_affinity_counts),
            dict(self.affinity_counts),
            dict(self.anti_affinity_counts),
        )

    def update_with_pod(self, pod_info: PodInfo, node: Node, multiplier: int) -> None:
        """updateWithPod: account for a pod appearing on (+1) or leaving (-1) the node."""
        incoming = self.pod_info
        _update_with_anti_affinity_terms(
            self.existing_anti_affinity_counts,
            pod_info.required_anti_affinity_terms,
            incoming.pod,
            node,
            multiplier,
        )
        _update_with_affinity_terms(
            self.affinity_counts, incoming.required_affinity_terms, pod_info.pod, node, multiplier
        )
        _update_with_anti_affinity_terms(
            self.anti_affinity_counts, incoming.required_anti_affinity_terms, pod_info.pod, node, multiplier
        )


def _existing_anti_affinity_counts(pod: Pod, nodes: Iterable[NodeInfo]) -> dict[TopologyPair, int]:
    """getExistingAntiAffinityCounts: existing pods' required anti-affinity terms matching `pod`."""
    counts: dict[TopologyPair, int] = {}
    for node_info in nodes:
        node = node_info.node
        for existing in node_info.pods_with_required_anti_affinity:
            _update_with_anti_affinity_terms(counts, existing.required_anti_affinity_terms, pod, node, 1)
    return counts


def _incoming_affinity_anti_affinity_counts(
    pod_info: PodInfo, nodes: Iterable[NodeInfo]
) -> tuple[dict[TopologyPair, int], dict[TopologyPair, int]]:
    """getIncomingAffinityAntiAffinityCounts: existing pods matching the incoming pod's terms."""
    affinity: dict[TopologyPair, int] = {}
    anti_affinity: dict[TopologyPair, int] = {}
    if not pod_info.required_affinity_terms and not pod_info.required_anti_affinity_terms:
        return affinity, anti_affinity
    for node_info in nodes:
        node = node_info.node
        for existing in node_info.pods:
            _update_with_affinity_terms(affinity, pod_info.required_affinity_terms, existing.pod, node, 1)
            _update_with_anti_affinity_terms(
                anti_affinity, pod_info.required_anti_affinity_terms, existing.pod, node, 1
            )
    return affinity, anti_affinity


# --- Filter checks -------------------------------------------------------------------------------


def _satisfies_existing_pods_anti_affinity(state: _PreFilterState, node: Node) -> bool:
    """No existing pod's anti-affinity covers any of the node's topology pairs."""
    counts = state.existing_anti_affinity_counts
    if counts:
        for pair in node.metadata.labels.items():
            if counts.get(pair, 0) > 0:
                return False
    return True


def _satisfies_pod_anti_affinity(state: _PreFilterState, node: Node) -> bool:
    counts = state.anti_affinity_counts
    if counts:
        labels = node.metadata.labels
        for term in state.pod_info.required_anti_affinity_terms:
            value = labels.get(term.topology_key)
            if value is not None and counts.get((term.topology_key, value), 0) > 0:
                return False
    return True


def _satisfies_pod_affinity(state: _PreFilterState, node: Node) -> bool:
    pods_exist = True
    labels = node.metadata.labels
    for term in state.pod_info.required_affinity_terms:
        value = labels.get(term.topology_key)
        if value is None:
            # The node must have every topology key of the terms.
            return False
        if state.affinity_counts.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself: if no pod in the cluster matches the terms
    # and the pod matches them itself, let it in (it has all the topology keys, checked above) so
    # such groups do not stay pending forever.
    pod_info = state.pod_info
    return not state.affinity_counts and _pod_matches_all_affinity_terms(pod_info.required_affinity_terms, pod_info.pod)


# --- Score ---------------------------------------------------------------------------------------

ScoreMap = dict[str, dict[str, int]]  # topologyKey -> value -> score


def _process_term(scores: ScoreMap, term: AffinityTerm, weight: int, pod: Pod, node: Node, multiplier: int) -> None:
    if term.matches(pod):
        value = node.metadata.labels.get(term.topology_key)
        if value is not None:
            by_value = scores.setdefault(term.topology_key, {})
            by_value[value] = by_value.get(value, 0) + weight * multiplier


def _process_terms(
    scores: ScoreMap, terms: Sequence[WeightedAffinityTerm], pod: Pod, node: Node, multiplier: int
) -> None:
    for weighted in terms:
        _process_term(scores, weighted.term, weighted.weight, pod, node, multiplier)


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    """Read-only after PreScore (shared by clones)."""

    topology_score: ScoreMap


# --- queueing hint ---------------------------------------------------------------------------------


def _term_matches_for_hint(term: AffinityTerm, pod: Pod) -> bool:
    """AffinityTerm.Matches(pod, nil) as the queueing hint calls it: no namespace labels, so a
    namespaceSelector matches only if it matches an empty label set."""
    if pod.namespace not in term.namespaces and not (
        term.namespace_selector is not None and selector_matches(term.namespace_selector, {})
    ):
        return False
    return selector_matches(term.selector, pod.labels)


def _matches_all(terms: tuple[AffinityTerm, ...], pod: Pod) -> bool:
    return bool(terms) and all(_term_matches_for_hint(t, pod) for t in terms)


def _matches_any(terms: tuple[AffinityTerm, ...], pod: Pod) -> bool:
    return any(_term_matches_for_hint(t, pod) for t in terms)


def is_schedulable_after_assigned_pod_change(pod_info: PodInfo, event: PodEvent) -> bool:
    """InterPodAffinity.isSchedulableAfterAssignedPodChange (interpodaffinity/plugin.go): True is
    Queue. An added pod helps only if it matches all of the pod's required affinity terms; a deleted
    one only if it matches one of its anti-affinity terms, or the pod matches one of the deleted
    pod's; an update only if it starts matching the affinity or stops matching the anti-affinity."""
    old, new = event.old, event.new
    if (new is not None and not new.spec.node_name and not new.status.nominated_node_name) or (
        old is not None and not old.spec.node_name and not old.status.nominated_node_name
    ):
        return False
    terms = pod_info.required_affinity_terms
    anti_terms = pod_info.required_anti_affinity_terms
    if old is not None and new is not None:
        return (not _matches_all(terms, old) and _matches_all(terms, new)) or (
            _matches_any(anti_terms, old) and not _matches_any(anti_terms, new)
        )
    if new is not None:
        return _matches_all(terms, new)
    if old is None:
        return True
    if _matches_any(anti_terms, old):
        return True
    anti = old.spec.affinity.pod_anti_affinity if old.spec.affinity else None
    old_anti_terms = tuple(resolve_affinity_term(old, t) for t in anti.required) if anti else ()
    return _matches_any(old_anti_terms, pod_info.pod)


class InterPodAffinity:
    """Filter: required pod affinity (UnschedulableAndUnresolvable), the pod's required anti-affinity
    and existing pods' required anti-affinity (Unschedulable: removing pods can help).
    Score: preferred terms both ways plus existing pods' required affinity toward the pod.

    `all_nodes` returns every node of the current snapshot (upstream's shared lister), which PreScore
    needs because pods on filtered-out nodes still count for their topology domain. Without it,
    PreScore uses the node list PreFilter was given in the same cycle, else the nodes it is scoring."""

    name = names.INTER_POD_AFFINITY

    def __init__(
        self,
        hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
        ignore_preferred_terms_of_existing_pods: bool = False,
        all_nodes: Callable[[], Sequence[NodeInfo]] | None = None,
    ) -> None:
        if not 0 <= hard_pod_affinity_weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise ValueError(
                f"hardPodAffinityWeight: Invalid value: {hard_pod_affinity_weight}: "
                f"not in valid range [0, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
            )
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods
        self._all_nodes = all_nodes

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable; an assigned pod's change
        only when the hint finds it relevant to the pod's terms."""
        hint = is_schedulable_after_assigned_pod_change
        return [
            ClusterEventWithHint(NODE_ADD),
            ClusterEventWithHint(NODE_UPDATE),
            ClusterEventWithHint(ASSIGNED_POD_ADD, hint),
            ClusterEventWithHint(ASSIGNED_POD_UPDATE, hint),
            ClusterEventWithHint(ASSIGNED_POD_DELETE, hint),
        ]

    # --- PreFilter / extensions --------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(_ALL_NODES_STATE_KEY, nodes)
        pod_info = PodInfo(pod)
        existing = _existing_anti_affinity_counts(pod, (n for n in nodes if n.pods_with_required_anti_affinity))
        affinity, anti_affinity = _incoming_affinity_anti_affinity_counts(pod_info, nodes)
        if not existing and not pod_info.required_affinity_terms and not pod_info.required_anti_affinity_terms:
            return None, Status(Code.SKIP)
        state.write(_PRE_FILTER_STATE_KEY, _PreFilterState(pod_info, existing, affinity, anti_affinity))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        pre_filter_state = state.get(_PRE_FILTER_STATE_KEY)
        if not isinstance(pre_filter_state, _PreFilterState):
            return Status.error(self.name, _missing_state_message(_PRE_FILTER_STATE_KEY))
        pre_filter_state.update_with_pod(pod_to_add, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        pre_filter_state = state.get(_PRE_FILTER_STATE_KEY)
        if not isinstance(pre_filter_state, _PreFilterState):
            return Status.error(self.name, _missing_state_message(_PRE_FILTER_STATE_KEY))
        pre_filter_state.update_with_pod(pod_to_remove, node_info.node, -1)
        return None

    # --- Filter ------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        pre_filter_state = state.get(_PRE_FILTER_STATE_KEY)
        if not isinstance(pre_filter_state, _PreFilterState):
            return Status.error(self.name, _missing_state_message(_PRE_FILTER_STATE_KEY))
        node = node_info.node
        if not _satisfies_pod_affinity(pre_filter_state, node):
            return Status.unresolvable(self.name, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not _satisfies_pod_anti_affinity(pre_filter_state, node):
            return Status.unschedulable(self.name, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not _satisfies_existing_pods_anti_affinity(pre_filter_state, node):
            return Status.unschedulable(self.name, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    # --- Score -------------------------------------------------------------------------------------

    def _cluster_nodes(self, state: CycleState, scored: Sequence[NodeInfo]) -> Sequence[NodeInfo]:
        if self._all_nodes is not None:
            return self._all_nodes()
        recorded = state.get(_ALL_NODES_STATE_KEY)
        return recorded if recorded is not None else scored

    def _process_existing_pod(self, pod_info: PodInfo, existing: PodInfo, node: Node, scores: ScoreMap) -> None:
        if not node.metadata.labels:
            return
        incoming = pod_info.pod
        # The incoming pod's preferred terms, toward the existing pod.
        _process_terms(scores, pod_info.preferred_affinity_terms, existing.pod, node, 1)
        _process_terms(scores, pod_info.preferred_anti_affinity_terms, existing.pod, node, -1)
        # The existing pod's terms, toward the incoming pod. Its required affinity (a hard rule for
        # the existing pod only) also draws the incoming pod, with weight hardPodAffinityWeight.
        if self.hard_pod_affinity_weight > 0:
            for term in existing.required_affinity_terms:
                _process_term(scores, term, self.hard_pod_affinity_weight, incoming, node, 1)
        _process_terms(scores, existing.preferred_affinity_terms, incoming, node, 1)
        _process_terms(scores, existing.preferred_anti_affinity_terms, incoming, node, -1)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return Status(Code.SKIP)
        affinity = pod.spec.affinity
        has_constraints = affinity is not None and bool(
            (affinity.pod_affinity is not None and affinity.pod_affinity.preferred)
            or (affinity.pod_anti_affinity is not None and affinity.pod_anti_affinity.preferred)
        )
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status(Code.SKIP)
        pod_info = PodInfo(pod)
        scores: ScoreMap = {}
        for node_info in self._cluster_nodes(state, nodes):
            # Without preferred terms of its own, only existing pods with affinity can score the pod.
            existing_pods = node_info.pods if has_constraints else node_info.pods_with_affinity
            for existing in existing_pods:
                self._process_existing_pod(pod_info, existing, node_info.node, scores)
        if not scores:
            return Status(Code.SKIP)
        state.write(_PRE_SCORE_STATE_KEY, _PreScoreState(scores))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Sum of the topology scores of the node's pairs: positive for affinity, negative for
        anti-affinity; normalized later."""
        pre_score_state: _PreScoreState = state.read(_PRE_SCORE_STATE_KEY)
        labels = node_info.node.metadata.labels
        total = 0
        for topology_key, by_value in pre_score_state.topology_score.items():
            value = labels.get(topology_key)
            if value is not None:
                total += by_value.get(value, 0)
        return total

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        """Map [min, max] linearly onto [0, MAX_NODE_SCORE] (all 0 when every node scored the same)."""
        pre_score_state: _PreScoreState = state.read(_PRE_SCORE_STATE_KEY)
        if not pre_score_state.topology_score or not scores:
            return
        min_count = min(scores)
        max_min_diff = max(scores) - min_count
        for i, score in enumerate(scores):
            normalized = 0.0
            if max_min_diff > 0:
                normalized = float(MAX_NODE_SCORE) * ((score - min_count) / max_min_diff)
            scores[i] = int(normalized)


def _missing_state_message(key: str) -> str:
    return f'error reading "{key}" from cycleState: not found'
