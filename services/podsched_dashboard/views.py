"""What the page shows, computed from the mirror: plain functions, no I/O, `now` passed in.

Every function returns JSON-ready dicts sized for one screen: a page of nodes, a page of the
queue, the newest preemptions, never the cluster. Search, paging and aggregation happen here, on
the server, so a cluster of 5,000 nodes and 30,000 pods costs the browser one page at a time.

Priority bands are the cluster's own PriorityClasses: a pod belongs to the class with the highest
value at or below its priority (so pods that name no class still get a band), and the bands are
numbered from the most important down, which the page turns into colours.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from podsched.api.labels import selector_matches
from podsched.api.quantity import to_int, to_milli

from .mirror import ClusterMirror, PodEntry, Preemption

# Resources every node shows, in kubectl's order; extended resources follow when a node has them.
BASE_RESOURCES = ("cpu", "memory", "pods")
# How many pods a node card lists; the rest are counted.
CHIPS_PER_NODE = 24
NODE_FILTERS = ("all", "cordoned", "tainted", "preempting", "full")


@dataclass(frozen=True, slots=True)
class Band:
    """A priority band: one PriorityClass, with its rank (0 = the most important)."""

    name: str
    value: int
    rank: int


def priority_bands(priority_classes: Iterable[Mapping[str, Any]]) -> list[Band]:
    """The classes, most important first (ties by name)."""
    classes = sorted(
        ((int(pc.get("value") or 0), str((pc.get("metadata") or {}).get("name") or "")) for pc in priority_classes),
        key=lambda item: (-item[0], item[1]),
    )
    return [Band(name, value, rank) for rank, (value, name) in enumerate(classes)]


def band_of(priority: int, bands: Sequence[Band]) -> Band:
    """The class with the highest value at or below `priority`; below every class: a band of its own."""
    for band in bands:
        if band.value <= priority:
            return band
    return Band("below every class", priority, len(bands))


def short_amount(resource: str, amount: int) -> str:
    """A readable amount for a bar's label: cores, GiB, counts (not exact quantities)."""
    if resource == "cpu":
        cores = amount / 1000
        return f"{cores:g}" if cores == int(cores) else f"{cores:.2f}".rstrip("0")
    if resource in ("memory", "ephemeral-storage"):
        for suffix, factor in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount >= factor:
                value = amount / factor
                return f"{value:g}{suffix}" if value == int(value) else f"{value:.1f}{suffix}"
        return str(amount)
    return str(amount)


def node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """status.allocatable (capacity where allocatable is not given), in canonical units."""
    status = node.get("status") or {}
    values = dict(status.get("capacity") or {})
    values.update(status.get("allocatable") or {})
    amounts = {}
    for name, value in values.items():
        try:
            amounts[str(name)] = to_milli(value) if name == "cpu" else to_int(value)
        except ValueError:
            continue  # a quantity the API would not have stored; the node shows without it
    return amounts


def taint_texts(node: Mapping[str, Any]) -> list[str]:
    taints = (node.get("spec") or {}).get("taints") or []
    texts = []
    for taint in taints:
        if isinstance(taint, dict):
            value = f"={taint['value']}" if taint.get("value") else ""
            texts.append(f"{taint.get('key', '')}{value}:{taint.get('effect', '')}")
    return texts


def pod_chip(pod: PodEntry, bands: Sequence[Band]) -> dict[str, Any]:
    band = band_of(pod.priority, bands)
    return {
        "namespace": pod.namespace,
        "name": pod.name,
        "priority": pod.priority,
        "band": band.name,
        "rank": band.rank,
        "terminating": pod.terminating,
        "graceDeadline": pod.grace_deadline,
    }


