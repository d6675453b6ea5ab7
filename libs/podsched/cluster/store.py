"""The store: every object by kind, the indexes kept beside them, and watch notifications.

The part of the API server that persists objects and of an informer that indexes them: it assigns
uids and resource versions, keeps each pod in its node's NodeInfo, keeps ResourceQuota usage current
as pods come and go, and reports every change to listeners as a `Change`, which the scheduler queue
turns into cluster events and the services turn into Kafka records. It decides nothing: admission
(`cluster.admission`), the binder, the node agent and the controllers decide and then write here.

`restore` applies one change from the binder's log exactly as recorded; replicas follow the log
with it and a restarting binder rebuilds with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from podsched.api.pod_copy import copy_pod, copy_status
from podsched.api.types import (
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_POD_GROUP,
    KIND_PRIORITY_CLASS,
    KIND_RESOURCE_QUOTA,
    POD_FAILED,
    POD_SUCCEEDED,
    WORKLOAD_KINDS,
    ApiObject,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    ResourceQuota,
    Workload,
)
from podsched.cluster import quota
from podsched.framework.node_info import NodeInfo, PodInfo

# Change types reported to listeners.
ADDED = "ADDED"
MODIFIED = "MODIFIED"
REMOVED = "DELETED"

# The phases of a pod that holds nothing on its node any more (`Store.occupies_node`).
_TERMINAL_PHASES = (POD_FAILED, POD_SUCCEEDED)


@dataclass(frozen=True, slots=True)
class Change:
    """One state change: `old` is None for an add, `new` is None for a removal."""

    type: str
    kind: str
    old: ApiObject | None
    new: ApiObject | None


class Store:
    """Objects by kind and their indexes. Writes are trusted (admitted or from the log); each one that
    a watcher would see is reported to every listener, in order, before the write returns."""

    def __init__(
        self, clock: Callable[[], float], new_uid: Callable[[], str], authoritative: bool, keep_history: bool = False
    ) -> None:
        self.clock = clock
        self.new_uid = new_uid
        # The binder's copy (authoritative) versions every change itself; a replica keeps the
        # versions recorded in the log.
        self.authoritative = authoritative
        self.nodes: dict[str, Node] = {}
        self.node_infos: dict[str, NodeInfo] = {}
        self.pods: dict[tuple[str, str], Pod] = {}
        self.pods_by_uid: dict[str, Pod] = {}
        # uid -> last version of every pod ever created, deleted ones included: what `simulate` reports
        # at its end. Only with keep_history: a long-running copy of the cluster would grow with every
        # pod it ever saw (a million pods of churn, a million entries).
        self.keep_history = keep_history
        self.history: dict[str, Pod] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pdbs: dict[tuple[str, str], PodDisruptionBudget] = {}
        # ResourceQuotas, each carrying its status.used. Usage is derived state: every copy of the
        # cluster computes it from its own pods (the binder's log carries only the quota objects),
        # charging and releasing pods as they are stored and removed (`store_pod`), so the same log
        # gives the same usage everywhere and admission costs O(quotas in the namespace).
        self.resource_quotas: dict[tuple[str, str], ResourceQuota] = {}
        # ReplicaSets, Deployments and Jobs, by kind then (namespace, name).
        self.workloads: dict[str, dict[tuple[str, str], Workload]] = {kind: {} for kind in WORKLOAD_KINDS}
        # scheduling.k8s.io/v1beta1 PodGroups by (namespace, name); their pods name them in
        # spec.schedulingGroup.podGroupName (`pod_group_members` lists them).
        self.pod_groups: dict[tuple[str, str], PodGroup] = {}
        # (namespace, group name) -> uids of the stored pods that name it, in creation order.
        self.pod_group_pods: dict[tuple[str, str], dict[str, None]] = {}
        self.quota_keys: dict[str, set[tuple[str, str]]] = {}  # namespace -> its quotas
        # Namespaces whose pods changed since the disruption controller last looked (it drains this).
        self.changed_pod_namespaces: set[str] = set()
        self.listeners: list[Callable[[Change], None]] = []
        self.resource_version = 0  # the last one assigned (or restored)

    # --- versions and notifications -------------------------------------------------------------

    def notify(self, change: Change) -> None:
        if change.type == REMOVED and self.authoritative and change.old is not None:
            # A deletion is a change too: it gets its own version (as the API server's DELETED
            # watch event does), so followers of the log see versions strictly increase.
            self.stamp(change.old)
        for listener in self.listeners:
            listener(change)

    def stamp(self, obj: Any) -> None:
        self.resource_version += 1
        obj.metadata.resource_version = self.resource_version

    def new_meta(self, obj: Any, old: Any | None) -> None:
        """Server-set metadata for a create (`old` None) or an update of `old`, and a new version."""
        meta = obj.metadata
        if old is not None:
            meta.uid = old.metadata.uid
            meta.creation_timestamp = old.metadata.creation_timestamp
            meta.generation = old.metadata.generation
        else:
            # Server-set fields in a manifest are ignored on create, as the API server does.
            meta.uid = self.new_uid()
            meta.creation_timestamp = self.clock()
            meta.deletion_timestamp = None
            meta.generation = 0
        self.stamp(obj)

    # --- writes ----------------------------------------------------------------------------------

    def store_priority_class(self, old: PriorityClass | None, new: PriorityClass, notify: bool = True) -> None:
        self.priority_classes[new.name] = new
        if notify:
            self.notify(Change(MODIFIED if old else ADDED, KIND_PRIORITY_CLASS, old, new))

    def store_node(self, old: Node | None, node: Node) -> None:
        self.nodes[node.name] = node
        if old is None:
            info = NodeInfo(node)
            self.node_infos[node.name] = info
            # Pods created earlier with this nodeName (already placed) now land on it.
            for pod in self.pods.values():
                if pod.spec.node_name == node.name and pod.status.phase not in (POD_FAILED, POD_SUCCEEDED):
                    info.add_pod(PodInfo(pod))
        else:
            self.node_infos[node.name].set_node(node)
        self.notify(Change(MODIFIED if old else ADDED, KIND_NODE, old, node))

    def store_pdb(self, old: PodDisruptionBudget | None, pdb: PodDisruptionBudget) -> None:
        self.pdbs[pdb.key] = pdb
        self.notify(Change(MODIFIED if old else ADDED, KIND_PDB, old, pdb))

    def quotas_in(self, namespace: str) -> list[ResourceQuota]:
        """The namespace's quotas in name order, each with its current status."""
        keys = self.quota_keys.get(namespace)
        return [self.resource_quotas[key] for key in sorted(keys)] if keys else []

    def store_resource_quota(self, old: ResourceQuota | None, new: ResourceQuota) -> ResourceQuota:
        """Store a quota with its status computed from the stored pods, and notify."""
        stored = quota.with_usage(new, self.pods.values())
        self.resource_quotas[stored.key] = stored
        self.quota_keys.setdefault(stored.namespace, set()).add(stored.key)
        self.notify(Change(MODIFIED if old else ADDED, KIND_RESOURCE_QUOTA, old, stored))
        return stored

    def store_workload(self, old: Workload | None, new: Workload) -> None:
        self.workloads[new.kind][new.key] = new
        self.notify(Change(MODIFIED if old else ADDED, new.kind, old, new))

    def store_pod_group(self, old: PodGroup | None, new: PodGroup) -> None:
        self.pod_groups[new.key] = new
        self.notify(Change(MODIFIED if old else ADDED, KIND_POD_GROUP, old, new))

    def pod_group_members(self, namespace: str, group_name: str) -> list[Pod]:
        """The pods that name the group in spec.schedulingGroup.podGroupName, in creation order."""
        uids = self.pod_group_pods.get((namespace, group_name), {})
        return [self.pods_by_uid[uid] for uid in uids]

    def occupies_node(self, pod: Pod) -> bool:
        """Whether the pod holds resources on its node: bound there and not terminal (a Failed or
        Succeeded pod kept for its controller holds nothing)."""
        return (
            bool(pod.spec.node_name)
            and pod.status.phase not in _TERMINAL_PHASES
            and pod.spec.node_name in self.node_infos
        )

    def store_pod(self, old: Pod | None, new: Pod | None) -> None:
        """Replace `old` by `new` everywhere (NodeInfo, indexes, quota usage, history) and notify.

        Every copy of the cluster runs this for every pod change it writes or follows (a created
        pod's bind is one in each of four processes): metadata and spec are read once each here,
        and `occupies_node` is written out."""
        recharge = self.quota_keys and not (old is not None and new is not None and quota.charged_alike(old, new))
        node_infos = self.node_infos
        if old is not None:
            old_meta, old_node = old.metadata, old.spec.node_name
            if old_node and old.status.phase not in _TERMINAL_PHASES and old_node in node_infos:
                node_infos[old_node].remove_pod(old)
            self.changed_pod_namespaces.add(old_meta.namespace)
            if recharge:
                quota.charge(self.resource_quotas, self.quota_keys.get(old_meta.namespace), old, -1)
        if new is not None:
            meta, spec = new.metadata, new.spec
            namespace = meta.namespace
            if recharge:
                quota.charge(self.resource_quotas, self.quota_keys.get(namespace), new, 1)
            self.pods[(namespace, meta.name)] = new
            self.pods_by_uid[meta.uid] = new
            if spec.pod_group_name is not None:  # the field is immutable: set once, on create
                self.pod_group_pods.setdefault((namespace, spec.pod_group_name), {})[meta.uid] = None
            if self.keep_history:
                self.history[meta.uid] = new
            node_name = spec.node_name
            if node_name and new.status.phase not in _TERMINAL_PHASES and node_name in node_infos:
                node_infos[node_name].add_pod(PodInfo(new))
            self.changed_pod_namespaces.add(namespace)
        elif old is not None:
            self.pods.pop(old.key, None)
            self.pods_by_uid.pop(old.uid, None)
            if old.spec.pod_group_name is not None:
                members = self.pod_group_pods.get((old.namespace, old.spec.pod_group_name))
                if members is not None:
                    members.pop(old.uid, None)
                    if not members:
                        del self.pod_group_pods[(old.namespace, old.spec.pod_group_name)]
            if self.keep_history:
                self.history[old.uid] = old
        change_type = ADDED if old is None else (REMOVED if new is None else MODIFIED)
        self.notify(Change(change_type, KIND_POD, old, new))

    def update_pod_status(self, pod: Pod, **status_changes: Any) -> Pod:
        """Store `pod` with the status fields named changed (a name that is none of them raises
        AttributeError, before anything changes)."""
        status = copy_status(pod.status)
        for name, value in status_changes.items():
            setattr(status, name, value)
        new = copy_pod(pod)
        new.status = status
        self.stamp(new)
        self.store_pod(pod, new)
        return new

    def remove(self, kind: str, namespace: str, name: str) -> ApiObject | None:
        """Remove a stored node, PriorityClass, PDB, ResourceQuota, PodGroup or workload and notify;
        None if there is none. Pods are removed with `store_pod(pod, None)`."""
        if kind == KIND_NODE:
            node = self.nodes.pop(name, None)
            if node is not None:
                self.node_infos.pop(name, None)
                self.notify(Change(REMOVED, KIND_NODE, node, None))
            return node
        if kind == KIND_PRIORITY_CLASS:
            pc = self.priority_classes.pop(name, None)
            if pc is not None:
                self.notify(Change(REMOVED, KIND_PRIORITY_CLASS, pc, None))
            return pc
        if kind == KIND_PDB:
            pdb = self.pdbs.pop((namespace, name), None)
            if pdb is not None:
                self.notify(Change(REMOVED, KIND_PDB, pdb, None))
            return pdb
        if kind == KIND_RESOURCE_QUOTA:
            key = (namespace, name)
            removed = self.resource_quotas.pop(key, None)
            if removed is not None:
                keys = self.quota_keys.get(removed.namespace, set())
                keys.discard(key)
                if not keys:
                    self.quota_keys.pop(removed.namespace, None)
                self.notify(Change(REMOVED, KIND_RESOURCE_QUOTA, removed, None))
            return removed
        if kind == KIND_POD_GROUP:
            group = self.pod_groups.pop((namespace, name), None)
            if group is not None:
                self.notify(Change(REMOVED, KIND_POD_GROUP, group, None))
            return group
        if kind in self.workloads:
            workload = self.workloads[kind].pop((namespace, name), None)
            if workload is not None:
                self.notify(Change(REMOVED, kind, workload, None))
            return workload
        raise ValueError(f"no stored kind {kind!r}")

    # --- following the binder's log -------------------------------------------------------------

    def restore_resource_version(self, version: int) -> None:
        """The log says versions up to `version` were handed out (its changes may have been compacted
        away): never assign one of them again."""
        self.resource_version = max(self.resource_version, version)

    def _stored(self, obj: ApiObject) -> Any:
        if isinstance(obj, Pod):
            return self.pods_by_uid.get(obj.uid)
        if isinstance(obj, Node):
            return self.nodes.get(obj.name)
        if isinstance(obj, PriorityClass):
            return self.priority_classes.get(obj.name)
        if isinstance(obj, ResourceQuota):
            return self.resource_quotas.get(obj.key)
        if isinstance(obj, PodDisruptionBudget):
            return self.pdbs.get(obj.key)
        if isinstance(obj, PodGroup):
            return self.pod_groups.get(obj.key)
        return None

    def restore(self, change_type: str, obj: ApiObject) -> None:
        """Apply one change exactly as the binder recorded it: no admission, no events, the recorded
        resource version. Listeners hear the change as if it had happened here."""
        if isinstance(obj, Pod):
            if change_type == REMOVED:
                self.restore_pod_removal(obj.uid, obj.namespace, obj.name, obj.metadata.resource_version)
                if self.keep_history:
                    self.history[obj.uid] = obj
                return
            self.resource_version = max(self.resource_version, obj.metadata.resource_version)
            old = self.pods_by_uid.get(obj.uid)
            same_name = self.pods.get(obj.key)
            if same_name is not None and same_name.uid != obj.uid:  # never expected: the log removes it first
                self.store_pod(same_name, None)
            self.store_pod(old, obj)
            return
        self.resource_version = max(self.resource_version, obj.metadata.resource_version)
        if change_type == REMOVED:
            # Listeners hear the removal with the deletion's own version, as the binder's did.
            stored = self._stored(obj)
            if stored is not None:
                stored.metadata.resource_version = obj.metadata.resource_version
            self.remove(obj.kind, obj.metadata.namespace, obj.metadata.name)
        elif isinstance(obj, Node):
            self.store_node(self.nodes.get(obj.name), obj)
        elif isinstance(obj, ResourceQuota):
            # The recorded status is the binder's view at the time; this copy derives its own
            # from its pods, which are the same pods at this point of the log.
            self.store_resource_quota(self.resource_quotas.get(obj.key), obj)
        elif isinstance(obj, PriorityClass):
            self.store_priority_class(self.priority_classes.get(obj.name), obj)
        elif isinstance(obj, PodDisruptionBudget):
            self.store_pdb(self.pdbs.get(obj.key), obj)
        elif isinstance(obj, PodGroup):
            self.store_pod_group(self.pod_groups.get(obj.key), obj)
        else:
            self.store_workload(self.workloads[obj.kind].get(obj.key), obj)

    def restore_pod_removal(self, uid: str, namespace: str, name: str, version: int) -> None:
        """`restore` of a pod's removal from what identifies it: the pod removed is the stored one
        (its recorded last state is not read), so a replica need not decode that record."""
        self.resource_version = max(self.resource_version, version)
        old = self.pods_by_uid.get(uid)
        if old is not None:
            # Listeners hear the removal with the deletion's own version, as the binder's did.
            old.metadata.resource_version = version
        same_name = self.pods.get((namespace, name))
        if same_name is not None and same_name.uid != uid:  # never expected: the log removes it first
            self.store_pod(same_name, None)
        if old is not None:
            self.store_pod(old, None)
