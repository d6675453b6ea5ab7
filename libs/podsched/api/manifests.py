"""Kubernetes manifests in and out: documents -> validated typed objects -> Kubernetes JSON.

This is the front door for user input, in three steps, each with upstream's wording:

1. `load_documents` (`podsched.api.documents`) turns text into documents, as kubectl does.
2. `decode_object` turns one document into a `Node`, `Pod`, `PriorityClass`, `PodDisruptionBudget` or
   `ResourceQuota` (the API server's decode + defaulting + validation). A value of the wrong JSON type cannot be
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
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any, TypeVar

from podsched.api import quantity
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
    DEFAULT_SCHEDULER_NAME,
    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_PRIORITY_CLASS,
    KIND_RESOURCE_QUOTA,
    POD_PENDING,
    PREEMPT_LOWER_PRIORITY,
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    Affinity,
    ApiObject,
    Container,
    ContainerPort,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeSpec,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodCondition,
    PodDisruptionBudget,
    PodSpec,
    PodStatus,
    PreferredSchedulingTerm,
    PriorityClass,
    Resource,
    ResourceQuota,
    ScopedResourceSelectorRequirement,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from podsched.api.validation import (
    PREFERRED_TERMS,
    REQUIRED_TERMS,
    ResourceQuantity,
    container_name_errors,
    container_port_errors,
    host_port_errors,
    invalid_quantity,
    invalid_resource_version,
    invalid_timestamp,
    is_hugepages_resource,
    object_name_errors,
    pod_phase_errors,
    quantity_errors,
    quota_quantity_errors,
    quota_resource_name_errors,
    required,
    resource_name_errors,
    resource_requirements_errors,
    restart_policy_errors,
    termination_grace_period_errors,
    validate_affinity,
    validate_labels,
    validate_object_meta,
    validate_pod_condition,
    validate_pod_disruption_budget_spec,
    validate_preemption_policy,
    validate_quota_scopes,
    validate_scope_selector,
    validate_taints,
    validate_toleration,
    validate_topology_spread_constraints,
)

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
    "decode_documents",
    "decode_object",
    "encode_object",
    "format_timestamp",
    "load_documents",
    "parse_timestamp",
    "render_quantity",
    "render_quota_quantity",
    "validate_object_meta",
    "validate_preemption_policy",
]

_T = TypeVar("_T")

# --- API groups and defaults, declared once -------------------------------------------------------

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
_NAMESPACED_KINDS = (KIND_POD, KIND_PDB, KIND_RESOURCE_QUOTA)

DEFAULT_NAMESPACE = "default"
DEFAULT_NODE_PODS = 110  # kubelet's default --max-pods
DEFAULT_PROTOCOL = "TCP"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

_BYTE_RESOURCES = (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE)

# --- typed access to a document ---------------------------------------------------------------------


class _SchemaError(Exception):
    """A value of the wrong JSON type: the object cannot be decoded at all (BadRequest upstream,
    `json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32`)."""

    def __init__(self, path: str, value: object, expected: str) -> None:
        shown = json_type_name(value)
        if shown == "number":
            shown = f"number {value}"
        super().__init__(f"json: cannot unmarshal {shown} into Go struct field {path} of type {expected}")


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _field(doc: Mapping[str, Any], key: str, path: str, json_type: type[_T], go_type: str) -> _T | None:
    """A field's value, None when absent (JSON null counts as absent, as in Go); a value of another
    JSON type is a schema error naming `go_type`."""
    value = doc.get(key)
    if value is None or isinstance(value, json_type):
        return value
    raise _SchemaError(_at(path, key), value, go_type)


def _string(doc: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = _field(doc, key, path, str, "string")
    return default if value is None else value


def _boolean(doc: Mapping[str, Any], key: str, path: str) -> bool:
    return _field(doc, key, path, bool, "bool") or False


def _object(doc: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
    return _field(doc, key, path, dict, "object")


def _array(doc: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = _field(doc, key, path, list, "array")
    return [] if value is None else value


def _as_int(value: Any, path: str, bounds: tuple[int, int], type_name: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 10.0 is the integer 10
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise _SchemaError(path, value, type_name)
    return value


def _int32(doc: Mapping[str, Any], key: str, path: str) -> int | None:
    value = doc.get(key)
    return None if value is None else _as_int(value, _at(path, key), _INT32, "int32")


def _int64(doc: Mapping[str, Any], key: str, path: str) -> int | None:
    value = doc.get(key)
    return None if value is None else _as_int(value, _at(path, key), _INT64, "int64")


def _int_or_string(doc: Mapping[str, Any], key: str, path: str) -> int | str | None:
    value = doc.get(key)
    if value is None or isinstance(value, str):
        return value
    return _as_int(value, _at(path, key), _INT32, "IntOrString")


def _items(doc: Mapping[str, Any], key: str, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(item path, item) for an array of objects."""
    for index, item in enumerate(_array(doc, key, path)):
        item_path = f"{_at(path, key)}[{index}]"
        if not isinstance(item, dict):
            raise _SchemaError(item_path, item, "object")
        yield item_path, item


