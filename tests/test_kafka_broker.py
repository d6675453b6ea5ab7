"""The local Kafka broker (podsched_devstack.kafka) against a real Apache Kafka server and aiokafka.

Proves what the rest of the test suite relies on: idempotent produce with acks=all, consumer groups with
manual commits and per-key ordering, and that topics, records and committed offsets survive a clean restart
and a kill -9 on the same data dir and port.

The broker is a real JVM resolved from Maven Central; a machine without Java or Maven makes these tests FAIL
(never skip), since a silently skipped broker test would hide a broken CI image.

No pytest-asyncio: each test drives its coroutine with asyncio.run. No sleeps: every wait is a broker call
bounded by a deadline.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from real_kafka import start_broker_or_fail

try:
    from podsched_devstack.kafka import INSTALL_HINT, KafkaBroker
except ModuleNotFoundError:  # the project is not pip-installed (-e): import from the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "libs"))
    from podsched_devstack.kafka import INSTALL_HINT, KafkaBroker

# Generous for a 2-core machine that runs other work; the happy path takes a few seconds.
DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    # Its own broker, not the session's: these tests stop, restart and kill -9 it.
    kafka = start_broker_or_fail(tmp_path_factory.mktemp("kafka"), timeout=90)
    try:
        yield kafka
    finally:
        kafka.stop()


# -- helpers -------------------------------------------------------------------------------------------------


async def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create a topic and wait until every partition has a leader (creation returns before that)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
        async with asyncio.timeout(DEADLINE_S):
            while True:
                [described] = await admin.describe_topics([topic])
                ready = [p for p in described["partitions"] if p["error_code"] == 0 and p["leader"] >= 0]
                if described["error_code"] == 0 and len(ready) == partitions:
                    return
    finally:
        await admin.close()


async def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> dict[int, int]:
    """Send keyed records idempotently with acks=all; return how many landed in each partition."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        futures = [await producer.send(topic, key=key, value=value) for key, value in records]
        metadata = await asyncio.wait_for(asyncio.gather(*futures), DEADLINE_S)
    finally:
        await producer.stop()
    per_partition: dict[int, int] = defaultdict(int)
    for meta in metadata:
        per_partition[meta.partition] += 1
    return dict(per_partition)


async def consume(consumer: AIOKafkaConsumer, count: int) -> list[ConsumerRecord[bytes, bytes]]:
    """Read exactly ``count`` records (each partition in order) or fail at the deadline."""
    records: list[ConsumerRecord[bytes, bytes]] = []
    async with asyncio.timeout(DEADLINE_S):
        while len(records) < count:
            batch = await consumer.getmany(timeout_ms=1000)
            for partition_records in batch.values():
                records.extend(partition_records)
    assert len(records) == count, f"expected {count} records, got {len(records)} (duplicates?)"
    return records


def group_consumer(bootstrap: str, topic: str, group: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- tests ---------------------------------------------------------------------------------------------------


def test_java_and_maven_are_installed() -> None:
    """Fails loudly (not a skip) on a machine that cannot run the broker."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    assert not missing, f"{' and '.join(missing)} missing; the Kafka broker tests need them: {INSTALL_HINT}"


def test_idempotent_produce_and_group_consume_keep_per_key_order(broker: KafkaBroker) -> None:
    topic, group = unique("roundtrip"), unique("group")
    keys = [f"pod-{k:02d}".encode() for k in range(20)]
    # 1000 records, 50 per key, interleaved across keys; the value carries the per-key sequence number.
    sent = [(keys[i % 20], f"{i // 20}".encode()) for i in range(1000)]

    async def scenario() -> None:
        await create_topic(broker.bootstrap_servers, topic, partitions=3)
        per_partition = await produce(broker.bootstrap_servers, topic, sent)
        assert sum(per_partition.values()) == 1000
        assert sorted(per_partition) == [0, 1, 2], f"20 keys should cover 3 partitions: {per_partition}"

        consumer = group_consumer(broker.bootstrap_servers, topic, group)
        await consumer.start()
        try:
            records = await consume(consumer, 1000)
            await consumer.commit()
            partitions = [TopicPartition(topic, p) for p in range(3)]
            end_offsets = await consumer.end_offsets(partitions)
            for tp in partitions:
                assert await consumer.committed(tp) == end_offsets[tp] == per_partition[tp.partition]
        finally:
            await consumer.stop()

        sequences: dict[bytes, list[int]] = defaultdict(list)
        partition_of_key: dict[bytes, set[int]] = defaultdict(set)
        for record in records:
            assert record.key is not None and record.value is not None
            sequences[record.key].append(int(record.value))
            partition_of_key[record.key].add(record.partition)
        assert set(sequences) == set(keys)
        for key, seqs in sequences.items():
            assert seqs == list(range(50)), f"{key!r} out of order or duplicated: {seqs}"
            assert len(partition_of_key[key]) == 1, f"{key!r} spread over partitions {partition_of_key[key]}"

    asyncio.run(scenario())


def _commit_then_restart(broker: KafkaBroker, crash: bool) -> None:
    """Produce, commit a mid-stream offset, restart the broker (clean or kill -9), then check both survive."""
    topic, group = unique("crash" if crash else "restart"), unique("group")
    sent = [(b"key", f"record-{i}".encode()) for i in range(200)]
    tp = TopicPartition(topic, 0)
    bootstrap_before = broker.bootstrap_servers

    async def before() -> None:
        await create_topic(broker.bootstrap_servers, topic, partitions=1)
        await produce(broker.bootstrap_servers, topic, sent)
        consumer = group_consumer(broker.bootstrap_servers, topic, group)
        await consumer.start()
        try:
            await consume(consumer, 200)
            await consumer.commit({tp: 120})  # as if records 120..199 were not processed yet
            assert await consumer.committed(tp) == 120
        finally:
            await consumer.stop()

    async def after() -> None:
        # The group resumes exactly at its committed offset ...
        consumer = group_consumer(broker.bootstrap_servers, topic, group)
        await consumer.start()
        try:
            assert await consumer.committed(tp) == 120
            rest = await consume(consumer, 80)
        finally:
            await consumer.stop()
        assert [(r.offset, r.value) for r in rest] == [(i, sent[i][1]) for i in range(120, 200)]
        # ... and a new group still sees every record from the start.
        fresh = group_consumer(broker.bootstrap_servers, topic, unique("fresh"))
        await fresh.start()
        try:
            everything = await consume(fresh, 200)
        finally:
            await fresh.stop()
        assert [r.value for r in everything] == [value for _, value in sent]
        # The restarted broker takes writes again (new producer id, same idempotent settings).
        assert await produce(broker.bootstrap_servers, topic, [(b"key", b"after-restart")]) == {0: 1}

    asyncio.run(before())
    if crash:
        broker.kill9()
    else:
        broker.stop()
    assert not broker.is_running()
    broker.start(timeout=90)
    assert broker.bootstrap_servers == bootstrap_before
    asyncio.run(after())


def test_restart_keeps_records_and_committed_offsets(broker: KafkaBroker) -> None:
    _commit_then_restart(broker, crash=False)


def test_kill9_keeps_acknowledged_records_and_committed_offsets(broker: KafkaBroker) -> None:
    # acks=all on one node means "in the page cache"; SIGKILL of the JVM does not lose the page cache, so
    # every acknowledged record and commit must be there after log recovery.
    _commit_then_restart(broker, crash=True)
