"""Deployments, ReplicaSets and Jobs through the `podsched` CLI on the running system: apply, kubectl's
columns for `get deploy|rs|jobs`, `describe job`, `scale`, `delete` (owned pods go too), and bad
manifests refused with kubectl's words, changing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from live_api import Api
from manifest_dicts import COMMON, node
from podsched_cli.main import main
from podsched_devstack.services import ServiceStack
from podsched_proto.api.v1 import api_pb2


def run(stack: ServiceStack, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--server", stack.server, *args])
    out, err = capsys.readouterr()
    return code, out, err


def template(run_seconds: str | None = None, restart_policy: str | None = None) -> dict[str, object]:
    spec: dict[str, object] = {
        "priorityClassName": "low-priority",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
    }
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    metadata: dict[str, object] = {"labels": {"app": "web"}}
    if run_seconds:
        metadata["annotations"] = {"sim.podsched.io/run-seconds": run_seconds}
    return {"metadata": metadata, "spec": spec}


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template()},
}
JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train"},
    "spec": {
        "completions": 2,
        "parallelism": 2,
        "backoffLimit": 0,
        "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
        "template": template(run_seconds="1", restart_policy="Never"),
    },
}


def owned_by(api: Api, prefix: str) -> list[str]:
    return [
        name
        for name, pod in api.pods().items()
        if name.startswith(prefix) and not pod["metadata"].get("deletionTimestamp")
    ]


def test_workloads_through_the_cli(
    stack: ServiceStack, api: Api, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifests = tmp_path / "workloads.yaml"
    manifests.write_text(
        yaml.safe_dump_all([*yaml.safe_load_all(COMMON.read_text()), node("n1", cpu="4"), DEPLOYMENT, JOB])
    )
    code, out, err = run(stack, capsys, "apply", "-f", str(manifests))
    assert code == 0, err
    assert "deployment.apps/web created" in out.splitlines() and "job.batch/train created" in out.splitlines()

    api.wait(
        lambda: len([p for p in owned_by(api, "web-") if api.pods()[p]["spec"].get("nodeName")]) == 2,
        what="2 web pods bound",
    )
    code, out, _ = run(stack, capsys, "get", "deploy")
    header, row = out.splitlines()[0].split(), out.splitlines()[1].split()
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert row[:4] == ["web", "2/2", "2", "2"]
    code, out, _ = run(stack, capsys, "get", "rs", "-o", "wide")
    header, row = out.splitlines()[0].split(), out.splitlines()[1].split()
    assert header == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert row[0].startswith("web-") and row[1:4] == ["2", "2", "2"] and "pod-template-hash=" in row[-1]
    pod = api.pods()[owned_by(api, "web-")[0]]
    (ref,) = pod["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("ReplicaSet", row[0], True)

    def job_complete() -> bool:
        reply = api.stub.Get(api_pb2.GetRequest(resource="jobs", name="train", namespace="default"), timeout=10)
        conditions = json.loads(reply.objects_json[0]).get("status", {}).get("conditions", [])
        return any(c["type"] == "Complete" for c in conditions)

    api.wait(job_complete, timeout=30, what="the Job complete")
    code, out, _ = run(stack, capsys, "get", "jobs")
    header, row = out.splitlines()[0].split(), out.splitlines()[1].split()
    assert header == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert row[:3] == ["train", "Complete", "2/2"]
    code, out, _ = run(stack, capsys, "describe", "job", "train")
    assert code == 0
    assert "Pods Statuses:" in out and "0 Active (0 Ready) / 2 Succeeded / 0 Failed" in out
    assert "Backoff Limit:" in out and "Ignore" in out and "DisruptionTarget=True" in out
    assert "Created pod: train-" in out and "Job completed" in out and "Completed" in out

    code, out, _ = run(stack, capsys, "scale", "deployment/web", "--replicas=3")
    assert (code, out) == (0, "deployment.apps/web scaled\n")
    api.wait(lambda: len(owned_by(api, "web-")) == 3, what="a third web pod")

    code, out, _ = run(stack, capsys, "delete", "deployment", "web")
    assert (code, out) == (0, 'deployment.apps "web" deleted\n')
    api.wait(lambda: not owned_by(api, "web-"), what="the Deployment's pods gone with it")
    code, _, err = run(stack, capsys, "get", "rs")
    assert "No resources found in default namespace." in err


def test_bad_workload_manifests_are_refused_with_kubectls_words_and_change_nothing(
    stack: ServiceStack, api: Api, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    wrong_selector = json.loads(json.dumps(DEPLOYMENT))
    wrong_selector["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    no_restart_policy = json.loads(json.dumps(JOB))
    del no_restart_policy["spec"]["template"]["spec"]["restartPolicy"]
    bad.write_text(yaml.safe_dump_all([wrong_selector, no_restart_policy]))
    code, out, err = run(stack, capsys, "apply", "-f", str(bad))
    assert code == 1 and out == ""
    assert err.splitlines() == [
        'Error from server (Invalid): Deployment "web" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"web"}: `selector` does not match template `labels`',
        'Error from server (Invalid): Job "train" is invalid: spec.template.spec.restartPolicy: Required value: '
        'valid values: "OnFailure", "Never"',
    ]
    for kind in ("deploy", "rs", "jobs"):
        code, _, err = run(stack, capsys, "get", kind)
        assert "No resources found" in err
    assert not api.pods()
