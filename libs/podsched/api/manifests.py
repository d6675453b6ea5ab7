"""Kubernetes manifests in and out: documents -> validated typed objects -> Kubernetes JSON.

This is the front door for user input, in three steps, each with upstream's wording:

1. `load_documents` (`podsched.api.documents`) turns text into documents, as kubectl does.
2. `decode_object` turns one document into a `Node`, `Pod`, `PriorityClass`, `PodDisruptionBudget`,
   `ResourceQuota`, `ReplicaSet`, `Deployment`, `Job` or `PodGroup` (the API server's decode + defaulting +
   validation). A value of the wrong JSON type cannot be
   decoded at all (BadRequest, like `cannot unmarshal string into Go struct field ...`); every
   other rule (`podsched.api.validation`) is checked in one pass and all violations are reported
   together as an Invalid error (`Pod "p" is invalid: [spec.containers[0].name: Required value, ...]`).
3. `encode_object` renders an object back in the Kubernetes JSON shape: the manifest it was decoded
   from, with the object's current typed state laid over it.

Decoders read fields in upstream's order and call the validators as they go, so errors are listed in
the order a real API server lists them and, of several wrong-typed values, the one upstream would hit
first is the one named. PriorityClass-specific rules (reserved `system-` names, the
value ceiling, one global default) are upstream's `ValidatePriorityClass` and admission plugin; they
live in `podsched.admission.priority` and run when a class is created, as in the API server.

Each kind's decoder and encoder is its codec in `podsched.api.codecs` (`pod`, `node`,
`priority_class`, `pdb`, `resource_quota`, `workloads`, `pod_group`, over the shared `meta`, `fields`, `quantities` and
`selectors`); this module checks what a document is and hands it to the codec of its kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from podsched.api import json_text
from podsched.api.codecs.fields import SchemaError
from podsched.api.codecs.meta import (
    ACCEPTED_TYPES,
    API_VERSION_CORE,
    API_VERSION_POLICY,
    API_VERSION_SCHEDULING,
    DEFAULT_NAMESPACE,
    NAMESPACED_KINDS,
    encode_meta,
)
from podsched.api.codecs.node import DEFAULT_NODE_PODS, decode_node, overlay_node
from podsched.api.codecs.pdb import decode_pdb, overlay_pdb
from podsched.api.codecs.pod import DEFAULT_PROTOCOL, decode_pod, overlay_pod
from podsched.api.codecs.pod_group import decode_pod_group, overlay_pod_group
from podsched.api.codecs.pod_json import encode_pod_json
from podsched.api.codecs.priority_class import decode_priority_class, overlay_priority_class
from podsched.api.codecs.quantities import render_quantity
from podsched.api.codecs.resource_quota import decode_resource_quota, overlay_resource_quota, render_quota_quantity
from podsched.api.codecs.workloads import (
    decode_deployment,
    decode_job,
    decode_replica_set,
    overlay_deployment,
    overlay_job,
    overlay_replica_set,
)
from podsched.api.documents import (
    DocumentError,
    clean_text,
    error_validating_data,
    json_type_name,
    load_documents,
    plain_document,
    type_meta_errors,
)
from podsched.api.errors import ApiError, FieldError
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
    ApiObject,
    Deployment,
    Job,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    ReplicaSet,
    ResourceQuota,
)
from podsched.api.validation import validate_object_meta, validate_preemption_policy

# Decoding and encoding, plus what callers have always imported from here: document loading,
# timestamps and the validators that admission reuses live in their own modules.
__all__ = [
    "ACCEPTED_TYPES",
    "API_VERSION_CORE",
    "API_VERSION_POLICY",
    "API_VERSION_SCHEDULING",
    "DEFAULT_NAMESPACE",
    "DEFAULT_NODE_PODS",
    "DEFAULT_PROTOCOL",
    "check_served",
    "decode_documents",
    "decode_object",
    "encode_json",
    "encode_object",
    "format_timestamp",
    "load_documents",
    "parse_timestamp",
    "render_quantity",
    "render_quota_quantity",
    "validate_object_meta",
    "validate_preemption_policy",
]


_Decoder = Callable[[dict[str, Any], list[FieldError]], ApiObject]
_DECODERS: dict[str, _Decoder] = {
    KIND_NODE: decode_node,
    KIND_POD: decode_pod,
    KIND_PRIORITY_CLASS: decode_priority_class,
    KIND_PDB: decode_pdb,
    KIND_RESOURCE_QUOTA: decode_resource_quota,
    KIND_REPLICA_SET: decode_replica_set,
    KIND_DEPLOYMENT: decode_deployment,
    KIND_JOB: decode_job,
    KIND_POD_GROUP: decode_pod_group,
}


def _identity(doc: Mapping[str, Any], kind: str) -> tuple[str, str]:
    """Best-effort (name, namespace) of a document that may not decode, to name it in errors."""
    metadata = doc.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = metadata.get("name")
    name = name if isinstance(name, str) else ""
    if kind not in NAMESPACED_KINDS:
        return name, ""
    namespace = metadata.get("namespace")
    return name, namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE


def decode_object(doc: Mapping[str, Any], *, owned: bool = False) -> ApiObject:
    """Decode, default and validate one document into a typed object.

    Raises `ApiError`:
    - BadRequest when apiVersion/kind are missing (`error validating data: [kind not set]`), the
      kind is not served (`no matches for kind "Foo" in version "v1"`), or a value has the wrong
      JSON type (`Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal ...`);
    - Invalid with every violated rule, e.g. `Pod "p" is invalid: spec.containers[0].resources.
      requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`.

    The returned object's `source` is a deep copy of `doc` with upstream's defaults filled in;
    `doc` itself is never modified. Whatever `doc` holds (any JSON, however nested, or not an
    object at all), the only exception raised is ApiError.

    `owned=True` hands over a dict that is already a `plain_document` (from `parse_json`, or a
    record the binder wrote): it becomes the source as it is, defaulted in place, and the copy,
    which was a sixth of decoding a pod record, is skipped.
    """
    if not isinstance(doc, Mapping):
        raise ApiError.bad_request("", "", error_validating_data([f"expected an object, got {json_type_name(doc)}"]))
    unreadable: DocumentError | None = None
    try:
        manifest = doc if owned and isinstance(doc, dict) else plain_document(doc)
    except DocumentError as exc:
        # Enough of it to say what it is, then refuse it as the schema error it is.
        unreadable, manifest = exc, _type_and_identity(doc)
    problems = type_meta_errors(manifest)
    kind = manifest.get("kind") if isinstance(manifest.get("kind"), str) else ""
    name, namespace = _identity(manifest, str(kind))
    if problems:
        raise ApiError.bad_request(str(kind), name, error_validating_data(problems), namespace)
    api_version: str = manifest["apiVersion"]
    kind = str(manifest["kind"])
    if api_version not in ACCEPTED_TYPES.get(kind, ()):
        raise ApiError.bad_request(kind, name, f'no matches for kind "{kind}" in version "{api_version}"', namespace)
    errors: list[FieldError] = []
    try:
        if unreadable is not None:
            raise unreadable
        obj: ApiObject = _DECODERS[kind](manifest, errors)
    except (SchemaError, DocumentError) as exc:
        version = api_version.rsplit("/", 1)[-1]
        detail = f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}'
        raise ApiError.bad_request(kind, name, detail, namespace) from None
    if errors:
        raise ApiError.invalid(kind, obj.metadata.name, errors, obj.metadata.namespace)
    return obj


# Kinds the API serves only while a feature gate is on, as upstream's API server serves
# scheduling.k8s.io/v1beta1 PodGroup only with GenericWorkload.
GATED_KINDS: dict[str, str] = {KIND_POD_GROUP: "GenericWorkload"}


def check_served(obj: ApiObject, feature_enabled: Callable[[str], bool]) -> None:
    """Refuse an object whose kind is served only behind a feature gate that is off, as an API
    server without the resource does: BadRequest `no matches for kind "PodGroup" in version
    "scheduling.k8s.io/v1beta1"` (kubectl's `resource mapping not found ...` client side)."""
    gate = GATED_KINDS.get(obj.kind)
    if gate is not None and not feature_enabled(gate):
        version = ACCEPTED_TYPES[obj.kind][0]
        message = f'no matches for kind "{obj.kind}" in version "{version}"'
        raise ApiError.bad_request(obj.kind, obj.metadata.name, message, obj.metadata.namespace)


def _type_and_identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata.name and metadata.namespace of a document, where they are strings."""
    head: dict[str, Any] = {
        key: clean_text(doc[key]) for key in ("apiVersion", "kind") if isinstance(doc.get(key), str)
    }
    metadata = doc.get("metadata")
    if isinstance(metadata, Mapping):
        head["metadata"] = {
            key: clean_text(metadata[key]) for key in ("name", "namespace") if isinstance(metadata.get(key), str)
        }
    return head


def decode_documents(text: str, source: str = "-") -> list[ApiObject]:
    """`load_documents` then `decode_object` on each; the first bad document raises."""
    return [decode_object(document) for document in load_documents(text, source)]


def _copy_document(value: Any) -> Any:
    """A deep copy of a plain JSON document (dicts, lists, immutable scalars), three times faster
    than copy.deepcopy, which also keeps a memo of every object for cycles plain JSON cannot have."""
    if isinstance(value, dict):
        return {key: _copy_document(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_document(item) for item in value]
    return value


def encode_object(obj: ApiObject) -> dict[str, Any]:
    """The Kubernetes JSON shape of an object: apiVersion (the served version), kind, metadata,
    then the body. Built from a deep copy of `obj.source` with the object's current typed state laid
    over it, so fields podsched does not model are echoed unchanged and the typed state always wins.
    Timestamps are RFC3339 UTC strings, resourceVersion a string, quantities canonical (`500m`,
    `32Gi`). `decode_object(encode_object(x))` equals `x` for every decoded object (the status of a PDB or a
    ResourceQuota excepted: it is the system's to compute, and decoding drops it)."""
    return _encode(obj, _copy_document(obj.source))


def encode_json(obj: ApiObject) -> bytes:
    """`encode_object(obj)` as compact JSON text (`json_text.dumps`): what a record's object_json
    holds. A pod's text is put together from its spec's rendering kept from its previous record
    (`codecs.pod_json`); other kinds are copied whole and rendered as in encode_object."""
    if isinstance(obj, Pod):
        return encode_pod_json(obj)
    return json_text.dumps(_encode(obj, _copy_document(obj.source)))


def _encode(obj: ApiObject, source: dict[str, Any]) -> dict[str, Any]:
    """encode_object over `source`, which the overlay may change: a copy of `obj.source` (whole,
    or of every part the object's overlay changes)."""
    body = {key: value for key, value in source.items() if key not in ("apiVersion", "kind", "metadata")}
    namespaced = obj.kind in NAMESPACED_KINDS
    head: dict[str, Any] = {
        "apiVersion": ACCEPTED_TYPES[obj.kind][0],
        "kind": obj.kind,
        "metadata": encode_meta(obj.metadata, source.get("metadata"), namespaced=namespaced),
    }
    if isinstance(obj, Pod):
        overlay_pod(obj, body)
    elif isinstance(obj, Node):
        overlay_node(obj, body)
    elif isinstance(obj, PriorityClass):
        overlay_priority_class(obj, body)
    elif isinstance(obj, ResourceQuota):
        overlay_resource_quota(obj, body)
    elif isinstance(obj, ReplicaSet):
        overlay_replica_set(obj, body)
    elif isinstance(obj, Deployment):
        overlay_deployment(obj, body)
    elif isinstance(obj, Job):
        overlay_job(obj, body)
    elif isinstance(obj, PodGroup):
        overlay_pod_group(obj, body)
    else:
        overlay_pdb(obj, body)
    # Kubernetes' field order: spec, then status, after any other top-level fields.
    ordered = {key: value for key, value in body.items() if key not in ("spec", "status")}
    ordered.update({key: body[key] for key in ("spec", "status") if key in body})
    return {**head, **ordered}
