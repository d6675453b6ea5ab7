"""Follow a podsched cluster from Kafka with aiokafka and the generated classes.

    python examples/follow_events.py [BOOTSTRAP] [TOPIC_PREFIX]

Prints every scheduling decision (podsched.events.v1) and every pod change (podsched.objects.v1)
as it is committed. read_committed matters: the binder writes in transactions, and a write it
never acknowledged (it crashed mid-way) is aborted and must not be seen. The objects topic is
compacted: besides changes it carries tombstones (null values, after a deletion) and, under the key
"podsched.resource-version-mark", ResourceVersionMark records (docs/topics.md)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer

from podsched_proto.events.v1.events_pb2 import Event, ObjectChange

MARK_KEY = b"podsched.resource-version-mark"


async def follow(bootstrap: str, prefix: str = "", on_line: Callable[[str], None] = print) -> None:
    consumer = AIOKafkaConsumer(
        f"{prefix}podsched.objects.v1",
        f"{prefix}podsched.events.v1",
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        async for record in consumer:
            if record.topic.endswith("podsched.events.v1"):
                event = Event.FromString(record.value)
                obj = event.involved_object
                on_line(f"#{event.sequence} {event.reason} {obj.kind}/{obj.namespace}/{obj.name}: {event.message}")
            elif record.value is None or record.key == MARK_KEY:
                continue  # a tombstone (its DELETED change came just before) or a ResourceVersionMark
            else:
                change = ObjectChange.FromString(record.value)
                ref = change.object
                where = f" node={change.node_name}" if change.node_name else ""
                nominated = f" nominated={change.nominated_node_name}" if change.nominated_node_name else ""
                on_line(
                    f"v{change.resource_version} {ObjectChange.Type.Name(change.type)} {ref.kind}/{ref.name}"
                    f"{where}{nominated}"
                )
    finally:
        await consumer.stop()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(follow(*(sys.argv[1:3] or ["127.0.0.1:19092"])))