def node_view(
    node: Mapping[str, Any],
    pods: Sequence[PodEntry],
    bands: Sequence[Band],
    *,
    nominated: Sequence[PodEntry] = (),
    chips: int = CHIPS_PER_NODE,
    incoming: PodEntry | None = None,
) -> dict[str, Any]:
    """One node card: a bar per resource (requested of allocatable, split by priority band, the
    terminating pods' share apart), its pods most important first, cordon and taints. `incoming`
    (a what-if's pod) is drawn as placed there, its share and its chip marked."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    allocatable = node_allocatable(node)
    placed = sorted((p for p in pods if p.occupies_node), key=lambda p: (-p.priority, p.namespace, p.name))
    used_names = {name for pod in placed for name in pod.requests}
    extended = sorted((set(allocatable) | used_names) - {*BASE_RESOURCES, "ephemeral-storage"})
    resources = []
    for resource in (*BASE_RESOURCES, *extended):
        total = allocatable.get(resource, 0)
        # (rank, terminating) -> amount: one bar segment per band, terminating pods striped apart.
        segments: dict[tuple[int, bool], int] = {}
        for pod in placed:
            amount = 1 if resource == "pods" else pod.requests.get(resource, 0)
            if amount:
                rank = band_of(pod.priority, bands).rank
                segments[(rank, pod.terminating)] = segments.get((rank, pod.terminating), 0) + amount
        drawn = [
            {
                "rank": rank,
                "terminating": terminating,
                "incoming": False,
                "amount": amount,
                "percent": round(100 * amount / total, 2) if total else 0.0,
            }
            for (rank, terminating), amount in sorted(segments.items())
        ]
        added = 0 if incoming is None else (1 if resource == "pods" else incoming.requests.get(resource, 0))
        if incoming is not None and added:
            drawn.append(
                {
                    "rank": band_of(incoming.priority, bands).rank,
                    "terminating": False,
                    "incoming": True,
                    "amount": added,
                    "percent": round(100 * added / total, 2) if total else 0.0,
                }
            )
        requested = sum(segments.values()) + added
        resources.append(
            {
                "name": resource,
                "allocatable": total,
                "requested": requested,
                "label": f"{short_amount(resource, requested)} / {short_amount(resource, total)}",
                "percent": round(100 * requested / total, 1) if total else (100.0 if requested else 0.0),
                "segments": drawn,
            }
        )
    chip_pods = placed if incoming is None else sorted([*placed, incoming], key=lambda p: (-p.priority, p.name))
    return {
        "name": str(meta.get("name") or ""),
        "unschedulable": bool(spec.get("unschedulable", False)),
        "taints": taint_texts(node),
        "podCount": len(chip_pods),
        "terminatingCount": sum(1 for p in placed if p.terminating),
        "resources": resources,
        "pods": [{**pod_chip(p, bands), "incoming": p is incoming} for p in chip_pods[:chips]],
        "morePods": max(0, len(chip_pods) - chips),
        "nominated": [
            {"namespace": p.namespace, "name": p.name, "priority": p.priority}
            for p in sorted(nominated, key=lambda p: (-p.priority, p.name))
        ],
    }


def _node_matches(mirror: ClusterMirror, name: str, node: Mapping[str, Any], query: str, which: str) -> bool:
    if query:
        labels = (node.get("metadata") or {}).get("labels") or {}
        texts = [name, *(f"{k}={v}" for k, v in labels.items())]
        if not any(query in text for text in texts):
            return False
    if which == "cordoned":
        return bool((node.get("spec") or {}).get("unschedulable"))
    if which == "tainted":
        return bool((node.get("spec") or {}).get("taints"))
    if which == "preempting":
        return any(p.terminating for p in mirror.pods_on(name))
    if which == "full":
        allocatable = node_allocatable(node)
        used: dict[str, int] = {}
        for pod in mirror.pods_on(name):
            if pod.occupies_node:
                for resource, amount in pod.requests.items():
                    used[resource] = used.get(resource, 0) + amount
        return any(used.get(r, 0) >= total > 0 for r, total in allocatable.items() if r != "pods")
    return True


def cluster_totals(mirror: ClusterMirror) -> dict[str, Any]:
    """Requested of allocatable over every node, and what the header counts."""
    allocatable: dict[str, int] = {}
    for node in mirror.nodes.values():
        for resource, amount in node_allocatable(node).items():
            allocatable[resource] = allocatable.get(resource, 0) + amount
    requested: dict[str, int] = {}
    terminating = 0
    bound = 0
    for pod in mirror.pods.values():
        if pod.occupies_node:
            bound += 1
            terminating += pod.terminating
            for resource, amount in pod.requests.items():
                requested[resource] = requested.get(resource, 0) + amount
    requested["pods"] = bound
    resources = [
        {
            "name": r,
            "requested": requested.get(r, 0),
            "allocatable": allocatable.get(r, 0),
            "label": f"{short_amount(r, requested.get(r, 0))} / {short_amount(r, allocatable.get(r, 0))}",
            "percent": round(100 * requested.get(r, 0) / allocatable[r], 1) if allocatable.get(r) else 0.0,
        }
        for r in (*BASE_RESOURCES, *sorted(set(allocatable) - {*BASE_RESOURCES, "ephemeral-storage"}))
    ]
    return {
        "nodes": len(mirror.nodes),
        "cordoned": sum(1 for n in mirror.nodes.values() if (n.get("spec") or {}).get("unschedulable")),
        "tainted": sum(1 for n in mirror.nodes.values() if (n.get("spec") or {}).get("taints")),
        "pods": len(mirror.pods),
        "bound": bound,
        "pending": len(mirror.pending),
        "terminating": terminating,
        "preemptions": len(mirror.preemptions),
        "resources": resources,
    }


def page_bounds(total: int, page: int, page_size: int) -> tuple[int, int, int]:
    """(page clamped to what exists, first index, number of pages)."""
    pages = max(1, -(-total // page_size))
    page = min(max(page, 1), pages)
    return page, (page - 1) * page_size, pages


def nodes_page(
    mirror: ClusterMirror, *, query: str = "", which: str = "all", page: int = 1, page_size: int = 50
) -> dict[str, Any]:
    """A page of node cards in name order, searched by name or label (`zone=a`) and filtered."""
    if which not in NODE_FILTERS:
        which = "all"
    bands = priority_bands(mirror.priority_classes.values())
    names = sorted(n for n, node in mirror.nodes.items() if _node_matches(mirror, n, node, query, which))
    page, first, pages = page_bounds(len(names), page, page_size)
    nominated: dict[str, list[PodEntry]] = {}
    for key in mirror.pending:
        pod = mirror.pods[key]
        if pod.nominated_node:
            nominated.setdefault(pod.nominated_node, []).append(pod)
    return {
        "total": len(names),
        "page": page,
        "pages": pages,
        "bands": [{"name": b.name, "value": b.value, "rank": b.rank} for b in bands],
        "nodes": [
            node_view(mirror.nodes[name], mirror.pods_on(name), bands, nominated=nominated.get(name, ()))
            for name in names[first : first + page_size]
        ],
    }


def scheduling_reason(pod: Mapping[str, Any]) -> str:
    """The PodScheduled=False condition's message: the last FailedScheduling reason."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if (
            isinstance(condition, dict)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
        ):
            return str(condition.get("message") or condition.get("reason") or "")
    return ""


