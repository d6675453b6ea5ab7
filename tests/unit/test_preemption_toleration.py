"""PreemptionToleration, ported from kubernetes-sigs/scheduler-plugins pkg/preemptiontoleration:
preemption_toleration_policy_test.go (TestParsePreemptionTolerationPolicyToleration) and
preemption_toleration_test.go (TestExemptedFromPreemption*), then the plugin on nodes: its
SelectVictimsOnNode, its PostFilter, its configuration and the column dry run handing it over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from test_preemption import SMALL_NODE, all_unschedulable, snapshot_of, victim_names

from builders import make_node, make_pod, make_priority_class
from podsched.admission.priority import validate_priority_class
from podsched.api.errors import ApiError
from podsched.api.types import Pod, PriorityClass
from podsched.config.scheduler_config import parse_scheduler_config
from podsched.fastpath import VectorizedDryRun
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView
from podsched.framework.status import Code
from podsched.plugins.preemption_toleration import PreemptionToleration
from podsched.plugins.registry import build_algorithm, build_framework, victim_policy_of
from podsched.preemption.sharding import run_shard, sharded_dry_run
from podsched.preemption.toleration import (
    MINIMUM_PREEMPTABLE_PRIORITY,
    TOLERATION_SECONDS,
    ExemptionCheck,
    TolerationPolicy,
    judge,
    toleration_policy,
)
from podsched.preemption.victims import (
    TOLERATED_MESSAGE,
    NodeVictims,
    VictimLookupError,
    VictimPolicy,
    select_victims_on_node,
)
from podsched.queue.nominator import Nominator

CLASS = "dummy"  # upstream's testPriorityClassName
NOW = 1_767_225_600.0


def dummy_class(value: int, annotations: dict[str, str] | None = None) -> PriorityClass:
    return make_priority_class(CLASS, value, annotations=annotations)


# --- parsePreemptionTolerationPolicy ---------------------------------------------------------------


@dataclass
class PolicyCase:
    name: str
    priority_class: PriorityClass
    expected: TolerationPolicy | None  # None: does not parse (and admission refuses the class)


POLICY_CASES = [
    PolicyCase(
        "a class with neither annotation defaults to its value plus one and zero seconds",
        dummy_class(1),
        TolerationPolicy(2, 0),
    ),
    PolicyCase(
        "a class with both annotations has both values",
        dummy_class(1, {MINIMUM_PREEMPTABLE_PRIORITY: "100", TOLERATION_SECONDS: "10"}),
        TolerationPolicy(100, 10),
    ),
    PolicyCase(
        "an unparsable minimum preemptable priority is an error",
        dummy_class(1, {MINIMUM_PREEMPTABLE_PRIORITY: "a"}),
        None,
    ),
    PolicyCase(
        "unparsable toleration seconds are an error",
        dummy_class(1, {TOLERATION_SECONDS: "a"}),
        None,
    ),
    PolicyCase(
        "negative toleration seconds are no error (they tolerate forever)",
        dummy_class(1, {MINIMUM_PREEMPTABLE_PRIORITY: "100", TOLERATION_SECONDS: "-1"}),
        TolerationPolicy(100, -1),
    ),
    PolicyCase(
        "a minimum preemptable priority beyond 32 bits is an error, as strconv.ParseInt(s, 10, 32) says",
        dummy_class(1, {MINIMUM_PREEMPTABLE_PRIORITY: "2147483648"}),
        None,
    ),
    PolicyCase(
        "a sign is accepted and spaces are not, as strconv.ParseInt says",
        dummy_class(1, {MINIMUM_PREEMPTABLE_PRIORITY: "+100", TOLERATION_SECONDS: " 10"}),
        None,
    ),
]


@pytest.mark.parametrize("case", POLICY_CASES, ids=lambda c: c.name)
def test_parse_preemption_toleration_policy(case: PolicyCase) -> None:
    assert toleration_policy(case.priority_class) == case.expected
    if case.expected is None:
        with pytest.raises(ApiError) as refused:
            validate_priority_class(case.priority_class)
        assert "metadata.annotations[preemption-toleration.scheduling.x-k8s.io/" in refused.value.message
    else:
        validate_priority_class(case.priority_class)


# --- ExemptedFromPreemption -------------------------------------------------------------------------


@dataclass
class ExemptionCase:
    name: str
    priority_class: PriorityClass | None
    victim: Pod
    preemptor: Pod
    exempted: bool | None  # None: an error (the class is gone)
    reason: str = ""


def victim(priority: int, scheduled: float | None = None) -> Pod:
    builder = make_pod("victim").priority_class(CLASS).priority(priority)
    return (builder.scheduled_at(scheduled) if scheduled is not None else builder).obj()


def preemptor(priority: int, policy: str = "PreemptLowerPriority") -> Pod:
    return make_pod("preemptor").priority(priority).preemption_policy(policy).obj()


VICTIM, MINIMUM = 100, 200
WITH_MINIMUM = {MINIMUM_PREEMPTABLE_PRIORITY: str(MINIMUM)}

EXEMPTION_CASES = [
    ExemptionCase(
        "when the priority class does not exist it is an error",
        None,
        victim(3),
        preemptor(2),
        None,
    ),
    ExemptionCase(
        "when the minimum preemptable priority does not parse the victim is not exempted",
        dummy_class(1, {MINIMUM_PREEMPTABLE_PRIORITY: "a"}),
        victim(3),
        preemptor(2),
        False,
    ),
    ExemptionCase(
        "when the toleration seconds do not parse the victim is not exempted",
        dummy_class(1, {MINIMUM_PREEMPTABLE_PRIORITY: "10", TOLERATION_SECONDS: "a"}),
        victim(3),
        preemptor(2),
        False,
    ),
    ExemptionCase(
        "when the preemptor's preemption policy is Never the victim is exempted",
        dummy_class(1),
        victim(1),
        preemptor(2, "Never"),
        True,
    ),
    ExemptionCase(
        "without a policy a victim of lower priority than the preemptor is not exempted",
        dummy_class(1),
        victim(1),
        preemptor(2),
        False,
    ),
    ExemptionCase(
        "without a policy a victim whose class is not below the preemptor is exempted (no PodScheduled)",
        dummy_class(3),
        victim(3),
        preemptor(2),
        True,
    ),
    ExemptionCase(
        "when the preemptor's priority is above the minimum preemptable priority the victim is not exempted",
        dummy_class(VICTIM, WITH_MINIMUM),
        victim(VICTIM, NOW),
        preemptor(MINIMUM + 1),
        False,
        "the preemptor's priority 201 is at or above the minimum preemptable priority 200 of PriorityClass dummy",
    ),
    ExemptionCase(
        "when the preemptor's priority equals the minimum preemptable priority the victim is not exempted",
        dummy_class(VICTIM, WITH_MINIMUM),
        victim(VICTIM, NOW),
        preemptor(MINIMUM),
        False,
    ),
    ExemptionCase(
        "below the minimum with toleration seconds 0 the victim is not exempted (no toleration)",
        dummy_class(VICTIM, {**WITH_MINIMUM, TOLERATION_SECONDS: "0"}),
        victim(VICTIM, NOW),
        preemptor(MINIMUM - 1),
        False,
    ),
    ExemptionCase(
        "below the minimum with negative toleration seconds the victim is exempted forever",
        dummy_class(VICTIM, {**WITH_MINIMUM, TOLERATION_SECONDS: "-1"}),
        victim(VICTIM, 0.0),  # scheduled very long ago
        preemptor(MINIMUM - 1),
        True,
        "PriorityClass dummy protects it from priorities below 200 (the preemptor has 199), with no time limit",
    ),
    ExemptionCase(
        "below the minimum the victim is not exempted once its toleration seconds have passed since it was scheduled",
        dummy_class(VICTIM, {**WITH_MINIMUM, TOLERATION_SECONDS: "100"}),
        victim(VICTIM, NOW - 101),
        preemptor(MINIMUM - 1),
        False,
        "its toleration of 100s after being scheduled (PriorityClass dummy) ended at 2025-12-31T23:59:59Z",
    ),
    ExemptionCase(
        "below the minimum the victim is exempted while it was scheduled within its toleration seconds",
        dummy_class(VICTIM, {**WITH_MINIMUM, TOLERATION_SECONDS: "100"}),
        victim(VICTIM, NOW - 10),
        preemptor(MINIMUM - 1),
        True,
        "PriorityClass dummy protects it from priorities below 200 (the preemptor has 199) for 100s after it "
        "was scheduled, until 2026-01-01T00:01:30Z",
    ),
    ExemptionCase(
        "exactly at the end of its toleration the victim is no longer exempted (scheduledAt+seconds must be after now)",
        dummy_class(VICTIM, {**WITH_MINIMUM, TOLERATION_SECONDS: "100"}),
        victim(VICTIM, NOW - 100),
        preemptor(MINIMUM - 1),
        False,
    ),
    ExemptionCase(
        "below the minimum a victim that is not scheduled yet is exempted",
        dummy_class(VICTIM, {**WITH_MINIMUM, TOLERATION_SECONDS: "100"}),
        victim(VICTIM),
        preemptor(MINIMUM - 1),
        True,
    ),
    ExemptionCase(
        "a victim without a priority class name is never exempted",
        dummy_class(VICTIM, {**WITH_MINIMUM, TOLERATION_SECONDS: "-1"}),
        make_pod("victim").priority(VICTIM).obj(),
        preemptor(MINIMUM - 1),
        False,
    ),
]


@pytest.mark.parametrize("case", EXEMPTION_CASES, ids=lambda c: c.name)
def test_exempted_from_preemption(case: ExemptionCase) -> None:
    classes = {CLASS: case.priority_class} if case.priority_class is not None else {}
    check = ExemptionCheck(classes, NOW)
    if case.exempted is None:
        with pytest.raises(VictimLookupError, match=r'priorityclass\.scheduling\.k8s\.io "dummy" not found'):
            check(case.victim, case.preemptor)
        with pytest.raises(VictimLookupError):
            judge(case.victim, case.preemptor, classes, NOW)
        return
    verdict = judge(case.victim, case.preemptor, classes, NOW)
    assert check(case.victim, case.preemptor) is case.exempted
    assert verdict.exempted is case.exempted, "the explanation must agree with the check"
    if case.reason:
        assert verdict.reason == case.reason


# --- the plugin on nodes ----------------------------------------------------------------------------

GUARDED = make_priority_class(
    "guarded", 100, annotations={MINIMUM_PREEMPTABLE_PRIORITY: "1000", TOLERATION_SECONDS: "-1"}
)
PLAIN = make_priority_class("plain", 100)
CLASSES = {c.name: c for c in (GUARDED, PLAIN)}


def running(name: str, priority_class: PriorityClass, cpu: str, node: str = "n1") -> Pod:
    return (
        make_pod(name)
        .priority_class(priority_class.name)
        .priority(priority_class.value)
        .req(cpu=cpu)
        .node(node)
        .scheduled_at(NOW - 3600)
        .obj()
    )


def test_select_victims_on_node_leaves_pods_that_tolerate_the_preemptor_on_the_node() -> None:
    pods = [running("guarded-0", GUARDED, "2"), running("plain-0", PLAIN, "2")]
    snapshot = snapshot_of([make_node("n1").capacity(**SMALL_NODE).obj()], pods)
    framework = build_framework(parse_scheduler_config("{}"), Nominator())
    node = snapshot.get("n1")
    assert node is not None
    policy = VictimPolicy(exempted=ExemptionCheck(CLASSES, NOW))
    for priority, needs, expected in (
        (999, "2", ["plain-0"]),  # below the minimum: only the unprotected pod may go
        (999, "4", None),  # and it is not enough
        (1000, "4", ["guarded-0", "plain-0"]),  # at the minimum: both may go
    ):
        pod = make_pod("p").priority(priority).req(cpu=needs).obj()
        state = CycleState()
        framework.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
        outcome = select_victims_on_node(framework, state, pod, node.clone(), [], NOW, policy)
        if expected is None:
            assert outcome.status is not None and "Insufficient cpu" in outcome.status.message
        else:
            assert outcome.status is None and sorted(victim_names(outcome.victims)) == expected


def test_a_node_whose_lower_priority_pods_all_tolerate_the_preemptor_has_no_victims_and_says_why() -> None:
    snapshot = snapshot_of([make_node("n1").capacity(**SMALL_NODE).obj()], [running("guarded-0", GUARDED, "4")])
    framework = build_framework(parse_scheduler_config("{}"), Nominator())
    pod = make_pod("p").priority(999).req(cpu="4").obj()
    plugin = PreemptionToleration(framework, CLASSES, offset=lambda n: 0)
    state = CycleState()
    framework.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
    result, status = plugin.post_filter(state, pod, all_unschedulable(snapshot), ClusterView(snapshot, [], None, NOW))
    assert status.code == Code.UNSCHEDULABLE and status.plugin == "PreemptionToleration"
    assert status.message == f"preemption: 0/1 nodes are available: 1 {TOLERATED_MESSAGE}."
    assert result is not None and not result.nominated_node_name


def test_a_victim_whose_priority_class_is_gone_fails_that_nodes_dry_run() -> None:
    orphan = make_pod("orphan").priority_class("deleted").priority(100).req(cpu="4").node("n1").obj()
    snapshot = snapshot_of([make_node("n1").capacity(**SMALL_NODE).obj()], [orphan])
    framework = build_framework(parse_scheduler_config("{}"), Nominator())
    pod = make_pod("p").priority(999).req(cpu="4").obj()
    plugin = PreemptionToleration(framework, CLASSES, offset=lambda n: 0)
    state = CycleState()
    framework.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
    _, status = plugin.post_filter(state, pod, all_unschedulable(snapshot), ClusterView(snapshot, [], None, NOW))
    assert status.code == Code.ERROR
    assert 'priorityclass.scheduling.k8s.io "deleted" not found' in status.message


TOLERATION_PROFILE = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    postFilter:
      enabled: [{name: PreemptionToleration}]
      disabled: [{name: DefaultPreemption}]
"""


