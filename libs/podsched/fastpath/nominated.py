"""The nominated pods' load per node row, kept current from the nominator's change journal.

Filter counts a nominated pod of >= priority as already running on its node. Summing those pods per
request cost a Python loop over every nominated pod: during PreemptionBasic/1000Nodes, with hundreds
of preemptors nominated at once, that loop was a fifth of the filter service's CPU and a sixth of the
preemption service's. Here the sums are columns (per priority: pod count and each resource's total,
by node row) that each nomination change updates in place, and a request adds up the columns of the
priorities it counts.
"""

from __future__ import annotations

import numpy as np

from podsched.api.types import RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, Pod
from podsched.fastpath.columns import I64, NodeColumns, all_safe, request_is_safe
from podsched.framework.interface import ResourceCheck
from podsched.framework.node_info import PodInfo
from podsched.framework.resource import pod_requests
from podsched.queue.nominator import JournalReader, Nominator

COUNT = ""  # the pod-count column among a level's resource columns

# (rows with counted nominated pods, pod count per row, amount per ResourceCheck per row)
Load = tuple[I64, I64, list[I64]]


class OutOfRange(Exception):
    """A counted nominated pod requests an amount the vectorized arithmetic cannot add exactly."""


class NominatedColumns:
    """Per priority level, per node row: how many pods are nominated there and what they request.

    Kept in step with one Nominator (its journal position) and one NodeColumns (its row layout); a
    request with rows renumbered, or behind what the journal still holds, rebuilds from scratch. Pods
    whose requests are out of the exact range are kept aside and looked at one by one."""

    def __init__(self) -> None:
        self._journal: JournalReader | None = None
        self._layout = -1
        self._rows = 0
        self._resources: set[str] = {RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE}
        self._levels: dict[int, dict[str, I64]] = {}  # priority -> column name (COUNT or resource) -> per row
        self._aside: dict[str, tuple[PodInfo, int]] = {}  # uid -> (pod, row): requests out of range
        # The levels' sums for the last (levels counted, checks) asked, until a nomination changes:
        # the pods of a FindNodes batch share a priority and a shape, and adding up the node-long
        # columns for each of them was most of what a batch's nominated pods cost the filter.
        self._sums_key: tuple[tuple[int, ...], tuple[str, ...]] | None = None
        self._sums: tuple[I64, list[I64]] = (np.zeros(0, np.int64), [])
        self._sums_load: Load | None = None  # the sums at their non-zero rows

    def load(
        self, nominator: Nominator, columns: NodeColumns, pod: Pod, checks: tuple[ResourceCheck, ...]
    ) -> Load | None:
        """What Filter adds for `pod`: nominated pods of priority >= its own, itself excluded. None if
        there are none; raises OutOfRange if one of them requests an amount outside the exact range."""
        missing = {check.resource for check in checks} - self._resources
        if missing:
            self._resources |= missing
            self._layout = -1  # a new column: rebuild
        self._sync(nominator, columns)
        priority = pod.priority
        total_count, total_amounts = self._level_sums(priority, checks)
        own = nominator.nominated_pod_info(pod)  # as the nominator holds it (bare while its group is in flight)
        own_row = columns.index.get(nominator.nominated_node(pod), -1) if own is not None else -1
        own_counted = own is not None and own_row >= 0 and own.pod.priority >= priority and pod.uid not in self._aside
        if not own_counted and not any(
            uid != pod.uid and pod_info.pod.priority >= priority for uid, (pod_info, _) in self._aside.items()
        ):
            return self._sums_load  # the sums as they are: most pods are not nominated themselves
        count = total_count.copy()
        amounts = [amount.copy() for amount in total_amounts]
        if own_counted:
            assert own is not None
            # the pod itself is in the columns: take it out again
            request = pod_requests(own.pod)
            count[own_row] -= 1
            for amount, check in zip(amounts, checks, strict=True):
                amount[own_row] -= request.get(check.resource)
        for uid, (pod_info, row) in self._aside.items():
            other = pod_info.pod
            if uid == pod.uid or other.priority < priority:
                continue
            request = pod_requests(other)
            values = [request.get(check.resource) for check in checks]
            if not all_safe(values):
                raise OutOfRange
            count[row] += 1
            for amount, value in zip(amounts, values, strict=True):
                amount[row] += value
        rows = np.flatnonzero(count)
        if not len(rows):
            return None
        return rows, count[rows], [amount[rows] for amount in amounts]

    def _level_sums(self, priority: int, checks: tuple[ResourceCheck, ...]) -> tuple[I64, list[I64]]:
        """Per row, the pod count and each check's amount over the levels of priority >= `priority`,
        kept (with `_sums_load`) until the next nomination change. The arrays are read-only: a load
        is shared by every pod that asks the same."""
        key = (
            tuple(sorted(level_priority for level_priority in self._levels if level_priority >= priority)),
            tuple(check.resource for check in checks),
        )
        if key != self._sums_key:
            count = np.zeros(self._rows, np.int64)
            amounts = [np.zeros(self._rows, np.int64) for _ in checks]
            for level_priority in key[0]:
                level = self._levels[level_priority]
                count += level[COUNT]
                for amount, check in zip(amounts, checks, strict=True):
                    amount += level[check.resource]
            rows = np.flatnonzero(count)
            load = (rows, count[rows], [amount[rows] for amount in amounts]) if len(rows) else None
            for array in (count, *amounts, *((load[0], load[1], *load[2]) if load is not None else ())):
                array.flags.writeable = False
            self._sums_key, self._sums, self._sums_load = key, (count, amounts), load
        return self._sums

    def _sync(self, nominator: Nominator, columns: NodeColumns) -> None:
        journal = self._journal
        changes = journal.changes() if journal is not None and journal.nominator is nominator else None
        if changes is None or self._layout != columns.layout:
            self._rebuild(nominator, columns)
            return
        for pod_info, node_name, sign in changes:
            self._change(pod_info, columns.index.get(node_name), sign)

    def _rebuild(self, nominator: Nominator, columns: NodeColumns) -> None:
        self._journal = nominator.journal_reader()  # from now on; what is nominated now is read below
        self._sums_key = None
        self._levels = {}
        self._aside = {}
        self._rows = columns.n
        for node_name, pod_infos in nominator.items():
            row = columns.index.get(node_name)
            for pod_info in pod_infos:
                self._change(pod_info, row, 1)
        self._layout = columns.layout

    def _change(self, pod_info: PodInfo, row: int | None, sign: int) -> None:
        if row is None:  # nominated to a node this cluster does not have: Filter never visits it
            return
        self._sums_key = None
        pod = pod_info.pod
        request = pod_requests(pod)
        if not request_is_safe(request):
            if sign > 0:
                self._aside[pod.uid] = (pod_info, row)
            else:
                self._aside.pop(pod.uid, None)
            return
        level = self._levels.get(pod.priority)
        if level is None:
            level = {name: np.zeros(self._rows, np.int64) for name in (COUNT, *self._resources)}
            self._levels[pod.priority] = level
        level[COUNT][row] += sign
        for resource in self._resources:
            value = request.get(resource)
            if value:
                level[resource][row] += sign * value
