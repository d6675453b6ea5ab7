"""tests/audit.py's `read_log` against a real Kafka broker and transactional writes.

The crash-safety tests rely on `read_log` seeing exactly what a read_committed consumer sees: every record of
a committed transaction, and nothing of a transaction the killed binder never committed. This writes both
topics the way the binder does (one transactional producer, the objects topic with one partition, the events
topic with several), aborts one transaction between two committed ones, and checks that `read_log` returns
exactly the committed records in order and that `audit` finds them clean.

The broker is a real JVM resolved from Maven Central; a machine that cannot run it makes this test FAIL (never
skip): it uses the session's broker (tests/conftest.py). No pytest-asyncio: the coroutine runs under asyncio.run.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from audit import ADDED, EVENTS_TOPIC, MODIFIED, OBJECTS_TOPIC, Log, audit, final_pods, pending_reasons, read_log
from podsched_devstack.kafka import KafkaBroker
from podsched_proto.events.v1.events_pb2 import Event, ObjectChange, ObjectReference

pytestmark = pytest.mark.kafka

# Generous for a 2-core machine that runs other work; the happy path takes a few seconds.
DEADLINE_S = 60.0
NS = "default"


# -- records, as the binder writes them -----------------------------------------------------------------------


def node_change(rv: int, name: str, cpu: str) -> tuple[bytes, bytes]:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }
    change = ObjectChange(
        type=ObjectChange.ADDED,
        object=ObjectReference(kind="Node", name=name, uid=f"uid-{name}"),
        resource_version=rv,
        object_json=json.dumps(doc).encode(),
        writer="podsched-binder",
    )
    return f"Node//{name}".encode(), change.SerializeToString()


def pod_change(rv: int, change_type: Any, name: str, cpu: str, priority: int, node: str = "") -> tuple[bytes, bytes]:
    phase = "Running" if node else "Pending"
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node:
        spec["nodeName"] = node
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": phase},
    }
    change = ObjectChange(
        type=change_type,
        object=ObjectReference(kind="Pod", namespace=NS, name=name, uid=f"uid-{name}"),
        resource_version=rv,
        object_json=json.dumps(doc).encode(),
        node_name=node,
        phase=phase,
        priority=priority,
        writer="podsched-binder",
    )
    return f"Pod/{NS}/{name}".encode(), change.SerializeToString()


def event(sequence: int, reason: str, pod: str, message: str, count: int = 1) -> tuple[bytes, bytes]:
    uid = f"uid-{pod}"
    record = Event(
        type="Warning" if reason == "FailedScheduling" else "Normal",
        reason=reason,
        message=message,
        involved_object=ObjectReference(kind="Pod", namespace=NS, name=pod, uid=uid),
        reporting_controller="default-scheduler",
        count=count,
        sequence=sequence,
    )
    return uid.encode(), record.SerializeToString()


async def create_topics(bootstrap: str, layout: dict[str, int]) -> None:
    """Create topics and wait until every partition has a leader (creation returns before that)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, num_partitions=n, replication_factor=1) for t, n in layout.items()])
        async with asyncio.timeout(DEADLINE_S):
            while True:
                described = await admin.describe_topics(list(layout))
                ready = all(
                    d["error_code"] == 0
                    and len([p for p in d["partitions"] if p["error_code"] == 0 and p["leader"] >= 0])
                    == layout[d["topic"]]
                    for d in described
                )
                if ready:
                    return
    finally:
        await admin.close()


async def send_all(producer: AIOKafkaProducer, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    for key, value in records:
        await producer.send(topic, key=key, value=value)


# -- tests ----------------------------------------------------------------------------------------------------


def test_read_log_sees_committed_transactions_only_and_audit_passes(kafka: KafkaBroker) -> None:
    prefix = f"audit-{uuid.uuid4().hex[:8]}."
    objects, events = prefix + OBJECTS_TOPIC, prefix + EVENTS_TOPIC
    first_objects = [
        node_change(1, "n1", cpu="4"),
        pod_change(2, ADDED, "a", cpu="2", priority=10),
        pod_change(3, MODIFIED, "a", cpu="2", priority=10, node="n1"),
        pod_change(4, ADDED, "big", cpu="8", priority=0),
    ]
    first_events = [
        event(0, "Scheduled", "a", "Successfully assigned default/a to n1"),
        event(1, "FailedScheduling", "big", "0/1 nodes are available: 1 Insufficient cpu."),
    ]
    # What a binder killed mid-transaction leaves: records that would overcommit n1, double-bind a and make
    # the sequence jump. read_committed must hide them.
    aborted_objects = [
        pod_change(5, MODIFIED, "big", cpu="8", priority=0, node="n1"),
        pod_change(6, MODIFIED, "a", cpu="2", priority=10, node="n2"),
    ]
    aborted_events = [event(7, "Scheduled", "big", "Successfully assigned default/big to n1")]
    second_objects = [pod_change(5, ADDED, "b", cpu="1", priority=5), pod_change(6, MODIFIED, "b", "1", 5, node="n1")]
    second_events = [
        event(1, "FailedScheduling", "big", "0/1 nodes are available: 1 Insufficient cpu.", count=2),
        event(2, "Scheduled", "b", "Successfully assigned default/b to n1"),
    ]

    async def scenario() -> Log:
        await create_topics(kafka.bootstrap_servers, {objects: 1, events: 3})
        producer = AIOKafkaProducer(
            bootstrap_servers=kafka.bootstrap_servers,
            transactional_id=f"{prefix}binder",
            enable_idempotence=True,
            acks="all",
        )
        await producer.start()
        try:
            async with asyncio.timeout(DEADLINE_S):
                async with producer.transaction():
                    await send_all(producer, objects, first_objects)
                    await send_all(producer, events, first_events)
                await producer.begin_transaction()
                await send_all(producer, objects, aborted_objects)
                await send_all(producer, events, aborted_events)
                await producer.abort_transaction()
                async with producer.transaction():
                    await send_all(producer, objects, second_objects)
                    await send_all(producer, events, second_events)
        finally:
            await producer.stop()
        return await read_log(kafka.bootstrap_servers, prefix, timeout=DEADLINE_S)

    log = asyncio.run(scenario())

    committed_objects = [value for _, value in first_objects + second_objects]
    assert [c.SerializeToString() for c in log.changes] == committed_objects
    # Offsets: 4 records, a commit marker, 2 aborted records, an abort marker, then the second transaction.
    assert log.change_offsets == [0, 1, 2, 3, 8, 9]
    expected_events = sorted(value for _, value in first_events + second_events)
    assert sorted(e.SerializeToString() for e in log.events) == expected_events
    assert log.problems == []
    acknowledged = [("Node", "", "n1"), ("Pod", NS, "a"), ("Pod", NS, "big"), ("Pod", NS, "b")]
    assert audit(log, acknowledged) == []
    assert {uid: pod.node_name for uid, pod in final_pods(log).items()} == {"uid-a": "n1", "uid-big": "", "uid-b": "n1"}
    assert pending_reasons(log) == {"uid-big": "0/1 nodes are available: 1 Insufficient cpu."}


def test_read_log_of_topics_that_do_not_exist_is_empty(kafka: KafkaBroker) -> None:
    log = asyncio.run(read_log(kafka.bootstrap_servers, f"absent-{uuid.uuid4().hex[:8]}.", timeout=DEADLINE_S))
    assert log == Log()
    assert audit(log) == []
