"""Hostile Kubernetes manifests for the fuzz tests (tests/unit/test_manifest_fuzz.py against the
library, tests/services/test_api_fuzz.py against the running services): well-formed manifests of
every kind, the hostile values a mutation puts into them, and what a refusal must say."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from podsched.api.documents import MAX_DEPTH
from podsched.api.errors import RESOURCE_NAMES
from podsched.api.manifests import ACCEPTED_TYPES

# Derandomized, no example database: a run is the same on every machine and in CI.
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- a cluster with something of every kind in it ------------------------------------------------

SEED: list[dict[str, Any]] = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high-priority"},
        "value": 1000000,
    },
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low-priority"}, "value": 100},
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "the-default"},
        "value": 10,
        "globalDefault": True,
    },
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"zone": "a", "kubernetes.io/hostname": "n1"}},
        "status": {
            "capacity": {
                "cpu": "4",
                "memory": "16Gi",
                "pods": "110",
                "ephemeral-storage": "100Gi",
                "example.com/gpu": "4",
            }
        },
    },
    {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "critical"},
        "spec": {
            "hard": {"pods": "5", "requests.cpu": "8"},
            "scopeSelector": {
                "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high-priority"]}]
            },
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "existing", "labels": {"app": "web"}},
        "spec": {
            "priorityClassName": "low-priority",
            "nodeName": "n1",
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
        },
    },
    {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    },
]


# --- well-formed manifests of every kind, every field the decoder reads filled in --------------------
# POD fits n1 of the seeded cluster (its affinities and spread constraints are satisfiable there), so
# the mutations that keep it valid reach Filter, Score and Bind, and those that grow it PostFilter.

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-0",
        "namespace": "default",
        "labels": {"app": "web", "tier": "front"},
        "annotations": {"example.com/owner": "team-a"},
    },
    "spec": {
        "priorityClassName": "high-priority",
        "priority": 1000000,
        "preemptionPolicy": "PreemptLowerPriority",
        "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler",
        "nodeSelector": {"zone": "a"},
        "containers": [
            {
                "name": "main",
                "image": "pause",
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                    "limits": {"cpu": "1", "memory": "2Gi", "example.com/gpu": "1"},
                },
                "ports": [
                    {"name": "http", "containerPort": 80, "hostPort": 8080, "protocol": "TCP", "hostIP": "10.0.0.1"}
                ],
            },
            {"name": "sidecar", "resources": {"requests": {"cpu": "100m", "ephemeral-storage": "1Gi"}}},
        ],
        "initContainers": [{"name": "init", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}],
        "overhead": {"cpu": "10m", "memory": "1Mi"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "preference": {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]},
                    }
                ],
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone", "namespaces": ["default"]}
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "podAffinityTerm": {
                            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                            "topologyKey": "kubernetes.io/hostname",
                            "matchLabelKeys": ["version"],
                            "namespaceSelector": {},
                        },
                    }
                ]
            },
        },
        "tolerations": [
            {"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoExecute", "tolerationSeconds": 60},
            {"operator": "Exists"},
        ],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "minDomains": 1,
                "labelSelector": {"matchLabels": {"app": "web"}},
                "nodeAffinityPolicy": "Honor",
                "nodeTaintsPolicy": "Ignore",
                "matchLabelKeys": ["pod-template-hash"],
            }
        ],
    },
    "status": {
        "phase": "Pending",
        "nominatedNodeName": "n1",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    },
}

PLACED_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "placed", "namespace": "kube-system", "labels": {"app": "agent"}},
    "spec": {
        "nodeName": "n1",
        "priorityClassName": "system-node-critical",
        "containers": [{"name": "agent", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}],
    },
    "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
}

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n2", "labels": {"zone": "b", "kubernetes.io/hostname": "n2"}},
    "spec": {"unschedulable": False, "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {
            "cpu": "4",
            "memory": "16Gi",
            "pods": "110",
            "ephemeral-storage": "100Gi",
            "example.com/gpu": "2",
            "hugepages-2Mi": "1Gi",
        },
        "allocatable": {"cpu": "3500m", "memory": "15Gi"},
    },
}

PRIORITY_CLASS: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "batch"},
    "value": 500,
    "globalDefault": False,
    "description": "batch jobs",
    "preemptionPolicy": "Never",
}

PDB: dict[str, Any] = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web-pdb", "namespace": "default"},
    "spec": {
        "minAvailable": "50%",
        "selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["cache"]}],
        },
        "unhealthyPodEvictionPolicy": "IfHealthyBudget",
    },
}

QUOTA: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "compute", "namespace": "default"},
    "spec": {
        "hard": {"pods": "10", "requests.cpu": "8", "limits.memory": "32Gi", "count/pods": "10"},
        "scopes": ["NotBestEffort"],
        "scopeSelector": {
            "matchExpressions": [{"scopeName": "PriorityClass", "operator": "NotIn", "values": ["low-priority"]}]
        },
    },
}

_TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}, "annotations": {"sim.podsched.io/run-seconds": "5"}},
    "spec": {
        "priorityClassName": "low-priority",
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
    },
}

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}},
        "template": {**_TEMPLATE, "spec": {**_TEMPLATE["spec"], "restartPolicy": "Always"}},
    },
}

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {
        "parallelism": 2,
        "completions": 3,
        "backoffLimit": 1,
        "activeDeadlineSeconds": 600,
        "podFailurePolicy": {
            "rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
            ]
        },
        "template": _TEMPLATE,
    },
}

BASES = [POD, PLACED_POD, NODE, PRIORITY_CLASS, PDB, QUOTA, DEPLOYMENT, JOB]

# --- hostile values ----------------------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"x": value}
    return value


class Nested:
    """Stands for `nested(depth)` inside an example until `materialize` builds it: hypothesis prints
    examples recursively, and could not print one thousands of levels deep."""

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def __repr__(self) -> str:
        return f"Nested({self.depth})"


def materialize(document: Any) -> Any:
    if isinstance(document, Nested):
        return nested(document.depth)
    if isinstance(document, dict):
        return {key: materialize(value) for key, value in document.items()}
    if isinstance(document, list):
        return [materialize(value) for value in document]
    return document


HOSTILE_NUMBERS = [
    0, -1, 1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, 10**400,
    1.5, -0.0, 1e-300, 1e308, float("nan"), float("inf"), float("-inf"),
]  # fmt: skip
HOSTILE_QUANTITIES = [
    "1e400", "-1", "999999999999999Ei", "9" * 5000, "1e30", "1e18", "0.0000000001", "1.5.5", "", " ", "1 Gi",
    "\u0661\u0662", "+1", ".5", "5.", "1E3", "1e-30", "NaN", "Infinity", "0x10", "1_000", "1Ki", "1K", "2Mi\n",
    "1e" + "0" * 5000 + "1", "1m", "0.5", "-0", "9223372036854775807", "9223372036854775808", "7Ei", "8Ei",
    "-9223372036854775807", "1n", "1u", "0.000000001", "1e-9",
]  # fmt: skip
HOSTILE_NAMES = [
    "", "a" * 64, "a" * 254, "x" * 20_000, "Bad_Name", "-a", "a-", "a..b", "../x", "x/y", "ünïcödé", "\u0000",
    "\ud800", "a\udfff", "abc\n", " a", "a b", "system-foo", "system-node-critical", "system-cluster-critical",
    "kube-system", "default", "no-such-class", "n1", "existing", "web", "😀",
]  # fmt: skip
HOSTILE_WORDS = [
    "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Equals", "in", "Equal", "NoSchedule", "NoExecute",
    "PreemptLowerPriority", "Never", "Always", "TCP", "Pending", "Running", "Honor", "DoNotSchedule", "5%\n",
    "101%", "-1%", "9" * 5000 + "%", "%", "1.5%", "50%", "2026-01-01T00:00:00Z", "9999-99-99T00:00:00Z",
    "2020-01-01T00:00:00+99:00", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59-23:00", "0001-01-01T00:00:00+01:00",
    "2026-02-30T00:00:00Z", "0999-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "²", "1" * 30,
    "PriorityClass", "BestEffort", "Terminating", "v1", "Pod", "Node", "PodDisruptionBudget", "ResourceQuota",
    "List", "PodList", "scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1", "policy/v1", "apps/v1", "v2",
]  # fmt: skip
WRONG_TYPES: list[Any] = [None, True, False, [], {}, [1], {"a": 1}, [None], [{}], {"": ""}, "x"]

HOSTILE_TEXT = st.text(max_size=12) | st.sampled_from(HOSTILE_NAMES + HOSTILE_WORDS + HOSTILE_QUANTITIES)
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(HOSTILE_NUMBERS) | HOSTILE_TEXT
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(HOSTILE_TEXT, children, max_size=4),
    max_leaves=12,
)
HOSTILE_VALUES = st.one_of(
    st.sampled_from(WRONG_TYPES),
    st.sampled_from(HOSTILE_NUMBERS),
    st.sampled_from(HOSTILE_QUANTITIES),
    st.sampled_from(HOSTILE_NAMES),
    st.sampled_from(HOSTILE_WORDS),
    st.sampled_from([MAX_DEPTH - 5, MAX_DEPTH + 1, 400, 5000]).map(Nested),
    JSON_VALUES,
)
# Keys a mutation may add: fields the decoder reads, resource names, and nonsense.
FIELD_NAMES = [
    "apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "resourceVersion", "uid",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "spec", "status", "containers",
    "initContainers", "resources", "requests", "limits", "cpu", "memory", "pods", "ephemeral-storage",
    "hugepages-2Mi", "hugepages-", "example.com/gpu", "requests.cpu", "count/pods", "ports", "hostPort",
    "containerPort", "priority", "priorityClassName", "preemptionPolicy", "nodeName", "nodeSelector", "affinity",
    "tolerations", "taints", "topologySpreadConstraints", "overhead", "value", "globalDefault", "minAvailable",
    "maxUnavailable", "selector", "matchLabels", "matchExpressions", "operator", "values", "hard", "scopes",
    "scopeSelector", "scopeName", "phase", "startTime", "conditions", "capacity", "allocatable", "unschedulable",
    "terminationGracePeriodSeconds", "schedulerName", "weight", "topologyKey", "", "\ud800", "x" * 300,
]  # fmt: skip


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a document (dict keys and list indexes)."""
    found: list[tuple[Any, ...]] = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(paths(item, (*prefix, index)))
    return found