def _string_map(doc: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    value = _object(doc, key, path)
    if not value:
        return {}
    for item in value.values():
        if not isinstance(item, str):
            raise _SchemaError(_at(path, key), item, "map[string]string")
    return dict(value)


def _string_list(doc: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    values = _array(doc, key, path)
    for index, item in enumerate(values):
        if not isinstance(item, str):
            raise _SchemaError(f"{_at(path, key)}[{index}]", item, "string")
    return tuple(values)


def _timestamp(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, datetime):  # a document built in Python rather than parsed from text
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return parse_timestamp(format_timestamp(moment.timestamp()))
    if not isinstance(value, str):
        raise _SchemaError(_at(path, key), value, "Time")
    try:
        return parse_timestamp(value)
    except ValueError:
        errors.append(invalid_timestamp(_at(path, key), value))
        return None


def _object_name(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> str:
    """An optional reference by name (nodeName, priorityClassName, nominatedNodeName)."""
    value = _string(doc, key, path)
    errors.extend(object_name_errors(value, _at(path, key)))
    return value


# --- metadata ----------------------------------------------------------------------------------------


_RESOURCE_VERSION_RE = re.compile(r"[0-9]{1,19}", re.ASCII)  # str.isdigit() would take "²" and "١"


def _resource_version(metadata: Mapping[str, Any], errors: list[FieldError]) -> int:
    value = metadata.get("resourceVersion")
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]:
        return value
    if isinstance(value, str) and _RESOURCE_VERSION_RE.fullmatch(value) and int(value) <= _INT64[1]:
        return int(value)
    errors.append(invalid_resource_version(value))
    return 0


def _decode_meta(manifest: dict[str, Any], errors: list[FieldError], *, namespaced: bool) -> ObjectMeta:
    """metadata, defaulted (a namespaced object lands in `default`; a cluster-scoped object's
    namespace is dropped, as the API server does) and validated."""
    metadata = _object(manifest, "metadata", "") or {}
    manifest["metadata"] = metadata
    namespace = _string(metadata, "namespace", "metadata")
    if namespaced:
        namespace = namespace or DEFAULT_NAMESPACE
        metadata["namespace"] = namespace
    else:
        namespace = ""
        metadata.pop("namespace", None)
    meta = ObjectMeta(
        name=_string(metadata, "name", "metadata"),
        namespace=namespace,
        uid=_string(metadata, "uid", "metadata"),
        labels=_string_map(metadata, "labels", "metadata"),
        annotations=_string_map(metadata, "annotations", "metadata"),
        creation_timestamp=_timestamp(metadata, "creationTimestamp", "metadata", errors),
        deletion_timestamp=_timestamp(metadata, "deletionTimestamp", "metadata", errors),
        deletion_grace_period_seconds=_int64(metadata, "deletionGracePeriodSeconds", "metadata"),
        resource_version=_resource_version(metadata, errors),
        generation=_int64(metadata, "generation", "metadata") or 0,
    )
    errors.extend(validate_object_meta(meta, namespaced=namespaced))
    return meta


# --- resources ----------------------------------------------------------------------------------------


def _canonical(name: str, entry: ResourceQuantity) -> int:
    """CPU in millicores, everything else in whole units, both rounded up (MilliValue/Value)."""
    return quantity.to_milli(entry.text) if name == RESOURCE_CPU else quantity.to_int(entry.text)


def _quantities(
    doc: Mapping[str, Any] | None, path: str, errors: list[FieldError], *, keyed: bool = True
) -> dict[str, ResourceQuantity]:
    """Parse a ResourceList; each bad entry is an Invalid error at `path[name]` (`path.name` for a
    node's capacity/allocatable, as upstream words it). Negative and, for integer resources,
    fractional values are reported; parsed entries are returned either way."""
    parsed: dict[str, ResourceQuantity] = {}
    for name, raw in (doc or {}).items():
        entry_path = f"{path}[{name}]" if keyed else f"{path}.{name}"
        if not isinstance(raw, str | int | float):
            errors.append(invalid_quantity(entry_path, raw))
            continue
        try:
            entry = ResourceQuantity(raw, quantity.parse_quantity(raw))
        except quantity.QuantityError as exc:
            errors.append(invalid_quantity(entry_path, raw, exc))
            continue
        errors.extend(quantity_errors(name, entry, entry_path))
        parsed[name] = entry
    return parsed


def _canonical_list(parsed: Mapping[str, ResourceQuantity]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((name, _canonical(name, entry)) for name, entry in parsed.items()))


# --- containers ----------------------------------------------------------------------------------------


def _decode_requirements(
    container: dict[str, Any], path: str, errors: list[FieldError]
) -> tuple[dict[str, ResourceQuantity], dict[str, ResourceQuantity]]:
    """resources.limits/requests of one container: defaulted (a limit without a request sets the
    request, SetDefaults_Pod) and validated as ValidateContainerResourceRequirements does.
    Returns the parsed (requests, limits)."""
    resources_path = f"{path}.resources"
    resources = _object(container, "resources", path) or {}
    limits_doc = _object(resources, "limits", resources_path) or {}
    requests_doc = _object(resources, "requests", resources_path) or {}
    limits_path, requests_path = f"{resources_path}.limits", f"{resources_path}.requests"
    errors.extend(resource_name_errors(limits_doc, limits_path))
    errors.extend(resource_name_errors(requests_doc, requests_path))
    limits = _quantities(limits_doc, limits_path, errors)
    given_requests = _quantities(requests_doc, requests_path, errors)
    errors.extend(resource_requirements_errors(limits, given_requests, resources_path))
    defaulted = {name: limit for name, limit in limits.items() if name not in requests_doc and limit.value >= 0}
    if defaulted:
        requests_doc.update({name: limit.text for name, limit in defaulted.items()})
        resources["requests"] = requests_doc
        container["resources"] = resources
    return {**given_requests, **defaulted}, limits


def _decode_port(doc: dict[str, Any], path: str, errors: list[FieldError], names: set[str]) -> ContainerPort:
    """One containerPort; the protocol defaults to TCP."""
    name = _string(doc, "name", path)
    container_port = _int32(doc, "containerPort", path) or 0
    host_port = _int32(doc, "hostPort", path) or 0
    protocol = _string(doc, "protocol", path) or DEFAULT_PROTOCOL
    doc["protocol"] = protocol
    port = ContainerPort(container_port, host_port, protocol, _string(doc, "hostIP", path))
    errors.extend(container_port_errors(port, name, path, names))
    return port


def _decode_container(
    doc: dict[str, Any], path: str, errors: list[FieldError], names: set[str], *, init: bool
) -> Container:
    """One container or init container; `names` collects container names across both lists."""
    name = _string(doc, "name", path)
    errors.extend(container_name_errors(name, f"{path}.name", names))
    requests, limits = _decode_requirements(doc, path, errors)
    port_names: set[str] = set()
    ports = tuple(_decode_port(port, port_path, errors, port_names) for port_path, port in _items(doc, "ports", path))
    restart_policy = _string(doc, "restartPolicy", path)
    errors.extend(restart_policy_errors(restart_policy, f"{path}.restartPolicy", init=init))
    return Container(name, _canonical_list(requests), ports, restart_policy, _canonical_list(limits))


# --- selectors and affinity ----------------------------------------------------------------------------
# These only decode; `validate_affinity` and friends check the typed result.


def _decode_label_selector(doc: Mapping[str, Any], key: str, path: str) -> LabelSelector | None:
    """A metav1.LabelSelector; absent -> None (matches nothing), `{}` -> empty (matches all)."""
    selector = _object(doc, key, path)
    if selector is None:
        return None
    selector_path = _at(path, key)
    match_labels = _string_map(selector, "matchLabels", selector_path)
    expressions = tuple(
        _decode_requirement(item, item_path, LabelSelectorRequirement)
        for item_path, item in _items(selector, "matchExpressions", selector_path)
    )
    return LabelSelector(tuple(match_labels.items()), expressions)


_Requirement = TypeVar("_Requirement", LabelSelectorRequirement, NodeSelectorRequirement)


def _decode_requirement(
    doc: Mapping[str, Any], path: str, requirement_type: Callable[[str, str, tuple[str, ...]], _Requirement]
) -> _Requirement:
    return requirement_type(
        _string(doc, "key", path), _string(doc, "operator", path), _string_list(doc, "values", path)
    )


def _decode_node_selector_term(doc: Mapping[str, Any], path: str) -> NodeSelectorTerm:
    expressions = tuple(
        _decode_requirement(item, item_path, NodeSelectorRequirement)
        for item_path, item in _items(doc, "matchExpressions", path)
    )
    fields = tuple(
        _decode_requirement(item, item_path, NodeSelectorRequirement)
        for item_path, item in _items(doc, "matchFields", path)
    )
    return NodeSelectorTerm(expressions, fields)


def _decode_preferred(
    affinity: Mapping[str, Any], path: str, term_key: str, decode_term: Callable[[Mapping[str, Any], str], _T]
) -> list[tuple[int, _T]]:
    """(weight, term) for each entry of preferredDuringSchedulingIgnoredDuringExecution."""
    preferred = []
    for item_path, item in _items(affinity, PREFERRED_TERMS, path):
        weight = _int32(item, "weight", item_path) or 0
        term_doc = _object(item, term_key, item_path) or {}
        preferred.append((weight, decode_term(term_doc, f"{item_path}.{term_key}")))
    return preferred


def _decode_node_affinity(doc: Mapping[str, Any], path: str) -> NodeAffinity | None:
    affinity = _object(doc, "nodeAffinity", path)
    if affinity is None:
        return None
    path = f"{path}.nodeAffinity"
    required_terms: tuple[NodeSelectorTerm, ...] | None = None
    selector = _object(affinity, REQUIRED_TERMS, path)
    if selector is not None:
        required_terms = tuple(
            _decode_node_selector_term(term, term_path)
            for term_path, term in _items(selector, "nodeSelectorTerms", f"{path}.{REQUIRED_TERMS}")
        )
    preferred = _decode_preferred(affinity, path, "preference", _decode_node_selector_term)
    return NodeAffinity(required_terms, tuple(PreferredSchedulingTerm(weight, term) for weight, term in preferred))


def _decode_pod_affinity_term(doc: Mapping[str, Any], path: str) -> PodAffinityTerm:
    selector = _decode_label_selector(doc, "labelSelector", path)
    namespaces = _string_list(doc, "namespaces", path)
    namespace_selector = _decode_label_selector(doc, "namespaceSelector", path)
    match_keys = _string_list(doc, "matchLabelKeys", path)
    mismatch_keys = _string_list(doc, "mismatchLabelKeys", path)
    topology_key = _string(doc, "topologyKey", path)
    return PodAffinityTerm(topology_key, selector, namespaces, namespace_selector, match_keys, mismatch_keys)


def _decode_pod_affinity(doc: Mapping[str, Any], key: str, path: str) -> PodAffinity | None:
    affinity = _object(doc, key, path)
    if affinity is None:
        return None
    path = f"{path}.{key}"
    required_terms = tuple(
        _decode_pod_affinity_term(term, term_path) for term_path, term in _items(affinity, REQUIRED_TERMS, path)
    )
    preferred = _decode_preferred(affinity, path, "podAffinityTerm", _decode_pod_affinity_term)
    return PodAffinity(required_terms, tuple(WeightedPodAffinityTerm(weight, term) for weight, term in preferred))


def _decode_affinity(spec: Mapping[str, Any]) -> Affinity | None:
    affinity = _object(spec, "affinity", "spec")
    if affinity is None:
        return None
    path = "spec.affinity"
    return Affinity(
        _decode_node_affinity(affinity, path),
        _decode_pod_affinity(affinity, "podAffinity", path),
        _decode_pod_affinity(affinity, "podAntiAffinity", path),
    )


# --- tolerations, taints and topology spread -------------------------------------------------------------


def _decode_toleration(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> Toleration:
    """Validated as written; an empty operator then defaults to Equal."""
    written = Toleration(
        _string(doc, "key", path),
        _string(doc, "operator", path),
        _string(doc, "value", path),
        _string(doc, "effect", path),
        _int64(doc, "tolerationSeconds", path),
    )
    errors.extend(validate_toleration(written, path))
    return replace(written, operator=written.operator or "Equal")


def _decode_taint(doc: Mapping[str, Any], path: str) -> Taint:
    return Taint(_string(doc, "key", path), _string(doc, "effect", path), _string(doc, "value", path))


def _decode_spread_constraint(doc: Mapping[str, Any], path: str) -> TopologySpreadConstraint:
    max_skew = _int32(doc, "maxSkew", path) or 0
    topology_key = _string(doc, "topologyKey", path)
    when = _string(doc, "whenUnsatisfiable", path)
    min_domains = _int32(doc, "minDomains", path)
    node_affinity_policy = _string(doc, "nodeAffinityPolicy", path) or "Honor"
    node_taints_policy = _string(doc, "nodeTaintsPolicy", path) or "Ignore"
    selector = _decode_label_selector(doc, "labelSelector", path)
    match_keys = _string_list(doc, "matchLabelKeys", path)
    return TopologySpreadConstraint(
        max_skew, topology_key, when, selector, min_domains, node_affinity_policy, node_taints_policy, match_keys
    )


# --- objects ---------------------------------------------------------------------------------------------


# Pod specs decoded before, by the JSON text of the spec as it arrived (its nodeName blanked): a
# replica decodes every pod at least twice (created, bound) and pods from one template share their
# spec, so most specs have been seen. An entry is (the decoded spec with node_name "", the defaulted
# spec's text, or None when defaulting changed nothing). Only specs that decoded without a single
# error are kept, so a hit is exactly what decoding again would give. Bounded in entries and in the
# size of one key (a huge spec is decoded every time rather than kept).
_POD_SPEC_CACHE: dict[str, tuple[PodSpec, str | None]] = {}
_POD_SPEC_CACHE_ENTRIES = 4096
_POD_SPEC_CACHE_KEY_CHARS = 8192


def clear_pod_spec_cache() -> None:
    """Forget every decoded pod spec (tests compare cold and warm decoding)."""
    _POD_SPEC_CACHE.clear()


def _pod_spec_key(spec: dict[str, Any]) -> str | None:
    """The spec's JSON text with nodeName blanked in place (its position kept, so that putting the
    real value back into a copy of the defaulted spec gives the key order decoding would have)."""
    if isinstance(spec.get("nodeName"), str):
        spec = {**spec, "nodeName": ""}
    try:
        key = json.dumps(spec, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):  # not plain JSON (cannot happen after plain_document)
        return None
    return key if len(key) <= _POD_SPEC_CACHE_KEY_CHARS else None


def _decode_pod_spec(manifest: dict[str, Any], errors: list[FieldError]) -> PodSpec:
    """ValidatePodSpec for the fields scheduling reads, after upstream's defaulting
    (terminationGracePeriodSeconds 30, schedulerName default-scheduler, port protocol TCP,
    requests from limits). Served from `_POD_SPEC_CACHE` when the same spec decoded cleanly before."""
    spec = _object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    key = _pod_spec_key(spec)
    cached = _POD_SPEC_CACHE.get(key) if key is not None else None
    if cached is not None:
        template, defaulted = cached
        if defaulted is not None:  # lay the defaults down as decoding would have
            node_name_value = spec.get("nodeName")
            spec = json.loads(defaulted)
            if isinstance(node_name_value, str):
                spec["nodeName"] = node_name_value
            manifest["spec"] = spec
        # Every field but nodeName is immutable or copied: no two pods share anything mutable.
        return PodSpec(
            containers=template.containers,
            init_containers=template.init_containers,
            overhead=template.overhead,
            node_name=_object_name(spec, "nodeName", "spec", errors),
            node_selector=dict(template.node_selector),
            affinity=template.affinity,
            tolerations=template.tolerations,
            topology_spread_constraints=template.topology_spread_constraints,
            priority_class_name=template.priority_class_name,
            priority=template.priority,
            preemption_policy=template.preemption_policy,
            termination_grace_period_seconds=template.termination_grace_period_seconds,
            scheduler_name=template.scheduler_name,
        )
    errors_before = len(errors)
    decoded = _decode_pod_spec_uncached(spec, errors)
    if key is not None and len(errors) == errors_before:
        if len(_POD_SPEC_CACHE) >= _POD_SPEC_CACHE_ENTRIES:
            del _POD_SPEC_CACHE[next(iter(_POD_SPEC_CACHE))]  # the oldest entry
        after = _pod_spec_key(spec)
        template = replace(decoded, node_name="", node_selector=dict(decoded.node_selector))
        _POD_SPEC_CACHE[key] = (template, None if after == key else after)
    return decoded


def _decode_pod_spec_uncached(spec: dict[str, Any], errors: list[FieldError]) -> PodSpec:
    names: set[str] = set()
    containers = [
        (p, _decode_container(c, p, errors, names, init=False)) for p, c in _items(spec, "containers", "spec")
    ]
    if not containers:
        errors.append(required("spec.containers"))
    init_containers = [
        (p, _decode_container(c, p, errors, names, init=True)) for p, c in _items(spec, "initContainers", "spec")
    ]
    errors.extend(host_port_errors(containers))
    for entry in init_containers:  # init containers run one at a time: conflicts only within one
        errors.extend(host_port_errors([entry]))
    overhead_doc = _object(spec, "overhead", "spec") or {}
    errors.extend(resource_name_errors(overhead_doc, "spec.overhead"))
    overhead = _quantities(overhead_doc, "spec.overhead", errors)
    node_selector = _string_map(spec, "nodeSelector", "spec")
    errors.extend(validate_labels(node_selector, "spec.nodeSelector"))
    node_name = _object_name(spec, "nodeName", "spec", errors)
    affinity = _decode_affinity(spec)
    if affinity is not None:
        errors.extend(validate_affinity(affinity, "spec.affinity"))
    tolerations = tuple(_decode_toleration(t, p, errors) for p, t in _items(spec, "tolerations", "spec"))
    constraints = tuple(_decode_spread_constraint(c, p) for p, c in _items(spec, "topologySpreadConstraints", "spec"))
    errors.extend(validate_topology_spread_constraints(constraints, "spec.topologySpreadConstraints"))
    return PodSpec(
        containers=tuple(container for _, container in containers),
        init_containers=tuple(container for _, container in init_containers),
        overhead=_canonical_list(overhead),
        node_name=node_name,
        node_selector=node_selector,
        affinity=affinity,
        tolerations=tolerations,
        topology_spread_constraints=constraints,
        priority_class_name=_object_name(spec, "priorityClassName", "spec", errors),
        priority=_int32(spec, "priority", "spec"),
        preemption_policy=_optional_policy(spec, "preemptionPolicy", "spec", errors),
        termination_grace_period_seconds=_grace_period(spec, errors),
        scheduler_name=_scheduler_name(spec, errors),
    )


def _optional_policy(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> str | None:
    if doc.get(key) is None:
        return None
    policy = _string(doc, key, path)
    errors.extend(validate_preemption_policy(policy, _at(path, key)))
    return policy


def _grace_period(spec: dict[str, Any], errors: list[FieldError]) -> int:
    seconds = _int64(spec, "terminationGracePeriodSeconds", "spec")
    if seconds is None:
        seconds = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
        spec["terminationGracePeriodSeconds"] = seconds
    errors.extend(termination_grace_period_errors(seconds, "spec.terminationGracePeriodSeconds"))
    return seconds


def _scheduler_name(spec: dict[str, Any], errors: list[FieldError]) -> str:
    name = _string(spec, "schedulerName", "spec") or DEFAULT_SCHEDULER_NAME
    spec["schedulerName"] = name
    errors.extend(object_name_errors(name, "spec.schedulerName"))
    return name


def _decode_condition(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> PodCondition:
    condition = PodCondition(
        type=_string(doc, "type", path),
        status=_string(doc, "status", path),
        reason=_string(doc, "reason", path),
        message=_string(doc, "message", path),
        last_transition_time=_timestamp(doc, "lastTransitionTime", path, errors),
    )
    errors.extend(validate_pod_condition(condition, path))
    return condition


def _decode_pod_status(manifest: Mapping[str, Any], errors: list[FieldError]) -> PodStatus:
    """The status fields a pod may be created with: a pod created already placed (spec.nodeName)
    may carry its phase and startTime; conditions and nominatedNodeName round-trip."""
    status = _object(manifest, "status", "") or {}
    phase = _string(status, "phase", "status") or POD_PENDING
    errors.extend(pod_phase_errors(phase, "status.phase"))
    return PodStatus(
        phase=phase,
        nominated_node_name=_object_name(status, "nominatedNodeName", "status", errors),
        start_time=_timestamp(status, "startTime", "status", errors),
        conditions=tuple(_decode_condition(c, p, errors) for p, c in _items(status, "conditions", "status")),
    )


def _decode_pod(manifest: dict[str, Any], errors: list[FieldError]) -> Pod:
    metadata = _decode_meta(manifest, errors, namespaced=True)
    spec = _decode_pod_spec(manifest, errors)
    return Pod(metadata, spec, _decode_pod_status(manifest, errors), source=manifest)


def _node_resource(parsed: Mapping[str, ResourceQuantity]) -> Resource:
    return Resource.from_map({name: _canonical(name, entry) for name, entry in parsed.items()}, keep_zero_scalars=True)


def _decode_node_status(manifest: dict[str, Any], errors: list[FieldError]) -> NodeStatus:
    """capacity and allocatable. A resource missing from allocatable defaults to its capacity (what
    a kubelet with no reservations reports); `pods` defaults to 110 when given in neither."""
    status = _object(manifest, "status", "") or {}
    manifest["status"] = status
    capacity_doc = _object(status, "capacity", "status") or {}
    allocatable_doc = _object(status, "allocatable", "status") or {}
    if RESOURCE_PODS not in capacity_doc and RESOURCE_PODS not in allocatable_doc:
        capacity_doc[RESOURCE_PODS] = str(DEFAULT_NODE_PODS)
    capacity = _quantities(capacity_doc, "status.capacity", errors, keyed=False)
    allocatable = _quantities(allocatable_doc, "status.allocatable", errors, keyed=False)
    for name, entry in capacity.items():
        if name not in allocatable_doc:
            allocatable_doc[name] = entry.text
            allocatable[name] = entry
    status["capacity"], status["allocatable"] = capacity_doc, allocatable_doc
    return NodeStatus(_node_resource(capacity), _node_resource(allocatable))


def _decode_node(manifest: dict[str, Any], errors: list[FieldError]) -> Node:
    metadata = _decode_meta(manifest, errors, namespaced=False)
    spec = _object(manifest, "spec", "") or {}
    unschedulable = _boolean(spec, "unschedulable", "spec")
    taints = tuple(_decode_taint(doc, path) for path, doc in _items(spec, "taints", "spec"))
    errors.extend(validate_taints(taints, "spec.taints"))
    return Node(metadata, NodeSpec(unschedulable, taints), _decode_node_status(manifest, errors), source=manifest)


def _decode_priority_class(manifest: dict[str, Any], errors: list[FieldError]) -> PriorityClass:
    """The PriorityClass schema: `value` is a required int32; preemptionPolicy defaults to
    PreemptLowerPriority (v1 defaulting). Reserved names and the value ceiling are checked by
    `podsched.admission.priority.validate_priority_class`."""
    metadata = _decode_meta(manifest, errors, namespaced=False)
    value = _int32(manifest, "value", "")
    if value is None:
        errors.append(required("value"))
    policy = _string(manifest, "preemptionPolicy", "", default=PREEMPT_LOWER_PRIORITY)
    manifest["preemptionPolicy"] = policy
    errors.extend(validate_preemption_policy(policy, "preemptionPolicy"))
    return PriorityClass(
        metadata,
        value=value or 0,
        global_default=_boolean(manifest, "globalDefault", ""),
        description=_string(manifest, "description", ""),
        preemption_policy=policy,
        source=manifest,
    )


def _decode_pdb(manifest: dict[str, Any], errors: list[FieldError]) -> PodDisruptionBudget:
    """ValidatePodDisruptionBudgetSpec. Status is the system's to compute: input status is dropped,
    as the API server does on create."""
    metadata = _decode_meta(manifest, errors, namespaced=True)
    manifest.pop("status", None)
    spec = _object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    min_available = _int_or_string(spec, "minAvailable", "spec")
    max_unavailable = _int_or_string(spec, "maxUnavailable", "spec")
    selector = _decode_label_selector(spec, "selector", "spec")
    eviction_policy = _string(spec, "unhealthyPodEvictionPolicy", "spec")
    errors.extend(validate_pod_disruption_budget_spec(min_available, max_unavailable, selector, eviction_policy))
    return PodDisruptionBudget(metadata, selector, min_available, max_unavailable, source=manifest)


_BINARY_SUFFIX_RE = re.compile(r"[KMGTPE]i$")


def _decode_hard(spec: Mapping[str, Any], errors: list[FieldError]) -> tuple[dict[str, Fraction], frozenset[str]]:
    """spec.hard: each name a quota resource, each value a quantity (non-negative; whole for object
    counts and extended resources). Returns the exact values and the names written in binary SI."""
    hard: dict[str, Fraction] = {}
    binary: set[str] = set()
    for name, raw in (_object(spec, "hard", "spec") or {}).items():
        path = f"spec.hard[{name}]"
        errors.extend(quota_resource_name_errors(name, path))
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            errors.append(invalid_quantity(path, raw))
            continue
        try:
            value = quantity.parse_quantity(raw)
        except quantity.QuantityError as exc:
            errors.append(invalid_quantity(path, raw, exc))
            continue
        written_binary = isinstance(raw, str) and bool(_BINARY_SUFFIX_RE.search(raw.strip()))
        errors.extend(quota_quantity_errors(name, value, quantity.format_canonical(value, binary=written_binary), path))
        hard[name] = value
        if written_binary:
            binary.add(name)
    return hard, frozenset(binary)


def _decode_resource_quota(manifest: dict[str, Any], errors: list[FieldError]) -> ResourceQuota:
    """ValidateResourceQuota (metadata, spec.hard, spec.scopes, spec.scopeSelector). Status is the
    system's to compute: input status is dropped, as the API server does on create."""
    metadata = _decode_meta(manifest, errors, namespaced=True)
    manifest.pop("status", None)
    spec = _object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    hard, binary = _decode_hard(spec, errors)
    written = list((_object(spec, "hard", "spec") or {}).keys())
    scopes = _string_list(spec, "scopes", "spec")
    selector_doc = _object(spec, "scopeSelector", "spec")
    selector: tuple[ScopedResourceSelectorRequirement, ...] | None = None
    if selector_doc is not None:
        selector = tuple(
            ScopedResourceSelectorRequirement(
                _string(item, "scopeName", item_path),
                _string(item, "operator", item_path),
                _string_list(item, "values", item_path),
            )
            for item_path, item in _items(selector_doc, "matchExpressions", "spec.scopeSelector")
        )
    errors.extend(validate_quota_scopes(scopes, written))
    errors.extend(validate_scope_selector(selector, written, scopes))
    return ResourceQuota(metadata, hard, binary, scopes, selector, source=manifest)


_Decoder = Callable[[dict[str, Any], list[FieldError]], ApiObject]
_DECODERS: dict[str, _Decoder] = {
    KIND_NODE: _decode_node,
    KIND_POD: _decode_pod,
    KIND_PRIORITY_CLASS: _decode_priority_class,
    KIND_PDB: _decode_pdb,
    KIND_RESOURCE_QUOTA: _decode_resource_quota,
}


def _identity(doc: Mapping[str, Any], kind: str) -> tuple[str, str]:
    """Best-effort (name, namespace) of a document that may not decode, to name it in errors."""
    metadata = doc.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = metadata.get("name")
    name = name if isinstance(name, str) else ""
    if kind not in _NAMESPACED_KINDS:
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
    except (_SchemaError, DocumentError) as exc:
        version = api_version.rsplit("/", 1)[-1]
        detail = f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}'
        raise ApiError.bad_request(kind, name, detail, namespace) from None
    if errors:
        raise ApiError.invalid(kind, obj.metadata.name, errors, obj.metadata.namespace)
    return obj


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


# --- encoding --------------------------------------------------------------------------------------------


def _put(doc: dict[str, Any], key: str, value: Any) -> None:
    """Set a field, or drop it when empty (upstream's `omitempty`); 0 and False are kept."""
    if value is None or value == "" or (isinstance(value, dict | list) and not value):
        doc.pop(key, None)
    else:
        doc[key] = value


def _child(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    if not isinstance(value, dict):
        value = {}
        doc[key] = value
    return value


def render_quantity(name: str, value: int) -> str:
    """A canonical amount as Kubernetes prints it: CPU `500m`/`4`, byte resources `32Gi`,
    counts plainly."""
    if name == RESOURCE_CPU:
        return quantity.format_milli_cpu(value)
    if name in _BYTE_RESOURCES or is_hugepages_resource(name):
        return quantity.format_bytes(value)
    return str(value)


_BYTE_QUOTA_RESOURCES = (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE, "storage")


def render_quota_quantity(name: str, value: Fraction, binary: bool | None = None) -> str:
    """A quota amount (exact, in base units) as Quantity.String() prints it: spec.hard in the SI
    family it was written in (`binary`), usage of byte resources in binary SI when it is a whole
    number of KiB (pods request `512Mi` far more often than `500M`), everything else decimal SI
    (`3600m`, `2`, `1k`)."""
    if binary is None:
        base = name.split(".", 1)[1] if name.startswith(("requests.", "limits.")) else name
        binary = (base in _BYTE_QUOTA_RESOURCES or is_hugepages_resource(base)) and value % 1024 == 0
    return quantity.format_canonical(value, binary=binary)


def _timestamp_text(moment: float | None) -> str | None:
    return None if moment is None else format_timestamp(moment)


def _encode_meta(meta: ObjectMeta, source: Any, *, namespaced: bool) -> dict[str, Any]:
    """The typed metadata (name always, the rest when set), then the manifest's other fields."""
    owned = {
        "namespace": meta.namespace if namespaced else "",
        "uid": meta.uid,
        "resourceVersion": str(meta.resource_version) if meta.resource_version else None,
        "creationTimestamp": _timestamp_text(meta.creation_timestamp),
        "deletionTimestamp": _timestamp_text(meta.deletion_timestamp),
        "deletionGracePeriodSeconds": meta.deletion_grace_period_seconds,
        "generation": meta.generation or None,
        "labels": dict(meta.labels),
        "annotations": dict(meta.annotations),
    }
    out: dict[str, Any] = {"name": meta.name}
    for key, value in owned.items():
        _put(out, key, value)
    rest = source if isinstance(source, dict) else {}
    out.update({key: value for key, value in rest.items() if key != "name" and key not in owned})
    return out


def _encode_label_selector(selector: LabelSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "matchLabels", dict(selector.match_labels))
    _put(out, "matchExpressions", _encode_requirements(selector.match_expressions))
    return out


def _encode_requirements(
    requirements: Iterable[LabelSelectorRequirement | NodeSelectorRequirement],
) -> list[dict[str, Any]]:
    encoded = []
    for requirement in requirements:
        out: dict[str, Any] = {"key": requirement.key, "operator": requirement.operator}
        _put(out, "values", list(requirement.values))
        encoded.append(out)
    return encoded


def _encode_node_selector_term(term: NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "matchExpressions", _encode_requirements(term.match_expressions))
    _put(out, "matchFields", _encode_requirements(term.match_fields))
    return out


def _encode_pod_affinity_term(term: PodAffinityTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if term.label_selector is not None:
        out["labelSelector"] = _encode_label_selector(term.label_selector)
    _put(out, "namespaces", list(term.namespaces))
    if term.namespace_selector is not None:
        out["namespaceSelector"] = _encode_label_selector(term.namespace_selector)
    out["topologyKey"] = term.topology_key
    _put(out, "matchLabelKeys", list(term.match_label_keys))
    _put(out, "mismatchLabelKeys", list(term.mismatch_label_keys))
    return out


def _encode_pod_affinity(affinity: PodAffinity) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, REQUIRED_TERMS, [_encode_pod_affinity_term(term) for term in affinity.required])
    _put(
        out,
        PREFERRED_TERMS,
        [{"weight": w.weight, "podAffinityTerm": _encode_pod_affinity_term(w.term)} for w in affinity.preferred],
    )
    return out


def _encode_affinity(affinity: Affinity) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node = affinity.node_affinity
    if node is not None:
        encoded: dict[str, Any] = {}
        if node.required is not None:
            encoded[REQUIRED_TERMS] = {"nodeSelectorTerms": [_encode_node_selector_term(t) for t in node.required]}
        _put(
            encoded,
            PREFERRED_TERMS,
            [{"weight": p.weight, "preference": _encode_node_selector_term(p.preference)} for p in node.preferred],
        )
        out["nodeAffinity"] = encoded
    if affinity.pod_affinity is not None:
        out["podAffinity"] = _encode_pod_affinity(affinity.pod_affinity)
    if affinity.pod_anti_affinity is not None:
        out["podAntiAffinity"] = _encode_pod_affinity(affinity.pod_anti_affinity)
    return out


def _encode_toleration(toleration: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "key", toleration.key)
    out["operator"] = toleration.operator
    _put(out, "value", toleration.value)
    _put(out, "effect", toleration.effect)
    _put(out, "tolerationSeconds", toleration.toleration_seconds)
    return out


def _encode_spread_constraint(constraint: TopologySpreadConstraint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "maxSkew": constraint.max_skew,
        "topologyKey": constraint.topology_key,
        "whenUnsatisfiable": constraint.when_unsatisfiable,
    }
    if constraint.label_selector is not None:
        out["labelSelector"] = _encode_label_selector(constraint.label_selector)
    _put(out, "minDomains", constraint.min_domains)
    out["nodeAffinityPolicy"] = constraint.node_affinity_policy
    out["nodeTaintsPolicy"] = constraint.node_taints_policy
    _put(out, "matchLabelKeys", list(constraint.match_label_keys))
    return out


def _encode_container(container: Container) -> dict[str, Any]:
    out: dict[str, Any] = {"name": container.name}
    requests = {name: render_quantity(name, value) for name, value in container.requests}
    limits = {name: render_quantity(name, value) for name, value in container.limits}
    if requests or limits:
        out["resources"] = {}
        _put(out["resources"], "limits", limits)
        _put(out["resources"], "requests", requests)
    ports = []
    for port in container.ports:
        encoded: dict[str, Any] = {"containerPort": port.container_port, "protocol": port.protocol}
        _put(encoded, "hostPort", port.host_port or None)
        _put(encoded, "hostIP", port.host_ip)
        ports.append(encoded)
    _put(out, "ports", ports)
    _put(out, "restartPolicy", container.restart_policy)
    return out


# What `_fill_pod_spec` renders for each field a pod's manifest is silent on.
_POD_SPEC_FIELDS: tuple[tuple[str, Callable[[PodSpec], Any]], ...] = (
    ("containers", lambda spec: [_encode_container(c) for c in spec.containers]),
    ("initContainers", lambda spec: [_encode_container(c) for c in spec.init_containers]),
    ("overhead", lambda spec: {name: render_quantity(name, value) for name, value in spec.overhead}),
    ("nodeSelector", lambda spec: dict(spec.node_selector)),
    ("affinity", lambda spec: None if spec.affinity is None else _encode_affinity(spec.affinity)),
    ("tolerations", lambda spec: [_encode_toleration(t) for t in spec.tolerations]),
    (
        "topologySpreadConstraints",
        lambda spec: [_encode_spread_constraint(c) for c in spec.topology_spread_constraints],
    ),
    ("schedulerName", lambda spec: spec.scheduler_name),
)


def _fill_pod_spec(spec: PodSpec, doc: dict[str, Any]) -> None:
    """Render the typed spec into fields the manifest is silent on (an object built in code rather
    than decoded has no manifest); fields the manifest has are kept as written, and not rendered."""
    for key, render in _POD_SPEC_FIELDS:
        if key not in doc:
            _put(doc, key, render(spec))


def _encode_condition(condition: PodCondition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": condition.type, "status": condition.status}
    _put(out, "reason", condition.reason)
    _put(out, "message", condition.message)
    _put(out, "lastTransitionTime", _timestamp_text(condition.last_transition_time))
    return out


def _overlay_pod(pod: Pod, body: dict[str, Any]) -> None:
    spec = _child(body, "spec")
    _fill_pod_spec(pod.spec, spec)
    _put(spec, "nodeName", pod.spec.node_name)
    _put(spec, "priorityClassName", pod.spec.priority_class_name)
    _put(spec, "priority", pod.spec.priority)
    _put(spec, "preemptionPolicy", pod.spec.preemption_policy)
    spec["terminationGracePeriodSeconds"] = pod.spec.termination_grace_period_seconds
    status = _child(body, "status")
    status["phase"] = pod.status.phase
    _put(status, "nominatedNodeName", pod.status.nominated_node_name)
    _put(status, "startTime", _timestamp_text(pod.status.start_time))
    _put(status, "conditions", [_encode_condition(c) for c in pod.status.conditions])


def _render_resources(resource: Resource, names: Iterable[str]) -> dict[str, str]:
    return {name: render_quantity(name, resource.get(name)) for name in sorted(names)}


def _overlay_node(node: Node, body: dict[str, Any]) -> None:
    spec = _child(body, "spec")
    _put(spec, "unschedulable", True if node.spec.unschedulable else None)
    written = {(t.get("key"), t.get("effect")): t for t in spec.get("taints") or [] if isinstance(t, dict)}
    taints = []
    for taint in node.spec.taints:
        encoded = dict(written.get((taint.key, taint.effect), {}))  # keeps e.g. timeAdded
        encoded.update(key=taint.key, effect=taint.effect)
        _put(encoded, "value", taint.value)
        taints.append(encoded)
    _put(spec, "taints", taints)
    capacity, allocatable = node.status.capacity, node.status.allocatable
    standard = [RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS]
    if capacity.ephemeral_storage or allocatable.ephemeral_storage:
        standard.append(RESOURCE_EPHEMERAL_STORAGE)
    status = _child(body, "status")
    status["capacity"] = _render_resources(capacity, [*standard, *capacity.scalar])
    # Every capacity resource is named in allocatable too, so decoding never re-defaults it.
    status["allocatable"] = _render_resources(allocatable, {*standard, *capacity.scalar, *allocatable.scalar})


def _overlay_priority_class(priority_class: PriorityClass, body: dict[str, Any]) -> None:
    body["value"] = priority_class.value
    _put(body, "globalDefault", True if priority_class.global_default else None)
    _put(body, "description", priority_class.description)
    body["preemptionPolicy"] = priority_class.preemption_policy


def _overlay_pdb(pdb: PodDisruptionBudget, body: dict[str, Any]) -> None:
    spec = _child(body, "spec")
    _put(spec, "minAvailable", pdb.min_available)
    _put(spec, "maxUnavailable", pdb.max_unavailable)
    if "selector" not in spec and pdb.selector is not None:
        spec["selector"] = _encode_label_selector(pdb.selector)
    status = pdb.status
    rendered: dict[str, Any] = {}
    _put(rendered, "observedGeneration", status.observed_generation or None)
    rendered.update(
        currentHealthy=status.current_healthy,
        desiredHealthy=status.desired_healthy,
        disruptionsAllowed=status.disruptions_allowed,
        expectedPods=status.expected_pods,
    )
    _put(rendered, "disruptedPods", {name: format_timestamp(t) for name, t in sorted(status.disrupted_pods.items())})
    body["status"] = rendered


def _overlay_resource_quota(quota: ResourceQuota, body: dict[str, Any]) -> None:
    spec = _child(body, "spec")
    spec["hard"] = {
        name: render_quota_quantity(name, value, name in quota.binary_hard) for name, value in quota.hard.items()
    }
    _put(spec, "scopes", list(quota.scopes))
    if quota.scope_selector is not None:
        spec["scopeSelector"] = {
            "matchExpressions": [
                {"scopeName": r.scope_name, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                for r in quota.scope_selector
            ]
        }
    status: dict[str, Any] = {}
    hard, used = quota.status.hard, quota.status.used
    _put(
        status,
        "hard",
        {name: render_quota_quantity(name, hard[name], name in quota.binary_hard) for name in sorted(hard)},
    )
    _put(status, "used", {name: render_quota_quantity(name, used[name]) for name in sorted(used)})
    body["status"] = status


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
    source = _copy_document(obj.source)
    body = {key: value for key, value in source.items() if key not in ("apiVersion", "kind", "metadata")}
    namespaced = obj.kind in _NAMESPACED_KINDS
    head: dict[str, Any] = {
        "apiVersion": ACCEPTED_TYPES[obj.kind][0],
        "kind": obj.kind,
        "metadata": _encode_meta(obj.metadata, source.get("metadata"), namespaced=namespaced),
    }
    if isinstance(obj, Pod):
        _overlay_pod(obj, body)
    elif isinstance(obj, Node):
        _overlay_node(obj, body)
    elif isinstance(obj, PriorityClass):
        _overlay_priority_class(obj, body)
    elif isinstance(obj, ResourceQuota):
        _overlay_resource_quota(obj, body)
    else:
        _overlay_pdb(obj, body)
    # Kubernetes' field order: spec, then status, after any other top-level fields.
    ordered = {key: value for key, value in body.items() if key not in ("spec", "status")}
    ordered.update({key: body[key] for key in ("spec", "status") if key in body})
    return {**head, **ordered}
