"""The two topics and how services read them.

podsched.objects.v1 has one partition: the binder's resource versions are a total order over every
kind, and a replica that has applied version V has applied everything before it. podsched.events.v1
also has one partition by default; records are keyed by the involved object's UID, so more
partitions keep each object's events in order. Both keep records forever (retention.ms=-1): the
log is the cluster's durable state, replayed by every service on start."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError

from podsched_service.codec import topics

log = logging.getLogger(__name__)

TOPIC_CONFIG = {"retention.ms": "-1"}


async def ensure_topics(bootstrap: str, prefix: str, timeout: float = 60.0) -> None:
    """Create both topics if they do not exist and wait until each partition has a leader."""
    await ensure_topic_names(bootstrap, list(topics(prefix)), TOPIC_CONFIG, timeout)


async def ensure_topic_names(bootstrap: str, names: list[str], config: dict[str, str], timeout: float = 60.0) -> None:
    """Create the topics (one partition, the cluster's replication factor, `config`) that do not
    exist, and wait until each partition has a leader."""
    deadline = asyncio.get_running_loop().time() + timeout
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    await _retry_until(admin.start, deadline, "connect to Kafka at " + bootstrap)
    try:
        replicas = await cluster_replication_factor(admin)
        wanted = [NewTopic(name, 1, replicas, topic_configs=dict(config)) for name in names]
        for topic in wanted:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics([topic])
        while True:
            described = await admin.describe_topics(names)
            ready = all(
                not t.get("error_code")
                and t.get("partitions")
                and all(p.get("leader", -1) >= 0 for p in t["partitions"])
                for t in described
            )
            if ready:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"topics {', '.join(names)} have no leader after {timeout}s")
            await asyncio.sleep(0.1)
    finally:
        await admin.close()


async def cluster_replication_factor(admin: AIOKafkaAdminClient) -> int:
    """The cluster's default.replication.factor (a broker's setting, read from one broker): topics are
    created with it, so a three-node cluster keeps each record on three nodes and one node alone on
    one, and min.insync.replicas is left to the cluster too."""
    cluster = await admin.describe_cluster()
    broker = str(cluster["brokers"][0]["node_id"])
    wanted = ConfigResource(ConfigResourceType.BROKER, broker, {"default.replication.factor": None})
    (response,) = await admin.describe_configs([wanted])
    (resource,) = response.to_object()["resources"]
    (entry,) = resource["config_entries"]
    return int(entry["config_value"])


async def _retry_until(start: Callable[[], Awaitable[None]], deadline: float, what: str) -> None:
    while True:
        try:
            await start()
            return
        except Exception as error:  # the broker may still be starting: keep trying until the deadline
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"could not {what}: {error}") from error
            await asyncio.sleep(0.5)


class LogReader:
    """Reads whole topics from the beginning (read_committed: aborted transactions never appear),
    without a consumer group: every service rebuilds from offset 0 and nothing needs committing."""

    def __init__(self, bootstrap: str, topic_names: list[str]) -> None:
        self.topic_names = topic_names
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=50,
            max_partition_fetch_bytes=8 * 1024 * 1024,
        )
        self.partitions: list[TopicPartition] = []

    async def start(self, timeout: float = 60.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        await _retry_until(self.consumer.start, deadline, "start a Kafka consumer")
        for topic in self.topic_names:
            while True:
                found = self.consumer.partitions_for_topic(topic)
                if found:
                    break
                await self.consumer._client.force_metadata_update()  # new topic: not yet in metadata
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"topic {topic} not found")
                await asyncio.sleep(0.1)
            self.partitions += [TopicPartition(topic, p) for p in sorted(found)]
        self.consumer.assign(self.partitions)
        await self.consumer.seek_to_beginning(*self.partitions)

    async def end_offsets(self) -> dict[TopicPartition, int]:
        result: dict[TopicPartition, int] = await self.consumer.end_offsets(self.partitions)
        return result

    async def read_to_end(self, handle: Callable[[ConsumerRecord], None]) -> int:
        """Read every record committed when the call starts; returns how many were read."""
        ends = await self.end_offsets()
        count = 0
        while True:
            behind = [tp for tp, end in ends.items() if await self.consumer.position(tp) < end]
            if not behind:
                return count
            batches = await self.consumer.getmany(*behind, timeout_ms=200)
            for records in batches.values():
                for record in records:
                    handle(record)
                    count += 1

    async def stop(self) -> None:
        await self.consumer.stop()