def queue_page(
    mirror: ClusterMirror, now: float, *, query: str = "", page: int = 1, page_size: int = 50
) -> dict[str, Any]:
    """The pending pods in queue order (priority, then how long they have waited), a page of them,
    and how many wait at each priority over the whole queue."""
    bands = priority_bands(mirror.priority_classes.values())
    pending = [mirror.pods[key] for key in mirror.pending]
    groups: dict[int, int] = {}
    for pod in pending:
        groups[pod.priority] = groups.get(pod.priority, 0) + 1
    if query:
        pending = [p for p in pending if query in f"{p.namespace}/{p.name}" or query in scheduling_reason(p.obj)]
    pending.sort(key=lambda p: (-p.priority, p.created or 0.0, p.namespace, p.name))
    page, first, pages = page_bounds(len(pending), page, page_size)
    return {
        "total": len(mirror.pending),
        "matching": len(pending),
        "page": page,
        "pages": pages,
        "groups": [
            {
                "priority": priority,
                "band": band_of(priority, bands).name,
                "rank": band_of(priority, bands).rank,
                "count": count,
            }
            for priority, count in sorted(groups.items(), key=lambda item: -item[0])
        ],
        "pods": [
            {
                "namespace": p.namespace,
                "name": p.name,
                "priority": p.priority,
                "priorityClass": p.priority_class,
                "band": band_of(p.priority, bands).name,
                "rank": band_of(p.priority, bands).rank,
                "reason": scheduling_reason(p.obj),
                "nominatedNode": p.nominated_node,
                "waitingSeconds": max(0.0, now - p.created) if p.created is not None else None,
                "nonPreempting": p.non_preempting,
            }
            for p in pending[first : first + page_size]
        ],
    }


