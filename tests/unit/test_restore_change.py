"""`restore_change`, which applies a record decoding no more of it than the change needs, leaves a
copy of the cluster exactly as decoding every record whole and calling `Cluster.restore` does: the same
pods, nodes' pods, nominations, grace periods and resource version, and the listeners hear the same
changes with the same objects, on random pod lifecycles (created, failed attempts, nominated, bound,
labelled, terminating, deleted, created again under the same name) of which any record may be
missing, as compaction removes records from the log."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_node, make_pod
from podsched.api.types import (
    CONDITION_DISRUPTION_TARGET,
    CONDITION_POD_SCHEDULED,
    REASON_PREEMPTION_BY_SCHEDULER,
    Pod,
    PodCondition,
    Resource,
)
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, MODIFIED, REMOVED, Change
from podsched.framework.resource import pod_request_map, pod_requests
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import change_message, decode_change_message, to_json
from podsched_service.restore import restore_change

NODES = ("n1", "n2")
ACTIONS = ("create", "fail", "nominate", "bind", "label", "terminate", "delete")

steps = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(ACTIONS), st.sampled_from(NODES), st.booleans()), max_size=40
)


def records(plan: list[tuple[int, str, str, bool]]) -> list[events_pb2.ObjectChange]:
    """The records of two nodes and of the pods' lifecycles `plan` describes, without the ones the
    plan marks compacted."""
    changes: list[tuple[str, Any, bool]] = [
        (ADDED, make_node(name).capacity(cpu="4", pods=10).obj(), False) for name in NODES
    ]
    pods: dict[int, Pod] = {}
    generation = 0
    for index, action, node, compacted in plan:
        pod = pods.get(index)
        if pod is None:
            if action != "create":
                continue
            generation += 1
            builder = make_pod(f"p{index}").uid(f"uid-{index}-{generation}").req(cpu="100m").grace(30)
            if index % 2:  # a spec with more in it: maps and lists the replica must not share
                builder.label("app", "a").priority(10).node_selector(zone="z").toleration("k", "v", "NoSchedule")
                builder.req(cpu="1", memory="1Gi")
            pod = builder.obj()
            changes.append((ADDED, pod, compacted))
        elif action == "delete":
            changes.append((REMOVED, pod, compacted))
            del pods[index]
            continue
        elif action == "create":
            continue
        elif action == "label":
            pod = replace(pod, metadata=replace(pod.metadata, labels={**pod.metadata.labels, node: str(generation)}))
            changes.append((MODIFIED, pod, compacted))
        elif action == "terminate":
            if pod.metadata.deletion_timestamp is not None:
                continue
            disrupted = PodCondition(CONDITION_DISRUPTION_TARGET, "True", REASON_PREEMPTION_BY_SCHEDULER)
            pod = replace(
                pod,
                metadata=replace(pod.metadata, deletion_timestamp=1000.0, deletion_grace_period_seconds=30),
                status=replace(pod.status, conditions=(*pod.status.conditions, disrupted)),
            )
            changes.append((MODIFIED, pod, compacted))
        elif pod.spec.node_name:
            continue  # a bound pod is not scheduled again
        elif action == "fail":
            failed = PodCondition(CONDITION_POD_SCHEDULED, "False", "Unschedulable")
            pod = replace(pod, status=replace(pod.status, conditions=(failed,)))
            changes.append((MODIFIED, pod, compacted))
        elif action == "nominate":
            pod = replace(pod, status=replace(pod.status, nominated_node_name=node))
            changes.append((MODIFIED, pod, compacted))
        else:
            bound = replace(pod.spec, node_name=node)
            pod = replace(pod, spec=bound, status=replace(pod.status, phase="Running", nominated_node_name=""))
            changes.append((MODIFIED, pod, compacted))
        pods[index] = pod
    out = []
    for version, (change_type, obj, compacted) in enumerate(changes, start=1):
        if not compacted:
            stamped = replace(obj, metadata=replace(obj.metadata, resource_version=version))
            out.append(change_message(change_type, stamped, "test", 1000.0))
    return out


def heard_as(change: Change) -> tuple[Any, ...]:
    """A change as a listener hears it, with the objects' JSON taken at that moment."""
    objects = (change.old, change.new)
    return (change.type, change.kind, *objects, *(None if o is None else to_json(o) for o in objects))


def follow(batch: list[events_pb2.ObjectChange], whole: bool) -> dict[str, Any]:
    cluster = Cluster(lambda: 1000.0, authoritative=False)
    nominator = Nominator()
    cluster.listeners.append(nominator_feed(nominator))
    heard: list[tuple[Any, ...]] = []
    cluster.listeners.append(lambda change: heard.append(heard_as(change)))
    # The filter computes each pod's effective request to place it; a later record's pod may carry it.
    cluster.listeners.append(lambda change: pod_requests(change.new) if isinstance(change.new, Pod) else None)
    for record in batch:
        parsed = events_pb2.ObjectChange.FromString(record.SerializeToString())  # as a replica reads it
        if whole:
            change_type, obj, _ = decode_change_message(parsed)
            cluster.restore(change_type, obj)
        else:
            restore_change(cluster, parsed)
    return {
        "heard": heard,
        "pods": {uid: (pod, to_json(pod), pod_requests(pod)) for uid, pod in sorted(cluster.pods_by_uid.items())},
        "requests_as_computed": all(
            pod_requests(pod) == Resource.from_map(pod_request_map(pod)) for pod in cluster.pods_by_uid.values()
        ),
        "by_key": sorted(cluster.store.pods),
        "on_nodes": {
            name: sorted(info.pod.uid for info in cluster.snapshot().get(name).pods)  # type: ignore[union-attr]
            for name in NODES
        },
        "nominated": sorted((node, info.pod.uid) for node, infos in nominator.items() for info in infos),
        "terminations": cluster.node_agent.next_termination_time(),
        "version": cluster.resource_version,
    }


@settings(max_examples=200, deadline=None)
@given(steps)
def test_restoring_a_change_is_restoring_its_decoded_record(plan: list[tuple[int, str, str, bool]]) -> None:
    batch = records(plan)
    followed = follow(batch, whole=False)
    assert followed == follow(batch, whole=True)
    assert followed["requests_as_computed"]


def test_a_pod_removal_is_applied_without_reading_its_json() -> None:
    """The removal of a held pod needs its reference and version only: a body no decoder could read
    removes the pod just the same."""
    batch = records([(0, "create", "n1", False), (0, "bind", "n1", False), (0, "delete", "n1", False)])
    unreadable = [*batch[:-1], events_pb2.ObjectChange()]
    unreadable[-1].CopyFrom(batch[-1])
    unreadable[-1].object_json = b"not json"
    followed = follow(unreadable, whole=False)
    assert followed == follow(batch, whole=True)
    assert followed["pods"] == {}
    removal = followed["heard"][-1]
    # Listeners hear the pod the copy held, with the removal's own version.
    assert (removal[0], removal[2].uid, removal[2].metadata.resource_version) == (REMOVED, "uid-0-1", 5)
