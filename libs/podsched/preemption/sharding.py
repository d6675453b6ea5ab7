"""The preemption dry run split across workers, with the answer a single worker gives.

The sequential dry run walks the candidate nodes in order (from the random offset) and stops as
soon as the DryRunAccumulator says so. Here the nodes are taken in windows: each window is cut
into one contiguous shard per worker, the shards run in parallel, and their outcomes are fed to
the accumulator in node order, stopping exactly where the sequential walk stops. The first window
holds as many nodes as candidates are wanted (usually enough); each further window doubles.

A worker may stop its own shard early: once its shard alone has `n` candidates, one of them free
of PDB violations, the merged walk is certain to stop at or before that node, so later nodes of
the shard can never be needed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from podsched.api.types import Pod, PodDisruptionBudget
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo
from podsched.framework.runtime import Framework
from podsched.preemption.evaluator import DryRun, DryRunExecutor
from podsched.preemption.victims import DEFAULT_VICTIM_POLICY, NodeVictims, VictimPolicy, select_victims_on_node

# Runs each shard (a list of nodes, in order) with the wanted candidate count and the PostFilter
# plugin's victim policy; returns, per shard, the outcomes of a prefix of its nodes in order (a
# shard may stop early, see above). Worker processes rebuild the policy from their own profile.
ShardRunner = Callable[[Sequence[Sequence[NodeInfo]], int, VictimPolicy], Sequence[Sequence[NodeVictims]]]


def split(nodes: Sequence[NodeInfo], parts: int) -> list[Sequence[NodeInfo]]:
    """Contiguous, near-equal shards in order; never an empty one."""
    parts = max(1, min(parts, len(nodes)))
    size, extra = divmod(len(nodes), parts)
    shards: list[Sequence[NodeInfo]] = []
    start = 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        shards.append(nodes[start:end])
        start = end
    return shards


def sharded_dry_run(run_shards: ShardRunner, workers: int) -> DryRunExecutor:
    """A DryRunExecutor that hands windows of the ordered nodes to `run_shards`."""

    def execute(run: DryRun) -> None:
        nodes_in_order, accumulator = run.nodes, run.accumulator
        position = 0
        window = max(accumulator.n, 1)
        while position < len(nodes_in_order):
            shards = split(nodes_in_order[position : position + window], workers)
            for outcomes in run_shards(shards, accumulator.n, run.policy):
                for outcome in outcomes:
                    if accumulator.add(outcome):
                        return
            position += window
            window *= 2

    return execute


def run_shard(
    framework: Framework,
    state: CycleState,
    pod: Pod,
    nodes: Sequence[NodeInfo],
    pdbs: Sequence[PodDisruptionBudget],
    now: float,
    wanted: int,
    policy: VictimPolicy = DEFAULT_VICTIM_POLICY,
) -> list[NodeVictims]:
    """One worker's share: SelectVictimsOnNode on each node in order, stopping once this shard
    alone would satisfy the accumulator (see the module docstring)."""
    outcomes: list[NodeVictims] = []
    candidates = 0
    free_of_violations = 0
    for node_info in nodes:
        outcome = select_victims_on_node(framework, state.clone(), pod, node_info.clone(), pdbs, now, policy)
        outcomes.append(outcome)
        if outcome.is_candidate:
            candidates += 1
            free_of_violations += outcome.num_pdb_violations == 0
            if free_of_violations and candidates >= wanted:
                break
    return outcomes
