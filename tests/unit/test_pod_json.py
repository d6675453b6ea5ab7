"""A pod's record JSON is put together from its spec's rendering kept from the pod's previous
record (`podsched.api.codecs.pod_json`): it must be byte for byte what
`json.dumps(encode_object(pod), separators=(",", ":"))` writes, for any pod decoding admits, in any
state the binder lays over it, whether the rendering is kept (warm) or not (cold)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hostile_manifests import FUZZ, hostile_manifests, materialize
from hypothesis import given, settings
from hypothesis import strategies as st
from manifest_strategies import LABEL, MOMENT, POD_CONDITIONS, POD_DOCS

from podsched.api.codecs.pod_json import PodJsonRenderer, clear_pod_json_cache
from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object, encode_json, encode_object
from podsched.api.types import Pod, PodCondition, PodStatus

# Manifests beyond POD_DOCS: a nodeName written in the manifest (kept in its place, or dropped when
# the pod is not bound), top-level members encode_object does not own (echoed in order), a status
# with fields podsched does not model, and the renderer's own placeholder texts in a value.
PLACEHOLDER_TEXTS = st.sampled_from(["\x00podsched nodeName\x00", "\x00podsched spec\x00", "plain"])


@st.composite
def pod_manifests(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = draw(POD_DOCS)
    spec = doc["spec"]
    if draw(st.booleans()):
        items = list(spec.items())
        items.insert(draw(st.integers(0, len(items))), ("nodeName", draw(LABEL)))
        doc["spec"] = dict(items)
    if draw(st.booleans()):
        doc["status"] = {"hostIP": draw(LABEL), "phase": "Pending", "qosClass": draw(PLACEHOLDER_TEXTS)}
    if draw(st.booleans()):
        # Before "spec" or after "status": encode_object puts spec and status last either way.
        doc = {"extra": {"spec": draw(PLACEHOLDER_TEXTS), "nodeName": draw(PLACEHOLDER_TEXTS)}, **doc}
    if draw(st.booleans()):
        doc["spec"]["unmodelled"] = {"nodeName": draw(PLACEHOLDER_TEXTS)}
    if draw(st.booleans()):
        doc["metadata"]["annotations"] = {"note": draw(PLACEHOLDER_TEXTS)}
    return doc


def reference(pod: Pod) -> bytes:
    return json.dumps(encode_object(pod), separators=(",", ":")).encode()


def assert_rendered_as_encode_object(pod: Pod) -> None:
    assert encode_json(pod) == reference(pod)


@settings(max_examples=300, deadline=None)
@given(
    doc=pod_manifests(),
    nodes=st.lists(st.one_of(st.just(""), LABEL), min_size=1, max_size=3),
    moment=MOMENT,
    nominated=st.one_of(st.just(""), LABEL),
    conditions=POD_CONDITIONS,
    priority=st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    resource_version=st.integers(1, 10**9),
)
def test_every_record_of_a_pod_is_rendered_as_encode_object_renders_it_cold_and_warm(
    doc: dict[str, Any],
    nodes: list[str],
    moment: float,
    nominated: str,
    conditions: list[PodCondition],
    priority: int | None,
    resource_version: int,
) -> None:
    clear_pod_json_cache()
    pod = decode_object(doc)
    assert isinstance(pod, Pod)
    versions = [pod]
    # As the binder writes them: each version a `replace` of the last, sharing its manifest.
    for node in nodes:  # bound (or a nodeName cleared), and started
        pod = replace(
            pod,
            metadata=replace(pod.metadata, resource_version=resource_version),
            spec=replace(pod.spec, node_name=node),
            status=replace(pod.status, phase="Running" if node else "Pending", start_time=moment if node else None),
        )
        versions.append(pod)
    pod = replace(pod, status=PodStatus("Pending", nominated, None, tuple(conditions)))  # a failed attempt
    versions.append(pod)
    pod = replace(pod, metadata=replace(pod.metadata, deletion_timestamp=moment, deletion_grace_period_seconds=0))
    versions.append(pod)
    pod = replace(pod, spec=replace(pod.spec, priority=priority, preemption_policy=None))  # another spec
    versions.append(pod)
    for version in versions:  # warm: each version after the one before it
        assert_rendered_as_encode_object(version)
    for version in reversed(versions):  # and in any order, cold first
        clear_pod_json_cache()
        assert_rendered_as_encode_object(version)
        assert_rendered_as_encode_object(version)


@settings(max_examples=100, deadline=None)
@given(doc=pod_manifests(), selector=st.dictionaries(LABEL, LABEL, min_size=1, max_size=3), node=LABEL)
def test_a_spec_changed_in_place_is_rendered_again(doc: dict[str, Any], selector: dict[str, str], node: str) -> None:
    """The typed spec is not frozen: fields set in place, nodeSelector's items included, are seen."""
    clear_pod_json_cache()
    pod = decode_object(doc)
    assert isinstance(pod, Pod)
    assert_rendered_as_encode_object(pod)
    pod.spec.node_selector.clear()
    pod.spec.node_selector.update(selector)
    assert_rendered_as_encode_object(pod)
    pod.spec.node_name = node
    pod.spec.scheduler_name = "other-scheduler"
    assert_rendered_as_encode_object(pod)


@settings(FUZZ, max_examples=600)
@given(hostile_manifests(), LABEL)
def test_any_pod_decoding_admits_is_rendered_as_encode_object_renders_it(document: dict[str, Any], node: str) -> None:
    try:
        obj = decode_object(materialize(document))
    except ApiError:
        return
    if not isinstance(obj, Pod):
        return
    clear_pod_json_cache()
    assert_rendered_as_encode_object(obj)
    bound = replace(obj, spec=replace(obj.spec, node_name=node))
    assert_rendered_as_encode_object(bound)
    assert_rendered_as_encode_object(obj)


def test_the_renderer_keeps_only_its_newest_pods() -> None:
    renderer = PodJsonRenderer(kept_entries=2)
    spec = {"containers": [{"name": "app"}]}
    pods = [
        decode_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": spec})
        for i in range(5)
    ]
    for pod in pods:
        assert isinstance(pod, Pod)
        assert renderer.render(pod) == reference(pod)
    assert renderer.kept_sources() == [pods[3].source, pods[4].source]


def test_a_manifest_holding_the_placeholders_is_rendered_whole() -> None:
    renderer = PodJsonRenderer()
    pod = decode_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "extra": {"spec": "\x00podsched spec\x00"},
            "spec": {"containers": [{"name": "app"}], "unmodelled": {"nodeName": "\x00podsched nodeName\x00"}},
        }
    )
    assert isinstance(pod, Pod)
    for node in ("", "node-1"):
        version = replace(pod, spec=replace(pod.spec, node_name=node))
        assert renderer.render(version) == reference(version)
    assert renderer.kept_sources() == []
