"""Replicas decode the binder's pod records without validating them again (`decode_recorded_pod`,
through `decode_change`): on every record the binder can write (the JSON `encode_json` renders of a
pod `decode_object` admitted, in any state the binder lays over it) it must give exactly what
`decode_object` gives: the same typed pod and the same source, key order included."""

from __future__ import annotations

import json
from typing import Any

from hostile_manifests import FUZZ, hostile_manifests, materialize
from hypothesis import given, settings
from hypothesis import strategies as st
from manifest_strategies import LABEL, MOMENT, POD_DOCS

from podsched.api import json_text
from podsched.api.codecs.pod import clear_pod_spec_cache, decode_recorded_pod
from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object, encode_json
from podsched.api.types import ObjectMeta, OwnerReference, Pod, PodCondition
from podsched.cluster.store import ADDED, MODIFIED
from podsched_service.codec import change_message, decode_change

# A state the binder lays over an admitted pod: placement, nomination, phase, conditions, and the
# metadata the system sets (uid, version, timestamps, owners, finalizers, a grace period).
OWNER = st.builds(
    OwnerReference,
    st.just("apps/v1"),
    st.sampled_from(["ReplicaSet", "Job"]),
    LABEL,
    LABEL,
    st.booleans(),
    st.booleans(),
)
CONDITION = st.builds(
    PodCondition,
    st.sampled_from(["PodScheduled", "DisruptionTarget"]),
    st.sampled_from(["True", "False"]),
    st.sampled_from(["", "Unschedulable", "PreemptionByScheduler"]),
    st.sampled_from(["", "0/3 nodes are available: 3 Insufficient cpu.", "Ünïcode message"]),
    st.one_of(st.none(), MOMENT),
)
BINDER_STATE = st.fixed_dictionaries(
    {
        "node": st.one_of(st.just(""), LABEL),
        "nominated": st.one_of(st.just(""), LABEL),
        "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
        "started": st.one_of(st.none(), MOMENT),
        "conditions": st.lists(CONDITION, max_size=2),
        "reason": st.sampled_from(["", "Evicted"]),
        "uid": st.uuids().map(str),
        "version": st.integers(1, 2**40),
        "created": MOMENT,
        "deleted": st.one_of(st.none(), MOMENT),
        "grace": st.one_of(st.none(), st.integers(0, 3600)),
        "generate_name": st.one_of(st.just(""), LABEL.map(lambda name: name[:40] + "-")),
        "annotations": st.dictionaries(LABEL, st.text(max_size=8), max_size=2),
        "owners": st.lists(OWNER, max_size=2),
        "finalizers": st.lists(st.just("batch.kubernetes.io/job-tracking"), max_size=1),
    }
)


def with_binder_state(pod: Pod, state: dict[str, Any]) -> Pod:
    pod.spec.node_name = state["node"]
    pod.status.nominated_node_name = state["nominated"]
    pod.status.phase = state["phase"]
    pod.status.start_time = state["started"]
    pod.status.conditions = tuple(state["conditions"])
    pod.status.reason = state["reason"]
    pod.status.message = "The node was low on resource: memory." if state["reason"] else ""
    meta: ObjectMeta = pod.metadata
    meta.uid, meta.resource_version, meta.creation_timestamp = state["uid"], state["version"], state["created"]
    meta.deletion_timestamp, meta.deletion_grace_period_seconds = state["deleted"], state["grace"]
    meta.generate_name = state["generate_name"]
    meta.annotations = dict(state["annotations"])
    meta.owner_references = tuple(state["owners"])
    meta.finalizers = tuple(state["finalizers"])
    return pod


def assert_decoded_as_decode_object(record: bytes) -> None:
    """Both decoders on fresh parses of one record; the recorded decoding must hit the spec cache
    once `decode_object` has filled it."""
    clear_pod_spec_cache()
    miss = json_text.loads(record)
    assert decode_recorded_pod(miss) is None
    assert json.dumps(miss) == json.dumps(json_text.loads(record))  # a miss changes nothing
    validated = decode_object(json_text.loads(record), owned=True)
    trusted = decode_recorded_pod(json_text.loads(record))
    assert trusted is not None
    assert trusted == validated
    assert json.dumps(trusted.source) == json.dumps(validated.source)  # key order too
    # Nothing mutable is shared with the cached spec or with another decoding.
    again = decode_recorded_pod(json_text.loads(record))
    assert again is not None and again == trusted
    again.spec.node_selector["changed"] = "yes"
    again.metadata.labels["changed"] = "yes"
    assert "changed" not in trusted.spec.node_selector and "changed" not in trusted.metadata.labels


@settings(max_examples=300, deadline=None)
@given(doc=POD_DOCS, state=BINDER_STATE)
def test_a_pod_record_in_any_state_the_binder_writes_decodes_as_decode_object_decodes_it(
    doc: dict[str, Any], state: dict[str, Any]
) -> None:
    pod = decode_object(doc)
    assert isinstance(pod, Pod)
    assert_decoded_as_decode_object(encode_json(pod))  # as created
    assert_decoded_as_decode_object(encode_json(with_binder_state(pod, state)))


@settings(FUZZ, max_examples=600)
@given(hostile_manifests())
def test_any_pod_decoding_admits_decodes_from_its_record_as_decode_object_decodes_it(document: dict[str, Any]) -> None:
    try:
        obj = decode_object(materialize(document))
    except ApiError:
        return
    if isinstance(obj, Pod):
        assert_decoded_as_decode_object(encode_json(obj))


@settings(max_examples=100, deadline=None)
@given(doc=POD_DOCS, state=BINDER_STATE, created=st.booleans())
def test_a_replica_decodes_the_binders_pod_change_as_decode_object_decodes_its_json(
    doc: dict[str, Any], state: dict[str, Any], created: bool
) -> None:
    pod = with_binder_state(decode_object(doc), state)  # type: ignore[arg-type]
    change_type = ADDED if created else MODIFIED
    record = change_message(change_type, pod, "podsched-binder", 1_764_000_000.5).SerializeToString()
    clear_pod_spec_cache()
    cold = decode_change(record)  # the first pod of a spec goes through decode_object
    warm = decode_change(record)
    expected = decode_object(json_text.loads(encode_json(pod)), owned=True)
    assert cold == warm == (change_type, expected, state["version"])
    assert json.dumps(warm[1].source) == json.dumps(expected.source)
