"""metav1.LabelSelector and its requirements, decoded and encoded (pods' affinity terms and spread
constraints, and PodDisruptionBudgets, use them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from podsched.api.codecs.fields import at, get_items, get_object, get_string, get_string_list, get_string_map, put
from podsched.api.types import LabelSelector, LabelSelectorRequirement, NodeSelectorRequirement

# These only decode; `validate_affinity` and friends check the typed result.


def decode_label_selector(doc: Mapping[str, Any], key: str, path: str) -> LabelSelector | None:
    """A metav1.LabelSelector; absent -> None (matches nothing), `{}` -> empty (matches all)."""
    selector = get_object(doc, key, path)
    if selector is None:
        return None
    selector_path = at(path, key)
    match_labels = get_string_map(selector, "matchLabels", selector_path)
    expressions = tuple(
        decode_requirement(item, item_path, LabelSelectorRequirement)
        for item_path, item in get_items(selector, "matchExpressions", selector_path)
    )
    return LabelSelector(tuple(match_labels.items()), expressions)


_Requirement = TypeVar("_Requirement", LabelSelectorRequirement, NodeSelectorRequirement)


def decode_requirement(
    doc: Mapping[str, Any], path: str, requirement_type: Callable[[str, str, tuple[str, ...]], _Requirement]
) -> _Requirement:
    return requirement_type(
        get_string(doc, "key", path), get_string(doc, "operator", path), get_string_list(doc, "values", path)
    )


def encode_label_selector(selector: LabelSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, "matchLabels", dict(selector.match_labels))
    put(out, "matchExpressions", encode_requirements(selector.match_expressions))
    return out


def encode_requirements(
    requirements: Iterable[LabelSelectorRequirement | NodeSelectorRequirement],
) -> list[dict[str, Any]]:
    encoded = []
    for requirement in requirements:
        out: dict[str, Any] = {"key": requirement.key, "operator": requirement.operator}
        put(out, "values", list(requirement.values))
        encoded.append(out)
    return encoded
