"""A user's aiokafka consumer (examples/follow_events.py, with the generated classes) follows the
cluster: it sees the preemption story in order, with consecutive event sequence numbers."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import time
from pathlib import Path

import yaml

from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "follow_events.py"


def load_example():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("follow_events", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_users_consumer_follows_the_preemption_story(kafka: KafkaBroker, stack: ServiceStack, api: Api) -> None:
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump_all([node("n1", cpu="2"), pod("low", "low-priority", "2", node_name="n1", grace=1)]))
    api.apply_text(yaml.safe_dump(pod("high", "high-priority", "2")))
    api.wait(lambda: api.pods().get("high", {}).get("spec", {}).get("nodeName"), timeout=30, what="high bound")

    lines: list[str] = []

    async def read_for_a_while() -> None:
        follower = asyncio.create_task(
            load_example().follow(kafka.bootstrap_servers, stack.settings.topic_prefix, lines.append)
        )
        deadline = time.monotonic() + 30
        while not any("Scheduled Pod/default/high" in line for line in lines) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower

    asyncio.run(read_for_a_while())
    events = [line for line in lines if line.startswith("#")]
    reasons = [line.split()[1] for line in events if "Pod/default/" in line]
    assert reasons == ["Preempted", "Killing", "Nominated", "FailedScheduling", "Deleted", "Scheduled"], events
    assert [int(line.split()[0][1:]) for line in events] == list(range(len(events))), "no gaps"
    assert any("DELETED Pod/low" in line for line in lines) and any("Pod/high node=n1" in line for line in lines)
