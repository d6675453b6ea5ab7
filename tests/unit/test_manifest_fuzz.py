"""Hostile input at the front door, without services: whatever a client sends, decoding
(`decode_object`), admission (`admit_without_storing`, `Cluster.apply`) and the JSON reader
(`parse_json`) answer with an ApiError (ValueError for the reader) that names the object or the
field, or accept the object whole; a refusal changes nothing, and an accepted object survives the
trip through the log (encode, JSON, decode), which every replica depends on.

The live twin is tests/services/test_api_fuzz.py; this one runs many more examples. Examples are
derandomized and there is no example database, so a run is the same everywhere."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hostile_manifests import (
    BASES,
    FIELD_NAMES,
    FUZZ,
    JSON_VALUES,
    NODE,
    PDB,
    PLACED_POD,
    POD,
    QUOTA,
    SEED,
    Nested,
    at,
    hostile_manifests,
    materialize,
    names_the_object_or_field,
)
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from podsched.api.documents import MAX_DEPTH, load_documents, parse_json
from podsched.api.errors import MAX_MESSAGE_BYTES, ApiError
from podsched.api.manifests import decode_object, encode_object
from podsched.cluster.dry_run import admit_without_storing
from podsched.cluster.state import Cluster


def seeded_cluster() -> Cluster:
    cluster = Cluster(lambda: 1_767_225_600.0)
    for document in SEED:
        cluster.apply(decode_object(document))
    return cluster


def cluster_state(cluster: Cluster) -> Any:
    """Everything a client can read back, as JSON text (resource versions and events included)."""
    objects = [
        *cluster.pods.values(),
        *cluster.nodes.values(),
        *cluster.priority_classes.values(),
        *cluster.pdbs.values(),
        *cluster.resource_quotas.values(),
        *(w for kind in cluster.workloads.values() for w in kind.values()),
    ]
    return (
        sorted(json.dumps(encode_object(obj), sort_keys=True) for obj in objects),
        cluster.resource_version,
        [(e.reason, e.message, e.count) for e in cluster.events],
    )


def assert_names_the_object_or_field(error: ApiError, document: Any) -> None:
    message = error.kubectl_message()
    assert message.strip(), "an empty error message"
    assert len(message.encode()) <= 3 * MAX_MESSAGE_BYTES, f"a message of {len(message)} characters"
    assert names_the_object_or_field(message, document), message


def admit_or_refuse(cluster: Cluster, document: Any) -> bool:
    """Decode and admit `document` as the queue (dry run) and the binder (apply) do. True if
    stored. Only ApiError may come out; a refusal leaves the cluster as it was."""
    document = materialize(document)
    before = cluster_state(cluster)
    try:
        obj = decode_object(document)
        dry_action, _ = admit_without_storing(cluster, obj)
        assert cluster_state(cluster) == before, "a dry run changed the cluster"
        action, stored = cluster.apply(obj)
    except ApiError as error:
        assert_names_the_object_or_field(error, document)
        assert cluster_state(cluster) == before, f"a refused object changed the cluster: {error}"
        event(f"refused: {error.reason or 'plain'}")
        return False
    event(f"{obj.kind} {action}")
    assert action == dry_action, f"the dry run said {dry_action}, apply did {action}"
    # What the binder logs is what every replica decodes: it must decode again, to the same object
    # (a PDB's or a quota's status aside: the system computes it, decoding drops it).
    logged = parse_json(json.dumps(encode_object(stored)))
    replayed = encode_object(decode_object(logged))
    if stored.kind in ("PodDisruptionBudget", "ResourceQuota"):
        logged.pop("status", None)
        replayed.pop("status", None)
    assert replayed == logged
    return True


@settings(FUZZ, max_examples=600)
@given(JSON_VALUES | st.dictionaries(st.sampled_from(FIELD_NAMES), JSON_VALUES, max_size=6))
@example([])
@example("Pod")
@example({"apiVersion": "v1", "kind": "Pod", "metadata": Nested(MAX_DEPTH + 5)})
@example({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": Nested(5000)})
@example({"apiVersion": "v1", "kind": "\ud800", "metadata": {"name": "a\udfff"}})
def test_any_json_value_is_decoded_or_refused_with_an_api_error(document: Any) -> None:
    document = materialize(document)
    try:
        decode_object(document)
    except ApiError as error:
        assert_names_the_object_or_field(error, document)


CPU_REQUEST = ("spec", "containers", 0, "resources", "requests", "cpu")
SIDECAR_CPU_REQUEST = ("spec", "containers", 1, "resources", "requests", "cpu")  # no limit to exceed
HUGEPAGES_LIMIT = ("spec", "containers", 0, "resources", "limits", "hugepages-" + "9" * 5000)
TRANSITION_TIME = ("status", "conditions", 0, "lastTransitionTime")


def with_value(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(base)
    at(document, path[:-1])[path[-1]] = value
    return document


@settings(FUZZ, max_examples=1500)
@given(hostile_manifests(), st.booleans())
# Regressions, each found by this test or its live twin; what each did before the fix.
@example(with_value(POD, ("metadata", "resourceVersion"), "²"), False)  # int("²"): ValueError
@example(with_value(POD, ("metadata", "resourceVersion"), "9" * 5000), False)  # int(): more than 4300 digits
@example(with_value(POD, CPU_REQUEST, "9" * 5000), False)  # Fraction(): more than 4300 digits
@example(with_value(POD, CPU_REQUEST, "1e" + "0" * 5000 + "1"), False)  # int() of the exponent
@example(with_value(POD, HUGEPAGES_LIMIT, "1"), False)  # the page size parsed from the name: same
@example(with_value(QUOTA, ("spec", "hard", "cpu"), "9" * 5000), False)  # same, in spec.hard
@example(with_value(PDB, ("spec", "minAvailable"), "5%\n"), False)  # `$` matched before "\n": int("5%")
@example(with_value(PDB, ("spec", "minAvailable"), "9" * 5000 + "%"), False)  # int(): 5000 digits
@example(with_value(POD, ("metadata", "name"), "\ud800"), False)  # a message gRPC cannot encode: a hung RPC
@example(with_value(POD, ("metadata", "name"), "x" * 20_000), False)  # a message beyond gRPC's 8 KiB header
@example(with_value(POD, TRANSITION_TIME, "9999-12-31T23:59:59-23:00"), False)  # year 10000 on encode
@example(with_value(POD, TRANSITION_TIME, "0001-01-01T00:00:00+01:00"), False)  # year 0 on encode
@example(with_value(PLACED_POD, ("status", "startTime"), "0999-01-01T00:00:00Z"), False)  # logged as "999-": no replay
@example(with_value(POD, ("spec", "x"), Nested(5000)), False)  # deepcopy: RecursionError
def test_hostile_manifests_are_refused_with_an_api_error_and_change_nothing(
    manifest: dict[str, Any], base_stored_first: bool
) -> None:
    """With the unmutated base stored first, the same manifest is an update (immutable fields,
    pod updates, quota scopes); without, a create (admission, quota, placed pods)."""
    cluster = seeded_cluster()
    if base_stored_first:
        base = next((b for b in BASES if b["kind"] == manifest.get("kind") and b is not PLACED_POD), POD)
        assert admit_or_refuse(cluster, base)
    admit_or_refuse(cluster, manifest)


REFUSED_AS_UPSTREAM_REFUSES = [
    # Each was accepted before: Python's `$`, `\\d` and `isdigit()` are not Go's, and a JSON reader
    # that takes NaN and reads 1e400 as infinity is not Go's either.
    (POD, ("metadata", "name"), "abc\n", "metadata.name"),
    (POD, ("spec", "nodeSelector"), {"zone": "a\n"}, "spec.nodeSelector"),
    (POD, SIDECAR_CPU_REQUEST, "\u0661\u0662", "containers[1].resources.requests[cpu]"),
    (POD, SIDECAR_CPU_REQUEST, "999999999999999Ei", "containers[1].resources.requests[cpu]"),
    (NODE, ("status", "capacity", "cpu"), "1e30", "status.capacity.cpu"),
    (POD, ("metadata", "resourceVersion"), "\u0661", "metadata.resourceVersion"),
    (POD, TRANSITION_TIME, "2026-01-01T00:00:00+99:00", "lastTransitionTime"),
    (POD, TRANSITION_TIME, "\u0662026-01-01T00:00:00Z", "lastTransitionTime"),
    (POD, ("spec", "x"), float("nan"), "spec.x"),
    (PDB, ("spec", "minAvailable"), "50%\n", "spec.minAvailable"),
]


@pytest.mark.parametrize(
    ("base", "path", "value", "field"),
    REFUSED_AS_UPSTREAM_REFUSES,
    ids=[
        f"{base['kind']} {'.'.join(map(str, path))}={value!r}" for base, path, value, _ in REFUSED_AS_UPSTREAM_REFUSES
    ],
)
def test_values_an_api_server_refuses_are_refused_naming_the_field(
    base: dict[str, Any], path: tuple[Any, ...], value: Any, field: str
) -> None:
    with pytest.raises(ApiError) as refused:
        decode_object(with_value(base, path, value))
    assert field in refused.value.kubectl_message()


def test_the_json_reader_refuses_what_go_refuses() -> None:
    for text in ("NaN", "[Infinity]", '{"a": -Infinity}', "[1e400]"):
        with pytest.raises(ValueError):
            parse_json(text)
    assert parse_json('"\\ud800x"') == "\ufffdx"  # a lone surrogate becomes U+FFFD, as in Go


@settings(FUZZ, max_examples=400)
@given(
    st.binary(max_size=64)
    | st.text(max_size=64).map(str.encode)
    | JSON_VALUES.map(lambda v: json.dumps(v).encode())
    | st.sampled_from([b"[" * 5000, b'{"a":' * 2000, b"NaN", b"[1e400]", b'"\\ud800"', b"1" * 5000, b"\xff"])
)
def test_the_json_reader_returns_a_plain_document_or_a_value_error(raw: bytes) -> None:
    try:
        document = parse_json(raw)
    except ValueError as error:
        assert str(error)
        return
    json.dumps(document, ensure_ascii=False, allow_nan=False).encode()  # valid Unicode, finite, not too deep


@settings(FUZZ, max_examples=300)
@given(
    st.text(max_size=200)
    | JSON_VALUES.map(json.dumps)
    | st.sampled_from(["[" * 5000, "a:\n" + "  - " * 3000 + "x", "- " * 3000, "{a: [" * 2000, '"\\ud800"', "---\n" * 3])
)
def test_files_of_any_text_are_read_or_refused_with_an_api_error(text: str) -> None:
    try:
        documents = load_documents(text, "fuzz.yaml")
    except ApiError as error:
        assert "fuzz.yaml" in error.kubectl_message()
        return
    for document in documents:
        try:
            decode_object(document)
        except ApiError as error:
            assert_names_the_object_or_field(error, document)
