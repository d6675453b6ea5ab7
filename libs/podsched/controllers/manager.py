"""The controller manager: which workloads need a sync, and one pass over them.

Every write to the store is heard (`Store.listeners`): a workload's own change, or a change of a pod
or ReplicaSet it controls, marks it for a sync. `run` syncs the marked workloads until none is left
(a sync's own writes may mark more: a Deployment's new ReplicaSet, then that ReplicaSet's pods) and
writes each status that changed. It runs where the cluster's single writer runs, after each batch of
writes (the binder service; `podsched simulate` after every step of its loop), so a controller's
writes are committed with the change that caused them: a preempted pod's replacement is in the same
Kafka transaction as the eviction. A copy that follows the log (authoritative=False) syncs nothing.

Removing a workload removes what it controls (the garbage collector's background propagation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from podsched.api.types import (
    KIND_JOB,
    KIND_POD,
    KIND_REPLICA_SET,
    WORKLOAD_KINDS,
    Deployment,
    Job,
    Pod,
    ReplicaSet,
    Workload,
)
from podsched.cluster import events as ev
from podsched.cluster.store import REMOVED, Change, Store
from podsched.controllers.deployment import DeploymentController, deployment_status, new_replica_set_name
from podsched.controllers.job import TRACKING_FINALIZER, JobController
from podsched.controllers.pod_control import PodControl
from podsched.controllers.replica_set import ReplicaSetController, replica_set_status

# A sync's writes mark more syncs (Deployment -> ReplicaSet -> pods -> statuses); more rounds than
# this in one run would mean two controllers undoing each other.
MAX_ROUNDS = 16

WorkloadKey = tuple[str, str, str]  # (kind, namespace, name)


class Controllers:
    """The ReplicaSet, Deployment and Job controllers over one store.

    `create_pod` admits and stores a pod (the cluster's own create, generateName and Priority
    admission included; raises ApiError); `delete_pod` deletes one gracefully; `save` writes a
    workload (create when `old` is None); `release` removes a finalizer from a pod."""

    def __init__(
        self,
        store: Store,
        recorder: ev.EventRecorder,
        clock: Callable[[], float],
        create_pod: Callable[[Pod], Pod],
        delete_pod: Callable[[Pod], None],
        save: Callable[[Any, Any], Any],
        release: Callable[[Pod, str], Pod | None],
    ) -> None:
        self.store = store
        self.clock = clock
        self.save = save
        self.release = release
        self.delete_pod = delete_pod
        pods = PodControl(recorder, create_pod, delete_pod)
        self.replica_sets = ReplicaSetController(pods)
        self.deployments = DeploymentController(recorder, save)
        self.jobs = JobController(pods, release)
        self.dirty: set[WorkloadKey] = set()
        self.gone_owners: set[str] = set()  # uids of removed workloads whose objects must go
        # Controller uid -> what it controls (pods and ReplicaSets), by uid: kept from every change,
        # so a sync costs what the workload owns, not what the cluster holds.
        self.owned: dict[str, dict[str, Any]] = {}
        store.listeners.append(self._on_change)

    def _on_change(self, change: Change) -> None:
        if not self.store.authoritative:
            return
        obj = change.new if change.new is not None else change.old
        if obj is None:
            return
        if change.kind in WORKLOAD_KINDS:
            if change.type == REMOVED:
                self.gone_owners.add(obj.metadata.uid)
            else:
                self.dirty.add((change.kind, obj.metadata.namespace, obj.metadata.name))
        elif change.kind != KIND_POD:
            return
        ref = obj.metadata.controller_ref()
        if ref is None or ref.kind not in WORKLOAD_KINDS:
            return
        if change.new is None:
            self.owned.get(ref.uid, {}).pop(obj.metadata.uid, None)
        else:
            self.owned.setdefault(ref.uid, {})[obj.metadata.uid] = change.new
        # A pod's scheduling status (nominations, PodScheduled) is nothing its controller reads.
        unchanged = (
            isinstance(change.old, Pod)
            and isinstance(change.new, Pod)
            and _controller_view(change.old) == _controller_view(change.new)
        )
        if unchanged:
            return
        self.dirty.add((ref.kind, obj.metadata.namespace, ref.name))

    def next_deadline(self) -> float | None:
        """When a running Job's activeDeadlineSeconds runs out next."""
        deadlines = [
            d
            for job in self.store.workloads[KIND_JOB].values()
            if isinstance(job, Job) and (d := self.jobs.next_deadline(job)) is not None
        ]
        return min(deadlines, default=None)

    def run(self) -> int:
        """Sync every marked workload (and Jobs whose deadline passed) until none is marked; returns
        how many syncs ran."""
        if not self.store.authoritative:
            return 0
        now = self.clock()
        for job in self.store.workloads[KIND_JOB].values():
            deadline = self.jobs.next_deadline(job) if isinstance(job, Job) else None
            if deadline is not None and deadline <= now:
                self.dirty.add((KIND_JOB, job.namespace, job.name))
        syncs = 0
        for _ in range(MAX_ROUNDS):
            if self.gone_owners:
                self._collect_garbage()
            if not self.dirty:
                break
            batch, self.dirty = sorted(self.dirty), set()
            for kind, namespace, name in batch:
                workload = self.store.workloads[kind].get((namespace, name))
                if workload is not None:
                    self._sync(workload, self._owned_by(workload))
                    syncs += 1
        return syncs

    def _owned_by(self, workload: Workload) -> list[Any]:
        return list(self.owned.get(workload.uid, {}).values())

    def _sync(self, workload: Workload, owned: list[Any]) -> None:
        if isinstance(workload, ReplicaSet):
            self.replica_sets.sync(workload, owned)
            # The status counts the pods as the sync left them (created, deleted).
            self._write_status(workload, replica_set_status(workload, self._owned_by(workload)))
        elif isinstance(workload, Deployment):
            self.deployments.sync(workload, owned)
            sets = [rs for rs in self._owned_by(workload) if isinstance(rs, ReplicaSet)]
            new_name = new_replica_set_name(workload)
            new = next((rs for rs in sets if rs.name == new_name), None)
            self._write_status(workload, deployment_status(workload, sets, new))
        elif isinstance(workload, Job):
            self._write_status(workload, self.jobs.sync(workload, owned, self.clock()))

    def _write_status(self, workload: Any, status: Any) -> None:
        current = self.store.workloads[workload.kind].get(workload.key)
        if current is None or current.status == status:
            return
        new = replace(current, metadata=replace(current.metadata), status=status)
        self.store.stamp(new)
        self.store.store_workload(current, new)

    def _collect_garbage(self) -> None:
        gone, self.gone_owners = self.gone_owners, set()
        for rs in list(self.store.workloads[KIND_REPLICA_SET].values()):
            ref = rs.metadata.controller_ref()
            if ref is not None and ref.uid in gone:
                self.store.remove(KIND_REPLICA_SET, rs.namespace, rs.name)  # its pods follow next round
        for pod in list(self.store.pods.values()):
            ref = pod.metadata.controller_ref()
            if ref is None or ref.uid not in gone:
                continue
            if TRACKING_FINALIZER in pod.metadata.finalizers:
                released = self.release(pod, TRACKING_FINALIZER)
                if released is None:
                    continue
                pod = released
            if pod.metadata.deletion_timestamp is None:
                self.delete_pod(pod)


def _controller_view(pod: Pod) -> tuple[object, ...]:
    """What of a pod its controller reads: phase, deletion, labels, finalizers, node. (A victim's
    DisruptionTarget condition comes in the write that sets its deletionTimestamp.)"""
    meta = pod.metadata
    return (pod.status.phase, meta.deletion_timestamp, meta.labels, meta.finalizers, pod.spec.node_name)
