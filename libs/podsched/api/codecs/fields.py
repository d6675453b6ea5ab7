"""Typed access to a JSON document, shared by every codec: a value of the wrong JSON type is a
`SchemaError` naming the Go type upstream would fail to unmarshal into; absent and null read as
Go's zero values. `put` and `child` are the encoding side (`omitempty`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from podsched.api.documents import json_type_name
from podsched.api.errors import FieldError
from podsched.api.timestamps import format_timestamp, parse_timestamp
from podsched.api.validation import invalid_timestamp, object_name_errors

_T = TypeVar("_T")

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


class SchemaError(Exception):
    """A value of the wrong JSON type: the object cannot be decoded at all (BadRequest upstream,
    `json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32`)."""

    def __init__(self, path: str, value: object, expected: str) -> None:
        shown = json_type_name(value)
        if shown == "number":
            shown = f"number {value}"
        super().__init__(f"json: cannot unmarshal {shown} into Go struct field {path} of type {expected}")


def at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def typed_field(doc: Mapping[str, Any], key: str, path: str, json_type: type[_T], go_type: str) -> _T | None:
    """A field's value, None when absent (JSON null counts as absent, as in Go); a value of another
    JSON type is a schema error naming `go_type`."""
    value = doc.get(key)
    if value is None or isinstance(value, json_type):
        return value
    raise SchemaError(at(path, key), value, go_type)


def get_string(doc: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = typed_field(doc, key, path, str, "string")
    return default if value is None else value


def get_bool(doc: Mapping[str, Any], key: str, path: str) -> bool:
    return typed_field(doc, key, path, bool, "bool") or False


def get_object(doc: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
    return typed_field(doc, key, path, dict, "object")


def get_array(doc: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = typed_field(doc, key, path, list, "array")
    return [] if value is None else value


def as_int(value: Any, path: str, bounds: tuple[int, int], type_name: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 10.0 is the integer 10
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise SchemaError(path, value, type_name)
    return value


def get_int32(doc: Mapping[str, Any], key: str, path: str) -> int | None:
    value = doc.get(key)
    return None if value is None else as_int(value, at(path, key), INT32, "int32")


def get_int64(doc: Mapping[str, Any], key: str, path: str) -> int | None:
    value = doc.get(key)
    return None if value is None else as_int(value, at(path, key), INT64, "int64")


def get_int_or_string(doc: Mapping[str, Any], key: str, path: str) -> int | str | None:
    value = doc.get(key)
    if value is None or isinstance(value, str):
        return value
    return as_int(value, at(path, key), INT32, "IntOrString")


def get_items(doc: Mapping[str, Any], key: str, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(item path, item) for an array of objects."""
    for index, item in enumerate(get_array(doc, key, path)):
        item_path = f"{at(path, key)}[{index}]"
        if not isinstance(item, dict):
            raise SchemaError(item_path, item, "object")
        yield item_path, item


def get_string_map(doc: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    value = get_object(doc, key, path)
    if not value:
        return {}
    for item in value.values():
        if not isinstance(item, str):
            raise SchemaError(at(path, key), item, "map[string]string")
    return dict(value)


def get_string_list(doc: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    values = get_array(doc, key, path)
    for index, item in enumerate(values):
        if not isinstance(item, str):
            raise SchemaError(f"{at(path, key)}[{index}]", item, "string")
    return tuple(values)


def get_timestamp(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, datetime):  # a document built in Python rather than parsed from text
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return parse_timestamp(format_timestamp(moment.timestamp()))
    if not isinstance(value, str):
        raise SchemaError(at(path, key), value, "Time")
    try:
        return parse_timestamp(value)
    except ValueError:
        errors.append(invalid_timestamp(at(path, key), value))
        return None


def get_object_name(doc: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> str:
    """An optional reference by name (nodeName, priorityClassName, nominatedNodeName)."""
    value = get_string(doc, key, path)
    errors.extend(object_name_errors(value, at(path, key)))
    return value


def put(doc: dict[str, Any], key: str, value: Any) -> None:
    """Set a field, or drop it when empty (upstream's `omitempty`); 0 and False are kept."""
    if value is None or value == "" or (isinstance(value, dict | list) and not value):
        doc.pop(key, None)
    else:
        doc[key] = value


def child(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    if not isinstance(value, dict):
        value = {}
        doc[key] = value
    return value


def timestamp_text(moment: float | None) -> str | None:
    return None if moment is None else format_timestamp(moment)
