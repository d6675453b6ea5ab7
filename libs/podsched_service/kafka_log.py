"""The two topics and how services read them.

podsched.objects.v1 has one partition: the binder's resource versions are a total order over every
kind, and a replica that has applied version V has applied everything before it. It is compacted
and keyed by object: Kafka keeps each object's newest record, and a deletion's tombstone lets the
object's records go, so the topic (and the replay every service does on start) is the size of the
live cluster, not of its history. podsched.events.v1 also has one partition by default; records
are keyed by the involved object's UID, so more partitions keep each object's events in order. It
keeps events for a retention time, as the API server keeps Events for its --event-ttl.

The binder owns both topics: it creates them with `TopicSettings`, and on every start alters an
existing topic whose settings differ (a topic created before compaction existed included)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError

from podsched_service.codec import topics

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class TopicSettings:
    """How the binder configures its two topics (the binder's PODSCHED_OBJECTS_* and
    PODSCHED_EVENTS_* settings; docs/topics.md says what each one does)."""

    # podsched.objects.v1: the cleaner compacts only closed segments; a segment closes after this
    # many milliseconds (or bytes), so a quiet cluster's history is compacted too.
    objects_segment_ms: int = 600_000
    objects_segment_bytes: int = 64 * 1024 * 1024
    # Compaction starts once this fraction of the log is superseded records.
    objects_min_cleanable_dirty_ratio: float = 0.5
    # Records younger than this (milliseconds) are never compacted: a Watch resumes from any
    # version this recent.
    objects_min_compaction_lag_ms: int = 300_000
    # How long a deletion's tombstone stays (milliseconds): a follower that falls further behind
    # than this may miss a deletion, and must relist.
    objects_delete_retention_ms: int = 86_400_000
    # podsched.events.v1: milliseconds an event is kept (the API server's --event-ttl is 1 h).
    events_retention_ms: int = 3_600_000

    def objects_config(self) -> dict[str, str]:
        return {
            "cleanup.policy": "compact",
            "segment.ms": str(self.objects_segment_ms),
            "segment.bytes": str(self.objects_segment_bytes),
            "min.cleanable.dirty.ratio": str(self.objects_min_cleanable_dirty_ratio),
            "min.compaction.lag.ms": str(self.objects_min_compaction_lag_ms),
            "delete.retention.ms": str(self.objects_delete_retention_ms),
        }

    def events_config(self) -> dict[str, str]:
        return {
            "cleanup.policy": "delete",
            "retention.ms": str(self.events_retention_ms),
            # Retention deletes whole closed segments: one closes at least every retention period,
            # so an event is gone at most twice the retention after it was written.
            "segment.ms": str(self.events_retention_ms),
        }


async def ensure_topics(bootstrap: str, prefix: str, settings: TopicSettings, timeout: float = 60.0) -> None:
    """Create both topics if they do not exist, bring existing ones to `settings`, and wait until each
    partition has a leader."""
    objects_topic, events_topic = topics(prefix)
    await ensure_topic_names(bootstrap, [objects_topic], settings.objects_config(), timeout, alter=True)
    await ensure_topic_names(bootstrap, [events_topic], settings.events_config(), timeout, alter=True)


async def ensure_topic_names(
    bootstrap: str, names: list[str], config: dict[str, str], timeout: float = 60.0, alter: bool = False
) -> None:
    """Create the topics (one partition, the cluster's replication factor, `config`) that do not
    exist, and wait until each partition has a leader. With `alter`, a topic that exists with other
    settings is altered to `config`."""
    deadline = asyncio.get_running_loop().time() + timeout
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    await _retry_until(admin.start, deadline, "connect to Kafka at " + bootstrap)
    try:
        replicas = await cluster_replication_factor(admin)
        wanted = [NewTopic(name, 1, replicas, topic_configs=dict(config)) for name in names]
        for topic in wanted:
            try:
                response = await admin.create_topics([topic])
                # The response carries per-topic errors: (name, code, message) from v1 on.
                exists = any(error[1] == TopicAlreadyExistsError.errno for error in response.topic_errors)
            except TopicAlreadyExistsError:
                exists = True
            if exists and alter:
                await _alter_if_different(admin, topic.name, config)
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


async def _alter_if_different(admin: AIOKafkaAdminClient, name: str, config: dict[str, str]) -> None:
    """Bring an existing topic to `config` (e.g. a topic created before the log was compacted: it
    becomes compacted, and the cleaner then shrinks it to the live objects)."""
    resource = ConfigResource(ConfigResourceType.TOPIC, name, configs=None)
    described = await admin.describe_configs([resource])
    current: dict[str, str] = {}
    for response in described:
        for resource_result in response.resources:  # (error, message, type, name, entries)
            current.update({entry[0]: entry[1] for entry in resource_result[4]})
    differs = {key: (current.get(key), value) for key, value in config.items() if current.get(key) != value}
    if not differs:
        return
    # AlterConfigs sets the topic's whole override set: `config` is all of it (min.insync.replicas and
    # the rest are the cluster's).
    responses = await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name, configs=dict(config))])
    for response in responses:
        for error_code, error_message, *_ in response.resources:
            if error_code:
                raise RuntimeError(f"altering topic {name} to {config} failed: {error_code} {error_message}")
    changes = ", ".join(f"{key} {old} -> {new}" for key, (old, new) in sorted(differs.items()))
    log.warning("topic %s existed with other settings; altered: %s", name, changes)


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

    def __init__(self, bootstrap: str, topic_names: list[str], tails: dict[str, int] | None = None) -> None:
        self.topic_names = topic_names
        # topic -> how many of its last records to read, instead of all of them.
        self.tails = tails or {}
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            # How long the broker holds a fetch that finds nothing new: a fetch returns as soon as a
            # record is committed, so this bounds only the empty fetches of a quiet topic (one
            # request and answer per consumer every 50 ms was 20 a second from every replica).
            fetch_max_wait_ms=500,
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
        tailed = [tp for tp in self.partitions if tp.topic in self.tails]
        if tailed:
            starts = await self.consumer.beginning_offsets(tailed)
            ends = await self.consumer.end_offsets(tailed)
            for tp in tailed:
                self.consumer.seek(tp, max(starts[tp], ends[tp] - self.tails[tp.topic]))

    async def end_offsets(self) -> dict[TopicPartition, int]:
        result: dict[TopicPartition, int] = await self.consumer.end_offsets(self.partitions)
        return result

    async def read_to_end(self, handle: Callable[[ConsumerRecord], None], chunk: int | None = None) -> int:
        """Read every record committed when the call starts, and no later one (a fetch may return some:
        the consumer is moved back to the end, so whoever reads on gets them); returns how many were
        read. With `chunk`, other tasks run after every `chunk` records (a read in the background of a
        serving process must not hold its event loop for a whole fetch)."""
        ends = await self.end_offsets()
        count = 0
        while True:
            behind = [tp for tp, end in ends.items() if await self.consumer.position(tp) < end]
            if not behind:
                break
            batches = await self.consumer.getmany(*behind, timeout_ms=200, max_records=chunk)
            if chunk is not None:
                await asyncio.sleep(0)  # getmany returns at once when records are buffered
            for tp, records in batches.items():
                end = ends[tp]
                for record in records:
                    if record.offset >= end:
                        break
                    handle(record)
                    count += 1
        for tp, end in ends.items():
            if await self.consumer.position(tp) > end:
                self.consumer.seek(tp, end)
        return count

    async def take_over(self, other: LogReader) -> None:
        """Read `other`'s partitions too, each from where `other` stands, and stop `other`. One
        consumer then follows both readers' topics: a transaction that writes to both is one fetch
        request and answer for this reader instead of one for each."""
        handed = {tp: await other.consumer.position(tp) for tp in other.partitions}
        await other.stop()
        kept = {tp: await self.consumer.position(tp) for tp in self.partitions}
        self.topic_names += other.topic_names
        self.partitions += other.partitions
        # assign() replaces the assignment and forgets every position: each is set again before
        # the fetcher runs (no await in between), or it would start the partitions over from their
        # beginning. Records this consumer fetched but did not return yet are fetched again.
        self.consumer.assign(self.partitions)
        for tp, offset in (kept | handed).items():
            self.consumer.seek(tp, offset)

    async def stop(self) -> None:
        await self.consumer.stop()
