"""The cluster: objects, admission, node state and the binder's placement semantics.

`Cluster` is the single writer of placement decisions. It
  * admits objects (validation, PriorityClass rules, priority admission, ResourceQuota admission)
    and rejects bad ones without changing anything;
  * binds pods, refusing a bind that would overcommit a node (requests of bound *and terminating*
    pods never exceed allocatable) or bind a pod twice;
  * evicts preemption victims the way kube-scheduler does: DisruptionTarget condition with reason
    PreemptionByScheduler, then a graceful delete that keeps the victim's resources on the node
    for terminationGracePeriodSeconds;
  * sets and clears status.nominatedNodeName;
  * plays the node agent: bound pods become Running, terminating pods go away when their grace
    period ends;
  * records Kubernetes Events and keeps PodDisruptionBudget and ResourceQuota status current.

Every change is reported to listeners as a `Change`, which the scheduler queue turns into cluster
events and the services turn into Kafka records.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from podsched.admission.priority import (
    admit_pod,
    admit_pod_update,
    builtin_priority_classes,
    check_global_default,
    validate_priority_class,
    validate_priority_class_update,
)
from podsched.admission.resource_quota import (
    QuotaAdmissionConfig,
    add_usage,
    check_pod_create,
    matching_resources,
    pod_counts_for_compute,
    pod_usage,
    quota_matches_pod,
    quota_usage,
)
from podsched.api.errors import ApiError, FieldError
from podsched.api.labels import selector_matches
from podsched.api.types import (
    CONDITION_DISRUPTION_TARGET,
    CONDITION_POD_SCHEDULED,
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_PRIORITY_CLASS,
    KIND_RESOURCE_QUOTA,
    POD_FAILED,
    POD_RUNNING,
    REASON_PREEMPTION_BY_SCHEDULER,
    REASON_UNSCHEDULABLE,
    ApiObject,
    Node,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    PodDisruptionBudgetStatus,
    PriorityClass,
    ResourceQuota,
    ResourceQuotaStatus,
)
from podsched.api.validation import RenderedValue
from podsched.cluster import events as ev
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.resource import pod_requests
from podsched.plugins.node_resources import fits_request

CREATED = "created"
CONFIGURED = "configured"
UNCHANGED = "unchanged"
DELETED = "deleted"

# Change types reported to listeners.
ADDED = "ADDED"
MODIFIED = "MODIFIED"
REMOVED = "DELETED"


@dataclass(frozen=True, slots=True)
class Change:
    """One state change: `old` is None for an add, `new` is None for a removal."""

    type: str
    kind: str
    old: ApiObject | None
    new: ApiObject | None


@dataclass(frozen=True, slots=True)
class BindError(Exception):
    """A bind the binder refused; `reason` is one of the constants below."""

    reason: str
    message: str

    def __str__(self) -> str:
        return self.message


BIND_ALREADY_BOUND = "AlreadyBound"
BIND_NODE_NOT_FOUND = "NodeNotFound"
BIND_POD_NOT_FOUND = "PodNotFound"
BIND_WOULD_OVERCOMMIT = "WouldOvercommit"
BIND_POD_TERMINATING = "PodTerminating"


POD_UPDATE_FORBIDDEN = "pod updates may not change fields other than labels and annotations"


def pod_update(old: Pod, pod: Pod) -> Pod | None:
    """The stored pod after applying `pod` over `old`, or None if nothing changes. Pods are
    immutable apart from labels and annotations (as in Kubernetes): anything else is Invalid."""
    new = admit_pod_update(old, pod)
    new_spec = replace(new.spec, node_name=old.spec.node_name or new.spec.node_name)
    if new_spec != old.spec and replace(new_spec, node_name="") != replace(old.spec, node_name=""):
        raise ApiError.invalid(
            KIND_POD,
            pod.name,
            [FieldError("spec", POD_UPDATE_FORBIDDEN, kind="Forbidden")],
            pod.namespace,
        )
    if (new.metadata.labels, new.metadata.annotations) == (old.metadata.labels, old.metadata.annotations):
        return None
    return replace(
        old,
        metadata=replace(old.metadata, labels=dict(new.metadata.labels), annotations=dict(new.metadata.annotations)),
    )


def _with_condition(pod: Pod, condition: PodCondition) -> tuple[PodCondition, ...]:
    kept = tuple(c for c in pod.status.conditions if c.type != condition.type)
    return (*kept, condition)


def ref(obj: ApiObject) -> ev.ObjectReference:
    namespace = obj.metadata.namespace if obj.kind in (KIND_POD, KIND_PDB, KIND_RESOURCE_QUOTA) else ""
    return ev.ObjectReference(obj.kind, namespace, obj.metadata.name, obj.metadata.uid)


class Cluster:
    def __init__(
        self,
        clock: Callable[[], float],
        uid_factory: Callable[[], str] | None = None,
        authoritative: bool = True,
        quota_admission: QuotaAdmissionConfig | None = None,
    ) -> None:
        self.clock = clock
        # A replica (authoritative=False) follows the binder's log with `restore`: it never computes
        # PDB status itself but keeps the status the binder published.
        self.authoritative = authoritative
        counter = itertools.count(1)
        self.new_uid = uid_factory or (lambda: f"{next(counter):08x}-0000-4000-8000-000000000000")
        self.nodes: dict[str, Node] = {}
        self.pods: dict[tuple[str, str], Pod] = {}
        self.pods_by_uid: dict[str, Pod] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pdbs: dict[tuple[str, str], PodDisruptionBudget] = {}
        # ResourceQuotas, each carrying its status.used. Usage is derived state: every copy of the
        # cluster computes it from its own pods (the binder's log carries only the quota objects),
        # charging and releasing pods as they are stored and removed (`_charge_quotas`), so the same
        # log gives the same usage everywhere and admission costs O(quotas in the namespace).
        self.resource_quotas: dict[tuple[str, str], ResourceQuota] = {}
        self._quota_keys: dict[str, set[tuple[str, str]]] = {}  # namespace -> its quotas
        self.quota_admission = quota_admission or QuotaAdmissionConfig()
        self.node_infos: dict[str, NodeInfo] = {}
        self.history: dict[str, Pod] = {}  # uid -> last version of every pod ever created
        self.events: list[ev.Event] = []
        self.listeners: list[Callable[[Change], None]] = []
        # Called with every recorded Event, new or repeated (its count bumped).
        self.event_listeners: list[Callable[[ev.Event], None]] = []
        self.resource_version = 0  # the last one assigned (or restored)
        self._terminations: dict[str, float] = {}  # uid -> time the pod is removed
        self._dirty_pdb_namespaces: set[str] = set()
        for priority_class in builtin_priority_classes():
            self._store_priority_class(None, priority_class, notify=False)

    # --- plumbing -----------------------------------------------------------------------------

    def _notify(self, change: Change) -> None:
        if change.type == REMOVED and self.authoritative and change.old is not None:
            # A deletion is a change too: it gets its own version (as the API server's DELETED
            # watch event does), so followers of the log see versions strictly increase.
            self._stamp(change.old)
        for listener in self.listeners:
            listener(change)

    def _stamp(self, obj: Any) -> None:
        self.resource_version += 1
        obj.metadata.resource_version = self.resource_version

    def record(
        self,
        involved: ApiObject,
        type_: str,
        reason: str,
        message: str,
        controller: str = "",
        action: str = "",
        related: ApiObject | None = None,
    ) -> ev.Event:
        """Record an Event; a repeat of the object's last event (same reason and message) only bumps
        its count, as the Kubernetes event recorder does. Without a controller the event is the
        scheduler's: reported under the scheduler name of the pod that acted (the preemptor for a
        victim's Preempted), as each kube-scheduler profile records with its own name."""
        if not controller:
            actor = related if related is not None else involved
            controller = actor.spec.scheduler_name if isinstance(actor, Pod) else ev.SCHEDULER_CONTROLLER
        now = self.clock()
        involved_ref = ref(involved)
        for previous in reversed(self.events[-50:]):
            if previous.involved_object.uid == involved_ref.uid:
                if previous.reason == reason and previous.message == message:
                    previous.count += 1
                    previous.last_time = now
                    self._notify_event(previous)
                    return previous
                break
        event = ev.Event(
            type_,
            reason,
            message,
            involved_ref,
            now,
            controller,
            action,
            ref(related) if related is not None else None,
            1,
            now,
            len(self.events),
        )
        self.events.append(event)
        self._notify_event(event)
        return event

    def _notify_event(self, event: ev.Event) -> None:
        for listener in self.event_listeners:
            listener(event)

    # --- reads --------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return Snapshot.from_map(self.node_infos)

    def pdb_list(self) -> list[PodDisruptionBudget]:
        self.refresh_pdb_status()
        return list(self.pdbs.values())

    def apply(self, obj: ApiObject) -> tuple[str, ApiObject]:
        """Create or update one decoded, validated object. Returns (action, stored object).
        Raises ApiError and changes nothing if the object is not admitted."""
        if isinstance(obj, PriorityClass):
            return self._apply_priority_class(obj)
        if isinstance(obj, Node):
            return self._apply_node(obj)
        if isinstance(obj, PodDisruptionBudget):
            return self._apply_pdb(obj)
        if isinstance(obj, ResourceQuota):
            return self._apply_resource_quota(obj)
        return self._apply_pod(obj)

    def _new_meta(self, obj: Any, old: Any | None) -> None:
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
        self._stamp(obj)

    def _store_priority_class(self, old: PriorityClass | None, new: PriorityClass, notify: bool = True) -> None:
        self._new_meta(new, old)
        self.priority_classes[new.name] = new
        if notify:
            self._notify(Change(MODIFIED if old else ADDED, KIND_PRIORITY_CLASS, old, new))

    def _apply_priority_class(self, pc: PriorityClass) -> tuple[str, ApiObject]:
        old = self.priority_classes.get(pc.name)
        validate_priority_class(pc)
        if old is not None:
            validate_priority_class_update(old, pc)
            if (old.value, old.global_default, old.description, old.preemption_policy) == (
                pc.value,
                pc.global_default,
                pc.description,
                pc.preemption_policy,
            ):
                return UNCHANGED, old
        check_global_default(self.priority_classes.values(), pc)
        self._store_priority_class(old, pc)
        return (CONFIGURED if old else CREATED), pc

    def _apply_node(self, node: Node) -> tuple[str, ApiObject]:
        old = self.nodes.get(node.name)
        if old is not None and (old.metadata.labels, old.spec, old.status) == (
            node.metadata.labels,
            node.spec,
            node.status,
        ):
            return UNCHANGED, old
        self._new_meta(node, old)
        self._store_node(old, node)
        return (CONFIGURED if old else CREATED), node

    def _store_node(self, old: Node | None, node: Node) -> None:
        self.nodes[node.name] = node
        if old is None:
            info = NodeInfo(node)
            self.node_infos[node.name] = info
            # Pods created earlier with this nodeName (already placed) now land on it.
            for pod in self.pods.values():
                if pod.spec.node_name == node.name and pod.status.phase != POD_FAILED:
                    info.add_pod(PodInfo(pod))
        else:
            self.node_infos[node.name].set_node(node)
        self._notify(Change(MODIFIED if old else ADDED, KIND_NODE, old, node))

    def _apply_pdb(self, pdb: PodDisruptionBudget) -> tuple[str, ApiObject]:
        old = self.pdbs.get(pdb.key)
        if old is not None and (old.selector, old.min_available, old.max_unavailable) == (
            pdb.selector,
            pdb.min_available,
            pdb.max_unavailable,
        ):
            return UNCHANGED, old
        self._new_meta(pdb, old)
        # The API server's PDB strategy: generation 1 on create, +1 on every spec change.
        pdb.metadata.generation = old.metadata.generation + 1 if old is not None else 1
        if old is not None:
            pdb.status = old.status  # eviction bookkeeping (disruptedPods) carries over
        if self.authoritative:
            # The disruption controller's sync of the new spec, in the same write: the stored object,
            # the change listeners hear and the answer to the writer all carry the status at once.
            pdb.status = self._pdb_status(pdb)
        self.pdbs[pdb.key] = pdb
        self._notify(Change(MODIFIED if old else ADDED, KIND_PDB, old, pdb))
        return (CONFIGURED if old else CREATED), pdb

    # --- ResourceQuota ---------------------------------------------------------------------------

    def quotas_in(self, namespace: str) -> list[ResourceQuota]:
        """The namespace's quotas in name order, each with its current status."""
        keys = self._quota_keys.get(namespace)
        return [self.resource_quotas[key] for key in sorted(keys)] if keys else []

    def _with_status(self, quota: ResourceQuota) -> ResourceQuota:
        hard = dict(quota.hard)
        return replace(quota, status=ResourceQuotaStatus(hard, quota_usage(quota, self.pods.values())))

    def _store_resource_quota(self, old: ResourceQuota | None, quota: ResourceQuota) -> ResourceQuota:
        """Store a quota with its status computed from the stored pods, and notify."""
        stored = self._with_status(quota)
        self.resource_quotas[stored.key] = stored
        self._quota_keys.setdefault(stored.namespace, set()).add(stored.key)
        self._notify(Change(MODIFIED if old else ADDED, KIND_RESOURCE_QUOTA, old, stored))
        return stored

    def _remove_resource_quota(self, key: tuple[str, str]) -> ResourceQuota | None:
        quota = self.resource_quotas.pop(key, None)
        if quota is not None:
            keys = self._quota_keys.get(quota.namespace, set())
            keys.discard(key)
            if not keys:
                self._quota_keys.pop(quota.namespace, None)
            self._notify(Change(REMOVED, KIND_RESOURCE_QUOTA, quota, None))
        return quota

    def _apply_resource_quota(self, quota: ResourceQuota) -> tuple[str, ApiObject]:
        old = self.resource_quotas.get(quota.key)
        if old is not None:
            validate_resource_quota_update(old, quota)
            if quota_spec(old) == quota_spec(quota):
                return UNCHANGED, old
        self._new_meta(quota, old)
        return (CONFIGURED if old else CREATED), self._store_resource_quota(old, quota)

    def _charge_quotas(self, pod: Pod, sign: int) -> None:
        """Add (1) or release (-1) the pod's usage in every quota of its namespace that matches it.
        Quotas are values: the charged quota replaces the stored one. Not a change listeners hear
        of (no record, no resource version): usage follows the pods, which are recorded."""
        keys = self._quota_keys.get(pod.namespace)
        if not keys:
            return
        usage = pod_usage(pod)
        for key in keys:
            quota = self.resource_quotas[key]
            if not quota_matches_pod(quota, pod):
                continue
            used = dict(quota.status.used)
            add_usage(used, usage, matching_resources(quota.hard), sign)
            self.resource_quotas[key] = replace(quota, status=ResourceQuotaStatus(quota.status.hard, used))

    # --- pods ------------------------------------------------------------------------------------

    def admit_new_pod(self, pod: Pod) -> Pod:
        """Admission of a pod CREATE, in the API server's order: Priority (resolves the class, which
        quota scopes then match), then ResourceQuota against the namespace's quotas as they stand.
        Returns the admitted pod; raises ApiError. Changes nothing: the binder calls it in its
        serialized write path (`apply`), so two racing creates are checked one after the other."""
        admitted = admit_pod(pod, self.priority_classes)
        check_pod_create(admitted, self.quotas_in(admitted.namespace), self.quota_admission)
        return admitted

    def _apply_pod(self, pod: Pod) -> tuple[str, ApiObject]:
        old = self.pods.get(pod.key)
        if old is not None:
            # Upstream charges quota on CREATE only: an update never changes what a pod uses here.
            return self._update_pod_spec(old, pod)
        admitted = self.admit_new_pod(pod)
        self._new_meta(admitted, None)
        if admitted.spec.node_name:
            admitted = self._admit_placed_pod(admitted)
        self._store_pod(None, admitted)
        return CREATED, admitted

    def _update_pod_spec(self, old: Pod, pod: Pod) -> tuple[str, ApiObject]:
        updated = pod_update(old, pod)
        if updated is None:
            return UNCHANGED, old
        self._stamp(updated)
        self._store_pod(old, updated)
        return CONFIGURED, updated

    def _admit_placed_pod(self, pod: Pod) -> Pod:
        """A pod created with spec.nodeName skips the scheduler. Like the kubelet's admission, the
        node agent refuses it (phase Failed, OutOf<resource>) if it does not fit, so the node is
        never overcommitted."""
        info = self.node_infos.get(pod.spec.node_name)
        if info is None:
            return pod
        insufficient = fits_request(pod_requests(pod), info)
        if not insufficient:
            start = pod.status.start_time if pod.status.start_time is not None else self.clock()
            return replace(pod, status=replace(pod.status, phase=POD_RUNNING, start_time=start))
        first = insufficient[0]
        message = (
            f"Pod was rejected: Node didn't have enough resource: {first.resource}, requested: "
            f"{first.requested}, used: {first.used}, capacity: {first.capacity}"
        )
        self.record(pod, ev.WARNING, ev.OUT_OF_RESOURCES, message, ev.NODE_AGENT_CONTROLLER)
        return replace(pod, status=replace(pod.status, phase=POD_FAILED))

    def _occupies_node(self, pod: Pod) -> bool:
        return bool(pod.spec.node_name) and pod.status.phase != POD_FAILED and pod.spec.node_name in self.node_infos

    def _store_pod(self, old: Pod | None, new: Pod | None) -> None:
        """Replace `old` by `new` everywhere (NodeInfo, indexes, quota usage, history) and notify."""
        recharge = self._quota_keys and not (old is not None and new is not None and _charged_alike(old, new))
        if old is not None:
            if self._occupies_node(old):
                self.node_infos[old.spec.node_name].remove_pod(old)
            self._dirty_pdb_namespaces.add(old.namespace)
            if recharge:
                self._charge_quotas(old, -1)
        if new is not None:
            if recharge:
                self._charge_quotas(new, 1)
            self.pods[new.key] = new
            self.pods_by_uid[new.uid] = new
            self.history[new.uid] = new
            if self._occupies_node(new):
                self.node_infos[new.spec.node_name].add_pod(PodInfo(new))
            self._dirty_pdb_namespaces.add(new.namespace)
        elif old is not None:
            self.pods.pop(old.key, None)
            self.pods_by_uid.pop(old.uid, None)
            self.history[old.uid] = old
        change_type = ADDED if old is None else (REMOVED if new is None else MODIFIED)
        self._notify(Change(change_type, KIND_POD, old, new))

    def _update_pod(self, pod: Pod, **status_changes: Any) -> Pod:
        new = replace(pod, status=replace(pod.status, **status_changes))
        self._stamp(new)
        self._store_pod(pod, new)
        return new

    def delete(self, kind: str, namespace: str, name: str, grace_period: int | None = None) -> ApiObject:
        """Delete an object. A bound pod terminates gracefully (it keeps its resources until its grace
        period ends); an unbound pod goes at once. Deleting a PriorityClass leaves pods untouched."""
        if kind == KIND_POD:
            pod = self.pods.get((namespace, name))
            if pod is None:
                raise ApiError.not_found(KIND_POD, name, namespace)
            return self._delete_pod(pod, grace_period)
        if kind == KIND_NODE:
            node = self.nodes.pop(name, None)
            if node is None:
                raise ApiError.not_found(KIND_NODE, name)
            self.node_infos.pop(name, None)
            self._notify(Change(REMOVED, KIND_NODE, node, None))
            return node
        if kind == KIND_PRIORITY_CLASS:
            pc = self.priority_classes.get(name)
            if pc is None:
                raise ApiError.not_found(KIND_PRIORITY_CLASS, name)
            if name in {b.name for b in builtin_priority_classes()}:
                raise ApiError.forbidden(
                    KIND_PRIORITY_CLASS, name, "this is a system priority class and cannot be deleted"
                )
            del self.priority_classes[name]
            self._notify(Change(REMOVED, KIND_PRIORITY_CLASS, pc, None))
            return pc
        if kind == KIND_PDB:
            pdb = self.pdbs.pop((namespace, name), None)
            if pdb is None:
                raise ApiError.not_found(KIND_PDB, name, namespace)
            self._notify(Change(REMOVED, KIND_PDB, pdb, None))
            return pdb
        if kind == KIND_RESOURCE_QUOTA:
            quota = self._remove_resource_quota((namespace, name))
            if quota is None:
                raise ApiError.not_found(KIND_RESOURCE_QUOTA, name, namespace)
            return quota
        raise ApiError.bad_request(kind, name, f'the server doesn\'t have a resource type "{kind}"')

    def _delete_pod(self, pod: Pod, grace_period: int | None) -> Pod:
        grace = pod.spec.termination_grace_period_seconds if grace_period is None else grace_period
        if grace_period is not None and grace_period < 0:
            raise ApiError.bad_request(KIND_POD, pod.name, "--grace-period must be >= 0", pod.namespace)
        if not self._occupies_node(pod) or grace == 0 or pod.status.phase == POD_FAILED:
            self._remove_pod(pod)
            return pod
        return self._start_termination(pod, grace)

    def _start_termination(self, pod: Pod, grace: int, conditions: tuple[PodCondition, ...] | None = None) -> Pod:
        now = self.clock()
        if pod.metadata.deletion_timestamp is not None:
            return pod
        self.record(
            pod,
            ev.NORMAL,
            ev.KILLING,
            f"Stopping container {pod.spec.containers[0].name if pod.spec.containers else pod.name}",
            ev.NODE_AGENT_CONTROLLER,
        )
        new = replace(
            pod,
            metadata=replace(pod.metadata, deletion_timestamp=now, deletion_grace_period_seconds=grace),
            status=replace(pod.status, conditions=conditions if conditions is not None else pod.status.conditions),
        )
        self._stamp(new)
        self._terminations[new.uid] = now + grace
        self._store_pod(pod, new)
        if grace == 0:
            self._remove_pod(new)
        return new

    def _remove_pod(self, pod: Pod) -> None:
        self._terminations.pop(pod.uid, None)
        self.record(pod, ev.NORMAL, ev.DELETED, f"Pod {pod.namespace}/{pod.name} deleted", ev.BINDER_CONTROLLER)
        self._store_pod(pod, None)
        if pod.status.phase == POD_RUNNING:
            # The node agent moves a pod stopped by deletion to a terminal phase (KEP-3329), which
            # is the last state anyone sees of it.
            self.history[pod.uid] = replace(pod, status=replace(pod.status, phase=POD_FAILED))

    # --- binder semantics ---------------------------------------------------------------------

    def bind(self, pod_uid: str, node_name: str) -> Pod:
        """Bind a pending pod. Refuses (BindError, nothing changed) a pod already bound or terminating,
        an unknown node, or a bind that would overcommit the node: requests of bound plus
        terminating pods must stay within allocatable."""
        pod = self.pods_by_uid.get(pod_uid)
        if pod is None:
            raise BindError(BIND_POD_NOT_FOUND, f"pod with uid {pod_uid} not found")
        if pod.spec.node_name:
            raise BindError(
                BIND_ALREADY_BOUND, f'pod {pod.namespace}/{pod.name} is already assigned to node "{pod.spec.node_name}"'
            )
        if pod.metadata.deletion_timestamp is not None:
            raise BindError(BIND_POD_TERMINATING, f"pod {pod.namespace}/{pod.name} is being deleted")
        info = self.node_infos.get(node_name)
        if info is None:
            raise BindError(BIND_NODE_NOT_FOUND, f'node "{node_name}" not found')
        insufficient = fits_request(pod_requests(pod), info)
        if insufficient:
            reasons = ", ".join(i.reason for i in insufficient)
            raise BindError(
                BIND_WOULD_OVERCOMMIT,
                f"binding {pod.namespace}/{pod.name} to {node_name} would overcommit it: {reasons}",
            )
        now = self.clock()
        status = replace(
            pod.status,
            nominated_node_name="",  # cleared once bound (ClearingNominatedNodeNameAfterBinding)
            conditions=_with_condition(pod, PodCondition(CONDITION_POD_SCHEDULED, "True", last_transition_time=now)),
        )
        # The node agent starts a bound pod at once.
        status = replace(status, phase=POD_RUNNING, start_time=now)
        new = replace(pod, spec=replace(pod.spec, node_name=node_name), status=status)
        self._stamp(new)
        self._store_pod(pod, new)
        self.record(
            new,
            ev.NORMAL,
            ev.SCHEDULED,
            f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}",
            action="Binding",
        )
        return new

    def mark_unschedulable(
        self, pod_uid: str, message: str, nominated_node: str = "", victims: int = 0, clear_nomination: str = ""
    ) -> Pod | None:
        """A failed attempt, written as upstream's handleSchedulingFailure writes it: a FailedScheduling
        event and one status update with PodScheduled=False/Unschedulable and, when PostFilter
        nominated a node, nominatedNodeName (after a Nominated event), or, given a `clear_nomination`
        reason, the pod's nomination cleared (after a NominationCleared event). A status that already
        says all that is not written again."""
        pod = self.pods_by_uid.get(pod_uid)
        if pod is None or pod.spec.node_name:
            return pod
        changes: dict[str, Any] = {}
        if nominated_node and pod.status.nominated_node_name != nominated_node:
            self._record_nomination(pod, nominated_node, victims)
            changes["nominated_node_name"] = nominated_node
        elif clear_nomination and pod.status.nominated_node_name:
            self._record_nomination_cleared(pod, clear_nomination)
            changes["nominated_node_name"] = ""
        self.record(pod, ev.WARNING, ev.FAILED_SCHEDULING, message, action="Scheduling")
        existing = pod.condition(CONDITION_POD_SCHEDULED)
        if existing is None or (existing.status, existing.reason, existing.message) != (
            "False",
            REASON_UNSCHEDULABLE,
            message,
        ):
            condition = PodCondition(CONDITION_POD_SCHEDULED, "False", REASON_UNSCHEDULABLE, message, self.clock())
            changes["conditions"] = _with_condition(pod, condition)
        return self._update_pod(pod, **changes) if changes else pod

    def _record_nomination(self, pod: Pod, node_name: str, victims: int) -> None:
        self.record(
            pod,
            ev.NORMAL,
            ev.NOMINATED,
            f"Nominated to node {node_name} after preempting {victims} pod(s)",
            action="Nominating",
        )

    def nominate(self, pod_uid: str, node_name: str, victims: int = 0) -> Pod | None:
        pod = self.pods_by_uid.get(pod_uid)
        if pod is None or pod.spec.node_name or pod.status.nominated_node_name == node_name:
            return pod
        if node_name:
            self._record_nomination(pod, node_name, victims)
        return self._update_pod(pod, nominated_node_name=node_name)

    def clear_nomination(self, pod_uid: str, because: str) -> Pod | None:
        pod = self.pods_by_uid.get(pod_uid)
        if pod is None or not pod.status.nominated_node_name:
            return pod
        self._record_nomination_cleared(pod, because)
        return self._update_pod(pod, nominated_node_name="")

    def _record_nomination_cleared(self, pod: Pod, because: str) -> None:
        self.record(
            pod,
            ev.NORMAL,
            ev.NOMINATION_CLEARED,
            f"Nomination to node {pod.status.nominated_node_name} cleared: {because}",
            action="ClearingNomination",
        )

    def preempt_victim(self, victim_uid: str, preemptor: Pod, node_name: str) -> Pod | None:
        """prepareCandidate for one victim: DisruptionTarget condition, a Preempted event naming the
        preemptor and node, then a graceful delete. Victims already terminating are left alone."""
        victim = self.pods_by_uid.get(victim_uid)
        if victim is None or victim.metadata.deletion_timestamp is not None:
            return victim
        if victim.priority >= preemptor.priority:
            raise BindError(
                "NotLowerPriority",
                f"victim {victim.namespace}/{victim.name} does not have lower priority than its preemptor",
            )
        condition = PodCondition(
            CONDITION_DISRUPTION_TARGET,
            "True",
            REASON_PREEMPTION_BY_SCHEDULER,
            f"{preemptor.spec.scheduler_name}: preempting to accommodate a higher priority pod",
            self.clock(),
        )
        self.record(
            victim,
            ev.NORMAL,
            ev.PREEMPTED,
            f"Preempted by pod {preemptor.uid} on node {node_name}",
            action="Preempting",
            related=preemptor,
        )
        return self._start_termination(
            victim, victim.spec.termination_grace_period_seconds, _with_condition(victim, condition)
        )

    # --- following the binder's log -------------------------------------------------------------

    def restore(self, change_type: str, obj: ApiObject) -> None:
        """Apply one change exactly as the binder recorded it: no admission, no events, the recorded
        resource version. Replicas follow the log with this; a restarting binder rebuilds with it.
        Listeners hear the change as if it had happened here."""
        self.resource_version = max(self.resource_version, obj.metadata.resource_version)
        if isinstance(obj, Pod):
            self._restore_pod(change_type, obj)
        elif isinstance(obj, Node):
            old_node = self.nodes.get(obj.name)
            if change_type == REMOVED:
                if old_node is not None:
                    del self.nodes[obj.name]
                    self.node_infos.pop(obj.name, None)
                    self._notify(Change(REMOVED, KIND_NODE, old_node, None))
            else:
                self._store_node(old_node, obj)
        elif isinstance(obj, ResourceQuota):
            if change_type == REMOVED:
                self._remove_resource_quota(obj.key)
            else:
                # The recorded status is the binder's view at the time; this copy derives its own
                # from its pods, which are the same pods at this point of the log.
                self._store_resource_quota(self.resource_quotas.get(obj.key), obj)
        elif isinstance(obj, PriorityClass):
            old_class = self.priority_classes.get(obj.name)
            if change_type == REMOVED:
                if self.priority_classes.pop(obj.name, None) is not None:
                    self._notify(Change(REMOVED, KIND_PRIORITY_CLASS, old_class, None))
            else:
                self.priority_classes[obj.name] = obj
                self._notify(Change(MODIFIED if old_class else ADDED, KIND_PRIORITY_CLASS, old_class, obj))
        else:
            old_pdb = self.pdbs.get(obj.key)
            if change_type == REMOVED:
                if self.pdbs.pop(obj.key, None) is not None:
                    self._notify(Change(REMOVED, KIND_PDB, old_pdb, None))
            else:
                self.pdbs[obj.key] = obj
                self._notify(Change(MODIFIED if old_pdb else ADDED, KIND_PDB, old_pdb, obj))

    def _restore_pod(self, change_type: str, pod: Pod) -> None:
        old = self.pods_by_uid.get(pod.uid)
        same_name = self.pods.get(pod.key)
        if same_name is not None and same_name.uid != pod.uid:  # never expected: the log removes it first
            self._store_pod(same_name, None)
        if change_type == REMOVED:
            self._terminations.pop(pod.uid, None)
            if old is not None:
                self._store_pod(old, None)
            self.history[pod.uid] = pod
            return
        self._store_pod(old, pod)
        deletion = pod.metadata.deletion_timestamp
        if deletion is not None and self._occupies_node(pod):
            grace = pod.metadata.deletion_grace_period_seconds
            grace = pod.spec.termination_grace_period_seconds if grace is None else grace
            self._terminations[pod.uid] = deletion + grace
        else:
            self._terminations.pop(pod.uid, None)

    def restore_event(self, event: ev.Event) -> None:
        """Take one Event from the binder's log (a repeat carries the sequence it was first given)."""
        if event.sequence < len(self.events):
            self.events[event.sequence] = event
        elif event.sequence == len(self.events):
            self.events.append(event)
        else:
            raise ValueError(f"event sequence {event.sequence} skips {len(self.events)}..{event.sequence - 1}")
        self._notify_event(event)

    # --- time ---------------------------------------------------------------------------------

    def next_termination_time(self) -> float | None:
        return min(self._terminations.values(), default=None)

    def complete_terminations(self) -> int:
        """Remove every terminating pod whose grace period has ended."""
        now = self.clock()
        due = sorted((t, uid) for uid, t in self._terminations.items() if t <= now)
        for _, uid in due:
            pod = self.pods_by_uid.get(uid)
            if pod is not None:
                self._remove_pod(pod)
            else:
                self._terminations.pop(uid, None)
        return len(due)

    # --- PodDisruptionBudget status -----------------------------------------------------------

    def _pdb_status(self, pdb: PodDisruptionBudget) -> PodDisruptionBudgetStatus:
        return compute_pdb_status(pdb, (p for p in self.pods.values() if p.namespace == pdb.namespace), self.clock())

    def refresh_pdb_status(self) -> None:
        """The disruption controller: recompute the status of every PDB in a namespace whose pods
        changed since the last refresh, and write each status that differs as a change of its own
        (the controller's UpdateStatus). A PDB's own create or spec change is synced as it is stored
        (`_apply_pdb`). Only the authoritative copy computes; replicas keep the status in the log."""
        if not self._dirty_pdb_namespaces or not self.authoritative:
            return
        dirty = self._dirty_pdb_namespaces
        self._dirty_pdb_namespaces = set()
        for key, pdb in list(self.pdbs.items()):
            if pdb.namespace in dirty:
                status = self._pdb_status(pdb)
                if status != pdb.status:
                    # New metadata too: the version stamped on `new` must not change `pdb`, which
                    # listeners get as the change's old state.
                    new = replace(pdb, metadata=replace(pdb.metadata), status=status)
                    self._stamp(new)
                    self.pdbs[key] = new
                    self._notify(Change(MODIFIED, KIND_PDB, pdb, new))


