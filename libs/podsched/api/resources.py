"""The API's resource types and kubectl's words for them (`po`, `pods`, `priorityclass.scheduling.k8s.io`...).

Shared by the CLI, which resolves them on the client side as kubectl does, and the queue service,
which accepts the same words in Get and Delete."""

from __future__ import annotations

from dataclasses import dataclass

from podsched.api.types import (
    KIND_DEPLOYMENT,
    KIND_JOB,
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_POD_GROUP,
    KIND_PRIORITY_CLASS,
    KIND_REPLICA_SET,
    KIND_RESOURCE_QUOTA,
)


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One API resource: its plural (what requests carry), kind, and kubectl's printed name."""

    plural: str
    kind: str
    # kubectl's `resource.group` in output lines: `pod/web created`, `priorityclass.scheduling.k8s.io/high`.
    qualified: str
    namespaced: bool
    aliases: tuple[str, ...]


POD = ResourceType("pods", KIND_POD, "pod", True, ("pod", "po"))
NODE = ResourceType("nodes", KIND_NODE, "node", False, ("node", "no"))
PRIORITY_CLASS = ResourceType(
    "priorityclasses",
    KIND_PRIORITY_CLASS,
    "priorityclass.scheduling.k8s.io",
    False,
    ("priorityclass", "pc", "priorityclasses.scheduling.k8s.io"),
)
PDB = ResourceType(
    "poddisruptionbudgets",
    KIND_PDB,
    "poddisruptionbudget.policy",
    True,
    ("poddisruptionbudget", "pdb", "poddisruptionbudgets.policy"),
)
RESOURCE_QUOTA = ResourceType("resourcequotas", KIND_RESOURCE_QUOTA, "resourcequota", True, ("resourcequota", "quota"))
REPLICA_SET = ResourceType(
    "replicasets", KIND_REPLICA_SET, "replicaset.apps", True, ("replicaset", "rs", "replicasets.apps")
)
DEPLOYMENT = ResourceType(
    "deployments", KIND_DEPLOYMENT, "deployment.apps", True, ("deployment", "deploy", "deployments.apps")
)
JOB = ResourceType("jobs", KIND_JOB, "job.batch", True, ("job", "jobs.batch"))
POD_GROUP = ResourceType(
    "podgroups", KIND_POD_GROUP, "podgroup.scheduling.k8s.io", True, ("podgroup", "pg", "podgroups.scheduling.k8s.io")
)
RESOURCE_TYPES = (POD, NODE, PRIORITY_CLASS, PDB, RESOURCE_QUOTA, REPLICA_SET, DEPLOYMENT, JOB, POD_GROUP)


def find_resource_type(word: str) -> ResourceType | None:
    """`po`, `pod`, `pods`, `Pods`, `pdb`, `priorityclass.scheduling.k8s.io`... -> the resource type."""
    lowered = word.strip().lower()
    for candidate in RESOURCE_TYPES:
        if lowered in (candidate.plural, candidate.qualified, *candidate.aliases):
            return candidate
    return None


def resource_type_of_kind(kind: str) -> ResourceType | None:
    for candidate in RESOURCE_TYPES:
        if candidate.kind == kind:
            return candidate
    return None
