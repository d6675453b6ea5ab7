"""Resource lists: quantities parsed and validated, stored canonically (CPU in millicores, the rest in
whole units), and rendered as Kubernetes prints them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from podsched.api import quantity
from podsched.api.errors import FieldError
from podsched.api.types import RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY
from podsched.api.validation import ResourceQuantity, invalid_quantity, is_hugepages_resource, quantity_errors

_BYTE_RESOURCES = (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE)


def canonical(name: str, entry: ResourceQuantity) -> int:
    """CPU in millicores, everything else in whole units, both rounded up (MilliValue/Value)."""
    return quantity.to_milli(entry.text) if name == RESOURCE_CPU else quantity.to_int(entry.text)


def parse_quantities(
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


def canonical_list(parsed: Mapping[str, ResourceQuantity]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((name, canonical(name, entry)) for name, entry in parsed.items()))


def render_quantity(name: str, value: int) -> str:
    """A canonical amount as Kubernetes prints it: CPU `500m`/`4`, byte resources `32Gi`,
    counts plainly."""
    if name == RESOURCE_CPU:
        return quantity.format_milli_cpu(value)
    if name in _BYTE_RESOURCES or is_hugepages_resource(name):
        return quantity.format_bytes(value)
    return str(value)
