"""filterPodsWithPDBViolation: which victims would push a PodDisruptionBudget below its allowance."""

from __future__ import annotations

from collections.abc import Sequence

from podsched.api.labels import selector_matches
from podsched.api.types import Pod, PodDisruptionBudget


def pdb_matches_pod(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """The scheduler's PDB matching: same namespace, and a selector that is neither nil nor empty
    (an empty selector matches nothing here, unlike policy/v1 where it matches every pod)."""
    if pdb.namespace != pod.namespace or not pod.labels:
        return False
    selector = pdb.selector
    if selector is None or selector.is_empty:
        return False
    return selector_matches(selector, pod.labels)


def filter_pods_with_pdb_violation(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """Split `pods` (order kept) into (violating, non_violating).

    Each PDB's disruptionsAllowed is consumed in order on a private copy; a pod already listed in
    status.disruptedPods is being evicted and consumes nothing. A pod matching several PDBs violates
    at the first that drops below zero and, as upstream's loop returns there, consumes none of the
    PDBs after it."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        violates = False
        if pod.labels:
            for index, pdb in enumerate(pdbs):
                if not pdb_matches_pod(pdb, pod):
                    continue
                if pod.name in pdb.status.disrupted_pods:
                    continue
                allowed[index] -= 1
                if allowed[index] < 0:
                    violates = True
                    break
        (violating if violates else non_violating).append(pod)
    return violating, non_violating


def pdbs_violated_by(victims: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]) -> list[PodDisruptionBudget]:
    """The PDBs that evicting every one of `victims` together would push below their allowance: more
    matching victims (not already in status.disruptedPods) than disruptionsAllowed. Exact for the
    set, unlike filter_pods_with_pdb_violation's per-pod split, which counts a pod as violating
    when the budget ran out before it even if a pod counted earlier is then reprieved."""
    violated: list[PodDisruptionBudget] = []
    for pdb in pdbs:
        disrupted = pdb.status.disrupted_pods
        taken = sum(1 for pod in victims if pod.name not in disrupted and pdb_matches_pod(pdb, pod))
        if taken > pdb.status.disruptions_allowed:
            violated.append(pdb)
    return violated
