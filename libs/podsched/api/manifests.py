"""Kubernetes manifests in and out: YAML/JSON documents -> validated typed objects -> Kubernetes JSON.

This is the front door for user input. Three layers, each with upstream's wording:

1. `load_documents` turns text into documents (kubectl's client side): YAML or JSON, multi-document,
   `kind: List` expanded. Unparsable text names the file and line.
2. `decode_object` turns one document into a `Node`, `Pod`, `PriorityClass` or `PodDisruptionBudget`
   (the API server's decode + defaulting + validation). A value of the wrong JSON type cannot be
   decoded at all (BadRequest, like `cannot unmarshal string into Go struct field ...`); every
   other rule is checked in one pass and all violations are reported together as an Invalid error
   (`Pod "p" is invalid: [spec.containers[0].name: Required value, ...]`).
3. `encode_object` renders an object back in the Kubernetes JSON shape: the manifest it was decoded
   from, with the object's current typed state laid over it.

PriorityClass-specific rules (reserved `system-` names, the value ceiling, one global default) are
upstream's `ValidatePriorityClass` and admission plugin; they live in `podsched.admission.priority`
and run when a class is created, as in the API server.
"""

from __future__ import annotations

import calendar
import copy
import ipaddress
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import yaml

from podsched.api import quantity
from podsched.api.errors import ApiError, FieldError
from podsched.api.types import (
    DEFAULT_SCHEDULER_NAME,
    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
    DO_NOT_SCHEDULE,
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_PRIORITY_CLASS,
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
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)

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
}

DEFAULT_NAMESPACE = "default"
DEFAULT_NODE_PODS = 110  # kubelet's default --max-pods
DEFAULT_PROTOCOL = "TCP"
POD_UNKNOWN = "Unknown"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

_PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)
_TAINT_EFFECTS = (TAINT_NO_SCHEDULE, TAINT_PREFER_NO_SCHEDULE, TAINT_NO_EXECUTE)
_TOLERATION_OPERATORS = ("Equal", "Exists")
_LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_WHEN_UNSATISFIABLE = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_POD_PHASES = (POD_PENDING, POD_RUNNING, POD_SUCCEEDED, POD_FAILED, POD_UNKNOWN)
_CONTAINER_RESTART_ALWAYS = "Always"
_HUGEPAGES_PREFIX = "hugepages-"
_STANDARD_CONTAINER_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE)
_BYTE_RESOURCES = (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE)
_TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

# --- apimachinery's validation messages -----------------------------------------------------------

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_PERCENT_FMT = "[0-9]+%"
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_PERCENT_RE = re.compile(f"^{_PERCENT_FMT}$")
_PORT_NAME_CHARSET_RE = re.compile("^[-a-z0-9]+$")

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
            + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
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
        errors.append(
            "name part " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
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


def _required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, detail, kind="Required value")


def _invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, detail, value)


def _forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, detail, kind="Forbidden")


