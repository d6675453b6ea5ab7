"""The disruption controller: each PodDisruptionBudget's status kept current as its pods change."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from podsched.api.labels import selector_matches
from podsched.api.types import KIND_PDB, POD_RUNNING, Pod, PodDisruptionBudget, PodDisruptionBudgetStatus
from podsched.cluster.store import MODIFIED, Change, Store


class DisruptionController:
    """Only the authoritative copy computes; replicas keep the status the binder published."""

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self.store = store
        self.clock = clock

    def status(self, pdb: PodDisruptionBudget) -> PodDisruptionBudgetStatus:
        """The PDB's status over the stored pods of its namespace."""
        return compute_pdb_status(
            pdb, (p for p in self.store.pods.values() if p.namespace == pdb.namespace), self.clock()
        )

    def sync_on_write(self, pdb: PodDisruptionBudget, old: PodDisruptionBudget | None) -> None:
        """Set the status of a PDB being created (`old` None) or updated: eviction bookkeeping
        (disruptedPods) carries over from `old`, and the authoritative copy syncs the new spec in the
        same write, so the stored object, the change listeners hear and the answer to the writer all
        carry the status at once."""
        if old is not None:
            pdb.status = old.status
        if self.store.authoritative:
            pdb.status = self.status(pdb)

    def refresh(self) -> None:
        """Recompute the status of every PDB in a namespace whose pods changed since the last refresh,
        and write each status that differs as a change of its own (the controller's UpdateStatus). A
        PDB's own create or spec change is synced as it is stored (`sync_on_write`)."""
        store = self.store
        if not store.changed_pod_namespaces or not store.authoritative:
            return
        dirty = store.changed_pod_namespaces
        store.changed_pod_namespaces = set()
        for key, pdb in list(store.pdbs.items()):
            if pdb.namespace in dirty:
                status = self.status(pdb)
                if status != pdb.status:
                    # New metadata too: the version stamped on `new` must not change `pdb`, which
                    # listeners get as the change's old state.
                    new = replace(pdb, metadata=replace(pdb.metadata), status=status)
                    store.stamp(new)
                    store.pdbs[key] = new
                    store.notify(Change(MODIFIED, KIND_PDB, pdb, new))


# The disruption controller's DeletionTimeout: how long a pod listed in status.disruptedPods (evicted
# through the eviction API) is expected to take to get its deletionTimestamp before the entry is dropped.
DISRUPTION_DELETION_TIMEOUT = 120.0


def _scaled(value: int | str, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, "NN%" of `total` rounded up or down."""
    if isinstance(value, int):
        return value
    percent = int(value.rstrip("%"))
    scaled = total * percent
    return -(-scaled // 100) if round_up else scaled // 100


def compute_pdb_status(pdb: PodDisruptionBudget, pods: Iterable[Pod], now: float) -> PodDisruptionBudgetStatus:
    """The disruption controller's trySync (pkg/controller/disruption) for `pods` (the namespace's pods).

    Which pods: every pod the selector matches, in any phase (the controller lists them all, so a
    Failed pod still counts as expected; an empty selector matches every pod, a missing one none).

    expectedPods and desiredHealthy (getExpectedPodCount):
      * integer minAvailable: expected = the matching pods, desired = minAvailable;
      * maxUnavailable, or a percentage minAvailable: expected = the sum of the scale of the pods'
        controllers (getExpectedScale). podsched stores no workload controllers, so every pod is
        unmanaged as upstream calls it (it warns with an UnmanagedPods event and leaves such pods out
        of the sum): expected = 0, desired = maxUnavailable subtracted from 0 and floored at 0, or the
        percentage of 0. With 0 expected, no disruption is allowed: upstream's documented limitation
        that budgets of bare pods can only use an integer minAvailable.

    currentHealthy (countHealthyPods): matching pods not being deleted, not listed in disruptedPods
    within DISRUPTION_DELETION_TIMEOUT, and ready. podsched has no Ready condition: its node agent
    starts a bound pod at once, so Running is ready (as the scheduler and `simulate` see it).

    disruptedPods (buildDisruptedPodMap) keeps the entries of matching pods not yet being deleted
    whose timeout has not passed. disruptionsAllowed = currentHealthy - desiredHealthy, but 0 when
    that is negative or nothing is expected. observedGeneration is the PDB's generation."""
    selector = pdb.selector
    matching = [p for p in pods if selector_matches(selector, p.labels)]
    if isinstance(pdb.min_available, int):
        expected, desired = len(matching), pdb.min_available
    elif pdb.min_available is not None:
        expected = 0
        desired = _scaled(pdb.min_available, expected, round_up=True)
    elif pdb.max_unavailable is not None:
        expected = 0
        desired = max(0, expected - _scaled(pdb.max_unavailable, expected, round_up=True))
    else:
        expected = desired = 0
    disrupted = {
        p.name: pdb.status.disrupted_pods[p.name]
        for p in matching
        if p.metadata.deletion_timestamp is None
        and p.name in pdb.status.disrupted_pods
        and pdb.status.disrupted_pods[p.name] + DISRUPTION_DELETION_TIMEOUT >= now
    }
    healthy = sum(
        1
        for p in matching
        if p.metadata.deletion_timestamp is None
        and not (p.name in disrupted and disrupted[p.name] + DISRUPTION_DELETION_TIMEOUT > now)
        and p.status.phase == POD_RUNNING
    )
    allowed = healthy - desired
    return PodDisruptionBudgetStatus(
        current_healthy=healthy,
        desired_healthy=desired,
        disruptions_allowed=allowed if expected > 0 and allowed > 0 else 0,
        expected_pods=expected,
        disrupted_pods=disrupted,
        observed_generation=pdb.metadata.generation,
    )
