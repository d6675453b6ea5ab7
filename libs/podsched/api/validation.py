"""The API server's validation rules, worded as upstream words them.

Name formats are apimachinery's `util/validation` (IsDNS1123Label, IsQualifiedName, ...); field
errors are its `field` package (Required, Invalid, Unsupported, Forbidden, Duplicate); object rules
are `pkg/apis/core/validation` and `pkg/apis/policy/validation`, restricted to the fields
scheduling reads. Messages and field paths are upstream's, quirks included: users compare them with
what a real cluster prints.

Every validator is pure and returns its errors in upstream's order; none raises. `validate_<thing>`
checks a decoded object or part of one, `<field>_errors` one value. The decoder in
`podsched.api.manifests` reads a document, calls these in the order upstream checks the fields, and
reports all violations together as one Invalid error; admission reuses the metadata validators.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from podsched.api import quantity
from podsched.api.errors import FieldError, format_bad_value
from podsched.api.labels import selector_matches
from podsched.api.types import (
    DO_NOT_SCHEDULE,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    SCHEDULE_ANYWAY,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    TAINT_PREFER_NO_SCHEDULE,
    Affinity,
    Container,
    ContainerPort,
    LabelSelector,
    LabelSelectorRequirement,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    PodAffinity,
    PodAffinityTerm,
    PodCondition,
    ScopedResourceSelectorRequirement,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)

# --- allowed values, declared once ----------------------------------------------------------------

POD_UNKNOWN = "Unknown"

# Affinity field names: they appear in error paths here and in manifests read and written elsewhere.
REQUIRED_TERMS = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_TERMS = "preferredDuringSchedulingIgnoredDuringExecution"

_PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)
_TAINT_EFFECTS = (TAINT_NO_SCHEDULE, TAINT_PREFER_NO_SCHEDULE, TAINT_NO_EXECUTE)
_TOLERATION_OPERATORS = ("Equal", "Exists")
_WHEN_UNSATISFIABLE = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
_UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_POD_PHASES = (POD_PENDING, POD_RUNNING, POD_SUCCEEDED, POD_FAILED, POD_UNKNOWN)
_CONTAINER_RESTART_ALWAYS = "Always"
_HUGEPAGES_PREFIX = "hugepages-"
_STANDARD_CONTAINER_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE)
_TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

# --- apimachinery's name formats and messages -------------------------------------------------------

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_PERCENT_FMT = "[0-9]+%"
# Anchored as Go anchors them: Python's `$` also matches before a final newline, so `\Z` ends them.
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL_FMT}\\Z")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}\\Z")
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME_FMT}\\Z")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}\\Z")
_PERCENT_RE = re.compile(f"^{_PERCENT_FMT}\\Z")
_PORT_NAME_CHARSET_RE = re.compile("^[-a-z0-9]+\\Z")

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%'"
_NEGATIVE_MSG = "must be greater than or equal to 0"
_NOT_POSITIVE_MSG = "must be greater than zero"
_NOT_INTEGER_MSG = "must be an integer"
_WEIGHT_MSG = "must be in the range 1-100"
_PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"
_BAD_OPERATOR_MSG = "not a valid selector operator"
_QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_TIMESTAMP_MSG = 'must be an RFC3339 timestamp, e.g. "2026-01-01T00:00:00Z"'


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError, double spaces between examples included."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


_QUALIFIED_NAME_REGEX_ERROR = _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")


def dns1123_label_errors(value: str) -> list[str]:
    """IsDNS1123Label: at most 63 characters of [a-z0-9-], alphanumeric at both ends."""
    errors = [_max_len_error(63)] if len(value) > 63 else []
    if not _DNS1123_LABEL_RE.match(value):
        errors.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    """IsDNS1123Subdomain: at most 253 characters, dot-separated DNS-1123 labels."""
    errors = [_max_len_error(253)] if len(value) > 253 else []
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errors.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName: `[prefix/]name`, prefix a DNS subdomain, name at most 63 characters."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + _QUALIFIED_NAME_REGEX_ERROR
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + message for message in dns1123_subdomain_errors(prefix))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part " + _max_len_error(63))
    if not _QUALIFIED_NAME_RE.match(name):
        errors.append("name part " + _QUALIFIED_NAME_REGEX_ERROR)
    return errors


def label_value_errors(value: str) -> list[str]:
    """IsValidLabelValue: empty, or at most 63 characters shaped like a qualified name."""
    errors = [_max_len_error(63)] if len(value) > 63 else []
    if not _LABEL_VALUE_RE.match(value):
        errors.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def _port_name_errors(value: str) -> list[str]:
    """IsValidPortName (an IANA_SVC_NAME)."""
    errors = [_max_len_error(15)] if len(value) > 15 else []
    if not _PORT_NAME_CHARSET_RE.match(value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


# --- field errors, worded as apimachinery's field package words them ------------------------------


def required(path: str, detail: str = "") -> FieldError:
    """field.Required: `path: Required value[: detail]`."""
    return FieldError(path, detail, kind="Required value")


def invalid(path: str, value: object, detail: str) -> FieldError:
    """field.Invalid: `path: Invalid value: "value": detail`."""
    return FieldError(path, detail, value)


def _forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, detail, kind="Forbidden")


def _not_supported(path: str, value: object, supported: Iterable[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(choice) for choice in supported)
    return FieldError(path, detail, value, kind="Unsupported value")


def _duplicate(path: str, value: object, detail: str = "") -> FieldError:
    return FieldError(path, detail, value, kind="Duplicate value")


def _invalid_each(path: str, value: str, messages: Iterable[str]) -> list[FieldError]:
    return [invalid(path, value, message) for message in messages]


def _invalid_joined(path: str, value: str, messages: list[str]) -> list[FieldError]:
    """One error carrying every message, `;`-joined, as upstream reports some label values."""
    return [invalid(path, value, ";".join(messages))] if messages else []


def _supported_errors(path: str, value: str, supported: Sequence[str]) -> list[FieldError]:
    return [] if value in supported else [_not_supported(path, value, supported)]


def _unique_name_errors(path: str, name: str, messages: list[str], seen: set[str]) -> list[FieldError]:
    """A name's format errors, or Duplicate when it is well formed and already in `seen`; records it."""
    errors = _invalid_each(path, name, messages)
    if not messages and name in seen:
        errors.append(_duplicate(path, name))
    seen.add(name)
    return errors