def _charged_alike(old: Pod, new: Pod) -> bool:
    """Whether quota sees no difference between two versions of a pod: same spec and manifest
    (pods are values: a status-only update keeps both objects), and both counted or both terminal."""
    return (
        old.spec is new.spec and old.source is new.source and pod_counts_for_compute(old) == pod_counts_for_compute(new)
    )


def quota_spec(quota: ResourceQuota) -> tuple[object, ...]:
    """What an apply of a quota can change: a quota whose spec and labels are the same is unchanged."""
    return (
        quota.metadata.labels,
        quota.metadata.annotations,
        quota.hard,
        quota.binary_hard,
        quota.scopes,
        quota.scope_selector,
    )


def validate_resource_quota_update(old: ResourceQuota, new: ResourceQuota) -> None:
    """ValidateResourceQuotaUpdate beyond what decoding checks: spec.scopes may not change."""
    if set(old.scopes) != set(new.scopes):
        shown = RenderedValue(list(new.scopes) or None)
        raise ApiError.invalid(
            KIND_RESOURCE_QUOTA,
            new.name,
            [FieldError("spec.scopes", "field is immutable", shown)],
            new.namespace,
        )


# The disruption controller's DeletionTimeout: how long a pod listed in status.disruptedPods (evicted
# through the eviction API) is expected to take to get its deletionTimestamp before the entry is dropped.
DISRUPTION_DELETION_TIMEOUT = 120.0


