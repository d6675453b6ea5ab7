"""A PodGroup's status as the scheduler writes it (upstream updatePodGroupCondition with metav1's
SetStatusCondition): the PodGroupInitiallyScheduled condition after each pod-group cycle."""

from __future__ import annotations

from dataclasses import replace

from podsched.api.types import Condition, PodGroup
from podsched.cluster.store import Store


def set_pod_group_condition(store: Store, namespace: str, name: str, condition: Condition) -> PodGroup | None:
    """Set `condition` on the group and store it; None (nothing written) when the group is gone or
    nothing changes. A condition that is already True is never set back to False (the group was
    scheduled once: later cycles for extra pods do not regress it). The transition time moves only
    when the status does; observedGeneration is the group's generation."""
    group = store.pod_groups.get((namespace, name))
    if group is None:
        return None
    existing = group.status.condition(condition.type)
    if existing is not None and existing.status == "True" and condition.status != "True":
        return None
    wanted = replace(condition, observed_generation=group.metadata.generation)
    if existing is not None:
        if existing.status == wanted.status:
            wanted = replace(wanted, last_transition_time=existing.last_transition_time)
        if existing == wanted:
            return None
    conditions = (
        tuple(c for c in group.status.conditions if c.type != condition.type)
        if existing is None
        else tuple(wanted if c.type == condition.type else c for c in group.status.conditions)
    )
    if existing is None:
        conditions = (*conditions, wanted)
    new = replace(group, status=replace(group.status, conditions=conditions))
    store.stamp(new)
    store.store_pod_group(group, new)
    return new
