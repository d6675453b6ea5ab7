"""SelectVictimsOnNode (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go): the
fewest, least important pods whose removal lets the preemptor fit, reprieving PDB-protected pods first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from podsched.api.types import Pod, PodDisruptionBudget
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.pod_groups import PodGroupLister
from podsched.framework.runtime import Framework
from podsched.framework.status import Code, Status
from podsched.preemption import domain
from podsched.preemption.ordering import importance_key
from podsched.preemption.pdb import filter_pods_with_pdb_violation, pdbs_violated_by
from podsched.preemption.pdb_policy import strict_pdb_reason
from podsched.preemption.tie_breaks import VictimSummary

NO_VICTIMS_MESSAGE = "No preemption victims found for incoming pod"
# PreemptionToleration: there are lower-priority pods, but each tolerates this preemptor.
TOLERATED_MESSAGE = "No preemption victims found for incoming pod: its lower-priority pods tolerate its preemption"


@dataclass(slots=True)
class NodeVictims:
    """The dry-run outcome on one node: victims (most important first) on success, else a status."""

    node_name: str
    victims: list[Pod]
    num_pdb_violations: int
    status: Status | None  # None: success
    summary: VictimSummary | None = None  # the tie-breaks' inputs, when the dry run computed them

    @property
    def is_candidate(self) -> bool:
        return self.status is None and bool(self.victims)


class VictimLookupError(Exception):
    """A victim's policy could not be read (its PriorityClass is gone): the node's dry run fails."""


@dataclass(frozen=True, slots=True)
class VictimPolicy:
    """What a PostFilter plugin changes in SelectVictimsOnNode; the default is upstream's.

    `strict_pdbs`: DefaultPreemption's `pdbPolicy: Strict`: a node whose victim set would exceed a
    PDB's disruptionsAllowed is no candidate. `exempted(victim, preemptor)`: PreemptionToleration's
    ExemptedFromPreemption: such a lower-priority pod stays on the node and is never a victim (it
    may raise VictimLookupError)."""

    strict_pdbs: bool = False
    exempted: Callable[[Pod, Pod], bool] | None = None

    @property
    def is_default(self) -> bool:
        return not self.strict_pdbs and self.exempted is None


DEFAULT_VICTIM_POLICY = VictimPolicy()


def is_preemption_allowed(victim: Pod, preemptor: Pod) -> bool:
    """A victim must have strictly lower priority (IsEligiblePod's default adds nothing)."""
    return victim.priority < preemptor.priority


def select_victims_on_node(
    framework: Framework,
    state: CycleState,
    preemptor: Pod,
    node_info: NodeInfo,
    pdbs: Sequence[PodDisruptionBudget],
    now: float,
    policy: VictimPolicy = DEFAULT_VICTIM_POLICY,
    pod_groups: PodGroupLister | None = None,
    snapshot: Snapshot | None = None,
) -> NodeVictims:
    """Mutates the *copies* it is given (callers pass clones of the node and cycle state).

    With `pod_groups` (GenericWorkload on; `snapshot` then holds the other nodes), victims are units
    (`select_victim_units_on_node`); without, pods, as below.

    1. Remove every lower-priority pod (that `policy` does not exempt); if none, the node is not a
       candidate.
    2. If the preemptor still does not fit, the node is not a candidate.
    3. Try to put pods back, most important first, PDB-violating ones before the rest; a pod whose
       return makes the preemptor not fit becomes a victim. One greedy pass, no backtracking.
    4. Under a strict PDB policy, a victim set that exceeds some PDB's allowance is no candidate."""
    if pod_groups is not None and snapshot is not None:
        return select_victim_units_on_node(
            framework, state, preemptor, node_info, pdbs, now, policy, pod_groups, snapshot
        )
    name = node_info.name
    potential: list[PodInfo] = [pi for pi in node_info.pods if is_preemption_allowed(pi.pod, preemptor)]
    exempted = policy.exempted
    if exempted is not None and potential:
        try:
            potential = [pi for pi in potential if not exempted(pi.pod, preemptor)]
        except VictimLookupError as lookup_error:
            return NodeVictims(name, [], 0, Status(Code.ERROR, [str(lookup_error)]))
        if not potential:
            return NodeVictims(name, [], 0, Status.unresolvable("", TOLERATED_MESSAGE))
    if not potential:
        return NodeVictims(name, [], 0, Status.unresolvable("", NO_VICTIMS_MESSAGE))
    for pod_info in potential:
        node_info.remove_pod(pod_info.pod)
        error = framework.run_pre_filter_extension_remove_pod(state, preemptor, pod_info, node_info)
        if error is not None:
            return NodeVictims(name, [], 0, error)
    status = framework.run_filter_plugins_with_nominated_pods(state, preemptor, node_info)
    if status is not None:
        return NodeVictims(name, [], 0, status)

    key = importance_key(now)
    potential.sort(key=lambda pi: key(pi.pod))
    by_uid = {pi.pod.uid: pi for pi in potential}
    violating, non_violating = filter_pods_with_pdb_violation([pi.pod for pi in potential], pdbs)

    victims: list[Pod] = []

    def reprieve(pod: Pod) -> bool:
        pod_info = by_uid[pod.uid]
        node_info.add_pod(pod_info)
        error = framework.run_pre_filter_extension_add_pod(state, preemptor, pod_info, node_info)
        if error is not None:
            raise RuntimeError(error.message)
        if framework.run_filter_plugins_with_nominated_pods(state, preemptor, node_info) is None:
            return True
        node_info.remove_pod(pod)
        error = framework.run_pre_filter_extension_remove_pod(state, preemptor, pod_info, node_info)
        if error is not None:
            raise RuntimeError(error.message)
        victims.append(pod)
        return False

    num_violating = 0
    try:
        for pod in violating:
            if not reprieve(pod):
                num_violating += 1
        for pod in non_violating:
            reprieve(pod)
    except RuntimeError as error:
        return NodeVictims(name, [], 0, Status(Code.ERROR, [str(error)]))
    if violating and non_violating:
        victims.sort(key=key)  # keep victims[0] the most important (upstream fix #128307)
    if policy.strict_pdbs and num_violating:
        # The per-pod split may count a violation the reprieves undid: judge the set itself.
        violated = pdbs_violated_by(victims, pdbs)
        if violated:
            return NodeVictims(name, [], 0, Status(Code.UNSCHEDULABLE, [strict_pdb_reason(violated)]))
        num_violating = 0
    return NodeVictims(name, victims, num_violating, None)


def select_victim_units_on_node(
    framework: Framework,
    state: CycleState,
    preemptor: Pod,
    node_info: NodeInfo,
    pdbs: Sequence[PodDisruptionBudget],
    now: float,
    policy: VictimPolicy,
    pod_groups: PodGroupLister,
    snapshot: Snapshot,
) -> NodeVictims:
    """SelectVictimsOnNode with GenericWorkload on: the same steps over preemption units
    (podsched.preemption.domain). A unit with a pod on this node is a victim or not as a whole: a
    disruptionMode `All` group brings its pods on other nodes along, at its group's priority.

    Only this node (a clone) changes; the pods of a unit on other nodes are removed and put back
    only in the cycle state, through the PreFilter extensions with those nodes' NodeInfos (upstream
    does the same: Filter runs on this node alone). A unit is allowed if its priority is below the
    preemptor's and `policy` exempts none of its pods."""
    name = node_info.name
    try:
        units = domain.cross_nodes_victims(snapshot, pod_groups, [node_info])
    except LookupError as error:
        return NodeVictims(name, [], 0, Status(Code.ERROR, [str(error)]))
    lower = [unit for unit in units if unit.priority < preemptor.priority]
    potential = lower
    exempted = policy.exempted
    if exempted is not None and lower:
        try:
            potential = [unit for unit in lower if not any(exempted(pod, preemptor) for pod in unit.pods)]
        except VictimLookupError as lookup_error:
            return NodeVictims(name, [], 0, Status(Code.ERROR, [str(lookup_error)]))
        if not potential:
            return NodeVictims(name, [], 0, Status.unresolvable("", TOLERATED_MESSAGE))
    if not potential:
        return NodeVictims(name, [], 0, Status.unresolvable("", NO_VICTIMS_MESSAGE))

    def node_of(pod_info: PodInfo) -> NodeInfo:
        on = pod_info.pod.spec.node_name
        if on == name:
            return node_info
        remote = snapshot.get(on)
        assert remote is not None  # cross_nodes_victims found every unit's nodes
        return remote

    def remove(unit: domain.DomainVictim) -> None:
        for pod_info in unit.pod_infos:
            target = node_of(pod_info)
            if target is node_info:
                node_info.remove_pod(pod_info.pod)
            error = framework.run_pre_filter_extension_remove_pod(state, preemptor, pod_info, target)
            if error is not None:
                raise RuntimeError(error.message)

    def add(unit: domain.DomainVictim) -> None:
        for pod_info in unit.pod_infos:
            target = node_of(pod_info)
            if target is node_info:
                node_info.add_pod(pod_info)
            error = framework.run_pre_filter_extension_add_pod(state, preemptor, pod_info, target)
            if error is not None:
                raise RuntimeError(error.message)

    try:
        for unit in potential:
            remove(unit)
    except RuntimeError as error:
        return NodeVictims(name, [], 0, Status(Code.ERROR, [str(error)]))
    status = framework.run_filter_plugins_with_nominated_pods(state, preemptor, node_info)
    if status is not None:
        return NodeVictims(name, [], 0, status)

    key = domain.importance_key(now)
    potential.sort(key=key)
    violating, non_violating = domain.filter_victims_with_pdb_violation(potential, pdbs)
    victims: list[domain.DomainVictim] = []

    def reprieve(unit: domain.DomainVictim) -> bool:
        add(unit)
        if framework.run_filter_plugins_with_nominated_pods(state, preemptor, node_info) is None:
            return True
        remove(unit)
        victims.append(unit)
        return False

    num_violating = 0
    try:
        for entry in violating:
            if not reprieve(entry.victim):
                num_violating += entry.violate_count
        for unit in non_violating:
            reprieve(unit)
    except RuntimeError as error:
        return NodeVictims(name, [], 0, Status(Code.ERROR, [str(error)]))
    if violating and non_violating:
        victims.sort(key=key)
    victim_pods = [pod for unit in victims for pod in unit.pods]
    if policy.strict_pdbs and num_violating:
        violated = pdbs_violated_by(victim_pods, pdbs)
        if violated:
            return NodeVictims(name, [], 0, Status(Code.UNSCHEDULABLE, [strict_pdb_reason(violated)]))
        num_violating = 0
    return NodeVictims(name, victim_pods, num_violating, None)
