"""KubeSchedulerConfiguration: the knobs `--config` honours, and clear errors for bad ones."""

from __future__ import annotations

import pytest

from podsched.api.errors import ApiError
from podsched.config.scheduler_config import parse_scheduler_config

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
    ],
    ids=[
        "initial backoff below one second",
        "max backoff below initial",
        "percentage above 100",
        "unknown extension point",
        "both candidate minimums zero",
    ],
)
def test_bad_values_are_rejected_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(ApiError) as rejected:
        parse_scheduler_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + text)
    assert field in rejected.value.message


def test_a_wrong_kind_is_rejected() -> None:
    with pytest.raises(ApiError) as rejected:
        parse_scheduler_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n")
    assert "kind" in rejected.value.message
