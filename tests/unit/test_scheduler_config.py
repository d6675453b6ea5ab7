"""KubeSchedulerConfiguration: the knobs `--config` honours, and clear errors for bad ones."""

from __future__ import annotations

import pytest

from builders import make_pod
from podsched.api.errors import ApiError
from podsched.config.scheduler_config import parse_scheduler_config, responsible_for_pod
from podsched.preemption.evaluator import DefaultPreemptionArgs

FULL_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
percentageOfNodesToScore: 30
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: TaintToleration
        weight: 5
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: DefaultPreemption
    args:
      minCandidateNodesPercentage: 40
      minCandidateNodesAbsolute: 2
"""


def test_every_supported_knob_is_read() -> None:
    config = parse_scheduler_config(FULL_CONFIG)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2.0, 20.0)
    assert config.percentage_of_nodes_to_score == 30
    assert (
        config.preemption_args.min_candidate_nodes_percentage,
        config.preemption_args.min_candidate_nodes_absolute,
    ) == (40, 2)
    assert dict(config.score_weights) == {"TaintToleration": 5}
    assert not config.plugin_enabled("score", "NodeResourcesBalancedAllocation")
    assert config.preemption_enabled


def test_disabling_default_preemption_or_every_post_filter_turns_preemption_off() -> None:
    for disabled in ("DefaultPreemption", "'*'"):
        config = parse_scheduler_config(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"profiles:\n- plugins:\n    postFilter:\n      disabled:\n      - name: {disabled}\n"
        )
        assert not config.preemption_enabled


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("podInitialBackoffSeconds: 0", "podInitialBackoffSeconds"),
        ("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2", "podMaxBackoffSeconds"),
        ("percentageOfNodesToScore: 101", "percentageOfNodesToScore"),
        ("profiles:\n- plugins:\n    postFiltr: {}", "profiles[0].plugins.postFiltr"),
        (
            "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesPercentage: 0, "
            "minCandidateNodesAbsolute: 0}",
            "profiles[0].pluginConfig[0].args",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {pdbPolicy: Always}",
            'profiles[0].pluginConfig[0].args.pdbPolicy: Unsupported value: "Always": '
            'supported values: "BestEffort", "Strict"',
        ),
    ],
    ids=[
        "initial backoff below one second",
        "max backoff below initial",
        "percentage above 100",
        "unknown extension point",
        "both candidate minimums zero",
        "an unknown pdb policy",
    ],
)
def test_bad_values_are_rejected_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(ApiError) as rejected:
        parse_scheduler_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + text)
    assert field in rejected.value.message


def test_pdb_policy_defaults_to_upstreams_best_effort_and_strict_is_read() -> None:
    header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    assert parse_scheduler_config(header).preemption_args.pdb_policy == "BestEffort"
    assert parse_scheduler_config(header).preemption_args.victim_policy.is_default
    strict = parse_scheduler_config(
        header + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {pdbPolicy: Strict}"
    )
    assert strict.preemption_args.pdb_policy == "Strict"
    assert strict.preemption_args.victim_policy.strict_pdbs


def test_a_wrong_kind_is_rejected() -> None:
    with pytest.raises(ApiError) as rejected:
        parse_scheduler_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n")
    assert "kind" in rejected.value.message


TWO_PROFILES = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 2
percentageOfNodesToScore: 30
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 20, minCandidateNodesAbsolute: 5}
- schedulerName: batch-scheduler
  percentageOfNodesToScore: 70
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
"""


def test_every_profile_is_read_with_its_own_plugins_and_args_and_the_global_settings() -> None:
    config = parse_scheduler_config(TWO_PROFILES)
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler", "batch-scheduler"]
    assert config.scheduler_names == {"default-scheduler", "batch-scheduler"}
    default, batch = config.profiles
    assert default is config and config.profile_named("default-scheduler") is config
    assert config.profile_named("batch-scheduler") is batch
    assert default.preemption_enabled and not batch.preemption_enabled
    assert default.plugin_enabled("score", "NodeResourcesBalancedAllocation")
    assert not batch.plugin_enabled("score", "NodeResourcesBalancedAllocation")
    assert (
        default.preemption_args.min_candidate_nodes_percentage,
        default.preemption_args.min_candidate_nodes_absolute,
    ) == (
        20,
        5,
    )
    assert batch.preemption_args == DefaultPreemptionArgs()  # upstream's defaults: 10%, 100
    assert (default.percentage_of_nodes_to_score, batch.percentage_of_nodes_to_score) == (30, 70)
    assert default.pod_initial_backoff_seconds == batch.pod_initial_backoff_seconds == 2.0


def test_a_pod_belongs_to_the_profile_its_scheduler_name_names_and_no_other() -> None:
    config = parse_scheduler_config(TWO_PROFILES)
    for name, responsible in [("default-scheduler", True), ("batch-scheduler", True), ("my-scheduler", False)]:
        pod = make_pod("p").obj()
        pod.spec.scheduler_name = name
        assert responsible_for_pod(config, pod) is responsible
        assert (config.profile_named(name) is not None) is responsible


def test_no_profiles_or_one_without_a_name_is_the_default_scheduler() -> None:
    header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    for text in ("", "profiles: []", "profiles:\n- plugins: {}"):
        config = parse_scheduler_config(header + text)
        assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]


def test_the_legacy_disable_preemption_turns_preemption_off_in_every_profile() -> None:
    config = parse_scheduler_config("disablePreemption: true\nprofiles:\n- schedulerName: a\n- schedulerName: b\n")
    assert [p.preemption_enabled for p in config.profiles] == [False, False]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "profiles:\n- schedulerName: default-scheduler\n- schedulerName: default-scheduler",
            'profiles[1].schedulerName: Duplicate value: "default-scheduler": also profiles[0].schedulerName',
        ),
        (
            "profiles:\n- schedulerName: a\n- plugins: {}",
            "profiles[1].schedulerName: Required value",
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    postFiltr: {}",
            'profiles[1].plugins.postFiltr: Invalid value: "postFiltr": unknown extension point',
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  pluginConfig:\n  - name: DefaultPreemption\n"
            "    args: {minCandidateNodesPercentage: 101}",
            "profiles[1].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 101: "
            "not in valid range [0, 100]",
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  pluginConfig:\n  - name: DefaultPreemption\n"
            "    args: {minCandidateNodesAbsolute: many}",
            'profiles[1].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: "many": must be an integer',
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  percentageOfNodesToScore: 101",
            "profiles[1].percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        ),
        (
            "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: DefaultPreemption\n  - name: DefaultPreemption",
            'profiles[0].pluginConfig[1]: Duplicate value: "DefaultPreemption"',
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n"
            "      disabled: [{name: PrioritySort}]",
            "profiles[1].plugins.queueSort: Invalid value: must be the same for all profiles",
        ),
    ],
    ids=[
        "two profiles with one scheduler name",
        "a second profile without a scheduler name",
        "an unknown extension point in the second profile",
        "out-of-range preemption args in the second profile",
        "preemption args that are not numbers",
        "a profile's percentage above 100",
        "one plugin configured twice",
        "a queue sort different from the first profile's",
    ],
)
def test_bad_profiles_are_rejected_naming_the_profile_and_field(text: str, message: str) -> None:
    with pytest.raises(ApiError) as rejected:
        parse_scheduler_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + text)
    assert rejected.value.message == f'KubeSchedulerConfiguration "config" is invalid: {message}'
