"""Cluster changes -> scheduling queue: what upstream's event handlers (eventhandlers.go) do.

Pending pods enter the queue, updates move them, bound pods leave it, and changes that can make
unschedulable pods schedulable (a node added or updated, an assigned pod added, updated or
deleted) are cluster events that move pods out of the unschedulable pool. `simulate` and the
queue service use the same listener."""

from __future__ import annotations

from collections.abc import Callable

from podsched.api.types import KIND_NODE, KIND_POD, KIND_POD_GROUP, POD_FAILED, POD_PENDING, POD_SUCCEEDED, Pod
from podsched.cluster.store import ADDED, MODIFIED, REMOVED, Change
from podsched.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    ASSIGNED_POD_UPDATE,
    NODE_ADD,
    NODE_UPDATE,
    PodEvent,
)
from podsched.framework.node_info import PodInfo
from podsched.queue import scheduling_queue as sq
from podsched.queue.nominator import Nominator


def is_terminal(pod: Pod) -> bool:
    return pod.status.phase in (POD_SUCCEEDED, POD_FAILED)


def queue_feed(queue: sq.SchedulingQueue) -> Callable[[Change], None]:
    """A `Cluster` listener that keeps `queue` in step with the cluster."""

    def on_change(change: Change) -> None:
        if change.kind == KIND_NODE:
            if change.type in (ADDED, MODIFIED):
                queue.on_event(NODE_ADD if change.type == ADDED else NODE_UPDATE)
            return
        if change.kind != KIND_POD:
            if change.kind == KIND_POD_GROUP and change.type != REMOVED:
                group = change.new
                assert group is not None
                # GangScheduling's PodGroup Add/Update events: its held or rejected pods may go now.
                queue.group_changed(group.metadata.namespace, group.metadata.name)
            elif change.kind == KIND_POD_GROUP:
                group = change.old
                assert group is not None
                queue.pod_group_deleted(group.metadata.namespace, group.metadata.name)
            return
        old, new = change.old, change.new
        assert old is None or isinstance(old, Pod)
        assert new is None or isinstance(new, Pod)
        if change.type == ADDED and new is not None:
            if new.spec.node_name:
                queue.on_event(PodEvent(ASSIGNED_POD_ADD, None, new))
            elif new.status.phase == POD_PENDING:
                queue.add(new)
        elif change.type == MODIFIED and old is not None and new is not None:
            if is_terminal(new) and not is_terminal(old):
                # A pod that ended (its run finished, or it failed) leaves the scheduler's cache as a
                # deleted one does (eventhandlers.go updatePodInCache: terminal pods are removed).
                queue.delete(old)
                if old.spec.node_name:
                    queue.on_event(PodEvent(ASSIGNED_POD_DELETE, old, None))
            elif is_terminal(new):
                return
            elif not new.spec.node_name:
                queue.update(old, new)
            elif not old.spec.node_name:
                queue.done(new.uid)
                queue.nominator.remove(new)
                queue.on_event(PodEvent(ASSIGNED_POD_ADD, None, new))
            elif old.labels != new.labels:
                # PodSchedulingPropertiesChange (framework/events.go) classifies an assigned pod's
                # update; the plugins here register AssignedPod only for UpdatePodLabel (and
                # NodeResourcesFit for scale-down, which podsched does not allow), so any other
                # update (a victim's DisruptionTarget condition and deletionTimestamp, a status
                # change) is the general Update that moves no pod.
                queue.on_event(PodEvent(ASSIGNED_POD_UPDATE, old, new))
        elif change.type == REMOVED and old is not None:
            queue.delete(old)
            if old.spec.node_name:
                queue.on_event(PodEvent(ASSIGNED_POD_DELETE, old, None))

    return on_change


def nominator_feed(nominator: Nominator) -> Callable[[Change], None]:
    """A `Cluster` listener that keeps a nominator equal to the pods' status.nominatedNodeName:
    how the filter and preemption services, which follow the binder's log, know the nominations
    the queue service's scheduling cycles made."""

    def on_change(change: Change) -> None:
        if change.kind != KIND_POD:
            return
        if change.new is None:
            assert isinstance(change.old, Pod)
            nominator.remove(change.old)
        else:
            assert isinstance(change.new, Pod)
            nominator.add(PodInfo(change.new))

    return on_change
