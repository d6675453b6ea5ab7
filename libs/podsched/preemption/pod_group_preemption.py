"""PodGroupEvaluator.Preempt (pkg/scheduler/framework/preemption/podgrouppreemption.go): preemption
where the preemptor is a whole PodGroup and the domain is the whole cluster.

Where single-pod preemption tries one node at a time, a gang looks for victims everywhere at once:

1. Eligibility: a group whose preemption policy is `Never` does not preempt.
2. Ongoing preemption: if a member is nominated to a node where a lower-priority pod is still
   terminating because of a preemption, wait for it (success, with the current nominations).
3. Every unit of lower priority in the cluster (a pod, or a whole `All` group: `domain`) is removed
   from a working copy of the cluster, and the group's own scheduling algorithm (the caller's
   `PodGroupSchedulingFunc`, run once) places the members on what is left; if it cannot, preemption
   does not help.
4. Units are put back one at a time, most important first, PDB-violating ones before the rest: a
   unit stays if, with it back, every placed member still passes Filter on its node (members
   checked in placement order, each assumed on its node once it passes); otherwise it is a victim.
5. The result names the victims (most important first) and nominates every placed member to its
   node. Nothing is evicted here: the caller actuates (podsched.preemption.executor).

The caller's snapshot is not changed: the evaluator works on clones of its NodeInfos."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from podsched.api.types import PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER, Pod, PodDisruptionBudget
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.pod_groups import PodGroupLister, PodGroupPolicy
from podsched.framework.runtime import Framework
from podsched.framework.status import Code, Status
from podsched.preemption.domain import (
    DomainVictim,
    cross_nodes_victims,
    filter_victims_with_pdb_violation,
    get_pod_priority,
    importance_key,
)
from podsched.preemption.eligibility import NOT_ELIGIBLE_NEVER, is_terminating_by_preemption

MESSAGE_PREFIX = "pod group preemption: "
NO_VICTIMS_MESSAGE = "No preemption victims found for incoming preemptor"
ONGOING_MESSAGE = "ongoing preemption on nominated nodes"
# The candidate upstream's executor is given: the whole cluster, under a name that is no node's.
CLUSTER_CANDIDATE = "cluster"


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    """fwk.ProposedAssignment: where the group's algorithm put one member (node "" if nowhere), and
    the cycle state it was filtered with (built with the members placed before it assumed)."""

    pod_info: PodInfo
    node_name: str
    state: CycleState

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod


@dataclass(slots=True)
class PodGroupAssignments:
    """What one run of the group's scheduling algorithm proposes, and its status (the group's:
    success only if the group as a whole can be placed)."""

    assignments: list[ProposedAssignment]
    status: Status


# fwk.PodGroupSchedulingFunc: the group's scheduling algorithm, run on the given snapshot (members
# of lower priority already removed from it). It must leave the snapshot as it found it (members it
# assumes are forgotten again), as upstream's runRootSchedulingAlgorithm reverts its reservations.
PodGroupSchedulingFunc = Callable[[Snapshot], PodGroupAssignments]


@dataclass(frozen=True, slots=True)
class PodGroupPreemptor:
    """podGroupPreemptor: the group as a preemptor: its key, its priority (the PodGroup's), its
    unscheduled members, and its resolved preemption policy."""

    namespace: str
    name: str
    priority: int
    members: tuple[Pod, ...]
    preemption_policy: str


def resolve_preemption_policy(
    group: PodGroupPolicy, members: Sequence[Pod], enable_pod_group_preemption_policy: bool
) -> str:
    """resolvePreemptionPolicy: with the PodGroupPreemptionPolicy gate, the group's own
    preemptionPolicy (PreemptLowerPriority when unset); without it, Never if any member says Never."""
    if enable_pod_group_preemption_policy:
        policy = group.preemption_policy
        if policy is not None:
            return policy
    elif any(pod.spec.preemption_policy == PREEMPT_NEVER for pod in members):
        return PREEMPT_NEVER
    return PREEMPT_LOWER_PRIORITY


def new_pod_group_preemptor(
    namespace: str,
    name: str,
    group: PodGroupPolicy,
    members: Sequence[Pod],
    enable_pod_group_preemption_policy: bool,
) -> PodGroupPreemptor:
    return PodGroupPreemptor(
        namespace,
        name,
        group.group_priority,
        tuple(members),
        resolve_preemption_policy(group, members, enable_pod_group_preemption_policy),
    )


@dataclass(slots=True)
class PodGroupPreemptionOutcome:
    """PodGroupPostFilterResult and its status.

    `nominations`: (namespace, name) of each placed member -> its node (ModeOverride); None when the
    members' nominations are to be left as they are. `victims`: pods to evict, most important unit
    first. `units`: every unit weighed, with `victim_units` those chosen (for explanations)."""

    status: Status
    nominations: dict[tuple[str, str], str] | None = None
    victims: list[Pod] = field(default_factory=list)
    num_pdb_violations: int = 0
    num_pod_group_disruptions: int = 0
    units: list[DomainVictim] = field(default_factory=list)
    victim_units: list[DomainVictim] = field(default_factory=list)

    @property
    def message(self) -> str:
        """The status message as DefaultPreemption's PodGroupPostFilter words it."""
        return MESSAGE_PREFIX + self.status.message if self.status.message else ""


class PodGroupEvaluator:
    """Runs pod-group preemption over a profile's Filter plugins (the same framework whose nominator
    counts nominated pods)."""

    def __init__(self, framework: Framework) -> None:
        self.framework = framework

    def preempt(
        self,
        preemptor: PodGroupPreemptor,
        scheduling_func: PodGroupSchedulingFunc,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        pod_groups: PodGroupLister,
        now: float,
    ) -> PodGroupPreemptionOutcome:
        # 1. Eligibility.
        if preemptor.preemption_policy == PREEMPT_NEVER:
            return PodGroupPreemptionOutcome(Status(Code.UNSCHEDULABLE, [NOT_ELIGIBLE_NEVER]))

        # 2. Victims of an earlier preemption still terminating: wait for them.
        if is_ongoing_preemption(preemptor, snapshot, pod_groups):
            nominations = {(p.namespace, p.name): p.status.nominated_node_name for p in preemptor.members}
            return PodGroupPreemptionOutcome(Status(Code.SUCCESS, [ONGOING_MESSAGE]), nominations)

        # 3-5. The cluster as the domain.
        return self._select_victims_on_domain(preemptor, scheduling_func, snapshot, pdbs, pod_groups, now)

    def _select_victims_on_domain(
        self,
        preemptor: PodGroupPreemptor,
        scheduling_func: PodGroupSchedulingFunc,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        pod_groups: PodGroupLister,
        now: float,
    ) -> PodGroupPreemptionOutcome:
        working = Snapshot([node_info.clone() for node_info in snapshot.node_info_list])
        try:
            all_units = cross_nodes_victims(working, pod_groups, working.node_info_list)
        except LookupError as error:
            return PodGroupPreemptionOutcome(Status(Code.ERROR, [f"failed to create domain: {error}"]))
        potential = [unit for unit in all_units if unit.priority < preemptor.priority]
        if not potential:
            return PodGroupPreemptionOutcome(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [NO_VICTIMS_MESSAGE]))

        for unit in potential:
            for pod_info in unit.pod_infos:
                working.node_info_map[pod_info.pod.spec.node_name].remove_pod(pod_info.pod)
        working.pods_changed()

        proposal = scheduling_func(working)
        if not proposal.status.is_success:
            return PodGroupPreemptionOutcome(proposal.status, units=potential)

        potential.sort(key=importance_key(now))
        violating, non_violating = filter_victims_with_pdb_violation(potential, pdbs)
        placed = [a for a in proposal.assignments if a.node_name]
        reprieve = _Reprieve(self.framework, working, placed)

        victim_units: list[DomainVictim] = []
        num_pdb_violations = 0
        try:
            for entry in violating:
                if not reprieve.fits_with(entry.victim):
                    victim_units.append(entry.victim)
                    num_pdb_violations += entry.violate_count
            for unit in non_violating:
                if not reprieve.fits_with(unit):
                    victim_units.append(unit)
        except _ExtensionError as error:
            return PodGroupPreemptionOutcome(Status(Code.ERROR, [str(error)]), units=potential)

        victim_units.sort(key=importance_key(now))
        victims = [pod for unit in victim_units for pod in unit.pods]
        nominations = {(a.pod.namespace, a.pod.name): a.node_name for a in placed}
        message = f"found a placement for podgroup, preempting {len(victims)} victims"
        return PodGroupPreemptionOutcome(
            Status(Code.SUCCESS, [message]),
            nominations,
            victims,
            num_pdb_violations,
            sum(1 for unit in victim_units if unit.is_group),
            potential,
            victim_units,
        )


