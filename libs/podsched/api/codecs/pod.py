"""The Pod codec: spec (containers, affinity, tolerations, topology spread, defaults) and status.

A decoded spec is kept in `_POD_SPEC_CACHE` by its JSON text: replicas decode every pod at least
twice and pods from one template share their spec, so decoding a pod is mostly a cache hit."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from podsched.api import json_text
from podsched.api.codecs.fields import (
    at,
    child,
    get_int32,
    get_int64,
    get_items,
    get_object,
    get_object_name,
    get_string,
    get_string_list,
    get_string_map,
    get_timestamp,
    put,
    timestamp_text,
    typed_field,
)
from podsched.api.codecs.meta import decode_meta, decode_recorded_meta, recorded_meta_again
from podsched.api.codecs.quantities import canonical_list, parse_quantities, render_quantity
from podsched.api.codecs.selectors import (
    decode_label_selector,
    decode_requirement,
    encode_label_selector,
    encode_requirements,
)
from podsched.api.errors import FieldError
from podsched.api.timestamps import parse_timestamp
from podsched.api.types import (
    DEFAULT_SCHEDULER_NAME,
    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
    POD_PENDING,
    Affinity,
    Container,
    ContainerPort,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodCondition,
    PodSpec,
    PodStatus,
    PreferredSchedulingTerm,
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
    object_name_errors,
    pod_phase_errors,
    required,
    resource_name_errors,
    resource_requirements_errors,
    restart_policy_errors,
    termination_grace_period_errors,
    validate_affinity,
    validate_labels,
    validate_pod_condition,
    validate_preemption_policy,
    validate_scheduling_group,
    validate_toleration,
    validate_topology_spread_constraints,
)

_T = TypeVar("_T")
DEFAULT_PROTOCOL = "TCP"


def _decode_requirements(
    container: dict[str, Any], path: str, errors: list[FieldError]
) -> tuple[dict[str, ResourceQuantity], dict[str, ResourceQuantity]]:
    """resources.limits/requests of one container: defaulted (a limit without a request sets the
    request, SetDefaults_Pod) and validated as ValidateContainerResourceRequirements does.
    Returns the parsed (requests, limits)."""
    resources_path = f"{path}.resources"
    resources = get_object(container, "resources", path) or {}
    limits_doc = get_object(resources, "limits", resources_path) or {}
    requests_doc = get_object(resources, "requests", resources_path) or {}
    limits_path, requests_path = f"{resources_path}.limits", f"{resources_path}.requests"
    errors.extend(resource_name_errors(limits_doc, limits_path))
    errors.extend(resource_name_errors(requests_doc, requests_path))
    limits = parse_quantities(limits_doc, limits_path, errors)
    given_requests = parse_quantities(requests_doc, requests_path, errors)
    errors.extend(resource_requirements_errors(limits, given_requests, resources_path))
    defaulted = {name: limit for name, limit in limits.items() if name not in requests_doc and limit.value >= 0}
    if defaulted:
        requests_doc.update({name: limit.text for name, limit in defaulted.items()})
        resources["requests"] = requests_doc
        container["resources"] = resources
    return {**given_requests, **defaulted}, limits


def _decode_port(doc: dict[str, Any], path: str, errors: list[FieldError], names: set[str]) -> ContainerPort:
    """One containerPort; the protocol defaults to TCP."""
    name = get_string(doc, "name", path)
    container_port = get_int32(doc, "containerPort", path) or 0
    host_port = get_int32(doc, "hostPort", path) or 0
    protocol = get_string(doc, "protocol", path) or DEFAULT_PROTOCOL
    doc["protocol"] = protocol
    port = ContainerPort(container_port, host_port, protocol, get_string(doc, "hostIP", path))
    errors.extend(container_port_errors(port, name, path, names))
    return port


def _decode_container(
    doc: dict[str, Any], path: str, errors: list[FieldError], names: set[str], *, init: bool
) -> Container:
    """One container or init container; `names` collects container names across both lists."""
    name = get_string(doc, "name", path)
    errors.extend(container_name_errors(name, f"{path}.name", names))
    requests, limits = _decode_requirements(doc, path, errors)
    port_names: set[str] = set()
    ports = tuple(
        _decode_port(port, port_path, errors, port_names) for port_path, port in get_items(doc, "ports", path)
    )
    restart_policy = get_string(doc, "restartPolicy", path)
    errors.extend(restart_policy_errors(restart_policy, f"{path}.restartPolicy", init=init))
    return Container(name, canonical_list(requests), ports, restart_policy, canonical_list(limits))


def _decode_node_selector_term(doc: Mapping[str, Any], path: str) -> NodeSelectorTerm:
    expressions = tuple(
        decode_requirement(item, item_path, NodeSelectorRequirement)
        for item_path, item in get_items(doc, "matchExpressions", path)
    )
    fields = tuple(
        decode_requirement(item, item_path, NodeSelectorRequirement)
        for item_path, item in get_items(doc, "matchFields", path)
    )
    return NodeSelectorTerm(expressions, fields)


def _decode_preferred(
    affinity: Mapping[str, Any], path: str, term_key: str, decode_term: Callable[[Mapping[str, Any], str], _T]
) -> list[tuple[int, _T]]:
    """(weight, term) for each entry of preferredDuringSchedulingIgnoredDuringExecution."""
    preferred = []
    for item_path, item in get_items(affinity, PREFERRED_TERMS, path):
        weight = get_int32(item, "weight", item_path) or 0
        term_doc = get_object(item, term_key, item_path) or {}
        preferred.append((weight, decode_term(term_doc, f"{item_path}.{term_key}")))
    return preferred


def _decode_node_affinity(doc: Mapping[str, Any], path: str) -> NodeAffinity | None:
    affinity = get_object(doc, "nodeAffinity", path)
    if affinity is None:
        return None
    path = f"{path}.nodeAffinity"
    required_terms: tuple[NodeSelectorTerm, ...] | None = None
    selector = get_object(affinity, REQUIRED_TERMS, path)
    if selector is not None:
        required_terms = tuple(
            _decode_node_selector_term(term, term_path)
            for term_path, term in get_items(selector, "nodeSelectorTerms", f"{path}.{REQUIRED_TERMS}")
        )
    preferred = _decode_preferred(affinity, path, "preference", _decode_node_selector_term)
    return NodeAffinity(required_terms, tuple(PreferredSchedulingTerm(weight, term) for weight, term in preferred))


def _decode_pod_affinity_term(doc: Mapping[str, Any], path: str) -> PodAffinityTerm:
    selector = decode_label_selector(doc, "labelSelector", path)
    namespaces = get_string_list(doc, "namespaces", path)
    namespace_selector = decode_label_selector(doc, "namespaceSelector", path)
    match_keys = get_string_list(doc, "matchLabelKeys", path)
    mismatch_keys = get_string_list(doc, "mismatchLabelKeys", path)
    topology_key = get_string(doc, "topologyKey", path)
    return PodAffinityTerm(topology_key, selector, namespaces, namespace_selector, match_keys, mismatch_keys)


def _decode_pod_affinity(doc: Mapping[str, Any], key: str, path: str) -> PodAffinity | None:
    affinity = get_object(doc, key, path)
    if affinity is None:
        return None
    path = f"{path}.{key}"
    required_terms = tuple(
        _decode_pod_affinity_term(term, term_path) for term_path, term in get_items(affinity, REQUIRED_TERMS, path)
    )
    preferred = _decode_preferred(affinity, path, "podAffinityTerm", _decode_pod_affinity_term)
    return PodAffinity(required_terms, tuple(WeightedPodAffinityTerm(weight, term) for weight, term in preferred))


def _decode_affinity(spec: Mapping[str, Any]) -> Affinity | None:
    affinity = get_object(spec, "affinity", "spec")
    if affinity is None:
        return None
    path = "spec.affinity"
    return Affinity(
        _decode_node_affinity(affinity, path),
        _decode_pod_affinity(affinity, "podAffinity", path),
        _decode_pod_affinity(affinity, "podAntiAffinity", path),
    )


def _decode_toleration(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> Toleration:
    """Validated as written; an empty operator then defaults to Equal."""
    written = Toleration(
        get_string(doc, "key", path),
        get_string(doc, "operator", path),
        get_string(doc, "value", path),
        get_string(doc, "effect", path),
        get_int64(doc, "tolerationSeconds", path),
    )
    errors.extend(validate_toleration(written, path))
    return replace(written, operator=written.operator or "Equal")


def _decode_spread_constraint(doc: Mapping[str, Any], path: str) -> TopologySpreadConstraint:
    max_skew = get_int32(doc, "maxSkew", path) or 0
    topology_key = get_string(doc, "topologyKey", path)
    when = get_string(doc, "whenUnsatisfiable", path)
    min_domains = get_int32(doc, "minDomains", path)
    node_affinity_policy = get_string(doc, "nodeAffinityPolicy", path) or "Honor"
    node_taints_policy = get_string(doc, "nodeTaintsPolicy", path) or "Ignore"
    selector = decode_label_selector(doc, "labelSelector", path)
    match_keys = get_string_list(doc, "matchLabelKeys", path)
    return TopologySpreadConstraint(
        max_skew, topology_key, when, selector, min_domains, node_affinity_policy, node_taints_policy, match_keys
    )


# Pod specs decoded before, by the JSON text of the spec as it arrived (its nodeName blanked): a
# replica decodes every pod at least twice (created, bound) and pods from one template share their
# spec, so most specs have been seen. An entry is (the decoded spec with node_name "", the defaulted
# spec's text, or None when defaulting changed nothing). Only specs that decoded without a single
# error are kept, so a hit is exactly what decoding again would give. Bounded in entries and in the
# size of one key (a huge spec is decoded every time rather than kept).
_POD_SPEC_CACHE: dict[bytes, tuple[PodSpec, bytes | None]] = {}
_POD_SPEC_CACHE_ENTRIES = 4096
_POD_SPEC_CACHE_KEY_BYTES = 8192


def clear_pod_spec_cache() -> None:
    """Forget every decoded pod spec (tests compare cold and warm decoding)."""
    _POD_SPEC_CACHE.clear()


def _pod_spec_key(spec: dict[str, Any]) -> bytes | None:
    """The spec's JSON text with nodeName blanked in place (its position kept, so that putting the
    real value back into a copy of the defaulted spec gives the key order decoding would have).
    `json_text.identity_text`: a key tells specs apart, it need not be the text `json` writes, and
    every fresh decode of a record computes one."""
    if isinstance(spec.get("nodeName"), str):
        spec = {**spec, "nodeName": ""}
    try:
        key = json_text.identity_text(spec)
    except TypeError:  # nothing orjson writes (an integer beyond 64 bits...): decoded every time
        return None
    return key if len(key) <= _POD_SPEC_CACHE_KEY_BYTES else None


def _decode_pod_spec(manifest: dict[str, Any], errors: list[FieldError]) -> PodSpec:
    """ValidatePodSpec for the fields scheduling reads, after upstream's defaulting
    (terminationGracePeriodSeconds 30, schedulerName default-scheduler, port protocol TCP,
    requests from limits). Served from `_POD_SPEC_CACHE` when the same spec decoded cleanly before."""
    spec = get_object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    key = _pod_spec_key(spec)
    cached = _POD_SPEC_CACHE.get(key) if key is not None else None
    if cached is not None:
        spec = _lay_down_defaults(manifest, spec, cached[1])
        return _spec_from_template(cached[0], get_object_name(spec, "nodeName", "spec", errors))
    errors_before = len(errors)
    decoded = _decode_pod_spec_uncached(spec, errors)
    if key is not None and len(errors) == errors_before:
        if len(_POD_SPEC_CACHE) >= _POD_SPEC_CACHE_ENTRIES:
            del _POD_SPEC_CACHE[next(iter(_POD_SPEC_CACHE))]  # the oldest entry
        after = _pod_spec_key(spec)
        template = replace(decoded, node_name="", node_selector=dict(decoded.node_selector))
        _POD_SPEC_CACHE[key] = (template, None if after == key else after)
    return decoded


def _lay_down_defaults(manifest: dict[str, Any], spec: dict[str, Any], defaulted: bytes | None) -> dict[str, Any]:
    """The manifest's spec as decoding it would have defaulted it, given a cache entry's defaulted
    text (None: defaulting changes nothing); its nodeName is the manifest's own."""
    if defaulted is None:
        return spec
    node_name_value = spec.get("nodeName")
    spec = json_text.loads_written(defaulted)
    if isinstance(node_name_value, str):
        spec["nodeName"] = node_name_value
    manifest["spec"] = spec
    return spec


