"""DefaultPreemption's `pdbPolicy: Strict` (podsched.preemption.pdb_policy): SelectVictimsOnNode and
the Evaluator under both policies on the same nodes, so each case shows what Strict changes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from test_preemption import NOW, SMALL_NODE, all_unschedulable, snapshot_of, victim_names

from builders import HIGH_PRIORITY, LOW_PRIORITY, MID_PRIORITY, make_node, make_pdb, make_pod
from podsched.api.types import Pod, PodDisruptionBudget
from podsched.config.scheduler_config import SchedulerConfig, parse_scheduler_config
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView
from podsched.framework.status import Code
from podsched.plugins.default_preemption import DefaultPreemption
from podsched.plugins.registry import build_framework, victim_policy_of
from podsched.preemption.evaluator import DefaultPreemptionArgs
from podsched.preemption.pdb import pdbs_violated_by
from podsched.preemption.pdb_policy import strict_pdb_reason
from podsched.preemption.victims import VictimPolicy, select_victims_on_node
from podsched.queue.nominator import Nominator

STRICT = VictimPolicy(strict_pdbs=True)
BEST_EFFORT = VictimPolicy()


@dataclass
class StrictCase:
    name: str
    preemptor: Pod
    node_pods: list[Pod]
    pdbs: list[PodDisruptionBudget]
    best_effort: tuple[list[str], int]  # victims, PDB violations upstream's way
    strict: tuple[list[str], int] | str  # the same under Strict, or the node's reason when it is no candidate
    extra: dict[str, object] = field(default_factory=dict)


def db(name: str, priority: int, cpu: str) -> Pod:
    return make_pod(name).priority(priority).label("app", "db").req(cpu=cpu).node("n1").obj()


STRICT_CASES = [
    StrictCase(
        "a node whose only victim has a PDB allowing no disruption is a candidate under best effort, not strict",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="4").obj(),
        [db("db-0", LOW_PRIORITY, "4")],
        [make_pdb("db-pdb", allowed=0, app="db")],
        (["db-0"], 1),
        "Preemption would violate PodDisruptionBudget default/db-pdb (pdbPolicy: Strict)",
    ),
    StrictCase(
        "a PDB that still allows the disruption changes nothing under strict",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="4").obj(),
        [db("db-0", LOW_PRIORITY, "4")],
        [make_pdb("db-pdb", allowed=1, app="db")],
        (["db-0"], 0),
        (["db-0"], 0),
    ),
    StrictCase(
        "a victim the per-pod split counts as violating is no violation once the pod it counted first is reprieved",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="3").obj(),
        [db("db-important", MID_PRIORITY, "1"), db("db-big", LOW_PRIORITY, "3")],
        [make_pdb("db-pdb", allowed=1, app="db")],
        (["db-big"], 1),
        (["db-big"], 0),
    ),
    StrictCase(
        "two victims of a PDB allowing one disruption violate it under strict",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="4").obj(),
        [db("db-0", LOW_PRIORITY, "2"), db("db-1", LOW_PRIORITY, "2")],
        [make_pdb("db-pdb", allowed=1, app="db")],
        (["db-1", "db-0"], 1),  # the one past the allowance is tried first
        "Preemption would violate PodDisruptionBudget default/db-pdb (pdbPolicy: Strict)",
    ),
    StrictCase(
        "a pod already listed in the PDB's disrupted pods consumes no allowance under strict",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="4").obj(),
        [db("db-0", LOW_PRIORITY, "4")],
        [make_pdb("db-pdb", allowed=0, disrupted=("db-0",), app="db")],
        (["db-0"], 0),
        (["db-0"], 0),
    ),
    StrictCase(
        "under strict the PDB-covered pod is reprieved when a pod without a PDB is enough",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="2").obj(),
        [db("db-0", LOW_PRIORITY, "2"), make_pod("free").priority(MID_PRIORITY).req(cpu="2").node("n1").obj()],
        [make_pdb("db-pdb", allowed=0, app="db")],
        (["free"], 0),
        (["free"], 0),
    ),
    StrictCase(
        "every PDB a victim set would violate is named in the node's reason",
        make_pod("p").priority(HIGH_PRIORITY).req(cpu="4").obj(),
        [
            db("db-0", LOW_PRIORITY, "2"),
            make_pod("web").priority(LOW_PRIORITY).label("app", "web").req(cpu="2").node("n1").obj(),
        ],
        [make_pdb("web-pdb", allowed=0, app="web"), make_pdb("db-pdb", allowed=0, app="db")],
        (["db-0", "web"], 2),
        "Preemption would violate PodDisruptionBudgets default/db-pdb, default/web-pdb (pdbPolicy: Strict)",
    ),
]


@pytest.mark.parametrize("case", STRICT_CASES, ids=lambda c: c.name)
def test_select_victims_on_node_under_both_pdb_policies(case: StrictCase) -> None:
    snapshot = snapshot_of([make_node("n1").capacity(**SMALL_NODE).obj()], case.node_pods)
    framework = build_framework(SchedulerConfig(), Nominator())
    node = snapshot.get("n1")
    assert node is not None
    for policy, expected in ((BEST_EFFORT, case.best_effort), (STRICT, case.strict)):
        state = CycleState()
        framework.run_pre_filter_plugins(state, case.preemptor, snapshot.node_info_list)
        outcome = select_victims_on_node(framework, state, case.preemptor, node.clone(), case.pdbs, NOW, policy)
        if isinstance(expected, str):
            assert outcome.status is not None and outcome.status.code == Code.UNSCHEDULABLE
            assert outcome.status.message == expected
            assert not outcome.victims
        else:
            assert outcome.status is None, outcome.status
            assert (victim_names(outcome.victims), outcome.num_pdb_violations) == expected
    assert len(node.pods) == len(case.node_pods), "the dry run must not touch the real node"


def test_a_victim_set_violates_exactly_the_pdbs_it_takes_more_than_their_allowance_from() -> None:
    pods = [db(f"db-{i}", LOW_PRIORITY, "1") for i in range(3)]
    two, three = make_pdb("two", allowed=2, app="db"), make_pdb("three", allowed=3, app="db")
    assert pdbs_violated_by(pods, [two, three]) == [two]
    assert pdbs_violated_by(pods[:2], [two, three]) == []
    assert pdbs_violated_by(pods, [make_pdb("other", namespace="elsewhere", allowed=0, app="db")]) == []


def test_a_reason_names_three_pdbs_and_counts_the_rest() -> None:
    pdbs = [make_pdb(f"p{i}", allowed=0) for i in range(5)]
    assert strict_pdb_reason(pdbs) == (
        "Preemption would violate PodDisruptionBudgets default/p0, default/p1, default/p2 and 2 more"
        " (pdbPolicy: Strict)"
    )


def preempt(pdb_policy: str, pods: list[Pod], pdbs: list[PodDisruptionBudget], nodes: int = 2):  # type: ignore[no-untyped-def]
    snapshot = snapshot_of([make_node(f"n{i + 1}").capacity(**SMALL_NODE).obj() for i in range(nodes)], pods)
    framework = build_framework(SchedulerConfig(), Nominator())
    preemptor = make_pod("p").priority(HIGH_PRIORITY).req(cpu="4").obj()
    state = CycleState()
    framework.run_pre_filter_plugins(state, preemptor, snapshot.node_info_list)
    # minCandidateNodesAbsolute 1: best effort stops at the first candidate found, strict must look on.
    plugin = DefaultPreemption(framework, DefaultPreemptionArgs(0, 1, pdb_policy), offset=lambda n: 0)
    view = ClusterView(snapshot, pdbs, None, NOW)
    return plugin.post_filter(state, preemptor, all_unschedulable(snapshot), view)


def test_strict_preemption_takes_a_node_without_violation_that_best_effort_would_never_reach() -> None:
    pods = [
        db("db-0", LOW_PRIORITY, "4"),
        make_pod("batch").priority(MID_PRIORITY).req(cpu="4").node("n2").obj(),
    ]
    pdbs = [make_pdb("db-pdb", allowed=0, app="db")]
    result, status = preempt("BestEffort", pods, pdbs)
    assert status.is_success and result is not None
    assert (result.nominated_node_name, victim_names(result.victims)) == ("n2", ["batch"])
    result, status = preempt("Strict", pods, pdbs)
    assert status.is_success and result is not None
    assert (result.nominated_node_name, victim_names(result.victims)) == ("n2", ["batch"])


def test_strict_preemption_leaves_the_pod_pending_when_every_node_would_violate_a_pdb() -> None:
    pods = [
        db("db-0", LOW_PRIORITY, "4"),
        make_pod("db-1").priority(LOW_PRIORITY).label("app", "db").req(cpu="4").node("n2").obj(),
    ]
    pdbs = [make_pdb("db-pdb", allowed=0, app="db")]
    result, status = preempt("BestEffort", pods, pdbs)
    assert status.is_success and result is not None and result.victims, "best effort preempts anyway"
    result, status = preempt("Strict", pods, pdbs)
    assert status.code == Code.UNSCHEDULABLE
    assert result is not None and not result.nominated_node_name and not result.victims
    assert status.message == (
        "preemption: 0/2 nodes are available: "
        "2 Preemption would violate PodDisruptionBudget default/db-pdb (pdbPolicy: Strict)."
    )


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Pod], list[PodDisruptionBudget], Pod]:
    nodes = draw(st.integers(1, 4))
    pods = [
        make_pod(f"pod-{i}")
        .priority(draw(st.sampled_from([LOW_PRIORITY, MID_PRIORITY])))
        .label("app", draw(st.sampled_from(["db", "web", "batch"])))
        .req(cpu=str(draw(st.integers(1, 2))))
        .node(f"n{draw(st.integers(1, nodes))}")
        .start_time(NOW - draw(st.integers(0, 3)))
        .obj()
        for i in range(draw(st.integers(1, 10)))
    ]
    pdbs = [
        make_pdb(f"{app}-pdb", allowed=draw(st.integers(0, 2)), app=app)
        for app in draw(st.lists(st.sampled_from(["db", "web"]), unique=True))
    ]
    preemptor = make_pod("p").priority(HIGH_PRIORITY).req(cpu=str(draw(st.integers(1, 4)))).obj()
    return pods, pdbs, preemptor


@given(clusters())
@settings(max_examples=150, deadline=None)
def test_strict_candidates_are_exactly_the_best_effort_candidates_that_violate_no_pdb(
    cluster: tuple[list[Pod], list[PodDisruptionBudget], Pod],
) -> None:
    pods, pdbs, preemptor = cluster
    nodes = sorted({pod.spec.node_name for pod in pods})
    snapshot = snapshot_of([make_node(name).capacity(**SMALL_NODE).obj() for name in nodes], pods)
    framework = build_framework(SchedulerConfig(), Nominator())
    filtered = CycleState()
    framework.run_pre_filter_plugins(filtered, preemptor, snapshot.node_info_list)
    fits = [framework.run_filter_plugins(filtered, preemptor, info) is None for info in snapshot.node_info_list]
    assume(not any(fits))  # PostFilter runs for pods that fit nowhere
    answers = {}
    for pdb_policy in ("BestEffort", "Strict"):
        state = CycleState()
        framework.run_pre_filter_plugins(state, preemptor, snapshot.node_info_list)
        # Every node is a candidate to look at: the search never stops early, so the two compare whole.
        plugin = DefaultPreemption(framework, DefaultPreemptionArgs(100, 100, pdb_policy), offset=lambda n: 0)
        answers[pdb_policy] = plugin.post_filter(
            state, preemptor, all_unschedulable(snapshot), ClusterView(snapshot, pdbs, None, NOW)
        )
    (best_result, _), (strict_result, strict_status) = answers["BestEffort"], answers["Strict"]
    best = {c.node_name: victim_names(c.victims) for c in (best_result.candidates if best_result else [])}
    strict = {c.node_name: victim_names(c.victims) for c in (strict_result.candidates if strict_result else [])}
    free = {
        c.node_name: victim_names(c.victims)
        for c in (best_result.candidates if best_result else [])
        if not pdbs_violated_by(c.victims, pdbs)
    }
    assert strict == free
    event("strict drops a candidate" if len(strict) < len(best) else "the same candidates")
    if strict_result is not None and strict_result.nominated_node_name:
        assert not pdbs_violated_by(strict_result.victims, pdbs), "strict never picks a violating set"
    elif best:
        assert strict_status.code == Code.UNSCHEDULABLE and "pdbPolicy: Strict" in strict_status.message


def test_a_preemption_worker_rebuilds_the_strict_policy_from_its_own_profile() -> None:
    strict = parse_scheduler_config(
        "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {pdbPolicy: Strict}\n"
    )
    assert victim_policy_of(build_framework(strict, None), NOW).strict_pdbs
    assert victim_policy_of(build_framework(SchedulerConfig(), None), NOW).is_default
