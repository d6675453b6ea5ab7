"""A pod's JSON text, as `encode_json` writes it, from a rendering of its spec kept per pod.

Every change of a pod is a record carrying the whole pod's JSON (`object_json`, a public format),
and one pod's records differ in little: the metadata (resourceVersion, the deletion fields),
spec.nodeName and the status. The spec is most of the text and, nodeName apart, the same in every
record of the pod (the binder replaces a pod's spec only to bind it), so it is rendered once per pod,
with nodeName's place in it remembered; each record's text is then the rest of the pod (metadata,
status) rendered afresh with the spec's text spliced in, the node's name spliced into that.

The bytes are exactly `json_text.dumps(encode_object(pod))`'s: compact JSON of an object is its
members' JSON joined by commas inside braces, and `json_text.dumps` writes any part as `json.dumps`
does, so rendering the parts one by one and joining them changes nothing.
`tests/unit/test_pod_json.py` checks it with hypothesis on pods in any state, cold and warm.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import fields
from typing import Any

from podsched.api import json_text
from podsched.api.codecs.meta import encode_meta
from podsched.api.codecs.pod import overlay_pod_spec, overlay_pod_status
from podsched.api.types import Pod, PodSpec

_NODE_NAME_MEMBER = b'"nodeName":'
_SPEC_MEMBER = b'"spec":'
# Rendered in the place of nodeName's value, and of the whole spec, to find them in the text. A
# placeholder's member must occur exactly once in the text (a manifest could hold the same string),
# or the pod is rendered whole, as encode_object renders it.
_NODE_NAME_PLACEHOLDER = "\x00podsched nodeName\x00"
_NODE_NAME_PLACEHOLDER_MEMBER = _NODE_NAME_MEMBER + json_text.dumps(_NODE_NAME_PLACEHOLDER)
_SPEC_PLACEHOLDER = "\x00podsched spec\x00"
_SPEC_PLACEHOLDER_MEMBER = _SPEC_MEMBER + json_text.dumps(_SPEC_PLACEHOLDER)
# The top-level members encode_object writes itself; the manifest's others are echoed between the
# metadata and the spec, in the manifest's order.
_OWN_MEMBERS = ("apiVersion", "kind", "metadata", "spec", "status")

# The typed spec's fields other than nodeName and nodeSelector, compared by identity: they are
# immutable values (frozen dataclasses, tuples, strings, numbers), and a bind's `replace` keeps
# them. nodeSelector is the one mutable field: it is compared by its items, in order.
_IMMUTABLE_SPEC_FIELDS = tuple(f.name for f in fields(PodSpec) if f.name not in ("node_name", "node_selector"))
_immutable_spec_values = operator.attrgetter(*_IMMUTABLE_SPEC_FIELDS)

# A node's name is written into every pod bound to it: its JSON is kept, for as many nodes as the
# largest clusters scheduler_perf runs.
_string_text = functools.lru_cache(maxsize=16384)(json_text.dumps)

# Kept renderings, by id(pod.source) (each entry holds its source, so the id is not reused while the
# entry lives). A pod's records follow one another closely in the binder (created, then bound or
# failed within a batch or two), so the newest few thousand pods are enough.
_KEPT_ENTRIES = 4096


class _KeptSpec:
    """A pod's spec rendered once: the text before and after its nodeName member, which is there
    for any node name but the empty one."""

    __slots__ = ("after_node_name", "before_node_name", "node_selector", "source", "spec_values")

    def __init__(self, source: dict[str, Any], spec: PodSpec, before_node_name: bytes, after_node_name: bytes) -> None:
        self.source = source  # the pod's manifest (the key's referent)
        self.spec_values: tuple[Any, ...] = _immutable_spec_values(spec)  # of the typed spec rendered
        self.node_selector = tuple(spec.node_selector.items())
        self.before_node_name = before_node_name  # from the spec's "{" to just before its nodeName member
        self.after_node_name = after_node_name  # from just after its nodeName member to the spec's "}"

    def matches(self, pod: Pod) -> bool:
        spec = pod.spec
        return (
            self.source is pod.source
            and all(map(operator.is_, self.spec_values, _immutable_spec_values(spec)))
            and self.node_selector == tuple(spec.node_selector.items())
        )

    def spec_text(self, node_name: str) -> bytes:
        if node_name:
            return self.before_node_name + _NODE_NAME_MEMBER + _string_text(node_name) + self.after_node_name
        # No nodeName member (overlay_pod drops an empty one): it goes with one comma beside it.
        if self.before_node_name.endswith(b","):
            return self.before_node_name[:-1] + self.after_node_name
        if self.after_node_name.startswith(b","):
            return self.before_node_name + self.after_node_name[1:]
        return self.before_node_name + self.after_node_name


class PodJsonRenderer:
    """`encode_json` for pods, keeping each recent pod's spec rendering (see the module's doc).
    A pod's manifest (`source`) is never changed once decoded (its versions share it); the typed spec
    may be replaced or changed in any way, and any change but nodeName's renders it again."""

    def __init__(self, kept_entries: int = _KEPT_ENTRIES) -> None:
        self._kept: dict[int, _KeptSpec] = {}
        self._kept_entries = kept_entries

    def clear(self) -> None:
        self._kept.clear()

    def kept_sources(self) -> list[dict[str, Any]]:
        """The manifests of the pods whose spec rendering is kept, oldest first."""
        return [kept.source for kept in self._kept.values()]

    def render(self, pod: Pod) -> bytes:
        kept = self._kept.get(id(pod.source))
        if kept is None or not kept.matches(pod):
            kept = self._keep(pod)
        node_name = pod.spec.node_name
        spec_text = _spec_text(pod.spec, pod.source, node_name) if kept is None else kept.spec_text(node_name)
        return _pod_text(pod, spec_text)

    def _keep(self, pod: Pod) -> _KeptSpec | None:
        """Render the pod's spec with the nodeName placeholder and keep it; None when the placeholder
        cannot be told apart in it."""
        parts = _spec_text(pod.spec, pod.source, _NODE_NAME_PLACEHOLDER).split(_NODE_NAME_PLACEHOLDER_MEMBER)
        if len(parts) != 2:
            return None
        kept = _KeptSpec(pod.source, pod.spec, parts[0], parts[1])
        if len(self._kept) >= self._kept_entries:
            del self._kept[next(iter(self._kept))]  # the oldest entry
        self._kept[id(pod.source)] = kept
        return kept


