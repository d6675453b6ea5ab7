"""The ResourceQuota codec: spec.hard (kept exactly, with the SI family each value was written in),
scopes and scopeSelector; the status, the system's to compute, dropped on input and rendered on output."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from podsched.api import quantity
from podsched.api.codecs.fields import child, get_items, get_object, get_string, get_string_list, put
from podsched.api.codecs.meta import decode_meta
from podsched.api.errors import FieldError
from podsched.api.types import (
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    ResourceQuota,
    ScopedResourceSelectorRequirement,
)
from podsched.api.validation import (
    invalid_quantity,
    is_hugepages_resource,
    quota_quantity_errors,
    quota_resource_name_errors,
    validate_quota_scopes,
    validate_scope_selector,
)

_BINARY_SUFFIX_RE = re.compile(r"[KMGTPE]i$")


def _decode_hard(spec: Mapping[str, Any], errors: list[FieldError]) -> tuple[dict[str, Fraction], frozenset[str]]:
    """spec.hard: each name a quota resource, each value a quantity (non-negative; whole for object
    counts and extended resources). Returns the exact values and the names written in binary SI."""
    hard: dict[str, Fraction] = {}
    binary: set[str] = set()
    for name, raw in (get_object(spec, "hard", "spec") or {}).items():
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


def decode_resource_quota(manifest: dict[str, Any], errors: list[FieldError]) -> ResourceQuota:
    """ValidateResourceQuota (metadata, spec.hard, spec.scopes, spec.scopeSelector). Status is the
    system's to compute: input status is dropped, as the API server does on create."""
    metadata = decode_meta(manifest, errors, namespaced=True)
    manifest.pop("status", None)
    spec = get_object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    hard, binary = _decode_hard(spec, errors)
    written = list((get_object(spec, "hard", "spec") or {}).keys())
    scopes = get_string_list(spec, "scopes", "spec")
    selector_doc = get_object(spec, "scopeSelector", "spec")
    selector: tuple[ScopedResourceSelectorRequirement, ...] | None = None
    if selector_doc is not None:
        selector = tuple(
            ScopedResourceSelectorRequirement(
                get_string(item, "scopeName", item_path),
                get_string(item, "operator", item_path),
                get_string_list(item, "values", item_path),
            )
            for item_path, item in get_items(selector_doc, "matchExpressions", "spec.scopeSelector")
        )
    errors.extend(validate_quota_scopes(scopes, written))
    errors.extend(validate_scope_selector(selector, written, scopes))
    return ResourceQuota(metadata, hard, binary, scopes, selector, source=manifest)


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


def overlay_resource_quota(quota: ResourceQuota, body: dict[str, Any]) -> None:
    spec = child(body, "spec")
    spec["hard"] = {
        name: render_quota_quantity(name, value, name in quota.binary_hard) for name, value in quota.hard.items()
    }
    put(spec, "scopes", list(quota.scopes))
    if quota.scope_selector is not None:
        spec["scopeSelector"] = {
            "matchExpressions": [
                {"scopeName": r.scope_name, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                for r in quota.scope_selector
            ]
        }
    status: dict[str, Any] = {}
    hard, used = quota.status.hard, quota.status.used
    put(
        status,
        "hard",
        {name: render_quota_quantity(name, hard[name], name in quota.binary_hard) for name in sorted(hard)},
    )
    put(status, "used", {name: render_quota_quantity(name, used[name]) for name in sorted(used)})
    body["status"] = status
