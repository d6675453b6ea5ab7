"""The preemption dry run split over workers (podsched.preemption.sharding) decides exactly what
the sequential dry run decides, for any number of workers. The shards run in-process here; the
preemption service runs the same function in worker processes (tested end to end in
tests/services)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_fastpath_equivalence import Workload, offsets, simulate, workload_objects, workloads

from podsched.framework.node_info import NodeInfo
from podsched.preemption.evaluator import DryRun
from podsched.preemption.sharding import run_shard, sharded_dry_run, split
from podsched.preemption.victims import NodeVictims, VictimPolicy
from podsched.simulator.engine import Simulator


def in_process_executor(workers: int, calls: list[int]):  # type: ignore[no-untyped-def]
    """A sharded executor whose shards run here, one after another."""

    def execute(run: DryRun) -> None:
        def run_shards(
            shards: Sequence[Sequence[NodeInfo]], wanted: int, policy: VictimPolicy
        ) -> list[list[NodeVictims]]:
            calls.append(len(shards))
            return [
                run_shard(run.framework, run.state, run.pod, shard, run.pdbs, run.now, wanted, policy)
                for shard in shards
            ]

        sharded_dry_run(run_shards, workers)(run)

    return execute


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads, st.integers(1, 5))
def test_sharded_dry_runs_end_every_simulation_exactly_like_one_worker(w: Workload, workers: int) -> None:
    one = simulate(Simulator(offset=offsets(w), columns=False), workload_objects(w))
    calls: list[int] = []
    many = simulate(
        Simulator(offset=offsets(w), columns=False, executor=in_process_executor(workers, calls)), workload_objects(w)
    )
    assert many.result() == one.result()
    assert many.cycles == one.cycles
    event("no dry run" if not calls else "sharded" if any(n > 1 for n in calls) else "one shard")


def test_split_is_contiguous_in_order_and_never_empty() -> None:
    items = list(range(10))
    assert split(items, 3) == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]  # type: ignore[arg-type]
    assert split(items[:2], 5) == [[0], [1]]  # type: ignore[arg-type]
    assert split(items, 1) == [items]  # type: ignore[arg-type]