def test_the_profile_enables_preemption_toleration_in_place_of_default_preemption_as_that_project_configures_it() -> (
    None
):
    config = parse_scheduler_config(
        TOLERATION_PROFILE + "  pluginConfig:\n  - name: PreemptionToleration\n"
        "    args: {minCandidateNodesPercentage: 20, minCandidateNodesAbsolute: 3}\n"
    )
    assert config.post_filter_plugins == ("PreemptionToleration",) and config.preemption_enabled
    assert (
        config.toleration_args.min_candidate_nodes_percentage,
        config.toleration_args.min_candidate_nodes_absolute,
    ) == (
        20,
        3,
    )
    framework = build_framework(config, None, priority_classes=CLASSES)
    assert [plugin.name for plugin in framework.post_filter_plugins] == ["PreemptionToleration"]
    both = parse_scheduler_config(
        "profiles:\n- plugins:\n    postFilter:\n      enabled: [{name: PreemptionToleration}]\n"
    )
    assert both.post_filter_plugins == ("DefaultPreemption", "PreemptionToleration"), "upstream's order: defaults first"


def test_a_pdb_policy_among_preemption_tolerations_args_is_refused_naming_the_field() -> None:
    with pytest.raises(ApiError) as refused:
        parse_scheduler_config(
            TOLERATION_PROFILE + "  pluginConfig:\n  - name: PreemptionToleration\n    args: {pdbPolicy: Strict}\n"
        )
    assert "profiles[0].pluginConfig[0].args.pdbPolicy: Forbidden" in refused.value.message


