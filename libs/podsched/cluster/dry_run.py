"""`--dry-run=server` admission: what `Cluster.apply` would answer, without changing anything.

The same admission (`cluster.admission.admit`) as `Cluster.apply`; the caller (the queue service)
then asks Filter and PostFilter where an admitted pod would go."""

from __future__ import annotations

from podsched.api.types import ApiObject
from podsched.cluster.admission import admit
from podsched.cluster.state import Cluster


def admit_without_storing(cluster: Cluster, obj: ApiObject) -> tuple[str, ApiObject]:
    """(action, admitted object) as `cluster.apply(obj)` would return them (for a new pod, admitted
    against this copy's quota usage: the binder decides again on its own). Raises the same ApiError
    `apply` would raise."""
    admitted = admit(cluster.store, obj, cluster.quota_admission)
    return admitted.action, admitted.obj
