"""Decoding a pod spec seen before comes from `_POD_SPEC_CACHE`: it must be indistinguishable from
decoding it afresh, for well-formed pods (as users write them, and as the binder writes them to the
log, defaulted and placed) and for hostile ones, and no two decoded pods may share anything mutable."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hostile_manifests import FUZZ, POD, hostile_manifests, materialize
from hypothesis import given, settings
from hypothesis import strategies as st
from manifest_strategies import LABEL, POD_DOCS

from podsched.api.codecs.pod import clear_pod_spec_cache
from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object, encode_object
from podsched.api.types import Pod


def outcome(document: Any) -> tuple[str, Any]:
    """What decoding gives: the object, its source (as text: key order included), or the refusal."""
    try:
        obj = decode_object(document)  # decoding copies: `document` stays as it is
    except ApiError as error:
        return "refused", error.kubectl_message()
    return json.dumps(obj.source), obj


def cold_then_warm(document: Any) -> tuple[tuple[str, Any], tuple[str, Any]]:
    clear_pod_spec_cache()
    cold = outcome(document)
    return cold, outcome(document)


@settings(max_examples=200, deadline=None)
@given(doc=POD_DOCS, node=st.one_of(st.none(), st.just(""), LABEL))
def test_a_spec_decoded_again_equals_its_first_decoding(doc: dict[str, Any], node: str | None) -> None:
    if node is not None:
        doc["spec"]["nodeName"] = node
    cold, warm = cold_then_warm(doc)
    assert warm == cold
    # The form the binder writes to the log: defaulted, then placed on another node.
    assert cold[0] != "refused"
    stored = cold[1]
    assert isinstance(stored, Pod)
    stored.spec.node_name = "elsewhere"
    record = encode_object(stored)
    cold, warm = cold_then_warm(record)
    assert warm == cold
    assert isinstance(warm[1], Pod) and warm[1].spec.node_name == "elsewhere"


@settings(FUZZ, max_examples=600)
@given(hostile_manifests())
def test_a_hostile_manifest_decodes_the_same_from_a_warm_cache(document: dict[str, Any]) -> None:
    cold, warm = cold_then_warm(materialize(document))
    assert warm == cold


def test_a_cached_spec_takes_the_defaults_and_the_node_of_the_pod_being_decoded() -> None:
    clear_pod_spec_cache()
    user = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": copy.deepcopy(POD["spec"])}
    first = decode_object(copy.deepcopy(user))
    placed = copy.deepcopy(user)
    placed["metadata"]["name"] = "b"
    placed["spec"]["nodeName"] = "node-1"
    second = decode_object(placed)
    assert isinstance(first, Pod) and isinstance(second, Pod)
    assert (first.spec.node_name, second.spec.node_name) == ("", "node-1")
    assert second.source["spec"] == {**first.source["spec"], "nodeName": "node-1"}
    assert second.source["spec"]["terminationGracePeriodSeconds"] == 30  # defaulted on the cache hit too


def test_pods_decoded_from_one_cached_spec_share_nothing_mutable() -> None:
    clear_pod_spec_cache()
    doc = copy.deepcopy(POD)
    doc["spec"]["nodeSelector"] = {"zone": "a"}
    first, second = decode_object(copy.deepcopy(doc)), decode_object(copy.deepcopy(doc))
    assert isinstance(first, Pod) and isinstance(second, Pod)
    second.spec.node_selector["zone"] = "b"
    second.spec.node_name = "node-2"
    second.source["spec"]["nodeSelector"]["zone"] = "b"
    assert first.spec.node_selector == {"zone": "a"} and first.spec.node_name == ""
    third = decode_object(copy.deepcopy(doc))
    assert isinstance(third, Pod)
    assert third.spec.node_selector == {"zone": "a"} and third.source["spec"]["nodeSelector"] == {"zone": "a"}


def test_an_invalid_spec_is_refused_every_time() -> None:
    clear_pod_spec_cache()
    doc = copy.deepcopy(POD)
    doc["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "-1"}}
    first, second = outcome(doc), outcome(doc)
    assert first[0] == "refused"
    assert second == first


@pytest.mark.parametrize(
    ("one", "other"),
    [
        pytest.param(1, 1.0, id="an integer and the float equal to it"),
        pytest.param(0.0, -0.0, id="zero and negative zero"),
        pytest.param(1, True, id="one and true"),
        pytest.param(0, None, id="zero and null"),
        pytest.param("é", "\\u00e9", id="a non-ASCII character and the text of its escape"),
        pytest.param(1e-05, "1e-05", id="a small float and its text"),
        pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, id="the same members in another order"),
    ],
)
def test_specs_that_differ_only_in_what_a_json_writer_could_conflate_have_entries_of_their_own(
    one: Any, other: Any
) -> None:
    """The cache's key is orjson's text of the spec (`json_text.identity_text`), not `json`'s: two
    specs differing in a value's type, sign, escaping or key order never share an entry, so the
    second decodes (its defaulted spec and its source included) as it does from a cold cache."""
    docs = []
    for value in (one, other):
        doc = copy.deepcopy(POD)
        doc["spec"]["x-extension"] = value  # kept in the source, defaulted spec and all
        doc["spec"].pop("terminationGracePeriodSeconds", None)  # so the entry keeps a defaulted text
        docs.append(doc)
    clear_pod_spec_cache()
    expected = outcome(copy.deepcopy(docs[1]))
    clear_pod_spec_cache()
    outcome(copy.deepcopy(docs[0]))
    assert outcome(copy.deepcopy(docs[1])) == expected
    assert repr(expected[1].source["spec"]["x-extension"]) == repr(other)
