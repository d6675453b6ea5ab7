"""The column strategy: a scheduling cycle's Filter and Score evaluated on every node at once, with
the answers the plugins give node by node (a property test compares the two strategies of one
SchedulingAlgorithm on random clusters, tests/unit/test_fastpath_equivalence.py).

SchedulingAlgorithm (podsched.scheduler.schedule_one) runs the cycle: the nominated node first, the
round-robin search, selectHost, PostFilter. It asks `ColumnStrategy.evaluation` for a ColumnCycle
for each pod and falls back to NodeByNode where none is given; the PostFilter plugins run the same
either way (DefaultPreemption's dry run on columns is fastpath.dry_run).

Handled ("resource-only") pods: no pod (anti-)affinity, no topology spread constraints, no host
ports, in a cluster where no pod has any pod (anti-)affinity term (existing pods' required
anti-affinity filters, and their affinity terms of any kind score, through InterPodAffinity) and
every value is in the exact range of the vectorized arithmetic. The plugins say what they can do on
columns (podsched.framework.interface):
  * a plugin that signs the pod (SignPlugin: NodeUnschedulable, NodeName, TaintToleration,
    NodeAffinity) has Filter and Score verdicts that read the Node object only: the strategy calls
    the plugin's own Filter and Score once per distinct node and pod signature, keeps the verdicts
    until that node's Node object changes, and normalizes with the plugin's own NormalizeScore;
    a plugin that cannot sign the pod sends the cycle node by node;
  * the filter that declares its resource checks (ColumnFitPlugin: NodeResourcesFit) is evaluated
    as columns arithmetic on every node, and so is the preemption dry run (fastpath.victims);
  * a score with score_columns (ColumnScorePlugin: LeastAllocated, BalancedAllocation) scores all
    nodes at once, cached per pod key and updated for the nodes that changed;
  * NodePorts, PodTopologySpread and InterPodAffinity skip PreFilter and PreScore for such a pod:
    nothing to run; NodeAffinity's PreFilter skips its Filter when the pod has no node selector
    and no required terms. Nothing narrows the node list.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from podsched.api.types import (
    Pod,
    PodSpec,
)
from podsched.fastpath.columns import I64, SAFE_LIMIT, Bool, NodeColumns, Obj, RowCache, all_safe, request_is_safe
from podsched.fastpath.diagnosis import ColumnDiagnosis
from podsched.fastpath.dry_run import COLUMN_INPUTS_KEY
from podsched.fastpath.fit_status import fit_statuses
from podsched.fastpath.nominated import NominatedColumns, OutOfRange
from podsched.framework.cycle_state import CycleState, PreFilterOnRead
from podsched.framework.interface import NodeSignature, NodeToStatus, ResourceCheck
from podsched.framework.node_info import NodeInfo, Snapshot, pod_host_ports
from podsched.framework.resource import non_zero_requests, pod_requests
from podsched.framework.runtime import Framework, PreFilterOutcome
from podsched.framework.status import Code, Status
from podsched.plugins import names
from podsched.plugins.node_resources import (
    InsufficientResource,
)
from podsched.queue.nominator import Nominator

# Filters that pass or are skipped for every handled pod.
PASSING_FILTERS = (names.NODE_PORTS, names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY)
# Scores that PreScore skips for every handled pod.
SKIPPED_SCORES = (names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY)
MAX_CHECKS = 60
# Pod shapes kept per distinct spec (pods of one template share one).
MAX_POD_SHAPES = 1024
# Up to this many changed rows, cached per-row values are recomputed by the plugins themselves.
FEW_ROWS = 16
_NO_ROWS: I64 = np.zeros(0, np.int64)


@dataclass(frozen=True, slots=True)
class _Profile:
    """What the column strategy needs to know about the framework's plugins."""

    static_filters: tuple[Any, ...]  # the filters that sign pods (SignPlugin), framework order
    static_scores: tuple[tuple[Any, int], ...]  # (plugin, weight) of the scores that sign pods
    signing: tuple[Any, ...]  # every enabled plugin that signs pods, once
    node_affinity_pre_filter: bool  # NodeAffinity's PreFilter runs (and skips its Filter when idle)
    fit_filter: Any  # the filter whose checks the columns evaluate (ColumnFitPlugin)
    column_scores: tuple[tuple[Any, int], ...]  # (plugin, weight) of the scores offering score_columns


