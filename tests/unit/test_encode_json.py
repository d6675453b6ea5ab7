"""`encode_json` renders a record's object_json without deep-copying the object's manifest: it must
write exactly `json.dumps(encode_object(obj))` (compact) and leave the object as it was, for every
kind and every object decoding admits, the state the binder lays over a pod included."""

from __future__ import annotations

import copy
import json
from typing import Any

from hostile_manifests import FUZZ, hostile_manifests, materialize
from hypothesis import given, settings
from hypothesis import strategies as st
from manifest_strategies import LABEL, MOMENT, POD_DOCS

from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object, encode_json, encode_object
from podsched.api.types import ApiObject, Pod, PodCondition


def assert_rendered_as_encode_object(obj: ApiObject) -> None:
    before = copy.deepcopy(obj)
    text = encode_json(obj)
    assert text == json.dumps(encode_object(obj), separators=(",", ":")).encode()
    assert obj == before
    assert json.dumps(obj.source) == json.dumps(before.source)  # key order too


@settings(max_examples=300, deadline=None)
@given(doc=POD_DOCS, node=st.one_of(st.just(""), LABEL), moment=MOMENT, nominated=st.one_of(st.just(""), LABEL))
def test_a_pod_in_any_state_the_binder_writes_is_rendered_as_encode_object_renders_it(
    doc: dict[str, Any], node: str, moment: float, nominated: str
) -> None:
    pod = decode_object(doc)
    assert isinstance(pod, Pod)
    assert_rendered_as_encode_object(pod)
    pod.spec.node_name = node
    pod.status.nominated_node_name = nominated
    pod.status.phase = "Running" if node else "Pending"
    pod.status.start_time = moment if node else None
    pod.status.conditions = (PodCondition("PodScheduled", "False", "Unschedulable", "0/3 nodes", moment),)
    pod.metadata.deletion_timestamp = moment
    pod.metadata.resource_version = 12
    assert_rendered_as_encode_object(pod)


@settings(FUZZ, max_examples=600)
@given(hostile_manifests())
def test_any_object_decoding_admits_is_rendered_as_encode_object_renders_it(document: dict[str, Any]) -> None:
    try:
        obj = decode_object(materialize(document))
    except ApiError:
        return
    assert_rendered_as_encode_object(obj)
