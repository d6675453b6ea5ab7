"""Column-major node state for the column strategy: one int64 numpy array per resource, rows in snapshot
order, kept current incrementally.

Two levels of freshness:
  * node columns (allocatable, requested, non-zero requests, pod count, ...) are brought up to date
    by `sync(snapshot)` at the start of every cycle, re-reading only the NodeInfos that changed;
  * pod slots (per node, the pods in NodeInfo order: priority, start time, requests) are only read
    when preemption needs them (`ensure_slots(rows)`), since a bind touches one node but a
    scheduling cycle without preemption never looks at pods.

What "changed" means depends on the mode. By default every sync compares each NodeInfo's
`generation` with the one read last time (about 0.15 ms at 5000 nodes): always right, whoever
mutates the NodeInfos. With `track_changes()` the owner promises to report every change through
`mark_dirty(node_name)` (or the cluster listener `on_cluster_change`), and sync re-reads only those.
Either way a change of the node list itself (nodes added, removed, reordered) is detected by
comparing the list with the previous one, and rows are carried over by NodeInfo identity.

Values must be exact in float64 and must not overflow int64 when scaled by 100 (the scores do);
rows holding a negative value or one of 2**52 or more are counted in `unsafe_rows` and the fast
strategy then leaves the cycle to the plugins node by node.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from podsched.api.types import RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, Node, Pod, Resource
from podsched.framework.node_info import NodeInfo, Snapshot
from podsched.framework.resource import pod_requests

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]
Obj = npt.NDArray[np.object_]

# Largest magnitude handled by the vectorized arithmetic (exact as float64; x * 100 fits int64).
SAFE_LIMIT = 2**52
# Pod slots per node allocated at first; grows (doubling) when a node holds more pods.
INITIAL_SLOTS = 8
# Row caches (static filter verdicts, static scores) kept per distinct pod signature.
MAX_ROW_CACHES = 256

# Node-level integer columns, all aligned with `NodeColumns.infos`.
NODE_COLUMNS = (
    "alloc_cpu",
    "alloc_mem",
    "alloc_eph",
    "alloc_pods",
    "req_cpu",
    "req_mem",
    "req_eph",
    "npods",
    "free_cpu",
    "free_mem",
    "free_eph",
    "free_pods",
    "nz_cpu",
    "nz_mem",
    "n_affinity",  # len(pods_with_affinity): any such pod sends the cycle node by node
    "generation",  # NodeInfo.generation when the row was read
    "static_version",  # changes whenever the row's Node object changes (labels, taints, ...)
    "slot_version",  # changes whenever the row's pod slots change
    "slot_count",  # pods in the slots (valid once the row's slots are read)
    "taints",  # interned spec.taints of the Node (equal ids: equal taint lists)
    "unschedulable",  # spec.unschedulable of the Node
)
_INT_SLOT_COLUMNS = ("prio", "cpu", "mem", "eph")


def all_safe(values: Iterable[int]) -> bool:
    """Whether the vectorized arithmetic reproduces every one of `values` exactly."""
    return all(0 <= value < SAFE_LIMIT for value in values)


def request_is_safe(request: Resource) -> bool:
    """Whether all of a pod's requests (cpu, memory, ephemeral storage, scalars) are in the exact range."""
    return all_safe((request.milli_cpu, request.memory, request.ephemeral_storage, *request.scalar.values()))


class ClusterChange(Protocol):
    """What `Cluster` reports to its listeners (podsched.cluster.store.Change)."""

    @property
    def kind(self) -> str: ...

    @property
    def old(self) -> object: ...

    @property
    def new(self) -> object: ...


