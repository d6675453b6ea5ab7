"""Preemption victims as units (pkg/scheduler/framework/preemption/types.go and util.go, GenericWorkload
on): a victim is one pod, or every scheduled pod of a PodGroup whose disruptionMode is `All`, which
is evicted whole or not at all, wherever its pods run.

A pod that belongs to a PodGroup is judged by its group's priority, not its own. With the gate off
(no PodGroup lister) every victim is one pod with its own priority, which is what the per-pod
functions in `ordering` and `pdb` compute faster.

CompositePodGroups (their own alpha gate, off) are not modelled: a group's hierarchy is the group."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from podsched.api.types import Pod, PodDisruptionBudget
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.pod_groups import DISRUPTION_MODE_ALL, PodGroupLister
from podsched.preemption.ordering import pod_start_time
from podsched.preemption.pdb import pdb_matches_pod


class VictimKind(enum.IntEnum):
    """fwk.EntityKeyType, ranked as victimRank ranks them: a group outranks a pod."""

    POD = 1
    POD_GROUP = 2


@dataclass(slots=True)
class DomainVictim:
    """A preemption unit (Victim) and the nodes its pods run on (DomainVictim.affectedNodes).

    `pods` are evicted together; `priority` is the pod's own, or its group's when it belongs to one;
    `kind` is POD_GROUP for a whole group, and also for a lone member of a `Single` group (upstream
    marks it so for its metrics, and victimRank then ranks it above a plain pod)."""

    pod_infos: list[PodInfo]
    priority: int
    kind: VictimKind
    affected_nodes: dict[str, NodeInfo] = field(default_factory=dict)

    @property
    def pods(self) -> list[Pod]:
        return [pi.pod for pi in self.pod_infos]

    @property
    def is_group(self) -> bool:
        return self.kind == VictimKind.POD_GROUP

    def earliest_start_time(self, now: float) -> float:
        """The earliest status.startTime of the unit's pods (unset counts as `now`, as everywhere in
        podsched's ordering)."""
        return min(pod_start_time(pi.pod, now) for pi in self.pod_infos)


def get_pod_priority(pod: Pod, pod_groups: PodGroupLister | None) -> int:
    """GetPodPriority: the priority of the pod's PodGroup when it has one that exists, else the pod's."""
    if pod_groups is None:
        return pod.priority
    group_name = pod_groups.pod_group_name(pod)
    if group_name is None:
        return pod.priority
    group = pod_groups.pod_group(pod.namespace, group_name)
    return group.group_priority if group is not None else pod.priority


def _all_disruption_group(pod: Pod, pod_groups: PodGroupLister | None) -> str | None:
    """getHighestAllAncestor without composite groups: the pod's group name when that group exists
    and its disruptionMode is `All`."""
    if pod_groups is None:
        return None
    group_name = pod_groups.pod_group_name(pod)
    if group_name is None:
        return None
    group = pod_groups.pod_group(pod.namespace, group_name)
    return group_name if group is not None and group.disruption_mode == DISRUPTION_MODE_ALL else None


def new_pod_victim(pod_info: PodInfo, pod_groups: PodGroupLister | None) -> DomainVictim:
    """NewPodVictim: one pod, at its effective priority."""
    pod = pod_info.pod
    grouped = pod_groups is not None and pod_groups.pod_group_name(pod) is not None
    kind = VictimKind.POD_GROUP if grouped else VictimKind.POD
    return DomainVictim([pod_info], get_pod_priority(pod, pod_groups), kind)


def _affected_nodes(snapshot: Snapshot, pods: Iterable[Pod]) -> dict[str, NodeInfo]:
    nodes: dict[str, NodeInfo] = {}
    for pod in pods:
        name = pod.spec.node_name
        if name not in nodes:
            node_info = snapshot.get(name)
            if node_info is None:
                raise LookupError(f'failed to get node info for node "{name}" from snapshot')
            nodes[name] = node_info
    return nodes


