"""Why protected and PDB-covered pods are or are not preempted (podsched.preemption.explain), as
`apply --dry-run=server` prints it, and `describe pod`'s lines on the same (podsched_cli.output)."""

from __future__ import annotations

from typing import Any

from test_preemption import SMALL_NODE, all_unschedulable, snapshot_of

from builders import make_node, make_pdb, make_pod, make_priority_class
from podsched.api.manifests import encode_object
from podsched.api.types import Pod
from podsched.config.scheduler_config import parse_scheduler_config
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView
from podsched.plugins.default_preemption import DefaultPreemption
from podsched.plugins.preemption_toleration import PreemptionToleration
from podsched.plugins.registry import build_framework
from podsched.preemption.evaluator import DefaultPreemptionArgs
from podsched.preemption.explain import explain_preemption
from podsched.preemption.toleration import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS
from podsched.queue.nominator import Nominator
from podsched_cli import output
from podsched_proto.api.v1 import api_pb2
from podsched_proto.events.v1 import events_pb2

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
TEN_MINUTES = make_priority_class(
    "ten-minutes", 100, annotations={MINIMUM_PREEMPTABLE_PRIORITY: "1000000", TOLERATION_SECONDS: "600"}
)
CLASSES = {TEN_MINUTES.name: TEN_MINUTES}


def batch(name: str, scheduled: float, node: str = "n1", cpu: str = "2") -> Pod:
    return (
        make_pod(name)
        .priority_class(TEN_MINUTES.name)
        .priority(100)
        .req(cpu=cpu)
        .node(node)
        .scheduled_at(scheduled)
        .obj()
    )


def decide(plugin_name: str, pods: list[Pod], pdbs: list[Any], preemptor: Pod, nodes: int = 1) -> list[str]:
    snapshot = snapshot_of([make_node(f"n{i + 1}").capacity(**SMALL_NODE).obj() for i in range(nodes)], pods)
    framework = build_framework(parse_scheduler_config("{}"), Nominator())
    plugin: Any
    if plugin_name == "PreemptionToleration":
        plugin = PreemptionToleration(framework, CLASSES, offset=lambda n: 0)
    else:
        plugin = DefaultPreemption(framework, DefaultPreemptionArgs(pdb_policy=plugin_name), offset=lambda n: 0)
    state = CycleState()
    framework.run_pre_filter_plugins(state, preemptor, snapshot.node_info_list)
    result, _ = plugin.post_filter(
        state, preemptor, all_unschedulable(snapshot), ClusterView(snapshot, pdbs, None, NOW)
    )
    return explain_preemption(preemptor, result, snapshot, pdbs, plugin.victim_policy_at(NOW), NOW)


def test_a_victim_whose_toleration_ended_and_a_pod_still_protected_are_both_explained() -> None:
    pods = [batch("old", NOW - 3600), batch("recent", NOW - 60)]
    lines = decide("PreemptionToleration", pods, [], make_pod("mid").priority(1000).req(cpu="2").obj())
    assert lines == [
        "default/old is preempted: its toleration of 600s after being scheduled (PriorityClass ten-minutes) "
        "ended at 2025-12-31T23:10:00Z",
        "default/recent is not preempted: PriorityClass ten-minutes protects it from priorities below 1000000 "
        "(the preemptor has 1000) for 600s after it was scheduled, until 2026-01-01T00:09:00Z",
    ]


def test_a_preemptor_at_the_minimum_says_so_for_each_victim() -> None:
    lines = decide(
        "PreemptionToleration",
        [batch("recent", NOW - 60, cpu="4")],
        [],
        make_pod("high").priority(1000000).req(cpu="4").obj(),
    )
    assert lines == [
        "default/recent is preempted: the preemptor's priority 1000000 is at or above the minimum preemptable "
        "priority 1000000 of PriorityClass ten-minutes"
    ]