class RowCache:
    """Arrays aligned with the node rows, computed from a node's Node object only (labels, taints,
    unschedulable): row r is valid while `version[r]` equals the columns' `static_version[r]`."""

    __slots__ = ("arrays", "epoch", "extra", "version")

    def __init__(self, n: int, arrays: dict[str, npt.NDArray[Any]]) -> None:
        self.arrays = arrays
        self.version: I64 = np.full(n, -1, np.int64)
        self.epoch = -1  # NodeColumns.static_epoch when the rows were last checked (-1: check all)
        self.extra: Any = None  # the owner's per-cache data (e.g. the interned statuses)

    def remap(self, source: I64, kept: Bool) -> None:
        for name, array in self.arrays.items():
            self.arrays[name] = array[source]
        version = self.version[source]
        version[~kept] = -1
        self.version = version
        self.epoch = -1


class ShapeCache:
    """Arrays aligned with the node rows that depend on the rows' resource columns (e.g. "a pod
    of this request fits"), all valid as of `NodeColumns.content_epoch == epoch`."""

    __slots__ = ("arrays", "epoch")

    def __init__(self) -> None:
        self.arrays: dict[str, npt.NDArray[Any]] = {}
        self.epoch = -1


class SlotCache:
    """A per-pod-slot boolean (e.g. "matches this PDB's selector"), valid for row r while
    `version[r]` equals the columns' `slot_version[r]`."""

    __slots__ = ("matches", "version")

    def __init__(self, n: int, k: int) -> None:
        self.matches: Bool = np.zeros((n, k), np.bool_)
        self.version: I64 = np.full(n, -1, np.int64)

    def remap(self, source: I64, kept: Bool) -> None:
        self.matches = self.matches[source]
        version = self.version[source]
        version[~kept] = -1
        self.version = version


