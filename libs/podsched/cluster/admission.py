"""Admission: whether a write is accepted, and as what, decided once for `apply` and `--dry-run=server`.

Per kind, in the API server's order: validation (and validation of an update against the stored
object), the PriorityClass rules, then for a pod CREATE Priority admission (which resolves the
class that quota scopes match) and ResourceQuota admission against the namespace's quotas as they
stand. Admission reads the store and changes nothing; `Cluster.apply` then writes what it admitted,
and the dry run answers with it. The binder admits in its serialized write path, so two racing
creates are checked one after the other.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from podsched.admission.priority import (
    admit_pod,
    admit_pod_group,
    admit_pod_update,
    builtin_priority_classes,
    check_global_default,
    validate_priority_class,
    validate_priority_class_update,
)
from podsched.admission.resource_quota import QuotaAdmissionConfig, check_pod_create
from podsched.api.errors import ApiError, FieldError
from podsched.api.types import (
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_POD_GROUP,
    KIND_PRIORITY_CLASS,
    KIND_RESOURCE_QUOTA,
    WORKLOAD_KINDS,
    ApiObject,
    Deployment,
    Job,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    ReplicaSet,
    ResourceQuota,
    Workload,
)
from podsched.api.validation import RenderedValue
from podsched.cluster.names import generate_name
from podsched.cluster.store import Store

# What a write did, as kubectl reports it.
CREATED = "created"
CONFIGURED = "configured"
UNCHANGED = "unchanged"
DELETED = "deleted"

POD_UPDATE_FORBIDDEN = "pod updates may not change fields other than labels and annotations"

_BUILTIN_PRIORITY_CLASSES = frozenset(b.name for b in builtin_priority_classes())


@dataclass(frozen=True, slots=True)
class Admitted:
    """An admitted write. `obj` is the object as admitted (for an unchanged priority class or pod,
    the stored one); `old` is the stored object it replaces, None for a create."""

    action: str  # CREATED, CONFIGURED or UNCHANGED
    obj: ApiObject
    old: ApiObject | None


def admit(store: Store, obj: ApiObject, quota_config: QuotaAdmissionConfig) -> Admitted:
    """Admit one decoded, validated object against `store`. Raises ApiError if it is not admitted.
    An object without a name but with metadata.generateName is a create under a generated name."""
    if not obj.metadata.name and obj.metadata.generate_name:
        obj.metadata.name = _generated_name(store, obj)
    if isinstance(obj, Pod):  # first: nearly every write is a pod's
        old_pod = store.pods.get(obj.key)
        if old_pod is None:
            return Admitted(CREATED, admit_new_pod(store, obj, quota_config), None)
        # Upstream charges quota on CREATE only: an update never changes what a pod uses here.
        updated = pod_update(old_pod, obj)
        return Admitted(UNCHANGED, old_pod, old_pod) if updated is None else Admitted(CONFIGURED, updated, old_pod)
    if isinstance(obj, ReplicaSet | Deployment | Job):
        return admit_workload(store, obj)
    if isinstance(obj, PriorityClass):
        return _admit_priority_class(store, obj)
    if isinstance(obj, PodGroup):
        return _admit_pod_group(store, obj)
    if isinstance(obj, Node):
        old_node = store.nodes.get(obj.name)
        same_node = old_node is not None and (old_node.metadata.labels, old_node.spec, old_node.status) == (
            obj.metadata.labels,
            obj.spec,
            obj.status,
        )
        return Admitted(_action(old_node, same_node), obj, old_node)
    if isinstance(obj, PodDisruptionBudget):
        old_pdb = store.pdbs.get(obj.key)
        same_pdb = old_pdb is not None and (old_pdb.selector, old_pdb.min_available, old_pdb.max_unavailable) == (
            obj.selector,
            obj.min_available,
            obj.max_unavailable,
        )
        return Admitted(_action(old_pdb, same_pdb), obj, old_pdb)
    assert isinstance(obj, ResourceQuota)
    old_quota = store.resource_quotas.get(obj.key)
    if old_quota is not None:
        validate_resource_quota_update(old_quota, obj)
    return Admitted(
        _action(old_quota, old_quota is not None and quota_spec(old_quota) == quota_spec(obj)), obj, old_quota
    )


def _generated_name(store: Store, obj: ApiObject) -> str:
    meta = obj.metadata
    if isinstance(obj, Pod):
        taken: set[str] = {name for namespace, name in store.pods if namespace == meta.namespace}
    else:
        taken = {name for namespace, name in store.workloads.get(obj.kind, {}) if namespace == meta.namespace}
    return generate_name(meta.generate_name, meta.namespace, store.resource_version, taken)


def admit_workload(store: Store, obj: Workload) -> Admitted:
    """A ReplicaSet, Deployment or Job create or update. The status is the controllers': a create
    starts with none, an update keeps the stored one. The selector may not change (apps/v1), and a
    Job's template and completions may not either (ValidateJobUpdate)."""
    old = store.workloads[obj.kind].get(obj.key)
    if old is None:
        obj.status = type(obj.status)()
        return Admitted(CREATED, obj, None)
    errors: list[FieldError] = []
    if isinstance(obj, Job):
        assert isinstance(old, Job)
        if obj.template != old.template:
            errors.append(FieldError("spec.template", "field is immutable", RenderedValue(obj.template.manifest)))
        if obj.completions != old.completions:
            errors.append(FieldError("spec.completions", "field is immutable", obj.completions))
    elif obj.selector != old.selector:
        errors.append(FieldError("spec.selector", "field is immutable", RenderedValue(None)))
    if errors:
        raise ApiError.invalid(obj.kind, obj.name, errors, obj.namespace)
    obj.status = old.status
    if workload_spec(obj) == workload_spec(old) and obj.metadata.labels == old.metadata.labels:
        return Admitted(UNCHANGED, old, old)
    return Admitted(CONFIGURED, obj, old)


