"""Label and node selectors, matched as apimachinery's labels.Selector and
component-helpers' nodeaffinity do."""

from __future__ import annotations

from collections.abc import Mapping

from podsched.api.types import LabelSelector, NodeSelectorRequirement, NodeSelectorTerm


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector + Matches. A nil selector matches nothing; an empty one
    matches everything (callers with other conventions, e.g. PDBs in the scheduler, check first)."""
    if selector is None:
        return False
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    for requirement in selector.match_expressions:
        present = requirement.key in labels
        operator = requirement.operator
        if operator == "In":
            if not present or labels[requirement.key] not in requirement.values:
                return False
        elif operator == "NotIn":
            if present and labels[requirement.key] in requirement.values:
                return False
        elif operator == "Exists":
            if not present:
                return False
        elif operator == "DoesNotExist":
            if present:
                return False
        else:
            return False
    return True


def _requirement_matches(requirement: NodeSelectorRequirement, value: str | None) -> bool:
    operator = requirement.operator
    if operator == "In":
        return value is not None and value in requirement.values
    if operator == "NotIn":
        return value is None or value not in requirement.values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        if value is None or len(requirement.values) != 1:
            return False
        try:
            left, right = int(value), int(requirement.values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def node_selector_term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """A term matches when all its expressions and fields match; an empty term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    for requirement in term.match_expressions:
        if not _requirement_matches(requirement, labels.get(requirement.key)):
            return False
    for requirement in term.match_fields:
        # Only metadata.name is a supported field selector for nodes.
        value = node_name if requirement.key == "metadata.name" else None
        if not _requirement_matches(requirement, value):
            return False
    return True


def node_selector_matches(terms: tuple[NodeSelectorTerm, ...], labels: Mapping[str, str], node_name: str) -> bool:
    """Terms are ORed."""
    return any(node_selector_term_matches(term, labels, node_name) for term in terms)
