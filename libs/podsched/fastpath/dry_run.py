"""The preemption dry run on columns: a DryRunExecutor for the Evaluator (podsched.preemption) that
runs SelectVictimsOnNode on many nodes at once (fastpath.victims) and feeds each node's outcome, in
dry-run order, to the Evaluator's own DryRunAccumulator, which says when to stop. The Evaluator
then picks the node as it always does. Each node's outcome is kept (NodeOutcomes) for the dry runs
after it: the pods of one PostFilterRun are mostly alike, and between two of them, or two requests,
only the nodes whose pods or nominated load changed are computed again.

It applies to the pods and clusters the column strategy handles (ColumnStrategy.inputs); any other dry
run, and the rest of one that meets a pod slot outside the exact range, goes to `fallback`. So does
every dry run whose PostFilter plugin selects victims its own way (a VictimPolicy other than the
default: DefaultPreemption's `pdbPolicy: Strict`, PreemptionToleration's exemptions): the columns
hold upstream's SelectVictimsOnNode only, and those opt-ins are rare enough to run node by node."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from podsched.api.types import PodDisruptionBudget
from podsched.fastpath.columns import F64, I64, Bool, NodeColumns, Obj
from podsched.fastpath.fit_status import fit_statuses
from podsched.fastpath.victims import (
    CANDIDATE,
    FILTERED,
    NO_VICTIM_ERROR,
    NO_VICTIMS,
    ChunkOutcome,
    NominatedLoad,
    select_victims,
)
from podsched.framework.interface import ResourceCheck
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Status
from podsched.preemption.evaluator import DryRun, DryRunAccumulator, DryRunExecutor
from podsched.preemption.tie_breaks import Candidate, VictimSummary
from podsched.preemption.victims import NO_VICTIMS_MESSAGE, NodeVictims

if TYPE_CHECKING:
    from podsched.fastpath.strategy import ColumnStrategy

# CycleState key: what a cycle on columns computed, (pod, (profile, shape, nominated load)); its
# PostFilter state carries it, so the dry run of the same cycle need not compute it again.
COLUMN_INPUTS_KEY = "fastpath/column-inputs"

_NAME = attrgetter("name")
# Nodes per chunk at least (numpy's per-call cost is not worth fewer); each further chunk doubles.
MIN_CHUNK = 64


class OutcomeMemory:
    """Where a column strategy's dry runs keep what they found (a NodeOutcomes table): one per
    VectorizedDryRun by default; executors built per request (the preemption service's) share one
    per profile, so that each request computes only what changed since the last."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table: NodeOutcomes | None = None


class VectorizedDryRun:
    """A DryRunExecutor on the columns of one profile's column strategy."""

    def __init__(self, strategy: ColumnStrategy, fallback: DryRunExecutor, memory: OutcomeMemory | None = None) -> None:
        self.strategy = strategy
        self.fallback = fallback
        self.vectorized_runs = 0  # dry runs decided here (tests and benchmarks look)
        self.memory = memory or OutcomeMemory()  # what the dry runs so far found, per node row

    def __call__(self, run: DryRun) -> None:
        if not run.policy.is_default:  # see the module docstring: the plain per-node path decides
            self.fallback(run)
            return
        known = run.state.get(COLUMN_INPUTS_KEY)  # the cycle was evaluated on these columns
        inputs = known[1] if known is not None and known[0] is run.pod else self.strategy.inputs(run.pod, run.snapshot)
        if inputs is None:
            self.fallback(run)
            return
        self.vectorized_runs += 1
        _, shape, load = inputs
        columns = self.strategy.columns
        nominated = _dense(columns, load)
        outcomes = self._outcomes_for(columns, shape.priority, shape.checks, run, nominated)
        nodes, accumulator = run.nodes, run.accumulator
        rows = _rows_of(columns, nodes)
        # Outcomes are computed chunk by chunk (each chunk twice the last), and fed to the
        # accumulator once those known can end the search: usually once per dry run.
        fed = end = 0
        size = max(accumulator.n, MIN_CHUNK)
        while end < len(rows):
            unknown = outcomes.unknown(rows[end : end + size])
            if unknown.size:
                if not columns.ensure_slots(unknown):  # a pod outside the exact range: the rest node by node
                    if fed < end and _feed(outcomes, rows[fed:end], columns, shape.checks, accumulator):
                        return
                    self.fallback(replace(run, nodes=nodes[end:]))
                    return
                outcomes.store(
                    select_victims(columns, unknown, shape.priority, shape.checks, nominated, run.pdbs, run.now),
                    columns,
                )
            end = min(end + size, len(rows))
            size *= 2
            if end == len(rows) or outcomes.may_end_search(rows[fed:end], accumulator):
                if _feed(outcomes, rows[fed:end], columns, shape.checks, accumulator):
                    return
                fed = end

    def _outcomes_for(
        self,
        columns: NodeColumns,
        priority: int,
        checks: tuple[ResourceCheck, ...],
        run: DryRun,
        nominated: NominatedLoad | None,
    ) -> NodeOutcomes:
        """The outcomes known for this preemptor's shape with these PDBs, brought up to date with
        the columns, the nominated load and `now` (a new table if the shape or the PDBs differ)."""
        key = (priority, checks, _pdb_key(run.pdbs))
        outcomes = self.memory.table
        if outcomes is None or not outcomes.serves(key, columns):
            outcomes = self.memory.table = NodeOutcomes(key, columns, len(checks))
        outcomes.refresh(columns, nominated, run.now)
        return outcomes


class NodeOutcomes:
    """SelectVictimsOnNode's outcome per node row, for one preemptor shape (priority and resource
    checks) with one set of PDBs, kept for the dry runs after it.

    The pods of a PostFilterRun are decided one after another on one copy of the cluster, and most
    are alike (PreemptionBasic: 32 preemptors of one template): between two of their dry runs only
    the nominated load changes, on the node the earlier pod was nominated to and where it cleared
    nominations; between two requests, the nodes the log changed. A row's outcome depends only on
    the row (its node and pods: the columns' change log says when it is re-read), the nominated load
    on it, the key, and `now` if the search ordered a pod without a start time (which counts as
    started now); a dry run computes the rows it reaches that are unknown or changed, and reads the
    others from here."""

    def __init__(self, key: Hashable, columns: NodeColumns, checks: int) -> None:
        n, k = columns.n, columns.k
        self.key = key
        self.layout = columns.layout
        self.epoch = columns.content_epoch
        self.now = 0.0
        self.known: Bool = np.zeros(n, np.bool_)
        self.uses_now: Bool = np.zeros(n, np.bool_)  # searched among pods without a start time
        self.kind: I64 = np.zeros(n, np.int64)
        self.fit_fails: list[Bool] = [np.zeros(n, np.bool_) for _ in range(1 + checks)]
        self.unresolvable: Bool = np.zeros(n, np.bool_)
        self.violations: I64 = np.zeros(n, np.int64)
        self.victim_count: I64 = np.zeros(n, np.int64)
        self.top_priority: I64 = np.zeros(n, np.int64)
        self.priority_sum: I64 = np.zeros(n, np.int64)
        self.earliest_top_start: F64 = np.zeros(n)
        self.victims: Obj = np.empty((n, k), object)
        self.candidates: Obj = np.empty(n, object)  # Candidate objects made so far (candidates_of)
        self.nominated_count: I64 = np.zeros(n, np.int64)
        self.nominated_amounts: list[I64] = [np.zeros(n, np.int64) for _ in range(checks)]

    def serves(self, key: Hashable, columns: NodeColumns) -> bool:
        return key == self.key and columns.layout == self.layout

    def refresh(self, columns: NodeColumns, nominated: NominatedLoad | None, now: float) -> None:
        """Forget the rows re-read since the last dry run, those whose nominated load changed, and,
        at another `now`, those whose outcome read it."""
        if now != self.now:
            self.known &= ~self.uses_now
            self.now = now
        changed = columns.rows_changed_since(self.epoch)
        if changed is None:
            self.known[:] = False
        else:
            self.known[changed] = False
        self.epoch = columns.content_epoch
        if nominated is None:
            count, amounts = (
                np.zeros(columns.n, np.int64),
                [np.zeros(columns.n, np.int64) for _ in self.nominated_amounts],
            )
        else:
            count, amounts = nominated.count, nominated.amounts
        moved = count != self.nominated_count
        for amount, before in zip(amounts, self.nominated_amounts, strict=True):
            moved |= amount != before
        self.known &= ~moved
        self.nominated_count, self.nominated_amounts = count, amounts

    def unknown(self, rows: I64) -> I64:
        """The rows among these whose outcome must be computed."""
        unknown: I64 = rows[~self.known[rows]]
        return unknown

    def may_end_search(self, rows: I64, accumulator: DryRunAccumulator) -> bool:
        """Whether feeding these rows' outcomes (all known) would end the search: the accumulator's
        stop condition on the candidates among them (each list capped at n)."""
        candidate = self.kind[rows] == CANDIDATE
        violating = int((candidate & (self.violations[rows] > 0)).sum())
        non_violating = len(accumulator.non_violating) + int(candidate.sum()) - violating
        violating += len(accumulator.violating)
        n = accumulator.n
        return non_violating > 0 and min(non_violating, n) + min(violating, n) >= n

    def store(self, chunk: ChunkOutcome, columns: NodeColumns) -> None:
        """Keep these outcomes, computed at `self.now` on the current columns."""
        rows = chunk.rows
        self.known[rows] = True
        self.kind[rows] = chunk.kind
        width = chunk.victims.shape[1]
        unstarted = np.isnan(columns.slot["start"][rows, :width])
        unstarted &= np.arange(width) < columns.col["slot_count"][rows, None]
        searched = (chunk.kind == CANDIDATE) | (chunk.kind == NO_VICTIM_ERROR)
        self.uses_now[rows] = searched & unstarted.any(axis=1)
        for kept, fails in zip(self.fit_fails, chunk.fit_fails, strict=True):
            kept[rows] = fails
        self.unresolvable[rows] = chunk.unresolvable
        self.violations[rows] = chunk.violations
        self.victim_count[rows] = chunk.victim_count
        self.top_priority[rows] = chunk.top_priority
        self.priority_sum[rows] = chunk.priority_sum
        self.earliest_top_start[rows] = chunk.earliest_top_start
        if width > self.victims.shape[1]:  # the columns' pod slots grew
            wider: Obj = np.empty((self.victims.shape[0], width), object)
            wider[:, : self.victims.shape[1]] = self.victims
            self.victims = wider
        self.victims[rows, :width] = chunk.victims
        self.candidates[rows] = None

    def candidates_of(self, rows: I64, names: list[str]) -> list[Candidate | None]:
        """The Candidate of each of these rows (named `names`; all known, CANDIDATE or
        NO_VICTIM_ERROR), None where no victim is needed. A row's Candidate is made once and
        handed to every dry run that reaches the row while its outcome holds: the Evaluator and
        its callers only read candidates."""
        found: list[Candidate | None] = self.candidates[rows].tolist()
        missing = [k for k, candidate in enumerate(found) if candidate is None]
        if not missing:
            return found
        made = rows[missing]
        counts = self.victim_count[made].tolist()
        violations = self.violations[made].tolist()
        top_priority = self.top_priority[made].tolist()
        priority_sum = self.priority_sum[made].tolist()
        earliest = self.earliest_top_start[made].tolist()
        victims = self.victims[made, : max(counts)].tolist()
        for j, k in enumerate(missing):
            if counts[j]:
                summary = VictimSummary(top_priority[j], priority_sum[j], earliest[j])
                candidate = Candidate(names[k], victims[j][: counts[j]], violations[j], summary)
                found[k] = self.candidates[made[j]] = candidate
        return found


def _pdb_key(pdbs: Sequence[PodDisruptionBudget]) -> tuple[Hashable, ...]:
    """What the dry run reads of the PDBs: which pods each matches and how many it lets go."""
    return tuple(
        (pdb.namespace, pdb.selector, pdb.status.disruptions_allowed, frozenset(pdb.status.disrupted_pods))
        for pdb in pdbs
    )


def _rows_of(columns: NodeColumns, nodes: Sequence[NodeInfo]) -> I64:
    """The column rows of these nodes, in their order. Usually they are every node of the snapshot
    from the candidate offset on (no node failed a filter preemption cannot help with): a rotation
    of the rows, told without looking each name up."""
    n = columns.n
    if len(nodes) == n and n:
        offset = columns.index[nodes[0].name]
        infos = columns.infos
        if nodes[: n - offset] == infos[offset:] and nodes[n - offset :] == infos[:offset]:
            return np.roll(np.arange(n, dtype=np.int64), -offset)
    return np.fromiter(map(columns.index.__getitem__, map(_NAME, nodes)), np.int64, len(nodes))


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


def _feed(
    outcomes: NodeOutcomes,
    rows: I64,
    columns: NodeColumns,
    checks: Sequence[ResourceCheck],
    accumulator: DryRunAccumulator,
) -> bool:
    """Feed these rows' outcomes (all known) to the accumulator in order, as SelectVictimsOnNode's;
    True when it says stop. Candidates (and nodes that need no victim: the accumulator reports
    those) go in runs of consecutive ones; the rejected nodes between them, which never end the
    search, in runs too, their statuses made only if the accumulator asks (no candidate found)."""
    kind = outcomes.kind[rows]
    names: list[str] = columns.names[rows].tolist()
    made: list[list[Status]] = []

    def rejection_statuses() -> list[Status]:
        if not made:
            rejected: Obj = np.empty(kind.size, object)
            filtered = np.flatnonzero(kind == FILTERED)
            if filtered.size:
                fails = [f[rows[filtered]] for f in outcomes.fit_fails]
                index, statuses = fit_statuses(fails, outcomes.unresolvable[rows[filtered]], checks)
                rejected[filtered] = _object_array(statuses)[index]
            rejected[kind == NO_VICTIMS] = Status.unresolvable("", NO_VICTIMS_MESSAGE)
            made.append(rejected.tolist())
        return made[0]

    def run_of(start: int, end: int) -> Callable[[], list[Status]]:
        return lambda: rejection_statuses()[start:end]

    decided_positions = np.flatnonzero((kind == CANDIDATE) | (kind == NO_VICTIM_ERROR))
    decided = decided_positions.tolist()
    candidates = outcomes.candidates_of(rows[decided_positions], [names[i] for i in decided])
    run: list[Candidate] = []  # consecutive candidates (no rejected node between them), fed at once

    def feed_run() -> bool:
        if not run:
            return False
        stop = accumulator.add_candidates(run)
        run.clear()
        return stop

    previous = 0
    for i, candidate in zip(decided, candidates, strict=True):
        if i > previous:
            if feed_run():
                return True
            accumulator.add_rejections(names[previous:i], run_of(previous, i))
        previous = i + 1
        if candidate is not None:
            run.append(candidate)
        # Fits with every pod reprieved: the accumulator's "expected at least one victim".
        elif feed_run() or accumulator.add(NodeVictims(names[i], [], 0, None)):
            return True
    if feed_run():
        return True
    if previous < len(names):
        accumulator.add_rejections(names[previous:], run_of(previous, len(names)))
    return False


def _object_array(items: Sequence[object]) -> Obj:
    array: Obj = np.empty(len(items), object)
    for i, item in enumerate(items):
        array[i] = item
    return array
