"""A cluster as a service's replica holds it: objects restored from the log with increasing resource
versions, and a nominator fed by the log's changes as the filter and preemption services feed theirs;
or a replica that follows a binder's copy through encoded records; or the objects topic's records of
random pod lifecycles, for a `Replica` to apply (`lifecycle_records`)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from dataclasses import replace

from aiokafka import ConsumerRecord

from builders import make_node, make_pod
from podsched.api.types import CONDITION_POD_SCHEDULED, ApiObject, Pod, PodCondition
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, MODIFIED, REMOVED, Change
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator
from podsched_service.codec import change_message, change_record, decode_change, object_key, to_json
from podsched_service.replica import Replica

LIFECYCLE_NODES = ("n1", "n2")  # the nodes of `lifecycle_records`


def replica(
    objects: Iterable[ApiObject], now: float = 1000.0, *, listeners: Iterable[Callable[[Change], None]] = ()
) -> tuple[Cluster, Nominator]:
    """`objects` restored in order (resource versions 1, 2, ...) into a non-authoritative cluster; the
    extra `listeners` hear the changes after the nominator does."""
    cluster = Cluster(lambda: now, authoritative=False)
    nominator = Nominator()
    cluster.listeners.append(nominator_feed(nominator))
    cluster.listeners.extend(listeners)
    for version, obj in enumerate(objects, start=1):
        obj.metadata.resource_version = version
        cluster.restore(MODIFIED, obj)
    return cluster, nominator


class LogFollowingReplica:
    """The binder's authoritative copy and a replica that follows its log: every change the binder
    makes is encoded as its record and decoded as a service decodes it, and `sync()` restores the
    records and events written since the last call, as a service's consumer would."""

    def __init__(self, clock: Callable[[], float], keep_history: bool = False) -> None:
        self.binder = Cluster(clock, keep_history=keep_history)
        self.replica = Cluster(clock, authoritative=False, keep_history=keep_history)
        self._clock = clock
        self._records: list[bytes] = []
        self.binder.listeners.append(self._record)

    def _record(self, change: Change) -> None:
        self._records.append(change_record(change, "test", self._clock(), 0)[2])

    def sync(self) -> None:
        for value in self._records:
            change_type, obj, _ = decode_change(value)
            self.replica.restore(change_type, obj)
        self._records.clear()
        for event in self.binder.events:
            if event.sequence >= self.replica.recorder.next_sequence:
                self.replica.restore_event(event)


def live_pod_objects() -> int:
    """How many Pod objects the interpreter holds (after a full collection): what a copy that forgot
    a pod must no longer count."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Pod))


def lifecycle_records(plan: list[tuple[int, str, str]], topic: str) -> list[ConsumerRecord]:
    """The objects topic's records of LIFECYCLE_NODES and of the pod lifecycles `plan` describes: each
    step (pod index, action, a node) changes that pod where the action applies to it (create: a pod
    not there, again under the same name with a new uid after a delete; fail, nominate,
    clear and bind: a pending pod; relabel: any pod; terminate: a bound pod not terminating yet) and is
    skipped elsewhere. Each deletion is followed by its tombstone, as the binder writes them; the
    changes' resource versions are 1, 2, ..."""
    changes: list[tuple[str, ApiObject]] = [
        (ADDED, make_node(name).capacity(cpu="4", pods=10).obj()) for name in LIFECYCLE_NODES
    ]
    pods: dict[int, Pod] = {}
    generation = 0
    for index, action, node in plan:
        pod = pods.get(index)
        if pod is None:
            if action != "create":
                continue
            generation += 1
            pod = make_pod(f"p{index}").uid(f"uid-{index}-{generation}").req(cpu="100m").obj()
            changes.append((ADDED, pod))
        elif action == "delete":
            changes.append((REMOVED, pod))
            del pods[index]
            continue
        elif action == "relabel":
            pod = replace(pod, metadata=replace(pod.metadata, labels={"generation": str(len(changes))}))
            changes.append((MODIFIED, pod))
        elif pod.spec.node_name:  # a bound pod is only relabelled, terminated and deleted
            if action != "terminate" or pod.metadata.deletion_timestamp is not None:
                continue
            pod = replace(pod, metadata=replace(pod.metadata, deletion_timestamp=1000.0))
            changes.append((MODIFIED, pod))
        elif action == "fail":
            failed = PodCondition(CONDITION_POD_SCHEDULED, "False", "Unschedulable")
            pod = replace(pod, status=replace(pod.status, conditions=(failed,)))
            changes.append((MODIFIED, pod))
        elif action in ("nominate", "clear"):
            nominated = node if action == "nominate" else ""
            pod = replace(pod, status=replace(pod.status, nominated_node_name=nominated))
            changes.append((MODIFIED, pod))
        elif action == "bind":
            pod = replace(pod, spec=replace(pod.spec, node_name=node), status=replace(pod.status, phase="Running"))
            changes.append((MODIFIED, pod))
        else:
            continue
        pods[index] = pod
    out: list[ConsumerRecord] = []
    for version, (change_type, obj) in enumerate(changes, start=1):
        stamped = replace(obj, metadata=replace(obj.metadata, resource_version=version))  # type: ignore[type-var]
        key = object_key(stamped)
        value = change_message(change_type, stamped, "test", 1000.0).SerializeToString()
        out.append(ConsumerRecord(topic, 0, len(out), 0, 0, key, value, None, 0, len(value), []))
        if change_type == REMOVED:
            out.append(ConsumerRecord(topic, 0, len(out), 0, 0, key, None, None, 0, -1, []))
    return out


def copy_state(cluster: Cluster, nominator: Nominator, replica: Replica) -> dict[str, object]:
    """What a replica's copy holds, to compare two copies: its pods (as JSON), their keys, each node's
    pods (None: a node not there yet), the nominations and the resource versions."""
    snapshot = cluster.snapshot()
    return {
        "pods": {uid: to_json(pod) for uid, pod in sorted(cluster.pods_by_uid.items())},
        "by_key": sorted(cluster.store.pods),
        "on_nodes": {
            name: sorted(info.pod.uid for info in node.pods) if (node := snapshot.get(name)) else None
            for name in LIFECYCLE_NODES
        },
        "nominated": sorted((node, info.pod.uid) for node, infos in nominator.items() for info in infos),
        "version": (cluster.resource_version, replica.version),
    }