def _profile_of(framework: Framework) -> _Profile | None:
    """None when the profile has plugins or settings the column strategy does not model."""
    pre_filter = [p.name for p in framework.pre_filter_plugins]
    filters = [p.name for p in framework.filter_plugins]
    pre_score = [p.name for p in framework.pre_score_plugins]
    signing = {id(p): p for p in [*framework.pre_filter_plugins, *framework.filter_plugins] if _signs(p)}
    signing.update((id(e.plugin), e.plugin) for e in framework.score_plugins if _signs(e.plugin))
    if any(
        not (_signs(p) or _offers(p, "fit_checks") or p.name in PASSING_FILTERS)
        for p in [*framework.pre_filter_plugins, *framework.filter_plugins]
    ):
        return None
    fit_filter = next((p for p in framework.filter_plugins if _offers(p, "fit_checks")), None)
    if fit_filter is None:  # the dry run on columns evaluates this plugin's checks
        return None
    static_filter_names = [p.name for p in framework.filter_plugins if _signs(p)]
    # Without their PreFilter state these filters fail with an error on every node.
    for name in (names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY):
        if name in filters and name not in pre_filter:
            return None
    # The first failing filter names a node's status: the static ones must run before the fit.
    if any(filters.index(name) > filters.index(fit_filter.name) for name in static_filter_names):
        return None
    column_scores: list[tuple[Any, int]] = []
    static_scores: list[tuple[Any, int]] = []
    for entry in framework.score_plugins:
        name = entry.plugin.name
        if _signs(entry.plugin):
            static_scores.append((entry.plugin, entry.weight))
        elif _offers(entry.plugin, "score_columns"):
            column_scores.append((entry.plugin, entry.weight))
        elif name not in SKIPPED_SCORES:
            return None
        # A score whose PreScore is disabled reads defaults (or fails): not modelled.
        if hasattr(entry.plugin, "pre_score") and name not in pre_score:
            return None
    return _Profile(
        static_filters=tuple(p for p in framework.filter_plugins if _signs(p)),
        static_scores=tuple(static_scores),
        signing=tuple(signing.values()),
        node_affinity_pre_filter=names.NODE_AFFINITY in pre_filter,
        fit_filter=fit_filter,
        column_scores=tuple(column_scores),
    )


@dataclass(slots=True)
class _StaticScores:
    skipped: set[str]  # PreScore said Skip for this pod signature
    all_zero: set[str]  # every node's raw score is 0


@dataclass(frozen=True, slots=True)
class _PodShape:
    """What one handled pod asks for."""

    priority: int
    checks: tuple[ResourceCheck, ...]
    filter_key: Hashable  # everything the static filters read from the pod
    score_key: Hashable  # everything the static scores read from the pod
    filter_labels: tuple[str, ...] | None  # label keys the static filters read (None: also the node name)
    score_labels: tuple[str, ...] | None  # label keys the static scores read (None: also the node name)
    fit_key: Hashable  # everything NodeResourcesFit reads from the pod
    resource_score_key: Hashable  # everything the column scores read from the pod
    skip_node_affinity_filter: bool
    skipped_scores: frozenset[str]  # column scores whose PreScore skips this pod


@functools.lru_cache(maxsize=1024)
def _reason(resource: str) -> str:
    return InsufficientResource(resource, 0, 0, 0, False).reason


def _signs(plugin: object) -> bool:
    """Whether the plugin signs pods (SignPlugin): its verdicts depend on the Node object alone."""
    return _offers(plugin, "sign_pod")


def _skips(status: Status | None) -> bool:
    return status is not None and status.code == Code.SKIP


def _offers(plugin: object, column_method: str) -> bool:
    """Whether the plugin offers this column method (framework.interface: SignPlugin, ColumnFitPlugin,
    ColumnScorePlugin)."""
    return callable(getattr(plugin, column_method, None))


