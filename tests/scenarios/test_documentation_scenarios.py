"""Every example of the Kubernetes "Pod Priority and Preemption" page, run through `podsched simulate`
exactly as a user would (manifest files in, JSON out)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from manifest_dicts import node, pdb, pod
from podsched_cli.main import main

SCENARIOS = Path(__file__).resolve().parent
COMMON = SCENARIOS / "common.yaml"


class Simulation:
    """The parsed JSON output of one `podsched simulate` run."""

    def __init__(self, output: dict[str, Any]) -> None:
        self.output = output
        self.pods = {p["metadata"]["name"]: p for p in output["pods"]}

    def node_of(self, name: str) -> str:
        return str(self.pods[name]["spec"].get("nodeName", ""))

    def running(self, name: str) -> bool:
        pod = self.pods[name]
        return pod["status"].get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")

    def preempted(self) -> list[str]:
        return sorted(
            name
            for name, p in self.pods.items()
            if any(
                c["type"] == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
                for c in p["status"].get("conditions", [])
            )
        )

    def events(self, reason: str, pod_name: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.output["events"]
            if e["reason"] == reason and (pod_name is None or e["involvedObject"]["name"] == pod_name)
        ]

    def last_failure(self, pod_name: str) -> str:
        failures = self.events("FailedScheduling", pod_name)
        return str(failures[-1]["message"]) if failures else ""


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *files: list[dict[str, Any]], config: str = ""
) -> Simulation:
    args = ["simulate", "-f", str(COMMON)]
    for index, documents in enumerate(files):
        path = tmp_path / f"step{index}.yaml"
        path.write_text(yaml.safe_dump_all(documents))
        args += ["-f", str(path)]
    if config:
        config_path = tmp_path / "config.yaml"
        config_path.write_text(config)
        args += ["--config", str(config_path)]
    capsys.readouterr()
    assert main([*args, "-o", "json"]) == 0
    return Simulation(json.loads(capsys.readouterr().out))


def test_the_queue_schedules_high_then_mid_then_low_whatever_the_submission_order(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    result = simulate(
        tmp_path,
        capsys,
        [node("n1")],
        [pod("low", "low-priority", "1"), pod("mid", "mid-priority", "1"), pod("high", "high-priority", "1")],
    )
    scheduled = [e["involvedObject"]["name"] for e in result.events("Scheduled")]
    assert scheduled == ["high", "mid", "low"]


def test_a_pending_pod_preempts_the_lowest_priority_pods_that_are_enough(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    running = [
        pod("low-1", "low-priority", "1", node_name="n1"),
        pod("low-2", "low-priority", "1", node_name="n1"),
        pod("mid-1", "mid-priority", "1", node_name="n1"),
        pod("mid-2", "mid-priority", "1", node_name="n1"),
    ]
    result = simulate(tmp_path, capsys, [node("n1"), *running], [pod("high", "high-priority", "2")])
    assert result.preempted() == ["low-1", "low-2"]
    assert result.running("mid-1") and result.running("mid-2")
    assert result.node_of("high") == "n1"
    preempted = result.events("Preempted", "low-1")[0]
    assert preempted["message"].startswith("Preempted by pod ") and preempted["message"].endswith(" on node n1")
    assert preempted["related"]["name"] == "high"


def test_the_preemptor_is_nominated_while_victims_terminate_and_bound_after_their_grace_period(
    tmp_path, capsys
) -> None:  # type: ignore[no-untyped-def]
    running = [pod(f"low-{i}", "low-priority", "1", node_name="n1", grace=45) for i in range(4)]
    result = simulate(tmp_path, capsys, [node("n1"), *running], [pod("high", "high-priority", "2")])
    nominated = result.events("Nominated", "high")
    scheduled = result.events("Scheduled", "high")
    assert nominated and scheduled
    assert nominated[0]["message"] == "Nominated to node n1 after preempting 2 pod(s)"
    first_failure = result.events("FailedScheduling", "high")[0]
    assert first_failure["eventTime"] == nominated[0]["eventTime"]
    assert _seconds(scheduled[0]["eventTime"]) - _seconds(nominated[0]["eventTime"]) == 45
    victim = result.pods["low-3"]
    assert victim["metadata"]["deletionTimestamp"]
    assert result.node_of("high") == "n1"
    assert "nominatedNodeName" not in result.pods["high"]["status"], "cleared once bound"


def _seconds(timestamp: str) -> float:
    from podsched.api.manifests import parse_timestamp

    return parse_timestamp(timestamp)


def test_a_non_preempting_pod_waits_without_preempting_and_goes_first_once_room_frees(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    result = simulate(
        tmp_path,
        capsys,
        [node("n1", cpu="2"), pod("batch", "low-priority", "2", node_name="n1")],
        [pod("waiting-low", "low-priority", "2"), pod("urgent", "high-priority-nonpreempting", "2")],
        [node("n2", cpu="2")],
    )
    assert result.preempted() == []
    assert (
        "preemption: not eligible due to preemptionPolicy=Never."
        in result.events("FailedScheduling", "urgent")[0]["message"]
    )
    assert result.node_of("urgent") == "n2", "ahead of the lower-priority pod once a node is added"
    assert result.node_of("waiting-low") == ""


def test_equal_priority_never_preempts(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    result = simulate(
        tmp_path,
        capsys,
        [node("n1", cpu="2"), pod("first", "mid-priority", "2", node_name="n1")],
        [pod("second", "mid-priority", "2")],
    )
    assert result.preempted() == []
    assert result.last_failure("second") == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.."
    )


def test_pdbs_are_respected_when_another_node_can_be_used(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    result = simulate(
        tmp_path,
        capsys,
        [
            node("n1", cpu="2"),
            node("n2", cpu="2"),
            pod("db", "low-priority", "2", node_name="n1", labels={"app": "db"}),
            pod("cache", "mid-priority", "2", node_name="n2", labels={"app": "cache"}),
            pdb("db-pdb", 1, app="db"),
        ],
        [pod("high", "high-priority", "2")],
    )
    assert result.preempted() == ["cache"], "a higher-priority victim beats violating the PDB"
    assert result.node_of("high") == "n2"


def test_pdbs_are_best_effort_when_no_other_choice_exists(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    result = simulate(
        tmp_path,
        capsys,
        [
            node("n1", cpu="2"),
            pod("db", "low-priority", "2", node_name="n1", labels={"app": "db"}),
            pdb("db-pdb", 1, app="db"),
        ],
        [pod("high", "high-priority", "2")],
    )
    assert result.preempted() == ["db"]
    assert result.node_of("high") == "n1"


def test_affinity_to_a_lower_priority_pod_prevents_preemption_on_that_node(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    affinity = {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    }
    result = simulate(
        tmp_path,
        capsys,
        [node("n1", cpu="2"), pod("db", "low-priority", "2", node_name="n1", labels={"app": "db"})],
        [pod("needs-db", "high-priority", "1", spec=affinity)],
    )
    assert result.preempted() == []
    assert result.node_of("needs-db") == ""
    message = result.last_failure("needs-db")
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: ")
    assert "1 node(s) didn't match pod affinity rules" in message


def test_a_higher_priority_pod_takes_a_node_nominated_for_a_lower_one_and_clears_that_nomination(
    tmp_path, capsys
) -> None:  # type: ignore[no-untyped-def]
    # `mid` was nominated to n1 by an earlier preemption (its status says so, as the queue sees it
    # after a restart); `high` arrives and preempts on the same node.
    result = simulate(
        tmp_path,
        capsys,
        [node("n1", cpu="2"), pod("low", "low-priority", "2", node_name="n1", grace=10)],
        [
            pod("mid", "mid-priority", "2", status={"nominatedNodeName": "n1"}),
            pod("high", "high-priority", "2", spec={"nodeSelector": {"kubernetes.io/hostname": "n1"}}),
        ],
    )
    cleared = result.events("NominationCleared", "mid")
    assert cleared and "n1" in cleared[0]["message"]
    assert result.node_of("high") == "n1"
    assert result.node_of("mid") == ""


def test_preemption_disabled_by_configuration_leaves_the_pod_pending(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    config = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
"""
    result = simulate(
        tmp_path,
        capsys,
        [node("n1", cpu="2"), pod("low", "low-priority", "2", node_name="n1")],
        [pod("high", "high-priority", "2")],
        config=config,
    )
    assert result.preempted() == []
    assert result.last_failure("high") == "0/1 nodes are available: 1 Insufficient cpu."


