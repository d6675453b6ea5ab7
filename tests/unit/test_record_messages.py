"""The records' messages (`change_message`, `event_to_proto`) write their references and times in
place: the bytes are those of the message built with its parts passed whole to the constructor,
for a bound pod's change and for an event with and without a related object."""

from __future__ import annotations

from builders import HIGH_PRIORITY, LOW_PRIORITY, make_node, make_pod, make_priority_class
from clocks import FakeClock
from podsched.api.types import Pod
from podsched.cluster import events as ev
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, MODIFIED
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import change_message, event_from_proto, event_to_proto, to_json, to_timestamp

NOW = 5000.123456789


def cluster_with_a_preemption() -> Cluster:
    cluster = Cluster(FakeClock(NOW))
    cluster.apply(make_node("n1").capacity(cpu="2", memory="4Gi").obj())
    cluster.apply(make_priority_class("low", LOW_PRIORITY))
    cluster.apply(make_priority_class("high", HIGH_PRIORITY))
    _, victim = cluster.apply(make_pod("victim").priority_class("low").req(cpu="2").obj())
    cluster.bind(victim.metadata.uid, "n1")
    _, preemptor = cluster.apply(make_pod("preemptor").priority_class("high").req(cpu="2").obj())
    assert isinstance(preemptor, Pod)
    cluster.preempt_victim(victim.metadata.uid, preemptor, "n1")
    return cluster


def reference_of(kind: str, namespace: str, name: str, uid: str) -> events_pb2.ObjectReference:
    return events_pb2.ObjectReference(kind=kind, namespace=namespace, name=name, uid=uid)


def test_a_pod_change_is_the_message_built_whole() -> None:
    cluster = cluster_with_a_preemption()
    for change_type, pod in (
        (MODIFIED, cluster.pods[("default", "victim")]),
        (ADDED, cluster.pods[("default", "preemptor")]),
    ):
        meta = pod.metadata
        whole = events_pb2.ObjectChange(
            type=events_pb2.ObjectChange.MODIFIED if change_type == MODIFIED else events_pb2.ObjectChange.ADDED,
            object=reference_of("Pod", meta.namespace, meta.name, meta.uid),
            resource_version=meta.resource_version,
            object_json=to_json(pod),
            writer="podsched-binder",
            time=to_timestamp(NOW),
            node_name=pod.spec.node_name,
            phase=pod.status.phase,
            priority=pod.priority,
            nominated_node_name=pod.status.nominated_node_name,
        )
        message = change_message(change_type, pod, "podsched-binder", NOW)
        assert message.SerializeToString() == whole.SerializeToString()


def test_an_event_is_the_message_built_whole_with_or_without_a_related_object() -> None:
    events = cluster_with_a_preemption().events
    assert {e.reason for e in events} >= {ev.SCHEDULED, ev.PREEMPTED}
    for event in events:
        involved, related = event.involved_object, event.related
        whole = events_pb2.Event(
            type=event.type,
            reason=event.reason,
            message=event.message,
            involved_object=reference_of(involved.kind, involved.namespace, involved.name, involved.uid),
            event_time=to_timestamp(event.event_time),
            reporting_controller=event.reporting_controller,
            action=event.action,
            count=event.count,
            last_time=to_timestamp(event.last_time),
            sequence=event.sequence,
        )
        if related is not None:
            whole.related.CopyFrom(reference_of(related.kind, related.namespace, related.name, related.uid))
        message = event_to_proto(event)
        assert message.SerializeToString() == whole.SerializeToString()
        assert message.HasField("related") == (related is not None)
        assert event_from_proto(message).involved_object == involved
