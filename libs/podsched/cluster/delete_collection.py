"""DeleteCollection: the objects of one kind a namespace and selectors pick, and their deletion, each
exactly as its own Delete (the API server's registry Store.DeleteCollection).

Two steps, as upstream: the caller lists (`select_collection`, on any copy of the cluster), then the
single writer deletes what was listed (`delete_listed`); a server dry run stops after the listing and
says what each delete would do (`predict_listed`, on the same copy). An object listed but gone by then is skipped,
as upstream ignores NotFound; so is one deleted and created again under the same name in between
(its uid differs): it is not the object that was listed, and a create that raced the listing is not
lost to it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from podsched.api.errors import ApiError
from podsched.api.selector_syntax import FieldRequirement, LabelRequirement, fields_match, labels_match
from podsched.api.types import (
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_POD_GROUP,
    KIND_PRIORITY_CLASS,
    KIND_RESOURCE_QUOTA,
    ApiObject,
    Node,
    Pod,
)
from podsched.cluster.admission import admit_delete
from podsched.cluster.state import Cluster


def _pod_fields(pod: Pod) -> dict[str, str]:
    """The pod fields a field selector may name (pod.ToSelectableFields, those podsched models)."""
    return {
        "spec.nodeName": pod.spec.node_name,
        "spec.schedulerName": pod.spec.scheduler_name,
        "status.phase": pod.status.phase,
        "status.nominatedNodeName": pod.status.nominated_node_name,
    }


def _node_fields(node: Node) -> dict[str, str]:
    return {"spec.unschedulable": "true" if node.spec.unschedulable else "false"}


_KIND_FIELDS: Mapping[str, tuple[str, ...]] = {
    KIND_POD: ("spec.nodeName", "spec.schedulerName", "status.phase", "status.nominatedNodeName"),
    KIND_NODE: ("spec.unschedulable",),
}


def selectable_fields(obj: ApiObject, namespaced: bool) -> dict[str, str]:
    """The fields of `obj` a field selector matches against: metadata.name, metadata.namespace for
    namespaced kinds (generic.AddObjectMetaFieldsSet), and the kind's own."""
    fields = {"metadata.name": obj.metadata.name}
    if namespaced:
        fields["metadata.namespace"] = obj.metadata.namespace
    if isinstance(obj, Pod):
        fields.update(_pod_fields(obj))
    elif isinstance(obj, Node):
        fields.update(_node_fields(obj))
    return fields


def unsupported_field(kind: str, namespaced: bool, requirements: Iterable[FieldRequirement]) -> str | None:
    """The first field a selector names that objects of `kind` cannot be selected by, or None."""
    known = {"metadata.name", *(("metadata.namespace",) if namespaced else ()), *_KIND_FIELDS.get(kind, ())}
    return next((r.field for r in requirements if r.field not in known), None)


def select_collection(
    objects: Iterable[ApiObject],
    namespace: str | None,
    labels: tuple[LabelRequirement, ...],
    fields: tuple[FieldRequirement, ...],
    namespaced: bool,
) -> list[ApiObject]:
    """The objects in `namespace` (None: every namespace, or a cluster-scoped kind) whose labels and
    fields match, sorted by namespace and name (the order they are deleted and reported in)."""
    chosen = [
        obj
        for obj in objects
        if (namespace is None or obj.metadata.namespace == namespace)
        and labels_match(labels, obj.metadata.labels)
        and (not fields or fields_match(fields, selectable_fields(obj, namespaced)))
    ]
    chosen.sort(key=lambda obj: (obj.metadata.namespace, obj.metadata.name))
    return chosen


@dataclass(frozen=True, slots=True)
class Listed:
    """An object as it was listed: the delete applies to this uid only."""

    namespace: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class ListedDeletion:
    """What became of one listed object. `deleted`: its Delete was applied (`resource_version` of the
    change it made, `terminating` if it now terminates gracefully rather than being gone); not deleted
    and `error` None: it was already gone or replaced (skipped); `error`: its Delete was refused."""

    listed: Listed
    deleted: bool
    resource_version: int = 0
    terminating: bool = False
    error: ApiError | None = None