def cross_nodes_victims(
    snapshot: Snapshot, pod_groups: PodGroupLister | None, nodes: Sequence[NodeInfo]
) -> list[DomainVictim]:
    """getCrossNodesVictims: the preemption units with a pod on `nodes`, in node then pod order (the
    order the importance sort keeps among equals). A pod of an `All` group brings its whole group,
    scheduled pods on any node, once; any other pod is its own unit. Raises LookupError if a group
    member's node is not in the snapshot."""
    seen: set[tuple[str, str, str]] = set()
    victims: list[DomainVictim] = []
    for node_info in nodes:
        for pod_info in node_info.pods:
            pod = pod_info.pod
            group_name = _all_disruption_group(pod, pod_groups)
            if group_name is None:
                key = ("Pod", pod.namespace, pod.name)
                if key not in seen:
                    seen.add(key)
                    victims.append(new_pod_victim(pod_info, pod_groups))
                continue
            key = ("PodGroup", pod.namespace, group_name)
            if key in seen:
                continue
            seen.add(key)
            assert pod_groups is not None  # an `All` group was found through it
            members = list(pod_groups.scheduled_pods(pod.namespace, group_name))
            if not members:
                # The group's state does not list the pod it was found through: keep that pod alone.
                victims.append(new_pod_victim(pod_info, pod_groups))
                continue
            victims.append(
                DomainVictim(
                    [_pod_info_on_node(snapshot, member, pod_info) for member in members],
                    get_pod_priority(pod, pod_groups),
                    VictimKind.POD_GROUP,
                )
            )
    for victim in victims:
        victim.affected_nodes = _affected_nodes(snapshot, victim.pods)
    return victims


def _pod_info_on_node(snapshot: Snapshot, pod: Pod, found: PodInfo) -> PodInfo:
    """The PodInfo the node already holds for this pod (its parsed affinity terms), else a new one."""
    if pod.uid == found.pod.uid:
        return found
    node_info = snapshot.get(pod.spec.node_name)
    if node_info is not None:
        for pod_info in node_info.pods:
            if pod_info.pod.uid == pod.uid:
                return pod_info
    return PodInfo(pod)


def importance_key(now: float) -> Callable[[DomainVictim], tuple[int, int, int, float]]:
    """A sort key equivalent to MoreImportantVictim (most important first): higher priority, then a
    group before a pod, then the larger unit, then the earlier start."""
    return lambda v: (-v.priority, -int(v.kind), -len(v.pod_infos), v.earliest_start_time(now))


def more_important_victim(a: DomainVictim, b: DomainVictim, now: float) -> bool:
    key = importance_key(now)
    return key(a) < key(b)


@dataclass(slots=True)
class ViolatingVictim:
    victim: DomainVictim
    violate_count: int  # how many of its pods would violate a PDB


def filter_victims_with_pdb_violation(
    victims: Sequence[DomainVictim], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[ViolatingVictim], list[DomainVictim]]:
    """FilterVictimsWithPDBViolation: `filter_pods_with_pdb_violation` over units. A unit violates if
    any of its pods would (a group cannot be reprieved in part); each PDB's allowance is consumed in
    order on a private copy, a pod already in status.disruptedPods consuming nothing."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]

    def violates(pod: Pod) -> bool:
        if not pod.labels:
            return False
        for index, pdb in enumerate(pdbs):
            if not pdb_matches_pod(pdb, pod) or pod.name in pdb.status.disrupted_pods:
                continue
            allowed[index] -= 1
            if allowed[index] < 0:
                return True  # upstream returns at the first PDB that goes below zero
        return False

    violating: list[ViolatingVictim] = []
    non_violating: list[DomainVictim] = []
    for victim in victims:
        count = sum(1 for pi in victim.pod_infos if violates(pi.pod))
        if count:
            violating.append(ViolatingVictim(victim, count))
        else:
            non_violating.append(victim)
    return violating, non_violating
