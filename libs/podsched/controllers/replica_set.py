"""The ReplicaSet controller (pkg/controller/replicaset): keep `spec.replicas` active pods.

A pod being deleted no longer counts (controller.FilterActivePods), so a preemption victim is
replaced as soon as it is evicted, while it still terminates: the replacement is queued and lands
where there is room, or waits, as upstream's does.
"""

from __future__ import annotations

from collections.abc import Sequence

from podsched.api.labels import selector_matches
from podsched.api.types import POD_PENDING, Pod, ReplicaSet, ReplicaSetStatus
from podsched.controllers.pod_control import PodControl, is_active, is_ready, pod_from_template

CONTROLLER = "replicaset-controller"


def pods_to_delete(active: Sequence[Pod], count: int) -> list[Pod]:
    """getPodsToDelete's ranking (controller.ActivePods, simplified to what podsched models):
    unassigned before assigned, pending before running, not ready before ready, then the newest
    first."""

    def rank(pod: Pod) -> tuple[int, int, int, float]:
        return (
            1 if pod.spec.node_name else 0,
            0 if pod.status.phase == POD_PENDING else 1,
            1 if is_ready(pod) else 0,
            -(pod.status.start_time or pod.metadata.creation_timestamp or 0.0),
        )

    return sorted(active, key=rank)[:count]


def replica_set_status(rs: ReplicaSet, owned: Sequence[Pod]) -> ReplicaSetStatus:
    """calculateStatus over the active pods the ReplicaSet owns (ready is available: no minReadySeconds)."""
    active = [p for p in owned if is_active(p)]
    template_labels = rs.template.labels
    labeled = sum(1 for p in active if all(p.labels.get(k) == v for k, v in template_labels.items()))
    ready = sum(1 for p in active if is_ready(p))
    return ReplicaSetStatus(len(active), labeled, ready, ready, rs.metadata.generation)


class ReplicaSetController:
    def __init__(self, pods: PodControl) -> None:
        self.pods = pods

    def sync(self, rs: ReplicaSet, owned: Sequence[Pod]) -> None:
        """manageReplicas: create or delete pods until `rs.replicas` are active. `owned`: the pods
        whose controller is `rs`. The status is computed afterwards from the pods as they are then."""
        active = [p for p in owned if is_active(p) and selector_matches(rs.selector, p.labels)]
        diff = len(active) - rs.replicas
        if diff < 0:
            for _ in range(-diff):
                if self.pods.create(rs, pod_from_template(rs.template, rs, f"{rs.name}-"), CONTROLLER) is None:
                    break  # a refused create ends this sync's burst, as upstream's slow start does
        elif diff > 0:
            for pod in pods_to_delete(active, diff):
                self.pods.delete(rs, pod, CONTROLLER)
