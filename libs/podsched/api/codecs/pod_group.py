"""The scheduling.k8s.io/v1beta1 PodGroup codec: the spec decoded (defaulted, validated) and the status
(conditions the scheduler sets) kept; admission drops a client's status on create, as the API server's
strategy does (`cluster.admission`).

Fields behind gates podsched's API server keeps off are dropped, as upstream's strategy drops them
(`dropDisabledPodGroupFields`): schedulingConstraints (TopologyAwareWorkloadScheduling),
resourceClaims (DRAWorkloadResourceClaims) and parentCompositePodGroupName (CompositePodGroup).
preemptionPolicy is served (PodGroupPreemptionPolicy on) and defaults to PreemptLowerPriority.
"""

from __future__ import annotations

from typing import Any

from podsched.api.codecs.fields import (
    child,
    get_int32,
    get_int64,
    get_items,
    get_object,
    get_string,
    get_timestamp,
    put,
    timestamp_text,
)
from podsched.api.codecs.meta import decode_meta
from podsched.api.errors import FieldError
from podsched.api.types import (
    DISRUPTION_MODE_ALL,
    DISRUPTION_MODE_SINGLE,
    PREEMPT_LOWER_PRIORITY,
    SCHEDULING_POLICY_BASIC,
    SCHEDULING_POLICY_GANG,
    Condition,
    PodGroup,
    PodGroupStatus,
)
from podsched.api.validation import validate_pod_group_spec

# Gated fields upstream drops while their gates are off.
_DROPPED_SPEC_FIELDS = ("schedulingConstraints", "resourceClaims", "parentCompositePodGroupName")


def decode_pod_group(manifest: dict[str, Any], errors: list[FieldError]) -> PodGroup:
    metadata = decode_meta(manifest, errors, namespaced=True)
    spec = get_object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    for key in _DROPPED_SPEC_FIELDS:
        spec.pop(key, None)
    policy_doc = get_object(spec, "schedulingPolicy", "spec") or {}
    spec["schedulingPolicy"] = policy_doc
    basic = get_object(policy_doc, "basic", "spec.schedulingPolicy")
    gang = get_object(policy_doc, "gang", "spec.schedulingPolicy")
    policies = [name for name, member in (("basic", basic), ("gang", gang)) if member is not None]
    min_count = get_int32(gang, "minCount", "spec.schedulingPolicy.gang") if gang is not None else None
    if "disruptionMode" not in spec or spec["disruptionMode"] is None:
        spec["disruptionMode"] = {"single": {}}  # +default={"single": {}}
    mode_doc = get_object(spec, "disruptionMode", "spec") or {}
    modes = [name for name in ("single", "all") if get_object(mode_doc, name, "spec.disruptionMode") is not None]
    priority_class_name = get_string(spec, "priorityClassName", "spec")
    priority = get_int32(spec, "priority", "spec")
    preemption_policy = get_string(spec, "preemptionPolicy", "spec", default=PREEMPT_LOWER_PRIORITY)
    spec["preemptionPolicy"] = preemption_policy
    errors.extend(validate_pod_group_spec(policies, min_count, modes, priority_class_name, priority, preemption_policy))
    return PodGroup(
        metadata,
        scheduling_policy=SCHEDULING_POLICY_GANG if policies == ["gang"] else SCHEDULING_POLICY_BASIC,
        min_count=(min_count or 0) if policies == ["gang"] else 0,
        disruption_mode=DISRUPTION_MODE_ALL if modes == ["all"] else DISRUPTION_MODE_SINGLE,
        priority_class_name=priority_class_name,
        priority=priority,
        preemption_policy=preemption_policy,
        status=_decode_status(manifest, errors),
        source=manifest,
    )


def _decode_status(manifest: dict[str, Any], errors: list[FieldError]) -> PodGroupStatus:
    status = get_object(manifest, "status", "") or {}
    return PodGroupStatus(
        conditions=tuple(
            Condition(
                type=get_string(item, "type", path),
                status=get_string(item, "status", path),
                reason=get_string(item, "reason", path),
                message=get_string(item, "message", path),
                last_transition_time=get_timestamp(item, "lastTransitionTime", path, errors),
                observed_generation=get_int64(item, "observedGeneration", path) or 0,
            )
            for path, item in get_items(status, "conditions", "status")
        )
    )


def encode_condition(condition: Condition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": condition.type, "status": condition.status}
    put(out, "observedGeneration", condition.observed_generation or None)
    put(out, "lastTransitionTime", timestamp_text(condition.last_transition_time))
    put(out, "reason", condition.reason)
    put(out, "message", condition.message)
    return out


def overlay_pod_group(group: PodGroup, body: dict[str, Any]) -> None:
    spec = child(body, "spec")
    policy = child(spec, "schedulingPolicy")
    if group.is_gang:
        policy.pop("basic", None)
        policy["gang"] = {**(policy.get("gang") or {}), "minCount": group.min_count}
    elif "basic" not in policy:
        policy["basic"] = {}
    if "disruptionMode" not in spec:
        spec["disruptionMode"] = {group.disruption_mode.lower(): {}}
    put(spec, "priorityClassName", group.priority_class_name)
    put(spec, "priority", group.priority)
    put(spec, "preemptionPolicy", group.preemption_policy)
    body.pop("status", None)
    conditions = [encode_condition(c) for c in group.status.conditions]
    if conditions:
        body["status"] = {"conditions": conditions}