def _spec_from_template(template: PodSpec, node_name: str) -> PodSpec:
    """A cached spec for one pod: every field but nodeName is immutable or copied, so no two pods
    share anything mutable. (Positional, in PodSpec's field order, as every constructor on the
    recorded path: each keyword costs a call ~35 ns more, and every replica makes these for every
    record; `test_recorded_pod_decoding` compares every field with `decode_object`'s.)"""
    return PodSpec(
        template.containers,
        template.init_containers,
        template.overhead,
        node_name,
        dict(template.node_selector),
        template.affinity,
        template.tolerations,
        template.topology_spread_constraints,
        template.priority_class_name,
        template.priority,
        template.preemption_policy,
        template.termination_grace_period_seconds,
        template.scheduler_name,
        template.pod_group_name,
    )


def _decode_pod_spec_uncached(spec: dict[str, Any], errors: list[FieldError]) -> PodSpec:
    names: set[str] = set()
    containers = [
        (p, _decode_container(c, p, errors, names, init=False)) for p, c in get_items(spec, "containers", "spec")
    ]
    if not containers:
        errors.append(required("spec.containers"))
    init_containers = [
        (p, _decode_container(c, p, errors, names, init=True)) for p, c in get_items(spec, "initContainers", "spec")
    ]
    errors.extend(host_port_errors(containers))
    for entry in init_containers:  # init containers run one at a time: conflicts only within one
        errors.extend(host_port_errors([entry]))
    overhead_doc = get_object(spec, "overhead", "spec") or {}
    errors.extend(resource_name_errors(overhead_doc, "spec.overhead"))
    overhead = parse_quantities(overhead_doc, "spec.overhead", errors)
    node_selector = get_string_map(spec, "nodeSelector", "spec")
    errors.extend(validate_labels(node_selector, "spec.nodeSelector"))
    node_name = get_object_name(spec, "nodeName", "spec", errors)
    affinity = _decode_affinity(spec)
    if affinity is not None:
        errors.extend(validate_affinity(affinity, "spec.affinity"))
    tolerations = tuple(_decode_toleration(t, p, errors) for p, t in get_items(spec, "tolerations", "spec"))
    constraints = tuple(
        _decode_spread_constraint(c, p) for p, c in get_items(spec, "topologySpreadConstraints", "spec")
    )
    errors.extend(validate_topology_spread_constraints(constraints, "spec.topologySpreadConstraints"))
    return PodSpec(
        containers=tuple(container for _, container in containers),
        init_containers=tuple(container for _, container in init_containers),
        overhead=canonical_list(overhead),
        node_name=node_name,
        node_selector=node_selector,
        affinity=affinity,
        tolerations=tolerations,
        topology_spread_constraints=constraints,
        priority_class_name=get_object_name(spec, "priorityClassName", "spec", errors),
        priority=get_int32(spec, "priority", "spec"),
        preemption_policy=_optional_policy(spec, "preemptionPolicy", "spec", errors),
        termination_grace_period_seconds=_grace_period(spec, errors),
        scheduler_name=_scheduler_name(spec, errors),
        pod_group_name=_pod_group_name(spec, errors),
    )


