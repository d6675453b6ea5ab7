"""Observability end to end: the preemption example (examples/high-mid-low) on the real stack with
a real Jaeger. The preemptor's whole journey must come back from Jaeger's query API as one trace
spanning the four services and the Kafka hops, each service's Prometheus endpoint must have moved
by exactly what happened, and the JSON log lines must carry the trace's id."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from live_api import Api, node_of
from podsched_devstack import jaeger as jaeger_api
from podsched_devstack.jaeger import Jaeger
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings, scrape, value
from stacks import running

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "high-mid-low"
PREEMPTOR = "xyz-0"
SERVICES = ("queue", "filter", "preemption", "binder")
GRACE_SECONDS = 2  # the example's 30 s, shortened: the story is the same


@pytest.fixture
def traced_stack(kafka: KafkaBroker, jaeger: Jaeger, tmp_path: Path) -> Iterator[ServiceStack]:
    import uuid

    settings = StackSettings.on_free_ports(
        kafka.bootstrap_servers,
        tmp_path / "services",
        topic_prefix=f"t{uuid.uuid4().hex[:10]}.",
        workers=2,
        otlp_endpoint=jaeger.otlp_endpoint,
        # The example's pods would get the in-process vectorized dry run: force the worker pool, whose
        # shard spans this test checks.
        extra_env={"PODSCHED_DRY_RUN": "workers"},
    )
    yield from running(settings)


def example_documents() -> tuple[str, str, str]:
    workload = list(yaml.safe_load_all((EXAMPLE / "workload.yaml").read_text()))
    for document in workload:
        document["spec"]["terminationGracePeriodSeconds"] = GRACE_SECONDS
    return (
        (EXAMPLE / "cluster.yaml").read_text(),
        yaml.safe_dump_all(workload),
        (EXAMPLE / "preemptor.yaml").read_text(),
    )


# --- metrics ------------------------------------------------------------------------------------


def scrape_all(stack: ServiceStack) -> dict[str, dict[tuple[str, frozenset[tuple[str, str]]], float]]:
    return {name: scrape(stack.metrics_url(name)) for name in SERVICES}


# --- traces -------------------------------------------------------------------------------------


def tags(span: dict[str, Any]) -> dict[str, Any]:
    return {tag["key"]: tag["value"] for tag in span.get("tags", [])}


def parent_of(span: dict[str, Any]) -> str | None:
    for ref in span.get("references", []):
        if ref.get("refType") == "CHILD_OF":
            return str(ref["spanID"])
    return None


def test_one_trace_metrics_and_logs_tell_the_preemption_story(traced_stack: ServiceStack, jaeger: Jaeger) -> None:
    stack = traced_stack
    api = Api(stack.server)
    started = time.time()  # the session's Jaeger also holds other tests' traces of the example's pods
    try:
        cluster, workload, preemptor = example_documents()
        api.apply_text(cluster)
        api.apply_text(workload)
        api.wait(lambda: all(node_of(p) for p in api.pods().values()) and len(api.pods()) == 8, what="8 pods bound")
        before = scrape_all(stack)
        placed = {name: node_of(p) for name, p in api.pods().items()}

        api.apply_text(preemptor)
        api.wait(lambda: node_of(api.pods().get(PREEMPTOR, {})), timeout=60, what=f"{PREEMPTOR} bound")
        after = scrape_all(stack)
        events = api.events()
    finally:
        api.close()

    def delta(service: str, name: str, **labels: str) -> float:
        return value(after[service], name, **labels) - value(before[service], name, **labels)

    failed = [e for e in events if e.reason == "FailedScheduling" and e.involved_object.name == PREEMPTOR]
    preempted = [e for e in events if e.reason == "Preempted"]
    unschedulable_attempts = sum(max(1, e.count) for e in failed)
    assert len(preempted) == 2 and unschedulable_attempts >= 1

    # --- metrics moved by exactly what happened -------------------------------------------------
    profile = {"profile": "default-scheduler"}
    assert delta("queue", "scheduler_schedule_attempts_total", result="scheduled", **profile) == 1
    assert delta("queue", "scheduler_schedule_attempts_total", result="unschedulable", **profile) == (
        unschedulable_attempts
    )
    assert delta("queue", "scheduler_scheduling_attempt_duration_seconds_count", result="scheduled", **profile) == 1
    assert value(after["queue"], "scheduler_pending_pods", queue="active") == 0
    assert value(after["queue"], "scheduler_pending_pods", queue="unschedulable") == 0
    # Every unschedulable attempt went to PostFilter; one of them chose two victims. A PostFilterRun
    # whose Filter outcome predated a victim's deletion is answered "stale" (no preemption attempt)
    # and the same attempt filters again: it shows in the call counts, not in the attempts.
    stale = delta("preemption", "podsched_preemption_stale_filter_results_total")
    assert delta("preemption", "scheduler_preemption_attempts_total") == unschedulable_attempts
    assert delta("preemption", "scheduler_preemption_victims_count") == 1
    assert delta("preemption", "scheduler_preemption_victims_sum") == 2
    assert (
        delta(
            "preemption",
            "grpc_server_handled_total",
            grpc_service="podsched.preemption.v1.Preemption",
            grpc_method="PostFilterRun",
            grpc_code="OK",
        )
        == unschedulable_attempts + stale
    )
    assert (
        delta(
            "filter",
            "grpc_server_handled_total",
            grpc_service="podsched.filter.v1.Filter",
            grpc_method="FindNodes",
            grpc_code="OK",
        )
        == unschedulable_attempts + 1 + stale
    )
    assert delta("binder", "podsched_events_total", type="Normal", reason="Preempted") == 2
    assert delta("binder", "podsched_events_total", type="Normal", reason="Nominated") == 1
    assert delta("binder", "podsched_binds_total", result="bound") == 1
    assert delta("binder", "podsched_kafka_transactions_total", result="committed") >= 3
    for service in ("queue", "filter", "preemption"):
        assert (
            "podsched_kafka_consumer_lag_records",
            frozenset({("topic", stack.settings.topic_prefix + "podsched.objects.v1")}),
        ) in after[service], service
    assert (
        delta(
            "queue",
            "grpc_client_handled_total",
            grpc_service="podsched.binder.v1.Binder",
            grpc_method="Bind",
            grpc_code="OK",
        )
        == 1
    )

    # --- one trace, all four services, the Kafka hops, correct links ---------------------------------
    traces = jaeger_api.wait_for_traces(
        jaeger.query_url, "podsched-queue", {"k8s.pod.name": PREEMPTOR}, minimum=1, timeout=30, since=started
    )
    trace_ids = {
        span["traceID"] for trace in traces for span in trace["spans"] if tags(span).get("k8s.pod.name") == PREEMPTOR
    }
    assert len(trace_ids) == 1, f"the preemptor's spans are in {len(trace_ids)} traces"
    (trace_id,) = trace_ids

    # Each process exports in its own batches: wait until the bind is there and no span's parent is
    # still missing (a parent ends, so is exported, after its children: a producer span after the
    # consumers of its records, an attempt after its calls).
    def complete(t: dict[str, Any]) -> bool:
        ids = {s["spanID"] for s in t["spans"]}
        linked = all(parent_of(s) is None or parent_of(s) in ids for s in t["spans"])
        return linked and any(s["operationName"] == "bind pod" for s in t["spans"])

    trace = jaeger_api.wait_for_trace(jaeger.query_url, trace_id, complete, timeout=30)
    spans = {span["spanID"]: span for span in trace["spans"]}
    service_of = {sid: trace["processes"][span["processID"]]["serviceName"] for sid, span in spans.items()}
    assert set(service_of.values()) >= {"podsched-queue", "podsched-filter", "podsched-preemption", "podsched-binder"}

    roots = [sid for sid, span in spans.items() if parent_of(span) is None]
    assert len(roots) == 1, [spans[r]["operationName"] for r in roots]
    assert spans[roots[0]]["operationName"] == "/podsched.api.v1.PodSched/Apply"
    for span in spans.values():  # every link points inside the trace
        parent = parent_of(span)
        assert parent is None or parent in spans, span["operationName"]

    def named(operation: str) -> list[dict[str, Any]]:
        return [s for s in spans.values() if s["operationName"] == operation]

    def parent(span: dict[str, Any]) -> dict[str, Any]:
        found = parent_of(span)
        assert found is not None
        return spans[found]

    # Kafka hops: producer spans in the binder, consumer spans in every replica, parented on them.
    objects_topic = stack.settings.topic_prefix + "podsched.objects.v1"
    sends = named(f"send {objects_topic}")
    processes = named(f"process {objects_topic}")
    assert sends and processes
    for span in sends:
        assert tags(span)["span.kind"] == "producer" and tags(span)["messaging.system"] == "kafka"
        assert service_of[span["spanID"]] == "podsched-binder"
    for span in processes:
        assert tags(span)["span.kind"] == "consumer"
        assert parent(span)["operationName"].startswith("send ")
    assert {service_of[s["spanID"]] for s in processes} >= {"podsched-queue", "podsched-filter", "podsched-preemption"}

    # gRPC hops follow the RPC conventions: a client span in the caller, the server span under it.
    for server in named("/podsched.filter.v1.Filter/FindNodes") + named(
        "/podsched.preemption.v1.Preemption/PostFilterRun"
    ):
        if tags(server)["span.kind"] != "server":
            continue
        client = parent(server)
        assert tags(client)["span.kind"] == "client" and tags(client)["rpc.system"] == "grpc"
        assert service_of[client["spanID"]] == "podsched-queue"

    # A span the queue closed as "requeued" is a pod it returned untried (a PostFilterRun answered
    # "stale" above sends it back to be filtered again): not an attempt, as the metrics do not count it.
    attempt_spans = sorted(named("scheduling attempt"), key=lambda s: s["startTime"])
    requeued = [s for s in attempt_spans if tags(s).get("podsched.result") == "requeued"]
    attempts = [s for s in attempt_spans if tags(s).get("podsched.result") != "requeued"]
    assert len(requeued) <= stale, f"{len(requeued)} requeued attempts, {stale} stale Filter outcomes"
    assert len(attempts) == unschedulable_attempts + 1
    for attempt in attempts:
        attributes = tags(attempt)
        assert attributes["k8s.pod.name"] == PREEMPTOR and attributes["k8s.namespace.name"] == "default"
        assert attributes["podsched.pod.priority"] == 1000000
        assert "podsched.attempt" in attributes and "podsched.feasible_nodes" in attributes
        assert parent(attempt)["operationName"] == f"process {objects_topic}"  # the pod's arrival
    first, last = tags(attempts[0]), tags(attempts[-1])
    assert first["podsched.result"] == "unschedulable" and first["podsched.feasible_nodes"] == 0
    nominated_node = first["podsched.nominated_node"]
    assert first["podsched.candidates"] >= 1 and nominated_node in ("node-a", "node-b")
    victims = first["podsched.victims"]
    victims = sorted(json.loads(victims) if isinstance(victims, str) else victims)
    assert victims == sorted(f"default/{e.involved_object.name}" for e in preempted)
    assert all(placed[v.split("/")[1]] == nominated_node and v.split("/")[1].startswith("batch-") for v in victims)
    assert first["podsched.pdb_violations"] == 0
    assert last["podsched.result"] == "scheduled" and last["k8s.node.name"] == nominated_node

    shards = named("SelectVictimsOnNode shard")
    assert 1 <= len(shards) <= 2
    for shard in shards:
        assert service_of[shard["spanID"]] == "podsched-preemption"
        assert parent(shard)["operationName"] == "/podsched.preemption.v1.Preemption/PostFilterRun"
    (record,) = [s for s in named("record scheduling failure") if tags(s).get("podsched.nominated_node")]
    assert service_of[record["spanID"]] == "podsched-binder"
    terminations = named("terminate pod")
    assert sorted(f"default/{tags(s)['k8s.pod.name']}" for s in terminations) == victims
    (bind,) = named("bind pod")
    assert tags(bind)["k8s.node.name"] == nominated_node

    # --- JSON logs: one line per decision, carrying the trace id --------------------------------------
    lines = [json.loads(line) for line in stack.log_path("queue").read_text().splitlines() if line.startswith("{")]
    decisions = Counter(line.get("decision") for line in lines if line.get("trace_id") == trace_id)
    assert decisions["Nominated"] == 1 and decisions["Scheduled"] == 1
    binder_lines = [
        json.loads(line) for line in stack.log_path("binder").read_text().splitlines() if line.startswith("{")
    ]
    preempted_lines = [line for line in binder_lines if line.get("decision") == "Preempted"]
    assert len(preempted_lines) == 2 and {line["trace_id"] for line in preempted_lines} == {trace_id}
    print(jaeger_api.render_trace_tree(trace))


def test_the_cli_starts_the_trace_of_what_it_applies(
    traced_stack: ServiceStack, jaeger: Jaeger, tmp_path: Path
) -> None:
    """With PODSCHED_OTLP_ENDPOINT set, `podsched apply` is the root of the pod's trace (run as its
    own process: the tracer provider is process-wide)."""
    import os
    import subprocess
    import sys

    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: traced}\n"
        "spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: 100m}}}]}\n"
    )
    environment = {**os.environ, "PODSCHED_OTLP_ENDPOINT": jaeger.otlp_endpoint}
    for document in ((EXAMPLE / "cluster.yaml"), manifest):
        done = subprocess.run(
            [sys.executable, "-m", "podsched_cli.main", "--server", traced_stack.server, "apply", "-f", str(document)],
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    traces = jaeger_api.wait_for_traces(jaeger.query_url, "podsched-queue", {"k8s.pod.name": "traced"}, timeout=30)
    (trace,) = traces
    spans = {span["spanID"]: span for span in trace["spans"]}
    (root,) = [span for span in spans.values() if parent_of(span) is None]
    assert trace["processes"][root["processID"]]["serviceName"] == "podsched-cli"
    assert root["operationName"] == "/podsched.api.v1.PodSched/Apply" and tags(root)["span.kind"] == "client"


def test_a_replacement_pod_continues_the_trace_of_the_preemption_that_evicted_its_predecessor(
    traced_stack: ServiceStack, jaeger: Jaeger
) -> None:
    """A Deployment's pod is preempted: the pod its ReplicaSet creates in its place is traced under a
    "replace pod" span in the preemptor's trace, and its own scheduling attempts continue there."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "priorityClassName": "low-priority",
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": "2"}}}],
                },
            },
        },
    }
    high = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "high"},
        "spec": {
            "priorityClassName": "high-priority",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": "2"}}}],
        },
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
    }
    common = (Path(__file__).resolve().parents[1] / "scenarios" / "common.yaml").read_text()
    api = Api(traced_stack.server)
    try:
        api.apply_text(common)
        api.apply_text(yaml.safe_dump_all([node, deployment]))
        first = api.wait(lambda: [n for n, p in api.pods().items() if node_of(p)], what="the web pod bound")[0]
        api.apply_text(yaml.safe_dump(high))
        replacement = api.wait(
            lambda: [n for n in api.pods() if n.startswith("web-") and n != first], what="a replacement web pod"
        )[0]
    finally:
        api.close()
    traces = jaeger_api.wait_for_traces(
        jaeger.query_url, "podsched-binder", {"k8s.pod.name": replacement}, minimum=1, timeout=30
    )
    replaced = [
        (trace, span)
        for trace in traces
        for span in trace["spans"]
        if span["operationName"] == "replace pod" and tags(span).get("k8s.pod.name") == replacement
    ]
    assert replaced, [s["operationName"] for t in traces for s in t["spans"]]
    trace, span = replaced[0]
    assert tags(span)["podsched.owner"].startswith("ReplicaSet/web-")
    # The same trace holds the preemptor's journey: its Apply and its victim's eviction.
    full = jaeger_api.wait_for_trace(
        jaeger.query_url,
        trace["traceID"],
        lambda t: any(tags(s).get("k8s.pod.name") == "high" for s in t["spans"]),
        timeout=30,
    )
    names = {tags(s).get("k8s.pod.name") for s in full["spans"]}
    assert {"high", replacement} <= names, sorted(n for n in names if n)
    victims = [str(tags(s).get("podsched.victims", "")) for s in full["spans"]]
    assert any(f"default/{first}" in listed for listed in victims), victims
