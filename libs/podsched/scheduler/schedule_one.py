"""One scheduling cycle for one pod (upstream schedule_one.go: schedulePod, findNodesThatFitPod,
findNodesThatPassFilters, prioritizeNodes, selectHost) and, when no node fits, the framework's
PostFilter plugins.

Pure: it reads a snapshot and returns a decision. Binding, status patches and preemption's
evictions are the caller's job (binder service or simulator)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from podsched.api.types import Pod, PodDisruptionBudget
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView, NodeToStatus, PodNominator, PostFilterResult
from podsched.framework.node_info import NodeInfo, Snapshot
from podsched.framework.runtime import Framework
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


class SchedulingAlgorithm:
    """Holds what persists across cycles: the round-robin start index and the tie-break RNG."""

    def __init__(
        self,
        framework: Framework,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
    ) -> None:
        self.framework = framework
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.rng = rng  # None: ties between top-scored nodes go to the first in node order
        self.next_start_node_index = 0

    def schedule(
        self,
        pod: Pod,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        nominator: PodNominator | None,
        now: float,
    ) -> CycleResult:
        if len(snapshot) == 0:
            return CycleResult(pod, error=NO_NODES_AVAILABLE)
        state = CycleState()
        feasible, diagnosis, pre_filter_msg, rejectors = self._find_nodes_that_fit(state, pod, snapshot)
        if not feasible:
            fit_error = FitError(len(snapshot), diagnosis, pre_filter_msg)
            result = CycleResult(pod, fit_error=fit_error, rejector_plugins=rejectors)
            if self.framework.post_filter_plugins:
                self.run_post_filter(result, state, snapshot, pdbs, nominator, now)
            return result
        evaluated = len(feasible) + len(diagnosis.statuses)
        if len(feasible) == 1:
            return CycleResult(pod, feasible[0].name, evaluated, 1)
        if self.framework.run_pre_score_plugins(state, pod, feasible) is not None:
            return CycleResult(pod, error="PreScore failed")
        scores = self.framework.run_score_plugins(state, pod, feasible)
        return CycleResult(pod, self._select_host(feasible, scores), evaluated, len(feasible))

    def run_post_filter(
        self,
        result: CycleResult,
        state: CycleState,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        nominator: PodNominator | None,
        now: float,
    ) -> None:
        """PostFilter for a cycle that found no node (`result` holds its FitError): the plugins'
        answer goes into the result, their message into the FitError's last sentence."""
        assert result.fit_error is not None
        cluster = ClusterView(snapshot, pdbs, nominator, now)
        node_to_status = result.fit_error.node_to_status
        post_filter, status = self.framework.run_post_filter_plugins(state, result.pod, node_to_status, cluster)
        result.fit_error.post_filter_msg = status.message
        result.post_filter, result.post_filter_status = post_filter, status

    def _find_nodes_that_fit(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[list[NodeInfo], NodeToStatus, str, set[str]]:
        all_nodes = snapshot.node_info_list
        outcome = self.framework.run_pre_filter_plugins(state, pod, all_nodes)
        if outcome.status is not None:
            return [], NodeToStatus(outcome.status), outcome.status.message, outcome.rejector_plugins

        diagnosis = NodeToStatus()
        # A pod nominated by an earlier preemption tries its nominated node first.
        nominated = pod.status.nominated_node_name
        if nominated:
            node_info = snapshot.get(nominated)
            allowed = (
                outcome.result is None or outcome.result.node_names is None or nominated in outcome.result.node_names
            )
            passes = (
                node_info is not None
                and allowed
                and self.framework.run_filter_plugins_with_nominated_pods(state, pod, node_info) is None
            )
            if passes and node_info is not None:
                return [node_info], diagnosis, "", set()

        nodes: Sequence[NodeInfo] = all_nodes
        if outcome.result is not None and outcome.result.node_names is not None:
            wanted = outcome.result.node_names
            nodes = [n for n in all_nodes if n.name in wanted]
            diagnosis.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                [f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(outcome.narrowing_plugins))}]"],
            )
        feasible = self._find_nodes_that_pass_filters(state, pod, nodes, diagnosis)
        rejectors = {status.plugin for status in diagnosis.statuses.values() if status.plugin}
        return feasible, diagnosis, "", rejectors

    def _find_nodes_that_pass_filters(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], diagnosis: NodeToStatus
    ) -> list[NodeInfo]:
        """Check nodes round-robin from where the last cycle stopped, until enough feasible nodes
        are found (percentageOfNodesToScore)."""
        num_all = len(nodes)
        if num_all == 0:
            return []
        to_find = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, num_all)
        start = self.next_start_node_index % num_all
        feasible: list[NodeInfo] = []
        processed = 0
        run_filters = self.framework.run_filter_plugins_with_nominated_pods
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
        self.next_start_node_index = (start + processed) % num_all
        return feasible

    def _select_host(self, nodes: Sequence[NodeInfo], scores: Sequence[int]) -> str:
        """Highest total score; ties are broken uniformly at random (reservoir sampling) when an RNG
        is injected, else by node order."""
        best_index = 0
        best_score = scores[0]
        ties = 1
        for index in range(1, len(nodes)):
            score = scores[index]
            if score > best_score:
                best_score, best_index, ties = score, index, 1
            elif score == best_score and self.rng is not None:
                ties += 1
                if self.rng.randrange(ties) == 0:
                    best_index = index
        return nodes[best_index].name
