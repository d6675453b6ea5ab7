"""The Node codec: spec (unschedulable, taints) and status (capacity, allocatable with their defaults)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from podsched.api.codecs.fields import child, get_bool, get_items, get_object, get_string, put
from podsched.api.codecs.meta import decode_meta
from podsched.api.codecs.quantities import canonical, parse_quantities, render_quantity
from podsched.api.errors import FieldError
from podsched.api.types import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    Node,
    NodeSpec,
    NodeStatus,
    Resource,
    Taint,
)
from podsched.api.validation import ResourceQuantity, validate_taints

DEFAULT_NODE_PODS = 110  # kubelet's default --max-pods


def _decode_taint(doc: Mapping[str, Any], path: str) -> Taint:
    return Taint(get_string(doc, "key", path), get_string(doc, "effect", path), get_string(doc, "value", path))


def _node_resource(parsed: Mapping[str, ResourceQuantity]) -> Resource:
    return Resource.from_map({name: canonical(name, entry) for name, entry in parsed.items()}, keep_zero_scalars=True)


def _decode_node_status(manifest: dict[str, Any], errors: list[FieldError]) -> NodeStatus:
    """capacity and allocatable. A resource missing from allocatable defaults to its capacity (what
    a kubelet with no reservations reports); `pods` defaults to 110 when given in neither."""
    status = get_object(manifest, "status", "") or {}
    manifest["status"] = status
    capacity_doc = get_object(status, "capacity", "status") or {}
    allocatable_doc = get_object(status, "allocatable", "status") or {}
    if RESOURCE_PODS not in capacity_doc and RESOURCE_PODS not in allocatable_doc:
        capacity_doc[RESOURCE_PODS] = str(DEFAULT_NODE_PODS)
    capacity = parse_quantities(capacity_doc, "status.capacity", errors, keyed=False)
    allocatable = parse_quantities(allocatable_doc, "status.allocatable", errors, keyed=False)
    for name, entry in capacity.items():
        if name not in allocatable_doc:
            allocatable_doc[name] = entry.text
            allocatable[name] = entry
    status["capacity"], status["allocatable"] = capacity_doc, allocatable_doc
    return NodeStatus(_node_resource(capacity), _node_resource(allocatable))


def decode_node(manifest: dict[str, Any], errors: list[FieldError]) -> Node:
    metadata = decode_meta(manifest, errors, namespaced=False)
    spec = get_object(manifest, "spec", "") or {}
    unschedulable = get_bool(spec, "unschedulable", "spec")
    taints = tuple(_decode_taint(doc, path) for path, doc in get_items(spec, "taints", "spec"))
    errors.extend(validate_taints(taints, "spec.taints"))
    return Node(metadata, NodeSpec(unschedulable, taints), _decode_node_status(manifest, errors), source=manifest)


def _render_resources(resource: Resource, names: Iterable[str]) -> dict[str, str]:
    return {name: render_quantity(name, resource.get(name)) for name in sorted(names)}


def overlay_node(node: Node, body: dict[str, Any]) -> None:
    spec = child(body, "spec")
    put(spec, "unschedulable", True if node.spec.unschedulable else None)
    written = {(t.get("key"), t.get("effect")): t for t in spec.get("taints") or [] if isinstance(t, dict)}
    taints = []
    for taint in node.spec.taints:
        encoded = dict(written.get((taint.key, taint.effect), {}))  # keeps e.g. timeAdded
        encoded.update(key=taint.key, effect=taint.effect)
        put(encoded, "value", taint.value)
        taints.append(encoded)
    put(spec, "taints", taints)
    capacity, allocatable = node.status.capacity, node.status.allocatable
    standard = [RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS]
    if capacity.ephemeral_storage or allocatable.ephemeral_storage:
        standard.append(RESOURCE_EPHEMERAL_STORAGE)
    status = child(body, "status")
    status["capacity"] = _render_resources(capacity, [*standard, *capacity.scalar])
    # Every capacity resource is named in allocatable too, so decoding never re-defaults it.
    status["allocatable"] = _render_resources(allocatable, {*standard, *capacity.scalar, *allocatable.scalar})
