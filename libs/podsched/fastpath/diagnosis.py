"""A cycle's diagnosis on columns: the per-node statuses of a cycle in which every node failed, kept as
one status index per row over the few distinct statuses, instead of a map of thousands of entries.

It is a NodeToStatus (podsched.framework.interface) that answers what the cycle and DefaultPreemption
ask of every failed cycle, the FitError histogram and the potential nodes for preemption, with array
operations, and builds the map itself only when a reader asks for it (a filter service sending the
diagnosis, the preemptor's nominated node, a test)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress

import numpy as np

from podsched.fastpath.columns import I64, Obj
from podsched.framework.interface import NodeToStatus
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Code, Status


class ColumnDiagnosis(NodeToStatus):
    """Every row's status is `distinct[status_index[row]]`; the map, when built, is in the order
    NodeByNode visits the nodes (round-robin from `start`). `nodes` is the node list the rows
    follow (the snapshot's)."""

    __slots__ = ("_distinct", "_index", "_names", "_nodes", "_start", "_status_index")

    def __init__(
        self,
        names: Obj,
        index: dict[str, int],
        status_index: I64,
        distinct: list[Status],
        start: int,
        nodes: Sequence[NodeInfo],
    ) -> None:
        super().__init__()
        self._statuses: dict[str, Status] | None = None  # type: ignore[assignment]
        self._names = names
        self._index = index
        self._status_index = status_index
        self._distinct = distinct
        self._start = start
        self._nodes = nodes

    @property
    def statuses(self) -> dict[str, Status]:
        if self._statuses is None:
            names = self._names.tolist()
            of_row = np.empty(len(self._distinct), object)
            of_row[:] = self._distinct
            row_statuses = of_row[self._status_index].tolist()
            start = self._start
            statuses = dict(zip(names[start:], row_statuses[start:], strict=True))
            statuses.update(zip(names[:start], row_statuses[:start], strict=True))
            self._statuses = statuses
        return self._statuses

    @statuses.setter
    def statuses(self, statuses: dict[str, Status]) -> None:
        self._statuses = statuses

    def get(self, node: str) -> Status:
        row = self._index.get(node) if self._statuses is None else None
        return super().get(node) if row is None else self._distinct[int(self._status_index[row])]

    def nodes_with_code(self, code: Code, all_nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
        if self._statuses is not None or all_nodes is not self._nodes:  # the map may have changed
            return super().nodes_with_code(code, all_nodes)
        matching = [status.code == code for status in self._distinct]
        if all(matching):  # PostFilter's usual question: every node failed for a reason preemption may help
            return list(all_nodes)
        if not any(matching):
            return []
        return list(compress(all_nodes, np.array(matching, np.bool_)[self._status_index].tolist()))

    def reason_counts(self, num_all_nodes: int) -> dict[str, int]:
        if self._statuses is not None:
            return super().reason_counts(num_all_nodes)
        counts: dict[str, int] = {}
        nodes_per_status = np.bincount(self._status_index, minlength=len(self._distinct)).tolist()
        for status, nodes in zip(self._distinct, nodes_per_status, strict=True):
            for reason in status.reasons if nodes else ():
                counts[reason] = counts.get(reason, 0) + nodes
        self._count_absent(counts, num_all_nodes - len(self._status_index))
        return counts
