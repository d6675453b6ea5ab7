"""`--dry-run=server` admission: what `Cluster.apply` would answer, without changing anything.

The same admission functions as `Cluster.apply`, in the same order; the caller (the queue service)
then asks Filter and PostFilter where an admitted pod would go."""

from __future__ import annotations

from podsched.admission.priority import (
    check_global_default,
    validate_priority_class,
    validate_priority_class_update,
)
from podsched.api.types import ApiObject, Node, Pod, PodDisruptionBudget, PriorityClass, ResourceQuota
from podsched.cluster.admission import (
    CONFIGURED,
    CREATED,
    UNCHANGED,
    pod_update,
    quota_spec,
    validate_resource_quota_update,
)
from podsched.cluster.state import Cluster


def admit_without_storing(cluster: Cluster, obj: ApiObject) -> tuple[str, ApiObject]:
    """(action, admitted object) as `cluster.apply(obj)` would return them. Raises the same
    ApiError `apply` would raise."""
    if isinstance(obj, PriorityClass):
        old_class = cluster.priority_classes.get(obj.name)
        validate_priority_class(obj)
        if old_class is not None:
            validate_priority_class_update(old_class, obj)
            if (old_class.value, old_class.global_default, old_class.description, old_class.preemption_policy) == (
                obj.value,
                obj.global_default,
                obj.description,
                obj.preemption_policy,
            ):
                return UNCHANGED, old_class
        check_global_default(cluster.priority_classes.values(), obj)
        return (CONFIGURED if old_class else CREATED), obj
    if isinstance(obj, Node):
        old_node = cluster.nodes.get(obj.name)
        if old_node is None:
            return CREATED, obj
        same = (old_node.metadata.labels, old_node.spec, old_node.status) == (obj.metadata.labels, obj.spec, obj.status)
        return (UNCHANGED if same else CONFIGURED), obj
    if isinstance(obj, PodDisruptionBudget):
        old_pdb = cluster.pdbs.get(obj.key)
        if old_pdb is None:
            return CREATED, obj
        same = (old_pdb.selector, old_pdb.min_available, old_pdb.max_unavailable) == (
            obj.selector,
            obj.min_available,
            obj.max_unavailable,
        )
        return (UNCHANGED if same else CONFIGURED), obj
    if isinstance(obj, ResourceQuota):
        old_quota = cluster.resource_quotas.get(obj.key)
        if old_quota is None:
            return CREATED, obj
        validate_resource_quota_update(old_quota, obj)
        return (UNCHANGED if quota_spec(old_quota) == quota_spec(obj) else CONFIGURED), obj
    assert isinstance(obj, Pod)
    old_pod = cluster.pods.get(obj.key)
    if old_pod is None:
        # Priority, then ResourceQuota against this copy's usage: the binder decides again on its own.
        return CREATED, cluster.admit_new_pod(obj)
    updated = pod_update(old_pod, obj)
    return (UNCHANGED, old_pod) if updated is None else (CONFIGURED, updated)