def _topology_key_required(path: str) -> FieldError:
    return required(path, "can not be empty")


def _non_negative_errors(value: int, path: str) -> list[FieldError]:
    return [invalid(path, value, _NEGATIVE_MSG)] if value < 0 else []


# --- values that could not be read ---------------------------------------------------------------------


def invalid_timestamp(path: str, value: str) -> FieldError:
    """A metav1.Time that is not RFC3339."""
    return invalid(path, value, _TIMESTAMP_MSG)


def invalid_resource_version(value: object) -> FieldError:
    return invalid("metadata.resourceVersion", value, "must be a decimal integer")


def _shown_quantity(raw: object) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        return format_bad_value(raw)  # not json.dumps: Python refuses to print an int of 4300 digits
    return json.dumps(raw)


def invalid_quantity(path: str, raw: object, error: quantity.QuantityError | None = None) -> FieldError:
    """A ResourceList entry that is not a quantity: not a string or number (`error` None), or text
    `quantity.parse_quantity` rejected. Upstream's regex message stands in for our parser's own."""
    detail = _QUANTITY_MSG if error is None or str(error).startswith("quantities must match") else str(error)
    return invalid(path, _shown_quantity(raw), detail)


# --- object metadata ----------------------------------------------------------------------------------


def validate_labels(labels: Mapping[str, str], path: str) -> list[FieldError]:
    """ValidateLabels: every key a qualified name, every value a label value. Errors name the map
    (`metadata.labels`), not the key, as upstream does."""
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors.extend(_invalid_each(path, key, qualified_name_errors(key)))
        errors.extend(_invalid_each(path, value, label_value_errors(value)))
    return errors