def test_the_legacy_disable_preemption_flag_is_honoured(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    result = simulate(
        tmp_path,
        capsys,
        [node("n1", cpu="2"), pod("low", "low-priority", "2", node_name="n1")],
        [pod("high", "high-priority", "2")],
        config="apiVersion: componentconfig/v1alpha1\nkind: KubeSchedulerConfiguration\ndisablePreemption: true\n",
    )
    assert result.preempted() == []


def test_a_pod_naming_a_missing_priority_class_is_rejected_and_nothing_else_changes(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    result = simulate(
        tmp_path, capsys, [node("n1"), pod("orphan", "no-such-class", "1"), pod("fine", "low-priority", "1")]
    )
    assert result.output["rejected"] == [
        {
            "kind": "Pod",
            "namespace": "default",
            "name": "orphan",
            "reason": "Forbidden",
            "message": (
            'Error from server (Forbidden): pods "orphan" is forbidden: '
            "no PriorityClass with name no-such-class was found"
        ),
        }
    ]
    assert "orphan" not in result.pods
    assert result.node_of("fine") == "n1"


def test_unparsable_files_and_unknown_kinds_are_reported_as_kubectl_reports_them(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: [\n")
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("apiVersion: v1\nkind: Foo\nmetadata: {name: f}\n")
    capsys.readouterr()
    assert main(["simulate", "-f", str(broken), "-f", str(unknown), "-o", "json"]) == 0
    messages = [r["message"] for r in json.loads(capsys.readouterr().out)["rejected"]]
    assert messages[0].startswith(f"error: error parsing {broken}: error converting YAML to JSON: yaml: line ")
    assert messages[1] == (
        f'error: resource mapping not found for name: "f" namespace: "" from "{unknown}": '
        'no matches for kind "Foo" in version "v1"\nensure CRDs are installed first'
    )
