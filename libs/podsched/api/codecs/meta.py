"""Object metadata and the API's identity of each kind: served versions, the namespaced kinds, and
ObjectMeta decoded (defaulted, validated) and encoded."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from podsched.api.codecs.fields import (
    INT64,
    get_bool,
    get_int64,
    get_items,
    get_object,
    get_string,
    get_string_list,
    get_string_map,
    get_timestamp,
)
from podsched.api.errors import FieldError
from podsched.api.timestamps import format_timestamp, parse_timestamp
from podsched.api.types import (
    KIND_DEPLOYMENT,
    KIND_JOB,
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_POD_GROUP,
    KIND_PRIORITY_CLASS,
    KIND_REPLICA_SET,
    KIND_RESOURCE_QUOTA,
    ObjectMeta,
    OwnerReference,
)
from podsched.api.validation import invalid_resource_version, validate_object_meta

API_VERSION_CORE = "v1"
API_VERSION_SCHEDULING = "scheduling.k8s.io/v1"
API_VERSION_SCHEDULING_BETA = "scheduling.k8s.io/v1beta1"
API_VERSION_POLICY = "policy/v1"
API_VERSION_APPS = "apps/v1"
API_VERSION_BATCH = "batch/v1"

# Every (apiVersion, kind) accepted on input; output always uses the first (served) version.
ACCEPTED_TYPES: dict[str, tuple[str, ...]] = {
    KIND_NODE: (API_VERSION_CORE,),
    KIND_POD: (API_VERSION_CORE,),
    KIND_PRIORITY_CLASS: (API_VERSION_SCHEDULING, API_VERSION_SCHEDULING_BETA),
    KIND_PDB: (API_VERSION_POLICY,),
    KIND_RESOURCE_QUOTA: (API_VERSION_CORE,),
    KIND_REPLICA_SET: (API_VERSION_APPS,),
    KIND_DEPLOYMENT: (API_VERSION_APPS,),
    KIND_JOB: (API_VERSION_BATCH,),
    KIND_POD_GROUP: (API_VERSION_SCHEDULING_BETA,),
}
NAMESPACED_KINDS = (
    KIND_POD,
    KIND_PDB,
    KIND_RESOURCE_QUOTA,
    KIND_REPLICA_SET,
    KIND_DEPLOYMENT,
    KIND_JOB,
    KIND_POD_GROUP,
)

DEFAULT_NAMESPACE = "default"


_RESOURCE_VERSION_RE = re.compile(r"[0-9]{1,19}", re.ASCII)  # str.isdigit() would take "²" and "١"


def _resource_version(metadata: Mapping[str, Any], errors: list[FieldError]) -> int:
    value = metadata.get("resourceVersion")
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]:
        return value
    if isinstance(value, str) and _RESOURCE_VERSION_RE.fullmatch(value) and int(value) <= INT64[1]:
        return int(value)
    errors.append(invalid_resource_version(value))
    return 0


def decode_meta(manifest: dict[str, Any], errors: list[FieldError], *, namespaced: bool) -> ObjectMeta:
    """metadata, defaulted (a namespaced object lands in `default`; a cluster-scoped object's
    namespace is dropped, as the API server does) and validated."""
    metadata = get_object(manifest, "metadata", "") or {}
    manifest["metadata"] = metadata
    namespace = get_string(metadata, "namespace", "metadata")
    if namespaced:
        namespace = namespace or DEFAULT_NAMESPACE
        metadata["namespace"] = namespace
    else:
        namespace = ""
        metadata.pop("namespace", None)
    meta = ObjectMeta(
        name=get_string(metadata, "name", "metadata"),
        namespace=namespace,
        uid=get_string(metadata, "uid", "metadata"),
        labels=get_string_map(metadata, "labels", "metadata"),
        annotations=get_string_map(metadata, "annotations", "metadata"),
        creation_timestamp=get_timestamp(metadata, "creationTimestamp", "metadata", errors),
        deletion_timestamp=get_timestamp(metadata, "deletionTimestamp", "metadata", errors),
        deletion_grace_period_seconds=get_int64(metadata, "deletionGracePeriodSeconds", "metadata"),
        resource_version=_resource_version(metadata, errors),
        generation=get_int64(metadata, "generation", "metadata") or 0,
        generate_name=get_string(metadata, "generateName", "metadata"),
        owner_references=_owner_references(metadata),
        finalizers=get_string_list(metadata, "finalizers", "metadata"),
    )
    errors.extend(validate_object_meta(meta, namespaced=namespaced))
    return meta


def decode_recorded_meta(manifest: dict[str, Any]) -> ObjectMeta:
    """`decode_meta` of a namespaced object's metadata as the binder recorded it: the object was
    decoded and validated when it was admitted, and `encode_meta` wrote each field with the JSON type
    `decode_meta` reads, so the fields are read without checks and nothing is validated again. Gives
    exactly what `decode_meta(manifest, errors, namespaced=True)` gives on such a record (and lays
    the same default down); on anything else, what it gives is undefined."""
    metadata: dict[str, Any] = manifest["metadata"]
    get = metadata.get
    namespace = get("namespace") or DEFAULT_NAMESPACE
    metadata["namespace"] = namespace
    labels = get("labels")
    annotations = get("annotations")
    created = get("creationTimestamp")
    deleted = get("deletionTimestamp")
    version = get("resourceVersion")
    references = get("ownerReferences")
    finalizers = get("finalizers")
    # Positional, in ObjectMeta's field order: each keyword costs a call ~35 ns more, and every
    # replica decodes the metadata of most records (`test_recorded_pod_decoding` compares every
    # field with `decode_meta`'s).
    return ObjectMeta(
        get("name") or "",  # name
        namespace,
        get("uid") or "",  # uid
        dict(labels) if labels else {},  # labels
        dict(annotations) if annotations else {},  # annotations
        None if created is None else parse_timestamp(created),  # creation_timestamp
        None if deleted is None else parse_timestamp(deleted),  # deletion_timestamp
        get("deletionGracePeriodSeconds"),  # deletion_grace_period_seconds
        int(version) if version else 0,  # resource_version
        get("generation") or 0,  # generation
        get("generateName") or "",  # generate_name
        tuple(  # owner_references
            OwnerReference(
                ref.get("apiVersion") or "",
                ref.get("kind") or "",
                ref.get("name") or "",
                ref.get("uid") or "",
                ref.get("controller") or False,
                ref.get("blockOwnerDeletion") or False,
            )
            for ref in references
        )
        if references
        else (),
        tuple(finalizers) if finalizers else (),  # finalizers
    )


def recorded_meta_again(held: ObjectMeta, version: int) -> ObjectMeta:
    """`decode_recorded_meta` of a later record of an object whose metadata JSON is, apart from
    resourceVersion, the JSON `held` was decoded from: `held`'s fields with `version`, and labels and
    annotations of its own (nothing mutable is shared between the two). Positional, in field
    order, as in `decode_recorded_meta`."""
    return ObjectMeta(
        held.name,
        held.namespace,
        held.uid,
        dict(held.labels),
        dict(held.annotations),
        held.creation_timestamp,
        held.deletion_timestamp,
        held.deletion_grace_period_seconds,
        version,  # resource_version
        held.generation,
        held.generate_name,
        held.owner_references,
        held.finalizers,
    )


def _owner_references(metadata: Mapping[str, Any]) -> tuple[OwnerReference, ...]:
    path = "ObjectMeta.metadata"
    return tuple(
        OwnerReference(
            get_string(item, "apiVersion", item_path),
            get_string(item, "kind", item_path),
            get_string(item, "name", item_path),
            get_string(item, "uid", item_path),
            get_bool(item, "controller", item_path),
            get_bool(item, "blockOwnerDeletion", item_path),
        )
        for item_path, item in get_items(metadata, "ownerReferences", path)
    )


def encode_owner_reference(ref: OwnerReference) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
    if ref.controller:
        out["controller"] = True
    if ref.block_owner_deletion:
        out["blockOwnerDeletion"] = True
    return out


# The metadata fields the typed ObjectMeta says (a manifest's own value of any of them is not echoed).
_OWNED_META_FIELDS = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "generateName",
        "ownerReferences",
        "finalizers",
        "labels",
        "annotations",
    }
)


def encode_meta(meta: ObjectMeta, source: Any, *, namespaced: bool) -> dict[str, Any]:
    """The typed metadata (name always, the rest when set: empty strings, lists and maps are
    omitted as upstream's omitempty does, a grace period of 0 is kept), then the manifest's other
    fields. Written field by field rather than through `put`: every record the binder writes
    renders its object's metadata."""
    out: dict[str, Any] = {"name": meta.name}
    if namespaced and meta.namespace:
        out["namespace"] = meta.namespace
    if meta.uid:
        out["uid"] = meta.uid
    if meta.resource_version:
        out["resourceVersion"] = str(meta.resource_version)
    if meta.creation_timestamp is not None:
        out["creationTimestamp"] = format_timestamp(meta.creation_timestamp)
    if meta.deletion_timestamp is not None:
        out["deletionTimestamp"] = format_timestamp(meta.deletion_timestamp)
    if meta.deletion_grace_period_seconds is not None:
        out["deletionGracePeriodSeconds"] = meta.deletion_grace_period_seconds
    if meta.generation:
        out["generation"] = meta.generation
    if meta.generate_name:
        out["generateName"] = meta.generate_name
    if meta.owner_references:
        out["ownerReferences"] = [encode_owner_reference(ref) for ref in meta.owner_references]
    if meta.finalizers:
        out["finalizers"] = list(meta.finalizers)
    if meta.labels:
        out["labels"] = dict(meta.labels)
    if meta.annotations:
        out["annotations"] = dict(meta.annotations)
    if isinstance(source, dict):
        for key, value in source.items():
            if key not in _OWNED_META_FIELDS:
                out[key] = value
    return out
