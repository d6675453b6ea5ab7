"""Preemption, ported from upstream's default_preemption_test.go tables: TestPodEligibleToPreemptOthers,
TestSelectVictimsOnNode / TestDryRunPreemption, TestSelectBestCandidate (each tie-break alone and all
together), calculateNumCandidates and the PostFilter messages."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import (
    HIGH_PRIORITY,
    LOW_PRIORITY,
    MID_PRIORITY,
    NEGATIVE_PRIORITY,
    make_node,
    make_pdb,
    make_pod,
)
from podsched.api.types import Node, Pod, PodDisruptionBudget
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import NodeToStatus
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.status import Code, Status
from podsched.plugins.registry import build_framework
from podsched.preemption.eligibility import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    pod_eligible_to_preempt_others,
)
from podsched.preemption.evaluator import DefaultPreemptionArgs, Evaluator, calculate_num_candidates
from podsched.preemption.pdb import filter_pods_with_pdb_violation
from podsched.preemption.tie_breaks import (
    Candidate,
    default_score_funcs,
    fewest_pdb_violations,
    fewest_victims,
    latest_start_time_score,
    lowest_highest_victim_priority,
    lowest_priority_sum,
    pick_by_default_tie_breaks,
    pick_one_node_for_preemption,
)
from podsched.preemption.victims import NO_VICTIMS_MESSAGE, select_victims_on_node
from podsched.queue.nominator import Nominator

NOW = 1_000_000.0
EARLY, MIDDLE, LATE = NOW - 300, NOW - 200, NOW - 100
SMALL_NODE = {"cpu": "4", "memory": "8Gi", "pods": 110}


def snapshot_of(nodes: list[Node], pods: list[Pod]) -> Snapshot:
    infos = {node.name: NodeInfo(node) for node in nodes}
    for pod in pods:
        if pod.spec.node_name:
            infos[pod.spec.node_name].add_pod(PodInfo(pod))
    return Snapshot(infos.values())


def all_unschedulable(snapshot: Snapshot) -> NodeToStatus:
    statuses = NodeToStatus()
    for info in snapshot.node_info_list:
        statuses.set(info.name, Status(Code.UNSCHEDULABLE, ["Insufficient cpu"]))
    return statuses


def victim_names(pods: list[Pod]) -> list[str]:
    return [p.name for p in pods]


# --- PodEligibleToPreemptOthers -------------------------------------------------------------------


@dataclass
class EligibilityCase:
    name: str
    pod: Pod
    node_pods: list[Pod]
    nominated_status: Status | None
    expected: bool
    message: str = ""


ELIGIBILITY_CASES = [
    EligibilityCase(
        "a pod with a nominated node and no terminating victims there may preempt",
        make_pod("p").priority(HIGH_PRIORITY).nominated("n1").obj(),
        [make_pod("running").priority(LOW_PRIORITY).node("n1").obj()],
        None,
        True,
    ),
    EligibilityCase(
        "a pod with preemptionPolicy Never is never eligible",
        make_pod("p").priority(HIGH_PRIORITY).preemption_policy("Never").obj(),
        [],
        None,
        False,
        NOT_ELIGIBLE_NEVER,
    ),
    EligibilityCase(
        "a lower-priority pod terminating by preemption on the nominated node makes it wait",
        make_pod("p").priority(HIGH_PRIORITY).nominated("n1").obj(),
        [make_pod("victim").priority(LOW_PRIORITY).node("n1").terminating(NOW).obj()],
        None,
        False,
        NOT_ELIGIBLE_TERMINATING,
    ),
    EligibilityCase(
        "a terminating pod without the DisruptionTarget condition does not block",
        make_pod("p").priority(HIGH_PRIORITY).nominated("n1").obj(),
        [make_pod("leaving").priority(LOW_PRIORITY).node("n1").terminating(NOW, by_preemption=False).obj()],
        None,
        True,
    ),
    EligibilityCase(
        "a terminating pod of higher priority is not this pod's victim and does not block",
        make_pod("p").priority(MID_PRIORITY).nominated("n1").obj(),
        [make_pod("other").priority(HIGH_PRIORITY).node("n1").terminating(NOW).obj()],
        None,
        True,
    ),
    EligibilityCase(
        "a nominated node that became UnschedulableAndUnresolvable lets the pod preempt elsewhere",
        make_pod("p").priority(HIGH_PRIORITY).nominated("n1").obj(),
        [make_pod("victim").priority(LOW_PRIORITY).node("n1").terminating(NOW).obj()],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) had untolerated taint {a: b}"]),
        True,
    ),
]


@pytest.mark.parametrize("case", ELIGIBILITY_CASES, ids=lambda c: c.name)
def test_pod_eligible_to_preempt_others(case: EligibilityCase) -> None:
    snapshot = snapshot_of([make_node("n1").capacity(**SMALL_NODE).obj()], case.node_pods)
    eligible, message = pod_eligible_to_preempt_others(case.pod, snapshot, case.nominated_status)
    assert eligible is case.expected
    assert message == case.message


# --- calculateNumCandidates ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [(5, 10, 100, 5), (1000, 10, 100, 100), (5000, 10, 100, 500), (5, 40, 1, 2), (5, 40, 2, 2), (10, 0, 3, 3)],
    ids=lambda v: str(v),
)
def test_number_of_candidates_is_a_share_of_nodes_with_a_floor(
    nodes: int, percentage: int, absolute: int, expected: int
) -> None:
    assert calculate_num_candidates(nodes, DefaultPreemptionArgs(percentage, absolute)) == expected


def test_preemption_args_reject_out_of_range_values() -> None:
    assert DefaultPreemptionArgs(101, 1).validate()
    assert DefaultPreemptionArgs(0, 0).validate()
    assert DefaultPreemptionArgs(10, -1).validate()
    assert DefaultPreemptionArgs().validate() == []


# --- filterPodsWithPDBViolation -------------------------------------------------------------------


def test_pdb_allowance_is_consumed_in_order_and_marks_the_rest_violating() -> None:
    pods = [make_pod(f"p{i}").label("app", "db").obj() for i in range(3)]
    violating, non_violating = filter_pods_with_pdb_violation(pods, [make_pdb("db", allowed=1, app="db")])
    assert victim_names(non_violating) == ["p0"]
    assert victim_names(violating) == ["p1", "p2"]


def test_a_pod_stops_consuming_budgets_at_the_first_it_violates() -> None:
    # Upstream's FilterVictimsWithPDBViolation returns at the first PDB that goes below zero, so
    # "first" (violating "db") never takes "web"'s one disruption, and "second" keeps it.
    pods = [
        make_pod("first").label("app", "db").label("tier", "web").obj(),
        make_pod("second").label("tier", "web").obj(),
    ]
    pdbs = [make_pdb("db", allowed=0, app="db"), make_pdb("web", allowed=1, tier="web")]
    violating, non_violating = filter_pods_with_pdb_violation(pods, pdbs)
    assert victim_names(violating) == ["first"]
    assert victim_names(non_violating) == ["second"]


def test_pods_in_disrupted_pods_and_other_namespaces_and_empty_selectors_do_not_consume_allowance() -> None:
    pods = [
        make_pod("evicting").label("app", "db").obj(),
        make_pod("elsewhere", namespace="other").label("app", "db").obj(),
        make_pod("plain").label("app", "db").obj(),
    ]
    pdbs = [make_pdb("db", allowed=0, disrupted=("evicting",), app="db"), make_pdb("everything", allowed=0)]
    violating, non_violating = filter_pods_with_pdb_violation(pods, pdbs)
    assert victim_names(violating) == ["plain"]
    assert victim_names(non_violating) == ["evicting", "elsewhere"]


# --- SelectVictimsOnNode --------------------------------------------------------------------------


@dataclass
class VictimCase:
    name: str
    preemptor: Pod
    node_pods: list[Pod]
    expected_victims: list[str] | None  # None: the node is not a candidate
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    expected_violations: int = 0
    expected_message: str = ""


VICTIM_CASES = [
    VictimCase(
        "only as many lower-priority pods as needed are evicted, the least important ones",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="2").obj(),
        [
            make_pod("low-a").priority(LOW_PRIORITY).req(cpu="1").node("n1").start_time(EARLY).obj(),
            make_pod("low-b").priority(LOW_PRIORITY).req(cpu="1").node("n1").start_time(LATE).obj(),
            make_pod("mid").priority(MID_PRIORITY).req(cpu="1").node("n1").start_time(EARLY).obj(),
            make_pod("mid-2").priority(MID_PRIORITY).req(cpu="1").node("n1").start_time(LATE).obj(),
        ],
        ["low-a", "low-b"],
    ),
    VictimCase(
        "among equal priorities the most recently started pod is evicted first",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="1").obj(),
        [
            make_pod("old").priority(LOW_PRIORITY).req(cpu="2").node("n1").start_time(EARLY).obj(),
            make_pod("young").priority(LOW_PRIORITY).req(cpu="2").node("n1").start_time(LATE).obj(),
        ],
        ["young"],
    ),
    VictimCase(
        "pods of equal priority are never victims",
        make_pod("p").priority(MID_PRIORITY).req(cpu="1").obj(),
        [make_pod("same").priority(MID_PRIORITY).req(cpu="4").node("n1").obj()],
        None,
        expected_message=NO_VICTIMS_MESSAGE,
    ),
    VictimCase(
        "a node where the preemptor does not fit even when empty of lower pods is not a candidate",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="3").obj(),
        [
            make_pod("higher").priority(HIGH_PRIORITY + 1).req(cpu="2").node("n1").obj(),
            make_pod("low").priority(LOW_PRIORITY).req(cpu="1").node("n1").obj(),
        ],
        None,
        expected_message="Insufficient cpu",
    ),
    VictimCase(
        "a PDB-protected pod is reprieved before an unprotected one of higher importance",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="2").obj(),
        [
            make_pod("protected")
            .priority(LOW_PRIORITY)
            .label("app", "db")
            .req(cpu="2")
            .node("n1")
            .start_time(LATE)
            .obj(),
            make_pod("free").priority(MID_PRIORITY).req(cpu="2").node("n1").start_time(EARLY).obj(),
        ],
        ["free"],
        pdbs=[make_pdb("db", allowed=0, app="db")],
    ),
    VictimCase(
        "violating victims are counted and victims end sorted by importance",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="4").obj(),
        [
            make_pod("protected").priority(LOW_PRIORITY).label("app", "db").req(cpu="2").node("n1").obj(),
            make_pod("free").priority(MID_PRIORITY).req(cpu="2").node("n1").obj(),
        ],
        ["free", "protected"],
        pdbs=[make_pdb("db", allowed=0, app="db")],
        expected_violations=1,
    ),
]


@pytest.mark.parametrize("case", VICTIM_CASES, ids=lambda c: c.name)
def test_select_victims_on_node(case: VictimCase) -> None:
    snapshot = snapshot_of([make_node("n1").capacity(**SMALL_NODE).obj()], case.node_pods)
    framework = build_framework(SchedulerConfig(), Nominator())
    state = CycleState()
    framework.run_pre_filter_plugins(state, case.preemptor, snapshot.node_info_list)
    original = snapshot.get("n1")
    assert original is not None
    outcome = select_victims_on_node(framework, state, case.preemptor, original.clone(), case.pdbs, NOW)
    if case.expected_victims is None:
        assert outcome.status is not None and case.expected_message in outcome.status.message
        assert not outcome.victims
    else:
        assert outcome.status is None
        assert victim_names(outcome.victims) == case.expected_victims
        assert outcome.num_pdb_violations == case.expected_violations
    assert len(original.pods) == len(case.node_pods), "the dry run must not touch the real node"


def test_nominated_pods_of_higher_priority_count_during_the_dry_run() -> None:
    nominator = Nominator()
    waiting = make_pod("waiting").priority(HIGH_PRIORITY + 1).req(cpu="2").nominated("n1").obj()
    nominator.add(PodInfo(waiting))
    preemptor = make_pod("p").priority(HIGH_PRIORITY).req(cpu="2").obj()
    pods = [make_pod(f"low{i}").priority(LOW_PRIORITY).req(cpu="1").node("n1").obj() for i in range(4)]
    snapshot = snapshot_of([make_node("n1").capacity(**SMALL_NODE).obj()], pods)
    framework = build_framework(SchedulerConfig(), nominator)
    node = snapshot.get("n1")
    assert node is not None
    state = CycleState()
    framework.run_pre_filter_plugins(state, preemptor, snapshot.node_info_list)
    outcome = select_victims_on_node(framework, state, preemptor, node.clone(), [], NOW)
    assert len(outcome.victims) == 4, "the nominated pod's 2 CPUs are reserved, so every low pod must go"


# --- pickOneNodeForPreemption ---------------------------------------------------------------------


def victims(*specs: tuple[int, float | None]) -> list[Pod]:
    pods = []
    for index, (priority, start) in enumerate(specs):
        builder = make_pod(f"v{index}").priority(priority)
        if start is not None:
            builder = builder.start_time(start)
        pods.append(builder.obj())
    return pods


@pytest.mark.parametrize(
    ("score_func", "candidates", "expected"),
    [
        (fewest_pdb_violations, [Candidate("a", victims((0, None)), 2), Candidate("b", victims((0, None)), 1)], "b"),
        (
            lowest_highest_victim_priority,
            [Candidate("a", victims((MID_PRIORITY, None))), Candidate("b", victims((LOW_PRIORITY, None)))],
            "b",
        ),
        (lowest_priority_sum, [Candidate("a", victims((0, None), (0, None))), Candidate("b", victims((0, None)))], "b"),
        (fewest_victims, [Candidate("a", victims((0, None), (0, None))), Candidate("b", victims((5, None)))], "b"),
        (latest_start_time_score(NOW), [Candidate("a", victims((0, EARLY))), Candidate("b", victims((0, LATE)))], "b"),
    ],
    ids=[
        "fewest PDB violations wins",
        "the lowest highest-victim priority wins",
        "the lowest sum of priorities wins",
        "the fewest victims win",
        "the latest start time of the top-priority victims wins",
    ],
)
def test_each_tie_break_alone(score_func, candidates: list[Candidate], expected: str) -> None:  # type: ignore[no-untyped-def]
    chosen = pick_one_node_for_preemption(candidates, [score_func])
    assert chosen is not None and chosen.node_name == expected


@dataclass
class BestCandidateCase:
    name: str
    candidates: list[Candidate]
    expected: str


BEST_CANDIDATE_CASES = [
    BestCandidateCase(
        "PDB violations decide before priorities",
        [Candidate("n1", victims((LOW_PRIORITY, None)), 1), Candidate("n2", victims((MID_PRIORITY, None)), 0)],
        "n2",
    ),
    BestCandidateCase(
        "node with min highest priority pod is picked",
        [
            Candidate("n1", victims((MID_PRIORITY, None), (LOW_PRIORITY, None))),
            Candidate("n2", victims((MID_PRIORITY, None), (LOW_PRIORITY, None))),
            Candidate("n3", victims((LOW_PRIORITY, None), (LOW_PRIORITY, None))),
        ],
        "n3",
    ),
    BestCandidateCase(
        "when highest priorities are the same, minimum sum of lower priority pods is picked",
        [
            Candidate("n1", victims((MID_PRIORITY, None), (MID_PRIORITY, None))),
            Candidate("n2", victims((MID_PRIORITY, None), (LOW_PRIORITY, None))),
        ],
        "n2",
    ),
    BestCandidateCase(
        "sum of adjusted priorities makes fewer negative-priority victims win",
        [
            Candidate("n1", victims((NEGATIVE_PRIORITY, None), (NEGATIVE_PRIORITY, None))),
            Candidate("n2", victims((NEGATIVE_PRIORITY, None))),
        ],
        "n2",
    ),
    BestCandidateCase(
        "when highest priority and sum are the same, minimum number of pods is picked",
        [
            Candidate("n1", victims((MID_PRIORITY, None), (LOW_PRIORITY, None), (LOW_PRIORITY, None))),
            Candidate("n2", victims((MID_PRIORITY, None), (LOW_PRIORITY, None))),
        ],
        "n2",
    ),
    BestCandidateCase(
        "same priority, same number of victims: the node whose top victims started latest is picked",
        [
            Candidate("n1", victims((MID_PRIORITY, EARLY), (LOW_PRIORITY, LATE))),
            Candidate("n2", victims((MID_PRIORITY, MIDDLE), (LOW_PRIORITY, EARLY))),
        ],
        "n2",
    ),
    BestCandidateCase(
        "a complete tie goes to the first candidate in dry-run order",
        [Candidate("n1", victims((LOW_PRIORITY, EARLY))), Candidate("n2", victims((LOW_PRIORITY, EARLY)))],
        "n1",
    ),
]


@pytest.mark.parametrize("case", BEST_CANDIDATE_CASES, ids=lambda c: c.name)
def test_select_best_candidate(case: BestCandidateCase) -> None:
    chosen = pick_one_node_for_preemption(case.candidates, default_score_funcs(NOW))
    assert chosen is not None and chosen.node_name == case.expected
    in_one_pass = pick_by_default_tie_breaks(case.candidates, NOW)
    assert in_one_pass is not None and in_one_pass.node_name == case.expected


# A victim: (priority, start time or None), few values so that the tie-breaks often tie.
_victim_specs = st.tuples(
    st.sampled_from([NEGATIVE_PRIORITY, LOW_PRIORITY, MID_PRIORITY]), st.sampled_from([None, EARLY, LATE])
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.lists(_victim_specs, min_size=1, max_size=3), st.integers(0, 1)), min_size=0, max_size=8),
    st.sampled_from([EARLY, NOW]),
)
def test_one_pass_pick_is_the_tie_breaks_in_turn(
    specs: list[tuple[list[tuple[int, float | None]], int]], now: float
) -> None:
    """The Evaluator's one-pass pick chooses the very candidate (the first of equals in dry-run
    order) that the five tie-breaks applied in turn choose, asked twice (its scores are kept)."""

    def candidates() -> list[Candidate]:
        made = []
        for index, (victim_specs, violations) in enumerate(specs):
            pods = sorted(victims(*victim_specs), key=lambda pod: -pod.priority)
            made.append(Candidate(f"n{index}", pods, violations))
        return made

    expected = pick_one_node_for_preemption(candidates(), default_score_funcs(now))
    kept = candidates()
    for _ in range(2):
        chosen = pick_by_default_tie_breaks(kept, now)
        assert (chosen.node_name if chosen else None) == (expected.node_name if expected else None)


# --- Evaluator.Preempt (TestPreempt / TestPostFilter) ---------------------------------------------


def run_preempt(
    nodes: list[Node],
    pods: list[Pod],
    preemptor: Pod,
    pdbs: list[PodDisruptionBudget] | None = None,
    statuses: NodeToStatus | None = None,
    offset: int = 0,
    args: DefaultPreemptionArgs | None = None,
):  # type: ignore[no-untyped-def]
    snapshot = snapshot_of(nodes, pods)
    nominator = Nominator()
    for pod in pods:
        if pod.status.nominated_node_name and not pod.spec.node_name:
            nominator.add(PodInfo(pod))
    framework = build_framework(SchedulerConfig(), nominator)
    state = CycleState()
    framework.run_pre_filter_plugins(state, preemptor, snapshot.node_info_list)
    evaluator = Evaluator(framework, args, offset=lambda n: offset % n)
    return evaluator.preempt(
        state, preemptor, statuses or all_unschedulable(snapshot), snapshot, pdbs or [], nominator, NOW
    )


def full_node(name: str) -> tuple[Node, list[Pod]]:
    node = make_node(name).capacity(**SMALL_NODE).obj()
    return node, [
        make_pod(f"{name}-low{i}").priority(LOW_PRIORITY).req(cpu="1").node(name).start_time(EARLY).obj()
        for i in range(4)
    ]


def test_preempt_nominates_the_best_node_and_lists_its_victims() -> None:
    n1, n1_pods = full_node("n1")
    n2 = make_node("n2").capacity(**SMALL_NODE).obj()
    n2_pods = [make_pod("n2-mid").priority(MID_PRIORITY).req(cpu="4").node("n2").obj()]
    outcome = run_preempt([n1, n2], n1_pods + n2_pods, make_pod("p").priority(HIGH_PRIORITY).req(cpu="2").obj())
    assert outcome.status.code == Code.SUCCESS
    assert outcome.result.nominated_node_name == "n1"
    assert len(outcome.result.victims) == 2


def test_preempt_clears_lower_priority_nominations_on_the_chosen_node() -> None:
    n1, n1_pods = full_node("n1")
    lower = make_pod("lower").priority(MID_PRIORITY).req(cpu="1").nominated("n1").obj()
    outcome = run_preempt([n1], [*n1_pods, lower], make_pod("p").priority(HIGH_PRIORITY).req(cpu="2").obj())
    assert [p.name for p in outcome.result.lower_priority_nominated_pods] == ["lower"]


def test_preempt_whose_victims_are_all_terminating_clears_no_nomination() -> None:
    # executor.go prepareCandidateAsync: nothing to evict, so it returns before clearing nominations.
    n1 = make_node("n1").capacity(**SMALL_NODE).obj()
    terminating = [
        make_pod(f"n1-low{i}").priority(LOW_PRIORITY).req(cpu="1").node("n1").start_time(EARLY).terminating().obj()
        for i in range(4)
    ]
    lower = make_pod("lower").priority(MID_PRIORITY).req(cpu="1").nominated("n1").obj()
    outcome = run_preempt([n1], [*terminating, lower], make_pod("p").priority(HIGH_PRIORITY).req(cpu="2").obj())
    assert outcome.result.nominated_node_name == "n1"
    assert outcome.result.victims and all(v.metadata.deletion_timestamp is not None for v in outcome.result.victims)
    assert outcome.result.lower_priority_nominated_pods == []


def test_preempt_without_candidates_clears_the_nomination_and_explains_per_node() -> None:
    n1 = make_node("n1").capacity(**SMALL_NODE).obj()
    n2 = make_node("n2").capacity(**SMALL_NODE).obj()
    pods = [make_pod("big").priority(HIGH_PRIORITY).req(cpu="4").node("n1").obj()]
    statuses = NodeToStatus()
    statuses.set("n1", Status(Code.UNSCHEDULABLE, ["Insufficient cpu"]))
    statuses.set(
        "n2", Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) didn't match Pod's node affinity/selector"])
    )
    outcome = run_preempt([n1, n2], pods, make_pod("p").priority(MID_PRIORITY).req(cpu="1").obj(), statuses=statuses)
    assert outcome.status.code == Code.UNSCHEDULABLE
    assert outcome.result.nominated_node_name == ""
    assert outcome.status.message == (
        "0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


def test_the_dry_run_starts_at_the_offset_and_stops_after_enough_candidates() -> None:
    nodes, pods = [], []
    for index in range(6):
        node, node_pods = full_node(f"n{index}")
        nodes.append(node)
        pods += node_pods
    outcome = run_preempt(
        nodes,
        pods,
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="1").obj(),
        offset=4,
        args=DefaultPreemptionArgs(0, 2),
    )
    assert [c.node_name for c in outcome.candidates] == ["n4", "n5"]
    assert outcome.result.nominated_node_name == "n4"


def test_the_dry_run_continues_past_n_until_a_pdb_free_candidate_appears() -> None:
    nodes, pods = [], []
    for index in range(3):
        node = make_node(f"n{index}").capacity(**SMALL_NODE).obj()
        nodes.append(node)
        app = "db" if index < 2 else "web"
        pods.append(
            make_pod(f"n{index}-pod").label("app", app).priority(LOW_PRIORITY).req(cpu="4").node(node.name).obj()
        )
    outcome = run_preempt(
        nodes,
        pods,
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="1").obj(),
        pdbs=[make_pdb("db", allowed=0, app="db")],
        args=DefaultPreemptionArgs(0, 1),
    )
    assert [c.node_name for c in outcome.candidates] == ["n2", "n0"]
    assert outcome.result.nominated_node_name == "n2"


def test_a_pod_that_never_preempts_gets_no_candidates() -> None:
    n1, n1_pods = full_node("n1")
    outcome = run_preempt(
        [n1], n1_pods, make_pod("p").priority(HIGH_PRIORITY).preemption_policy("Never").req(cpu="1").obj()
    )
    assert outcome.result is None
    assert outcome.status.message == NOT_ELIGIBLE_NEVER
