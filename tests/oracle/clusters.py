"""Random clusters as Kubernetes manifests, for the differential test against upstream kube-scheduler.

A generated cluster is two or three manifest files applied in order, as `podsched simulate -f ... -f ...`
and the upstream oracle take them:
  step0: PriorityClasses, Nodes, running Pods (spec.nodeName, status.startTime), PodDisruptionBudgets;
  step1: pending Pods (some already carrying status.nominatedNodeName);
  step2 (optional): more pending Pods, arriving after step1 has settled.

Only objects and fields podsched accepts are generated, each object valid for both sides: classes
within the user range (the system classes are only referenced, they are built in), running pods that fit
their node and tolerate its NoSchedule/NoExecute taints (neither side has a kubelet or taint manager to
disagree about them), extended resources with limits equal to requests, allocatable written out.

Most clusters are small (1-12 nodes) so that pods meet each other; one in twenty has 13-100 nodes, still at
most 100 so that every node is a preemption candidate (minCandidateNodesAbsolute) and upstream's random
candidate offset cannot change which nodes are examined.

About a third of the clusters also have workloads (scheduling.k8s.io/v1beta1 PodGroups, GenericWorkload):
some running pods are made members of groups (basic or gang, disruptionMode Single or All, their own
class), and step1 (and step2, if any) bring new groups with pending member pods, whose preemptionPolicy
is their class's. Such a cluster runs with the GenericWorkload and PodGroupPreemptionPolicy gates on
(tests/oracle/gates.py). The workload draws come after every other draw and are skipped with
`workloads=False` (`--no-workloads`, the bounded test in `make test`), so a seed then gives the clusters
it gave before workloads existed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import strategies as st

NAMESPACES = ("default", "default", "default", "team")
ZONES = ("zone-a", "zone-b", "zone-c")
DISKS = ("ssd", "hdd")
APPS = ("web", "db", "batch")
TIERS = ("front", "back")
GPU = "example.com/gpu"
ZONE_KEY = "topology.kubernetes.io/zone"
HOST_KEY = "kubernetes.io/hostname"
DISK_KEY = "disk"
TAINT_KEYS = ("dedicated", "gpu", "flaky")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
HOST_PORTS = (8080, 9090)
# Values of user classes: negative ones, zero, and up to the user ceiling (1e9).
CLASS_VALUES = (-1000, -10, -1, 0, 1, 10, 100, 1000, 100000, 1000000000)
SYSTEM_CLASSES = ("system-cluster-critical", "system-node-critical")
# Start times of running pods, all before the simulation epoch (2026-01-01T00:00:00Z); repeated
# values make MoreImportantPod and pickOneNodeForPreemption's start-time rule meet ties.
START_TIMES = (
    "2025-12-31T20:00:00Z",
    "2025-12-31T22:00:00Z",
    "2025-12-31T23:00:00Z",
    "2025-12-31T23:00:00Z",
    "2025-12-31T23:59:00Z",
)
NODE_CPU = ("1", "2", "2", "4", "4", "8")
NODE_MEMORY = ("2Gi", "4Gi", "8Gi", "16Gi")
NODE_PODS = (110, 110, 110, 2, 3, 5)
POD_CPU = ("0", "100m", "250m", "500m", "500m", "1", "1", "1500m", "2", "3")
BIG_POD_CPU = ("1", "1500m", "2", "2", "3")
POD_MEMORY = ("0", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "3Gi")


@dataclass
class GeneratedCluster:
    """Manifests per file, in apply order."""

    files: list[list[dict[str, Any]]] = field(default_factory=list)

    def texts(self) -> list[str]:
        return [to_yaml(documents) for documents in self.files]

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for documents in self.files:
            for document in documents:
                kinds[document["kind"]] = kinds.get(document["kind"], 0) + 1
        return ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))


def to_yaml(documents: list[dict[str, Any]]) -> str:
    return yaml.dump_all(documents, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False)


# --- small pieces ---------------------------------------------------------------------------------


@dataclass
class _Class:
    name: str
    value: int
    never: bool


def _class_name(value: int, never: bool) -> str:
    base = f"prio-m{-value}" if value < 0 else f"prio-{value}"
    return f"{base}-never" if never else base


@st.composite
def priority_classes(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[_Class]]:
    values = draw(st.lists(st.sampled_from(CLASS_VALUES), min_size=2, max_size=5, unique=True))
    classes = [_Class(_class_name(v, False), v, False) for v in values]
    # A few non-preempting classes (KEP-902), some sharing a value with a preempting one.
    for value in draw(st.lists(st.sampled_from(CLASS_VALUES), max_size=2, unique=True)):
        classes.append(_Class(_class_name(value, True), value, True))
    default_index = draw(st.integers(0, len(classes) - 1)) if draw(st.integers(0, 4)) == 0 else None
    manifests = []
    for index, cls in enumerate(classes):
        manifest: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": cls.name},
            "value": cls.value,
        }
        if cls.never:
            manifest["preemptionPolicy"] = "Never"
        if index == default_index:
            manifest["globalDefault"] = True
        manifests.append(manifest)
    return manifests, classes


def _class_choice(draw: st.DrawFn, classes: list[_Class], lean: int = 0) -> str | None:
    """A class name for a pod: one of the cluster's, rarely a system class, sometimes none (the
    global default or priority 0). `lean` > 0 leans towards the highest value (preemptors), < 0
    towards the lowest (their victims)."""
    roll = draw(st.integers(0, 19))
    if roll == 0:
        return draw(st.sampled_from(SYSTEM_CLASSES))
    if roll == 1:
        return None
    ordered = sorted(classes, key=lambda c: c.value)
    if lean and draw(st.booleans()):
        return (ordered[-1] if lean > 0 else ordered[0]).name
    return draw(st.sampled_from(ordered)).name


def _requests(draw: st.DrawFn, gpu_max: int, big: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    requests = {}
    cpu = draw(st.sampled_from(BIG_POD_CPU if big else POD_CPU))
    memory = draw(st.sampled_from(POD_MEMORY))
    if cpu != "0" or draw(st.booleans()):
        requests["cpu"] = cpu
    if memory != "0" or draw(st.booleans()):
        requests["memory"] = memory
    if requests:
        resources["requests"] = requests
    if gpu_max > 0 and draw(st.integers(0, 3)) == 0:
        gpus = str(draw(st.integers(1, gpu_max)))
        # Extended resources cannot be overcommitted: the limit is mandatory and equal.
        resources.setdefault("requests", {})[GPU] = gpus
        resources["limits"] = {GPU: gpus}
    return resources


def _label_selector(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 4)) == 0:
        operator = draw(st.sampled_from(("In", "NotIn", "Exists")))
        expression: dict[str, Any] = {"key": "app", "operator": operator}
        if operator != "Exists":
            expression["values"] = draw(st.lists(st.sampled_from(APPS), min_size=1, max_size=2, unique=True))
        return {"matchExpressions": [expression]}
    selector: dict[str, Any] = {"matchLabels": {"app": draw(st.sampled_from(APPS))}}
    if draw(st.integers(0, 4)) == 0:
        selector["matchLabels"]["tier"] = draw(st.sampled_from(TIERS))
    return selector


def _pod_labels(draw: st.DrawFn) -> dict[str, str]:
    labels = {}
    if draw(st.integers(0, 5)) > 0:
        labels["app"] = draw(st.sampled_from(APPS))
    if draw(st.booleans()):
        labels["tier"] = draw(st.sampled_from(TIERS))
    return labels


def _affinity_term(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {
        "labelSelector": _label_selector(draw),
        "topologyKey": draw(st.sampled_from((HOST_KEY, ZONE_KEY, ZONE_KEY))),
    }
    if draw(st.integers(0, 9)) == 0:
        term["namespaces"] = list(draw(st.lists(st.sampled_from(("default", "team")), min_size=1, unique=True)))
    return term


def _pod_affinity(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if draw(st.booleans()):
        body["requiredDuringSchedulingIgnoredDuringExecution"] = [_affinity_term(draw)]
    if not body or draw(st.booleans()):
        body["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": draw(st.sampled_from((1, 10, 50, 100))), "podAffinityTerm": _affinity_term(draw)}
            for _ in range(draw(st.integers(1, 2)))
        ]
    return {kind: body}


def _node_requirement(draw: st.DrawFn) -> dict[str, Any]:
    key, values = draw(st.sampled_from(((ZONE_KEY, ZONES), (DISK_KEY, DISKS))))
    operator = draw(st.sampled_from(("In", "In", "NotIn", "Exists", "DoesNotExist")))
    requirement: dict[str, Any] = {"key": key, "operator": operator}
    if operator in ("In", "NotIn"):
        requirement["values"] = draw(st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True))
    return requirement


def _node_affinity(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if draw(st.booleans()):
        terms = [{"matchExpressions": [_node_requirement(draw)]} for _ in range(draw(st.integers(1, 2)))]
        body["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if not body or draw(st.booleans()):
        body["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": draw(st.sampled_from((1, 5, 20, 100))),
                "preference": {"matchExpressions": [_node_requirement(draw)]},
            }
            for _ in range(draw(st.integers(1, 2)))
        ]
    return {"nodeAffinity": body}


def _tolerations(draw: st.DrawFn) -> list[dict[str, Any]]:
    tolerations = []
    for _ in range(draw(st.integers(1, 2))):
        if draw(st.integers(0, 5)) == 0:
            tolerations.append({"operator": "Exists"})
            continue
        toleration: dict[str, Any] = {"key": draw(st.sampled_from(TAINT_KEYS))}
        if draw(st.booleans()):
            toleration["operator"] = "Exists"
        else:
            toleration["operator"] = "Equal"
            toleration["value"] = draw(st.sampled_from(("", "blue", "green")))
        effect = draw(st.sampled_from(("", *TAINT_EFFECTS)))
        if effect:
            toleration["effect"] = effect
        tolerations.append(toleration)
    return tolerations


def _spread_constraints(draw: st.DrawFn) -> list[dict[str, Any]]:
    constraints = []
    keys = draw(st.lists(st.sampled_from((ZONE_KEY, HOST_KEY)), min_size=1, max_size=2, unique=True))
    for key in keys:
        constraints.append(
            {
                "maxSkew": draw(st.integers(1, 2)),
                "topologyKey": key,
                "whenUnsatisfiable": draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway"))),
                "labelSelector": _label_selector(draw),
            }
        )
    return constraints


def _pod(
    name: str,
    namespace: str,
    labels: dict[str, str],
    class_name: str | None,
    resources: dict[str, Any],
    grace: int | None,
) -> dict[str, Any]:
    if class_name in SYSTEM_CLASSES:
        # Critical pods are admitted in kube-system only (the ResourceQuota admission configuration's
        # limitedResources, as a kube-apiserver set up for them has it).
        namespace = "kube-system"
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    if resources:
        container["resources"] = resources
    spec: dict[str, Any] = {"containers": [container]}
    if class_name is not None:
        spec["priorityClassName"] = class_name
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _grace(draw: st.DrawFn) -> int | None:
    """terminationGracePeriodSeconds 0-60 s; None leaves the default (30 s)."""
    return draw(st.one_of(st.none(), st.sampled_from((0, 0, 1, 5, 10, 30, 45, 60))))


# --- nodes and the pods already on them -------------------------------------------------------------


@dataclass
class _NodeRoom:
    name: str
    cpu_milli: int
    memory: int
    pods: int
    gpus: int
    taints: list[dict[str, str]]
    ports: set[int] = field(default_factory=set)


def _milli(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000


def _bytes(memory: str) -> int:
    units = {"Mi": 2**20, "Gi": 2**30}
    for suffix, factor in units.items():
        if memory.endswith(suffix):
            return int(memory[: -len(suffix)]) * factor
    return int(memory)


@st.composite
def node(draw: st.DrawFn, index: int) -> tuple[dict[str, Any], _NodeRoom]:
    name = f"n{index}"
    labels = {HOST_KEY: name}
    if draw(st.integers(0, 7)) > 0:  # some nodes lack the zone label (PodTopologySpread skips them)
        labels[ZONE_KEY] = draw(st.sampled_from(ZONES))
    if draw(st.booleans()):
        labels[DISK_KEY] = draw(st.sampled_from(DISKS))
    cpu, memory, pods = (
        draw(st.sampled_from(NODE_CPU)),
        draw(st.sampled_from(NODE_MEMORY)),
        draw(st.sampled_from(NODE_PODS)),
    )
    capacity: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    gpus = draw(st.sampled_from((0, 0, 0, 1, 2, 4)))
    if gpus:
        capacity[GPU] = str(gpus)
    spec: dict[str, Any] = {}
    taints: list[dict[str, str]] = []
    if draw(st.integers(0, 3)) == 0:
        seen = set()
        for _ in range(draw(st.integers(1, 2))):
            key, effect = draw(st.sampled_from(TAINT_KEYS)), draw(st.sampled_from(TAINT_EFFECTS))
            if (key, effect) in seen:  # validation: key and effect unique together
                continue
            seen.add((key, effect))
            taint = {"key": key, "effect": effect}
            value = draw(st.sampled_from(("", "blue", "green")))
            if value:
                taint["value"] = value
            taints.append(taint)
        spec["taints"] = taints
    if draw(st.integers(0, 14)) == 0:
        spec["unschedulable"] = True
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
    if spec:
        manifest["spec"] = spec
    manifest["status"] = {"capacity": dict(capacity), "allocatable": dict(capacity)}
    return manifest, _NodeRoom(name, _milli(cpu), _bytes(memory), pods, gpus, taints)


def _fits(room: _NodeRoom, resources: dict[str, Any]) -> bool:
    requests = resources.get("requests", {})
    cpu = _milli(requests.get("cpu", "0"))
    memory = _bytes(requests.get("memory", "0"))
    gpus = int(requests.get(GPU, "0"))
    return room.pods >= 1 and cpu <= room.cpu_milli and memory <= room.memory and gpus <= room.gpus


def _take(room: _NodeRoom, resources: dict[str, Any]) -> None:
    requests = resources.get("requests", {})
    room.cpu_milli -= _milli(requests.get("cpu", "0"))
    room.memory -= _bytes(requests.get("memory", "0"))
    room.gpus -= int(requests.get(GPU, "0"))
    room.pods -= 1


@st.composite
def running_pod(draw: st.DrawFn, name: str, room: _NodeRoom, classes: list[_Class]) -> dict[str, Any] | None:
    """A pod created already placed on `room`'s node, or None when the drawn one does not fit there."""
    resources = _requests(draw, room.gpus)
    if not _fits(room, resources):
        return None
    manifest = _pod(
        name,
        draw(st.sampled_from(NAMESPACES)),
        _pod_labels(draw),
        _class_choice(draw, classes, lean=-1),
        resources,
        _grace(draw),
    )
    spec = manifest["spec"]
    spec["nodeName"] = room.name
    # Tolerate what keeps pods off the node, so the placement is one a scheduler could have made.
    hard = [t for t in room.taints if t["effect"] != "PreferNoSchedule"]
    if hard:
        spec["tolerations"] = [
            {"key": t["key"], "operator": "Equal", "value": t.get("value", ""), "effect": t["effect"]} for t in hard
        ]
    if draw(st.integers(0, 9)) == 0:
        port = draw(st.sampled_from(HOST_PORTS))
        if port not in room.ports:
            room.ports.add(port)
            manifest["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    roll = draw(st.integers(0, 9))
    if roll == 0:  # an existing pod's anti-affinity keeps matching incoming pods away (symmetry)
        spec["affinity"] = _pod_affinity(draw, "podAntiAffinity")
    elif roll == 1:  # an existing pod's preferred terms count in the incoming pod's score
        spec["affinity"] = _pod_affinity(draw, "podAffinity")
    manifest["status"] = {"phase": "Running", "startTime": draw(st.sampled_from(START_TIMES))}
    _take(room, resources)
    return manifest


@st.composite
def pdb(draw: st.DrawFn, index: int) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 19)) == 0:
        spec["selector"] = {}  # empty: selects every pod for the API, none for the scheduler
    else:
        spec["selector"] = {"matchLabels": {"app": draw(st.sampled_from(APPS))}}
    budget = draw(st.one_of(st.integers(0, 3), st.sampled_from(("0%", "25%", "50%", "100%"))))
    spec["minAvailable" if draw(st.booleans()) else "maxUnavailable"] = budget
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"pdb-{index}", "namespace": draw(st.sampled_from(NAMESPACES))},
        "spec": spec,
    }


