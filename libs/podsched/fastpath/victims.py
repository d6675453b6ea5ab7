"""SelectVictimsOnNode (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go) for a
resource-only preemptor, on many nodes at once.

For a preemptor whose every filter except NodeResourcesFit depends on the Node object alone, a
node reaching the dry run already passed those filters (its status was Unschedulable, and they
only say UnschedulableAndUnresolvable), and removing or re-adding pods cannot change them. So each
"run the filters" step of upstream's algorithm is the resource fit of the pods left on the node
plus the nominated pods of >= priority, and the whole search is arithmetic on pod slots:

1. remove every lower-priority pod (fit test: the node is a candidate only if the preemptor fits);
2. sort them most important first (priority desc, start time asc; stable, so equal pods keep the
   node's pod order), split by PDB violation (each PDB's allowance consumed in that order);
3. reprieve violating pods, then the others, each most important first: a pod stays if the
   preemptor still fits with it back, else it is a victim. The greedy pass is sequential per node,
   so it loops over the slot index, vectorized across nodes;
4. when both groups were non-empty the victims are re-sorted by importance (upstream #128307).

The tie-break inputs of pickOneNodeForPreemption are computed here too, so only the chosen
candidates are turned back into Python objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from podsched.api.types import PodDisruptionBudget
from podsched.fastpath.columns import F64, I64, Bool, NodeColumns, Obj
from podsched.framework.interface import ResourceCheck
from podsched.preemption.pdb import pdb_matches_pod
from podsched.preemption.tie_breaks import INT32_OFFSET

# Outcome of one node, in the order the accumulator looks at them.
NO_VICTIMS = 0  # no lower-priority pod: "No preemption victims found for incoming pod"
FILTERED = 1  # the preemptor does not fit even with every lower-priority pod gone
CANDIDATE = 2
NO_VICTIM_ERROR = 3  # fits with every pod reprieved: upstream's "expected at least one victim" error

_MIN_INT64 = np.iinfo(np.int64).min


@dataclass(slots=True)
class ChunkOutcome:
    """Per node of a chunk, in dry-run order."""

    rows: I64
    kind: I64  # NO_VICTIMS, FILTERED, CANDIDATE or NO_VICTIM_ERROR
    fit_fails: list[Bool]  # FILTERED: pods check, then one per ResourceCheck
    unresolvable: Bool
    violations: I64  # numPDBViolations
    victim_count: I64
    top_priority: I64  # victims[0].priority (the highest)
    priority_sum: I64  # sum of (priority + 2**31)
    earliest_top_start: F64  # GetEarliestPodStartTime
    victims: Obj  # (nodes, slots) pods, victims first, in the final victims order

    def truncate(self, length: int) -> ChunkOutcome:
        return ChunkOutcome(
            self.rows[:length],
            self.kind[:length],
            [f[:length] for f in self.fit_fails],
            self.unresolvable[:length],
            self.violations[:length],
            self.victim_count[:length],
            self.top_priority[:length],
            self.priority_sum[:length],
            self.earliest_top_start[:length],
            self.victims[:length],
        )


@dataclass(slots=True)
class NominatedLoad:
    """Requests of the nominated pods (priority >= the preemptor's) per node row: upstream adds
    them to the node before every filter run of the dry run."""

    count: I64
    amounts: list[I64]  # aligned with the ResourceCheck list


def _pdb_rules(
    columns: NodeColumns, rows: I64, width: int, pdbs: Sequence[PodDisruptionBudget]
) -> list[tuple[Bool, int]]:
    """(slot matches of each PDB that can match anything, minus disrupted pods; allowance)."""
    rules: list[tuple[Bool, int]] = []
    if not pdbs:
        return rules
    counts = columns.col["slot_count"]
    versions = columns.col["slot_version"]
    pods = columns.slot["pod"]
    for pdb in pdbs:
        selector = pdb.selector
        if selector is None or selector.is_empty:
            continue  # matches nothing in the scheduler
        cache = columns.slot_cache(("pdb", pdb.namespace, selector))
        stale = rows[cache.version[rows] != versions[rows]]
        for row in stale.tolist():
            count = int(counts[row])
            cache.matches[row, :] = False
            for j in range(count):
                cache.matches[row, j] = pdb_matches_pod(pdb, pods[row, j])
            cache.version[row] = versions[row]
        matches = cache.matches[rows, :width]
        disrupted = pdb.status.disrupted_pods
        if disrupted and matches.any():
            matches = matches.copy()
            for i, j in np.argwhere(matches).tolist():
                if pods[rows[i], j].name in disrupted:
                    matches[i, j] = False  # already being evicted: consumes nothing
        rules.append((matches, pdb.status.disruptions_allowed))
    return rules


def select_victims(
    columns: NodeColumns,
    rows: I64,
    priority: int,
    checks: Sequence[ResourceCheck],
    nominated: NominatedLoad | None,
    pdbs: Sequence[PodDisruptionBudget],
    now: float,
) -> ChunkOutcome:
    """Dry-run the preemptor on these node rows (slots must be current: `ensure_slots`)."""
    col = columns.col
    count = col["slot_count"][rows]
    nodes = rows.size
    width = max(int(count.max()) if nodes else 0, 1)
    slot_index = np.broadcast_to(np.arange(width), (nodes, width))
    valid = slot_index < count[:, None]
    prio = columns.slot["prio"][rows, :width]
    potential = valid & (prio < priority)
    num_potential = potential.sum(axis=1)

    # 1. Every lower-priority pod removed: free room per checked resource (nominated pods added).
    slot_requests = [columns.slot_requests(c.resource)[rows, :width] for c in checks]
    free_pods = col["alloc_pods"][rows] - count + num_potential
    free = [
        columns.free(c.resource)[rows] + np.where(potential, requests, 0).sum(axis=1)
        for c, requests in zip(checks, slot_requests, strict=True)
    ]
    if nominated is not None:
        free_pods = free_pods - nominated.count[rows]
        free = [f - amount[rows] for f, amount in zip(free, nominated.amounts, strict=True)]
    fit_fails = [free_pods < 1] + [c.value > f for c, f in zip(checks, free, strict=True)]
    fits_all = ~np.logical_or.reduce(fit_fails) if fit_fails else np.ones(nodes, np.bool_)
    unresolvable = np.zeros(nodes, np.bool_)
    for c, fail in zip(checks, fit_fails[1:], strict=True):
        unresolvable |= fail & (c.value > columns.allocatable(c.resource)[rows])

    kind = np.where(num_potential == 0, NO_VICTIMS, np.where(fits_all, CANDIDATE, FILTERED)).astype(np.int64)
    # Only the nodes that can fit the preemptor once every lower-priority pod is gone go on to the
    # reprieve search; when most nodes are taken (by nominated preemptors, late in a burst), that is
    # a small share of the chunk.
    live = np.flatnonzero(kind == CANDIDATE)
    violations = np.zeros(nodes, np.int64)
    victim_count = np.zeros(nodes, np.int64)
    top_priority = np.full(nodes, _MIN_INT64, np.int64)
    priority_sum = np.zeros(nodes, np.int64)
    earliest_top_start = np.full(nodes, np.inf)
    victims: Obj = np.empty((nodes, width), object)
    if live.size:
        reprieved = _reprieve(
            columns,
            rows[live],
            width,
            slot_index[live],
            potential[live],
            prio[live],
            [r[live] for r in slot_requests],
            free_pods[live],
            [f[live] for f in free],
            checks,
            pdbs,
            now,
        )
        violations[live], victim_count[live], top_priority[live], priority_sum[live] = reprieved[:4]
        earliest_top_start[live], victims[live] = reprieved[4:]
        # Fits with every pod reprieved: upstream's "expected at least one victim" error.
        kind[live[victim_count[live] == 0]] = NO_VICTIM_ERROR
    return ChunkOutcome(
        rows,
        kind,
        fit_fails,
        unresolvable,
        violations,
        victim_count,
        top_priority,
        priority_sum,
        earliest_top_start,
        victims,
    )


def _reprieve(
    columns: NodeColumns,
    rows: I64,
    width: int,
    slot_index: I64,
    potential: Bool,
    prio: I64,
    slot_requests: list[I64],
    free_pods: I64,
    free: list[I64],
    checks: Sequence[ResourceCheck],
    pdbs: Sequence[PodDisruptionBudget],
    now: float,
) -> tuple[I64, I64, I64, I64, F64, Obj]:
    """Steps 2-4 for nodes where the preemptor fits with every lower-priority pod removed (`free`:
    the room then): (PDB violations, victim count, top victim priority, priority sum, earliest start
    of the top-priority victims, pods with the victims first in their final order), per node."""
    # 2. Most important first (potential victims ahead of everything else), then PDB violations.
    start = columns.slot["start"][rows, :width]
    start = np.where(np.isnan(start), now, start)
    order = np.lexsort((slot_index, start, -prio, ~potential), axis=-1)

    def by_importance(values: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
        return np.take_along_axis(values, order, axis=1)

    potential_s = by_importance(potential)
    violating_s = np.zeros(potential.shape, np.bool_)
    for matches, allowed in _pdb_rules(columns, rows, width, pdbs):
        # A pod that already violates an earlier PDB consumes none of the later ones (upstream stops
        # at the first PDB that goes below zero).
        counted = by_importance(matches) & potential_s & ~violating_s
        violating_s |= counted & (np.cumsum(counted, axis=1) > allowed)

    # 3. Reprieve order: violating pods, then the rest, each group most important first.
    group = np.where(potential_s, np.where(violating_s, 0, 1), 2)
    regroup = np.argsort(group, axis=1, kind="stable")
    reprieve = np.take_along_axis(order, regroup, axis=1)

    def in_reprieve_order(values: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
        return np.take_along_axis(values, reprieve, axis=1)

    potential_r = in_reprieve_order(potential)
    violating_r = np.take_along_axis(violating_s, regroup, axis=1)
    prio_r = in_reprieve_order(prio)
    start_r = in_reprieve_order(start)
    requests_r = [in_reprieve_order(r) for r in slot_requests]
    victim = np.zeros(potential.shape, np.bool_)
    room_pods = free_pods
    room = free
    for j in range(int(potential.sum(axis=1).max())):
        trying = potential_r[:, j]
        room_pods_with = room_pods - 1
        fits = room_pods_with >= 1
        room_with = []
        for c, r, requests in zip(checks, room, requests_r, strict=True):
            value = r - requests[:, j]
            fits &= c.value <= value
            room_with.append(value)
        keep = trying & fits
        victim[:, j] = trying & ~fits
        room_pods = np.where(keep, room_pods_with, room_pods)
        room = [np.where(keep, w, r) for w, r in zip(room_with, room, strict=True)]

    # 4. Final victims order and the tie-break inputs.
    victim_count = victim.sum(axis=1)
    violations = (victim & violating_r).sum(axis=1)
    both_groups = np.asarray((potential_r & violating_r).any(axis=1) & (potential_r & ~violating_r).any(axis=1))
    resort = both_groups[:, None]
    final = np.lexsort((slot_index, np.where(resort, start_r, 0.0), np.where(resort, -prio_r, 0), ~victim), axis=-1)
    victims = np.take_along_axis(in_reprieve_order(columns.slot["pod"][rows, :width]), final, axis=1)
    top_priority = np.where(victim, prio_r, _MIN_INT64).max(axis=1)
    priority_sum = np.where(victim, prio_r + INT32_OFFSET, 0).sum(axis=1)
    top = victim & (prio_r == top_priority[:, None])
    earliest_top_start = np.where(top, start_r, np.inf).min(axis=1)
    return violations, victim_count, top_priority, priority_sum, earliest_top_start, victims
