"""Malformed and hostile requests at the public gRPC API of the running services (a real Kafka
broker, the four services as processes): every request gets OK or a clear error (a status code
Kubernetes would answer with, never UNKNOWN or INTERNAL, and a message naming the object or the
field), a refused request changes nothing, and every service is still up afterwards.

Manifests go through with dry_run (nothing is stored whatever the answer; PostFilter runs for pods
that fit nowhere); requests that are surely refused (bytes that are no manifest, manifests the
decoder refuses, admission refusals) go through for real, and the cluster is compared before and
after each. The library-level twin with many more examples is tests/unit/test_manifest_fuzz.py.
Examples are derandomized (tests/hostile_manifests.py: FUZZ) so CI runs the same requests."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from hostile_manifests import (
    FUZZ,
    HOSTILE_NAMES,
    JSON_VALUES,
    POD,
    PRIORITY_CLASS,
    QUOTA,
    SEED,
    Nested,
    hostile_manifests,
    json_bytes,
    materialize,
    names_the_object_or_field,
)
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from live_api import Api
from podsched.api.errors import ApiError, shorten
from podsched.api.manifests import decode_object
from podsched.api.resources import RESOURCE_TYPES, find_resource_type
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import SERVICES, ServiceStack, StackSettings
from podsched_proto.api.v1 import api_pb2
from podsched_service.healthcheck import check
from stacks import running

# What Kubernetes answers a bad request with (and PERMISSION_DENIED and UNAUTHENTICATED
# from authorization and authentication). UNKNOWN is an unhandled exception in a servicer.
REFUSALS = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED,
}
SOURCE = "fuzz.yaml"
RPC_TIMEOUT = 30.0
WATCH_WINDOW = 0.2  # seconds an accepted watch is followed before the client hangs up
KINDS = sorted(resource.kind for resource in RESOURCE_TYPES)
RESOURCE_WORDS = sorted({word for r in RESOURCE_TYPES for word in (r.plural, r.kind, r.qualified, *r.aliases)})


@pytest.fixture(scope="module")
def fuzz_stack(kafka: KafkaBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceStack]:
    """One stack for the whole module (hypothesis runs every example against it)."""
    prefix = f"f{uuid.uuid4().hex[:10]}."
    settings = StackSettings.on_free_ports(
        kafka.bootstrap_servers,
        tmp_path_factory.mktemp("fuzz-stack"),
        topic_prefix=prefix,
        workers=2,
        # Its own transactional id: a binder of another stack on the broker must never fence this one.
        extra_env={"PODSCHED_TRANSACTIONAL_ID": f"podsched-binder-{prefix}"},
    )
    yield from running(settings)


@pytest.fixture(scope="module")
def api(fuzz_stack: ServiceStack) -> Iterator[Api]:
    """The seeded cluster: classes (one the global default), a node, a quota, a PDB and a pod that
    is bound and Running, so nothing is pending and the cluster holds still between requests."""
    client = Api(fuzz_stack.server)
    for document in SEED:
        client.stub.Apply(api_pb2.ApplyRequest(object_json=json.dumps(document).encode()), timeout=RPC_TIMEOUT)
    client.wait(
        lambda: client.pods().get("existing", {}).get("status", {}).get("phase") == "Running",
        what="the seeded pod Running",
    )
    yield client
    client.close()


@pytest.fixture(scope="module")
def seeded(api: Api) -> Any:
    """The cluster as seeded, before any fuzzing."""
    return cluster_state(api)


def cluster_state(api: Api) -> dict[str, list[bytes]]:
    """Every object of every kind (Events aside: they are no object a request could change)."""
    return {
        resource.plural: sorted(
            api.stub.Get(
                api_pb2.GetRequest(resource=resource.plural, all_namespaces=True), timeout=RPC_TIMEOUT
            ).objects_json
        )
        for resource in RESOURCE_TYPES
    }


def assert_services_alive(stack: ServiceStack) -> None:
    for name in SERVICES:
        process = stack.processes[name]
        assert process.poll() is None, f"{name} exited with {process.returncode}:\n{stack.tail(name)}"
        assert check(stack.settings.addresses[name], timeout=5.0), f"{name} is not SERVING:\n{stack.tail(name)}"


def refusal(call: Any) -> grpc.RpcError | None:
    """Run one unary call: None if it answered OK, else its error, which must be a clear refusal."""
    try:
        response = call()
    except grpc.RpcError as error:
        assert error.code() in REFUSALS, f"{error.code()}: {error.details()}"
        assert (error.details() or "").strip(), f"{error.code()} without a message"
        return error
    if isinstance(response, api_pb2.ApplyResponse) and response.HasField("dry_run"):
        outcome = response.dry_run
        placed = "placed" if outcome.node_name else "nominated" if outcome.nominated_node_name else "pending"
        event(f"dry run of a pod: {placed}")
    return None


def apply(api: Api, raw: bytes, *, dry_run: bool, source: str = SOURCE) -> grpc.RpcError | None:
    request = api_pb2.ApplyRequest(object_json=raw, source=source, dry_run=dry_run)
    error = refusal(lambda: api.stub.Apply(request, timeout=RPC_TIMEOUT))
    event(f"Apply: {'OK' if error is None else error.code().name}")
    return error


def assert_apply_refusal_is_clear(error: grpc.RpcError, document: Any, source: str = SOURCE) -> None:
    """Names the object or field, or (a body that is no JSON) the file it came from."""
    details = error.details() or ""
    assert names_the_object_or_field(details, document) or shorten(source)[:40] in details, details


# --- manifests, dry run ------------------------------------------------------------------------------


def pod_requesting(cpu: str, priority_class: str = "high-priority") -> dict[str, Any]:
    """The well-formed pod with one container asking for `cpu`: 3500m of high priority fits once
    the seeded low-priority pod goes (PostFilter nominates n1); 7Ei (just under 2^63) of low priority
    fits nowhere, and no preemption helps (the high-priority quota would refuse 7Ei at admission)."""
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"] = [{"name": "main", "resources": {"requests": {"cpu": cpu}}}]
    for field in ("initContainers", "overhead", "affinity", "topologySpreadConstraints", "priority"):
        del pod["spec"][field]  # the affinity to app=web would go with the victim
    pod["spec"]["priorityClassName"] = priority_class
    return pod


@pytest.mark.usefixtures("seeded")  # the state to compare with, taken before the first request
@settings(FUZZ, max_examples=250)
@given(hostile_manifests())
@example(materialize(POD))  # the well-formed pod: it fits n1
@example(pod_requesting("3500m"))
@example(pod_requesting("7Ei", "low-priority"))
@example({**POD, "metadata": {"name": "\ud800"}})
@example({**POD, "spec": Nested(5000)})
@example({**POD, "metadata": {"name": "x" * 20_000}})
@example({**QUOTA, "spec": {"hard": {"cpu": "9" * 5000}}})
@example({**PRIORITY_CLASS, "value": float("nan")})
def test_hostile_manifests_in_a_dry_run_get_a_clear_answer_and_store_nothing(api: Api, manifest: Any) -> None:
    error = apply(api, json_bytes(manifest), dry_run=True)
    if error is not None:
        assert_apply_refusal_is_clear(error, materialize(manifest))


def test_dry_runs_stored_nothing_and_every_service_is_up(api: Api, seeded: Any, fuzz_stack: ServiceStack) -> None:
    """Runs after the dry runs above (file order): they left the seeded cluster as it was."""
    assert cluster_state(api) == seeded
    assert_services_alive(fuzz_stack)


# --- requests that are surely refused, for real --------------------------------------------------------


def refused_by_the_decoder(document: Any) -> bool:
    try:
        decode_object(document)
    except ApiError:
        return True
    return False


ADMISSION_REFUSALS: list[dict[str, Any]] = [
    # Each decodes, and admission refuses it in the seeded cluster.
    {**POD, "spec": {**POD["spec"], "priorityClassName": "no-such-class"}},
    {**POD, "spec": {**POD["spec"], "priority": 7}},
    {**POD, "metadata": {"name": "agent"}, "spec": {**POD["spec"], "priorityClassName": "system-cluster-critical"}},
    {**PRIORITY_CLASS, "metadata": {"name": "system-foo"}},
    {**PRIORITY_CLASS, "metadata": {"name": "system-node-critical"}, "value": 5},
    {**PRIORITY_CLASS, "value": 2_000_000_000},
    {**PRIORITY_CLASS, "globalDefault": True},
    {**SEED[0], "value": 5},  # the value of a stored class is immutable
    {**SEED[5], "spec": {**SEED[5]["spec"], "priorityClassName": "high-priority"}},  # so is a stored pod's spec
    {**SEED[4], "spec": {**SEED[4]["spec"], "scopes": ["NotBestEffort"]}},  # and a stored quota's scopes
]


@settings(FUZZ, max_examples=100)
@given(
    st.binary(max_size=48)
    | st.text(max_size=48).map(str.encode)
    | JSON_VALUES.map(lambda value: json_bytes(value))
    | hostile_manifests().filter(refused_by_the_decoder).map(json_bytes)
    | st.sampled_from(ADMISSION_REFUSALS).map(json_bytes),
    st.sampled_from([SOURCE, "-", "", "x" * 20_000, "../../etc/passwd"]) | st.text(max_size=16),
)
@example(b"[" * 5000, SOURCE)
@example(b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "\\ud800"}}', SOURCE)
@example(b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": NaN}}', SOURCE)
@example(b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1e400}}', SOURCE)
@example(json_bytes({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": Nested(900)}), SOURCE)
@example(json_bytes({"apiVersion": "v1", "kind": "x" * 20_000, "metadata": {"name": "p"}}), SOURCE)
@example(b"{", "x" * 20_000)
@example(b"\xff", "\u00fc" * 5000)
def test_surely_refused_writes_get_a_clear_error_and_change_nothing(api: Api, raw: bytes, source: str) -> None:
    before = cluster_state(api)
    error = apply(api, raw, dry_run=False, source=source)
    assert error is not None, f"accepted: {raw[:200]!r}"
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        document = None
    assert_apply_refusal_is_clear(error, document, source)
    assert cluster_state(api) == before, f"{error.details()} changed the cluster"


# --- reads, deletes and watches with any words ---------------------------------------------------------

WORDS = st.sampled_from(RESOURCE_WORDS) | st.sampled_from(["", "Pod", "pod ", "events", "../pods", "x" * 10_000])
WORDS |= st.text(max_size=12)
# Protobuf strings are UTF-8: a client cannot send a lone surrogate in a request field.
SENDABLE_NAMES = [name for name in HOSTILE_NAMES if not any("\ud800" <= char <= "\udfff" for char in name)]
NAMES = st.sampled_from(SENDABLE_NAMES) | st.text(max_size=12) | st.sampled_from(["../x", "a/b", "%2e%2e", "\x00"])
NAMESPACES = st.sampled_from(["", "default", "kube-system", "../x", "ünï", "x" * 10_000, "A_B"]) | st.text(max_size=8)
# Names of stored objects a Delete must not hit (it would succeed, and change the cluster).
STORED = {document["metadata"]["name"] for document in SEED}


def assert_names_what_was_asked(error: grpc.RpcError, word: str, name: str) -> None:
    """An unknown resource word is quoted; otherwise the resource and the name are named."""
    details = error.details() or ""
    found = find_resource_type(word)
    if found is None:
        assert f'resource type "{shorten(word)[:40]}' in details, details
    else:
        assert found.plural in details and f'"{shorten(name)[:40]}' in details, details


@settings(FUZZ, max_examples=120)
@given(
    WORDS, NAMES.filter(lambda name: name not in STORED), NAMESPACES, st.booleans(), st.integers(-(2**63), 2**63 - 1)
)
@example("priorityclasses", "system-node-critical", "", False, 0)  # a built-in class: Forbidden
@example("pods", "x" * 20_000, "default", False, -1)
@example("x" * 20_000, "p", "default", False, 0)
def test_reads_and_deletes_of_anything_get_a_clear_answer_and_change_nothing(
    api: Api, word: str, name: str, namespace: str, everywhere: bool, grace: int
) -> None:
    before = cluster_state(api)
    got = refusal(
        lambda: api.stub.Get(
            api_pb2.GetRequest(resource=word, name=name, namespace=namespace, all_namespaces=everywhere),
            timeout=RPC_TIMEOUT,
        )
    )
    if got is not None:
        assert_names_what_was_asked(got, word, name)
    refusal(
        lambda: api.stub.ListEvents(
            api_pb2.ListEventsRequest(namespace=namespace, all_namespaces=everywhere, involved_uid=name),
            timeout=RPC_TIMEOUT,
        )
    )
    deleted = refusal(
        lambda: api.stub.Delete(
            api_pb2.DeleteRequest(resource=word, name=name, namespace=namespace, grace_period_seconds=grace),
            timeout=RPC_TIMEOUT,
        )
    )
    assert deleted is not None, f"deleted {word}/{name} in {namespace!r}"
    assert_names_what_was_asked(deleted, word, name)
    assert cluster_state(api) == before


@settings(FUZZ, max_examples=30)
@given(
    st.lists(st.sampled_from(KINDS) | WORDS, max_size=3),
    st.booleans(),
    NAMESPACES,
    st.integers(-(2**63), 2**63 - 1),
)
@example(["Pod", "x" * 20_000], False, "", 0)
@example([f"Kind{index}" for index in range(2000)], True, "", 0)
def test_watches_of_anything_stream_or_get_a_clear_error(
    api: Api, kinds: list[str], events: bool, namespace: str, since: int
) -> None:
    request = api_pb2.WatchRequest(
        kinds=kinds, include_events=events, namespace=namespace, since_resource_version=since
    )
    accepted = set(kinds) <= set(KINDS) and since >= 0
    # An accepted watch streams until the client hangs up; a refused one must be refused, not hang.
    try:
        for _ in api.stub.Watch(request, timeout=WATCH_WINDOW if accepted else RPC_TIMEOUT):
            pass
    except grpc.RpcError as error:
        if accepted:
            assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED, f"{error.code()}: {error.details()}"
            return
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, f"{error.code()}: {error.details()}"
        expected = "unknown kinds" if not set(kinds) <= set(KINDS) else "since_resource_version: Invalid value"
        assert expected in (error.details() or ""), error.details()
        return
    pytest.fail("a watch ended on its own")


def test_after_all_that_the_cluster_is_as_seeded_and_every_service_is_up(
    api: Api, seeded: Any, fuzz_stack: ServiceStack
) -> None:
    assert cluster_state(api) == seeded
    assert_services_alive(fuzz_stack)