def db(name: str, node: str) -> Pod:
    return make_pod(name).priority(0).label("app", "db").req(cpu="4").node(node).obj()


def test_best_effort_says_a_victim_exceeds_its_pdb_and_strict_says_the_covered_pods_stay() -> None:
    pdbs = [make_pdb("db-pdb", allowed=0, app="db")]
    preemptor = make_pod("p").priority(1000).req(cpu="4").obj()
    assert decide("BestEffort", [db("db-0", "n1")], pdbs, preemptor) == [
        "default/db-0 is preempted although it exceeds the allowance of PodDisruptionBudget default/db-pdb "
        "(disruptionsAllowed 0): no node without a violation helps (pdbPolicy: BestEffort)"
    ]
    assert decide("Strict", [db("db-0", "n1"), db("db-1", "n2")], pdbs, preemptor, nodes=2) == [
        "default/db-0 on node n1 is not preempted: PodDisruptionBudget default/db-pdb (disruptionsAllowed 0) "
        "covers it (pdbPolicy: Strict)",
        "default/db-1 on node n2 is not preempted: PodDisruptionBudget default/db-pdb (disruptionsAllowed 0) "
        "covers it (pdbPolicy: Strict)",
    ]


def test_a_pod_that_nothing_protects_is_not_explained() -> None:
    preemptor = make_pod("p").priority(1000).req(cpu="4").obj()
    assert decide("BestEffort", [make_pod("plain").priority(0).req(cpu="4").node("n1").obj()], [], preemptor) == []


def test_apply_dry_run_prints_the_explanations_under_its_prediction() -> None:
    outcome = api_pb2.DryRunOutcome(
        nominated_node_name="n1",
        victims=[events_pb2.ObjectReference(namespace="default", name="old")],
        explanations=["default/old is preempted: ...", "default/recent is not preempted: ..."],
    )
    assert output.dry_run_lines(outcome) == [
        "  would be nominated to node n1 after preempting default/old",
        "    default/old is preempted: ...",
        "    default/recent is not preempted: ...",
    ]


def test_describe_says_how_long_a_pod_is_protected_and_which_pdbs_cover_it() -> None:
    pod = encode_object(batch("recent", NOW - 60))
    pod["metadata"]["labels"] = {"app": "batch"}
    protection = output.Protection(
        encode_object(TEN_MINUTES), [encode_object(make_pdb("batch-pdb", allowed=1, app="batch"))], None
    )
    assert output.protection_lines(pod, [], protection, NOW) == [
        "Preemption toleration: priorities below 1000000 may not preempt it for 600s after it was scheduled, until "
        "2026-01-01T00:09:00Z (PriorityClass ten-minutes, where the profile runs PreemptionToleration)",
        "PodDisruptionBudget default/batch-pdb covers it (disruptionsAllowed 1): preemption reprieves it first, and "
        "under pdbPolicy Strict never takes it past that allowance",
    ]
    later = output.protection_lines(pod, [], protection, NOW + 3600)
    assert later[0].startswith(
        "Preemption toleration: priorities below 1000000 may not preempt it for 600s after it "
        "was scheduled, ended at 2026-01-01T00:09:00Z"
    )


def test_describe_says_why_a_protected_victim_could_be_preempted() -> None:
    victim = encode_object(batch("old", NOW - 3600))
    preemptor = encode_object(make_pod("mid").priority(1000).obj())
    preempted = {
        "reason": "Preempted",
        "message": "Preempted by pod uid-mid on node n1",
        "eventTime": "2026-01-01T00:00:00Z",
        "related": {"kind": "Pod", "namespace": "default", "name": "mid"},
    }
    lines = output.protection_lines(
        victim, [preempted], output.Protection(encode_object(TEN_MINUTES), (), preemptor), NOW
    )
    assert lines[1] == (
        "Preempted by default/mid: its toleration of 600s after being scheduled (PriorityClass ten-minutes) "
        "ended at 2025-12-31T23:10:00Z"
    )
