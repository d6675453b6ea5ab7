"""Object metadata and the API's identity of each kind: served versions, the namespaced kinds, and
ObjectMeta decoded (defaulted, validated) and encoded."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from podsched.api.codecs.fields import (
    INT64,
    get_int64,
    get_object,
    get_string,
    get_string_map,
    get_timestamp,
    put,
    timestamp_text,
)
from podsched.api.errors import FieldError
from podsched.api.types import KIND_NODE, KIND_PDB, KIND_POD, KIND_PRIORITY_CLASS, KIND_RESOURCE_QUOTA, ObjectMeta
from podsched.api.validation import invalid_resource_version, validate_object_meta

API_VERSION_CORE = "v1"
API_VERSION_SCHEDULING = "scheduling.k8s.io/v1"
API_VERSION_POLICY = "policy/v1"

# Every (apiVersion, kind) accepted on input; output always uses the first (served) version.
ACCEPTED_TYPES: dict[str, tuple[str, ...]] = {
    KIND_NODE: (API_VERSION_CORE,),
    KIND_POD: (API_VERSION_CORE,),
    KIND_PRIORITY_CLASS: (API_VERSION_SCHEDULING, "scheduling.k8s.io/v1beta1"),
    KIND_PDB: (API_VERSION_POLICY,),
    KIND_RESOURCE_QUOTA: (API_VERSION_CORE,),
}
NAMESPACED_KINDS = (KIND_POD, KIND_PDB, KIND_RESOURCE_QUOTA)

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
    )
    errors.extend(validate_object_meta(meta, namespaced=namespaced))
    return meta


def encode_meta(meta: ObjectMeta, source: Any, *, namespaced: bool) -> dict[str, Any]:
    """The typed metadata (name always, the rest when set), then the manifest's other fields."""
    owned = {
        "namespace": meta.namespace if namespaced else "",
        "uid": meta.uid,
        "resourceVersion": str(meta.resource_version) if meta.resource_version else None,
        "creationTimestamp": timestamp_text(meta.creation_timestamp),
        "deletionTimestamp": timestamp_text(meta.deletion_timestamp),
        "deletionGracePeriodSeconds": meta.deletion_grace_period_seconds,
        "generation": meta.generation or None,
        "labels": dict(meta.labels),
        "annotations": dict(meta.annotations),
    }
    out: dict[str, Any] = {"name": meta.name}
    for key, value in owned.items():
        put(out, key, value)
    rest = source if isinstance(source, dict) else {}
    out.update({key: value for key, value in rest.items() if key != "name" and key not in owned})
    return out