def _signature(plugins: Iterable[Any], signatures: dict[int, NodeSignature]) -> tuple[Hashable, tuple[str, ...] | None]:
    """The plugins' signatures together: (key, label keys any of them reads; None: a node name)."""
    plugins = tuple(plugins)
    key = tuple((p.name, signatures[id(p)].key) for p in plugins)
    labels: set[str] = set()
    for p in plugins:
        label_keys = signatures[id(p)].label_keys
        if label_keys is None:
            return key, None
        labels.update(label_keys)
    return key, tuple(sorted(labels))


# Every PodSpec field but nodeSelector, the one that is not a hashable value (a dict).
_SPEC_VALUES = operator.attrgetter(*(f.name for f in fields(PodSpec) if f.name != "node_selector"))


def _spec_key(spec: PodSpec) -> tuple[Any, ...]:
    """The spec as a value: equal keys, equal specs. Its fields are scalars, tuples and frozen
    dataclasses, compared by value, and nodeSelector, copied into the key as its items (a field
    added to PodSpec is part of the key; one that is not hashable fails loudly here). For pods of
    one template, which share their tuples, hashing this costs about 0.4 us and comparing it is
    identity checks."""
    selector = spec.node_selector
    return (_SPEC_VALUES(spec), tuple(selector.items()) if selector else ())


def _pod_shape(pod: Pod, profile: _Profile) -> _PodShape | None:
    """The handled pod's shape, or None: the cycle runs node by node. A function of the pod's spec
    alone (what the plugins' sign_pod, fit_checks, score_key and PreScore read of a handled pod),
    which is what lets `ColumnStrategy.shape` keep it per spec."""
    spec = pod.spec
    if spec.topology_spread_constraints:
        return None
    affinity = spec.affinity
    required = None
    if affinity is not None:
        for terms in (affinity.pod_affinity, affinity.pod_anti_affinity):
            if terms is not None and (terms.required or terms.preferred):
                return None
        if affinity.node_affinity is not None:
            required = affinity.node_affinity.required
    signatures: dict[int, NodeSignature] = {}
    for plugin in profile.signing:
        signature = plugin.sign_pod(pod)
        if signature is None:
            return None
        signatures[id(plugin)] = signature
    if pod_host_ports(pod):
        return None
    request = pod_requests(pod)
    if not request_is_safe(request):
        return None
    checks: tuple[ResourceCheck, ...] = profile.fit_filter.fit_checks(pod)
    if len(checks) > MAX_CHECKS or not all_safe(check.value for check in checks):
        return None
    non_zero_cpu, non_zero_memory = non_zero_requests(pod)
    if not (0 <= non_zero_cpu < SAFE_LIMIT and 0 <= non_zero_memory < SAFE_LIMIT):
        return None
    skip_node_affinity = profile.node_affinity_pre_filter and required is None and not spec.node_selector
    skipped_scores = frozenset(
        plugin.name
        for plugin, _ in profile.column_scores
        if hasattr(plugin, "pre_score") and _skips(plugin.pre_score(CycleState(), pod, []))
    )
    filter_key, filter_labels = _signature(profile.static_filters, signatures)
    score_key, score_labels = _signature((p for p, _ in profile.static_scores), signatures)
    return _PodShape(
        priority=pod.priority,
        checks=checks,
        filter_key=("filter", skip_node_affinity, filter_key),
        score_key=("score", score_key),
        filter_labels=filter_labels,
        score_labels=score_labels,
        fit_key=("fit", *((check.resource, check.value) for check in checks)),
        resource_score_key=(
            "resource-score",
            skipped_scores,
            tuple(plugin.score_key(pod) for plugin, _ in profile.column_scores),
        ),
        skip_node_affinity_filter=skip_node_affinity,
        skipped_scores=skipped_scores,
    )


_Load = tuple[I64, I64, list[I64]]  # nominated pods: (rows, pod counts, amounts per ResourceCheck)


class _OutOfRange(Exception):
    """A value the vectorized arithmetic cannot reproduce exactly: the cycle runs node by node."""


class _InternedStatuses:
    """The distinct statuses of a static-filter cache; a row stores its status' index (0: pass)."""

    __slots__ = ("by_key", "statuses")

    def __init__(self) -> None:
        self.statuses: list[Status | None] = [None]
        self.by_key: dict[tuple[Any, ...], int] = {}

    def index(self, status: Status | None) -> int:
        if status is None:
            return 0
        key = (status.code, tuple(status.reasons), status.plugin)
        position = self.by_key.get(key)
        if position is None:
            position = len(self.statuses)
            self.by_key[key] = position
            self.statuses.append(status)
        return position


