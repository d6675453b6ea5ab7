"""The `podsched` CLI against the running system: the documentation's example end to end, the
kubectl wording of its output and errors, and that rejected input changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_cli.main import main
from podsched_devstack.services import ServiceStack

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "high-mid-low"


def run(stack: ServiceStack, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--server", stack.server, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_example_through_the_cli(stack: ServiceStack, api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(stack, capsys, "apply", "-f", str(EXAMPLE / "cluster.yaml"))
    assert code == 0
    assert out.splitlines() == [
        "priorityclass.scheduling.k8s.io/high-priority created",
        "priorityclass.scheduling.k8s.io/mid-priority created",
        "priorityclass.scheduling.k8s.io/low-priority created",
        "node/node-a created",
        "node/node-b created",
    ]
    assert run(stack, capsys, "apply", "-f", str(EXAMPLE / "workload.yaml"))[0] == 0
    api.wait(lambda: all(p["spec"].get("nodeName") for p in api.pods().values()), what="the workload bound")

    code, out, _ = run(stack, capsys, "apply", "--dry-run=server", "-f", str(EXAMPLE / "preemptor.yaml"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "pod/xyz-0 created (server dry run)"
    assert lines[1].startswith("  would be nominated to node ") and "after preempting default/batch-" in lines[1]
    assert "xyz-0" not in api.pods(), "a dry run stores nothing"

    code, out, _ = run(stack, capsys, "apply", "-f", str(EXAMPLE / "preemptor.yaml"))
    assert (code, out) == (0, "pod/xyz-0 created\n")
    api.wait(lambda: api.pods()["xyz-0"]["status"].get("nominatedNodeName"), what="xyz-0 nominated")
    predicted_node = lines[1].split()[5]
    assert api.pods()["xyz-0"]["status"]["nominatedNodeName"] == predicted_node

    code, out, _ = run(stack, capsys, "get", "pods", "-o", "wide")
    assert code == 0
    header = out.splitlines()[0].split()
    assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and "NOMINATED" in header
    assert "Terminating" in out, "the victims terminate gracefully (30 s)"

    code, out, _ = run(stack, capsys, "get", "po", "xyz-0", "-o", "json")
    manifest = json.loads(out)
    assert manifest["kind"] == "Pod" and manifest["spec"]["priority"] == 1000000
    assert manifest["status"]["nominatedNodeName"] == predicted_node

    code, out, _ = run(stack, capsys, "describe", "pod", "xyz-0")
    assert code == 0
    assert f"Nominated to node {predicted_node}" in out and "FailedScheduling" in out

    victim = next(name for name, p in api.pods().items() if p["metadata"].get("deletionTimestamp"))
    code, out, _ = run(stack, capsys, "describe", "pod", victim)
    assert "Preempted by pod default/xyz-0 on node " + predicted_node in out
    assert "DisruptionTarget" in out and "PreemptionByScheduler" in out

    code, out, _ = run(stack, capsys, "events")
    assert code == 0 and "Preempted" in out and "Nominated" in out and "pod/xyz-0" in out
    code, out, _ = run(stack, capsys, "get", "pc")
    assert "high-priority" in out and "1000000" in out

    code, out, _ = run(stack, capsys, "delete", "pod", "xyz-0", "--grace-period", "0")
    assert (code, out) == (0, 'pod "xyz-0" deleted\n')
    code, _, err = run(stack, capsys, "get", "pod", "xyz-0")
    assert code == 1 and err.strip() == 'Error from server (NotFound): pods "xyz-0" not found'


def test_bad_input_through_the_cli_is_worded_as_kubectl_words_it_and_changes_nothing(
    stack: ServiceStack, api: Api, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump(node("n1", cpu="2")))
    before = (api.pods(), len(api.events()))

    malformed = tmp_path / "malformed.yaml"
    malformed.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: [\n")
    code, out, err = run(stack, capsys, "apply", "-f", str(malformed))
    assert code == 1 and out == "" and err.startswith("error: error parsing " + str(malformed))

    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("apiVersion: v1\nkind: Potato\nmetadata: {name: spud}\n")
    code, _, err = run(stack, capsys, "apply", "-f", str(unknown))
    assert code == 1
    assert 'no matches for kind "Potato" in version "v1"' in err and "ensure CRDs are installed first" in err

    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(yaml.safe_dump_all([pod("bad", "no-such-class", "1"), pod("Bad_Name", "low-priority", "1")]))
    code, out, err = run(stack, capsys, "apply", "-f", str(mixed))
    assert code == 1 and out == ""
    errors = err.strip().splitlines()
    assert errors[0] == (
        'Error from server (Forbidden): pods "bad" is forbidden: no PriorityClass with name no-such-class was found'
    ), errors
    assert errors[1].startswith('Error from server (Invalid): Pod "Bad_Name" is invalid: metadata.name')
    assert (api.pods(), len(api.events())) == before


def test_no_server_is_reported_plainly(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--server", "127.0.0.1:1", "--timeout", "3", "get", "pods"])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("The connection to the server 127.0.0.1:1 was refused")


def test_describe_explains_a_cleared_nomination_and_each_failed_attempt(
    stack: ServiceStack, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    """`describe pod` answers "why is it pending?": upstream's FailedScheduling message, the node it
    was nominated to, and why that nomination was cleared.

    mid preempts one of two low pods; high then needs both, so one of its victims is not yet
    terminating and its preemption clears mid's nomination (upstream clears lower nominations
    only when the preemptor evicts someone)."""
    api.apply_text(COMMON.read_text())
    lows = [pod(name, "low-priority", "1", node_name="n1", grace=3) for name in ("low-a", "low-b")]
    api.apply_text(yaml.safe_dump_all([node("n1", cpu="2"), *lows]))
    api.apply_text(yaml.safe_dump(pod("mid", "mid-priority", "1")))
    api.wait(lambda: api.pods()["mid"]["status"].get("nominatedNodeName") == "n1", what="mid nominated to n1")
    code, out, _ = run(stack, capsys, "describe", "pod", "mid")
    assert code == 0
    assert "NominatedNodeName:" in out and "n1" in out.split("NominatedNodeName:", 1)[1].splitlines()[0]
    assert "Nominated to node n1 (waiting for victims to terminate)" in out
    assert "0/1 nodes are available: 1 Insufficient cpu." in out  # the attempt's FailedScheduling message

    api.apply_text(yaml.safe_dump(pod("high", "high-priority", "2")))
    api.wait(lambda: any(e.reason == "NominationCleared" for e in api.events()), what="mid's nomination cleared")
    code, out, _ = run(stack, capsys, "describe", "pod", "mid")
    scheduling = [line.strip() for line in out.split("Scheduling:", 1)[1].split("Events:")[0].splitlines()[1:]]
    cleared = next(e for e in api.events() if e.reason == "NominationCleared")
    assert cleared.message.strip() in scheduling  # why it lost the node, even after later attempts failed
    assert "n1" in cleared.message and "default/high" in cleared.message
    assert "NominatedNodeName" not in out and "NominationCleared" in out