def pdb_status(pdb: Mapping[str, Any]) -> dict[str, Any]:
    status = pdb.get("status") or {}
    current, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
    return {
        "namespace": str((pdb.get("metadata") or {}).get("namespace") or "default"),
        "name": str((pdb.get("metadata") or {}).get("name") or ""),
        "currentHealthy": current,
        "desiredHealthy": desired,
        "expectedPods": int(status.get("expectedPods") or 0),
        "disruptionsAllowed": int(status.get("disruptionsAllowed") or 0),
        # Below its minimum: a disruption (a preemption, upstream's PDBs being best effort) broke it.
        "violated": current < desired,
    }


def pdbs_selecting(mirror: ClusterMirror, pod: PodEntry) -> list[dict[str, Any]]:
    """The budgets whose selector matches the pod (its namespace's only)."""
    labels = (pod.obj.get("metadata") or {}).get("labels") or {}
    return [
        pdb_status(mirror.pdbs[key])
        for key, selector in sorted(mirror.pdb_selectors.items())
        if key[0] == pod.namespace and key in mirror.pdbs and selector_matches(selector, labels)
    ]


def preemption_view(mirror: ClusterMirror, preemption: Preemption, now: float) -> dict[str, Any]:
    """One timeline entry: who preempted whom where, each victim's grace countdown, the budgets
    the victims belong to (and whether they are now below their minimum), the preemptor's state."""
    preemptor = mirror.pod_by_uid(preemption.preemptor.uid)
    if preemptor is None:
        preemptor_state = "gone"
    elif preemptor.node:
        preemptor_state = f"bound to {preemptor.node}"
    elif preemptor.nominated_node:
        preemptor_state = f"nominated to {preemptor.nominated_node}"
    else:
        preemptor_state = "pending"
    victims = []
    violations: dict[tuple[str, str], dict[str, Any]] = {}
    for ref in preemption.victims:
        pod = mirror.pod_by_uid(ref.uid)
        budgets = pdbs_selecting(mirror, pod) if pod is not None else []
        for budget in budgets:
            if budget["violated"]:
                violations[(budget["namespace"], budget["name"])] = budget
        deadline = pod.grace_deadline if pod is not None else None
        if pod is None:
            state = "gone"
        elif pod.occupies_node and pod.terminating:
            state = "terminating"
        elif pod.terminating or pod.phase in ("Failed", "Succeeded"):
            state = "terminated"
        else:
            state = pod.phase.lower() or "pending"
        victims.append(
            {
                "namespace": ref.namespace,
                "name": ref.name,
                "priority": pod.priority if pod is not None else None,
                "state": state,
                "graceDeadline": deadline,
                "graceLeftSeconds": max(0.0, deadline - now)
                if deadline is not None and state == "terminating"
                else None,
                "pdbs": [f"{b['namespace']}/{b['name']}" for b in budgets],
            }
        )
    return {
        "time": preemption.time,
        "preemptor": {
            "namespace": preemption.preemptor.namespace,
            "name": preemption.preemptor.name,
            "priority": preemptor.priority if preemptor is not None else None,
            "state": preemptor_state,
        },
        "node": preemption.node,
        "victims": victims,
        "pdbViolations": sorted(violations.values(), key=lambda b: (b["namespace"], b["name"])),
        "traceLink": f"trace/{preemption.preemptor.namespace}/{preemption.preemptor.name}?since={int(preemption.time)}",
    }


