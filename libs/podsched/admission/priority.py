"""PriorityClass validation and the Priority admission plugin, as upstream has them.

Upstream splits this between `pkg/apis/scheduling/validation` (ValidatePriorityClass,
ValidatePriorityClassUpdate), the PriorityClass registry (system classes cannot be deleted) and
`plugin/pkg/admission/priority` (one global default; a pod's priority resolved from its class on
CREATE and preserved on UPDATE). Here they are pure functions over typed objects: the caller owns
the store of classes and passes it in. Objects are values: admission returns a new Pod and never
mutates its input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from podsched.api.errors import ApiError, FieldError
from podsched.api.manifests import validate_object_meta, validate_preemption_policy
from podsched.api.pod_copy import copy_pod, copy_spec
from podsched.api.types import (
    KIND_POD,
    KIND_POD_GROUP,
    KIND_PRIORITY_CLASS,
    PREEMPT_LOWER_PRIORITY,
    ObjectMeta,
    Pod,
    PodGroup,
    PriorityClass,
)
from podsched.preemption.toleration import toleration_annotation_errors

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0

SYSTEM_NODE_CRITICAL = "system-node-critical"
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"

# name -> (value, description), as pkg/apis/scheduling/v1/helpers.go declares them.
_SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    SYSTEM_NODE_CRITICAL: (
        SYSTEM_CRITICAL_PRIORITY + 1000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    SYSTEM_CLUSTER_CRITICAL: (
        SYSTEM_CRITICAL_PRIORITY,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
}

_FIELD_IMMUTABLE = "field is immutable"


def builtin_priority_classes() -> list[PriorityClass]:
    """The classes the API server creates at bootstrap (fresh objects on every call): neither is a
    global default, both PreemptLowerPriority."""
    return [
        PriorityClass(ObjectMeta(name=name), value=value, description=description)
        for name, (value, description) in _SYSTEM_PRIORITY_CLASSES.items()
    ]


def known_system_priority_class_error(name: str, value: int, global_default: bool) -> str | None:
    """IsKnownSystemPriorityClass: None when (name, value, globalDefault) is exactly a built-in
    class, otherwise upstream's reason."""
    known = _SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def priority_class_errors(priority_class: PriorityClass) -> list[FieldError]:
    """ValidatePriorityClass as a list: metadata, reserved `system-` names (only the built-ins, with
    their exact value and globalDefault), the user ceiling of 1,000,000,000, preemptionPolicy."""
    errors = validate_object_meta(priority_class.metadata, namespaced=False)
    name, value = priority_class.name, priority_class.value
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        reason = known_system_priority_class_error(name, value, priority_class.global_default)
        if reason is not None:
            detail = (
                f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for "
                f"system use only. error: {reason}"
            )
            errors.append(FieldError("metadata.name", detail, kind="Forbidden"))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        errors.append(FieldError("value", detail, kind="Forbidden"))
    errors.extend(validate_preemption_policy(priority_class.preemption_policy, "preemptionPolicy"))
    # podsched's own check: PreemptionToleration's annotations must parse (the plugin would
    # silently ignore them; a class refused here is what a user can see and fix).
    errors.extend(toleration_annotation_errors(priority_class))
    return errors


def validate_priority_class(priority_class: PriorityClass) -> None:
    """Raise ApiError (Invalid) listing every rule of `priority_class_errors` the class breaks, e.g.
    `PriorityClass "high" is invalid: value: Forbidden: maximum allowed value of a user defined
    priority is 1000000000`."""
    errors = priority_class_errors(priority_class)
    if errors:
        raise ApiError.invalid(KIND_PRIORITY_CLASS, priority_class.name, errors)


