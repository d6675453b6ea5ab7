"""The local Jaeger (podsched_devstack.jaeger) against the real Jaeger v2 binary and the OpenTelemetry SDK.

Proves what the traced tests and `make run` rely on: a span sent with the SDK's OTLP gRPC exporter (what the
services use) comes back from the query API with its attributes and parent link, the query helpers and the
text tree read it correctly, every socket Jaeger listens on is on loopback, and `detach` / pid file /
`stop` work across processes the way `make up` / `make down` use them.

The binary is built from the Go module proxy (`make jaeger-install`); a machine without Go makes these tests
FAIL (never skip).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind
from real_jaeger import start_jaeger_or_fail

from podsched_devstack import jaeger as jaeger_api
from podsched_devstack.jaeger import Jaeger

SERVICE = "podsched-test"


@pytest.fixture(scope="module")
def provider(jaeger: Jaeger) -> Iterator[TracerProvider]:
    """An SDK tracer provider exporting to the session Jaeger (not the global one: nothing else is affected)."""
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=jaeger.otlp_endpoint, insecure=True, timeout=10))
    )
    try:
        yield tracer_provider
    finally:
        tracer_provider.shutdown()


def tags(span: dict[str, object]) -> dict[str, object]:
    return {tag["key"]: tag["value"] for tag in span["tags"]}  # type: ignore[attr-defined, index]


def test_a_span_sent_over_otlp_grpc_comes_back_from_the_query_api(jaeger: Jaeger, provider: TracerProvider) -> None:
    pod = f"pod-{uuid.uuid4().hex[:8]}"  # the session Jaeger is shared: find exactly this test's trace
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "scheduling attempt",
        attributes={
            "k8s.pod.name": pod,
            "k8s.namespace.name": "default",
            "podsched.result": "scheduled",
            "podsched.feasible_nodes": 3,
            "unrelated.attribute": "not shown",
        },
    ) as root:
        with tracer.start_as_current_span(
            "/podsched.filter.v1.Filter/FindNodes", kind=SpanKind.CLIENT, attributes={"rpc.method": "FindNodes"}
        ):
            pass
        with tracer.start_as_current_span(
            "send podsched.objects.v1",
            kind=SpanKind.PRODUCER,
            attributes={"messaging.destination.name": "podsched.objects.v1"},
        ):
            pass
    assert provider.force_flush(10_000)
    trace_id = f"{root.get_span_context().trace_id:032x}"

    # Jaeger stores spans in batches (200 ms): wait_for_traces retries until the trace is searchable.
    traces = jaeger_api.wait_for_traces(jaeger.query_url, SERVICE, {"k8s.pod.name": pod}, timeout=15)
    assert len(traces) == 1
    assert SERVICE in jaeger.services()
    assert int(traces[0]["traceID"], 16) == int(trace_id, 16)
    assert jaeger.find_traces(SERVICE, {"k8s.pod.name": "no-such-pod"}) == []

    trace = jaeger.get_trace(trace_id)
    spans = {span["operationName"]: span for span in trace["spans"]}
    assert set(spans) == {"scheduling attempt", "/podsched.filter.v1.Filter/FindNodes", "send podsched.objects.v1"}
    assert {trace["processes"][span["processID"]]["serviceName"] for span in spans.values()} == {SERVICE}
    root_span = spans["scheduling attempt"]
    assert tags(root_span)["k8s.pod.name"] == pod and tags(root_span)["podsched.feasible_nodes"] == 3
    for name in ("/podsched.filter.v1.Filter/FindNodes", "send podsched.objects.v1"):
        (reference,) = spans[name]["references"]
        assert reference["refType"] == "CHILD_OF" and reference["spanID"] == root_span["spanID"]

    tree = jaeger_api.render_trace_tree(trace).splitlines()
    assert tree[0] == f"trace {trace['traceID']}: 3 spans"
    assert tree[1].startswith(f"{SERVICE} scheduling attempt [+0.0 ms, ")
    assert f"k8s.pod.name={pod}" in tree[1] and "k8s.namespace.name=default" in tree[1]
    assert "podsched.feasible_nodes=3" in tree[1] and "podsched.result=scheduled" in tree[1]
    assert "unrelated.attribute" not in tree[1]
    assert tree[2].startswith(f"  - {SERVICE} /podsched.filter.v1.Filter/FindNodes [+")
    assert tree[2].endswith(" rpc.method=FindNodes")
    assert tree[3].startswith(f"  - {SERVICE} send podsched.objects.v1 [+")
    assert tree[3].endswith(" messaging.destination.name=podsched.objects.v1")
    assert len(tree) == 4


def test_an_unknown_trace_is_a_lookup_error(jaeger: Jaeger) -> None:
    with pytest.raises(LookupError, match="not found"):
        jaeger.get_trace("0123456789abcdef0123456789abcdef")
    with pytest.raises(LookupError, match="not found"):
        jaeger_api.wait_for_trace(jaeger.query_url, "0123456789abcdef0123456789abcdef", timeout=0.5)


def listening_sockets(pid: int) -> list[tuple[str, str, int]]:
    """(protocol, local IP, port) of every listening TCP socket and bound UDP socket of a process, from
    /proc: the process's socket inodes matched against /proc/net/{tcp,tcp6,udp,udp6}."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = []
    for protocol in ("tcp", "tcp6", "udp", "udp6"):
        for line in Path(f"/proc/net/{protocol}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if inode not in inodes or (protocol.startswith("tcp") and state != "0A"):  # 0A: LISTEN
                continue
            address_hex, port_hex = local.split(":")
            if len(address_hex) == 8:  # IPv4, little-endian
                address = ".".join(str(int(address_hex[i : i + 2], 16)) for i in (6, 4, 2, 0))
            else:
                address = "::1" if address_hex == "00000000000000000000000001000000" else f"ipv6:{address_hex}"
            found.append((protocol, address, int(port_hex, 16)))
    return found


def test_every_listener_is_on_loopback_at_the_chosen_ports(jaeger: Jaeger) -> None:
    assert jaeger.pid is not None
    sockets = listening_sockets(jaeger.pid)
    assert sockets, "no listening sockets found for the Jaeger process"
    assert {address for _, address, _ in sockets} == {"127.0.0.1"}, sockets
    assert sorted(port for _, _, port in sockets) == sorted(jaeger.ports.values()), (sockets, jaeger.ports)
    assert {protocol for protocol, _, _ in sockets} == {"tcp"}


def test_detach_pid_file_and_stop_from_another_object(tmp_path: Path) -> None:
    """What `make up` (start + detach) and `make down` (a new object, found through the pid file) do."""
    first = start_jaeger_or_fail(tmp_path / "jaeger", timeout=60)
    pid = first.pid
    assert pid is not None and first.pid_file.read_text().strip() == str(pid)
    endpoints = re.findall(r'endpoint: "([^"]*)"', first.config_file.read_text())
    assert sorted(endpoints) == sorted(f"127.0.0.1:{port}" for port in first.ports.values())
    try:
        first.detach()
        again = Jaeger(tmp_path / "jaeger")  # no ports given: the recorded ones
        assert again.ports == first.ports and again.pid == pid and again.is_ready()
        again.stop(timeout=15)
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        assert not again.pid_file.exists() and again.pid is None and not again.is_ready()
    finally:
        if Path(f"/proc/{pid}").exists():
            Jaeger(tmp_path / "jaeger").stop(timeout=5)