def test_the_column_dry_run_hands_preemption_toleration_to_the_per_node_path_and_keeps_default_preemption() -> None:
    pods = [running(f"plain-{i}", PLAIN, "4", f"n{i}") for i in range(4)]
    snapshot = snapshot_of([make_node(f"n{i}").capacity(**SMALL_NODE).obj() for i in range(4)], pods)
    pod = make_pod("p").priority(999).req(cpu="4").obj()
    decisions, vectorized = {}, {}
    for name, text in (("default", "{}"), ("toleration", TOLERATION_PROFILE)):
        algorithm = build_algorithm(
            parse_scheduler_config(text), Nominator(), offset=lambda n: 0, priority_classes=CLASSES
        )
        result = algorithm.schedule(pod, snapshot, [], None, NOW)
        assert result.post_filter is not None and result.post_filter.nominated_node_name
        decisions[name] = (result.post_filter.nominated_node_name, victim_names(result.post_filter.victims))
        executor = algorithm.framework.post_filter_plugins[0].evaluator.executor  # type: ignore[attr-defined]
        assert isinstance(executor, VectorizedDryRun)
        vectorized[name] = executor.vectorized_runs
    assert decisions["default"] == decisions["toleration"], "nothing tolerates here: the same decision"
    assert vectorized == {"default": 1, "toleration": 0}