class ColumnStrategy:
    """The column strategy of one profile's framework: what it keeps across cycles (the node columns,
    the nominated pods' load per row, per-node verdict and score caches), shared by the cycles it
    evaluates (ColumnCycle) and the vectorized dry run (fastpath.dry_run).

    The node columns persist across cycles. Keep them fresh either by doing nothing (every cycle
    compares NodeInfo generations) or, cheaper, with `track_changes()` plus one `mark_dirty` per
    changed node (a `Cluster` listener: `on_cluster_change`)."""

    def __init__(self, columns: NodeColumns | None = None) -> None:
        self.columns = columns or NodeColumns()
        self._nominated = NominatedColumns()
        self.framework: Framework | None = None
        self.profile: _Profile | None = None
        # _spec_key -> the shape of pods with that spec (None: not handled), for this profile. The
        # pods of one template share it; computing it was a fifth of a FindNodes pod's cycle.
        self._shapes: dict[tuple[Any, ...], _PodShape | None] = {}
        self.cycles = 0  # cycles evaluated on columns
        self.declined = 0  # cycles left to NodeByNode (a plugin, pod or cluster the columns do not model)

    def attach(self, framework: Framework) -> None:
        """Serve this framework (built after the dry-run executor that holds this state)."""
        self.framework = framework
        self.profile = _profile_of(framework)
        self._shapes.clear()

    def shape(self, pod: Pod) -> _PodShape | None:
        """`_pod_shape` for this profile, kept per spec value (the key is the whole spec, so a pod
        whose spec differs in any field, or was changed in place, is shaped anew)."""
        profile = self.profile
        if profile is None:
            return None
        key = _spec_key(pod.spec)
        shapes = self._shapes
        try:
            return shapes[key]
        except KeyError:
            pass
        shape = _pod_shape(pod, profile)
        if len(shapes) >= MAX_POD_SHAPES:
            del shapes[next(iter(shapes))]  # the oldest entry
        shapes[key] = shape
        return shape

    def inputs(self, pod: Pod, snapshot: Snapshot) -> tuple[_Profile, _PodShape, _Load | None] | None:
        """What the vectorized cycle needs, with the columns synced to `snapshot`; None when the fast
        path does not apply (a plugin set, pod or cluster it does not model, or an amount outside the
        exact range), and the cycle runs node by node."""
        profile = self.profile
        shape = self.shape(pod) if profile is not None and len(snapshot) else None
        if profile is None or shape is None:
            return None
        columns = self.columns
        columns.sync(snapshot)
        if columns.unsafe_rows or columns.affinity_pods:
            return None
        try:
            return profile, shape, self._nominated_load(pod, shape)
        except _OutOfRange:
            return None

    def _nominated_load(self, pod: Pod, shape: _PodShape) -> _Load | None:
        """(rows, pod counts, amounts per check) of the nominated pods that Filter adds to their
        node: priority >= the pod's, not the pod itself. None if there are none. Raises
        _OutOfRange if one of them has a request outside the exact range."""
        nominator = self.framework.nominator if self.framework is not None else None
        if nominator is None:
            return None
        if isinstance(nominator, Nominator):
            if not len(nominator):  # most cycles: adding up empty columns for every node would find nothing
                return None
            try:
                return self._nominated.load(nominator, self.columns, pod, shape.checks)
            except OutOfRange:
                raise _OutOfRange from None
        # Any other PodNominator: ask node by node and add up.
        index = self.columns.index
        by_node = ((name, nominator.nominated_pods_for_node(name)) for name in index)
        loads: dict[int, list[int]] = {}
        priority = pod.priority
        uid = pod.uid
        for node_name, pod_infos in by_node:
            row = index.get(node_name)
            if row is None:
                continue
            for pod_info in pod_infos:
                other = pod_info.pod
                if other.priority < priority or other.uid == uid:
                    continue
                request = pod_requests(other)
                amounts = [request.get(check.resource) for check in shape.checks]
                if not all_safe(amounts):
                    raise _OutOfRange
                load = loads.setdefault(row, [0] * (1 + len(amounts)))
                load[0] += 1
                for k, amount in enumerate(amounts):
                    load[k + 1] += amount
        if not loads:
            return None
        rows = np.fromiter(loads.keys(), np.int64, len(loads))
        table = np.array(list(loads.values()), np.int64).reshape(len(loads), 1 + len(shape.checks))
        return rows, table[:, 0].copy(), [table[:, k + 1].copy() for k in range(len(shape.checks))]

    # --- freshness ---------------------------------------------------------------------------

    def track_changes(self) -> Callable[[Any], None]:
        """Switch to reported changes; returns the `Cluster` listener to register."""
        self.columns.track_changes()
        return self.columns.on_cluster_change

    def mark_dirty(self, node_name: str) -> None:
        self.columns.mark_dirty(node_name)

    def on_cluster_change(self, change: Any) -> None:
        self.columns.on_cluster_change(change)

    # --- the cycle ---------------------------------------------------------------------------

    def handles(self, pod: Pod) -> bool:
        """Whether the pod itself is one the columns can schedule (the cluster may still send the
        cycle node by node)."""
        return self.shape(pod) is not None

    def evaluation(self, pod: Pod, snapshot: Snapshot) -> ColumnCycle | None:
        inputs = self.inputs(pod, snapshot)
        if inputs is None:
            self.declined += 1
            return None
        self.cycles += 1
        profile, shape, load = inputs
        return ColumnCycle(self, pod, snapshot, profile, shape, load)

    def _static_filter(self, pod: Pod, shape: _PodShape, profile: _Profile) -> RowCache:
        """Per row: 0 if the node-static filters pass, else the index of the interned status."""
        columns = self.columns

        def make(n: int) -> RowCache:
            cache = RowCache(n, {"status": np.zeros(n, np.int64), "ok": np.zeros(n, np.bool_)})
            cache.extra = _InternedStatuses()
            return cache

        cache = columns.row_cache(shape.filter_key, make)
        versions = columns.col["static_version"]
        stale = self._stale(cache)
        if stale.size:
            interned: _InternedStatuses = cache.extra
            state = CycleState()
            plugins = [
                p
                for p in profile.static_filters
                if not (p.name == names.NODE_AFFINITY and shape.skip_node_affinity_filter)
            ]
            status_column = cache.arrays["status"]

            def verdict(row: int) -> int:
                return interned.index(_run_filters(plugins, state, pod, columns.infos[row]))

            status_column[stale] = self._per_distinct_node(stale, shape.filter_labels, verdict)
            cache.arrays["ok"] = status_column == 0
            cache.version[stale] = versions[stale]
        return cache

    def _static_scores(self, pod: Pod, shape: _PodShape, profile: _Profile) -> RowCache:
        """Per row: the raw scores of the plugins that sign pods, from their own Score. `extra`: the
        plugins whose PreScore skipped for this pod signature, and those whose raw scores are all 0."""
        columns = self.columns

        def make(n: int) -> RowCache:
            cache = RowCache(n, {plugin.name: np.zeros(n, np.int64) for plugin, _ in profile.static_scores})
            cache.extra = _StaticScores(set(), set())
            return cache

        cache = columns.row_cache(shape.score_key, make)
        versions = columns.col["static_version"]
        stale = self._stale(cache)
        if stale.size:
            extra: _StaticScores = cache.extra
            for plugin, _ in profile.static_scores:
                state = CycleState()
                skipped = plugin.pre_score(state, pod, []) if hasattr(plugin, "pre_score") else None
                column = cache.arrays[plugin.name]
                if skipped is not None and skipped.code == Code.SKIP:
                    extra.skipped.add(plugin.name)
                    column[stale] = 0
                    continue

                def score(row: int, plugin: Any = plugin, state: CycleState = state) -> int:
                    return int(plugin.score(state, pod, columns.infos[row]))

                column[stale] = self._per_distinct_node(stale, shape.score_labels, score)
            cache.version[stale] = versions[stale]
            extra.all_zero = {name for name, column in cache.arrays.items() if not column.any()}
        return cache

    def _per_distinct_node(self, rows: I64, labels: tuple[str, ...] | None, compute: Callable[[int], int]) -> I64:
        """compute(row) for each row, evaluated once per distinct node: nodes with equal taints,
        unschedulable flag and values of these labels (None: the verdict reads the node name too,
        so every node is distinct) get the same verdict from the node-static plugins."""
        if labels is None or rows.size <= FEW_ROWS:
            return np.fromiter((compute(row) for row in rows.tolist()), np.int64, rows.size)
        col = self.columns.col
        features = [col["taints"][rows], col["unschedulable"][rows]]
        features += [self.columns.label_codes(key)[rows] for key in labels]
        _, first, inverse = np.unique(np.stack(features, axis=1), axis=0, return_index=True, return_inverse=True)
        distinct = np.fromiter((compute(row) for row in rows[first].tolist()), np.int64, first.size)
        verdicts: I64 = distinct[inverse.reshape(-1)]
        return verdicts

    def _stale(self, cache: RowCache) -> I64:
        """Rows of a static cache computed from an older Node object than the row's current one."""
        columns = self.columns
        epoch = columns.static_epoch
        if cache.epoch == epoch:
            return _NO_ROWS
        versions = columns.col["static_version"]
        changed = columns.static_rows_changed_since(cache.epoch)
        cache.epoch = epoch
        if changed is None:
            return np.flatnonzero(cache.version != versions)
        stale: I64 = changed[cache.version[changed] != versions[changed]]
        return stale

    def _shape_column(self, key: Hashable, name: str, compute: Callable[[I64 | None], npt.NDArray[Any]]) -> Any:
        """A per-row array that depends on the rows' resource columns, brought up to date with
        `compute(rows)` for the rows that changed since last time (`compute(None)`: every row)."""
        columns = self.columns
        cache = columns.shape_cache(key)
        epoch = columns.content_epoch
        if cache.epoch != epoch:
            changed = columns.rows_changed_since(cache.epoch)
            if changed is None or name not in cache.arrays:
                cache.arrays[name] = compute(None)
            elif changed.size:
                cache.arrays[name][changed] = compute(changed)
            cache.epoch = epoch
        return cache.arrays[name]

    def _fits(self, shape: _PodShape, rows: I64 | None, load: tuple[I64, list[I64]] | None = None) -> Bool:
        """NodeResourcesFit passes (for these rows, or all), with `load` (pod counts and amounts
        per check, aligned with rows) added as nominated pods."""
        columns = self.columns
        everything = rows is None
        free_pods = columns.col["free_pods"] if everything else columns.col["free_pods"][rows]
        if load is not None:
            free_pods = free_pods - load[0]
        fits = free_pods >= 1
        for k, check in enumerate(shape.checks):
            free = columns.free(check.resource) if rows is None else columns.free_rows(check.resource, rows)
            if load is not None:
                free = free - load[1][k]
            fits &= free >= check.value
        return fits

    def _feasible(self, pod: Pod, shape: _PodShape, profile: _Profile, load: _Load | None, static: RowCache) -> Bool:
        """Rows passing every filter, nominated pods of >= priority counted on their node.

        Upstream's RunFilterPluginsWithNominatedPods filters a node that has such nominated pods
        twice: with them added, then, if that passed, without them (for filters a nominated pod
        could help, like pod affinity). For a handled pod only node-static filters and
        NodeResourcesFit can fail, and neither can fail the second pass after passing the first:
        static verdicts ignore pods, and taking pods away (requests are >= 0) only frees room. So
        one pass with the nominated pods added decides, and its failures are the node's status."""
        static_ok: Bool = static.arrays["ok"]
        if profile.fit_filter is None:
            return static_ok

        def fits_of(rows: I64 | None) -> Bool:
            if rows is not None and rows.size <= FEW_ROWS:  # the plugin itself, on the current NodeInfo
                state = CycleState()
                infos = self.columns.infos
                return np.array([profile.fit_filter.filter(state, pod, infos[r]) is None for r in rows.tolist()])
            return self._fits(shape, rows)

        fits = self._shape_column(shape.fit_key, "fits", fits_of)
        feasible: Bool = static_ok & fits
        if load is not None:
            rows, counts, amounts = load
            feasible[rows] = static_ok[rows] & self._fits(shape, rows, (counts, amounts))
        return feasible

    def _fit_fails(self, shape: _PodShape, profile: _Profile, load: _Load | None) -> list[Bool]:
        """Per row, which NodeResourcesFit checks fail: the pods check, then each ResourceCheck."""
        columns = self.columns
        if profile.fit_filter is None:
            return [np.zeros(columns.n, np.bool_)]
        free_pods = columns.col["free_pods"]
        frees = [columns.free(check.resource) for check in shape.checks]
        if load is not None:
            rows, counts, amounts = load
            free_pods = free_pods.copy()
            free_pods[rows] -= counts
            frees = [f.copy() for f in frees]
            for f, amount in zip(frees, amounts, strict=True):
                f[rows] -= amount
        return [free_pods < 1] + [free < check.value for check, free in zip(shape.checks, frees, strict=True)]

    def _scores(self, pod: Pod, shape: _PodShape, profile: _Profile, rows: I64) -> I64:
        """Weighted sum of the normalized scores, aligned with `rows`."""
        totals: I64 = self._shape_column(
            shape.resource_score_key, "score", lambda changed: self._resource_scores(pod, shape, profile, changed)
        )[rows]
        if not profile.static_scores:
            return totals
        static = self._static_scores(pod, shape, profile)
        extra: _StaticScores = static.extra
        state = CycleState()
        for plugin, weight in profile.static_scores:
            if plugin.name in extra.skipped:
                continue
            if plugin.name in extra.all_zero:
                # The plugin's own NormalizeScore of one 0 stands for every node (all raw scores are 0).
                scores = [0]
                plugin.normalize_score(state, pod, scores)
                totals = totals + weight * scores[0]
                continue
            scores = static.arrays[plugin.name][rows].tolist()
            plugin.normalize_score(state, pod, scores)
            totals = totals + weight * np.array(scores, np.int64)
        return totals

    def _resource_scores(self, pod: Pod, shape: _PodShape, profile: _Profile, rows: I64 | None) -> I64:
        """The weighted sum of the column scores (their scores are final: no normalization)."""
        plugins = [
            (plugin, weight) for plugin, weight in profile.column_scores if plugin.name not in shape.skipped_scores
        ]
        if rows is not None and rows.size <= FEW_ROWS:  # the plugins themselves, on the current NodeInfo
            state = CycleState()
            infos = self.columns.infos
            return np.array(
                [sum(weight * plugin.score(state, pod, infos[r]) for plugin, weight in plugins) for r in rows.tolist()],
                np.int64,
            )
        total = np.zeros(self.columns.n if rows is None else rows.size, np.int64)
        for plugin, weight in plugins:
            total += weight * plugin.score_columns(pod, self.columns, rows)
        return total