def workload_spec(obj: Workload) -> tuple[object, ...]:
    """What an apply of a workload can change, besides labels."""
    if isinstance(obj, Job):
        return (
            obj.parallelism,
            obj.completions,
            obj.backoff_limit,
            obj.active_deadline_seconds,
            obj.pod_failure_policy,
        )
    if isinstance(obj, Deployment):
        return (obj.replicas, obj.template, obj.strategy, obj.max_surge, obj.max_unavailable)
    return (obj.replicas, obj.template)


def _action(old: ApiObject | None, same: bool) -> str:
    if old is None:
        return CREATED
    return UNCHANGED if same else CONFIGURED


def _admit_priority_class(store: Store, pc: PriorityClass) -> Admitted:
    old = store.priority_classes.get(pc.name)
    validate_priority_class(pc)
    if old is not None:
        validate_priority_class_update(old, pc)
        if (old.value, old.global_default, old.description, old.preemption_policy) == (
            pc.value,
            pc.global_default,
            pc.description,
            pc.preemption_policy,
        ):
            return Admitted(UNCHANGED, old, old)
    check_global_default(store.priority_classes.values(), pc)
    return Admitted(CONFIGURED if old else CREATED, pc, old)


def _admit_pod_group(store: Store, group: PodGroup) -> Admitted:
    """A PodGroup create (Priority admission resolves its class; the status starts empty) or update
    (ValidatePodGroupUpdate: everything but gang.minCount and labels is immutable; the status is
    the scheduler's and stays as stored)."""
    old = store.pod_groups.get(group.key)
    if old is None:
        admitted = admit_pod_group(group, store.priority_classes)
        admitted.status = type(admitted.status)()
        return Admitted(CREATED, admitted, None)
    updated = validate_pod_group_update(old, group)
    updated.status = old.status
    if (updated.min_count, updated.metadata.labels, updated.metadata.annotations) == (
        old.min_count,
        old.metadata.labels,
        old.metadata.annotations,
    ):
        return Admitted(UNCHANGED, old, old)
    return Admitted(CONFIGURED, updated, old)