def at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


def fresh(value: Any) -> Any:
    """A copy: a mutation must never change a shared constant (WRONG_TYPES' `{}`) in place."""
    return copy.deepcopy(value)


@st.composite
def hostile_manifests(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed manifest of some kind with one to four hostile mutations: a value replaced
    (wrong type, huge, negative, malformed), a key removed, a key added, a list item duplicated."""
    document = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths(document)))
        target = at(document, path)
        action = draw(st.sampled_from(["replace", "replace", "remove", "add", "duplicate"]))
        if action == "replace" and path:
            at(document, path[:-1])[path[-1]] = fresh(draw(HOSTILE_VALUES))
        elif action == "remove" and path:
            del at(document, path[:-1])[path[-1]]
        elif action == "add" and isinstance(target, dict):
            target[draw(st.sampled_from(FIELD_NAMES))] = copy.deepcopy(
                draw(HOSTILE_VALUES)
            )  # not the shared constant itself
        elif action == "duplicate" and isinstance(target, list) and target:
            target.append(copy.deepcopy(target[draw(st.integers(0, len(target) - 1))]))
    return document


# --- the properties ----------------------------------------------------------------------------------------

FIELD_ROOTS = ("metadata", "spec", "status", "value", "preemptionPolicy", "description", "globalDefault")


def names_the_object_or_field(message: str, document: Any) -> bool:
    """A refusal says what it refuses: the kind (or its resource) of an object of a served kind, or
    one of its fields; for a document that is no object of a served kind, what is missing or wrong."""
    kind = document.get("kind") if isinstance(document, dict) else None
    if isinstance(kind, str) and kind in ACCEPTED_TYPES:
        named = (kind, RESOURCE_NAMES[kind], *FIELD_ROOTS, "apiVersion", "PriorityClass")
    else:
        named = ("kind", "apiVersion", "object", "version", "json", *FIELD_ROOTS)
    return any(word in message for word in named)


def json_bytes(document: Any) -> bytes:
    """`document` as JSON, `Nested` placeholders written out (too deep for json.dumps), lone
    surrogates as `\\ud800` escapes and NaN as `NaN`, as a hostile client would send them."""
    placeholders: dict[str, str] = {}

    def swap(value: Any) -> Any:
        if isinstance(value, Nested):
            token = f"@@nested-{len(placeholders)}@@"
            placeholders[json.dumps(token)] = nested_json(value.depth)
            return token
        if isinstance(value, dict):
            return {key: swap(item) for key, item in value.items()}
        if isinstance(value, list):
            return [swap(item) for item in value]
        return value

    text = json.dumps(swap(document))
    for token, replacement in placeholders.items():
        text = text.replace(token, replacement)
    return text.encode()


def nested_json(depth: int) -> str:
    """The JSON text of `nested(depth)`, built without recursion."""
    opening = "".join("[" if level % 2 else '{"x":' for level in reversed(range(depth)))
    closing = "".join("]" if level % 2 else "}" for level in range(depth))
    return opening + '"bottom"' + closing