def objects_of_kind(cluster: Cluster, kind: str) -> Iterable[ApiObject]:
    """Every stored object of `kind` (a view: list it before the cluster changes)."""
    if kind == KIND_POD:
        return cluster.pods.values()
    if kind == KIND_NODE:
        return cluster.nodes.values()
    if kind == KIND_PRIORITY_CLASS:
        return cluster.priority_classes.values()
    if kind == KIND_PDB:
        return cluster.pdbs.values()
    if kind == KIND_RESOURCE_QUOTA:
        return cluster.resource_quotas.values()
    if kind == KIND_POD_GROUP:
        return cluster.pod_groups.values()
    if kind in cluster.workloads:
        return cluster.workloads[kind].values()
    raise ApiError.bad_request(kind, "", f'the server doesn\'t have a resource type "{kind}"')


def stored_of_kind(cluster: Cluster, kind: str) -> Callable[[str, str], ApiObject | None]:
    """A lookup of the stored object of `kind` by (namespace, name)."""
    if kind == KIND_POD:
        return lambda namespace, name: cluster.pods.get((namespace, name))
    if kind == KIND_NODE:
        return lambda namespace, name: cluster.nodes.get(name)
    if kind == KIND_PRIORITY_CLASS:
        return lambda namespace, name: cluster.priority_classes.get(name)
    if kind == KIND_PDB:
        return lambda namespace, name: cluster.pdbs.get((namespace, name))
    if kind == KIND_RESOURCE_QUOTA:
        return lambda namespace, name: cluster.resource_quotas.get((namespace, name))
    if kind == KIND_POD_GROUP:
        return lambda namespace, name: cluster.pod_groups.get((namespace, name))
    if kind in cluster.workloads:
        workloads = cluster.workloads[kind]
        return lambda namespace, name: workloads.get((namespace, name))
    raise ApiError.bad_request(kind, "", f'the server doesn\'t have a resource type "{kind}"')


def delete_listed(
    cluster: Cluster, kind: str, listed: Iterable[Listed], grace_period: int | None
) -> list[ListedDeletion]:
    """Delete each listed object of `kind` that is still the one listed, with `cluster.delete` (the
    single Delete's path: graceful termination, finalizers, events); one outcome per object, in order.
    A refused delete (a system PriorityClass) is reported and the others go on."""
    lookup = stored_of_kind(cluster, kind)
    outcomes = []
    for item in listed:
        stored = lookup(item.namespace, item.name)
        if stored is None or stored.metadata.uid != item.uid:
            outcomes.append(ListedDeletion(item, deleted=False))
            continue
        try:
            gone = cluster.delete(kind, item.namespace, item.name, grace_period)
        except ApiError as error:
            outcomes.append(ListedDeletion(item, deleted=False, error=error))
            continue
        # Still stored: terminating (its grace period runs, or a finalizer keeps it); the version is
        # that of the update that said so. Gone: the version of its deletion.
        left = lookup(item.namespace, item.name)
        if left is not None and left.metadata.uid == item.uid:
            outcomes.append(ListedDeletion(item, True, left.metadata.resource_version, terminating=True))
        else:
            outcomes.append(ListedDeletion(item, True, gone.metadata.resource_version))
    return outcomes


def predict_listed(
    cluster: Cluster, kind: str, listed: Iterable[ApiObject], grace_period: int | None
) -> list[ListedDeletion]:
    """What `delete_listed` would do to each listed object of `kind`, changing nothing (a server dry
    run, as the API server's dryRun=All runs a delete's admission and stores nothing): refused as its
    Delete would be (a system PriorityClass), or deleted, `terminating` if it would be left
    terminating. `resource_version` is the object's own: no change is made, so none has a new one."""
    outcomes = []
    for obj in listed:
        item = Listed(obj.metadata.namespace, obj.metadata.name, obj.metadata.uid)
        try:
            admit_delete(cluster.store, kind, item.namespace, item.name, grace_period)
        except ApiError as error:
            outcomes.append(ListedDeletion(item, deleted=False, error=error))
            continue
        terminating = isinstance(obj, Pod) and cluster.node_agent.keeps_on_delete(obj, grace_period)
        outcomes.append(ListedDeletion(item, True, obj.metadata.resource_version, terminating=terminating))
    return outcomes
