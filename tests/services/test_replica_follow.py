"""A replica that follows the events topic (the queue's) serves once the objects are replayed, loads the
events with a second consumer meanwhile, and then hands the events partition to the objects' consumer:
from then on one consumer (one fetch request per transaction) follows both topics. On the real broker:
records written before, during and after the handover are each applied once, in their topic's order,
and the event listeners hear exactly the events written after the load began."""

from __future__ import annotations

import asyncio
import time
import uuid

from aiokafka import AIOKafkaProducer, TopicPartition

from builders import make_node
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED
from podsched_devstack.kafka import KafkaBroker
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import change_message, object_key, to_timestamp, topics
from podsched_service.kafka_log import TopicSettings, ensure_topics
from podsched_service.replica import Replica

# Enough history that the load takes several chunks (turns of the event loop).
HISTORY_EVENTS = 2000
# Events (and a node every NODE_EVERY of them) written while the events load, then after the handover.
DURING_LOAD = 40
AFTER_HANDOVER = 40
NODE_EVERY = 5


def event_value(sequence: int, now: float) -> tuple[bytes, bytes]:
    uid = f"uid-churn-{sequence}"
    event = events_pb2.Event(
        type="Normal",
        reason="Deleted",
        message=f"Deleted pod history/churn-{sequence}",
        involved_object=events_pb2.ObjectReference(kind="Pod", namespace="history", name=f"churn-{sequence}", uid=uid),
        event_time=to_timestamp(now),
        reporting_controller="podsched-binder",
        count=1,
        last_time=to_timestamp(now),
        sequence=sequence,
    )
    return uid.encode(), event.SerializeToString()


def node_value(name: str, version: int, now: float) -> tuple[bytes, bytes]:
    node = make_node(name).capacity(cpu="4", pods=10).obj()
    node.metadata.resource_version = version
    return object_key(node), change_message(ADDED, node, "test", now).SerializeToString()


class Writer:
    """Writes events with consecutive sequences and, every NODE_EVERY events, a node with the next
    resource version, as the binder's transactions interleave the two topics."""

    def __init__(self, producer: AIOKafkaProducer, prefix: str) -> None:
        self.producer = producer
        self.objects_topic, self.events_topic = topics(prefix)
        self.sequence = 0
        self.version = 0

    async def write(self, events: int) -> None:
        now = time.time()
        for _ in range(events):
            key, value = event_value(self.sequence, now)
            await self.producer.send(self.events_topic, value, key=key)
            if self.sequence % NODE_EVERY == 0:
                self.version += 1
                key, value = node_value(f"node-{self.version}", self.version, now)
                await self.producer.send(self.objects_topic, value, key=key)
            self.sequence += 1
        await self.producer.flush()


async def follow_across_the_handover(bootstrap: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}."
    await ensure_topics(bootstrap, prefix, TopicSettings())
    objects_topic, events_topic = topics(prefix)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    cluster = Cluster(time.time, authoritative=False)
    replica = Replica(cluster, bootstrap, prefix, follow_events=True)
    heard: list[int] = []
    replica.event_listeners.append(lambda event: heard.append(event.sequence))
    try:
        writer = Writer(producer, prefix)
        await writer.write(HISTORY_EVENTS)
        await replica.start()
        # Serving: the objects are there, the events are not yet.
        assert len(cluster.nodes) == writer.version
        assert not replica.events_loaded.is_set(), "the events loaded before start returned: raise HISTORY_EVENTS"
        await writer.write(DURING_LOAD)
        await asyncio.wait_for(replica.events_loaded.wait(), 60)
        both = {TopicPartition(objects_topic, 0), TopicPartition(events_topic, 0)}
        async with asyncio.timeout(30):
            while replica.reader.consumer.assignment() != both:
                await asyncio.sleep(0.05)
        await writer.write(AFTER_HANDOVER)
        await replica.wait_for(writer.version, writer.sequence - 1, timeout=60)

        total = HISTORY_EVENTS + DURING_LOAD + AFTER_HANDOVER
        assert [event.sequence for event in cluster.events] == list(range(total))
        assert sorted(cluster.nodes) == sorted(f"node-{v}" for v in range(1, writer.version + 1))
        assert replica.version == writer.version
        # The listeners hear what came after the load began (some of the events written during the
        # load may have been committed before it read the topic's end: those are history), each once.
        assert heard, "no event was heard after the load"
        assert heard == list(range(heard[0], total))
        assert HISTORY_EVENTS <= heard[0] <= HISTORY_EVENTS + DURING_LOAD
    finally:
        await replica.stop()
        await producer.stop()


def test_after_the_events_load_one_consumer_follows_both_topics_and_applies_every_record_once(
    kafka: KafkaBroker,
) -> None:
    asyncio.run(follow_across_the_handover(kafka.bootstrap_servers))
