"""The opt-in preemption policies on the running system (docs/preemption-policies.md): what
`apply --dry-run=server` and `describe pod` say about protected and PDB-covered pods, through the
CLI, the queue's API, the preemption service and its workers. The decisions themselves are the
scenarios' (tests/scenarios, run live by test_live_parity.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from live_api import Api
from manifest_dicts import COMMON, node, pdb, pod
from podsched_cli.main import main
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack
from stacks import running_with_config

TOLERATION = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    postFilter:
      enabled: [{name: PreemptionToleration}]
      disabled: [{name: DefaultPreemption}]
"""
STRICT = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {pdbPolicy: Strict}
"""
TEN_MINUTES = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {
        "name": "ten-minutes",
        "annotations": {
            "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority": "1000000",
            "preemption-toleration.scheduling.x-k8s.io/toleration-seconds": "600",
        },
    },
    "value": 100,
}
LONG_AGO = "2025-12-31T23:00:00Z"


def stack_with(kafka: KafkaBroker, tmp_path: Path, config: str) -> Iterator[ServiceStack]:
    return running_with_config(kafka, tmp_path, config, workers=2)


def apply(api: Api, *documents: object) -> None:
    """Manifests as a user writes them, one Apply each, in order."""
    api.apply_text(yaml.safe_dump_all(list(documents)))


def cli(
    stack: ServiceStack, capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str, manifest: object = None
) -> str:
    capsys.readouterr()
    if manifest is not None:
        path = tmp_path / f"manifest-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(yaml.safe_dump(manifest))
        args = (*args, "-f", str(path))
    code = main(["--server", stack.server, *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_dry_run_and_describe_explain_a_protected_pod(
    kafka: KafkaBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = stack_with(kafka, tmp_path, TOLERATION)
    stack = next(started)
    api = Api(stack.server)
    try:
        api.apply_text(COMMON.read_text())
        scheduled_long_ago = {
            "startTime": LONG_AGO,
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": LONG_AGO}],
        }
        apply(api, TEN_MINUTES, node("n1", cpu="2"), node("n2", cpu="2"))
        apply(api, pod("old", "ten-minutes", "2", node_name="n1", grace=0, status=scheduled_long_ago))
        apply(api, pod("recent", "ten-minutes", "2", grace=0))
        api.wait(lambda: api.pods()["recent"]["spec"].get("nodeName") == "n2", what="recent bound to n2")

        out = cli(stack, capsys, tmp_path, "apply", "--dry-run=server", manifest=pod("mid", "mid-priority", "2"))
        assert out.splitlines() == [
            "pod/mid created (server dry run)",
            "  would be nominated to node n1 after preempting default/old",
            "    default/old is preempted: its toleration of 600s after being scheduled (PriorityClass ten-minutes) "
            "ended at 2025-12-31T23:10:00Z",
        ]
        described = cli(stack, capsys, tmp_path, "describe", "pod", "recent")
        assert (
            "  Preemption toleration: priorities below 1000000 may not preempt it for 600s after it was " in described
        )
        assert "(PriorityClass ten-minutes, where the profile runs PreemptionToleration)" in described
    finally:
        api.close()
        started.close()


def test_dry_run_and_describe_name_the_pdb_that_keeps_a_strict_preemptor_pending(
    kafka: KafkaBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = stack_with(kafka, tmp_path, STRICT)
    stack = next(started)
    api = Api(stack.server)
    try:
        api.apply_text(COMMON.read_text())
        apply(
            api,
            node("n1", cpu="2"),
            pod("db", "low-priority", "2", node_name="n1", grace=0),
            pdb("db-pdb", 1, app="db"),
        )
        blocked = (
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
            "1 Preemption would violate PodDisruptionBudget default/db-pdb (pdbPolicy: Strict).."
        )
        high = pod("high", "high-priority", "2", grace=0)
        out = cli(stack, capsys, tmp_path, "apply", "--dry-run=server", manifest=high)
        assert out.splitlines() == [
            "pod/high created (server dry run)",
            f"  would stay pending: {blocked}",
            "    default/db on node n1 is not preempted: PodDisruptionBudget default/db-pdb (disruptionsAllowed 0) "
            "covers it (pdbPolicy: Strict)",
        ]
        apply(api, high)
        api.wait(
            lambda: any(e.reason == "FailedScheduling" and e.involved_object.name == "high" for e in api.events()),
            what="high failed to schedule",
        )
        described = cli(stack, capsys, tmp_path, "describe", "pod", "high")
        assert f"  Pending: {blocked}\n" in described
        assert "  Preemption blocked by PodDisruptionBudget: default/db-pdb (pdbPolicy: Strict)\n" in described
        assert api.pods()["db"]["spec"]["nodeName"] == "n1" and not api.pods()["db"]["metadata"].get(
            "deletionTimestamp"
        )
    finally:
        api.close()
        started.close()
