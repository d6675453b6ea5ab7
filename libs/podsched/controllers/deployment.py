"""The Deployment controller (pkg/controller/deployment): one ReplicaSet per pod template, named
after the template's hash; on a template change a new ReplicaSet is scaled up while the old ones are
scaled down.

Strategies:
* RollingUpdate (the default), upstream's reconcileNewReplicaSet / reconcileOldReplicaSets without
  the unhealthy-pod cleanup: the new ReplicaSet grows while all ReplicaSets together stay within
  replicas + maxSurge; old ReplicaSets shrink while the available pods stay at least replicas -
  maxUnavailable. A pod is available once it runs (no readiness probes, minReadySeconds 0), so a
  rollout advances as fast as the scheduler places the new pods.
* Recreate: the old ReplicaSets go to 0, and the new one is scaled up once none of their pods is
  left running.
A scale without a template change resizes the newest ReplicaSet (the others are already at 0 after a
finished rollout); revision history, pause and rollback are not modelled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import replace

from podsched.api.types import (
    RECREATE,
    Deployment,
    DeploymentStatus,
    LabelSelector,
    ObjectMeta,
    PodTemplate,
    ReplicaSet,
)
from podsched.cluster import events as ev
from podsched.cluster.names import encode_hash
from podsched.controllers.pod_control import controller_ref

CONTROLLER = "deployment-controller"
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
SCALING_REPLICA_SET = "ScalingReplicaSet"


def template_hash(template: PodTemplate) -> str:
    """ComputeHash's role: a short stable name for a template (ten characters of upstream's alphabet)."""
    digest = hashlib.sha256(json.dumps(template.manifest, sort_keys=True).encode()).digest()
    return encode_hash(digest, 10)


def new_replica_set_name(deployment: Deployment) -> str:
    """The name of the ReplicaSet that runs the Deployment's current template."""
    return f"{deployment.name}-{template_hash(deployment.template)}"


def scaled_value(value: int | str, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, int):
        return value
    scaled = total * int(value.rstrip("%"))
    return -(-scaled // 100) if round_up else scaled // 100


def surge_and_unavailable(deployment: Deployment) -> tuple[int, int]:
    """ResolveFenceposts: maxSurge rounded up, maxUnavailable down; both 0 makes maxUnavailable 1."""
    surge = scaled_value(deployment.max_surge, deployment.replicas, True)
    unavailable = scaled_value(deployment.max_unavailable, deployment.replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def new_replica_set_replicas(deployment: Deployment, all_sets: Sequence[ReplicaSet], new: ReplicaSet) -> int:
    """NewRSNewReplicas for RollingUpdate: grow within replicas + maxSurge."""
    surge, _ = surge_and_unavailable(deployment)
    current = sum(rs.replicas for rs in all_sets)
    room = deployment.replicas + surge - current
    if room <= 0:
        return new.replicas
    return min(new.replicas + room, deployment.replicas) if new.replicas < deployment.replicas else deployment.replicas


def old_replica_sets_scale_down(
    deployment: Deployment, old_sets: Sequence[ReplicaSet], available: int
) -> dict[str, int]:
    """reconcileOldReplicaSets without the unhealthy cleanup: how far each old ReplicaSet (oldest
    first) may shrink while available pods stay at least replicas - maxUnavailable."""
    _, unavailable = surge_and_unavailable(deployment)
    budget = available - (deployment.replicas - unavailable)
    targets: dict[str, int] = {}
    for rs in sorted(old_sets, key=lambda r: (r.metadata.creation_timestamp or 0.0, r.name)):
        if budget <= 0:
            break
        if rs.replicas == 0:
            continue
        step = min(rs.replicas, budget)
        targets[rs.name] = rs.replicas - step
        budget -= step
    return targets


def deployment_status(
    deployment: Deployment, all_sets: Sequence[ReplicaSet], new: ReplicaSet | None
) -> DeploymentStatus:
    replicas = sum(rs.status.replicas for rs in all_sets)
    available = sum(rs.status.available_replicas for rs in all_sets)
    return DeploymentStatus(
        replicas=replicas,
        updated_replicas=new.status.replicas if new is not None else 0,
        ready_replicas=sum(rs.status.ready_replicas for rs in all_sets),
        available_replicas=available,
        unavailable_replicas=max(deployment.replicas - available, 0),
        observed_generation=deployment.metadata.generation,
    )


class DeploymentController:
    """Writes ReplicaSets through `save(new, old)` (the cluster's write of a workload)."""

    def __init__(self, recorder: ev.EventRecorder, save: Callable[[ReplicaSet, ReplicaSet | None], ReplicaSet]) -> None:
        self.recorder = recorder
        self.save = save

    def sync(self, deployment: Deployment, owned: Sequence[ReplicaSet]) -> None:
        """One pass of rolloutRolling / rolloutRecreate. `owned`: the ReplicaSets it controls."""
        name = new_replica_set_name(deployment)
        new = next((rs for rs in owned if rs.name == name), None)
        old_sets = [rs for rs in owned if rs.name != name]
        if new is None:
            new = self._create_new(deployment, name)
            owned = [*owned, new]
        if deployment.strategy == RECREATE:
            for rs in old_sets:
                self._scale(deployment, rs, 0)
            if all(rs.status.replicas == 0 for rs in old_sets):
                self._scale(deployment, new, deployment.replicas)
            return
        if not old_sets or all(rs.replicas == 0 for rs in old_sets):
            self._scale(deployment, new, deployment.replicas)  # nothing rolling: a plain scale
            return
        self._scale(deployment, new, new_replica_set_replicas(deployment, owned, new))
        available = sum(rs.status.available_replicas for rs in owned)
        for rs in old_sets:
            target = old_replica_sets_scale_down(deployment, old_sets, available).get(rs.name)
            if target is not None:
                available -= rs.replicas - target
                self._scale(deployment, rs, target)

    def _create_new(self, deployment: Deployment, name: str) -> ReplicaSet:
        hashed = name.rsplit("-", 1)[1]
        manifest = json.loads(json.dumps(deployment.template.manifest))
        labels = {**deployment.template.labels, POD_TEMPLATE_HASH_LABEL: hashed}
        manifest.setdefault("metadata", {})["labels"] = labels
        selector = deployment.selector or LabelSelector()
        rs = ReplicaSet(
            ObjectMeta(
                name=name,
                namespace=deployment.namespace,
                labels=labels,
                owner_references=(controller_ref(deployment),),
            ),
            replicas=0,
            selector=replace(selector, match_labels=(*selector.match_labels, (POD_TEMPLATE_HASH_LABEL, hashed))),
            template=PodTemplate(labels, manifest),
        )
        return self.save(rs, None)

    def _scale(self, deployment: Deployment, rs: ReplicaSet, replicas: int) -> None:
        if rs.replicas == replicas:
            return
        direction = "up" if replicas > rs.replicas else "down"
        self.save(replace(rs, metadata=replace(rs.metadata), replicas=replicas), rs)
        self.recorder.record(
            deployment,
            ev.NORMAL,
            SCALING_REPLICA_SET,
            f"Scaled {direction} replica set {rs.name} from {rs.replicas} to {replicas}",
            CONTROLLER,
        )