def test_the_sharded_dry_run_and_a_worker_process_select_victims_as_the_plugin_does() -> None:
    """The preemption service's workers run SelectVictimsOnNode with victim_policy_of(their framework):
    sharded over three of them, the answer is the sequential one."""
    pods = [running(f"guarded-{i}", GUARDED, "2", f"n{i}") for i in range(6)]
    pods += [running(f"plain-{i}", PLAIN, "2", f"n{i}") for i in range(0, 6, 2)]
    snapshot = snapshot_of([make_node(f"n{i}").capacity(**SMALL_NODE).obj() for i in range(6)], pods)
    pod = make_pod("p").priority(999).req(cpu="2").obj()
    config = parse_scheduler_config(TOLERATION_PROFILE)
    worker_framework = build_framework(config, Nominator(), priority_classes=CLASSES)
    assert isinstance(victim_policy_of(worker_framework, NOW).exempted, ExemptionCheck)

    def run_shards(shards: Any, wanted: int, policy: VictimPolicy) -> list[list[NodeVictims]]:
        worker_policy = victim_policy_of(worker_framework, NOW)  # what a worker process rebuilds
        state = CycleState()
        worker_framework.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
        return [run_shard(worker_framework, state, pod, shard, [], NOW, wanted, worker_policy) for shard in shards]

    answers = []
    for executor in (None, sharded_dry_run(run_shards, 3)):
        framework = build_framework(config, Nominator(), lambda n: 0, executor, priority_classes=CLASSES)
        plugin = framework.post_filter_plugins[0]
        state = CycleState()
        framework.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
        view = ClusterView(snapshot, [], None, NOW)
        result, status = plugin.post_filter(state, pod, all_unschedulable(snapshot), view)
        assert status.is_success and result is not None
        answers.append(
            (result.nominated_node_name, victim_names(result.victims), [c.node_name for c in result.candidates])
        )
    assert answers[0] == answers[1]
    assert answers[0][1] == ["plain-0"], "only unprotected pods are victims"
