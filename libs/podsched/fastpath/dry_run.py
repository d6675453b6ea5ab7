"""The preemption dry run on columns: a DryRunExecutor for the Evaluator (podsched.preemption) that
runs SelectVictimsOnNode on many nodes at once (fastpath.victims) and feeds each node's outcome, in
dry-run order, to the Evaluator's own DryRunAccumulator, which says when to stop. The Evaluator
then picks the node as it always does.

It applies to the pods and clusters the column strategy handles (ColumnState.inputs); any other dry
run, and the rest of one that meets a pod slot outside the exact range, goes to `fallback`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from podsched.fastpath.columns import I64, NodeColumns
from podsched.fastpath.fit_status import fit_statuses
from podsched.fastpath.victims import (
    CANDIDATE,
    FILTERED,
    NO_VICTIMS,
    ChunkOutcome,
    NominatedLoad,
    ResourceCheck,
    select_victims,
)
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Status
from podsched.preemption.evaluator import DryRun, DryRunExecutor
from podsched.preemption.tie_breaks import VictimSummary
from podsched.preemption.victims import NO_VICTIMS_MESSAGE, NodeVictims

if TYPE_CHECKING:
    from podsched.fastpath.algorithm import ColumnState

# Nodes per chunk at least (numpy's per-call cost is not worth fewer); each further chunk doubles.
MIN_CHUNK = 64


class VectorizedDryRun:
    """A DryRunExecutor over the column state of one profile's framework."""

    def __init__(self, state: ColumnState, fallback: DryRunExecutor) -> None:
        self.state = state
        self.fallback = fallback
        self.vectorized_runs = 0  # dry runs decided here (tests and benchmarks look)

    def __call__(self, run: DryRun) -> None:
        inputs = self.state.inputs(run.pod, run.snapshot)
        if inputs is None:
            self.fallback(run)
            return
        self.vectorized_runs += 1
        _, shape, load = inputs
        columns = self.state.columns
        nominated = _dense(columns, load)
        index = columns.index
        nodes, accumulator = run.nodes, run.accumulator
        position = 0
        size = max(accumulator.n, MIN_CHUNK)
        while position < len(nodes):
            chunk_nodes = nodes[position : position + size]
            rows = np.fromiter((index[info.name] for info in chunk_nodes), np.int64, len(chunk_nodes))
            if not columns.ensure_slots(rows):  # a pod outside the exact range: the rest node by node
                self.fallback(replace(run, nodes=nodes[position:]))
                return
            chunk = select_victims(columns, rows, shape.priority, shape.checks, nominated, run.pdbs, run.now)
            for outcome in _outcomes(chunk, chunk_nodes, shape.checks):
                if accumulator.add(outcome):
                    return
            position += size
            size *= 2


def _dense(columns: NodeColumns, load: tuple[I64, I64, list[I64]] | None) -> NominatedLoad | None:
    """The nominated pods' load as full columns, as select_victims reads it."""
    if load is None:
        return None
    rows, counts, amounts = load
    count = np.zeros(columns.n, np.int64)
    count[rows] = counts
    dense = []
    for amount in amounts:
        column = np.zeros(columns.n, np.int64)
        column[rows] = amount
        dense.append(column)
    return NominatedLoad(count, dense)


def _outcomes(chunk: ChunkOutcome, nodes: Sequence[NodeInfo], checks: Sequence[ResourceCheck]) -> Iterator[NodeVictims]:
    """SelectVictimsOnNode's outcome per node of the chunk, in order, as the plain dry run gives it
    (a node that needs no victim is a success without victims: the accumulator reports it)."""
    kinds = chunk.kind.tolist()
    filtered = np.flatnonzero(chunk.kind == FILTERED)
    status_of: dict[int, Status] = {}
    if filtered.size:
        index, statuses = fit_statuses(
            [f[filtered] for f in chunk.fit_fails],
            chunk.unresolvable[filtered],
            checks,
        )
        status_of = dict(zip(filtered.tolist(), (statuses[i] for i in index.tolist()), strict=True))
    no_victims = Status.unresolvable("", NO_VICTIMS_MESSAGE)
    counts = chunk.victim_count.tolist()
    violations = chunk.violations.tolist()
    summaries = list(
        map(
            VictimSummary,
            chunk.top_priority.tolist(),
            chunk.priority_sum.tolist(),
            chunk.earliest_top_start.tolist(),
        )
    )
    widest = max(counts, default=0)
    victims = chunk.victims[:, :widest].tolist()  # one conversion for the chunk, then cut per node
    for i, kind in enumerate(kinds):
        name = nodes[i].name
        if kind == CANDIDATE:
            count = counts[i]
            row = victims[i] if count == widest else victims[i][:count]
            yield NodeVictims(name, row, violations[i], None, summaries[i])
        elif kind == NO_VICTIMS:
            yield NodeVictims(name, [], 0, no_victims)
        elif kind == FILTERED:
            yield NodeVictims(name, [], 0, status_of[i])
        else:  # fits with every pod reprieved: the accumulator's "expected at least one victim"
            yield NodeVictims(name, [], 0, None)
