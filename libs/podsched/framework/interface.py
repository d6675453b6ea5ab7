"""One interface per extension point (upstream framework/interface.go).

Plugins are plain classes; the runtime calls only the methods of the extension points a plugin is
registered for. Filter returns None for Success because it runs once per node per pod."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from podsched.api.types import Pod, PodDisruptionBudget
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.status import Code, Status

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@dataclass(slots=True)
class PreFilterResult:
    """Nodes the pod can only go to (None: all nodes)."""

    node_names: set[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


_CODE = attrgetter("code")
_NAME = attrgetter("name")


class NodeToStatus:
    """Per-node statuses of one cycle, plus the status of every node absent from the map (upstream's
    NodeToStatus behind its NodeToStatusReader interface: the column strategy supplies a reader that
    keeps its statuses as columns, podsched.fastpath.diagnosis)."""

    __slots__ = ("_statuses", "absent")

    def __init__(self, absent: Status | None = None) -> None:
        self._statuses: dict[str, Status] = {}
        self.absent = absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def statuses(self) -> dict[str, Status]:
        """node name -> status, in the order the nodes were recorded."""
        return self._statuses

    @statuses.setter
    def statuses(self, statuses: dict[str, Status]) -> None:
        self._statuses = statuses

    def set(self, node: str, status: Status) -> None:
        self.statuses[node] = status

    def set_many(self, nodes: Iterable[str], statuses: Iterable[Status]) -> None:
        self.statuses.update(zip(nodes, statuses, strict=True))

    def get(self, node: str) -> Status:
        return self.statuses.get(node, self.absent)

    def nodes_with_code(self, code: Code, all_nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
        """NodesForStatusCode: nodes (in snapshot order) whose status has exactly this code."""
        statuses = self.statuses
        if self.absent.code == code:
            absent = self.absent
            return [n for n in all_nodes if statuses.get(n.name, absent).code == code]
        # Thousands of nodes per preemption: the loops run in C.
        named = set(compress(statuses.keys(), map(code.__eq__, map(_CODE, statuses.values()))))
        return list(compress(all_nodes, map(named.__contains__, map(_NAME, all_nodes))))

    def reason_counts(self, num_all_nodes: int) -> dict[str, int]:
        """How many nodes give each reason: every recorded node each of its status' reasons once,
        the other nodes of `num_all_nodes` the absent status' reasons (the FitError histogram)."""
        counts: dict[str, int] = {}
        for status in self.statuses.values():
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        self._count_absent(counts, num_all_nodes - len(self.statuses))
        return counts

    def _count_absent(self, counts: dict[str, int], absent: int) -> None:
        if absent > 0:
            for reason in self.absent.reasons:
                counts[reason] = counts.get(reason, 0) + absent


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""
    # Filled by DefaultPreemption so the caller can actuate without recomputing.
    victims: list[Pod] = field(default_factory=list)
    lower_priority_nominated_pods: list[Pod] = field(default_factory=list)
    # The candidates a preemption plugin weighed (DefaultPreemption: preemption.tie_breaks.Candidate,
    # in dry-run order), for metrics, traces and tests.
    candidates: list[Any] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What a PostFilter plugin reads besides the cycle state and Filter's diagnosis. Upstream's
    plugins reach the same through the framework handle: the snapshot and PDB listers, the
    nominator and the clock."""

    snapshot: Snapshot
    pdbs: Sequence[PodDisruptionBudget]
    nominator: PodNominator | None
    now: float


class PodNominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...


class Plugin(Protocol):
    name: str


@dataclass(frozen=True, slots=True)
class NodeSignature:
    """A plugin's SignPod fragment (upstream SignPlugin) for a pod whose Filter and Score verdicts on
    a node depend on this fragment of the pod and on the Node object alone: pods with equal keys get
    equal verdicts on a node, and for one pod, nodes with equal taints, unschedulable flag and values
    of `label_keys` get equal verdicts (None: the verdict reads the node's name too). The column
    strategy evaluates such a plugin once per distinct node and pod signature and keeps the verdict
    until the Node object changes."""

    key: Hashable
    label_keys: tuple[str, ...] | None


class SignPlugin(Plugin, Protocol):
    def sign_pod(self, pod: Pod) -> NodeSignature | None:
        """This pod's fragment, or None when its verdicts depend on more than the Node object. Read
        from the pod's spec only: the column strategy keeps it per spec (`ColumnStrategy.shape`)."""
        ...


@dataclass(frozen=True, slots=True)
class ResourceCheck:
    """One amount a resource filter checks against each node's free room, with its FitError reason."""

    resource: str
    value: int
    reason: str


class ColumnFitPlugin(Plugin, Protocol):
    def fit_checks(self, pod: Pod) -> tuple[ResourceCheck, ...]:
        """What Filter checks, in its order, besides room for one more pod: the column strategy
        evaluates these on every node at once (and in the preemption dry run). From the spec only."""
        ...


class NodeColumnsView(Protocol):
    """Node state as columns, as column methods read it: per node row, "alloc_cpu", "alloc_mem"
    (allocatable), "req_cpu", "req_mem" (requested), "nz_cpu", "nz_mem" (non-zero requested)."""

    def values(self, name: str, rows: npt.NDArray[np.int64] | None) -> npt.NDArray[np.int64]:
        """The column for these rows (None: every row)."""
        ...


class ColumnScorePlugin(Plugin, Protocol):
    def score_key(self, pod: Pod) -> Hashable:
        """Everything Score reads from the pod (its spec only): pods with equal keys score every node
        the same."""
        ...

    def score_columns(
        self, pod: Pod, nodes: NodeColumnsView, rows: npt.NDArray[np.int64] | None
    ) -> npt.NDArray[np.int64]:
        """Score (already normalized) for these node rows at once, as `score` gives it node by node."""
        ...


class PreFilterExtensions(Protocol):
    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...


class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None: ...


class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus, cluster: ClusterView
    ) -> tuple[PostFilterResult | None, Status]:
        """Called when Filter found no node. A Success result nominates its node; an Unschedulable
        status says why this plugin could not help (a result may still clear a nomination)."""
        ...


class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int: ...

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        """Rescale `scores` (aligned with the scored nodes) in place to [0, MAX_NODE_SCORE]."""
        ...


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> None:
    """helper.DefaultNormalizeScore: scale to [0, max_priority], optionally reversed."""
    max_count = max(scores, default=0)
    if max_count == 0:
        if reverse:
            for i in range(len(scores)):
                scores[i] = max_priority
        return
    for i, score in enumerate(scores):
        value = max_priority * score // max_count
        scores[i] = max_priority - value if reverse else value