def validate_priority_class_update(old: PriorityClass, new: PriorityClass) -> None:
    """ValidatePriorityClassUpdate: name and namespace, `value` and `preemptionPolicy` are
    immutable; description and globalDefault may change. Raises ApiError (Invalid)."""
    errors: list[FieldError] = []
    if new.name != old.name:
        errors.append(FieldError("metadata.name", _FIELD_IMMUTABLE, new.name))
    if new.metadata.namespace != old.metadata.namespace:
        errors.append(FieldError("metadata.namespace", _FIELD_IMMUTABLE, new.metadata.namespace))
    if new.value != old.value:
        errors.append(FieldError("value", "may not be changed in an update.", kind="Forbidden"))
    if new.preemption_policy != old.preemption_policy:
        errors.append(FieldError("preemptionPolicy", _FIELD_IMMUTABLE, new.preemption_policy))
    if errors:
        raise ApiError.invalid(KIND_PRIORITY_CLASS, new.name, errors)


def validate_priority_class_delete(name: str) -> None:
    """The registry refuses to delete a built-in class (Forbidden)."""
    if name in _SYSTEM_PRIORITY_CLASSES:
        raise ApiError.forbidden(KIND_PRIORITY_CLASS, name, "this is a system priority class and cannot be deleted")


def global_default_class(classes: Iterable[PriorityClass]) -> PriorityClass | None:
    """The global default class, or None. If a race left several, the one with the lowest value
    wins (upstream's getDefaultPriorityClass); equal values keep the first seen."""
    chosen: PriorityClass | None = None
    for candidate in classes:
        if candidate.global_default and (chosen is None or candidate.value < chosen.value):
            chosen = candidate
    return chosen


def check_global_default(existing: Iterable[PriorityClass], new: PriorityClass) -> None:
    """The admission plugin's single-default rule, for create and update: a class may be marked
    globalDefault only if no *other* class already is. Raises ApiError (Forbidden)
    `PriorityClass <x> is already marked as default. Only one default can exist`."""
    if not new.global_default:
        return
    current = global_default_class(existing)
    if current is not None and current.name != new.name:
        detail = f"PriorityClass {current.name} is already marked as default. Only one default can exist"
        raise ApiError.forbidden(KIND_PRIORITY_CLASS, new.name, detail)


def _lookup(classes: Mapping[str, PriorityClass], name: str) -> PriorityClass | None:
    """A class by name. The built-ins always exist in a real cluster (the API server recreates them
    and refuses to delete them), so they resolve even when the caller's store omits them."""
    found = classes.get(name)
    if found is not None:
        return found
    return next((c for c in builtin_priority_classes() if c.name == name), None)


def admit_pod(pod: Pod, classes: Mapping[str, PriorityClass]) -> Pod:
    """Priority admission on pod CREATE; returns a new Pod, `pod` is not modified.

    - no priorityClassName: the global default class supplies name, value and policy; with no
      default, priority 0 and PreemptLowerPriority, and the name stays empty;
    - a priorityClassName that does not exist: Forbidden `no PriorityClass with name <x> was found`;
    - a spec.priority or spec.preemptionPolicy given in the pod must equal what the class computes,
      else Forbidden (`the integer value of priority (%d) must not be provided in pod spec; ...`).
    """
    name, value, policy = _resolve(pod, classes)
    if pod.spec.priority is not None and pod.spec.priority != value:
        raise _pod_forbidden(
            pod,
            f"the integer value of priority ({pod.spec.priority}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name",
        )
    if policy is None:  # upstream: a class without a policy leaves the pod's own
        policy = pod.spec.preemption_policy
    elif pod.spec.preemption_policy is not None and pod.spec.preemption_policy != policy:
        raise _pod_forbidden(
            pod,
            f"the string value of PreemptionPolicy ({pod.spec.preemption_policy}) must not be provided in "
            f"pod spec; priority admission controller computed {policy} from the given PriorityClass name",
        )
    # Copies changed in place (every create comes here): `replace` twice cost about 3 us.
    spec = copy_spec(pod.spec)
    spec.priority_class_name, spec.priority, spec.preemption_policy = name, value, policy
    admitted = copy_pod(pod)
    admitted.spec = spec
    return admitted


