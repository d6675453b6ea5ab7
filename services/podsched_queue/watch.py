"""Watch fan-out: each change the queue's replica applies and each event it reads, to every open Watch.

The replica's listeners call `on_change` and `on_event`; each Watch call subscribes a queue of
items and reads it until `close` puts None (the service is stopping)."""

from __future__ import annotations

import asyncio

from podsched.api.types import ApiObject
from podsched.cluster import events as ev
from podsched.cluster.store import Change
from podsched_proto.api.v1 import api_pb2
from podsched_service.codec import change_message, event_to_proto

from .clock import Clock

WATCH_WRITER = ""  # Watch items are rebuilt from the replica, which does not keep the record's writer


class WatchFanOut:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.watchers: list[asyncio.Queue[api_pb2.WatchEvent | None]] = []

    def subscribe(self) -> asyncio.Queue[api_pb2.WatchEvent | None]:
        """A queue that gets every item from now on; None once the service stops."""
        watcher: asyncio.Queue[api_pb2.WatchEvent | None] = asyncio.Queue()
        self.watchers.append(watcher)
        return watcher

    def unsubscribe(self, watcher: asyncio.Queue[api_pb2.WatchEvent | None]) -> None:
        self.watchers.remove(watcher)

    def change_item(self, change_type: str, obj: ApiObject) -> api_pb2.WatchEvent:
        return api_pb2.WatchEvent(change=change_message(change_type, obj, WATCH_WRITER, self.clock.time()))

    def on_change(self, change: Change) -> None:
        if not self.watchers:
            return
        obj = change.new if change.new is not None else change.old
        assert obj is not None
        item = self.change_item(change.type, obj)
        for watcher in self.watchers:
            watcher.put_nowait(item)

    def on_event(self, event: ev.Event) -> None:
        if not self.watchers:
            return
        item = api_pb2.WatchEvent(event=event_to_proto(event))
        for watcher in self.watchers:
            watcher.put_nowait(item)

    def close(self) -> None:
        for watcher in self.watchers:
            watcher.put_nowait(None)
