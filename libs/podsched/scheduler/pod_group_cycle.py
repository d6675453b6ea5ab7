"""The pod-group scheduling cycle (upstream schedule_one_podgroup.go, GenericWorkload gate): the pods
of one PodGroup are placed together, all or nothing.

podGroupCycle, for one group and the members the queue popped with it:
1. validatePodGroup: every pod names the same scheduler, has the group's priority and (with
   PodGroupPreemptionPolicy) its preemption policy; otherwise the cycle fails with an error.
2. PlacementFeasible (GangScheduling) before any pod: a gang that cannot reach minCount even if
   every pod fits ends here.
3. podGroupSchedulingDefaultAlgorithm: each pod in order runs the ordinary cycle (Filter, Score,
   no PostFilter) and, when a node fits, is assumed there so the next pods see it; after each pod
   PlacementFeasible says Wait, Success or Unschedulable (stop early).
4. The assumptions are always undone before returning (upstream reverts them at the end of
   runRootSchedulingAlgorithm and assumes again when binding): the caller binds the placed pods
   of a successful group together.
5. On Unschedulable, the PodGroupPostFilter hook (pod-group preemption) runs; its message is
   appended to the group's status, and a successful one marks the group waiting on preemption
   with each pod's nomination.
6. Every pod gets a result: pods never evaluated carry the group's status (completePodGroupAlgorithmResult).

Pure: reads a snapshot, assumes on it only for the cycle's length, and returns a decision. Topology-
aware placements (PlacementGenerate) and composite groups are not supported: the one placement
is every node, so PodGroupPodsCount's score decides nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from podsched.api.types import (
    CONDITION_POD_GROUP_INITIALLY_SCHEDULED,
    POD_GROUP_REASON_SCHEDULER_ERROR,
    POD_GROUP_REASON_UNSCHEDULABLE,
    PREEMPT_LOWER_PRIORITY,
    Condition,
    Pod,
    PodDisruptionBudget,
    PodGroup,
)
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import PodNominator
from podsched.framework.node_info import PodInfo, Snapshot
from podsched.framework.pod_groups import PodGroupLister
from podsched.framework.runtime import Framework
from podsched.framework.status import Code, Status
from podsched.plugins.gang_scheduling import PlacementProgress, placement_feasible
from podsched.preemption.pod_group_preemption import (
    PodGroupAssignments,
    PodGroupEvaluator,
    PodGroupPreemptionOutcome,
    PodGroupSchedulingFunc,
    ProposedAssignment,
    new_pod_group_preemptor,
)
from podsched.queue.nominator import Nominator
from podsched.scheduler.assumed import AssumedPods
from podsched.scheduler.schedule_one import CycleResult, NodeByNode, SchedulingAlgorithm

# errPodGroupUnschedulable's text, the error a rejected group carries.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
CONDITION_REASON_SCHEDULED = "Scheduled"


class PodGroupPostFilter(Protocol):
    """The PodGroupPostFilter extension point (upstream fwk.PodGroupPostFilterPlugin, run by
    RunPodGroupPostFilterPlugins; DefaultPreemption implements it): called when a pod group cannot be
    placed, to find victims whose eviction would let it be. This is where pod-group preemption
    (`podsched.preemption.pod_group_preemption.PodGroupEvaluator.preempt`) is called.

    `scheduling_func` runs the group's own scheduling algorithm on a snapshot the plugin prepared
    (victims removed) and leaves it as it found it. The outcome's status: SUCCESS with `nominations`
    (the group then waits on preemption; the caller evicts `victims` and nominates each member);
    UNSCHEDULABLE or UNSCHEDULABLE_AND_UNRESOLVABLE when preemption cannot help; ERROR fails the
    cycle. Its `message` (upstream's "pod group preemption: ..." wording) is appended to the group's."""

    def __call__(
        self,
        group: PodGroup,
        pods: Sequence[Pod],
        scheduling_func: PodGroupSchedulingFunc,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        now: float,
    ) -> PodGroupPreemptionOutcome: ...


# DynamicResources' PodGroupPostFilter (DRA is on by default upstream and runs before
# DefaultPreemption): with no ResourceClaims to free it answers Unschedulable with this reason.
DRA_POD_GROUP_POST_FILTER_REASON = "deallocation and deletion of ResourceClaims completed"


def run_pod_group_post_filter_plugins(preemption: PodGroupPreemptionOutcome | None) -> Status:
    """RunPodGroupPostFilterPlugins over upstream's default plugins, DynamicResources then
    DefaultPreemption (`preemption`, None when the profile disables it): the first Success or
    UnschedulableAndUnresolvable answer is the result on its own, an Error fails the cycle, and the
    Unschedulable answers' reasons are joined. podsched has no ResourceClaims, so DynamicResources
    always answers Unschedulable with DRA_POD_GROUP_POST_FILTER_REASON."""
    reasons = [DRA_POD_GROUP_POST_FILTER_REASON]
    if preemption is None:
        return Status(Code.UNSCHEDULABLE, reasons)
    code = preemption.status.code
    message = preemption.message or preemption.status.message
    if code == Code.ERROR:
        return Status(Code.ERROR, [f'error in "DefaultPreemption" PodGroupPostFilter plugins: {message}'])
    if code in (Code.SUCCESS, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
        return Status(code, [message] if message else [])
    return Status(Code.UNSCHEDULABLE, [*reasons, message] if message else reasons)


def default_pod_group_post_filter(
    framework: Framework, pod_groups: PodGroupLister, enable_pod_group_preemption_policy: bool
) -> PodGroupPostFilter:
    """DefaultPreemption's PodGroupPostFilter over a profile's framework: pod-group preemption."""
    evaluator = PodGroupEvaluator(framework)

    def post_filter(
        group: PodGroup,
        pods: Sequence[Pod],
        scheduling_func: PodGroupSchedulingFunc,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        now: float,
    ) -> PodGroupPreemptionOutcome:
        preemptor = new_pod_group_preemptor(
            group.namespace, group.name, group, pods, enable_pod_group_preemption_policy
        )
        return evaluator.preempt(preemptor, scheduling_func, snapshot, pdbs, pod_groups, now)

    return post_filter


@dataclass(slots=True)
class PodGroupPodResult:
    """One pod's outcome in the group cycle: `cycle` is its own attempt (None: never evaluated, or
    the group failed before any pod), `status` what its failure handler reports."""

    pod: Pod
    cycle: CycleResult | None
    node_name: str = ""  # where it goes when the group succeeds
    message: str = ""  # FailedScheduling's message when it does not
    rejector_plugins: set[str] = field(default_factory=set)
    error: bool = False
    nominated_node_name: str = ""  # set when the group waits on preemption


@dataclass(slots=True)
class PodGroupResult:
    """podGroupAlgorithmResult, completed: the group's status and every pod's result, in order."""

    group: PodGroup
    status: Status
    pods: list[PodGroupPodResult]
    waiting_on_preemption: bool = False
    preemption: PodGroupPreemptionOutcome | None = None  # what PodGroupPostFilter answered

    @property
    def scheduled(self) -> bool:
        return self.status.is_success

    def condition(self, now: float) -> Condition:
        """The PodGroupInitiallyScheduled condition submitPodGroupAlgorithmResult sets."""
        if self.status.is_success:
            return Condition(
                CONDITION_POD_GROUP_INITIALLY_SCHEDULED, "True", CONDITION_REASON_SCHEDULED, self.status.message, now
            )
        if self.status.is_rejected:
            return Condition(
                CONDITION_POD_GROUP_INITIALLY_SCHEDULED,
                "False",
                POD_GROUP_REASON_UNSCHEDULABLE,
                self.status.message,
                now,
            )
        return Condition(
            CONDITION_POD_GROUP_INITIALLY_SCHEDULED, "False", POD_GROUP_REASON_SCHEDULER_ERROR, self.status.message, now
        )


def validate_pod_group(group: PodGroup, pods: Sequence[Pod], check_preemption_policy: bool) -> str:
    """validatePodGroup: the error text, or "" when the pods agree with each other and the group."""
    scheduler_name = pods[0].spec.scheduler_name if pods else ""
    group_policy = group.preemption_policy or PREEMPT_LOWER_PRIORITY
    first_policy = ""
    for pod in pods:
        if pod.spec.scheduler_name != scheduler_name:
            return (
                "all pods in a single pod group should have the same .spec.schedulerName set, "
                f'got: "{pod.spec.scheduler_name}" and "{scheduler_name}"'
            )
        if pod.priority != group.group_priority:
            return (
                "all pods in a single pod group should have the same priority as the pod group's priority, "
                f"got {pod.priority} and {group.group_priority}"
            )
        policy = pod.spec.preemption_policy or PREEMPT_LOWER_PRIORITY
        if check_preemption_policy:
            if policy != group_policy:
                return (
                    "all pods in a single pod group should have the same preemption policy as the pod group's "
                    f"preemption policy, got {policy} and {group_policy}"
                )
        elif not first_policy:
            first_policy = policy
        elif policy != first_policy:
            return (
                "all pods in a single pod group should have the same preemption policy, "
                f"got {policy} and {first_policy}"
            )
    return ""


def _no_change(_: str) -> None:
    """A node changed that no column strategy tracks."""


@dataclass(slots=True)
class _Attempt:
    """One pod's attempt in the group algorithm: its cycle and, node by node, the cycle state its
    Filter ran with (what pod-group preemption re-checks a placement with)."""

    cycle: CycleResult
    state: CycleState | None


def _run_algorithm(
    algorithm: SchedulingAlgorithm,
    group: PodGroup,
    pods: Sequence[Pod],
    scheduled_before: int,
    snapshot: Snapshot,
    pdbs: Sequence[PodDisruptionBudget],
    nominator: PodNominator | None,
    assumed: AssumedPods,
    now: float,
    node_by_node: bool = False,
) -> tuple[Status, list[_Attempt]]:
    """podGroupSchedulingDefaultAlgorithm (steps 2 and 3); leaves its assumptions in `assumed`.
    `node_by_node`: the plugins' own methods on `snapshot` (a copy the column strategy knows nothing of)."""
    progress = PlacementProgress(len(pods), scheduled_before)
    feasible = placement_feasible(group, progress)
    if feasible is not None and feasible.code == Code.UNSCHEDULABLE:
        return feasible, []
    status = feasible
    attempts: list[_Attempt] = []
    for pod in pods:
        if node_by_node:
            evaluation = NodeByNode(algorithm.framework, pod, snapshot)
            result = algorithm.run_cycle(evaluation, pod, snapshot, pdbs, nominator, now, post_filter=False)
            attempts.append(_Attempt(result, evaluation.state))
        else:
            result = algorithm.schedule(pod, snapshot, pdbs, nominator, now, post_filter=False)
            attempts.append(_Attempt(result, None))
        if result.error:
            return Status(Code.ERROR, [f"failed to schedule other pod from a pod group: {result.error}"]), attempts
        placed = bool(result.node_name)
        if placed:
            assumed.assume(pod, result.node_name)
        progress = PlacementProgress(progress.remaining - 1, progress.scheduled + placed)
        status = placement_feasible(group, progress)
        if status is not None and status.code == Code.UNSCHEDULABLE:
            break
    if status is None:
        return Status(Code.SUCCESS), attempts
    if status.code == Code.WAIT:
        return Status(Code.UNSCHEDULABLE, list(status.reasons), status.plugin), attempts
    return status, attempts