def _resolve(pod: Pod, classes: Mapping[str, PriorityClass]) -> tuple[str, int, str | None]:
    """(class name, priority, preemption policy) the pod gets: from its named class, else from the
    global default class, else upstream's fallback (no name, 0, PreemptLowerPriority)."""
    name = pod.spec.priority_class_name
    if name:
        found = _lookup(classes, name)
        if found is None:
            raise _pod_forbidden(pod, f"no PriorityClass with name {name} was found")
        return name, found.value, found.preemption_policy or None
    default = global_default_class(classes.values())
    if default is None:
        return "", DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY
    return default.name, default.value, default.preemption_policy or None


def admit_pod_update(old: Pod, new: Pod) -> Pod:
    """Priority admission on pod UPDATE; returns a new Pod, neither input is modified.

    Fields the update omits are carried over from the stored pod (upstream copies priority and
    preemptionPolicy; the class name is copied too, because a defaulted name the user never wrote
    would otherwise make re-applying the same manifest an error). Changing any of the three is
    Invalid: `spec.priority: Invalid value: 5: field is immutable`.
    """
    spec = new.spec
    carried = replace(
        spec,
        priority_class_name=spec.priority_class_name or old.spec.priority_class_name,
        priority=old.spec.priority if spec.priority is None else spec.priority,
        preemption_policy=spec.preemption_policy if spec.preemption_policy is not None else old.spec.preemption_policy,
    )
    errors = [
        FieldError(path, _FIELD_IMMUTABLE, after)
        for path, before, after in (
            ("spec.priorityClassName", old.spec.priority_class_name, carried.priority_class_name),
            ("spec.priority", old.spec.priority, carried.priority),
            ("spec.preemptionPolicy", old.spec.preemption_policy, carried.preemption_policy),
        )
        if before != after
    ]
    if errors:
        raise ApiError.invalid(KIND_POD, new.name, errors, new.namespace)
    return replace(new, spec=carried)


def _pod_forbidden(pod: Pod, detail: str) -> ApiError:
    return ApiError.forbidden(KIND_POD, pod.name, detail, pod.namespace)


def admit_pod_group(group: PodGroup, classes: Mapping[str, PriorityClass]) -> PodGroup:
    """Priority admission on PodGroup CREATE (admitPodGroup, PodGroupPreemptionPolicy on); returns a
    new PodGroup, `group` is not modified. The class resolves as for a pod (named, else the global
    default, else 0 and PreemptLowerPriority); a priority or preemptionPolicy the group gives must
    equal what the class computes, else Forbidden."""
    name = group.priority_class_name
    if name:
        found = _lookup(classes, name)
        if found is None:
            raise _group_forbidden(group, f"no PriorityClass with name {name} was found")
        value, policy = found.value, found.preemption_policy or None
    else:
        default = global_default_class(classes.values())
        name, value, policy = (
            (default.name, default.value, default.preemption_policy or None)
            if default is not None
            else ("", DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY)
        )
    if group.priority is not None and group.priority != value:
        raise _group_forbidden(
            group,
            f"priority set in the pod group ({group.priority}) must match the priority computed ({value}) "
            "based on the priority class set in the spec",
        )
    if policy is None:
        policy = group.preemption_policy
    elif group.preemption_policy is not None and group.preemption_policy != policy:
        raise _group_forbidden(
            group,
            f"the string value of PreemptionPolicy ({group.preemption_policy}) must not be provided in pod "
            f"group spec; priority admission controller computed {policy} from the given PriorityClass name",
        )
    return replace(group, priority_class_name=name, priority=value, preemption_policy=policy)


def _group_forbidden(group: PodGroup, detail: str) -> ApiError:
    return ApiError.forbidden(KIND_POD_GROUP, group.name, detail, group.namespace)
