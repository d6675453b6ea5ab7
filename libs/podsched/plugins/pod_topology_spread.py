"""PodTopologySpread: DoNotSchedule constraints bound the skew of matching pods across topology
domains (Filter); ScheduleAnyway constraints prefer the least crowded domains (Score). Upstream
plugins/podtopologyspread (common.go, filtering.go, scoring.go).

Only the constraints written in the pod spec are used. Upstream can also apply cluster-level default
constraints (the system defaults: zone maxSkew 5 and hostname maxSkew 3, ScheduleAnyway), but those
take their label selector from the Services, ReplicationControllers, ReplicaSets and StatefulSets
selecting the pod; podsched has none of those objects, so the defaults would always build an empty
selector and upstream then drops them. Leaving them out therefore changes no decision, and with no
defaulting every node must carry all the topology keys (upstream's requireAllTopologies).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from podsched.api.labels import selector_matches
from podsched.api.types import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    LabelSelector,
    Node,
    Pod,
)
from podsched.framework.cycle_state import CycleState
from podsched.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    ASSIGNED_POD_UPDATE,
    NODE_ADD,
    NODE_UPDATE,
    ClusterEventWithHint,
)
from podsched.framework.interface import MAX_NODE_SCORE, PreFilterExtensions, PreFilterResult
from podsched.framework.node_info import NodeInfo, PodInfo
from podsched.framework.status import Code, Status
from podsched.plugins import names
from podsched.plugins.node_affinity import RequiredNodeAffinity, get_required_node_affinity
from podsched.plugins.taint_toleration import find_untolerated_taint

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME = "kubernetes.io/hostname"
NODE_INCLUSION_POLICY_HONOR = "Honor"
NODE_INCLUSION_POLICY_IGNORE = "Ignore"

_MAX_INT32 = 2**31 - 1
_MAX_INT64 = 2**63 - 1
_PRE_FILTER_STATE_KEY = "PreFilter" + names.POD_TOPOLOGY_SPREAD
_PRE_SCORE_STATE_KEY = "PreScore" + names.POD_TOPOLOGY_SPREAD
# The node list PreFilter was given (every node in the snapshot), for PreScore when no lister is wired.
_ALL_NODES_STATE_KEY = "AllNodes" + names.POD_TOPOLOGY_SPREAD


# --- constraints (common.go) ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """topologySpreadConstraint: a v1 constraint with its selector parsed (matchLabelKeys merged)
    and defaults applied (minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None  # None selects nothing
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        return selector_matches(self.selector, labels)

    def matches_node_inclusion_policies(self, pod: Pod, node: Node, required: RequiredNodeAffinity) -> bool:
        """Honor nodeAffinityPolicy: only nodes the pod could select count; Honor nodeTaintsPolicy:
        only nodes whose NoSchedule/NoExecute taints the pod tolerates count."""
        if self.node_affinity_policy == NODE_INCLUSION_POLICY_HONOR and not required.match(node):
            return False
        return not (
            self.node_taints_policy == NODE_INCLUSION_POLICY_HONOR
            and find_untolerated_taint(node.spec.taints, pod.spec.tolerations, (TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE))
            is not None
        )


def _merge_match_label_keys(
    selector: LabelSelector | None, pod_labels: Mapping[str, str], keys: Sequence[str]
) -> LabelSelector | None:
    """mergeLabelSetWithSelector: the pod's values of matchLabelKeys are ANDed into the selector (a
    nil selector stays nil: it selects nothing either way)."""
    if selector is None:
        return None
    extra = tuple((key, pod_labels[key]) for key in keys if key in pod_labels)
    if not extra:
        return selector
    return LabelSelector(selector.match_labels + extra, selector.match_expressions)


def spread_constraints(pod: Pod, action: str) -> list[SpreadConstraint]:
    """filterTopologySpreadConstraints: the pod's constraints with this whenUnsatisfiable."""
    result: list[SpreadConstraint] = []
    for c in pod.spec.topology_spread_constraints:
        if c.when_unsatisfiable != action:
            continue
        result.append(
            SpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=_merge_match_label_keys(c.label_selector, pod.labels, c.match_label_keys),
                min_domains=c.min_domains if c.min_domains is not None else 1,
                node_affinity_policy=c.node_affinity_policy or NODE_INCLUSION_POLICY_HONOR,
                node_taints_policy=c.node_taints_policy or NODE_INCLUSION_POLICY_IGNORE,
            )
        )
    return result


