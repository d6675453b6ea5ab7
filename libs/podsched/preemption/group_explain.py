"""Why pods of PodGroups were or were not preempted (GenericWorkload), in sentences, for the
decisions of pod-group preemption (`pod_group_preemption`) and of a pod's preemption over units
(`victims.select_victim_units_on_node`): `apply --dry-run=server` prints them under its prediction,
`describe pod` says the same of one pod, and the scheduler's events carry the group's.

Only what groups change is explained: a disruptionMode All group taken or spared whole, a pod
judged at its group's priority rather than its own, a group that may not preempt (preemptionPolicy
Never). The decisions are the evaluators'; this reads them afterwards and changes nothing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from podsched.api.types import PREEMPT_NEVER, Pod
from podsched.framework.node_info import Snapshot
from podsched.framework.pod_groups import DISRUPTION_MODE_ALL, PodGroupLister
from podsched.preemption.domain import DomainVictim, get_pod_priority
from podsched.preemption.pod_group_preemption import PodGroupPreemptionOutcome, PodGroupPreemptor

# As `explain`: the first sentences say enough.
MAX_EXPLANATIONS = 20


def _name(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def _nodes(pods: Iterable[Pod]) -> str:
    names = sorted({pod.spec.node_name for pod in pods})
    return ("node " if len(names) == 1 else "nodes ") + ", ".join(names)


def _group_words(pod: Pod, pod_groups: PodGroupLister) -> tuple[str, str, int] | None:
    """(namespace/name, disruptionMode, priority) of the pod's existing PodGroup."""
    name = pod_groups.pod_group_name(pod)
    group = pod_groups.pod_group(pod.namespace, name) if name is not None else None
    if group is None or name is None:
        return None
    return f"{pod.namespace}/{name}", group.disruption_mode, group.group_priority


def unit_sentence(unit: DomainVictim, preempted: bool, by: str, pod_groups: PodGroupLister) -> str | None:
    """One sentence for a unit a preemption weighed, if a PodGroup matters to it: a whole `All`
    group, or a pod weighed at its group's priority rather than its own. None otherwise."""
    first = unit.pod_infos[0].pod
    words = _group_words(first, pod_groups)
    if words is None:
        return None
    group, mode, priority = words
    pods = unit.pods
    if mode == DISRUPTION_MODE_ALL and unit.is_group:
        members = ", ".join(_name(pod) for pod in pods)
        if preempted:
            return (
                f"{members} on {_nodes(pods)} are preempted together: PodGroup {group} has disruptionMode All, "
                f"so its pods go as one (priority {priority}, below {by})"
            )
        return (
            f"{members} on {_nodes(pods)} are not preempted: PodGroup {group} (disruptionMode All) was put back "
            f"whole and {by} still fits"
        )
    if first.priority == priority:
        return None  # the group changes nothing about this pod's weighing
    verdict = "is preempted" if preempted else "is not preempted"
    return (
        f"{_name(first)} {verdict}: it is weighed at PodGroup {group}'s priority {priority}, "
        f"not its own {first.priority}"
    )


def spared_by_group_priority(
    snapshot: Snapshot, preemptor_priority: int, by: str, pod_groups: PodGroupLister, nodes: Sequence[str] | None
) -> list[str]:
    """Pods whose own priority is below the preemptor's but whose PodGroup's is not: never weighed."""
    lines: list[str] = []
    infos = snapshot.node_info_list if nodes is None else [i for i in map(snapshot.get, nodes) if i is not None]
    for node_info in infos:
        for pod_info in node_info.pods:
            pod = pod_info.pod
            if pod.priority < preemptor_priority <= get_pod_priority(pod, pod_groups):
                words = _group_words(pod, pod_groups)
                if words is not None:
                    lines.append(
                        f"{_name(pod)} is not preempted: its PodGroup {words[0]} has priority {words[2]}, "
                        f"not below {by}"
                    )
    return lines


def explain_pod_group_preemption(
    preemptor: PodGroupPreemptor,
    outcome: PodGroupPreemptionOutcome,
    snapshot: Snapshot,
    pod_groups: PodGroupLister,
) -> list[str]:
    """Sentences for one pod-group preemption: why it did not preempt at all (preemptionPolicy
    Never), which units went or stayed because of their groups, and which pods their group's
    priority kept out of reach."""
    by = f"PodGroup {preemptor.namespace}/{preemptor.name}'s {preemptor.priority}"
    if preemptor.preemption_policy == PREEMPT_NEVER:
        return [
            f"PodGroup {preemptor.namespace}/{preemptor.name} preempts nothing: its preemptionPolicy is Never, "
            "so its pods wait for room"
        ]
    chosen = {id(unit) for unit in outcome.victim_units}
    lines = [
        sentence
        for unit in outcome.units
        if (sentence := unit_sentence(unit, id(unit) in chosen, by, pod_groups)) is not None
    ]
    lines += spared_by_group_priority(snapshot, preemptor.priority, by, pod_groups, None)
    return _bounded(lines)


def explain_units_on_node(
    preemptor: Pod,
    node_name: str,
    victims: Sequence[Pod],
    units: Sequence[DomainVictim],
    snapshot: Snapshot,
    pod_groups: PodGroupLister,
) -> list[str]:
    """Sentences for a pod's preemption on `node_name` (GenericWorkload): `units` are those with a
    pod on the node, `victims` the pods chosen."""
    by = f"{_name(preemptor)}'s {preemptor.priority}"
    chosen = {pod.uid for pod in victims}
    lines = [
        sentence
        for unit in units
        if unit.priority < preemptor.priority
        and (sentence := unit_sentence(unit, unit.pod_infos[0].pod.uid in chosen, by, pod_groups)) is not None
    ]
    lines += spared_by_group_priority(snapshot, preemptor.priority, by, pod_groups, [node_name])
    return _bounded(lines)


def _bounded(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_EXPLANATIONS:
        return lines
    return [*lines[:MAX_EXPLANATIONS], f"... and {len(lines) - MAX_EXPLANATIONS} more"]