def validate_pod_group_update(old: PodGroup, new: PodGroup) -> PodGroup:
    """ValidatePodGroupUpdate for the fields podsched reads; returns the group to store. What the
    update omits that admission set on create (priorityClassName, priority, preemptionPolicy) is carried over, as
    for pods. Everything but gang.minCount is immutable: `spec.priority: Invalid value: null: field
    is immutable` (upstream's declarative immutability names no value), and the policy may not
    switch between basic and gang."""
    carried = replace(
        new,
        priority_class_name=new.priority_class_name or old.priority_class_name,
        priority=old.priority if new.priority is None else new.priority,
        preemption_policy=old.preemption_policy if new.preemption_policy is None else new.preemption_policy,
    )
    null = RenderedValue(None)
    errors: list[FieldError] = []
    if old.is_gang != carried.is_gang:
        if old.is_gang:
            errors.append(FieldError("spec.schedulingPolicy.gang", "field cannot be cleared once set", null))
        else:
            errors.append(FieldError("spec.schedulingPolicy.basic", "field is immutable", null))
            errors.append(FieldError("spec.schedulingPolicy.gang", "field cannot be set once created", null))
    for path, before, after in (
        ("spec.disruptionMode", old.disruption_mode, carried.disruption_mode),
        ("spec.priorityClassName", old.priority_class_name, carried.priority_class_name),
        ("spec.priority", old.priority, carried.priority),
        ("spec.preemptionPolicy", old.preemption_policy, carried.preemption_policy),
    ):
        if before != after:
            errors.append(FieldError(path, "field is immutable", null))
    if errors:
        raise ApiError.invalid(KIND_POD_GROUP, new.name, errors, new.namespace)
    return carried


def admit_new_pod(store: Store, pod: Pod, quota_config: QuotaAdmissionConfig) -> Pod:
    """Admission of a pod CREATE: Priority, then ResourceQuota. Returns the admitted pod; raises
    ApiError."""
    admitted = admit_pod(pod, store.priority_classes)
    check_pod_create(admitted, store.quotas_in(admitted.namespace), quota_config)
    return admitted


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


def admit_delete(store: Store, kind: str, namespace: str, name: str, grace_period: int | None) -> None:
    """Whether a delete is accepted: the object exists, a pod's grace period is not negative, and a
    system PriorityClass is never deleted. Raises ApiError; changes nothing."""
    if kind == KIND_POD:
        pod = store.pods.get((namespace, name))
        if pod is None:
            raise ApiError.not_found(KIND_POD, name, namespace)
        if grace_period is not None and grace_period < 0:
            raise ApiError.bad_request(KIND_POD, pod.name, "--grace-period must be >= 0", pod.namespace)
    elif kind == KIND_NODE:
        if name not in store.nodes:
            raise ApiError.not_found(KIND_NODE, name)
    elif kind == KIND_PRIORITY_CLASS:
        if name not in store.priority_classes:
            raise ApiError.not_found(KIND_PRIORITY_CLASS, name)
        if name in _BUILTIN_PRIORITY_CLASSES:
            raise ApiError.forbidden(KIND_PRIORITY_CLASS, name, "this is a system priority class and cannot be deleted")
    elif kind == KIND_PDB:
        if (namespace, name) not in store.pdbs:
            raise ApiError.not_found(KIND_PDB, name, namespace)
    elif kind == KIND_RESOURCE_QUOTA:
        if (namespace, name) not in store.resource_quotas:
            raise ApiError.not_found(KIND_RESOURCE_QUOTA, name, namespace)
    elif kind in WORKLOAD_KINDS:
        if (namespace, name) not in store.workloads[kind]:
            raise ApiError.not_found(kind, name, namespace)
    elif kind == KIND_POD_GROUP:
        if (namespace, name) not in store.pod_groups:
            raise ApiError.not_found(KIND_POD_GROUP, name, namespace)
    else:
        raise ApiError.bad_request(kind, name, f'the server doesn\'t have a resource type "{kind}"')