class NodeColumns:
    """The cluster's nodes as columns. Not thread-safe; one instance per scheduling algorithm."""

    def __init__(self) -> None:
        self._versions = itertools.count(1)
        self.tracking = False
        self._full_check_pending = False
        self._dirty: set[str] = set()
        self.infos: list[NodeInfo] = []
        self._synced_list: list[NodeInfo] | None = None  # the snapshot node list of the last sync
        self.node_objects: list[Node | None] = []
        self.index: dict[str, int] = {}
        self.layout = 0  # bumped whenever rows are renumbered (index changes): row-aligned state elsewhere is stale
        self.names: Obj = np.empty(0, object)
        self.n = 0
        self.col: dict[str, I64] = {name: np.zeros(0, np.int64) for name in NODE_COLUMNS}
        self.alloc_scalar: dict[str, I64] = {}
        self.req_scalar: dict[str, I64] = {}
        self.unsafe: Bool = np.zeros(0, np.bool_)
        self.unsafe_rows = 0
        self.affinity_pods = 0  # sum of n_affinity
        # Pod slots: (n, k) arrays, row r valid up to slot_count[r] once slot_dirty[r] is False.
        self.k = INITIAL_SLOTS
        self.slot_dirty: Bool = np.zeros(0, np.bool_)
        self.slot_unsafe: Bool = np.zeros(0, np.bool_)
        self.slot: dict[str, npt.NDArray[Any]] = self._new_slots(0, self.k)
        self.slot_scalar: dict[str, I64] = {}
        # Interned Node features, so node-static verdicts can be computed once per distinct node.
        self._taint_ids: dict[Hashable, int] = {}
        self._label_codes: dict[str, I64] = {}  # label key -> per-row value id (0: no such label)
        self._label_values: dict[str, dict[str, int]] = {}
        self.row_caches: OrderedDict[Hashable, RowCache] = OrderedDict()
        self.shape_caches: OrderedDict[Hashable, ShapeCache] = OrderedDict()
        self.slot_caches: dict[Hashable, SlotCache] = {}
        # Change logs: rows re-read (any column) and rows whose Node object changed, so caches
        # catch up on what changed since they were last brought up to date.
        self._content_log: list[int] = []
        self._content_base = 0
        self._static_log: list[int] = []
        self._static_base = 0

    # --- change tracking ---------------------------------------------------------------------

    def track_changes(self) -> None:
        """From now on only rows reported through `mark_dirty` (or `on_cluster_change`) are
        re-read. The next sync still checks every row once."""
        self.tracking = True
        self._full_check_pending = True

    def mark_dirty(self, node_name: str) -> None:
        if node_name:
            self._dirty.add(node_name)

    def on_cluster_change(self, change: ClusterChange) -> None:
        """A `Cluster` listener: a pod change dirties the node(s) it was and is bound to, a node
        change dirties that node (added and removed nodes are found by sync anyway)."""
        for obj in (change.old, change.new):
            if isinstance(obj, Pod):
                self.mark_dirty(obj.spec.node_name)
            elif isinstance(obj, Node):
                self.mark_dirty(obj.name)

    # --- sync --------------------------------------------------------------------------------

    def sync(self, snapshot: Snapshot) -> None:
        """Make the columns describe `snapshot` (rows in its node order)."""
        self._trim_logs()
        infos = snapshot.node_info_list
        # A snapshot's node list is never changed in place: the one synced last needs no comparing
        # (the cycles of one FindNodes request share a snapshot).
        if infos is not self._synced_list and (len(infos) != self.n or infos != self.infos):
            self._restructure(infos)
        self._synced_list = infos
        if self.tracking and not self._full_check_pending:
            if self._dirty:
                index = self.index
                for name in self._dirty:
                    row = index.get(name)
                    if row is not None:
                        self._read_row(row, self.infos[row])
                self._dirty.clear()
            return
        self._full_check_pending = False
        self._dirty.clear()
        generations = np.fromiter((info.generation for info in infos), np.int64, len(infos))
        for row in np.flatnonzero(generations != self.col["generation"]).tolist():
            self._read_row(row, infos[row])

    def _restructure(self, infos: Sequence[NodeInfo]) -> None:
        """Carry rows over by NodeInfo identity; read the new ones."""
        old_rows = {id(info): row for row, info in enumerate(self.infos)}
        n = len(infos)
        source = np.fromiter((old_rows.get(id(info), -1) for info in infos), np.int64, n)
        kept = source >= 0
        if self.n == 0 or not kept.any():
            self._reset(n)
            kept = np.zeros(n, np.bool_)
        else:
            src = np.where(kept, source, 0)
            for name in NODE_COLUMNS:
                self.col[name] = self.col[name][src]
            self.col["generation"][~kept] = -1
            for scalars in (self.alloc_scalar, self.req_scalar, self._label_codes):
                for name, array in scalars.items():
                    scalars[name] = array[src]
            self.unsafe = self.unsafe[src] & kept
            self.slot_dirty = self.slot_dirty[src] | ~kept
            self.slot_unsafe = self.slot_unsafe[src] & kept
            for name, array in self.slot.items():
                self.slot[name] = array[src]
            for name, array in self.slot_scalar.items():
                self.slot_scalar[name] = array[src]
            fresh = np.flatnonzero(~kept)
            self.slot["info"][fresh] = None
            self.slot["pod"][fresh] = None
            self.col["slot_count"][fresh] = 0
            for row_cache in self.row_caches.values():
                row_cache.remap(src, kept)
            for slot_cache in self.slot_caches.values():
                slot_cache.remap(src, kept)
            self.node_objects = [self.node_objects[s] if s >= 0 else None for s in source.tolist()]
        # Row numbers change: the logs restart, shape caches are rebuilt on next use.
        self.shape_caches.clear()
        self._content_base += len(self._content_log) + 1
        self._content_log = []
        self._static_base += len(self._static_log) + 1
        self._static_log = []
        self.infos = list(infos)
        self.n = n
        self.index = {info.name: row for row, info in enumerate(self.infos)}
        self.layout += 1
        self.names = np.empty(n, object)
        self.names[:] = [info.name for info in self.infos]
        for row in np.flatnonzero(~kept).tolist():
            self._read_row(row, self.infos[row])
        self.unsafe_rows = int(self.unsafe.sum())
        self.affinity_pods = int(self.col["n_affinity"].sum())

    def _reset(self, n: int) -> None:
        self.col = {name: np.zeros(n, np.int64) for name in NODE_COLUMNS}
        self.col["generation"][:] = -1
        self.alloc_scalar = {}
        self.req_scalar = {}
        self._label_codes = {}
        self.unsafe = np.zeros(n, np.bool_)
        self.node_objects = [None] * n
        self.k = INITIAL_SLOTS
        self.slot = self._new_slots(n, self.k)
        self.slot_scalar = {}
        self.slot_dirty = np.ones(n, np.bool_)
        self.slot_unsafe = np.zeros(n, np.bool_)
        self.row_caches.clear()
        self.slot_caches.clear()
        self.unsafe_rows = 0
        self.affinity_pods = 0

    @staticmethod
    def _new_slots(n: int, k: int) -> dict[str, npt.NDArray[Any]]:
        slots: dict[str, npt.NDArray[Any]] = {name: np.zeros((n, k), np.int64) for name in _INT_SLOT_COLUMNS}
        slots["start"] = np.full((n, k), np.nan)
        slots["info"] = np.full((n, k), None, object)
        slots["pod"] = np.full((n, k), None, object)
        return slots

    def _scalar_column(self, columns: dict[str, I64], name: str) -> I64:
        column = columns.get(name)
        if column is None:
            column = np.zeros(self.n, np.int64)
            columns[name] = column
        return column

    def _read_row(self, row: int, info: NodeInfo) -> None:
        col = self.col
        node = info.node
        if node is not self.node_objects[row]:
            self.node_objects[row] = node
            col["static_version"][row] = next(self._versions)
            self._static_log.append(row)
            col["taints"][row] = self._taint_ids.setdefault(node.spec.taints, len(self._taint_ids))
            col["unschedulable"][row] = node.spec.unschedulable
            labels = node.metadata.labels
            for key, codes in self._label_codes.items():
                codes[row] = self._label_code(key, labels.get(key))
        self._content_log.append(row)
        alloc = info.allocatable
        requested = info.requested
        npods = len(info.pods)
        values = (
            alloc.milli_cpu,
            alloc.memory,
            alloc.ephemeral_storage,
            alloc.allowed_pod_number,
            requested.milli_cpu,
            requested.memory,
            requested.ephemeral_storage,
            npods,
            info.non_zero_cpu,
            info.non_zero_memory,
        )
        (
            col["alloc_cpu"][row],
            col["alloc_mem"][row],
            col["alloc_eph"][row],
            col["alloc_pods"][row],
            col["req_cpu"][row],
            col["req_mem"][row],
            col["req_eph"][row],
            col["npods"][row],
            col["nz_cpu"][row],
            col["nz_mem"][row],
        ) = values
        unsafe = min(values) < 0 or max(values) >= SAFE_LIMIT  # not all_safe(values), without a generator
        # free_* are only ever compared with a request: their sign does not make a row unsafe.
        col["free_cpu"][row] = values[0] - values[4]
        col["free_mem"][row] = values[1] - values[5]
        col["free_eph"][row] = values[2] - values[6]
        col["free_pods"][row] = values[3] - npods
        for name in alloc.scalar.keys() | requested.scalar.keys():
            self._scalar_column(self.alloc_scalar, name)
            self._scalar_column(self.req_scalar, name)
        for name, column in self.alloc_scalar.items():
            value = alloc.scalar.get(name, 0)
            used = requested.scalar.get(name, 0)
            column[row] = value
            self.req_scalar[name][row] = used
            unsafe = unsafe or not all_safe((value, used))
        if unsafe != bool(self.unsafe[row]):
            self.unsafe[row] = unsafe
            self.unsafe_rows += 1 if unsafe else -1
        with_affinity = len(info.pods_with_affinity)
        self.affinity_pods += with_affinity - int(col["n_affinity"][row])
        col["n_affinity"][row] = with_affinity
        col["generation"][row] = info.generation
        self.slot_dirty[row] = True

    # --- pod slots ---------------------------------------------------------------------------

    def ensure_slots(self, rows: I64) -> bool:
        """Read the pod slots of these rows where stale. False if any of them holds a pod whose
        requests are outside the safe range."""
        dirty = rows[self.slot_dirty[rows]]
        for row in dirty.tolist():
            self._read_slots(row)
        return not bool(self.slot_unsafe[rows].any())

    def _grow_slots(self, needed: int) -> None:
        k = max(needed, 2 * self.k)
        grown = self._new_slots(self.n, k)
        for name, array in self.slot.items():
            grown[name][:, : self.k] = array
        self.slot = grown
        for name, array in self.slot_scalar.items():
            wider = np.zeros((self.n, k), np.int64)
            wider[:, : self.k] = array
            self.slot_scalar[name] = wider
        self.k = k
        self.slot_caches.clear()

    def _read_slots(self, row: int) -> None:
        pods = self.infos[row].pods
        count = len(pods)
        if count > self.k:
            self._grow_slots(count)
        slot = self.slot
        infos = slot["info"]
        previous = int(self.col["slot_count"][row])
        changed = previous != count
        for j, pod_info in enumerate(pods):
            if infos[row, j] is pod_info:
                continue
            changed = True
            pod = pod_info.pod
            request = pod_requests(pod)
            infos[row, j] = pod_info
            slot["pod"][row, j] = pod
            slot["prio"][row, j] = pod.priority
            start = pod.status.start_time
            slot["start"][row, j] = np.nan if start is None else start
            slot["cpu"][row, j] = request.milli_cpu
            slot["mem"][row, j] = request.memory
            slot["eph"][row, j] = request.ephemeral_storage
            for name in request.scalar:
                if name not in self.slot_scalar:
                    self.slot_scalar[name] = np.zeros((self.n, self.k), np.int64)
            for name, column in self.slot_scalar.items():
                column[row, j] = request.scalar.get(name, 0)
        for j in range(count, previous):
            infos[row, j] = None
            slot["pod"][row, j] = None
        if changed:
            values = [slot[name][row, :count] for name in ("cpu", "mem", "eph")]
            values += [column[row, :count] for column in self.slot_scalar.values()]
            unsafe = any(bool(((v < 0) | (v >= SAFE_LIMIT)).any()) for v in values)
            self.slot_unsafe[row] = unsafe
        self.col["slot_count"][row] = count
        if changed:
            self.col["slot_version"][row] = next(self._versions)
        self.slot_dirty[row] = False

    def slot_scalar_column(self, name: str) -> I64:
        column = self.slot_scalar.get(name)
        if column is None:
            column = np.zeros((self.n, self.k), np.int64)
            self.slot_scalar[name] = column
        return column

    # --- caches ------------------------------------------------------------------------------

    def row_cache(self, key: Hashable, make: Any) -> RowCache:
        """The cache for `key` (created by `make(n)` if absent); least recently used ones go."""
        cache = self.row_caches.get(key)
        if cache is None:
            cache = make(self.n)
            self.row_caches[key] = cache
            if len(self.row_caches) > MAX_ROW_CACHES:
                self.row_caches.popitem(last=False)
        else:
            self.row_caches.move_to_end(key)
        return cache

    @property
    def content_epoch(self) -> int:
        return self._content_base + len(self._content_log)

    @property
    def static_epoch(self) -> int:
        return self._static_base + len(self._static_log)

    def rows_changed_since(self, epoch: int) -> I64 | None:
        """Rows re-read since `content_epoch` was `epoch` (None: too old, treat every row as changed)."""
        return _since(self._content_log, self._content_base, epoch)

    def static_rows_changed_since(self, epoch: int) -> I64 | None:
        """Rows whose Node object changed since `static_epoch` was `epoch` (None: check all)."""
        return _since(self._static_log, self._static_base, epoch)

    def _trim_logs(self) -> None:
        limit = max(4096, 2 * self.n)
        if len(self._content_log) > limit:
            self._content_base += len(self._content_log)
            self._content_log = []
        if len(self._static_log) > limit:
            self._static_base += len(self._static_log)
            self._static_log = []

    def shape_cache(self, key: Hashable) -> ShapeCache:
        cache = self.shape_caches.get(key)
        if cache is None:
            cache = ShapeCache()
            self.shape_caches[key] = cache
            if len(self.shape_caches) > MAX_ROW_CACHES:
                self.shape_caches.popitem(last=False)
        else:
            self.shape_caches.move_to_end(key)
        return cache

    def slot_cache(self, key: Hashable) -> SlotCache:
        cache = self.slot_caches.get(key)
        if cache is None:
            if len(self.slot_caches) >= MAX_ROW_CACHES:
                self.slot_caches.clear()
            cache = SlotCache(self.n, self.k)
            self.slot_caches[key] = cache
        return cache

    def _label_code(self, key: str, value: str | None) -> int:
        if value is None:
            return 0
        values = self._label_values.setdefault(key, {})
        return values.setdefault(value, len(values) + 1)

    def label_codes(self, key: str) -> I64:
        """Per row, an id of the Node's value for this label (0: absent); equal ids, equal values."""
        codes = self._label_codes.get(key)
        if codes is None:
            codes = np.fromiter(
                (self._label_code(key, info.node.metadata.labels.get(key)) for info in self.infos), np.int64, self.n
            )
            self._label_codes[key] = codes
        return codes

    # --- column access -----------------------------------------------------------------------

    def values(self, name: str, rows: I64 | None) -> I64:
        """NodeColumnsView: a node column for these rows (None: every row)."""
        column = self.col[name]
        return column if rows is None else column[rows]

    def free(self, resource: str) -> I64:
        """allocatable - requested for cpu, memory, ephemeral-storage or an extended resource."""
        column = _FREE_COLUMNS.get(resource)
        if column is not None:
            return self.col[column]
        alloc = self.alloc_scalar.get(resource)
        if alloc is None:
            return np.zeros(self.n, np.int64)
        return alloc - self.req_scalar[resource]

    def free_rows(self, resource: str, rows: I64) -> I64:
        """free(resource)[rows] without computing the whole column for extended resources."""
        column = _FREE_COLUMNS.get(resource)
        if column is not None:
            return self.col[column][rows]
        alloc = self.alloc_scalar.get(resource)
        if alloc is None:
            return np.zeros(rows.size, np.int64)
        return alloc[rows] - self.req_scalar[resource][rows]

    def allocatable(self, resource: str) -> I64:
        column = _ALLOC_COLUMNS.get(resource)
        if column is not None:
            return self.col[column]
        alloc = self.alloc_scalar.get(resource)
        return np.zeros(self.n, np.int64) if alloc is None else alloc

    def slot_requests(self, resource: str) -> I64:
        column = _SLOT_COLUMNS.get(resource)
        if column is not None:
            array: I64 = self.slot[column]
            return array
        return self.slot_scalar_column(resource)


def _since(log: list[int], base: int, epoch: int) -> I64 | None:
    if epoch < base:
        return None
    return np.array(sorted(set(log[epoch - base :])), np.int64)


_FREE_COLUMNS = {RESOURCE_CPU: "free_cpu", RESOURCE_MEMORY: "free_mem", RESOURCE_EPHEMERAL_STORAGE: "free_eph"}
_ALLOC_COLUMNS = {RESOURCE_CPU: "alloc_cpu", RESOURCE_MEMORY: "alloc_mem", RESOURCE_EPHEMERAL_STORAGE: "alloc_eph"}
_SLOT_COLUMNS = {RESOURCE_CPU: "cpu", RESOURCE_MEMORY: "mem", RESOURCE_EPHEMERAL_STORAGE: "eph"}
