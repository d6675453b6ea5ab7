"""Crash safety on a replicated Kafka: the services on a three-node KRaft cluster (every topic with
three replicas, min.insync.replicas=2). While pods are scheduled, with preemptions, the node leading
the object log's partition is killed with SIGKILL and started again, and then the node leading it
next. Every write the API acknowledged survives, and the auditor (tests/audit.py) finds nothing."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from aiokafka.admin import AIOKafkaAdminClient

from audit import audit, final_pods, read_log
from crash_load import Submitter, settle, supervise, wait_for_acks
from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_devstack.kafka_cluster import KafkaCluster
from podsched_devstack.services import ServiceStack, StackSettings
from podsched_service.codec import topics
from stacks import running

NODES = 20
SLOTS_PER_NODE = 10  # 1-CPU pods on 10-CPU nodes: 200 slots
LOW_PODS = 200
HIGH_PODS = 40  # each needs a low pod preempted


@pytest.fixture
def replicated_stack(kafka_cluster: KafkaCluster, tmp_path: Path) -> Iterator[ServiceStack]:
    prefix = f"t{uuid.uuid4().hex[:10]}."
    yield from running(
        StackSettings.on_free_ports(kafka_cluster.bootstrap_servers, tmp_path / "services", topic_prefix=prefix)
    )


async def describe(bootstrap: str, topic: str) -> tuple[int, list[int], list[int]]:
    """(leader, replicas, in-sync replicas) of the topic's partition 0."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    await admin.start()
    try:
        (description,) = await admin.describe_topics([topic])
        partition = next(p for p in description["partitions"] if p["partition"] == 0)
        return partition["leader"], sorted(partition["replicas"]), sorted(partition["isr"])
    finally:
        await admin.close()


def leader_of(cluster: KafkaCluster, topic: str, timeout: float = 60) -> int:
    """The node leading the topic's partition 0, once one leads it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            leader, _, _ = asyncio.run(describe(cluster.bootstrap_servers, topic))
            if leader >= 1:
                return leader
        except Exception:  # metadata unavailable while a leader is elected: ask again
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"no leader for {topic} within {timeout}s")
        time.sleep(0.5)


class Supervisor(threading.Thread):
    """Starts any service that died (the binder exits when a commit fails while a broker is away)."""

    def __init__(self, stack: ServiceStack) -> None:
        super().__init__(daemon=True)
        self.stack = stack
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.5):
            supervise(self.stack)


@pytest.mark.timeout(900)
def test_kill_9_of_the_leading_broker_and_then_of_the_next_loses_no_acknowledged_write(
    kafka_cluster: KafkaCluster, replicated_stack: ServiceStack
) -> None:
    stack = replicated_stack
    objects_topic, events_topic = topics(stack.settings.topic_prefix)
    api = Api(stack.server)
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump_all([node(f"n{i:02}", cpu=str(SLOTS_PER_NODE)) for i in range(NODES)]))
    for topic in (objects_topic, events_topic):
        _, replicas, _ = asyncio.run(describe(kafka_cluster.bootstrap_servers, topic))
        assert replicas == [1, 2, 3], f"{topic} has replicas {replicas}: the services must create it on every node"

    supervisor = Supervisor(stack)
    supervisor.start()
    lows = Submitter(stack.server, [pod(f"low-{i:03}", "low-priority", "1", grace=1) for i in range(LOW_PODS)])
    lows.start()
    wait_for_acks(lows, 50)
    first = leader_of(kafka_cluster, objects_topic)
    kafka_cluster.node(first).kill9()
    wait_for_acks(lows, 120, timeout=180)  # the cluster goes on with two nodes
    kafka_cluster.node(first).start(timeout=120)
    lows.join(timeout=300)
    assert lows.error is None, f"submitter failed: {lows.error!r}"
    settle(api, LOW_PODS)

    highs = Submitter(stack.server, [pod(f"high-{i:03}", "high-priority", "1", grace=1) for i in range(HIGH_PODS)])
    highs.start()
    wait_for_acks(highs, 10)
    second = leader_of(kafka_cluster, objects_topic)
    kafka_cluster.node(second).kill9()
    wait_for_acks(highs, 25, timeout=180)
    kafka_cluster.node(second).start(timeout=120)
    highs.join(timeout=300)
    assert highs.error is None, f"submitter failed: {highs.error!r}"
    acknowledged = lows.acknowledged + highs.acknowledged
    assert len(acknowledged) == LOW_PODS + HIGH_PODS

    settle(api, LOW_PODS)
    supervisor.halt.set()
    supervisor.join(timeout=60)
    log = asyncio.run(read_log(kafka_cluster.bootstrap_servers, stack.settings.topic_prefix, timeout=60))
    violations = audit(log, acknowledged)
    assert violations == [], "\n".join(violations[:30])
    live = {state.name: state for state in final_pods(log).values() if not state.deleted}
    assert all(live[f"high-{i:03}"].node_name for i in range(HIGH_PODS)), "every high-priority pod is bound"
    print(
        f"killed node {first} (leader), then node {second}; submit retries {lows.retries + highs.retries}; "
        f"{len(log.changes)} changes, {len(log.events)} events"
    )
    api.close()
