"""podsched_devstack.jaeger without the binary: the text tree of a trace, the generated configuration, and
the services' environment for tracing and metrics (tests/test_jaeger_server.py runs the real Jaeger)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from podsched_devstack.gobuild import version_tuple
from podsched_devstack.jaeger import CLI_DEFAULT_PORTS, PORT_NAMES, Jaeger, render_trace_tree
from podsched_devstack.services import SERVICES, ServiceStack, StackSettings
from podsched_service.config import DEFAULT_QUEUE_METRICS


def span(span_id: str, operation: str, start: int, duration: int, process: str = "p1", parent: str | None = None,
         ref_type: str = "CHILD_OF", **tags: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "traceID": "abc",
        "spanID": span_id,
        "operationName": operation,
        "references": [{"refType": ref_type, "traceID": "abc", "spanID": parent}] if parent else [],
        "startTime": start,
        "duration": duration,
        "tags": [{"key": key.replace("__", "."), "type": "string", "value": value} for key, value in tags.items()],
        "processID": process,
    }


PROCESSES = {"p1": {"serviceName": "podsched-queue"}, "p2": {"serviceName": "podsched-binder"}}


def test_tree_nests_children_under_parents_in_start_order() -> None:
    trace = {
        "traceID": "abc",
        "processes": PROCESSES,
        "spans": [
            span("c2", "bind pod", 1_005_000, 2_000, "p2", parent="r", k8s__node__name="node-a"),
            span(
                "r",
                "/podsched.api.v1.PodSched/Apply",
                1_000_000,
                12_345,
                k8s__pod__name="xyz-0",
                podsched__result="scheduled",
                other="hidden",
            ),
            span(
                "c1",
                "process podsched.objects.v1",
                1_001_000,
                500,
                parent="r",
                ref_type="FOLLOWS_FROM",
                messaging__destination__name="podsched.objects.v1",
            ),
            span(
                "g",
                "/podsched.filter.v1.Filter/FindNodes",
                1_001_200,
                100,
                parent="c1",
                rpc__method="FindNodes",
                error=True,
            ),
        ],
    }
    assert render_trace_tree(trace).splitlines() == [
        "trace abc: 4 spans",
        "podsched-queue /podsched.api.v1.PodSched/Apply [+0.0 ms, 12.3 ms] "
        "k8s.pod.name=xyz-0 podsched.result=scheduled",
        "  - podsched-queue process podsched.objects.v1 [+1.0 ms, 0.5 ms] "
        "messaging.destination.name=podsched.objects.v1",
        "    - podsched-queue /podsched.filter.v1.Filter/FindNodes [+1.2 ms, 0.1 ms] ERROR rpc.method=FindNodes",
        "  - podsched-binder bind pod [+5.0 ms, 2.0 ms] k8s.node.name=node-a",
    ]


def test_a_span_whose_parent_is_missing_is_a_root_and_long_values_are_cut() -> None:
    trace = {
        "traceID": "abc",
        "processes": PROCESSES,
        "spans": [
            span("a", "first", 10, 1000),
            span(
                "b",
                "orphan",
                5,
                1000,
                parent="not-in-trace",
                podsched__victims='["default/batch-2", "x"]',
                podsched__note="y" * 100,
            ),
        ],
    }
    lines = render_trace_tree(trace).splitlines()
    assert lines[1].startswith("podsched-queue orphan [+0.0 ms, 1.0 ms] ")
    assert 'podsched.victims="[\\"default/batch-2\\", \\"x\\"]"' in lines[1]
    assert "podsched.note=" + "y" * 77 + "..." in lines[1]
    assert lines[2] == "podsched-queue first [+0.0 ms, 1.0 ms]"
    assert render_trace_tree({"traceID": "e", "spans": [], "processes": {}}) == "trace e: 0 spans"


def test_config_puts_every_listener_on_loopback_at_its_port(tmp_path: Path) -> None:
    jaeger = Jaeger(tmp_path, ports=CLI_DEFAULT_PORTS)
    text = jaeger.render_config()
    config = yaml.safe_load(text)
    endpoints = re.findall(r'endpoint: "([^"]*)"', text)
    assert sorted(endpoints) == sorted(f"127.0.0.1:{port}" for port in CLI_DEFAULT_PORTS.values())
    assert config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"] == "127.0.0.1:4317"
    assert config["extensions"]["jaeger_query"]["http"]["endpoint"] == "127.0.0.1:16686"
    assert config["extensions"]["jaeger_query"]["enable_tracing"] is False
    assert config["service"]["telemetry"]["metrics"]["level"] == "none"
    assert set(config["service"]["extensions"]) == set(config["extensions"])
    assert jaeger.otlp_endpoint == "http://127.0.0.1:4317" and jaeger.query_url == "http://127.0.0.1:16686"


def test_free_ports_are_distinct_and_recorded_ports_are_reused(tmp_path: Path) -> None:
    jaeger = Jaeger(tmp_path)
    assert set(jaeger.ports) == set(PORT_NAMES) and len(set(jaeger.ports.values())) == len(PORT_NAMES)
    jaeger.ports_file.write_text('{"otlp_grpc": 1, "otlp_http": 2, "query_http": 3, "query_grpc": 4, "health": 5}')
    assert Jaeger(tmp_path).ports == dict(zip(PORT_NAMES, range(1, 6), strict=True))
    assert Jaeger(tmp_path, ports={"otlp_grpc": 4317}).ports["otlp_grpc"] == 4317


def test_go_version_comparison() -> None:
    assert version_tuple("go1.26.8") > version_tuple("1.24.6") > version_tuple("go1.24")
    assert version_tuple("go1.9") < version_tuple("1.24.6")


def test_services_get_the_otlp_endpoint_and_their_own_metrics_address(tmp_path: Path) -> None:
    settings = StackSettings.on_free_ports("127.0.0.1:1", tmp_path, otlp_endpoint="http://127.0.0.1:4317")
    stack = ServiceStack(settings)
    addresses = set()
    for name in SERVICES:
        env = stack.environment(name)
        assert env["PODSCHED_OTLP_ENDPOINT"] == "http://127.0.0.1:4317"
        assert env["PODSCHED_METRICS_ADDRESS"] == settings.metrics_addresses[name]
        assert stack.metrics_url(name) == f"http://{settings.metrics_addresses[name]}/metrics"
        addresses.add(env["PODSCHED_METRICS_ADDRESS"])
    grpc = set(settings.addresses.values())
    assert len(addresses) == len(SERVICES) and not addresses & grpc
    defaults = StackSettings("127.0.0.1:1", tmp_path)
    assert defaults.otlp_endpoint == "" and defaults.metrics_url("queue") == f"http://{DEFAULT_QUEUE_METRICS}/metrics"
    assert ServiceStack(defaults).environment("queue")["PODSCHED_OTLP_ENDPOINT"] == ""


def test_sibling_leaves_that_print_the_same_share_a_line() -> None:
    topic = {"messaging__destination__name": "t"}
    trace = {
        "traceID": "abc",
        "processes": {**PROCESSES, "p3": {"serviceName": "podsched-filter"}},
        "spans": [
            span("s", "send t", 0, 5_000, "p2"),
            span("a", "process t", 1_000, 100, "p1", parent="s", **topic),
            span("b", "process t", 2_000, 300, "p3", parent="s", **topic),
            span("c", "process t", 3_000, 200, "p1", parent="s", **topic),
            span("d", "process t", 4_000, 100, "p1", parent="s", **topic),
            span("e", "process t", 4_500, 100, "p1", parent="d", **topic),  # d has a child: its own line
        ],
    }
    assert render_trace_tree(trace).splitlines() == [
        "trace abc: 6 spans",
        "podsched-binder send t [+0.0 ms, 5.0 ms]",
        "  - podsched-queue process t [2 spans, +1.0..+3.0 ms, max 0.2 ms] messaging.destination.name=t",
        "  - podsched-filter process t [+2.0 ms, 0.3 ms] messaging.destination.name=t",
        "  - podsched-queue process t [+4.0 ms, 0.1 ms] messaging.destination.name=t",
        "    - podsched-queue process t [+4.5 ms, 0.1 ms] messaging.destination.name=t",
    ]
