"""One scheduling cycle for one pod (upstream schedule_one.go: schedulePod, findNodesThatFitPod,
findNodesThatPassFilters, prioritizeNodes, selectHost) and, when no node fits, the framework's
PostFilter plugins.

Pure: it reads a snapshot and returns a decision. Binding, status patches and preemption's
evictions are the caller's job (binder service or simulator)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from podsched.api.types import Pod, PodDisruptionBudget
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView, NodeToStatus, PodNominator, PostFilterResult
from podsched.framework.node_info import NodeInfo, Snapshot
from podsched.framework.runtime import Framework, PreFilterOutcome
from podsched.framework.status import Code, Status
from podsched.scheduler.fit_error import FitError

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 50
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int, num_all_nodes: int) -> int:
    """Below 100 nodes every node is checked; otherwise an adaptive share (50% - N/125, at least 5%),
    never fewer than 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score
    if percentage <= 0:
        percentage = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        percentage = max(percentage, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num_nodes = num_all_nodes * percentage // 100
    return max(num_nodes, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class CycleResult:
    """The outcome of one attempt. Exactly one of `node_name` (schedule there) or `fit_error`/`error`."""

    pod: Pod
    node_name: str = ""
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    fit_error: FitError | None = None
    error: str = ""
    rejector_plugins: set[str] = field(default_factory=set)
    post_filter: PostFilterResult | None = None  # nominating info (None: leave nominatedNodeName as is)
    post_filter_status: Status | None = None  # None: no PostFilter plugin ran

    @property
    def message(self) -> str:
        if self.error:
            return self.error
        return self.fit_error.message() if self.fit_error else ""


class CycleEvaluation(Protocol):
    """How one cycle runs Filter and Score for one pod: an execution strategy of the framework's
    plugins. `NodeByNode` calls the plugins' methods on each node; the column strategy
    (podsched.fastpath) evaluates every node at once where every plugin that runs offers column
    methods. Both give the same answers; the cycle around them (the nominated node first, the
    round-robin search, selectHost, PostFilter) is SchedulingAlgorithm's, once."""

    def pre_filter(self) -> PreFilterOutcome:
        """PreFilter; afterwards the strategy knows the nodes the pod may go to."""
        ...

    def num_nodes(self) -> int:
        """How many nodes Filter considers (PreFilter may have narrowed them)."""
        ...

    def passes(self, node_name: str) -> bool:
        """Whether the pod passes every filter on this node (one of those PreFilter left)."""
        ...

    def find_feasible(self, start: int, to_find: int) -> tuple[Sequence[str], int]:
        """Visit the nodes round-robin from `start` until `to_find` pass: (their names in visit
        order, how many nodes were visited)."""
        ...

    def diagnosis(self) -> tuple[NodeToStatus, set[str]]:
        """After a search that found nothing: every visited node's status (in visit order) and the
        plugins that rejected the pod."""
        ...

    def scores(self) -> Sequence[int] | npt.NDArray[np.int64] | None:
        """PreScore and Score over the nodes the search found, aligned with them (None: PreScore
        failed)."""
        ...

    def post_filter_state(self) -> CycleState:
        """The cycle state as PostFilter reads it (PreFilter's data in it)."""
        ...


class EvaluationStrategy(Protocol):
    """A strategy that evaluates the cycles it can (the column strategy, podsched.fastpath.strategy)."""

    def evaluation(self, pod: Pod, snapshot: Snapshot) -> CycleEvaluation | None:
        """The cycle on columns, or None where a plugin, the pod or the cluster needs NodeByNode."""
        ...

    def track_changes(self) -> Callable[[Any], None]:
        """From now on only reported changes refresh the strategy's state; returns the `Cluster`
        listener that reports them."""
        ...

    def mark_dirty(self, node_name: str) -> None:
        """Report a change of this node (its Node object or its pods)."""
        ...


class NodeByNode:
    """The plugins' own methods, node by node (upstream's findNodesThatPassFilters)."""

    def __init__(self, framework: Framework, pod: Pod, snapshot: Snapshot) -> None:
        self.framework = framework
        self.pod = pod
        self.snapshot = snapshot
        self.state = CycleState()
        self._nodes: Sequence[NodeInfo] = snapshot.node_info_list
        self._allowed: set[str] | None = None
        self._diagnosis = NodeToStatus()
        self._feasible: list[NodeInfo] = []

    def pre_filter(self) -> PreFilterOutcome:
        all_nodes = self.snapshot.node_info_list
        outcome = self.framework.run_pre_filter_plugins(self.state, self.pod, all_nodes)
        if outcome.status is None and outcome.result is not None and outcome.result.node_names is not None:
            wanted = self._allowed = outcome.result.node_names
            self._nodes = [n for n in all_nodes if n.name in wanted]
            self._diagnosis.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                [f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(outcome.narrowing_plugins))}]"],
            )
        return outcome

    def num_nodes(self) -> int:
        return len(self._nodes)

    def passes(self, node_name: str) -> bool:
        node_info = self.snapshot.get(node_name)
        if node_info is None or (self._allowed is not None and node_name not in self._allowed):
            return False
        return self.framework.run_filter_plugins_with_nominated_pods(self.state, self.pod, node_info) is None

    def find_feasible(self, start: int, to_find: int) -> tuple[list[str], int]:
        nodes = self._nodes
        num_all = len(nodes)
        feasible = self._feasible
        diagnosis = self._diagnosis
        processed = 0
        run_filters = self.framework.run_filter_plugins_with_nominated_pods
        state, pod = self.state, self.pod
        for i in range(num_all):
            node_info = nodes[(start + i) % num_all]
            processed += 1
            status = run_filters(state, pod, node_info)
            if status is None:
                feasible.append(node_info)
                if len(feasible) >= to_find:
                    break
            else:
                diagnosis.set(node_info.name, status)
        return [node_info.name for node_info in feasible], processed

    def diagnosis(self) -> tuple[NodeToStatus, set[str]]:
        rejectors = {status.plugin for status in self._diagnosis.statuses.values() if status.plugin}
        return self._diagnosis, rejectors

    def scores(self) -> Sequence[int] | None:
        if self.framework.run_pre_score_plugins(self.state, self.pod, self._feasible) is not None:
            return None
        return self.framework.run_score_plugins(self.state, self.pod, self._feasible)

    def post_filter_state(self) -> CycleState:
        return self.state