def _not_supported(path: str, value: object, supported: Iterable[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(choice) for choice in supported)
    return FieldError(path, detail, value, kind="Unsupported value")


def _duplicate(path: str, value: object, detail: str = "") -> FieldError:
    return FieldError(path, detail, value, kind="Duplicate value")


def _invalid_each(path: str, value: str, messages: Iterable[str]) -> list[FieldError]:
    return [_invalid(path, value, message) for message in messages]


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


def validate_object_meta(meta: ObjectMeta, *, namespaced: bool, path: str = "metadata") -> list[FieldError]:
    """ValidateObjectMeta with NameIsDNSSubdomain: the name is required and a DNS-1123 subdomain;
    a namespaced object needs a DNS-1123 label namespace, a cluster-scoped one must have none."""
    errors: list[FieldError] = []
    if not meta.name:
        errors.append(_required(f"{path}.name", "name or generateName is required"))
    else:
        errors.extend(_invalid_each(f"{path}.name", meta.name, dns1123_subdomain_errors(meta.name)))
    if namespaced:
        if not meta.namespace:
            errors.append(_required(f"{path}.namespace"))
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
        return [_required(path)]
    return [_not_supported(path, policy, _PREEMPTION_POLICIES)]


# --- timestamps ------------------------------------------------------------------------------------

_RFC3339_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def format_timestamp(seconds: float) -> str:
    """Seconds since the epoch -> RFC3339 in UTC (`2026-01-01T00:00:00Z`). Fractional seconds are
    written only when non-zero, with at least six digits (`2026-01-01T00:00:00.500000Z`) and more
    when the float needs them, so that `parse_timestamp(format_timestamp(t)) == t` for every t."""
    whole = math.floor(seconds)
    fraction = Fraction(repr(seconds)) - whole  # the shortest decimal that reproduces the float
    text = datetime.fromtimestamp(whole, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if not fraction:
        return f"{text}Z"
    places = 0
    while (fraction * 10**places).denominator != 1:
        places += 1
    digits = str(fraction.numerator * (10**places // fraction.denominator)).rjust(places, "0").rstrip("0")
    return f"{text}.{digits.ljust(6, '0')}Z"


def parse_timestamp(text: str) -> float:
    """RFC3339 (any offset, any number of fractional digits) -> seconds since the epoch, rounded
    once from the exact value. Raises ValueError when the text is not RFC3339."""
    match = _RFC3339_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not an RFC3339 timestamp: {text!r}")
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    datetime(year, month, day, hour, minute, second)  # range check: raises ValueError
    whole = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    zone = match.group(8)
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        whole -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    fraction = Fraction("0." + match.group(7)) if match.group(7) else Fraction(0)
    return float(whole + fraction)


# --- loading documents -----------------------------------------------------------------------------


class _ManifestLoader(yaml.SafeLoader):
    """YAML as kubectl reads it (YAML -> JSON): timestamps stay strings, mapping keys become
    strings, and a key repeated in one mapping is an error instead of silently overwriting."""


def _construct_mapping(loader: _ManifestLoader, node: yaml.MappingNode) -> dict[str, Any]:
    loader.flatten_mapping(node)
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        text = ("true" if key else "false") if isinstance(key, bool) else str(key)
        if text in result:
            raise yaml.constructor.ConstructorError(None, None, f'key "{text}" already set in map', key_node.start_mark)
        result[text] = loader.construct_object(value_node, deep=True)
    return result


def _construct_timestamp_as_text(loader: _ManifestLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_ManifestLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_ManifestLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_as_text)


def _parse_error(source: str, detail: str) -> ApiError:
    return ApiError.bad_request("", "", f"error parsing {source}: {detail}")


def _parse_yaml(text: str, source: str) -> list[Any]:
    try:
        return list(yaml.load_all(text, Loader=_ManifestLoader))  # a SafeLoader: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise _parse_error(source, f"error converting YAML to JSON: yaml: {line}{problem}") from exc
    except yaml.YAMLError as exc:
        raise _parse_error(source, f"error converting YAML to JSON: yaml: {exc}") from exc


def _parse_json_stream(text: str, source: str) -> list[Any]:
    """A JSON value or a stream of concatenated values, as kubectl's YAMLOrJSONDecoder reads it."""
    decoder = json.JSONDecoder()
    documents: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return documents
        try:
            document, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise _parse_error(
                source, f"error converting JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from exc
        documents.append(document)


_YAML_SEPARATOR_RE = re.compile(r"^---", re.MULTILINE)


def _parse_text(text: str, source: str) -> list[Any]:
    """Text that starts like JSON is read as a JSON stream, unless it has YAML document separators
    (JSON documents joined by `---`, which YAML reads). Anything else is YAML."""
    if text.lstrip()[:1] in ("{", "[") and not _YAML_SEPARATOR_RE.search(text):
        return _parse_json_stream(text, source)
    return _parse_yaml(text, source)


def _type_meta_errors(document: Mapping[str, Any]) -> list[str]:
    """kubectl's `error validating data` list for a document without apiVersion or kind."""
    missing = []
    for key in ("apiVersion", "kind"):
        value = document.get(key)
        if not isinstance(value, str) or not value:
            missing.append(f"{key} not set")
    return missing


def _validation_error(source: str, where: str, problems: list[str]) -> ApiError:
    return ApiError.bad_request(
        "", "", f'error validating "{source}" ({where}): error validating data: [{", ".join(problems)}]'
    )


def _expand(document: Any, source: str, where: str) -> Iterator[dict[str, Any]]:
    """Yield the objects of one document: itself, or the items of a `List`/`*List`. Items of a typed
    list (`PodList`) may omit apiVersion and kind; they inherit them from the list."""
    if not isinstance(document, dict):
        raise _validation_error(source, where, [f"expected an object, got {_json_type(document)}"])
    problems = _type_meta_errors(document)
    if problems:
        raise _validation_error(source, where, problems)
    kind: str = document["kind"]
    if not kind.endswith("List"):
        yield document
        return
    items = document.get("items") or []
    if not isinstance(items, list):
        raise _validation_error(source, where, [f"items must be an array, got {_json_type(items)}"])
    for index, item in enumerate(items):
        if isinstance(item, dict) and kind != "List":
            item.setdefault("apiVersion", document["apiVersion"])
            item.setdefault("kind", kind[: -len("List")])
        yield from _expand(item, source, f"{where}, item {index + 1}")


def load_documents(text: str, source: str = "-") -> list[dict[str, Any]]:
    """Parse YAML (multi-document) or JSON (one value or a stream) into object documents.

    Empty documents are skipped; `kind: List` and typed lists (`PodList`, ...) are expanded into
    their items. Raises `ApiError` (BadRequest) naming `source` and the line for unparsable text, and
    the 1-based document (and item) number for a document that is not an object or lacks
    apiVersion/kind. Documents are not decoded: pass each to `decode_object`.
    """
    raw = _parse_text(text, source)
    objects: list[dict[str, Any]] = []
    for number, document in enumerate(raw, start=1):
        if document is None or document == {}:
            continue
        if isinstance(document, list):  # a bare JSON array of objects
            for index, item in enumerate(document):
                objects.extend(_expand(item, source, f"document {number}, item {index + 1}"))
            continue
        objects.extend(_expand(document, source, f"document {number}"))
    return objects


# --- typed access to a document ---------------------------------------------------------------------


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class _SchemaError(Exception):
    """A value of the wrong JSON type: the object cannot be decoded at all (BadRequest upstream,
    `json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32`)."""

    def __init__(self, path: str, value: object, expected: str) -> None:
        shown = _json_type(value)
        if shown == "number":
            shown = f"number {value}"
        super().__init__(f"json: cannot unmarshal {shown} into Go struct field {path} of type {expected}")


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _get(doc: Mapping[str, Any], key: str) -> Any:
    """A field's value; JSON null counts as absent, as in Go."""
    return doc.get(key)


def _string(doc: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = _get(doc, key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _SchemaError(_at(path, key), value, "string")
    return value


def _as_int(value: Any, path: str, bounds: tuple[int, int], type_name: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 10.0 is the integer 10
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise _SchemaError(path, value, type_name)
    return value


def _int32(doc: Mapping[str, Any], key: str, path: str) -> int | None:
    value = _get(doc, key)
    return None if value is None else _as_int(value, _at(path, key), _INT32, "int32")


def _int64(doc: Mapping[str, Any], key: str, path: str) -> int | None:
    value = _get(doc, key)
    return None if value is None else _as_int(value, _at(path, key), _INT64, "int64")


def _boolean(doc: Mapping[str, Any], key: str, path: str) -> bool:
    value = _get(doc, key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _SchemaError(_at(path, key), value, "bool")
    return value


def _object(doc: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
    value = _get(doc, key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _SchemaError(_at(path, key), value, "object")
    return value


def _array(doc: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = _get(doc, key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _SchemaError(_at(path, key), value, "array")
    return value


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
    value = _get(doc, key)
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
        errors.append(_invalid(_at(path, key), value, _TIMESTAMP_MSG))
        return None


# --- metadata ----------------------------------------------------------------------------------------


def _resource_version(metadata: Mapping[str, Any], errors: list[FieldError]) -> int:
    value = _get(metadata, "resourceVersion")
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    errors.append(_invalid("metadata.resourceVersion", value, "must be a decimal integer"))
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
        resource_version=_resource_version(metadata, errors),
    )
    errors.extend(validate_object_meta(meta, namespaced=namespaced))
    return meta


# --- resources ----------------------------------------------------------------------------------------


def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_hugepages(name: str) -> bool:
    return name.startswith(_HUGEPAGES_PREFIX)


def _is_extended_resource(name: str) -> bool:
    """IsExtendedResourceName: a domain-prefixed name outside kubernetes.io, e.g. nvidia.com/gpu."""
    if _is_native_resource(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def _is_integer_resource(name: str) -> bool:
    return name == RESOURCE_PODS or _is_extended_resource(name)


def _overcommit_allowed(name: str) -> bool:
    """Requests below limits are allowed for native resources except hugepages; extended
    resources must request exactly their limit."""
    return _is_native_resource(name) and not _is_hugepages(name)


def _container_resource_name_errors(name: str, path: str) -> list[FieldError]:
    """validateContainerResourceName."""
    errors = _invalid_each(path, name, qualified_name_errors(name))
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errors.append(_invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native_resource(name) and not _is_extended_resource(name):
        errors.append(_invalid(path, name, "doesn't follow extended resource name standard"))
    return errors


@dataclass(frozen=True, slots=True)
class _Quantity:
    """One parsed ResourceList entry."""

    text: str | int | float  # as written in the manifest: shown in messages, converted by quantity.*
    value: Fraction


def _canonical(name: str, entry: _Quantity) -> int:
    """CPU in millicores, everything else in whole units, both rounded up (MilliValue/Value)."""
    return quantity.to_milli(entry.text) if name == RESOURCE_CPU else quantity.to_int(entry.text)


def _quantity_detail(error: quantity.QuantityError) -> str:
    text = str(error)
    return _QUANTITY_MSG if text.startswith("quantities must match") else text


def _quantities(
    doc: Mapping[str, Any] | None, path: str, errors: list[FieldError], *, keyed: bool = True
) -> dict[str, _Quantity]:
    """Parse a ResourceList; each bad entry is an Invalid error at `path[name]` (`path.name` for a
    node's capacity/allocatable, as upstream words it). Negative and, for integer resources,
    fractional values are reported; parsed entries are returned either way."""
    parsed: dict[str, _Quantity] = {}
    for name, raw in (doc or {}).items():
        entry_path = f"{path}[{name}]" if keyed else f"{path}.{name}"
        shown = raw if isinstance(raw, str) else json.dumps(raw)
        if not isinstance(raw, str | int | float):
            errors.append(_invalid(entry_path, shown, _QUANTITY_MSG))
            continue
        try:
            value = quantity.parse_quantity(raw)
        except quantity.QuantityError as exc:
            errors.append(_invalid(entry_path, shown, _quantity_detail(exc)))
            continue
        if value < 0:
            errors.append(_invalid(entry_path, shown, _NEGATIVE_MSG))
        if _is_integer_resource(name) and value.denominator != 1:
            errors.append(_invalid(entry_path, shown, _NOT_INTEGER_MSG))
        parsed[name] = _Quantity(raw, value)
    return parsed


def _canonical_list(parsed: Mapping[str, _Quantity]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((name, _canonical(name, entry)) for name, entry in parsed.items()))


def _hugepage_errors(name: str, entry: _Quantity, path: str) -> list[FieldError]:
    """A hugepages limit must be a whole number of pages (validateResourceQuantityHugePageValue)."""
    try:
        page = quantity.parse_quantity(name[len(_HUGEPAGES_PREFIX) :])
    except quantity.QuantityError:
        return [_invalid(path, name, "must be a valid hugepage size, e.g. hugepages-2Mi")]
    if page <= 0 or entry.value % page != 0:
        return [_invalid(path, str(entry.text), f"{entry.text} is not positive integer multiple of {name}")]
    return []


# --- containers ----------------------------------------------------------------------------------------


def _decode_requirements(container: dict[str, Any], path: str, errors: list[FieldError]) -> dict[str, _Quantity]:
    """resources.limits/requests of one container: defaulted (a limit without a request sets the
    request, SetDefaults_Pod) and validated as ValidateContainerResourceRequirements does.
    Returns the parsed requests."""
    resources_path = f"{path}.resources"
    resources = _object(container, "resources", path) or {}
    limits_doc = _object(resources, "limits", resources_path) or {}
    requests_doc = _object(resources, "requests", resources_path) or {}
    limits_path, requests_path = f"{resources_path}.limits", f"{resources_path}.requests"
    for name in limits_doc:
        errors.extend(_container_resource_name_errors(name, f"{limits_path}[{name}]"))
    for name in requests_doc:
        errors.extend(_container_resource_name_errors(name, f"{requests_path}[{name}]"))
    limits = _quantities(limits_doc, limits_path, errors)
    given_requests = _quantities(requests_doc, requests_path, errors)
    errors.extend(_limit_errors(limits, given_requests, resources_path))
    defaulted = {name: limit for name, limit in limits.items() if name not in requests_doc and limit.value >= 0}
    if defaulted:
        requests_doc.update({name: limit.text for name, limit in defaulted.items()})
        resources["requests"] = requests_doc
        container["resources"] = resources
    return {**given_requests, **defaulted}


def _limit_errors(limits: Mapping[str, _Quantity], requests: Mapping[str, _Quantity], path: str) -> list[FieldError]:
    """requests <= limits (== for extended resources and hugepages, whose limit is mandatory),
    hugepage limits in whole pages, and hugepages only alongside cpu or memory."""
    errors: list[FieldError] = []
    for name, limit in limits.items():
        if _is_hugepages(name):
            errors.extend(_hugepage_errors(name, limit, f"{path}.limits[{name}]"))
    for name, request in requests.items():
        limit_entry = limits.get(name)
        if limit_entry is None:
            if not _overcommit_allowed(name):
                errors.append(_required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
            continue
        shown = str(request.text)
        if request.value != limit_entry.value and not _overcommit_allowed(name):
            errors.append(_invalid(f"{path}.requests", shown, f"must be equal to {name} limit of {limit_entry.text}"))
        elif request.value > limit_entry.value:
            errors.append(
                _invalid(
                    f"{path}.requests",
                    shown,
                    f"must be less than or equal to {name} limit of {limit_entry.text}",
                )
            )
    names = set(limits) | set(requests)
    if any(_is_hugepages(name) for name in names) and not names & {RESOURCE_CPU, RESOURCE_MEMORY}:
        errors.append(_forbidden(path, "HugePages require cpu or memory"))
    return errors


def _decode_port(doc: dict[str, Any], path: str, errors: list[FieldError], names: set[str]) -> ContainerPort:
    """One containerPort (validateContainerPorts); the protocol defaults to TCP."""
    name = _string(doc, "name", path)
    if name:
        messages = _port_name_errors(name)
        errors.extend(_invalid_each(f"{path}.name", name, messages))
        if not messages and name in names:
            errors.append(_duplicate(f"{path}.name", name))
        names.add(name)
    container_port = _int32(doc, "containerPort", path) or 0
    if container_port == 0:
        errors.append(_required(f"{path}.containerPort"))
    elif not 1 <= container_port <= 65535:
        errors.append(_invalid(f"{path}.containerPort", container_port, _PORT_RANGE_MSG))
    host_port = _int32(doc, "hostPort", path) or 0
    if host_port != 0 and not 1 <= host_port <= 65535:
        errors.append(_invalid(f"{path}.hostPort", host_port, _PORT_RANGE_MSG))
    protocol = _string(doc, "protocol", path) or DEFAULT_PROTOCOL
    doc["protocol"] = protocol
    if protocol not in _PROTOCOLS:
        errors.append(_not_supported(f"{path}.protocol", protocol, _PROTOCOLS))
    host_ip = _string(doc, "hostIP", path)
    if host_ip and not _is_ip(host_ip):
        errors.append(
            _invalid(f"{path}.hostIP", host_ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
        )
    return ContainerPort(container_port, host_port, protocol, host_ip)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _decode_container(
    doc: dict[str, Any], path: str, errors: list[FieldError], names: set[str], *, init: bool
) -> Container:
    """One container or init container. Names are DNS-1123 labels, unique across both lists; only
    init containers may set restartPolicy, and only to Always (a sidecar)."""
    name = _string(doc, "name", path)
    if not name:
        errors.append(_required(f"{path}.name"))
    else:
        messages = dns1123_label_errors(name)
        errors.extend(_invalid_each(f"{path}.name", name, messages))
        if not messages and name in names:
            errors.append(_duplicate(f"{path}.name", name))
        names.add(name)
    requests = _decode_requirements(doc, path, errors)
    port_names: set[str] = set()
    ports = tuple(_decode_port(port, port_path, errors, port_names) for port_path, port in _items(doc, "ports", path))
    restart_policy = _string(doc, "restartPolicy", path)
    if restart_policy and not init:
        errors.append(_forbidden(f"{path}.restartPolicy", "may not be set for non-init containers"))
    elif restart_policy and restart_policy != _CONTAINER_RESTART_ALWAYS:
        errors.append(_not_supported(f"{path}.restartPolicy", restart_policy, [_CONTAINER_RESTART_ALWAYS]))
    return Container(name, _canonical_list(requests), ports, restart_policy)


def _host_port_errors(containers: Iterable[tuple[str, Container]]) -> list[FieldError]:
    """AccumulateUniqueHostPorts: one protocol/hostIP/hostPort per pod."""
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

_REQUIRED_TERMS = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED_TERMS = "preferredDuringSchedulingIgnoredDuringExecution"


def _requirement_errors(path: str, key: str, operator: str, values: tuple[str, ...], *, node: bool) -> list[FieldError]:
    """ValidateLabelSelectorRequirement / ValidateNodeSelectorRequirement."""
    errors: list[FieldError] = []
    if operator in ("In", "NotIn"):
        if not values:
            errors.append(_required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(
                _forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
            )
    elif node and operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(_required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errors.append(_invalid(f"{path}.operator", operator, _BAD_OPERATOR_MSG))
    errors.extend(_invalid_each(f"{path}.key", key, qualified_name_errors(key)))
    for index, value in enumerate(values):
        errors.extend(_invalid_each(f"{path}.values[{index}]", value, label_value_errors(value)))
    return errors


def _decode_label_selector(
    doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]
) -> LabelSelector | None:
    """A metav1.LabelSelector; absent -> None (matches nothing), `{}` -> empty (matches all)."""
    selector = _object(doc, key, path)
    if selector is None:
        return None
    selector_path = _at(path, key)
    match_labels = _string_map(selector, "matchLabels", selector_path)
    errors.extend(validate_labels(match_labels, f"{selector_path}.matchLabels"))
    expressions = []
    for item_path, item in _items(selector, "matchExpressions", selector_path):
        requirement = LabelSelectorRequirement(
            _string(item, "key", item_path),
            _string(item, "operator", item_path),
            _string_list(item, "values", item_path),
        )
        errors.extend(
            _requirement_errors(item_path, requirement.key, requirement.operator, requirement.values, node=False)
        )
        expressions.append(requirement)
    return LabelSelector(tuple(match_labels.items()), tuple(expressions))


def _node_field_requirement_errors(path: str, requirement: NodeSelectorRequirement) -> list[FieldError]:
    """ValidateNodeFieldSelectorRequirement: only `metadata.name`, In/NotIn with one node name."""
    errors: list[FieldError] = []
    if requirement.operator in ("In", "NotIn"):
        if len(requirement.values) != 1:
            errors.append(
                _required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
    else:
        errors.append(_invalid(f"{path}.operator", requirement.operator, _BAD_OPERATOR_MSG))
    if requirement.key != "metadata.name":
        errors.append(_invalid(f"{path}.key", requirement.key, "not a valid field selector key"))
    else:
        for index, value in enumerate(requirement.values):
            errors.extend(_invalid_each(f"{path}.values[{index}]", value, dns1123_subdomain_errors(value)))
    return errors


def _decode_node_selector_term(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> NodeSelectorTerm:
    expressions, fields = [], []
    for item_path, item in _items(doc, "matchExpressions", path):
        requirement = _node_requirement(item, item_path)
        errors.extend(
            _requirement_errors(item_path, requirement.key, requirement.operator, requirement.values, node=True)
        )
        expressions.append(requirement)
    for item_path, item in _items(doc, "matchFields", path):
        requirement = _node_requirement(item, item_path)
        errors.extend(_node_field_requirement_errors(item_path, requirement))
        fields.append(requirement)
    return NodeSelectorTerm(tuple(expressions), tuple(fields))


def _node_requirement(doc: Mapping[str, Any], path: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(
        _string(doc, "key", path), _string(doc, "operator", path), _string_list(doc, "values", path)
    )


def _weight(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> int:
    weight = _int32(doc, "weight", path) or 0
    if not 1 <= weight <= 100:
        errors.append(_invalid(f"{path}.weight", weight, _WEIGHT_MSG))
    return weight


def _decode_node_affinity(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> NodeAffinity | None:
    affinity = _object(doc, "nodeAffinity", path)
    if affinity is None:
        return None
    path = f"{path}.nodeAffinity"
    required: tuple[NodeSelectorTerm, ...] | None = None
    selector = _object(affinity, _REQUIRED_TERMS, path)
    if selector is not None:
        selector_path = f"{path}.{_REQUIRED_TERMS}"
        required = tuple(
            _decode_node_selector_term(term, term_path, errors)
            for term_path, term in _items(selector, "nodeSelectorTerms", selector_path)
        )
        if not required:
            errors.append(_required(f"{selector_path}.nodeSelectorTerms", "must have at least one node selector term"))
    preferred = []
    for item_path, item in _items(affinity, _PREFERRED_TERMS, path):
        weight = _weight(item, item_path, errors)
        preference = _object(item, "preference", item_path) or {}
        term = _decode_node_selector_term(preference, f"{item_path}.preference", errors)
        preferred.append(PreferredSchedulingTerm(weight, term))
    return NodeAffinity(required, tuple(preferred))


def _label_keys_errors(path: str, keys: tuple[str, ...], selector: LabelSelector | None) -> list[FieldError]:
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
            detail = "exists in both matchLabelKeys and labelSelector"
            errors.append(_invalid(f"{path}[{index}]", key, detail))
    return errors


def _decode_pod_affinity_term(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> PodAffinityTerm:
    """validatePodAffinityTerm."""
    selector = _decode_label_selector(doc, "labelSelector", path, errors)
    namespaces = _string_list(doc, "namespaces", path)
    for index, namespace in enumerate(namespaces):
        errors.extend(_invalid_each(f"{path}.namespaces[{index}]", namespace, dns1123_label_errors(namespace)))
    namespace_selector = _decode_label_selector(doc, "namespaceSelector", path, errors)
    match_keys = _string_list(doc, "matchLabelKeys", path)
    mismatch_keys = _string_list(doc, "mismatchLabelKeys", path)
    errors.extend(_label_keys_errors(f"{path}.matchLabelKeys", match_keys, selector))
    errors.extend(_label_keys_errors(f"{path}.mismatchLabelKeys", mismatch_keys, selector))
    for index, key in enumerate(mismatch_keys):
        if key in match_keys:
            errors.append(
                _invalid(
                    f"{path}.matchLabelKeys[{index}]",
                    key,
                    "exists in both matchLabelKeys and mismatchLabelKeys",
                )
            )
    topology_key = _string(doc, "topologyKey", path)
    if not topology_key:
        errors.append(_required(f"{path}.topologyKey", "can not be empty"))
    else:
        errors.extend(_invalid_each(f"{path}.topologyKey", topology_key, qualified_name_errors(topology_key)))
    return PodAffinityTerm(topology_key, selector, namespaces, namespace_selector, match_keys, mismatch_keys)


def _decode_pod_affinity(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> PodAffinity | None:
    affinity = _object(doc, key, path)
    if affinity is None:
        return None
    path = f"{path}.{key}"
    required = tuple(
        _decode_pod_affinity_term(term, term_path, errors)
        for term_path, term in _items(affinity, _REQUIRED_TERMS, path)
    )
    preferred = []
    for item_path, item in _items(affinity, _PREFERRED_TERMS, path):
        weight = _weight(item, item_path, errors)
        term_doc = _object(item, "podAffinityTerm", item_path) or {}
        term = _decode_pod_affinity_term(term_doc, f"{item_path}.podAffinityTerm", errors)
        preferred.append(WeightedPodAffinityTerm(weight, term))
    return PodAffinity(required, tuple(preferred))


def _decode_affinity(spec: Mapping[str, Any], errors: list[FieldError]) -> Affinity | None:
    affinity = _object(spec, "affinity", "spec")
    if affinity is None:
        return None
    path = "spec.affinity"
    return Affinity(
        _decode_node_affinity(affinity, path, errors),
        _decode_pod_affinity(affinity, "podAffinity", path, errors),
        _decode_pod_affinity(affinity, "podAntiAffinity", path, errors),
    )


# --- tolerations, taints and topology spread -------------------------------------------------------------


def _decode_toleration(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> Toleration:
    """ValidateTolerations, messages and (quirky) field paths as upstream."""
    key = _string(doc, "key", path)
    operator = _string(doc, "operator", path)
    value = _string(doc, "value", path)
    effect = _string(doc, "effect", path)
    seconds = _int64(doc, "tolerationSeconds", path)
    if key:
        errors.extend(_invalid_each(f"{path}.key", key, qualified_name_errors(key)))
    if not key and operator != "Exists":
        errors.append(
            _invalid(
                f"{path}.operator",
                operator,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"',
            )
        )
    if seconds is not None and effect != TAINT_NO_EXECUTE:
        errors.append(_invalid(f"{path}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if operator in ("", "Equal"):
        messages = label_value_errors(value)
        if messages:
            errors.append(_invalid(f"{path}.operator", value, ";".join(messages)))
    elif operator == "Exists":
        if value:
            errors.append(_invalid(f"{path}.operator", value, "value must be empty when `operator` is 'Exists'"))
    else:
        errors.append(_not_supported(f"{path}.operator", operator, _TOLERATION_OPERATORS))
    if effect and effect not in _TAINT_EFFECTS:
        errors.append(_not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return Toleration(key, operator or "Equal", value, effect, seconds)


def _decode_taints(spec: Mapping[str, Any], errors: list[FieldError]) -> tuple[Taint, ...]:
    """validateNodeTaints: key a qualified name, value a label value, effect required and known,
    unique by (key, effect)."""
    taints: list[Taint] = []
    for path, doc in _items(spec, "taints", "spec"):
        taint = Taint(_string(doc, "key", path), _string(doc, "effect", path), _string(doc, "value", path))
        errors.extend(_invalid_each(f"{path}.key", taint.key, qualified_name_errors(taint.key)))
        messages = label_value_errors(taint.value)
        if messages:
            errors.append(_invalid(f"{path}.value", taint.value, ";".join(messages)))
        if not taint.effect:
            errors.append(_required(f"{path}.effect"))
        elif taint.effect not in _TAINT_EFFECTS:
            errors.append(_not_supported(f"{path}.effect", taint.effect, _TAINT_EFFECTS))
        if any(other.key == taint.key and other.effect == taint.effect for other in taints):
            errors.append(
                _duplicate(path, f"{taint.key}:{taint.effect}", "taints must be unique by key and effect pair")
            )
        taints.append(taint)
    return tuple(taints)


def _policy(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> str:
    value = _string(doc, key, path)
    if value and value not in _NODE_INCLUSION_POLICIES:
        errors.append(_not_supported(f"{path}.{key}", value, _NODE_INCLUSION_POLICIES))
    return value


def _decode_spread_constraint(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> TopologySpreadConstraint:
    max_skew = _int32(doc, "maxSkew", path) or 0
    if max_skew <= 0:
        errors.append(_invalid(f"{path}.maxSkew", max_skew, _NOT_POSITIVE_MSG))
    topology_key = _string(doc, "topologyKey", path)
    if not topology_key:
        errors.append(_required(f"{path}.topologyKey", "can not be empty"))
    when = _string(doc, "whenUnsatisfiable", path)
    if when not in _WHEN_UNSATISFIABLE:
        errors.append(_not_supported(f"{path}.whenUnsatisfiable", when, _WHEN_UNSATISFIABLE))
    min_domains = _int32(doc, "minDomains", path)
    if min_domains is not None:
        if min_domains <= 0:
            errors.append(_invalid(f"{path}.minDomains", min_domains, _NOT_POSITIVE_MSG))
        if when != DO_NOT_SCHEDULE:
            detail = f"can only use minDomains if whenUnsatisfiable={DO_NOT_SCHEDULE}, not {when}"
            errors.append(_invalid(f"{path}.minDomains", min_domains, detail))
    node_affinity_policy = _policy(doc, "nodeAffinityPolicy", path, errors)
    node_taints_policy = _policy(doc, "nodeTaintsPolicy", path, errors)
    selector = _decode_label_selector(doc, "labelSelector", path, errors)
    match_keys = _string_list(doc, "matchLabelKeys", path)
    errors.extend(_label_keys_errors(f"{path}.matchLabelKeys", match_keys, selector))
    return TopologySpreadConstraint(
        max_skew,
        topology_key,
        when,
        selector,
        min_domains,
        node_affinity_policy or "Honor",
        node_taints_policy or "Ignore",
        match_keys,
    )


def _decode_spread_constraints(
    spec: Mapping[str, Any], errors: list[FieldError]
) -> tuple[TopologySpreadConstraint, ...]:
    constraints = []
    paths = []
    for path, doc in _items(spec, "topologySpreadConstraints", "spec"):
        constraints.append(_decode_spread_constraint(doc, path, errors))
        paths.append(path)
    # {topologyKey, whenUnsatisfiable} identifies a constraint; upstream flags the first of a pair.
    for index, constraint in enumerate(constraints):
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if any((other.topology_key, other.when_unsatisfiable) == pair for other in constraints[index + 1 :]):
            errors.append(_duplicate(f"{paths[index]}.{{topologyKey, whenUnsatisfiable}}", "{" + ", ".join(pair) + "}"))
    return tuple(constraints)


# --- objects ---------------------------------------------------------------------------------------------


def _decode_pod_spec(manifest: dict[str, Any], errors: list[FieldError]) -> PodSpec:
    """ValidatePodSpec for the fields scheduling reads, after upstream's defaulting
    (terminationGracePeriodSeconds 30, schedulerName default-scheduler, port protocol TCP,
    requests from limits)."""
    spec = _object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    names: set[str] = set()
    containers = [
        (p, _decode_container(c, p, errors, names, init=False)) for p, c in _items(spec, "containers", "spec")
    ]
    if not containers:
        errors.append(_required("spec.containers"))
    init_containers = [
        (p, _decode_container(c, p, errors, names, init=True)) for p, c in _items(spec, "initContainers", "spec")
    ]
    errors.extend(_host_port_errors(containers))
    for entry in init_containers:  # init containers run one at a time: conflicts only within one
        errors.extend(_host_port_errors([entry]))
    overhead_doc = _object(spec, "overhead", "spec") or {}
    for name in overhead_doc:
        errors.extend(_container_resource_name_errors(name, f"spec.overhead[{name}]"))
    overhead = _quantities(overhead_doc, "spec.overhead", errors)
    node_selector = _string_map(spec, "nodeSelector", "spec")
    errors.extend(validate_labels(node_selector, "spec.nodeSelector"))
    return PodSpec(
        containers=tuple(container for _, container in containers),
        init_containers=tuple(container for _, container in init_containers),
        overhead=_canonical_list(overhead),
        node_name=_subdomain_field(spec, "nodeName", "spec", errors),
        node_selector=node_selector,
        affinity=_decode_affinity(spec, errors),
        tolerations=tuple(_decode_toleration(t, p, errors) for p, t in _items(spec, "tolerations", "spec")),
        topology_spread_constraints=_decode_spread_constraints(spec, errors),
        priority_class_name=_subdomain_field(spec, "priorityClassName", "spec", errors),
        priority=_int32(spec, "priority", "spec"),
        preemption_policy=_optional_policy(spec, "preemptionPolicy", "spec", errors),
        termination_grace_period_seconds=_grace_period(spec, errors),
        scheduler_name=_scheduler_name(spec, errors),
    )


def _subdomain_field(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> str:
    """An optional reference by name (nodeName, priorityClassName, nominatedNodeName)."""
    value = _string(doc, key, path)
    if value:
        errors.extend(_invalid_each(_at(path, key), value, dns1123_subdomain_errors(value)))
    return value


def _optional_policy(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> str | None:
    if _get(doc, key) is None:
        return None
    policy = _string(doc, key, path)
    errors.extend(validate_preemption_policy(policy, _at(path, key)))
    return policy


def _grace_period(spec: dict[str, Any], errors: list[FieldError]) -> int:
    seconds = _int64(spec, "terminationGracePeriodSeconds", "spec")
    if seconds is None:
        seconds = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
        spec["terminationGracePeriodSeconds"] = seconds
    elif seconds < 0:
        errors.append(_invalid("spec.terminationGracePeriodSeconds", seconds, _NEGATIVE_MSG))
    return seconds


def _scheduler_name(spec: dict[str, Any], errors: list[FieldError]) -> str:
    name = _string(spec, "schedulerName", "spec") or DEFAULT_SCHEDULER_NAME
    spec["schedulerName"] = name
    errors.extend(_invalid_each("spec.schedulerName", name, dns1123_subdomain_errors(name)))
    return name


def _decode_condition(doc: Mapping[str, Any], path: str, errors: list[FieldError]) -> PodCondition:
    condition = PodCondition(
        type=_string(doc, "type", path),
        status=_string(doc, "status", path),
        reason=_string(doc, "reason", path),
        message=_string(doc, "message", path),
        last_transition_time=_timestamp(doc, "lastTransitionTime", path, errors),
    )
    if not condition.type:
        errors.append(_required(f"{path}.type"))
    return condition


def _decode_pod_status(manifest: Mapping[str, Any], errors: list[FieldError]) -> PodStatus:
    """The status fields a pod may be created with: a pod created already placed (spec.nodeName)
    may carry its phase and startTime; conditions and nominatedNodeName round-trip."""
    status = _object(manifest, "status", "") or {}
    phase = _string(status, "phase", "status") or POD_PENDING
    if phase not in _POD_PHASES:
        errors.append(_not_supported("status.phase", phase, _POD_PHASES))
    return PodStatus(
        phase=phase,
        nominated_node_name=_subdomain_field(status, "nominatedNodeName", "status", errors),
        start_time=_timestamp(status, "startTime", "status", errors),
        conditions=tuple(_decode_condition(c, p, errors) for p, c in _items(status, "conditions", "status")),
    )


def _decode_pod(manifest: dict[str, Any], errors: list[FieldError]) -> Pod:
    metadata = _decode_meta(manifest, errors, namespaced=True)
    spec = _decode_pod_spec(manifest, errors)
    return Pod(metadata, spec, _decode_pod_status(manifest, errors), source=manifest)


def _node_resource(parsed: Mapping[str, _Quantity]) -> Resource:
    resource = Resource()
    for name, entry in parsed.items():
        value = _canonical(name, entry)
        if name == RESOURCE_CPU:
            resource.milli_cpu = value
        elif name == RESOURCE_MEMORY:
            resource.memory = value
        elif name == RESOURCE_EPHEMERAL_STORAGE:
            resource.ephemeral_storage = value
        elif name == RESOURCE_PODS:
            resource.allowed_pod_number = value
        else:
            resource.scalar[name] = value
    return resource


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
    node_spec = NodeSpec(_boolean(spec, "unschedulable", "spec"), _decode_taints(spec, errors))
    return Node(metadata, node_spec, _decode_node_status(manifest, errors), source=manifest)


def _decode_priority_class(manifest: dict[str, Any], errors: list[FieldError]) -> PriorityClass:
    """The PriorityClass schema: `value` is a required int32; preemptionPolicy defaults to
    PreemptLowerPriority (v1 defaulting). Reserved names and the value ceiling are checked by
    `podsched.admission.priority.validate_priority_class`."""
    metadata = _decode_meta(manifest, errors, namespaced=False)
    value = _int32(manifest, "value", "")
    if value is None:
        errors.append(_required("value"))
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


def _int_or_string(doc: Mapping[str, Any], key: str, path: str) -> int | str | None:
    value = _get(doc, key)
    if value is None or isinstance(value, str):
        return value
    return _as_int(value, _at(path, key), _INT32, "IntOrString")


def _int_or_percent_errors(value: int | str, path: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent + IsNotMoreThan100Percent."""
    if isinstance(value, int):
        return [_invalid(path, value, _NEGATIVE_MSG)] if value < 0 else []
    if not _PERCENT_RE.match(value):
        return [_invalid(path, value, _regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%"))]
    if int(value[:-1]) > 100:
        return [_invalid(path, value, "must not be greater than 100%")]
    return []


def _decode_pdb(manifest: dict[str, Any], errors: list[FieldError]) -> PodDisruptionBudget:
    """ValidatePodDisruptionBudgetSpec. Status is the system's to compute: input status is dropped,
    as the API server does on create."""
    metadata = _decode_meta(manifest, errors, namespaced=True)
    manifest.pop("status", None)
    spec = _object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    min_available = _int_or_string(spec, "minAvailable", "spec")
    max_unavailable = _int_or_string(spec, "maxUnavailable", "spec")
    if min_available is not None and max_unavailable is not None:
        errors.append(_invalid("spec", None, "minAvailable and maxUnavailable cannot be both set"))
    if min_available is not None:
        errors.extend(_int_or_percent_errors(min_available, "spec.minAvailable"))
    if max_unavailable is not None:
        errors.extend(_int_or_percent_errors(max_unavailable, "spec.maxUnavailable"))
    selector = _decode_label_selector(spec, "selector", "spec", errors)
    eviction_policy = _string(spec, "unhealthyPodEvictionPolicy", "spec")
    if eviction_policy and eviction_policy not in ("AlwaysAllow", "IfHealthyBudget"):
        errors.append(
            _not_supported("spec.unhealthyPodEvictionPolicy", eviction_policy, ("AlwaysAllow", "IfHealthyBudget"))
        )
    return PodDisruptionBudget(metadata, selector, min_available, max_unavailable, source=manifest)


_Decoder = Callable[[dict[str, Any], list[FieldError]], ApiObject]
_DECODERS: dict[str, _Decoder] = {
    KIND_NODE: _decode_node,
    KIND_POD: _decode_pod,
    KIND_PRIORITY_CLASS: _decode_priority_class,
    KIND_PDB: _decode_pdb,
}
_NAMESPACED_KINDS = (KIND_POD, KIND_PDB)


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


def decode_object(doc: Mapping[str, Any]) -> ApiObject:
    """Decode, default and validate one document into a typed object.

    Raises `ApiError`:
    - BadRequest when apiVersion/kind are missing (`error validating data: [kind not set]`), the
      kind is not served (`no matches for kind "Foo" in version "v1"`), or a value has the wrong
      JSON type (`Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal ...`);
    - Invalid with every violated rule, e.g. `Pod "p" is invalid: spec.containers[0].resources.
      requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`.

    The returned object's `source` is a deep copy of `doc` with upstream's defaults filled in;
    `doc` itself is never modified.
    """
    problems = _type_meta_errors(doc)
    kind = doc.get("kind") if isinstance(doc.get("kind"), str) else ""
    name, namespace = _identity(doc, str(kind))
    if problems:
        raise ApiError.bad_request(str(kind), name, f"error validating data: [{', '.join(problems)}]", namespace)
    api_version: str = doc["apiVersion"]
    kind = str(doc["kind"])
    if api_version not in ACCEPTED_TYPES.get(kind, ()):
        raise ApiError.bad_request(kind, name, f'no matches for kind "{kind}" in version "{api_version}"', namespace)
    manifest = copy.deepcopy(dict(doc))
    errors: list[FieldError] = []
    try:
        obj: ApiObject = _DECODERS[kind](manifest, errors)
    except _SchemaError as exc:
        version = api_version.rsplit("/", 1)[-1]
        detail = f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}'
        raise ApiError.bad_request(kind, name, detail, namespace) from None
    if errors:
        raise ApiError.invalid(kind, obj.metadata.name, errors, obj.metadata.namespace)
    return obj


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
    if name in _BYTE_RESOURCES or _is_hugepages(name):
        return quantity.format_bytes(value)
    return str(value)


def _encode_meta(meta: ObjectMeta, source: Any, *, namespaced: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": meta.name}
    rest = dict(source) if isinstance(source, dict) else {}
    _put(out, "namespace", meta.namespace if namespaced else "")
    _put(out, "uid", meta.uid)
    _put(out, "resourceVersion", str(meta.resource_version) if meta.resource_version else None)
    for key, moment in (
        ("creationTimestamp", meta.creation_timestamp),
        ("deletionTimestamp", meta.deletion_timestamp),
    ):
        _put(out, key, None if moment is None else format_timestamp(moment))
    _put(out, "labels", dict(meta.labels))
    _put(out, "annotations", dict(meta.annotations))
    owned = (
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "labels",
        "annotations",
    )
    out.update({key: value for key, value in rest.items() if key not in owned})
    return out


def _encode_label_selector(selector: LabelSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "matchLabels", dict(selector.match_labels))
    _put(
        out,
        "matchExpressions",
        [_encode_requirement(r.key, r.operator, r.values) for r in selector.match_expressions],
    )
    return out


def _encode_requirement(key: str, operator: str, values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    _put(out, "values", list(values))
    return out


def _encode_node_selector_term(term: NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(
        out,
        "matchExpressions",
        [_encode_requirement(r.key, r.operator, r.values) for r in term.match_expressions],
    )
    _put(out, "matchFields", [_encode_requirement(r.key, r.operator, r.values) for r in term.match_fields])
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
    _put(out, _REQUIRED_TERMS, [_encode_pod_affinity_term(term) for term in affinity.required])
    _put(
        out,
        _PREFERRED_TERMS,
        [{"weight": w.weight, "podAffinityTerm": _encode_pod_affinity_term(w.term)} for w in affinity.preferred],
    )
    return out


def _encode_affinity(affinity: Affinity) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node = affinity.node_affinity
    if node is not None:
        encoded: dict[str, Any] = {}
        if node.required is not None:
            encoded[_REQUIRED_TERMS] = {"nodeSelectorTerms": [_encode_node_selector_term(t) for t in node.required]}
        _put(
            encoded,
            _PREFERRED_TERMS,
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
    if requests:
        out["resources"] = {"requests": requests}
    ports = []
    for port in container.ports:
        encoded: dict[str, Any] = {"containerPort": port.container_port, "protocol": port.protocol}
        _put(encoded, "hostPort", port.host_port or None)
        _put(encoded, "hostIP", port.host_ip)
        ports.append(encoded)
    _put(out, "ports", ports)
    _put(out, "restartPolicy", container.restart_policy)
    return out


def _fill_pod_spec(spec: PodSpec, doc: dict[str, Any]) -> None:
    """Render the typed spec into fields the manifest is silent on (an object built in code rather
    than decoded has no manifest); fields the manifest has are kept as written."""
    rendered: dict[str, Any] = {
        "containers": [_encode_container(c) for c in spec.containers],
        "initContainers": [_encode_container(c) for c in spec.init_containers],
        "overhead": {name: render_quantity(name, value) for name, value in spec.overhead},
        "nodeSelector": dict(spec.node_selector),
        "affinity": None if spec.affinity is None else _encode_affinity(spec.affinity),
        "tolerations": [_encode_toleration(t) for t in spec.tolerations],
        "topologySpreadConstraints": [_encode_spread_constraint(c) for c in spec.topology_spread_constraints],
        "schedulerName": spec.scheduler_name,
    }
    for key, value in rendered.items():
        if key not in doc:
            _put(doc, key, value)


def _encode_condition(condition: PodCondition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": condition.type, "status": condition.status}
    _put(out, "reason", condition.reason)
    _put(out, "message", condition.message)
    moment = condition.last_transition_time
    _put(out, "lastTransitionTime", None if moment is None else format_timestamp(moment))
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
    start = pod.status.start_time
    _put(status, "startTime", None if start is None else format_timestamp(start))
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
    body["status"] = {
        "currentHealthy": status.current_healthy,
        "desiredHealthy": status.desired_healthy,
        "disruptionsAllowed": status.disruptions_allowed,
        "expectedPods": status.expected_pods,
    }
    _put(
        body["status"],
        "disruptedPods",
        {name: format_timestamp(moment) for name, moment in sorted(status.disrupted_pods.items())},
    )


def encode_object(obj: ApiObject) -> dict[str, Any]:
    """The Kubernetes JSON shape of an object: apiVersion (the served version), kind, metadata,
    then the body. Built from a deep copy of `obj.source` with the object's current typed state laid
    over it, so fields podsched does not model are echoed unchanged and the typed state always wins.
    Timestamps are RFC3339 UTC strings, resourceVersion a string, quantities canonical (`500m`,
    `32Gi`). `decode_object(encode_object(x))` equals `x` for every decoded object (a PDB's status
    excepted: it is the system's to compute, and decoding drops it)."""
    source = copy.deepcopy(obj.source)
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
    else:
        _overlay_pdb(obj, body)
    # Kubernetes' field order: spec, then status, after any other top-level fields.
    ordered = {key: value for key, value in body.items() if key not in ("spec", "status")}
    ordered.update({key: body[key] for key in ("spec", "status") if key in body})
    return {**head, **ordered}
