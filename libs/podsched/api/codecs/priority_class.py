"""The PriorityClass codec (the schema; reserved names, the value ceiling and one global default are
`podsched.admission.priority`'s, checked when a class is created)."""

from __future__ import annotations

from typing import Any

from podsched.api.codecs.fields import get_bool, get_int32, get_string, put
from podsched.api.codecs.meta import decode_meta
from podsched.api.errors import FieldError
from podsched.api.types import PREEMPT_LOWER_PRIORITY, PriorityClass
from podsched.api.validation import required, validate_preemption_policy


def decode_priority_class(manifest: dict[str, Any], errors: list[FieldError]) -> PriorityClass:
    """The PriorityClass schema: `value` is a required int32; preemptionPolicy defaults to
    PreemptLowerPriority (v1 defaulting). Reserved names and the value ceiling are checked by
    `podsched.admission.priority.validate_priority_class`."""
    metadata = decode_meta(manifest, errors, namespaced=False)
    value = get_int32(manifest, "value", "")
    if value is None:
        errors.append(required("value"))
    policy = get_string(manifest, "preemptionPolicy", "", default=PREEMPT_LOWER_PRIORITY)
    manifest["preemptionPolicy"] = policy
    errors.extend(validate_preemption_policy(policy, "preemptionPolicy"))
    return PriorityClass(
        metadata,
        value=value or 0,
        global_default=get_bool(manifest, "globalDefault", ""),
        description=get_string(manifest, "description", ""),
        preemption_policy=policy,
        source=manifest,
    )


def overlay_priority_class(priority_class: PriorityClass, body: dict[str, Any]) -> None:
    body["value"] = priority_class.value
    put(body, "globalDefault", True if priority_class.global_default else None)
    put(body, "description", priority_class.description)
    body["preemptionPolicy"] = priority_class.preemption_policy