def timeline(mirror: ClusterMirror, now: float, *, limit: int = 50, query: str = "") -> dict[str, Any]:
    """The newest preemptions first (optionally those naming `query`: a pod or a node)."""
    entries = list(reversed(mirror.preemptions.values()))
    if query:
        entries = [
            p
            for p in entries
            if query in p.node
            or query in f"{p.preemptor.namespace}/{p.preemptor.name}"
            or any(query in f"{v.namespace}/{v.name}" for v in p.victims)
        ]
    return {"total": len(mirror.preemptions), "entries": [preemption_view(mirror, p, now) for p in entries[:limit]]}


def policies(mirror: ClusterMirror, quotas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """PriorityClasses (with how many pods each band holds), PDBs and quotas with their status.
    `quotas` are read from the API, which computes their usage."""
    bands = priority_bands(mirror.priority_classes.values())
    per_band: dict[str, int] = {}
    for pod in mirror.pods.values():
        name = band_of(pod.priority, bands).name
        per_band[name] = per_band.get(name, 0) + 1
    classes = []
    for band in bands:
        pc = mirror.priority_classes.get(band.name) or {}
        classes.append(
            {
                "name": band.name,
                "value": band.value,
                "rank": band.rank,
                "globalDefault": bool(pc.get("globalDefault", False)),
                "preemptionPolicy": str(pc.get("preemptionPolicy") or "PreemptLowerPriority"),
                "description": str(pc.get("description") or ""),
                "pods": per_band.get(band.name, 0),
            }
        )
    quota_rows = []
    for quota in quotas:
        meta, spec, status = quota.get("metadata") or {}, quota.get("spec") or {}, quota.get("status") or {}
        hard, used = status.get("hard") or spec.get("hard") or {}, status.get("used") or {}
        quota_rows.append(
            {
                "namespace": str(meta.get("namespace") or "default"),
                "name": str(meta.get("name") or ""),
                "resources": [{"name": str(r), "used": str(used.get(r, "0")), "hard": str(h)} for r, h in hard.items()],
            }
        )
    return {
        "priorityClasses": classes,
        "pdbs": [pdb_status(p) for _, p in sorted(mirror.pdbs.items())],
        "quotas": quota_rows,
    }


def whatif_view(mirror: ClusterMirror, pod: Mapping[str, Any], outcome: Mapping[str, Any]) -> dict[str, Any]:
    """The dry run's answer drawn on its node, twice: as it is now, with the pods it would preempt
    marked, and as it would be, without them and with the pod. Nothing in the mirror changes."""
    entry = PodEntry.of(dict(pod))
    node_name = str(outcome.get("nodeName") or outcome.get("nominatedNodeName") or "")
    victims = {(str(v.get("namespace") or "default"), str(v.get("name") or "")) for v in outcome.get("victims") or []}
    node = mirror.nodes.get(node_name)
    now_card = after_card = None
    if node is not None:
        bands = priority_bands(mirror.priority_classes.values())
        on_node = mirror.pods_on(node_name)
        now_card = node_view(node, on_node, bands, chips=10_000)
        for chip in now_card["pods"]:
            chip["wouldBePreempted"] = (chip["namespace"], chip["name"]) in victims
        placed = dataclasses.replace(entry, node=node_name, phase="Running")
        survivors = [p for p in on_node if p.key not in victims]
        after_card = node_view(node, survivors, bands, chips=10_000, incoming=placed)
    return {
        "pod": f"{entry.namespace}/{entry.name}",
        "priority": entry.priority,
        "nodeName": str(outcome.get("nodeName") or ""),
        "nominatedNodeName": str(outcome.get("nominatedNodeName") or ""),
        "victims": sorted(f"{ns}/{name}" for ns, name in victims),
        "message": str(outcome.get("message") or ""),
        "node": now_card,
        "after": after_card,
    }