def schedule_pod_group(
    algorithm: SchedulingAlgorithm,
    group: PodGroup,
    pods: Sequence[Pod],
    scheduled: Sequence[Pod],
    snapshot: Snapshot,
    pdbs: Sequence[PodDisruptionBudget],
    nominator: Nominator,
    now: float,
    post_filter: PodGroupPostFilter | None = None,
    check_preemption_policy: bool = False,
) -> PodGroupResult:
    """podGroupCycle for `pods` (the group's unscheduled pods the queue popped, in queue order);
    `scheduled` are the group's pods already bound (ScheduledPods: they count towards minCount and
    must agree with the group too, validateScheduledPods). Pods are assumed
    on `snapshot` only while the cycle runs (the column strategy, if any, hears of each node
    touched). `post_filter` None: no PodGroupPostFilter plugin (preemption disabled)."""
    problem = validate_pod_group(group, [*pods, *scheduled], check_preemption_policy)
    scheduled_before = len(scheduled)
    if problem:
        status = Status(Code.ERROR, [problem])
        return PodGroupResult(group, status, [PodGroupPodResult(p, None, message=problem, error=True) for p in pods])

    columns = algorithm.columns
    node_changed: Callable[[str], None] = columns.mark_dirty if columns is not None else _no_change
    assumed = AssumedPods(snapshot, nominator, node_changed)
    try:
        status, attempts = _run_algorithm(
            algorithm, group, pods, scheduled_before, snapshot, pdbs, nominator, assumed, now
        )
    finally:
        assumed.forget_all()
    results = [attempt.cycle for attempt in attempts]
    if status.is_success and not any(r.node_name for r in results):
        # The framework needs at least one pod placed to call a group scheduled.
        status = Status(Code.UNSCHEDULABLE, [POD_GROUP_UNSCHEDULABLE])
    # Pods never evaluated carry the group's status as it stood before PostFilter.
    status_before_post_filter = status

    outcome = PodGroupResult(group, status, [])
    if status.code == Code.UNSCHEDULABLE:

        def scheduling_func(working: Snapshot) -> PodGroupAssignments:
            again = AssumedPods(working, nominator, _no_change)
            try:
                retry_status, retry = _run_algorithm(
                    algorithm, group, pods, scheduled_before, working, pdbs, nominator, again, now, node_by_node=True
                )
            finally:
                again.forget_all()
            proposed = [
                ProposedAssignment(PodInfo(a.cycle.pod), a.cycle.node_name, a.state or CycleState()) for a in retry
            ]
            return PodGroupAssignments(proposed, retry_status)

        preemption = post_filter(group, pods, scheduling_func, snapshot, pdbs, now) if post_filter else None
        outcome.preemption = preemption
        post_status = run_pod_group_post_filter_plugins(preemption)
        if post_status.is_success:
            outcome.waiting_on_preemption = True
        if post_status.code == Code.ERROR:
            outcome.status = post_status
        else:
            # applyPodGroupPostFilterResult: the plugins' message joins the group's reasons.
            outcome.status = Status(status.code, [*status.reasons, post_status.message], status.plugin)

    nominations = (outcome.preemption.nominations or {}) if outcome.waiting_on_preemption and outcome.preemption else {}
    for index, pod in enumerate(pods):
        cycle = results[index] if index < len(results) else None
        pod_result = PodGroupPodResult(pod, cycle)
        if outcome.status.code == Code.ERROR:
            pod_result.error = True
            pod_result.message = cycle.message if cycle is not None and cycle.error else outcome.status.message
        elif cycle is None:
            pod_result.message = status_before_post_filter.message
            pod_result.rejector_plugins = {status.plugin} if status.plugin else set()
        elif cycle.node_name:
            if outcome.status.is_success:
                pod_result.node_name = cycle.node_name
            elif outcome.waiting_on_preemption:
                pod_result.message = outcome.status.message
                pod_result.rejector_plugins = {outcome.status.plugin} if outcome.status.plugin else set()
            else:
                # NewStatus(Unschedulable, group message).WithError(errPodGroupUnschedulable): the
                # error's text leads the message FailedScheduling shows.
                pod_result.message = f"{POD_GROUP_UNSCHEDULABLE}, {outcome.status.message}"
                pod_result.rejector_plugins = {outcome.status.plugin} if outcome.status.plugin else set()
        else:
            pod_result.message = cycle.message
            pod_result.rejector_plugins = set(cycle.rejector_plugins)
        pod_result.nominated_node_name = nominations.get((pod.namespace, pod.name), "")
        outcome.pods.append(pod_result)
    return outcome
