"""The dashboard's copy of the cluster, kept from the public API's Watch.

Plain data and no I/O: `follower` feeds it object changes and events as the API sends them (as
Kubernetes JSON dicts), `views` reads it. It keeps the indexes the views need so that a page of
5,000 nodes or 30,000 pods never scans the whole cluster per item: pods by node, the pending
pods, each pod's requests parsed once. Preemptions are derived from the Preempted events (each
names its preemptor in `related` and its node in the message) and kept for the timeline.

Each view has a version that moves when something it shows changes, so a browser is told which
views to fetch again instead of being sent the cluster.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object
from podsched.api.timestamps import parse_timestamp
from podsched.api.types import LabelSelector, PodDisruptionBudget
from podsched_cli.output import pod_requests

# The views a browser can be told to refresh.
NODES = "nodes"
QUEUE = "queue"
PREEMPTIONS = "preemptions"
POLICIES = "policies"
OBJECTS = "objects"  # any object or event: an open object page refreshes
VIEWS = (NODES, QUEUE, PREEMPTIONS, POLICIES, OBJECTS)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

# The binder's Preempted message (libs/podsched/cluster/binder.py, upstream's wording).
_PREEMPTED_ON_NODE = re.compile(r" on node (\S+)$")

PodKey = tuple[str, str]  # (namespace, name)


def timestamp_seconds(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


@dataclass(slots=True)
class PodEntry:
    """One pod and what the views read from it, computed once per change."""

    obj: dict[str, Any]
    namespace: str
    name: str
    uid: str
    node: str
    priority: int
    priority_class: str
    phase: str
    requests: dict[str, int]
    created: float | None
    # When its graceful deletion started and how long it lasts (victims of a preemption).
    deletion_started: float | None
    grace_seconds: int
    nominated_node: str
    non_preempting: bool

    @property
    def key(self) -> PodKey:
        return (self.namespace, self.name)

    @property
    def terminating(self) -> bool:
        return self.deletion_started is not None

    @property
    def occupies_node(self) -> bool:
        """Bound and holding its resources: running, or terminating in its grace period (as the
        binder counts a node's use; a Failed pod has released them)."""
        return bool(self.node) and self.phase not in ("Failed", "Succeeded")

    @property
    def pending(self) -> bool:
        return not self.node and not self.terminating and self.phase in ("", "Pending")

    @property
    def grace_deadline(self) -> float | None:
        return None if self.deletion_started is None else self.deletion_started + self.grace_seconds

    @staticmethod
    def of(obj: dict[str, Any]) -> PodEntry:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        deletion = timestamp_seconds(meta.get("deletionTimestamp"))
        grace = meta.get("deletionGracePeriodSeconds", spec.get("terminationGracePeriodSeconds", 30))
        return PodEntry(
            obj=obj,
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            node=str(spec.get("nodeName") or ""),
            priority=int(spec.get("priority") or 0),
            priority_class=str(spec.get("priorityClassName") or ""),
            phase=str(status.get("phase") or ""),
            requests=pod_requests(obj),
            created=timestamp_seconds(meta.get("creationTimestamp")),
            deletion_started=deletion,
            grace_seconds=int(grace) if isinstance(grace, int) else 30,
            nominated_node=str(status.get("nominatedNodeName") or ""),
            non_preempting=spec.get("preemptionPolicy") == "Never",
        )


@dataclass(frozen=True, slots=True)
class PodRef:
    namespace: str
    name: str
    uid: str


@dataclass(slots=True)
class Preemption:
    """One preemption as its Preempted events tell it: a preemptor, a node, its victims."""

    preemptor: PodRef
    node: str
    time: float
    victims: list[PodRef] = field(default_factory=list)


def _ref(value: Any) -> PodRef | None:
    if not isinstance(value, dict) or not value.get("uid"):
        return None
    return PodRef(str(value.get("namespace") or "default"), str(value.get("name") or ""), str(value["uid"]))


class ClusterMirror:
    """The objects of one cluster as the Watch reported them, with the dashboard's indexes."""

    def __init__(self, timeline_length: int = 200) -> None:
        self.timeline_length = timeline_length
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next Watch starts from the current state (a relist)."""
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[PodKey, PodEntry] = {}
        self.pods_by_uid: dict[str, PodKey] = {}
        self.pods_by_node: dict[str, set[PodKey]] = {}
        self.pending: set[PodKey] = set()
        self.priority_classes: dict[str, dict[str, Any]] = {}
        self.pdbs: dict[PodKey, dict[str, Any]] = {}
        # Each budget's selector, decoded once (None: it selects nothing, as upstream).
        self.pdb_selectors: dict[PodKey, LabelSelector | None] = {}
        self.quotas: dict[PodKey, dict[str, Any]] = {}
        # Newest last; keyed by (preemptor uid, node).
        self.preemptions: OrderedDict[tuple[str, str], Preemption] = OrderedDict()
        # uid -> keys of the preemptions it takes part in (as preemptor or victim).
        self.preemption_parts: dict[str, set[tuple[str, str]]] = {}
        self.resource_version = 0
        # The Watch's bookmark after the current state has come: the mirror holds the whole cluster.
        self.synced = False
        self.view_versions = dict.fromkeys(VIEWS, 0)
        self.version = 0
        self._bump(*VIEWS)

    def _bump(self, *views: str) -> None:
        self.version += 1
        for view in views:
            self.view_versions[view] = self.version

    # --- object changes ---------------------------------------------------------------------------

    def apply_change(self, change_type: str, kind: str, obj: dict[str, Any], resource_version: int) -> None:
        """One object change from the Watch. A change no newer than what is held is a redelivery and
        is dropped (the API's resource versions increase over all kinds)."""
        if resource_version and resource_version <= self.resource_version and change_type != ADDED:
            return
        self.resource_version = max(self.resource_version, resource_version)
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        key = (str(meta.get("namespace") or "default"), name)
        gone = change_type == DELETED
        if kind == "Pod":
            self._apply_pod(key, None if gone else obj)
        elif kind == "Node":
            if gone:
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = obj
            self._bump(NODES, OBJECTS)
        elif kind == "PriorityClass":
            _put(self.priority_classes, name, None if gone else obj)
            self._bump(NODES, QUEUE, POLICIES, OBJECTS)  # bands are named after the classes
        elif kind == "PodDisruptionBudget":
            _put(self.pdbs, key, None if gone else obj)
            if gone:
                self.pdb_selectors.pop(key, None)
            else:
                self.pdb_selectors[key] = _selector_of(obj)
            self._bump(POLICIES, PREEMPTIONS, OBJECTS)
        elif kind == "ResourceQuota":
            _put(self.quotas, key, None if gone else obj)
            self._bump(POLICIES, OBJECTS)

    def _apply_pod(self, key: PodKey, obj: dict[str, Any] | None) -> None:
        views = {OBJECTS, POLICIES}  # quota usage and PDB health follow the pods
        old = self.pods.pop(key, None)
        if old is not None:
            self.pods_by_uid.pop(old.uid, None)
            if old.node:
                on_node = self.pods_by_node.get(old.node)
                if on_node is not None:
                    on_node.discard(key)
                views.add(NODES)
            if old.pending:
                self.pending.discard(key)
                views.add(QUEUE)
            if old.nominated_node:
                views.add(NODES)
            if old.uid in self.preemption_parts:
                views.add(PREEMPTIONS)
        if obj is not None:
            new = PodEntry.of(obj)
            self.pods[key] = new
            self.pods_by_uid[new.uid] = key
            if new.node:
                self.pods_by_node.setdefault(new.node, set()).add(key)
                views.add(NODES)
            if new.pending:
                self.pending.add(key)
                views.add(QUEUE)
            if new.uid in self.preemption_parts:
                views.add(PREEMPTIONS)
        self._bump(*views)

    # --- events -----------------------------------------------------------------------------------

    def apply_event(self, event: dict[str, Any]) -> None:
        """One Kubernetes Event (the CLI's dict shape). Preempted events make the timeline; the same
        event seen twice (listed, then watched) changes nothing."""
        self._bump(OBJECTS)
        if self._record_preemption(event):
            self._trim_timeline()
            self._bump(PREEMPTIONS, NODES)

    def apply_listed_events(self, events: list[dict[str, Any]]) -> None:
        """The events listed when the Watch (re)started. The listing may answer after the Watch has
        already given newer preemptions, so the timeline is put back in time order (then the oldest
        beyond its length are dropped) instead of the listed ones counting as the newest."""
        self._bump(OBJECTS)
        recorded = [self._record_preemption(event) for event in events]
        if any(recorded):
            ordered = sorted(self.preemptions.items(), key=lambda entry: entry[1].time)  # stable: ties keep their order
            self.preemptions = OrderedDict(ordered)
            self._trim_timeline()
            self._bump(PREEMPTIONS, NODES)

    def _record_preemption(self, event: dict[str, Any]) -> bool:
        """Add a Preempted event's victim to its preemption (made if new, as the newest); False if the
        event names no preemption."""
        if event.get("reason") != "Preempted":
            return False
        victim = _ref(event.get("involvedObject"))
        preemptor = _ref(event.get("related"))
        found = _PREEMPTED_ON_NODE.search(str(event.get("message") or ""))
        if victim is None or preemptor is None or found is None:
            return False
        node = found.group(1)
        key = (preemptor.uid, node)
        preemption = self.preemptions.get(key)
        if preemption is None:
            when = timestamp_seconds(event.get("eventTime")) or 0.0
            preemption = Preemption(preemptor, node, when)
            self.preemptions[key] = preemption
            self.preemption_parts.setdefault(preemptor.uid, set()).add(key)
        if all(v.uid != victim.uid for v in preemption.victims):
            preemption.victims.append(victim)
            self.preemption_parts.setdefault(victim.uid, set()).add(key)
        return True

    def _trim_timeline(self) -> None:
        while len(self.preemptions) > self.timeline_length:
            (old_uid, old_node), old = self.preemptions.popitem(last=False)
            for part in (old.preemptor, *old.victims):
                keys = self.preemption_parts.get(part.uid)
                if keys is not None:
                    keys.discard((old_uid, old_node))
                    if not keys:
                        del self.preemption_parts[part.uid]

    # --- reads ------------------------------------------------------------------------------------

    def pods_on(self, node: str) -> list[PodEntry]:
        return [self.pods[key] for key in self.pods_by_node.get(node, ()) if key in self.pods]

    def pod_by_uid(self, uid: str) -> PodEntry | None:
        key = self.pods_by_uid.get(uid)
        return None if key is None else self.pods.get(key)


def _selector_of(pdb: dict[str, Any]) -> LabelSelector | None:
    try:
        decoded = decode_object(pdb)
    except (ApiError, ValueError, TypeError, KeyError):
        return None  # the API stored it, so this does not happen; a budget that cannot be read selects nothing
    return decoded.selector if isinstance(decoded, PodDisruptionBudget) else None


def _put(table: dict[Any, dict[str, Any]], key: Any, obj: dict[str, Any] | None) -> None:
    if obj is None:
        table.pop(key, None)
    else:
        table[key] = obj
