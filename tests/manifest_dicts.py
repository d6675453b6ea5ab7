"""Manifests as the dicts a user writes in YAML, for tests that go through files, the CLI or the API
(tests of the core build typed objects with builders.py instead). Shared priority classes are in
tests/scenarios/common.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COMMON = Path(__file__).resolve().parent / "scenarios" / "common.yaml"
GIB = "1Gi"


def node(name: str, cpu: str = "4", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(
    name: str,
    priority_class: str,
    cpu: str,
    *,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    grace: int | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "priorityClassName": priority_class,
        "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": GIB}}}],
    }
    if node_name:
        body["nodeName"] = node_name
    if grace is not None:
        body["terminationGracePeriodSeconds"] = grace
    body.update(spec or {})
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": body,
    }
    if status:
        manifest["status"] = status
    return manifest


def pdb(name: str, min_available: int, **match_labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": match_labels}},
    }


def pod_group(name: str, min_count: int, priority_class: str = "low-priority") -> dict[str, Any]:
    """A gang: a PodGroup whose pods bind only when `min_count` of them fit together (GenericWorkload;
    stacks.GENERIC_WORKLOAD_ON turns the gate on)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priorityClassName": priority_class},
    }


def gang_member(
    name: str,
    group: str,
    priority_class: str = "low-priority",
    cpu: str = "1",
    *,
    grace: int | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pod of the pod group `group` (spec.schedulingGroup.podGroupName); `spec` adds fields."""
    return pod(
        name, priority_class, cpu, grace=grace, spec={"schedulingGroup": {"podGroupName": group}, **(spec or {})}
    )