def _pod_group_name(spec: dict[str, Any], errors: list[FieldError]) -> str | None:
    """spec.schedulingGroup.podGroupName, or None without a schedulingGroup."""
    group = get_object(spec, "schedulingGroup", "spec")
    if group is None:
        return None
    name = typed_field(group, "podGroupName", "spec.schedulingGroup", str, "string")
    errors.extend(validate_scheduling_group(name))
    return name


def _optional_policy(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> str | None:
    if doc.get(key) is None:
        return None
    policy = get_string(doc, key, path)
    errors.extend(validate_preemption_policy(policy, at(path, key)))
    return policy


def _grace_period(spec: dict[str, Any], errors: list[FieldError]) -> int:
    seconds = get_int64(spec, "terminationGracePeriodSeconds", "spec")
    if seconds is None:
        seconds = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
        spec["terminationGracePeriodSeconds"] = seconds
    errors.extend(termination_grace_period_errors(seconds, "spec.terminationGracePeriodSeconds"))
    return seconds


def _scheduler_name(spec: dict[str, Any], errors: list[FieldError]) -> str:
    name = get_string(spec, "schedulerName", "spec") or DEFAULT_SCHEDULER_NAME
    spec["schedulerName"] = name
    errors.extend(object_name_errors(name, "spec.schedulerName"))
    return name


def _decode_condition(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> PodCondition:
    condition = PodCondition(
        type=get_string(doc, "type", path),
        status=get_string(doc, "status", path),
        reason=get_string(doc, "reason", path),
        message=get_string(doc, "message", path),
        last_transition_time=get_timestamp(doc, "lastTransitionTime", path, errors),
    )
    errors.extend(validate_pod_condition(condition, path))
    return condition


def _decode_pod_status(manifest: Mapping[str, Any], errors: list[FieldError]) -> PodStatus:
    """The status fields a pod may be created with: a pod created already placed (spec.nodeName)
    may carry its phase and startTime; conditions and nominatedNodeName round-trip."""
    status = get_object(manifest, "status", "") or {}
    phase = get_string(status, "phase", "status") or POD_PENDING
    errors.extend(pod_phase_errors(phase, "status.phase"))
    return PodStatus(
        phase=phase,
        nominated_node_name=get_object_name(status, "nominatedNodeName", "status", errors),
        start_time=get_timestamp(status, "startTime", "status", errors),
        conditions=tuple(_decode_condition(c, p, errors) for p, c in get_items(status, "conditions", "status")),
        reason=get_string(status, "reason", "status"),
        message=get_string(status, "message", "status"),
    )


def decode_pod(manifest: dict[str, Any], errors: list[FieldError]) -> Pod:
    metadata = decode_meta(manifest, errors, namespaced=True)
    spec = _decode_pod_spec(manifest, errors)
    return Pod(metadata, spec, _decode_pod_status(manifest, errors), source=manifest)


def decode_recorded_pod(manifest: dict[str, Any]) -> Pod | None:
    """A pod record's JSON as the binder wrote it (`encode_json` of a pod that `decode_object`
    admitted), decoded without checking it again: what `decode_object(manifest, owned=True)` gives,
    read field by field with no type checks and no validation. The spec comes from
    `_POD_SPEC_CACHE` only, which holds specs that decoded without an error; on a miss this returns
    None and changes nothing, and the caller decodes the record with `decode_object` (which fills
    the cache: pods of one template miss once per process).

    Every replica decodes every pod record it follows, each already validated by the binder; this
    is how it skips that work. A record the binder did not write must go through `decode_object`:
    on anything else what this gives is undefined. `tests/unit/test_recorded_pod_decoding.py` checks
    with hypothesis that it gives exactly what `decode_object` gives on records of every valid pod."""
    spec = manifest["spec"]
    key = _pod_spec_key(spec)
    cached = _POD_SPEC_CACHE.get(key) if key is not None else None
    if cached is None:
        return None
    metadata = decode_recorded_meta(manifest)
    spec = _lay_down_defaults(manifest, spec, cached[1])
    return Pod(
        metadata, _spec_from_template(cached[0], spec.get("nodeName") or ""), _recorded_status(manifest), manifest
    )


def _recorded_status(manifest: dict[str, Any]) -> PodStatus:
    """A recorded pod's status (what the binder validated; every record decodes it anew)."""
    get = (manifest.get("status") or {}).get
    started = get("startTime")
    start_time = None if started is None else parse_timestamp(started)
    conditions = get("conditions")
    return PodStatus(  # positional, in field order (`_spec_from_template`)
        get("phase") or POD_PENDING,  # phase
        get("nominatedNodeName") or "",  # nominated_node_name
        start_time,
        tuple(_recorded_condition(c, started, start_time) for c in conditions) if conditions else (),  # conditions
        get("reason") or "",  # reason
        get("message") or "",  # message
    )


def decode_recorded_pod_update(manifest: dict[str, Any], held: Pod) -> Pod | None:
    """`decode_recorded_pod` of a later record of the pod `held`, which was decoded from an earlier
    record (its `source`) and not changed since: a replica's copy, which only the log changes. A
    pod's updates (a failed attempt, a nomination, the binding, the termination) rarely change
    its metadata and change its spec only in nodeName: a part whose JSON is what `held` was decoded
    from (apart from resourceVersion and nodeName) is taken from `held`, not decoded again; the
    status, and metadata that changed, are decoded. None when the spec changed otherwise: the
    caller decodes the record whole (the manifest is left as it came).

    `tests/unit/test_restore_change.py` checks with hypothesis that it gives what decoding the
    record whole gives."""
    previous = held.source
    metadata = manifest["metadata"]
    spec = manifest["spec"]
    previous_metadata = previous.get("metadata")
    previous_spec = previous.get("spec")
    if not isinstance(previous_metadata, dict) or not isinstance(previous_spec, dict):
        return None
    if {**spec, "nodeName": None} != {**previous_spec, "nodeName": None}:
        return None
    version = metadata.get("resourceVersion")
    if {**metadata, "resourceVersion": None} == {**previous_metadata, "resourceVersion": None}:
        decoded_metadata = recorded_meta_again(held.metadata, int(version) if version else 0)
    else:
        decoded_metadata = decode_recorded_meta(manifest)  # a termination, a label changed...
    return Pod(  # positional, in field order (`_spec_from_template`)
        decoded_metadata,
        _spec_from_template(held.spec, spec.get("nodeName") or ""),
        _recorded_status(manifest),
        manifest,  # source
        # _requests: the effective request is a function of the spec, which is the held one's: the
        # bound pod's NodeInfo.add_pod need not compute it again (the filter computed it to place the pod).
        held._requests,
    )


def _recorded_condition(doc: dict[str, Any], started: str | None, start_time: float | None) -> PodCondition:
    """`started`, `start_time`: the status' startTime as written and as read. A bound pod's
    PodScheduled condition changed when it started (the binder writes both from one clock reading),
    and its time is not read twice."""
    moment = doc.get("lastTransitionTime")
    if moment is None:
        changed = None
    elif moment == started:
        changed = start_time
    else:
        changed = parse_timestamp(moment)
    return PodCondition(  # positional, in field order (`_spec_from_template`)
        doc.get("type") or "",  # type
        doc.get("status") or "",  # status
        doc.get("reason") or "",  # reason
        doc.get("message") or "",  # message
        changed,  # last_transition_time
    )


def _encode_node_selector_term(term: NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, "matchExpressions", encode_requirements(term.match_expressions))
    put(out, "matchFields", encode_requirements(term.match_fields))
    return out


def _encode_pod_affinity_term(term: PodAffinityTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if term.label_selector is not None:
        out["labelSelector"] = encode_label_selector(term.label_selector)
    put(out, "namespaces", list(term.namespaces))
    if term.namespace_selector is not None:
        out["namespaceSelector"] = encode_label_selector(term.namespace_selector)
    out["topologyKey"] = term.topology_key
    put(out, "matchLabelKeys", list(term.match_label_keys))
    put(out, "mismatchLabelKeys", list(term.mismatch_label_keys))
    return out


def _encode_pod_affinity(affinity: PodAffinity) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, REQUIRED_TERMS, [_encode_pod_affinity_term(term) for term in affinity.required])
    put(
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
        put(
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
    put(out, "key", toleration.key)
    out["operator"] = toleration.operator
    put(out, "value", toleration.value)
    put(out, "effect", toleration.effect)
    put(out, "tolerationSeconds", toleration.toleration_seconds)
    return out


def _encode_spread_constraint(constraint: TopologySpreadConstraint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "maxSkew": constraint.max_skew,
        "topologyKey": constraint.topology_key,
        "whenUnsatisfiable": constraint.when_unsatisfiable,
    }
    if constraint.label_selector is not None:
        out["labelSelector"] = encode_label_selector(constraint.label_selector)
    put(out, "minDomains", constraint.min_domains)
    out["nodeAffinityPolicy"] = constraint.node_affinity_policy
    out["nodeTaintsPolicy"] = constraint.node_taints_policy
    put(out, "matchLabelKeys", list(constraint.match_label_keys))
    return out


def _encode_container(container: Container) -> dict[str, Any]:
    out: dict[str, Any] = {"name": container.name}
    requests = {name: render_quantity(name, value) for name, value in container.requests}
    limits = {name: render_quantity(name, value) for name, value in container.limits}
    if requests or limits:
        out["resources"] = {}
        put(out["resources"], "limits", limits)
        put(out["resources"], "requests", requests)
    ports = []
    for port in container.ports:
        encoded: dict[str, Any] = {"containerPort": port.container_port, "protocol": port.protocol}
        put(encoded, "hostPort", port.host_port or None)
        put(encoded, "hostIP", port.host_ip)
        ports.append(encoded)
    put(out, "ports", ports)
    put(out, "restartPolicy", container.restart_policy)
    return out


# What `_fill_pod_spec` renders for each field a pod's manifest is silent on: (key, the typed
# field, its rendering). An empty typed field renders empty, which is not written.
_POD_SPEC_FIELDS: tuple[tuple[str, str, Callable[[PodSpec], Any]], ...] = (
    ("containers", "containers", lambda spec: [_encode_container(c) for c in spec.containers]),
    ("initContainers", "init_containers", lambda spec: [_encode_container(c) for c in spec.init_containers]),
    (
        "overhead",
        "overhead",
        lambda spec: {name: render_quantity(name, value) for name, value in spec.overhead},
    ),
    ("nodeSelector", "node_selector", lambda spec: dict(spec.node_selector)),
    ("affinity", "affinity", lambda spec: None if spec.affinity is None else _encode_affinity(spec.affinity)),
    ("tolerations", "tolerations", lambda spec: [_encode_toleration(t) for t in spec.tolerations]),
    (
        "topologySpreadConstraints",
        "topology_spread_constraints",
        lambda spec: [_encode_spread_constraint(c) for c in spec.topology_spread_constraints],
    ),
    ("schedulerName", "scheduler_name", lambda spec: spec.scheduler_name),
)


def _fill_pod_spec(spec: PodSpec, doc: dict[str, Any]) -> None:
    """Render the typed spec into fields the manifest is silent on (an object built in code rather
    than decoded has no manifest); fields the manifest has are kept as written, and not rendered.
    An empty typed field is skipped unrendered: `put` would write nothing for it."""
    for key, attribute, render in _POD_SPEC_FIELDS:
        if key not in doc and getattr(spec, attribute):
            put(doc, key, render(spec))


def _encode_condition(condition: PodCondition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": condition.type, "status": condition.status}
    put(out, "reason", condition.reason)
    put(out, "message", condition.message)
    put(out, "lastTransitionTime", timestamp_text(condition.last_transition_time))
    return out


def overlay_pod(pod: Pod, body: dict[str, Any]) -> None:
    overlay_pod_spec(pod.spec, child(body, "spec"), pod.spec.node_name)
    overlay_pod_status(pod.status, child(body, "status"))


def overlay_pod_spec(typed: PodSpec, spec: dict[str, Any], node_name: str) -> None:
    """Lay the typed spec over (a copy of) the manifest's spec, with `node_name` as its nodeName."""
    _fill_pod_spec(typed, spec)
    put(spec, "nodeName", node_name)
    put(spec, "priorityClassName", typed.priority_class_name)
    put(spec, "priority", typed.priority)
    put(spec, "preemptionPolicy", typed.preemption_policy)
    if typed.pod_group_name is not None:
        spec["schedulingGroup"] = {**(spec.get("schedulingGroup") or {}), "podGroupName": typed.pod_group_name}
    spec["terminationGracePeriodSeconds"] = typed.termination_grace_period_seconds


def overlay_pod_status(typed: PodStatus, status: dict[str, Any]) -> None:
    """Lay the typed status over (a copy of) the manifest's status."""
    status["phase"] = typed.phase
    put(status, "nominatedNodeName", typed.nominated_node_name)
    put(status, "startTime", timestamp_text(typed.start_time))
    put(status, "conditions", [_encode_condition(c) for c in typed.conditions])
    put(status, "reason", typed.reason)
    put(status, "message", typed.message)