class _RowNames(Sequence[str]):
    """The names of some rows, looked up when asked (the cycle asks for one or two of hundreds)."""

    __slots__ = ("_names", "_rows")

    def __init__(self, names: Obj, rows: I64) -> None:
        self._names = names
        self._rows = rows

    def __len__(self) -> int:
        return int(self._rows.size)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            names: list[str] = self._names[self._rows[index]].tolist()
            return names
        return str(self._names[self._rows[index]])


class ColumnCycle:
    """One cycle on columns, a CycleEvaluation (podsched.scheduler.schedule_one): every node's Filter
    verdict at once. One difference in form, not in content: nodes failing for the same reasons share
    one Status object in the diagnosis (NodeByNode builds one per node); treat them as read-only, as
    every consumer in podsched does."""

    def __init__(
        self,
        strategy: ColumnStrategy,
        pod: Pod,
        snapshot: Snapshot,
        profile: _Profile,
        shape: _PodShape,
        load: _Load | None,
    ) -> None:
        self.strategy = strategy
        self.columns = strategy.columns
        self.pod = pod
        self.snapshot = snapshot
        self.profile = profile
        self.shape = shape
        self.load = load
        self._static: RowCache | None = None
        self._mask: Bool | None = None
        self._start = 0
        self._rows: I64 = _NO_ROWS

    def pre_filter(self) -> PreFilterOutcome:
        # For a pod the columns handle, PreFilter neither rejects nor narrows the nodes, and the
        # plugins that would skip are known (see the module docstring): nothing to run.
        return PreFilterOutcome(None, None)

    def num_nodes(self) -> int:
        return self.columns.n

    def _feasible_mask(self) -> Bool:
        if self._mask is None:
            strategy = self.strategy
            self._static = strategy._static_filter(self.pod, self.shape, self.profile)
            self._mask = strategy._feasible(self.pod, self.shape, self.profile, self.load, self._static)
        return self._mask

    def passes(self, node_name: str) -> bool:
        row = self.columns.index.get(node_name)
        return row is not None and bool(self._feasible_mask()[row])

    def find_feasible(self, start: int, to_find: int) -> tuple[Sequence[str], int]:
        n = self.columns.n
        self._start = start
        feasible = np.flatnonzero(self._feasible_mask())
        if feasible.size == 0:
            return [], n
        # The feasible rows in visit order from `start`, up to `to_find`; visited: up to the last one.
        split = int(np.searchsorted(feasible, start))
        ordered = feasible[split : split + to_find]
        if ordered.size < to_find:
            ordered = np.concatenate((ordered, feasible[: min(split, to_find - ordered.size)]))
        processed = (int(ordered[-1]) - start) % n + 1 if ordered.size >= to_find else n
        self._rows = ordered
        return _RowNames(self.columns.names, ordered), processed

    def scores(self) -> I64:
        return self.strategy._scores(self.pod, self.shape, self.profile, self._rows)

    def post_filter_state(self) -> CycleState:
        # PostFilter reads the state PreFilter leaves: the vectorized dry run needs none, but a pod
        # slot out of the exact range sends the rest of the dry run node by node, which completes it.
        framework = self.strategy.framework
        assert framework is not None
        pod, nodes = self.pod, self.snapshot.node_info_list
        state = PreFilterOnRead(lambda state: framework.run_pre_filter_plugins(state, pod, nodes))
        # What this cycle computed for the columns, for the dry run on columns of the same cycle.
        state.write(COLUMN_INPUTS_KEY, (self.pod, (self.profile, self.shape, self.load)))
        return state

    def diagnosis(self) -> tuple[NodeToStatus, set[str]]:
        """Every node failed: per-node statuses, as a ColumnDiagnosis over the distinct ones."""
        columns = self.columns
        shape, profile, load = self.shape, self.profile, self.load
        static = self._static
        assert static is not None
        status_index = np.full(columns.n, -1, np.int64)
        distinct: list[Status] = []
        static_index = static.arrays["status"]
        static_fail = static_index != 0
        if static_fail.any():
            interned: _InternedStatuses = static.extra
            rows = np.flatnonzero(static_fail)
            used, position = np.unique(static_index[rows], return_inverse=True)
            status_index[rows] = position.reshape(-1)
            # This cycle's own copies: the cached ones outlive it.
            for i in used.tolist():
                cached = interned.statuses[i]
                assert cached is not None
                distinct.append(Status(cached.code, list(cached.reasons), cached.plugin))
        fit_fails = self.strategy._fit_fails(shape, profile, load)
        resource_rows = np.flatnonzero(np.logical_or.reduce(fit_fails) & ~static_fail)
        if resource_rows.size:
            fails = [f[resource_rows] for f in fit_fails]
            unresolvable = np.zeros(resource_rows.size, np.bool_)
            for check, fail in zip(shape.checks, fails[1:], strict=True):
                unresolvable |= fail & (check.value > columns.allocatable(check.resource)[resource_rows])
            index, resource_statuses = fit_statuses(fails, unresolvable, shape.checks)
            status_index[resource_rows] = index + len(distinct)
            distinct += resource_statuses
        assert (status_index >= 0).all(), "a node failed neither a static filter nor a resource check"
        diagnosis = ColumnDiagnosis(
            columns.names, columns.index, status_index, distinct, self._start, self.snapshot.node_info_list
        )
        return diagnosis, {status.plugin for status in distinct if status.plugin}


def _run_filters(plugins: Sequence[Any], state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
    """Framework.run_filter_plugins over the static filters."""
    for plugin in plugins:
        status = plugin.filter(state, pod, node_info)
        if status is not None and status.code != Code.SUCCESS:
            if not status.is_rejected:
                return Status.error(plugin.name, f'running "{plugin.name}" filter plugin: {status.message}')
            status.plugin = plugin.name
            assert isinstance(status, Status)
            return status
    return None