def _node_has_all_topology_keys(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints."""
    return all(c.topology_key in labels for c in constraints)


def _count_pods_matching(pod_infos: Sequence[PodInfo], selector: LabelSelector | None, namespace: str) -> int:
    """countPodsMatchSelector: terminating pods and other namespaces do not count. An empty selector
    counts nothing here (upstream returns 0 for selector.Empty()), although it matches every pod in
    the self-match and AddPod/RemovePod checks."""
    if selector is not None and selector.is_empty:
        return 0
    count = 0
    for info in pod_infos:
        pod = info.pod
        if pod.metadata.deletion_timestamp is not None or pod.metadata.namespace != namespace:
            continue
        if selector_matches(selector, pod.metadata.labels):
            count += 1
    return count


# --- Filter (filtering.go) ------------------------------------------------------------------------


class _CriticalPaths:
    """The two topology values with the fewest matching pods; nums[0] always holds the minimum.

    Two suffice only because preemption removes pods from one node at a time, on a copy of the state
    per node (upstream's CAVEAT); nums[1] may then no longer be the true second minimum."""

    __slots__ = ("nums", "values")

    def __init__(self, values: list[str] | None = None, nums: list[int] | None = None) -> None:
        self.values = values if values is not None else ["", ""]
        self.nums = nums if nums is not None else [_MAX_INT32, _MAX_INT32]

    def clone(self) -> _CriticalPaths:
        return _CriticalPaths(list(self.values), list(self.nums))

    def update(self, value: str, num: int) -> None:
        values, nums = self.values, self.nums
        index = 0 if value == values[0] else 1 if value == values[1] else -1
        if index >= 0:
            nums[index] = num
            if nums[0] > nums[1]:
                values.reverse()
                nums.reverse()
        elif num < nums[0]:
            values[1], nums[1] = values[0], nums[0]
            values[0], nums[0] = value, num
        elif num < nums[1]:
            values[1], nums[1] = value, num


class _PreFilterState:
    """preFilterState: per constraint, matching pods per topology value and the critical paths.
    Mutated by AddPod/RemovePod, hence clone(); constraints are shared."""

    __slots__ = ("constraints", "critical_paths", "tp_value_to_match_num")

    def __init__(
        self,
        constraints: list[SpreadConstraint],
        critical_paths: list[_CriticalPaths],
        tp_value_to_match_num: list[dict[str, int]],
    ) -> None:
        self.constraints = constraints
        self.critical_paths = critical_paths
        self.tp_value_to_match_num = tp_value_to_match_num

    def clone(self) -> _PreFilterState:
        return _PreFilterState(
            self.constraints,
            [paths.clone() for paths in self.critical_paths],
            [dict(counts) for counts in self.tp_value_to_match_num],
        )

    def min_match_num(self, index: int, min_domains: int) -> int:
        """The global minimum for the skew; 0 while fewer than minDomains domains are eligible."""
        if len(self.tp_value_to_match_num[index]) < min_domains:
            return 0
        return self.critical_paths[index].nums[0]


def _pre_filter_state(pod: Pod, nodes: Sequence[NodeInfo]) -> _PreFilterState:
    """calPreFilterState."""
    constraints = spread_constraints(pod, DO_NOT_SCHEDULE)
    if not constraints:
        return _PreFilterState([], [], [])
    counts: list[dict[str, int]] = [{} for _ in constraints]
    required = get_required_node_affinity(pod)
    for node_info in nodes:
        node = node_info.node
        labels = node.metadata.labels
        if not _node_has_all_topology_keys(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if not c.matches_node_inclusion_policies(pod, node, required):
                continue
            value = labels[c.topology_key]
            counts[i][value] = counts[i].get(value, 0) + _count_pods_matching(
                node_info.pods, c.selector, pod.metadata.namespace
            )
    critical_paths: list[_CriticalPaths] = []
    for by_value in counts:
        paths = _CriticalPaths()
        for value, num in by_value.items():
            paths.update(value, num)
        critical_paths.append(paths)
    return _PreFilterState(constraints, critical_paths, counts)


# --- Score (scoring.go) ---------------------------------------------------------------------------


def topology_normalizing_weight(size: int) -> float:
    """log(size + 2): counts in topologies with few domains are not watered down by big ones."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    """`maxSkew - 1` is added so that small differences between domains weigh less."""
    return count * weight + (max_skew - 1)


def _round_half_away_from_zero(value: float) -> int:
    """Go's math.Round (Python's round() rounds half to even)."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    """Read-only after PreScore (shared by clones)."""

    constraints: list[SpreadConstraint]
    # Nodes lacking a topology key: scored 0 and left out of min/max.
    ignored_nodes: frozenset[str]
    # Per constraint: topology value -> matching pods (hostname constraints count in Score).
    topology_value_to_pod_counts: list[dict[str, int]]
    topology_normalizing_weight: list[float]
    # Whether each scored node (in PreScore's order) is ignored: normalize_score gets scores only.
    ignored_positions: tuple[bool, ...]


class PodTopologySpread:
    """Filter: a DoNotSchedule constraint fails a node lacking its topology key
    (UnschedulableAndUnresolvable) or whose domain would exceed maxSkew (Unschedulable: removing
    matching pods can help). Score: ScheduleAnyway constraints favor domains with fewer matching pods.

    `all_nodes` returns every node of the current snapshot (upstream's shared lister), which PreScore
    needs because pods on filtered-out nodes still count for their domain. Without it, PreScore uses
    the node list PreFilter was given in the same cycle, else the nodes it is scoring."""

    name = names.POD_TOPOLOGY_SPREAD

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable."""
        return [
            ClusterEventWithHint(event)
            for event in (NODE_ADD, NODE_UPDATE, ASSIGNED_POD_ADD, ASSIGNED_POD_UPDATE, ASSIGNED_POD_DELETE)
        ]

    def __init__(self, all_nodes: Callable[[], Sequence[NodeInfo]] | None = None) -> None:
        self._all_nodes = all_nodes

    # --- PreFilter / extensions --------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(_ALL_NODES_STATE_KEY, nodes)
        pre_filter_state = _pre_filter_state(pod, nodes)
        if not pre_filter_state.constraints:
            return None, Status(Code.SKIP)
        state.write(_PRE_FILTER_STATE_KEY, pre_filter_state)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        pre_filter_state = state.get(_PRE_FILTER_STATE_KEY)
        if not isinstance(pre_filter_state, _PreFilterState):
            return Status.error(self.name, _missing_state_message(_PRE_FILTER_STATE_KEY))
        _update_with_pod(pre_filter_state, pod_to_add.pod, pod_to_schedule, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        pre_filter_state = state.get(_PRE_FILTER_STATE_KEY)
        if not isinstance(pre_filter_state, _PreFilterState):
            return Status.error(self.name, _missing_state_message(_PRE_FILTER_STATE_KEY))
        _update_with_pod(pre_filter_state, pod_to_remove.pod, pod_to_schedule, node_info.node, -1)
        return None

    # --- Filter ------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        pre_filter_state = state.get(_PRE_FILTER_STATE_KEY)
        if not isinstance(pre_filter_state, _PreFilterState):
            return Status.error(self.name, _missing_state_message(_PRE_FILTER_STATE_KEY))
        labels = node_info.node.metadata.labels
        pod_labels = pod.metadata.labels
        for i, c in enumerate(pre_filter_state.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unresolvable(self.name, ERR_REASON_NODE_LABEL_NOT_MATCH)
            # existing matching pods + 1 if the pod matches itself - global minimum <= maxSkew
            min_match_num = pre_filter_state.min_match_num(i, c.min_domains)
            self_match_num = 1 if c.matches(pod_labels) else 0
            match_num = pre_filter_state.tp_value_to_match_num[i].get(value, 0)
            if match_num + self_match_num - min_match_num > c.max_skew:
                return Status.unschedulable(self.name, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None

    # --- Score -------------------------------------------------------------------------------------

    def _cluster_nodes(self, state: CycleState, scored: Sequence[NodeInfo]) -> Sequence[NodeInfo]:
        if self._all_nodes is not None:
            return self._all_nodes()
        recorded = state.get(_ALL_NODES_STATE_KEY)
        return recorded if recorded is not None else scored

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        all_nodes = self._cluster_nodes(state, nodes)
        if not all_nodes:
            return Status(Code.SKIP)
        constraints = spread_constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return Status(Code.SKIP)

        # 1. Domains of the nodes being scored; nodes lacking a key are ignored.
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for node_info in nodes:
            labels = node_info.node.metadata.labels
            if not _node_has_all_topology_keys(labels, constraints):
                ignored.add(node_info.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key != LABEL_HOSTNAME:  # per-node counts are taken in Score
                    counts[i].setdefault(labels[c.topology_key], 0)
        weights: list[float] = []
        for i, c in enumerate(constraints):
            size = len(nodes) - len(ignored) if c.topology_key == LABEL_HOSTNAME else len(counts[i])
            weights.append(topology_normalizing_weight(size))

        # 2. Matching pods in those domains, on every node of the cluster that counts.
        required = get_required_node_affinity(pod)
        namespace = pod.metadata.namespace
        for node_info in all_nodes:
            node = node_info.node
            labels = node.metadata.labels
            if not _node_has_all_topology_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not c.matches_node_inclusion_policies(pod, node, required):
                    continue
                value = labels[c.topology_key]
                if value not in counts[i]:  # no scored node in this domain (or a hostname constraint)
                    continue
                counts[i][value] += _count_pods_matching(node_info.pods, c.selector, namespace)

        state.write(
            _PRE_SCORE_STATE_KEY,
            _PreScoreState(
                constraints,
                frozenset(ignored),
                counts,
                weights,
                tuple(n.name in ignored for n in nodes),
            ),
        )
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Weighted matching-pod counts of the node's domains (more pods, higher raw score)."""
        pre_score_state: _PreScoreState = state.read(_PRE_SCORE_STATE_KEY)
        if node_info.name in pre_score_state.ignored_nodes:
            return 0
        labels = node_info.node.metadata.labels
        total = 0.0
        for i, c in enumerate(pre_score_state.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                count = _count_pods_matching(node_info.pods, c.selector, pod.metadata.namespace)
            else:
                count = pre_score_state.topology_value_to_pod_counts[i].get(value, 0)
            total += score_for_count(count, c.max_skew, pre_score_state.topology_normalizing_weight[i])
        return _round_half_away_from_zero(total)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        """Invert onto [0, MAX_NODE_SCORE]: the fewest matching pods scores highest; ignored nodes 0.

        `scores` must be aligned with the nodes given to PreScore (the framework scores the same
        list), since this is how ignored nodes are recognized."""
        pre_score_state: _PreScoreState = state.read(_PRE_SCORE_STATE_KEY)
        ignored = pre_score_state.ignored_positions
        if len(ignored) != len(scores):
            raise ValueError(f"{self.name}: {len(scores)} scores for the {len(ignored)} nodes given to PreScore")
        min_score = _MAX_INT64
        max_score = 0
        for score, is_ignored in zip(scores, ignored, strict=True):
            if is_ignored:
                continue
            min_score = min(min_score, score)
            max_score = max(max_score, score)
        for i, score in enumerate(scores):
            if ignored[i]:
                scores[i] = 0
            elif max_score == 0:
                scores[i] = MAX_NODE_SCORE
            else:
                scores[i] = MAX_NODE_SCORE * (max_score + min_score - score) // max_score


def _update_with_pod(state: _PreFilterState, updated: Pod, preemptor: Pod, node: Node, delta: int) -> None:
    """updateWithPod: a pod of the preemptor's namespace appears on (+1) or leaves (-1) the node."""
    if updated.metadata.namespace != preemptor.metadata.namespace:
        return
    labels = node.metadata.labels
    if not _node_has_all_topology_keys(labels, state.constraints):
        return
    required = get_required_node_affinity(preemptor)
    updated_labels = updated.metadata.labels
    for i, c in enumerate(state.constraints):
        if not c.matches(updated_labels):
            continue
        if not c.matches_node_inclusion_policies(preemptor, node, required):
            continue
        value = labels[c.topology_key]
        num = state.tp_value_to_match_num[i].get(value, 0) + delta
        state.tp_value_to_match_num[i][value] = num
        state.critical_paths[i].update(value, num)


def _missing_state_message(key: str) -> str:
    return f'reading "{key}" from cycleState: not found'