class _ExtensionError(Exception):
    """A PreFilter extension failed while a unit was put back or taken out again."""


class _Reprieve:
    """reprieveVictim: put one unit back into the working cluster and check every placed member on its
    node, in placement order, each assumed there once it passes; take the unit out again if one fails.
    The members assumed during a check are forgotten after it."""

    def __init__(self, framework: Framework, working: Snapshot, placed: Sequence[ProposedAssignment]) -> None:
        self.framework = framework
        self.working = working
        self.placed = placed
        self.nodes: Mapping[str, NodeInfo] = working.node_info_map

    def fits_with(self, unit: DomainVictim) -> bool:
        self._add_unit(unit)
        assumed: list[ProposedAssignment] = []
        try:
            for assignment in self.placed:
                node_info = self.nodes[assignment.node_name]
                status = self.framework.run_filter_plugins_with_nominated_pods(
                    assignment.state, assignment.pod, node_info
                )
                if status is not None and not status.is_success:
                    self._remove_unit(unit)
                    return False
                node_info.add_pod(assignment.pod_info)
                assumed.append(assignment)
            return True
        finally:
            for assignment in reversed(assumed):
                self.nodes[assignment.node_name].remove_pod(assignment.pod)
            self.working.pods_changed()

    def _add_unit(self, unit: DomainVictim) -> None:
        for pod_info in unit.pod_infos:
            node_info = self.nodes[pod_info.pod.spec.node_name]
            node_info.add_pod(pod_info)
            self.working.pods_changed()
            for assignment in self.placed:
                error = self.framework.run_pre_filter_extension_add_pod(
                    assignment.state, assignment.pod, pod_info, node_info
                )
                if error is not None:
                    raise _ExtensionError(error.message)

    def _remove_unit(self, unit: DomainVictim) -> None:
        for pod_info in unit.pod_infos:
            node_info = self.nodes[pod_info.pod.spec.node_name]
            node_info.remove_pod(pod_info.pod)
            self.working.pods_changed()
            for assignment in self.placed:
                error = self.framework.run_pre_filter_extension_remove_pod(
                    assignment.state, assignment.pod, pod_info, node_info
                )
                if error is not None:
                    raise _ExtensionError(error.message)


def is_ongoing_preemption(preemptor: PodGroupPreemptor, snapshot: Snapshot, pod_groups: PodGroupLister) -> bool:
    """isOngoingPreemption: a member's nominated node holds a pod of lower (effective) priority that is
    terminating because the scheduler preempted it."""
    nominated = {pod.status.nominated_node_name for pod in preemptor.members if pod.status.nominated_node_name}
    for node_name in nominated:
        node_info = snapshot.get(node_name)
        if node_info is None:
            continue
        for pod_info in node_info.pods:
            pod = pod_info.pod
            if get_pod_priority(pod, pod_groups) < preemptor.priority and is_terminating_by_preemption(pod):
                return True
    return False