class SchedulingAlgorithm:
    """Holds what persists across cycles: the round-robin start index, the tie-break RNG and the
    column strategy's state (None: every cycle runs node by node)."""

    def __init__(
        self,
        framework: Framework,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
        columns: EvaluationStrategy | None = None,
    ) -> None:
        self.framework = framework
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.rng = rng  # None: ties between top-scored nodes go to the first in node order
        self.columns = columns
        self.next_start_node_index = 0

    def schedule(
        self,
        pod: Pod,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        nominator: PodNominator | None,
        now: float,
        post_filter: bool = True,
    ) -> CycleResult:
        """One cycle for `pod`. `post_filter=False` is schedulingAlgorithm without the PostFilter
        that schedulingCycle runs after it: a pod-group cycle calls preemption for the whole group."""
        evaluation = self.columns.evaluation(pod, snapshot) if self.columns is not None and len(snapshot) else None
        if evaluation is None:
            evaluation = NodeByNode(self.framework, pod, snapshot)
        return self.run_cycle(evaluation, pod, snapshot, pdbs, nominator, now, post_filter)

    def schedule_on_columns(
        self,
        pod: Pod,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        nominator: PodNominator | None,
        now: float,
    ) -> CycleResult | None:
        """`schedule` when the column strategy applies to this pod on this cluster; None (and nothing
        done) otherwise."""
        evaluation = self.columns.evaluation(pod, snapshot) if self.columns is not None and len(snapshot) else None
        if evaluation is None:
            return None
        return self.run_cycle(evaluation, pod, snapshot, pdbs, nominator, now)

    def run_cycle(
        self,
        evaluation: CycleEvaluation,
        pod: Pod,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        nominator: PodNominator | None,
        now: float,
        post_filter: bool = True,
    ) -> CycleResult:
        """schedulePod: findNodesThatFitPod, then prioritizeNodes and selectHost, or PostFilter."""
        if len(snapshot) == 0:
            return CycleResult(pod, error=NO_NODES_AVAILABLE)
        outcome = evaluation.pre_filter()
        if outcome.status is not None:
            fit_error = FitError(len(snapshot), NodeToStatus(outcome.status), outcome.status.message)
            return self._failed(
                evaluation, pod, fit_error, outcome.rejector_plugins, snapshot, pdbs, nominator, now, post_filter
            )

        # A pod nominated by an earlier preemption tries its nominated node first.
        nominated = pod.status.nominated_node_name
        if nominated and evaluation.passes(nominated):
            return CycleResult(pod, nominated, 1, 1)

        # Round-robin from where the last cycle stopped, until enough feasible nodes are found
        # (percentageOfNodesToScore).
        feasible: Sequence[str] = ()
        processed = 0
        num_nodes = evaluation.num_nodes()
        if num_nodes:
            to_find = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, num_nodes)
            start = self.next_start_node_index % num_nodes
            feasible, processed = evaluation.find_feasible(start, to_find)
            self.next_start_node_index = (start + processed) % num_nodes
        if not feasible:
            diagnosis, rejectors = evaluation.diagnosis()
            fit_error = FitError(len(snapshot), diagnosis)
            return self._failed(evaluation, pod, fit_error, rejectors, snapshot, pdbs, nominator, now, post_filter)
        if len(feasible) == 1:
            return CycleResult(pod, feasible[0], processed, 1)
        scores = evaluation.scores()
        if scores is None:
            return CycleResult(pod, error="PreScore failed")
        return CycleResult(pod, feasible[select_host(scores, self.rng)], processed, len(feasible))

    def _failed(
        self,
        evaluation: CycleEvaluation,
        pod: Pod,
        fit_error: FitError,
        rejectors: set[str],
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        nominator: PodNominator | None,
        now: float,
        post_filter: bool = True,
    ) -> CycleResult:
        """No node fits: the FitError, then the PostFilter plugins' answer, their message last in it."""
        result = CycleResult(pod, fit_error=fit_error, rejector_plugins=rejectors)
        if post_filter and self.framework.post_filter_plugins:
            cluster = ClusterView(snapshot, pdbs, nominator, now)
            state = evaluation.post_filter_state()
            answer, status = self.framework.run_post_filter_plugins(state, pod, fit_error.node_to_status, cluster)
            fit_error.post_filter_msg = status.message
            result.post_filter, result.post_filter_status = answer, status
        return result


def select_host(scores: Sequence[int] | npt.NDArray[np.int64], rng: random.Random | None) -> int:
    """selectHost: the index of the highest score. Ties are broken uniformly at random (reservoir
    sampling, drawing exactly upstream's numbers) when an RNG is injected, else by node order."""
    totals = np.asarray(scores, np.int64)
    if rng is None:
        return int(np.argmax(totals))
    # Only a score at least as high as every one before it can change the choice.
    best_so_far = np.maximum.accumulate(totals)
    events = np.flatnonzero(totals[1:] >= best_so_far[:-1]) + 1
    best_index = 0
    best_score = int(totals[0])
    ties = 1
    values = totals.tolist()
    for index in events.tolist():
        score = values[index]
        if score > best_score:
            best_score, best_index, ties = score, index, 1
        else:
            ties += 1
            if rng.randrange(ties) == 0:
                best_index = index
    return best_index
