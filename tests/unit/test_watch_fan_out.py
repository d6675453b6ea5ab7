"""The queue's Watch fan-out: a watcher that does not read is closed once its buffer is full, without
holding up the replica's listeners or the watchers that keep up."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from builders import make_pod
from podsched.cluster.store import ADDED, MODIFIED, Change
from podsched_queue.watch import WATCH_BUFFER_SIZE, WatchFanOut
from podsched_service.clock import SystemClock

BUFFER = 8


def pod_change(version: int) -> Change:
    pod = make_pod("web").obj()
    pod = dataclasses.replace(pod, metadata=dataclasses.replace(pod.metadata, resource_version=version))
    return Change(ADDED if version == 1 else MODIFIED, "Pod", None, pod)


def test_the_buffer_is_bounded_by_a_named_size() -> None:
    assert WatchFanOut(SystemClock()).subscribe().capacity == WATCH_BUFFER_SIZE


def test_a_watcher_that_never_reads_is_closed_when_full_and_a_reader_gets_every_item() -> None:
    async def run() -> tuple[list[int], object, WatchFanOut]:
        fan_out = WatchFanOut(SystemClock(), buffer_size=BUFFER)
        stalled = fan_out.subscribe()
        reader = fan_out.subscribe()
        received: list[int] = []

        async def read() -> None:
            while (item := await reader.next()) is not None:
                received.append(item.change.resource_version)

        reading = asyncio.create_task(read())
        # Bursts of half a buffer with a turn of the event loop between them: the reader keeps up,
        # the stalled watcher fills up in the third burst and is dropped then, in the listener's call.
        for burst in range(10):
            for version in range(burst * BUFFER // 2 + 1, (burst + 1) * BUFFER // 2 + 1):
                fan_out.on_change(pod_change(version))
            assert (stalled in fan_out.watchers) == (burst < 2)
            await asyncio.sleep(0)
        fan_out.close()
        await asyncio.wait_for(reading, 5)
        return received, stalled, fan_out

    received, stalled, fan_out = asyncio.run(run())
    assert received == list(range(1, 10 * BUFFER // 2 + 1))
    assert stalled.unresponsive and len(stalled) == 0  # its buffered items are freed at once
    assert fan_out.closed_unresponsive == 1 and stalled not in fan_out.watchers and len(fan_out.watchers) == 1
    assert "Forcing watcher close due to unresponsiveness" in stalled.unresponsive_message()


def test_a_closed_watcher_ends_at_once_and_a_stopping_service_still_sends_what_is_buffered() -> None:
    async def run() -> tuple[object, list[int]]:
        fan_out = WatchFanOut(SystemClock(), buffer_size=BUFFER)
        stalled = fan_out.subscribe()
        for version in range(1, BUFFER + 2):
            fan_out.on_change(pod_change(version))
        stalled_next = await asyncio.wait_for(stalled.next(), 5)
        stopping = fan_out.subscribe()
        for version in range(BUFFER + 2, BUFFER + 5):
            fan_out.on_change(pod_change(version))
        fan_out.close()
        sent = []
        while (item := await asyncio.wait_for(stopping.next(), 5)) is not None:
            sent.append(item.change.resource_version)
        assert not stopping.unresponsive
        return stalled_next, sent

    stalled_next, sent = asyncio.run(run())
    assert stalled_next is None
    assert sent == [BUFFER + 2, BUFFER + 3, BUFFER + 4]


def test_a_buffer_of_no_items_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="watch_buffer_size: Invalid value: 0: must be 1 or more"):
        WatchFanOut(SystemClock(), buffer_size=0)