def _validate_annotations(annotations: Mapping[str, str], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in annotations:
        errors.extend(_invalid_each(path, key, qualified_name_errors(key.lower())))
    size = sum(len(key) + len(value) for key, value in annotations.items())
    if size > _TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(FieldError(path, f"may not be more than {_TOTAL_ANNOTATION_SIZE_LIMIT} bytes", kind="Too long"))
    return errors


def object_name_errors(name: str, path: str) -> list[FieldError]:
    """A reference to an object by name (nodeName, priorityClassName, schedulerName, ...): a DNS-1123
    subdomain when set; empty means unset."""
    return _invalid_each(path, name, dns1123_subdomain_errors(name)) if name else []


def validate_object_meta(meta: ObjectMeta, *, namespaced: bool, path: str = "metadata") -> list[FieldError]:
    """ValidateObjectMeta with NameIsDNSSubdomain: the name is required and a DNS-1123 subdomain;
    a namespaced object needs a DNS-1123 label namespace, a cluster-scoped one must have none."""
    errors: list[FieldError] = []
    if meta.generate_name:
        # The prefix must itself be a valid name once a suffix is added (ValidateObjectMeta with
        # prefix=true: a trailing '-' is allowed).
        masked = meta.generate_name[:-1] + "a" if meta.generate_name.endswith("-") else meta.generate_name
        errors.extend(_invalid_each(f"{path}.generateName", meta.generate_name, dns1123_subdomain_errors(masked)))
    if not meta.name:
        if not meta.generate_name:
            errors.append(required(f"{path}.name", "name or generateName is required"))
    else:
        errors.extend(object_name_errors(meta.name, f"{path}.name"))
    if namespaced:
        if not meta.namespace:
            errors.append(required(f"{path}.namespace"))
        else:
            errors.extend(_invalid_each(f"{path}.namespace", meta.namespace, dns1123_label_errors(meta.namespace)))
    elif meta.namespace:
        errors.append(_forbidden(f"{path}.namespace", "not allowed on this type"))
    errors.extend(validate_labels(meta.labels, f"{path}.labels"))
    errors.extend(_validate_annotations(meta.annotations, f"{path}.annotations"))
    return errors


def validate_preemption_policy(policy: str, path: str) -> list[FieldError]:
    """ValidatePreemptionPolicy: PreemptLowerPriority or Never."""
    if policy in _PREEMPTION_POLICIES:
        return []
    if not policy:
        return [required(path)]
    return [_not_supported(path, policy, _PREEMPTION_POLICIES)]


# --- resources ----------------------------------------------------------------------------------------


def is_hugepages_resource(name: str) -> bool:
    """IsHugePageResourceName: `hugepages-<page size>`."""
    return name.startswith(_HUGEPAGES_PREFIX)


def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended_resource(name: str) -> bool:
    """IsExtendedResourceName: a domain-prefixed name outside kubernetes.io, e.g. nvidia.com/gpu."""
    if _is_native_resource(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def is_extended_resource(name: str) -> bool:
    """IsExtendedResourceName (`nvidia.com/gpu`; not `requests.`-prefixed, not kubernetes.io)."""
    return _is_extended_resource(name)


def _is_integer_resource(name: str) -> bool:
    return name == RESOURCE_PODS or _is_extended_resource(name)


def _overcommit_allowed(name: str) -> bool:
    """Requests below limits are allowed for native resources except hugepages; extended
    resources must request exactly their limit."""
    return _is_native_resource(name) and not is_hugepages_resource(name)


@dataclass(frozen=True, slots=True)
class ResourceQuantity:
    """One parsed ResourceList entry: what the resource rules check and quote."""

    text: str | int | float  # as written in the manifest: shown in messages, converted by quantity.*
    value: Fraction


def resource_name_errors(names: Iterable[str], path: str) -> list[FieldError]:
    """validateContainerResourceName for every name of a ResourceList at `path` (errors at `path[name]`)."""
    errors: list[FieldError] = []
    for name in names:
        entry_path = f"{path}[{name}]"
        errors.extend(_invalid_each(entry_path, name, qualified_name_errors(name)))
        if "/" not in name:
            if name not in _STANDARD_CONTAINER_RESOURCES and not is_hugepages_resource(name):
                errors.append(invalid(entry_path, name, "must be a standard resource for containers"))
        elif not _is_native_resource(name) and not _is_extended_resource(name):
            errors.append(invalid(entry_path, name, "doesn't follow extended resource name standard"))
    return errors


def quantity_errors(name: str, entry: ResourceQuantity, path: str) -> list[FieldError]:
    """ValidateNonnegativeQuantity, and whole numbers for integer resources (pods, extended)."""
    shown = _shown_quantity(entry.text)
    errors = [invalid(path, shown, _NEGATIVE_MSG)] if entry.value < 0 else []
    if _is_integer_resource(name) and entry.value.denominator != 1:
        errors.append(invalid(path, shown, _NOT_INTEGER_MSG))
    return errors


def _hugepage_errors(name: str, entry: ResourceQuantity, path: str) -> list[FieldError]:
    """A hugepages limit must be a whole number of pages (validateResourceQuantityHugePageValue)."""
    try:
        page = quantity.parse_quantity(name[len(_HUGEPAGES_PREFIX) :])
    except quantity.QuantityError:
        return [invalid(path, name, "must be a valid hugepage size, e.g. hugepages-2Mi")]
    if page <= 0 or entry.value % page != 0:
        return [invalid(path, str(entry.text), f"{entry.text} is not positive integer multiple of {name}")]
    return []


def resource_requirements_errors(
    limits: Mapping[str, ResourceQuantity], requests: Mapping[str, ResourceQuantity], path: str
) -> list[FieldError]:
    """ValidateContainerResourceRequirements beyond names and quantities: requests <= limits (== for
    extended resources and hugepages, whose limit is mandatory), hugepage limits in whole pages,
    and hugepages only alongside cpu or memory."""
    errors: list[FieldError] = []
    for name, limit in limits.items():
        if is_hugepages_resource(name):
            errors.extend(_hugepage_errors(name, limit, f"{path}.limits[{name}]"))
    for name, request in requests.items():
        limit_entry = limits.get(name)
        if limit_entry is None:
            if not _overcommit_allowed(name):
                errors.append(required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
            continue
        if request.value != limit_entry.value and not _overcommit_allowed(name):
            detail = f"must be equal to {name} limit of {limit_entry.text}"
        elif request.value > limit_entry.value:
            detail = f"must be less than or equal to {name} limit of {limit_entry.text}"
        else:
            continue
        errors.append(invalid(f"{path}.requests", str(request.text), detail))
    names = set(limits) | set(requests)
    if any(is_hugepages_resource(name) for name in names) and not names & {RESOURCE_CPU, RESOURCE_MEMORY}:
        errors.append(_forbidden(path, "HugePages require cpu or memory"))
    return errors


# --- containers ----------------------------------------------------------------------------------------


def container_name_errors(name: str, path: str, seen: set[str]) -> list[FieldError]:
    """A container's name: required, a DNS-1123 label, unique across containers and init containers
    (`seen` holds the names so far and gains this one)."""
    if not name:
        return [required(path)]
    return _unique_name_errors(path, name, dns1123_label_errors(name), seen)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def container_port_errors(port: ContainerPort, name: str, path: str, seen_names: set[str]) -> list[FieldError]:
    """validateContainerPorts for one port named `name` (ContainerPort does not keep it); port names
    are unique within a container (`seen_names` gains this one)."""
    errors = _unique_name_errors(f"{path}.name", name, _port_name_errors(name), seen_names) if name else []
    if port.container_port == 0:
        errors.append(required(f"{path}.containerPort"))
    elif not 1 <= port.container_port <= 65535:
        errors.append(invalid(f"{path}.containerPort", port.container_port, _PORT_RANGE_MSG))
    if port.host_port != 0 and not 1 <= port.host_port <= 65535:
        errors.append(invalid(f"{path}.hostPort", port.host_port, _PORT_RANGE_MSG))
    errors.extend(_supported_errors(f"{path}.protocol", port.protocol, _PROTOCOLS))
    if port.host_ip and not _is_ip(port.host_ip):
        errors.append(
            invalid(f"{path}.hostIP", port.host_ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
        )
    return errors


def restart_policy_errors(policy: str, path: str, *, init: bool) -> list[FieldError]:
    """Only init containers may set restartPolicy, and only to Always (a sidecar)."""
    if policy and not init:
        return [_forbidden(path, "may not be set for non-init containers")]
    if policy and policy != _CONTAINER_RESTART_ALWAYS:
        return [_not_supported(path, policy, [_CONTAINER_RESTART_ALWAYS])]
    return []


def host_port_errors(containers: Iterable[tuple[str, Container]]) -> list[FieldError]:
    """AccumulateUniqueHostPorts over (container path, container): one protocol/hostIP/hostPort per pod."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for path, container in containers:
        for index, port in enumerate(container.ports):
            if port.host_port == 0:
                continue
            key = f"{port.protocol}/{port.host_ip}/{port.host_port}"
            if key in seen:
                errors.append(_duplicate(f"{path}.ports[{index}].hostPort", key))
            seen.add(key)
    return errors


# --- selectors and affinity ----------------------------------------------------------------------------


def _requirement_errors(
    requirement: LabelSelectorRequirement | NodeSelectorRequirement, path: str, *, node: bool
) -> list[FieldError]:
    """ValidateLabelSelectorRequirement / ValidateNodeSelectorRequirement (`node`: Gt and Lt too)."""
    errors: list[FieldError] = []
    operator, values = requirement.operator, requirement.values
    if operator in ("In", "NotIn"):
        if not values:
            errors.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(
                _forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
            )
    elif node and operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errors.append(invalid(f"{path}.operator", operator, _BAD_OPERATOR_MSG))
    errors.extend(_invalid_each(f"{path}.key", requirement.key, qualified_name_errors(requirement.key)))
    for index, value in enumerate(values):
        errors.extend(_invalid_each(f"{path}.values[{index}]", value, label_value_errors(value)))
    return errors


def validate_label_selector(selector: LabelSelector, path: str) -> list[FieldError]:
    """ValidateLabelSelector: matchLabels as labels, each matchExpressions entry a requirement."""
    errors = validate_labels(dict(selector.match_labels), f"{path}.matchLabels")
    for index, requirement in enumerate(selector.match_expressions):
        errors.extend(_requirement_errors(requirement, f"{path}.matchExpressions[{index}]", node=False))
    return errors


def _node_field_requirement_errors(requirement: NodeSelectorRequirement, path: str) -> list[FieldError]:
    """ValidateNodeFieldSelectorRequirement: only `metadata.name`, In/NotIn with one node name."""
    errors: list[FieldError] = []
    if requirement.operator in ("In", "NotIn"):
        if len(requirement.values) != 1:
            errors.append(
                required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
    else:
        errors.append(invalid(f"{path}.operator", requirement.operator, _BAD_OPERATOR_MSG))
    if requirement.key != "metadata.name":
        errors.append(invalid(f"{path}.key", requirement.key, "not a valid field selector key"))
    else:
        for index, value in enumerate(requirement.values):
            errors.extend(_invalid_each(f"{path}.values[{index}]", value, dns1123_subdomain_errors(value)))
    return errors


def _node_selector_term_errors(term: NodeSelectorTerm, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, requirement in enumerate(term.match_expressions):
        errors.extend(_requirement_errors(requirement, f"{path}.matchExpressions[{index}]", node=True))
    for index, requirement in enumerate(term.match_fields):
        errors.extend(_node_field_requirement_errors(requirement, f"{path}.matchFields[{index}]"))
    return errors


def _weight_errors(weight: int, path: str) -> list[FieldError]:
    return [] if 1 <= weight <= 100 else [invalid(f"{path}.weight", weight, _WEIGHT_MSG)]


def _node_affinity_errors(affinity: NodeAffinity, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if affinity.required is not None:
        terms_path = f"{path}.{REQUIRED_TERMS}.nodeSelectorTerms"
        for index, term in enumerate(affinity.required):
            errors.extend(_node_selector_term_errors(term, f"{terms_path}[{index}]"))
        if not affinity.required:
            errors.append(required(terms_path, "must have at least one node selector term"))
    for index, preferred in enumerate(affinity.preferred):
        item_path = f"{path}.{PREFERRED_TERMS}[{index}]"
        errors.extend(_weight_errors(preferred.weight, item_path))
        errors.extend(_node_selector_term_errors(preferred.preference, f"{item_path}.preference"))
    return errors


def _label_keys_errors(keys: tuple[str, ...], path: str, selector: LabelSelector | None) -> list[FieldError]:
    """matchLabelKeys/mismatchLabelKeys: label names, only with a labelSelector, and not keys the
    selector already uses."""
    if not keys:
        return []
    if selector is None:
        return [_forbidden(path, "must not be specified when labelSelector is not set")]
    selector_keys = {key for key, _ in selector.match_labels} | {r.key for r in selector.match_expressions}
    errors: list[FieldError] = []
    for index, key in enumerate(keys):
        errors.extend(_invalid_each(f"{path}[{index}]", key, qualified_name_errors(key)))
    for index, key in enumerate(keys):
        if key in selector_keys:
            errors.append(invalid(f"{path}[{index}]", key, "exists in both matchLabelKeys and labelSelector"))
    return errors


def _optional_selector_errors(selector: LabelSelector | None, path: str) -> list[FieldError]:
    return [] if selector is None else validate_label_selector(selector, path)


def _pod_affinity_term_errors(term: PodAffinityTerm, path: str) -> list[FieldError]:
    """validatePodAffinityTerm."""
    errors = _optional_selector_errors(term.label_selector, f"{path}.labelSelector")
    for index, namespace in enumerate(term.namespaces):
        errors.extend(_invalid_each(f"{path}.namespaces[{index}]", namespace, dns1123_label_errors(namespace)))
    errors.extend(_optional_selector_errors(term.namespace_selector, f"{path}.namespaceSelector"))
    errors.extend(_label_keys_errors(term.match_label_keys, f"{path}.matchLabelKeys", term.label_selector))
    errors.extend(_label_keys_errors(term.mismatch_label_keys, f"{path}.mismatchLabelKeys", term.label_selector))
    for index, key in enumerate(term.mismatch_label_keys):
        if key in term.match_label_keys:
            detail = "exists in both matchLabelKeys and mismatchLabelKeys"
            errors.append(invalid(f"{path}.matchLabelKeys[{index}]", key, detail))
    if not term.topology_key:
        errors.append(_topology_key_required(f"{path}.topologyKey"))
    else:
        errors.extend(_invalid_each(f"{path}.topologyKey", term.topology_key, qualified_name_errors(term.topology_key)))
    return errors


def _pod_affinity_errors(affinity: PodAffinity, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, term in enumerate(affinity.required):
        errors.extend(_pod_affinity_term_errors(term, f"{path}.{REQUIRED_TERMS}[{index}]"))
    for index, weighted in enumerate(affinity.preferred):
        item_path = f"{path}.{PREFERRED_TERMS}[{index}]"
        errors.extend(_weight_errors(weighted.weight, item_path))
        errors.extend(_pod_affinity_term_errors(weighted.term, f"{item_path}.podAffinityTerm"))
    return errors


def validate_affinity(affinity: Affinity, path: str) -> list[FieldError]:
    """validateAffinity: node affinity, then pod affinity, then pod anti-affinity."""
    errors: list[FieldError] = []
    if affinity.node_affinity is not None:
        errors.extend(_node_affinity_errors(affinity.node_affinity, f"{path}.nodeAffinity"))
    if affinity.pod_affinity is not None:
        errors.extend(_pod_affinity_errors(affinity.pod_affinity, f"{path}.podAffinity"))
    if affinity.pod_anti_affinity is not None:
        errors.extend(_pod_affinity_errors(affinity.pod_anti_affinity, f"{path}.podAntiAffinity"))
    return errors


# --- tolerations, taints and topology spread -------------------------------------------------------------


def validate_toleration(toleration: Toleration, path: str) -> list[FieldError]:
    """ValidateTolerations for one toleration as written (an empty operator, before defaulting to
    Equal, is reported as empty). Messages and (quirky) field paths as upstream."""
    key, operator, value, effect = toleration.key, toleration.operator, toleration.value, toleration.effect
    errors = _invalid_each(f"{path}.key", key, qualified_name_errors(key)) if key else []
    if not key and operator != "Exists":
        errors.append(
            invalid(
                f"{path}.operator",
                operator,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"',
            )
        )
    if toleration.toleration_seconds is not None and effect != TAINT_NO_EXECUTE:
        errors.append(invalid(f"{path}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if operator in ("", "Equal"):
        errors.extend(_invalid_joined(f"{path}.operator", value, label_value_errors(value)))
    elif operator == "Exists":
        if value:
            errors.append(invalid(f"{path}.operator", value, "value must be empty when `operator` is 'Exists'"))
    else:
        errors.append(_not_supported(f"{path}.operator", operator, _TOLERATION_OPERATORS))
    if effect:
        errors.extend(_supported_errors(f"{path}.effect", effect, _TAINT_EFFECTS))
    return errors


def validate_taints(taints: Sequence[Taint], path: str) -> list[FieldError]:
    """validateNodeTaints: key a qualified name, value a label value, effect required and known,
    unique by (key, effect)."""
    errors: list[FieldError] = []
    for index, taint in enumerate(taints):
        taint_path = f"{path}[{index}]"
        errors.extend(_invalid_each(f"{taint_path}.key", taint.key, qualified_name_errors(taint.key)))
        errors.extend(_invalid_joined(f"{taint_path}.value", taint.value, label_value_errors(taint.value)))
        if not taint.effect:
            errors.append(required(f"{taint_path}.effect"))
        else:
            errors.extend(_supported_errors(f"{taint_path}.effect", taint.effect, _TAINT_EFFECTS))
        if any(other.key == taint.key and other.effect == taint.effect for other in taints[:index]):
            detail = "taints must be unique by key and effect pair"
            errors.append(_duplicate(taint_path, f"{taint.key}:{taint.effect}", detail))
    return errors


def _spread_constraint_errors(constraint: TopologySpreadConstraint, path: str) -> list[FieldError]:
    """One constraint, after defaulting: the default inclusion policies are valid values, so an
    unset policy is never reported."""
    errors: list[FieldError] = []
    if constraint.max_skew <= 0:
        errors.append(invalid(f"{path}.maxSkew", constraint.max_skew, _NOT_POSITIVE_MSG))
    if not constraint.topology_key:
        errors.append(_topology_key_required(f"{path}.topologyKey"))
    when = constraint.when_unsatisfiable
    errors.extend(_supported_errors(f"{path}.whenUnsatisfiable", when, _WHEN_UNSATISFIABLE))
    min_domains = constraint.min_domains
    if min_domains is not None:
        if min_domains <= 0:
            errors.append(invalid(f"{path}.minDomains", min_domains, _NOT_POSITIVE_MSG))
        if when != DO_NOT_SCHEDULE:
            detail = f"can only use minDomains if whenUnsatisfiable={DO_NOT_SCHEDULE}, not {when}"
            errors.append(invalid(f"{path}.minDomains", min_domains, detail))
    for key, policy in (
        ("nodeAffinityPolicy", constraint.node_affinity_policy),
        ("nodeTaintsPolicy", constraint.node_taints_policy),
    ):
        errors.extend(_supported_errors(f"{path}.{key}", policy, _NODE_INCLUSION_POLICIES))
    errors.extend(_optional_selector_errors(constraint.label_selector, f"{path}.labelSelector"))
    errors.extend(_label_keys_errors(constraint.match_label_keys, f"{path}.matchLabelKeys", constraint.label_selector))
    return errors


def validate_topology_spread_constraints(
    constraints: Sequence[TopologySpreadConstraint], path: str
) -> list[FieldError]:
    """validateTopologySpreadConstraints: each constraint, then {topologyKey, whenUnsatisfiable}
    unique; upstream flags the first of a pair."""
    errors: list[FieldError] = []
    for index, constraint in enumerate(constraints):
        errors.extend(_spread_constraint_errors(constraint, f"{path}[{index}]"))
    for index, constraint in enumerate(constraints):
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if any((other.topology_key, other.when_unsatisfiable) == pair for other in constraints[index + 1 :]):
            errors.append(
                _duplicate(f"{path}[{index}].{{topologyKey, whenUnsatisfiable}}", "{" + ", ".join(pair) + "}")
            )
    return errors


# --- pods and disruption budgets -------------------------------------------------------------------------


def termination_grace_period_errors(seconds: int, path: str) -> list[FieldError]:
    return _non_negative_errors(seconds, path)


def pod_phase_errors(phase: str, path: str) -> list[FieldError]:
    """The phases a pod may be created in (v1.PodPhase)."""
    return _supported_errors(path, phase, _POD_PHASES)


def validate_pod_condition(condition: PodCondition, path: str) -> list[FieldError]:
    return [] if condition.type else [required(f"{path}.type")]


def _int_or_percent_errors(value: int | str, path: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent + IsNotMoreThan100Percent."""
    if isinstance(value, int):
        return _non_negative_errors(value, path)
    if not _PERCENT_RE.match(value):
        return [invalid(path, value, _regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%"))]
    digits = value[:-1].lstrip("0")
    if len(digits) > 3 or int(digits or "0") > 100:  # no int() of a thousand digits
        return [invalid(path, value, "must not be greater than 100%")]
    return []


def validate_pod_disruption_budget_spec(
    min_available: int | str | None,
    max_unavailable: int | str | None,
    selector: LabelSelector | None,
    unhealthy_pod_eviction_policy: str,
) -> list[FieldError]:
    """ValidatePodDisruptionBudgetSpec: at most one of minAvailable/maxUnavailable, each a
    non-negative count or a percentage up to 100%."""
    errors: list[FieldError] = []
    if min_available is not None and max_unavailable is not None:
        errors.append(invalid("spec", None, "minAvailable and maxUnavailable cannot be both set"))
    if min_available is not None:
        errors.extend(_int_or_percent_errors(min_available, "spec.minAvailable"))
    if max_unavailable is not None:
        errors.extend(_int_or_percent_errors(max_unavailable, "spec.maxUnavailable"))
    errors.extend(_optional_selector_errors(selector, "spec.selector"))
    if unhealthy_pod_eviction_policy:
        errors.extend(
            _supported_errors(
                "spec.unhealthyPodEvictionPolicy", unhealthy_pod_eviction_policy, _UNHEALTHY_POD_EVICTION_POLICIES
            )
        )
    return errors


# --- ResourceQuota ----------------------------------------------------------------------------------------

# pkg/apis/core/helper: the resource names the API knows (IsStandardResourceName), those quota tracks
# (IsStandardQuotaResourceName) and those counted in whole units (IsIntegerResourceName).
_OBJECT_COUNT_RESOURCES = (
    RESOURCE_PODS,
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
)
# What a quota can say about compute (upstream's standardQuotaResources' compute part, also the
# core of the pod evaluator's podResources).
COMPUTE_QUOTA_RESOURCES = (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    RESOURCE_EPHEMERAL_STORAGE,
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
)
_STANDARD_QUOTA_RESOURCES = frozenset((*COMPUTE_QUOTA_RESOURCES, *_OBJECT_COUNT_RESOURCES, "requests.storage"))
_STANDARD_RESOURCES = _STANDARD_QUOTA_RESOURCES | {"storage"}
_QUOTA_HUGEPAGES_PREFIXES = (_HUGEPAGES_PREFIX, "requests." + _HUGEPAGES_PREFIX)
_INTEGER_QUOTA_RESOURCES = frozenset(_OBJECT_COUNT_RESOURCES)

SCOPE_TERMINATING = "Terminating"
SCOPE_NOT_TERMINATING = "NotTerminating"
SCOPE_BEST_EFFORT = "BestEffort"
SCOPE_NOT_BEST_EFFORT = "NotBestEffort"
SCOPE_PRIORITY_CLASS = "PriorityClass"
SCOPE_CROSS_NAMESPACE_POD_AFFINITY = "CrossNamespacePodAffinity"
QUOTA_SCOPES = (
    SCOPE_TERMINATING,
    SCOPE_NOT_TERMINATING,
    SCOPE_BEST_EFFORT,
    SCOPE_NOT_BEST_EFFORT,
    SCOPE_PRIORITY_CLASS,
    SCOPE_CROSS_NAMESPACE_POD_AFFINITY,
)
SCOPE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_EXISTS_ONLY_SCOPES = (
    SCOPE_BEST_EFFORT,
    SCOPE_NOT_BEST_EFFORT,
    SCOPE_TERMINATING,
    SCOPE_NOT_TERMINATING,
    SCOPE_CROSS_NAMESPACE_POD_AFFINITY,
)
_CONFLICTING_SCOPES = ((SCOPE_BEST_EFFORT, SCOPE_NOT_BEST_EFFORT), (SCOPE_TERMINATING, SCOPE_NOT_TERMINATING))
_POD_SCOPED_QUOTA_RESOURCES = (
    RESOURCE_PODS,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
)


class RenderedValue:
    """A rejected value printed as upstream's field.Error prints a non-string: its JSON, unquoted
    (`spec.scopeSelector.matchExpressions.values: Invalid value: ["a"]: ...`)."""

    __slots__ = ("text",)

    def __init__(self, value: object) -> None:
        self.text = json.dumps(value, separators=(",", ":"))

    def __str__(self) -> str:
        return self.text


def is_standard_quota_resource(name: str) -> bool:
    """IsStandardQuotaResourceName."""
    return name in _STANDARD_QUOTA_RESOURCES or name.startswith(_QUOTA_HUGEPAGES_PREFIXES)


def is_integer_quota_resource(name: str) -> bool:
    """IsIntegerResourceName: object counts, and extended resources (`count/pods` is one)."""
    return name in _INTEGER_QUOTA_RESOURCES or _is_extended_resource(name)


def quota_resource_name_errors(name: str, path: str) -> list[FieldError]:
    """ValidateResourceQuotaResourceName: a qualified name; an unprefixed one must be a standard
    resource (`must be a standard resource type or fully qualified`) and one quota tracks (`must be a
    standard resource for quota`); both are reported, as upstream reports them."""
    errors = _invalid_each(path, name, qualified_name_errors(name))
    if (
        not errors
        and "/" not in name
        and name not in _STANDARD_RESOURCES
        and not name.startswith(_QUOTA_HUGEPAGES_PREFIXES)
    ):
        errors.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    if "/" not in name and not is_standard_quota_resource(name):
        errors.append(invalid(path, name, "must be a standard resource for quota"))
    return errors


def quota_quantity_errors(name: str, value: Fraction, shown: str, path: str) -> list[FieldError]:
    """ValidateResourceQuantityValue: not negative; integer resources in whole units. `shown` is
    the canonical quantity (upstream prints Quantity.String())."""
    errors = [invalid(path, shown, _NEGATIVE_MSG)] if value < 0 else []
    if is_integer_quota_resource(name) and (value * 1000).__ceil__() % 1000:
        errors.append(invalid(path, shown, _NOT_INTEGER_MSG))
    return errors


def _scope_valid_for_resource(scope: str, resource: str) -> bool:
    """IsResourceQuotaScopeValidForResource."""
    if scope in (
        SCOPE_TERMINATING,
        SCOPE_NOT_TERMINATING,
        SCOPE_NOT_BEST_EFFORT,
        SCOPE_PRIORITY_CLASS,
        SCOPE_CROSS_NAMESPACE_POD_AFFINITY,
    ):
        return resource in _POD_SCOPED_QUOTA_RESOURCES
    if scope == SCOPE_BEST_EFFORT:
        return resource == RESOURCE_PODS
    return True


def _scope_resource_errors(scope: str, hard: Iterable[str], path: str, shown: object) -> list[FieldError]:
    return [
        invalid(path, shown, "unsupported scope applied to resource")
        for resource in sorted(hard)
        if is_standard_quota_resource(resource) and not _scope_valid_for_resource(scope, resource)
    ]


def _conflict_errors(scopes: set[str], path: str, shown: object) -> list[FieldError]:
    return [invalid(path, shown, "conflicting scopes") for pair in _CONFLICTING_SCOPES if scopes.issuperset(pair)]


def validate_quota_scopes(scopes: Sequence[str], hard: Iterable[str], path: str = "spec.scopes") -> list[FieldError]:
    """validateResourceQuotaScopes: known scopes, valid for every hard resource, not conflicting.
    Upstream names the whole list as the bad value."""
    if not scopes:
        return []
    shown = RenderedValue(list(scopes))
    hard = list(hard)
    errors: list[FieldError] = []
    for scope in scopes:
        if scope not in QUOTA_SCOPES:
            errors.append(invalid(path, shown, "unsupported scope"))
        errors.extend(_scope_resource_errors(scope, hard, path, shown))
    errors.extend(_conflict_errors(set(scopes), path, shown))
    return errors


def _selector_shown(selector: Sequence[ScopedResourceSelectorRequirement]) -> RenderedValue:
    """The internal core.ScopeSelector as encoding/json renders it (no json tags: Go field names)."""
    return RenderedValue(
        {
            "MatchExpressions": [
                {"ScopeName": r.scope_name, "Operator": r.operator, "Values": list(r.values) or None} for r in selector
            ]
        }
    )


def scope_requirement_errors(
    requirement: ScopedResourceSelectorRequirement, path: str, *, check_values: bool = True
) -> list[FieldError]:
    """One scope selector requirement: the operator's rules for its scope and its values (the part
    of validateScopedResourceSelectorRequirement that does not look at spec.hard)."""
    errors: list[FieldError] = []
    if requirement.scope_name in _EXISTS_ONLY_SCOPES and requirement.operator != "Exists":
        errors.append(
            invalid(
                f"{path}.operator",
                requirement.operator,
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, "
                "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort "
                "or ResourceQuotaScopeCrossNamespacePodAffinity",
            )
        )
    operator, values = requirement.operator, requirement.values
    if operator in ("In", "NotIn"):
        if not values and check_values:
            errors.append(
                required(
                    f"{path}.values", "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"
                )
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values and check_values:
            errors.append(
                invalid(
                    f"{path}.values",
                    RenderedValue(list(values)),
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                )
            )
    else:
        errors.append(invalid(f"{path}.operator", operator, _BAD_OPERATOR_MSG))
    return errors


def validate_scope_selector(
    selector: Sequence[ScopedResourceSelectorRequirement] | None,
    hard: Iterable[str],
    scopes: Sequence[str],
    path: str = "spec.scopeSelector",
) -> list[FieldError]:
    """validateScopedResourceSelectorRequirement. Upstream's paths name `matchExpressions` without
    an index, and a conflict names spec.scopes as the bad value: both kept, users compare them."""
    if selector is None:
        return []
    path = f"{path}.matchExpressions"
    hard = list(hard)
    errors: list[FieldError] = []
    seen: set[str] = set()
    for requirement in selector:
        if requirement.scope_name not in QUOTA_SCOPES:
            errors.append(invalid(f"{path}.scopeName", requirement.scope_name, "unsupported scope"))
        errors.extend(_scope_resource_errors(requirement.scope_name, hard, path, _selector_shown(selector)))
        errors.extend(scope_requirement_errors(requirement, path))
        seen.add(requirement.scope_name)
    errors.extend(_conflict_errors(seen, path, RenderedValue(list(scopes) or None)))
    return errors


# --- workloads (apps/v1 ReplicaSet and Deployment, batch/v1 Job) ------------------------------------------


def go_string_map(values: Mapping[str, str]) -> RenderedValue:
    """A label map as upstream's field.Error prints one: `map[string]string{"app":"web"}`."""
    rendered = RenderedValue(None)
    rendered.text = (
        "map[string]string{" + ", ".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in values.items()) + "}"
    )
    return rendered


def non_negative_errors(value: int | None, path: str) -> list[FieldError]:
    """ValidateNonnegativeField."""
    return [invalid(path, value, "must be greater than or equal to 0")] if value is not None and value < 0 else []


def positive_errors(value: int | None, path: str) -> list[FieldError]:
    """ValidatePositiveField as the Job validation words it (activeDeadlineSeconds)."""
    return [invalid(path, value, "must be greater than 0")] if value is not None and value <= 0 else []


def validate_selector_and_template(
    selector: LabelSelector | None, template_labels: Mapping[str, str], path: str = "spec"
) -> list[FieldError]:
    """ValidateReplicaSetSpec / ValidateDeploymentSpec on the selector: required, not empty, valid, and
    matching the template's labels."""
    if selector is None:
        return [required(f"{path}.selector")]
    if not selector.match_labels and not selector.match_expressions:
        rendered = RenderedValue(None)
        rendered.text = (
            "v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        )
        return [invalid(f"{path}.selector", rendered, "empty selector is invalid for deployment")]
    errors = validate_label_selector(selector, f"{path}.selector")
    if not errors and not selector_matches(selector, template_labels):
        errors.append(
            invalid(
                f"{path}.template.metadata.labels",
                go_string_map(template_labels),
                "`selector` does not match template `labels`",
            )
        )
    return errors


def template_restart_policy_errors(policy: str, supported: Sequence[str], path: str) -> list[FieldError]:
    """The template's spec.restartPolicy against what the workload runs: Always for ReplicaSets and
    Deployments; OnFailure or Never for Jobs (an unset policy is a required value there)."""
    if policy in supported:
        return []
    if not policy and "Always" not in supported:
        return [required(path, "valid values: " + ", ".join(f'"{s}"' for s in supported))]
    return [_not_supported(path, policy or "Always", supported)]


_POD_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
_EXIT_CODE_OPERATORS = ("In", "NotIn")


def validate_pod_failure_policy_rule(
    action: str,
    on_exit_codes: tuple[str, tuple[int, ...]] | None,
    on_pod_conditions: Sequence[tuple[str, str]],
    path: str,
) -> list[FieldError]:
    """validatePodFailurePolicyRule: a supported action, and exactly one of onExitCodes and
    onPodConditions."""
    errors = (
        _supported_errors(f"{path}.action", action, _POD_FAILURE_ACTIONS) if action else [required(f"{path}.action")]
    )
    if on_exit_codes is not None and on_pod_conditions:
        errors.append(_forbidden(path, "specifying both OnExitCodes and OnPodConditions is not supported"))
    elif on_exit_codes is None and not on_pod_conditions:
        errors.append(required(path, "specifying one of OnExitCodes and OnPodConditions is required"))
    if on_exit_codes is not None:
        operator, values = on_exit_codes
        errors.extend(_supported_errors(f"{path}.onExitCodes.operator", operator, _EXIT_CODE_OPERATORS))
        if not values:
            errors.append(invalid(f"{path}.onExitCodes.values", RenderedValue([]), "at least one value is required"))
    for index, (condition_type, status) in enumerate(on_pod_conditions):
        where = f"{path}.onPodConditions[{index}]"
        if not condition_type:
            errors.append(required(f"{where}.type"))
        errors.extend(_supported_errors(f"{where}.status", status, ("False", "True", "Unknown")))
    return errors


# --- PodGroup (scheduling.k8s.io/v1beta1) and a pod's schedulingGroup --------------------------------------

# Union members as upstream's declarative validation names them, in declaration order.
POD_GROUP_POLICY_MEMBERS = ("basic", "gang")
DISRUPTION_MODE_MEMBERS = ("single", "all")
_HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000


def union_errors(path: str, members: Sequence[str], present: Sequence[str]) -> list[FieldError]:
    """validate.Union: exactly one member set. None: `Invalid value: "": must specify one of: a, b`;
    several: `Invalid value: "{a, b}": must specify exactly one of: a, b`."""
    if len(present) == 1:
        return []
    if not present:
        return [invalid(path, "", "must specify one of: " + ", ".join(members))]
    return [invalid(path, "{" + ", ".join(present) + "}", "must specify exactly one of: " + ", ".join(members))]


def validate_pod_group_spec(
    policies: Sequence[str],
    min_count: int | None,
    disruption_modes: Sequence[str],
    priority_class_name: str,
    priority: int | None,
    preemption_policy: str | None,
) -> list[FieldError]:
    """Validate_PodGroupSpec (declarative, v1beta1) for the fields podsched reads: schedulingPolicy
    one of basic/gang, gang.minCount required and at least 1, disruptionMode one of single/all,
    priorityClassName a DNS subdomain, priority at most HighestUserDefinablePriority,
    preemptionPolicy Never or PreemptLowerPriority."""
    errors = union_errors("spec.schedulingPolicy", POD_GROUP_POLICY_MEMBERS, policies)
    if "gang" in policies:
        path = "spec.schedulingPolicy.gang.minCount"
        if not min_count:
            errors.append(required(path))
        elif min_count < 1:
            errors.append(invalid(path, min_count, "must be greater than or equal to 1"))
    errors.extend(union_errors("spec.disruptionMode", DISRUPTION_MODE_MEMBERS, disruption_modes))
    if priority_class_name:
        errors.extend(
            _invalid_each("spec.priorityClassName", priority_class_name, dns1123_subdomain_errors(priority_class_name))
        )
    if priority is not None and priority > _HIGHEST_USER_DEFINABLE_PRIORITY:
        errors.append(
            invalid("spec.priority", priority, f"must be less than or equal to {_HIGHEST_USER_DEFINABLE_PRIORITY}")
        )
    if preemption_policy is not None and preemption_policy not in _PREEMPTION_POLICIES:
        errors.append(_not_supported("spec.preemptionPolicy", preemption_policy, sorted(_PREEMPTION_POLICIES)))
    return errors


def validate_scheduling_group(pod_group_name: str | None, path: str = "spec.schedulingGroup") -> list[FieldError]:
    """validateSchedulingGroup: podGroupName is required (the only member of a one-of) and a DNS
    subdomain (ValidatePodGroupName)."""
    if pod_group_name is None:
        return [invalid(f"{path}.podGroupName", RenderedValue(None), "must specify one of: `podGroupName`")]
    return _invalid_each(f"{path}.podGroupName", pod_group_name, dns1123_subdomain_errors(pod_group_name))
