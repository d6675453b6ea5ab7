"""Why protected and PDB-covered pods were or were not preempted, in sentences, for the pods a
PostFilter decision concerns: `apply --dry-run=server` prints them under its prediction, and
`describe pod` says the same of one pod.

Only pods that something protects are explained: a PriorityClass with PreemptionToleration's
annotations (when the profile runs that plugin) or a PodDisruptionBudget that selects them. The
decision itself is the Evaluator's; this reads it afterwards and changes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from podsched.api.types import Pod, PodDisruptionBudget, PriorityClass
from podsched.framework.interface import PostFilterResult
from podsched.framework.node_info import Snapshot
from podsched.framework.pod_groups import PodGroupLister
from podsched.preemption.domain import cross_nodes_victims, get_pod_priority
from podsched.preemption.group_explain import explain_units_on_node
from podsched.preemption.pdb import pdb_matches_pod, pdbs_violated_by
from podsched.preemption.toleration import (
    MINIMUM_PREEMPTABLE_PRIORITY,
    TOLERATION_SECONDS,
    ExemptionCheck,
    judge,
)
from podsched.preemption.victims import VictimLookupError, VictimPolicy

# A dry run over thousands of nodes could explain thousands of pods; the first ones say enough.
MAX_EXPLANATIONS = 20


def _name(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def _pdb_names(pdbs: Sequence[PodDisruptionBudget]) -> str:
    return ", ".join(
        f"{pdb.namespace}/{pdb.name} (disruptionsAllowed {pdb.status.disruptions_allowed})" for pdb in pdbs
    )


def has_toleration_policy(priority_class: PriorityClass | None) -> bool:
    annotations = priority_class.metadata.annotations if priority_class is not None else {}
    return MINIMUM_PREEMPTABLE_PRIORITY in annotations or TOLERATION_SECONDS in annotations


def toleration_reason(
    pod: Pod, preemptor: Pod, priority_classes: Mapping[str, PriorityClass], now: float
) -> tuple[bool, str] | None:
    """(exempted, why) for a pod whose class has a toleration policy; None for any other pod."""
    if not has_toleration_policy(priority_classes.get(pod.spec.priority_class_name)):
        return None
    try:
        verdict = judge(pod, preemptor, priority_classes, now)
    except VictimLookupError:
        return None
    return verdict.exempted, verdict.reason


def explain_preemption(
    preemptor: Pod,
    result: PostFilterResult | None,
    snapshot: Snapshot,
    pdbs: Sequence[PodDisruptionBudget],
    policy: VictimPolicy,
    now: float,
    pod_groups: PodGroupLister | None = None,
) -> list[str]:
    """One sentence per protected or PDB-covered lower-priority pod the decision concerns: on the
    chosen node when preemption nominates one, else on every node (the preemptor stays pending).
    With `pod_groups` (GenericWorkload), a pod is lower-priority by its group's priority, and the
    PodGroups' part on the chosen node is told too (`group_explain`)."""
    check = policy.exempted if isinstance(policy.exempted, ExemptionCheck) else None
    chosen = result.nominated_node_name if result is not None else ""
    victims = list(result.victims) if result is not None and chosen else []
    victim_uids = {victim.uid for victim in victims}
    violated = {id(pdb) for pdb in pdbs_violated_by(victims, pdbs)} if victims else set()
    node_infos = [info for info in (snapshot.get(chosen),) if info is not None] if chosen else snapshot.node_info_list
    lines: list[str] = []
    more = 0
    for node_info in node_infos:
        where = "" if chosen else f" on node {node_info.name}"
        for pod_info in node_info.pods:
            pod = pod_info.pod
            if get_pod_priority(pod, pod_groups) >= preemptor.priority:
                continue
            toleration = toleration_reason(pod, preemptor, check.priority_classes, check.now) if check else None
            covering = [pdb for pdb in pdbs if pdb_matches_pod(pdb, pod)]
            sentences = _sentences(
                pod, where, pod.uid in victim_uids, bool(chosen), toleration, covering, violated, policy
            )
            for sentence in sentences:
                if len(lines) < MAX_EXPLANATIONS:
                    lines.append(sentence)
                else:
                    more += 1
    if more:
        lines.append(f"... and {more} more")
    chosen_info = snapshot.get(chosen) if chosen else None
    if pod_groups is not None and chosen_info is not None:
        units = cross_nodes_victims(snapshot, pod_groups, [chosen_info])
        lines += explain_units_on_node(preemptor, chosen, victims, units, snapshot, pod_groups)
    return lines


def _sentences(
    pod: Pod,
    where: str,
    is_victim: bool,
    nominated: bool,
    toleration: tuple[bool, str] | None,
    covering: list[PodDisruptionBudget],
    violated: set[int],
    policy: VictimPolicy,
) -> list[str]:
    name = _name(pod) + where
    out: list[str] = []
    if toleration is not None:
        exempted, reason = toleration
        if is_victim:
            out.append(f"{name} is preempted: {reason}")
        elif exempted:
            out.append(f"{name} is not preempted: {reason}")
    if covering:
        if is_victim:
            broken = [pdb for pdb in covering if id(pdb) in violated]
            if broken:
                out.append(
                    f"{name} is preempted although it exceeds the allowance of PodDisruptionBudget "
                    f"{_pdb_names(broken)}: no node without a violation helps (pdbPolicy: BestEffort)"
                )
            else:
                out.append(f"{name} is preempted within the allowance of PodDisruptionBudget {_pdb_names(covering)}")
        elif toleration is None or not toleration[0]:
            if nominated:
                out.append(
                    f"{name} is not preempted: PodDisruptionBudget {_pdb_names(covering)} covers it, "
                    "so it was reprieved first, and the other victims are enough"
                )
            elif policy.strict_pdbs:
                out.append(
                    f"{name} is not preempted: PodDisruptionBudget {_pdb_names(covering)} covers it (pdbPolicy: Strict)"
                )
    return out
