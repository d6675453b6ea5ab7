"""Evaluator.Preempt (pkg/scheduler/framework/preemption/preemption.go): the generic preemption algorithm,
from eligibility through the dry run to the choice of one node.

Side effects are not performed here: the result names the victims and the lower-priority nominated
pods to clear, and the caller (binder, simulator) actuates them. The candidate offset and the victim
search are injected so that tests pin the offset and the preemption service shards the dry run over
worker processes with the same answer."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from podsched.api.types import Pod, PodDisruptionBudget
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import NodeToStatus, PodNominator, PostFilterResult
from podsched.framework.node_info import NodeInfo, Snapshot
from podsched.framework.pod_groups import PodGroupLister
from podsched.framework.runtime import Framework
from podsched.framework.status import Code, Status
from podsched.preemption.eligibility import pod_eligible_to_preempt_others
from podsched.preemption.executor import nominations_to_clear
from podsched.preemption.pdb_policy import PDB_POLICIES, PdbPolicy
from podsched.preemption.tie_breaks import Candidate, pick_by_default_tie_breaks
from podsched.preemption.victims import DEFAULT_VICTIM_POLICY, NodeVictims, VictimPolicy, select_victims_on_node
from podsched.scheduler.fit_error import FitError

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE_MESSAGE = "no candidate node for preemption"


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE
    pdb_policy: str = PdbPolicy.BEST_EFFORT.value  # podsched's opt-in (podsched.preemption.pdb_policy)

    @property
    def victim_policy(self) -> VictimPolicy:
        """SelectVictimsOnNode as these args ask for it (DefaultPreemption's)."""
        return VictimPolicy(strict_pdbs=True) if self.pdb_policy == PdbPolicy.STRICT else DEFAULT_VICTIM_POLICY

    def validate(self) -> list[str]:
        errors = []
        if self.pdb_policy not in PDB_POLICIES:
            errors.append(f"pdbPolicy: Unsupported value: supported values: {', '.join(PDB_POLICIES)}")
        if not 0 <= self.min_candidate_nodes_percentage <= 100:
            errors.append("minCandidateNodesPercentage: Invalid value: not in valid range [0, 100]")
        if self.min_candidate_nodes_absolute < 0:
            errors.append("minCandidateNodesAbsolute: Invalid value: not in valid range [0, inf)")
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            errors.append("minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero")
        return errors


def calculate_num_candidates(num_nodes: int, args: DefaultPreemptionArgs) -> int:
    """max(N * pct / 100, absolute), capped at N."""
    n = num_nodes * args.min_candidate_nodes_percentage // 100
    n = max(n, args.min_candidate_nodes_absolute)
    return min(n, num_nodes)


class DryRunAccumulator:
    """Collects per-node outcomes in dry-run order and says when to stop: once at least one
    PDB-free candidate exists and there are n candidates in all. Each list is capped at n."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.non_violating: list[Candidate] = []
        self.violating: list[Candidate] = []
        self._statuses = NodeToStatus()
        # Rejected nodes recorded in runs, their statuses made only when asked for.
        self._pending: list[tuple[Sequence[str], Callable[[], Sequence[Status]]]] = []
        self.errors: list[str] = []

    @property
    def statuses(self) -> NodeToStatus:
        """Every recorded node that is no candidate, with its status, in dry-run order."""
        for node_names, statuses in self._pending:
            self._statuses.set_many(node_names, statuses())
        self._pending.clear()
        return self._statuses

    def add(self, outcome: NodeVictims) -> bool:
        """Record one node; return True when the search can stop."""
        if outcome.status is None:
            if not outcome.victims:
                message = f'expected at least one victim pod on node "{outcome.node_name}"'
                self.statuses.set(outcome.node_name, Status(Code.ERROR, [message]))  # after the pending runs
                self.errors.append(message)
                return False
            return self.add_candidates(
                (Candidate(outcome.node_name, outcome.victims, outcome.num_pdb_violations, outcome.summary),)
            )
        self.statuses.set(outcome.node_name, outcome.status)
        if outcome.status.code == Code.ERROR:
            self.errors.append(outcome.status.message)
        return False

    def add_candidates(self, candidates: Iterable[Candidate]) -> bool:
        """Record, in order, nodes where preemption helps (victims found, no error status): what
        `add` does for each of them, for many nodes at once; True when the search can stop (the
        nodes after that one are not recorded). The candidates are kept as they are, not copied."""
        n = self.n
        non_violating, violating = self.non_violating, self.violating
        for candidate in candidates:
            target = violating if candidate.num_pdb_violations else non_violating
            if len(target) < n:
                target.append(candidate)
            if non_violating and len(non_violating) + len(violating) >= n:
                return True
        return False

    def add_rejections(self, node_names: Sequence[str], statuses: Callable[[], Sequence[Status]]) -> None:
        """Record, in order, nodes that are no candidate and no error (the pod does not fit even
        with every lower-priority pod gone, or there is none): what `add` does for each of them
        (such a node never ends the search), for many nodes at once. `statuses` makes their
        statuses; it is called only if they are asked for (to explain a search without candidates)."""
        self._pending.append((node_names, statuses))

    @property
    def candidates(self) -> list[Candidate]:
        return self.non_violating + self.violating


@dataclass(frozen=True, slots=True)
class DryRun:
    """One dry run: SelectVictimsOnNode for `pod` on `nodes` in this order (the candidate offset
    applied), each outcome fed to `accumulator` until it says stop. `state` is the cycle's state
    after PreFilter over `snapshot`."""

    framework: Framework
    state: CycleState
    pod: Pod
    snapshot: Snapshot
    nodes: Sequence[NodeInfo]
    pdbs: Sequence[PodDisruptionBudget]
    now: float
    accumulator: DryRunAccumulator
    policy: VictimPolicy = DEFAULT_VICTIM_POLICY  # the PostFilter plugin's SelectVictimsOnNode
    pod_groups: PodGroupLister | None = None  # GenericWorkload: victims are units (preemption.domain)


# Runs a dry run. The default runs in-process node by node; the preemption service supplies one
# that fans out to workers, and the column strategy (podsched.fastpath) one that decides many
# nodes at once.
DryRunExecutor = Callable[[DryRun], None]


def sequential_dry_run(run: DryRun) -> None:
    for node_info in run.nodes:
        outcome = select_victims_on_node(
            run.framework,
            run.state.clone(),
            run.pod,
            node_info.clone(),
            run.pdbs,
            run.now,
            run.policy,
            run.pod_groups,
            run.snapshot,
        )
        if run.accumulator.add(outcome):
            return


@dataclass(slots=True)
class PreemptionOutcome:
    result: PostFilterResult | None
    status: Status
    candidates: list[Candidate] = field(default_factory=list)


class Evaluator:
    def __init__(
        self,
        framework: Framework,
        args: DefaultPreemptionArgs | None = None,
        offset: Callable[[int], int] | None = None,
        executor: DryRunExecutor | None = None,
    ) -> None:
        self.framework = framework
        self.args = args or DefaultPreemptionArgs()
        rng = random.Random()
        # rand.Int31n(N): tests and `simulate` inject a deterministic offset.
        self.offset = offset or (lambda n: rng.randrange(n))
        self.executor = executor or sequential_dry_run

    def preempt(
        self,
        state: CycleState,
        pod: Pod,
        node_to_status: NodeToStatus,
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        nominator: PodNominator | None,
        now: float,
        policy: VictimPolicy = DEFAULT_VICTIM_POLICY,
        pod_groups: PodGroupLister | None = None,
    ) -> PreemptionOutcome:
        """`policy`: how the plugin selects victims on a node (DefaultPreemption's args, or
        PreemptionToleration's exemptions); everything else is the same for every plugin.
        `pod_groups` (GenericWorkload): victims are units, and a pod in a group counts at its group's
        priority; such a dry run runs node by node in this process (the injected executor, sharded or
        on columns, knows pods only)."""
        # 1. Eligibility.
        nominated_status = (
            node_to_status.get(pod.status.nominated_node_name) if pod.status.nominated_node_name else None
        )
        eligible, message = pod_eligible_to_preempt_others(pod, snapshot, nominated_status, pod_groups)
        if not eligible:
            return PreemptionOutcome(None, Status(Code.UNSCHEDULABLE, [message]))

        # 2. Candidates: only nodes whose status is exactly Unschedulable can be helped.
        potential = node_to_status.nodes_with_code(Code.UNSCHEDULABLE, snapshot.node_info_list)
        accumulator = DryRunAccumulator(0)
        if potential:
            n = calculate_num_candidates(len(potential), self.args)
            offset = self.offset(len(potential))
            offset %= len(potential)
            ordered = potential[offset:] + potential[:offset]
            accumulator = DryRunAccumulator(n)
            run = DryRun(self.framework, state, pod, snapshot, ordered, pdbs, now, accumulator, policy, pod_groups)
            (self.executor if pod_groups is None else sequential_dry_run)(run)
        candidates = accumulator.candidates
        if accumulator.errors and not candidates:
            return PreemptionOutcome(None, Status(Code.ERROR, [accumulator.errors[0]]))

        # 3. No candidate: explain per node, and clear any earlier nomination.
        if not candidates:
            statuses = accumulator.statuses
            statuses.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [PREEMPTION_NOT_HELPFUL])
            # Upstream counts every node here, so nodes that were never potential show up as
            # "Preemption is not helpful for scheduling".
            fit_error = FitError(len(snapshot.node_info_list), statuses)
            return PreemptionOutcome(
                PostFilterResult(nominated_node_name=""), Status(Code.UNSCHEDULABLE, [fit_error.message()])
            )

        # 4. (Extenders are not supported.) 5. Select one candidate.
        best = pick_by_default_tie_breaks(candidates, now)
        if best is None:
            return PreemptionOutcome(None, Status(Code.UNSCHEDULABLE, [NO_CANDIDATE_MESSAGE]))

        # 6. What the caller must actuate: victims, and lower-priority pods nominated to the node.
        lower_nominated = nominations_to_clear(nominator, pod, best.node_name, best.victims)
        result = PostFilterResult(best.node_name, list(best.victims), lower_nominated)
        return PreemptionOutcome(result, Status(Code.SUCCESS), candidates)