@st.composite
def pending_pod(
    draw: st.DrawFn, name: str, classes: list[_Class], node_names: list[str], max_gpu: int, big: bool
) -> dict[str, Any]:
    """A pod to schedule; `big` ones ask for whole cores (preemptors in a full cluster)."""
    manifest = _pod(
        name,
        draw(st.sampled_from(NAMESPACES)),
        _pod_labels(draw),
        _class_choice(draw, classes, lean=1),
        _requests(draw, max_gpu, big and draw(st.integers(0, 3)) > 0),
        _grace(draw),
    )
    spec = manifest["spec"]
    if draw(st.integers(0, 3)) == 0:
        spec["tolerations"] = _tolerations(draw)
    if draw(st.integers(0, 6)) == 0:
        key, values = draw(st.sampled_from(((ZONE_KEY, ZONES), (DISK_KEY, DISKS))))
        spec["nodeSelector"] = {key: draw(st.sampled_from(values))}
    affinity: dict[str, Any] = {}
    if draw(st.integers(0, 4)) == 0:
        affinity.update(_node_affinity(draw))
    if draw(st.integers(0, 7)) == 0:
        affinity.update(_pod_affinity(draw, "podAffinity"))
    if draw(st.integers(0, 5)) == 0:
        affinity.update(_pod_affinity(draw, "podAntiAffinity"))
    if affinity:
        spec["affinity"] = affinity
    if draw(st.integers(0, 5)) == 0:
        spec["topologySpreadConstraints"] = _spread_constraints(draw)
    if draw(st.integers(0, 9)) == 0:
        port = draw(st.sampled_from(HOST_PORTS))
        spec["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    if node_names and draw(st.integers(0, 9)) == 0:
        # Already nominated (a scheduler restarted mid-preemption); rarely a node that does not exist.
        nominated = draw(st.sampled_from(node_names)) if draw(st.integers(0, 7)) else "n-gone"
        manifest["status"] = {"nominatedNodeName": nominated}
    return manifest


# --- the whole cluster -----------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn, workloads: bool = True) -> GeneratedCluster:
    """A random cluster; `workloads`: about a third have PodGroups (see the module docstring)."""
    class_manifests, classes = draw(priority_classes())
    node_count = draw(st.integers(13, 100)) if draw(st.integers(0, 19)) == 0 else draw(st.integers(1, 12))
    node_manifests, rooms = [], []
    for index in range(node_count):
        manifest, room = draw(node(index))
        node_manifests.append(manifest)
        rooms.append(room)
    # Dense clusters preempt; sparse ones exercise Filter and Score. Per-node pod counts are bounded so
    # that big clusters stay cheap.
    per_node = draw(st.sampled_from((0, 2, 4, 6, 8, 8))) if node_count <= 12 else draw(st.integers(0, 3))
    running: list[dict[str, Any]] = []
    for room in rooms:
        for _ in range(draw(st.integers(0, per_node))):
            pod = draw(running_pod(f"r{len(running)}", room, classes))
            if pod is not None:
                running.append(pod)
    pdbs = [draw(pdb(i)) for i in range(draw(st.integers(0, 3)))]
    node_names = [room.name for room in rooms]
    max_gpu = max((room.gpus for room in rooms), default=0) or (1 if draw(st.integers(0, 9)) == 0 else 0)
    big = draw(st.booleans())
    pending = [draw(pending_pod(f"p{i}", classes, node_names, max_gpu, big)) for i in range(draw(st.integers(1, 8)))]
    files = [class_manifests + node_manifests + running + pdbs, pending]
    later = draw(st.integers(0, 5)) if draw(st.booleans()) else 0
    if later:
        files.append([draw(pending_pod(f"q{i}", classes, node_names, max_gpu, big)) for i in range(later)])
    cluster = GeneratedCluster(files)
    if workloads and draw(st.integers(0, 3)) == 0:
        cluster = draw(with_workloads(cluster, classes))
    return cluster


# --- workloads (GenericWorkload) -------------------------------------------------------------------------


def _pod_group(
    name: str,
    namespace: str,
    class_name: str | None,
    gang_min: int | None,
    disruption_all: bool,
    classes: list[_Class],
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": gang_min}} if gang_min else {"basic": {}}}
    if class_name is not None:
        spec["priorityClassName"] = class_name
        # The API server defaults an unset preemptionPolicy to PreemptLowerPriority before the
        # Priority admission plugin compares it with the class's: a Never class's group says so.
        if any(c.name == class_name and c.never for c in classes):
            spec["preemptionPolicy"] = "Never"
    if disruption_all:
        spec["disruptionMode"] = {"all": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _user_class(draw: st.DrawFn, classes: list[_Class], lean: int) -> str:
    """A class for a group and its members: one of the cluster's (never a system class: those pods
    live in kube-system; never none: a Never globalDefault class would make the API server refuse
    the group, its preemptionPolicy defaulted before admission); `lean` as in _class_choice."""
    ordered = sorted(classes, key=lambda c: c.value)
    if lean and draw(st.booleans()):
        return (ordered[-1] if lean > 0 else ordered[0]).name
    return draw(st.sampled_from(ordered)).name


@st.composite
def running_groups(draw: st.DrawFn, running: list[dict[str, Any]], classes: list[_Class]) -> list[dict[str, Any]]:
    """PodGroups over some running pods (members share a namespace; a group's priority need not be its
    members'); the members get spec.schedulingGroup."""
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for pod in running:
        namespace = pod["metadata"]["namespace"]
        if namespace != "kube-system" and "schedulingGroup" not in pod["spec"]:
            by_namespace.setdefault(namespace, []).append(pod)
    groups: list[dict[str, Any]] = []
    for namespace in sorted(by_namespace):
        free = by_namespace[namespace]
        for _ in range(draw(st.integers(0, 2))):
            if len(free) < 1:
                break
            size = draw(st.integers(1, min(4, len(free))))
            indices = sorted(draw(st.lists(st.integers(0, len(free) - 1), min_size=size, max_size=size, unique=True)))
            members = [free[i] for i in indices]
            free = [pod for i, pod in enumerate(free) if i not in indices]
            name = f"pg-r{len(groups)}"
            gang = draw(st.integers(1, len(members))) if draw(st.booleans()) else None
            class_name = _user_class(draw, classes, -1)
            groups.append(_pod_group(name, namespace, class_name, gang, draw(st.booleans()), classes))
            for pod in members:
                pod["spec"]["schedulingGroup"] = {"podGroupName": name}
    return groups


@st.composite
def pending_groups(
    draw: st.DrawFn, prefix: str, classes: list[_Class], node_names: list[str], max_gpu: int
) -> list[dict[str, Any]]:
    """One or two new groups with 1-4 pending members each: members take the group's class (so their
    preemptionPolicy is the group's, as upstream's validatePodGroup requires); a gang's minCount is
    at most its members."""
    documents: list[dict[str, Any]] = []
    for index in range(draw(st.integers(1, 2))):
        name = f"pg-{prefix}{index}"
        namespace = draw(st.sampled_from(NAMESPACES))
        class_name = _user_class(draw, classes, 1)
        members = []
        for member in range(draw(st.integers(1, 4))):
            pod = draw(pending_pod(f"{prefix}{index}-{member}", classes, node_names, max_gpu, True))
            pod["metadata"]["namespace"] = namespace
            pod.pop("status", None)  # no nomination carried over: the group nominates its members
            spec = pod["spec"]
            spec.pop("priorityClassName", None)
            if class_name is not None:
                spec["priorityClassName"] = class_name
            spec["schedulingGroup"] = {"podGroupName": name}
            members.append(pod)
        gang = draw(st.integers(1, len(members))) if draw(st.integers(0, 2)) > 0 else None
        documents.append(_pod_group(name, namespace, class_name, gang, draw(st.booleans()), classes))
        documents.extend(members)
    return documents


@st.composite
def with_workloads(draw: st.DrawFn, cluster: GeneratedCluster, classes: list[_Class]) -> GeneratedCluster:
    """`cluster` with PodGroups added (see the module docstring)."""
    step0 = cluster.files[0]
    node_names = [d["metadata"]["name"] for d in step0 if d["kind"] == "Node"]
    max_gpu = max((int(d["status"]["capacity"].get(GPU, "0")) for d in step0 if d["kind"] == "Node"), default=0)
    running = [d for d in step0 if d["kind"] == "Pod"]
    step0.extend(draw(running_groups(running, classes)))
    cluster.files[1].extend(draw(pending_groups("g", classes, node_names, max_gpu)))
    if len(cluster.files) > 2 and draw(st.booleans()):
        cluster.files[2].extend(draw(pending_groups("h", classes, node_names, max_gpu)))
    return cluster
