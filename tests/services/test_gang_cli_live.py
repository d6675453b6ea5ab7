"""Gang scheduling explained against the live stack (GenericWorkload gate on): a server dry run and
`describe pod` say why a gang pod waits for minCount (and scheduler_pending_pods{queue="gated"}
counts it), `get podgroups` and `describe podgroup` show the group, and once the last pod arrives
the gang binds, the group is Scheduled, the pod-group metric counts the cycle, and the traces in
Jaeger carry the group's name and size."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from live_api import Api
from manifest_dicts import COMMON, gang_member, node, pod_group
from podsched_cli.main import main
from podsched_devstack import jaeger as jaeger_api
from podsched_devstack.jaeger import Jaeger
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, scrape, value
from stacks import GENERIC_WORKLOAD_ON, running_with_config

WAITING = "waiting for minCount pods from a gang to appear in scheduling queue"


@pytest.fixture
def gang_stack(kafka: KafkaBroker, jaeger: Jaeger, tmp_path: Path) -> Iterator[ServiceStack]:
    started = running_with_config(kafka, tmp_path, GENERIC_WORKLOAD_ON, workers=0, otlp_endpoint=jaeger.otlp_endpoint)
    yield next(started)
    started.close()


def run(stack: ServiceStack, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--server", stack.server, *args])
    return code, capsys.readouterr().out


def member(index: int) -> dict[str, Any]:
    return gang_member(f"worker-{index}", "trainers", grace=0)


def tags(span: dict[str, Any]) -> dict[str, Any]:
    return {tag["key"]: tag["value"] for tag in span.get("tags", [])}


def test_a_gang_waiting_for_its_pods_is_explained_then_binds_whole(
    gang_stack: ServiceStack, jaeger: Jaeger, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stack = gang_stack
    api = Api(stack.server)
    api.apply_text(COMMON.read_text())
    group = pod_group("trainers", 3)
    api.apply_text(yaml.safe_dump_all([node("n1", cpu="2"), node("n2", cpu="2"), group, member(0)]))
    second = tmp_path / "second.yaml"
    second.write_text(yaml.safe_dump(member(1)))

    code, out = run(stack, capsys, "apply", "--dry-run=server", "-f", str(second))
    assert code == 0
    assert out.splitlines() == ["pod/worker-1 created (server dry run)", f"  would stay pending: {WAITING}"]

    assert run(stack, capsys, "apply", "-f", str(second))[0] == 0
    api.wait(lambda: "worker-1" in api.pods(), what="worker-1 stored")
    code, out = run(stack, capsys, "describe", "pod", "worker-1")
    assert code == 0
    assert f"Pending: {WAITING} (2 of minCount 3 pods exist)" in out
    api.wait(
        lambda: value(scrape(stack.metrics_url("queue")), "scheduler_pending_pods", queue="gated") == 2,
        what="two pods gated",
    )
    code, out = run(stack, capsys, "get", "pg")
    assert out.splitlines()[1].split()[:4] == ["trainers", "Gang", "<none>", "Pending"]

    third = tmp_path / "third.yaml"
    third.write_text(yaml.safe_dump(member(2)))
    code, out = run(stack, capsys, "apply", "--dry-run=server", "-f", str(third))
    assert (
        "scheduled with pod group default/trainers (3 pods, minCount 3): all of them bind together or none does" in out
    )
    assert run(stack, capsys, "apply", "-f", str(third))[0] == 0
    api.wait(
        lambda: all(api.pods().get(f"worker-{i}", {}).get("spec", {}).get("nodeName") for i in range(3)),
        what="the gang bound",
    )
    code, out = run(stack, capsys, "describe", "podgroup", "trainers")
    assert code == 0
    assert "Gang (minCount 3)" in out and "3 (3 bound, 0 pending)" in out
    condition = next(line.split() for line in out.splitlines() if "PodGroupInitiallyScheduled" in line)
    assert condition[:3] == ["PodGroupInitiallyScheduled", "True", "Scheduled"]
    samples = scrape(stack.metrics_url("queue"))
    assert (
        value(samples, "scheduler_podgroup_schedule_attempts_total", result="scheduled", profile="default-scheduler")
        == 1
    )
    assert value(samples, "scheduler_pending_pods", queue="gated") == 0

    # Each pod's attempt, the preemption service's cycle and the binder's write name the group.
    group_tag = {"podsched.pod_group.name": "default/trainers"}
    for service, operation in (
        ("podsched-queue", "scheduling attempt"),
        ("podsched-preemption", "schedule pod group"),
        ("podsched-binder", "record pod group result"),
    ):
        traces = jaeger_api.wait_for_traces(jaeger.query_url, service, group_tag, minimum=1, timeout=30)
        spans = [
            tags(span)
            for trace in traces
            for span in trace["spans"]
            if span["operationName"] == operation and tags(span).get("podsched.pod_group.name") == "default/trainers"
        ]
        assert spans, f"no {operation!r} span of {service} names the group"
        assert all(span["podsched.pod_group.size"] == 3 for span in spans), spans
    api.close()