def _scaled(value: int | str, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, "NN%" of `total` rounded up or down."""
    if isinstance(value, int):
        return value
    percent = int(value.rstrip("%"))
    scaled = total * percent
    return -(-scaled // 100) if round_up else scaled // 100


def compute_pdb_status(pdb: PodDisruptionBudget, pods: Iterable[Pod], now: float) -> PodDisruptionBudgetStatus:
    """The disruption controller's trySync (pkg/controller/disruption) for `pods` (the namespace's pods).

    Which pods: every pod the selector matches, in any phase (the controller lists them all, so a
    Failed pod still counts as expected; an empty selector matches every pod, a missing one none).

    expectedPods and desiredHealthy (getExpectedPodCount):
      * integer minAvailable: expected = the matching pods, desired = minAvailable;
      * maxUnavailable, or a percentage minAvailable: expected = the sum of the scale of the pods'
        controllers (getExpectedScale). podsched stores no workload controllers, so every pod is
        unmanaged as upstream calls it (it warns with an UnmanagedPods event and leaves such pods out
        of the sum): expected = 0, desired = maxUnavailable subtracted from 0 and floored at 0, or the
        percentage of 0. With 0 expected, no disruption is allowed: upstream's documented limitation
        that budgets of bare pods can only use an integer minAvailable.

    currentHealthy (countHealthyPods): matching pods not being deleted, not listed in disruptedPods
    within DISRUPTION_DELETION_TIMEOUT, and ready. podsched has no Ready condition: its node agent
    starts a bound pod at once, so Running is ready (as the scheduler and `simulate` see it).

    disruptedPods (buildDisruptedPodMap) keeps the entries of matching pods not yet being deleted
    whose timeout has not passed. disruptionsAllowed = currentHealthy - desiredHealthy, but 0 when
    that is negative or nothing is expected. observedGeneration is the PDB's generation."""
    selector = pdb.selector
    matching = [p for p in pods if selector_matches(selector, p.labels)]
    if isinstance(pdb.min_available, int):
        expected, desired = len(matching), pdb.min_available
    elif pdb.min_available is not None:
        expected = 0
        desired = _scaled(pdb.min_available, expected, round_up=True)
    elif pdb.max_unavailable is not None:
        expected = 0
        desired = max(0, expected - _scaled(pdb.max_unavailable, expected, round_up=True))
    else:
        expected = desired = 0
    disrupted = {
        p.name: pdb.status.disrupted_pods[p.name]
        for p in matching
        if p.metadata.deletion_timestamp is None
        and p.name in pdb.status.disrupted_pods
        and pdb.status.disrupted_pods[p.name] + DISRUPTION_DELETION_TIMEOUT >= now
    }
    healthy = sum(
        1
        for p in matching
        if p.metadata.deletion_timestamp is None
        and not (p.name in disrupted and disrupted[p.name] + DISRUPTION_DELETION_TIMEOUT > now)
        and p.status.phase == POD_RUNNING
    )
    allowed = healthy - desired
    return PodDisruptionBudgetStatus(
        current_healthy=healthy,
        desired_healthy=desired,
        disruptions_allowed=allowed if expected > 0 and allowed > 0 else 0,
        expected_pods=expected,
        disrupted_pods=disrupted,
        observed_generation=pdb.metadata.generation,
    )