def _spec_document(typed: PodSpec, source: dict[str, Any], node_name: str) -> dict[str, Any]:
    """The spec member's value, as encode_object renders it with `node_name` as its nodeName."""
    spec = source.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    overlay_pod_spec(typed, spec, node_name)
    return spec


def _spec_text(typed: PodSpec, source: dict[str, Any], node_name: str) -> bytes:
    return json_text.dumps(_spec_document(typed, source, node_name))


def _pod_text(pod: Pod, spec_text: bytes) -> bytes:
    """The whole pod's text around `spec_text`: rendered with the spec placeholder, which is then
    replaced (or, should the manifest hold the placeholder's text too, rendered whole)."""
    source = pod.source
    status = source.get("status")
    status = dict(status) if isinstance(status, dict) else {}
    overlay_pod_status(pod.status, status)
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": encode_meta(pod.metadata, source.get("metadata"), namespaced=True),
    }
    for key, value in source.items():
        if key not in _OWN_MEMBERS:
            document[key] = value
    document["spec"] = _SPEC_PLACEHOLDER
    document["status"] = status
    parts = json_text.dumps(document).split(_SPEC_PLACEHOLDER_MEMBER)
    if len(parts) != 2:
        document["spec"] = _spec_document(pod.spec, source, pod.spec.node_name)
        return json_text.dumps(document)
    return parts[0] + _SPEC_MEMBER + spec_text + parts[1]


# The renderer `encode_json` uses (one per process, as the decoded-spec cache in `codecs.pod`).
_RENDERER = PodJsonRenderer()


def encode_pod_json(pod: Pod) -> bytes:
    """`json_text.dumps(encode_object(pod))`, byte for byte, from the pod's kept spec rendering."""
    return _RENDERER.render(pod)


def clear_pod_json_cache() -> None:
    """Forget every kept spec rendering (tests compare cold and warm rendering)."""
    _RENDERER.clear()
