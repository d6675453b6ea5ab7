"""Watch fan-out: each change the queue's replica applies and each event it reads, to every open Watch.

The replica's listeners call `on_change` and `on_event`; each Watch call subscribes a `Watcher` and
reads it until it ends: the service is stopping (`close`), or the watcher fell `WATCH_BUFFER_SIZE`
items behind and was closed, as kube-apiserver's watch cache closes a watcher that does not keep up
(cacher/cache_watcher.go, "Forcing watcher close due to unresponsiveness"). Listeners never wait for
a watcher and a slow one costs at most its buffer; its client resumes from the last resource version
it read (the Watch handler ends the call with `UNRESPONSIVE_CODE`)."""

from __future__ import annotations

import asyncio
from collections import deque

import grpc
from prometheus_client import Counter

from podsched.api.types import ApiObject
from podsched.cluster import events as ev
from podsched.cluster.store import Change
from podsched_proto.api.v1 import api_pb2
from podsched_service.codec import change_message, event_to_proto

from .clock import Clock

WATCH_WRITER = ""  # Watch items are rebuilt from the replica, which does not keep the record's writer

# Items one Watch may have waiting to be sent. Upstream sizes a watcher's channel to "roughly one
# second of history", at most 1000 (apiserver cacher/watch_cache_history.go,
# maxWatchChanSizeWithIndexWithoutTrigger), and lets a full one block the dispatch for a time budget
# before closing it. The replica cannot wait: it hands its listeners a whole Kafka fetch in one go
# (up to 8 MiB a partition), and podsched's peak (about 1,000 pods/s, each created, bound and given a
# Scheduled event) is some 3,000 items a second. 10,000 items keep a reader that keeps up open through
# a burst or a pause of the event loop of a few seconds; a stalled one pins at most that many items
# (shared with the other watchers), some 10 MB of pods. The queue's PODSCHED_WATCH_BUFFER_SIZE sets it.
WATCH_BUFFER_SIZE = 10_000

# Upstream's apiserver_terminated_watchers_total.
TERMINATED_WATCHERS = Counter(
    "podsched_terminated_watchers_total",
    "Watches closed because their client did not keep up (their buffer of WATCH_BUFFER_SIZE items was full).",
)

# How the Watch call of a watcher that was closed for falling behind ends: ABORTED is gRPC's "retry at
# a higher level" (never produced by the transport itself), which the CLI and the dashboard take as
# "watch again from the last resource version read".
UNRESPONSIVE_CODE = grpc.StatusCode.ABORTED


class Watcher:
    """The items one Watch call has yet to send, at most `capacity` of them."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: deque[api_pb2.WatchEvent] = deque()
        self._waiting = asyncio.Event()
        self._stopping = False
        self.unresponsive = False  # closed because it fell `capacity` items behind

    @property
    def ended(self) -> bool:
        return self._stopping or self.unresponsive

    def offer(self, item: api_pb2.WatchEvent) -> bool:
        """Buffer the item; False, and the watcher is closed with its items dropped, if it is full."""
        if self.ended:
            return False
        if len(self._items) >= self.capacity:
            self.unresponsive = True
            self._items.clear()  # they will not be sent; the client reads them again when it resumes
            self._waiting.set()
            return False
        self._items.append(item)
        self._waiting.set()
        return True

    def stop(self) -> None:
        """The service is stopping: what is buffered is still sent, then the watch ends."""
        self._stopping = True
        self._waiting.set()

    def unresponsive_message(self) -> str:
        # The apiserver's log line, which its client never sees; here it is the call's status.
        return (
            f"Forcing watcher close due to unresponsiveness: {self.capacity} items were waiting to be sent;"
            " watch again from the last resource version received"
        )

    async def next(self) -> api_pb2.WatchEvent | None:
        """The next item, or None once the watcher has ended (see `unresponsive` for why)."""
        while not self._items:
            if self.ended:
                return None
            self._waiting.clear()
            await self._waiting.wait()
        return self._items.popleft()  # an unresponsive watcher has none: they were dropped

    def __len__(self) -> int:
        return len(self._items)


class WatchFanOut:
    def __init__(self, clock: Clock, buffer_size: int = WATCH_BUFFER_SIZE) -> None:
        if buffer_size < 1:
            raise ValueError(f"watch_buffer_size: Invalid value: {buffer_size}: must be 1 or more")
        self.clock = clock
        self.buffer_size = buffer_size
        self.watchers: list[Watcher] = []
        self.closed_unresponsive = 0  # watchers closed for falling behind, since the start

    def subscribe(self) -> Watcher:
        """A watcher that gets every item from now on, until the service stops or it falls behind."""
        watcher = Watcher(self.buffer_size)
        self.watchers.append(watcher)
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        if watcher in self.watchers:  # one closed for falling behind is already gone
            self.watchers.remove(watcher)

    def change_item(self, change_type: str, obj: ApiObject) -> api_pb2.WatchEvent:
        return api_pb2.WatchEvent(change=change_message(change_type, obj, WATCH_WRITER, self.clock.time()))

    def on_change(self, change: Change) -> None:
        if not self.watchers:
            return
        obj = change.new if change.new is not None else change.old
        assert obj is not None
        self._send(self.change_item(change.type, obj))

    def on_event(self, event: ev.Event) -> None:
        if not self.watchers:
            return
        self._send(api_pb2.WatchEvent(event=event_to_proto(event)))

    def _send(self, item: api_pb2.WatchEvent) -> None:
        refused = [watcher for watcher in self.watchers if not watcher.offer(item)]
        for watcher in refused:
            self.watchers.remove(watcher)
            if watcher.unresponsive:
                self.closed_unresponsive += 1
                TERMINATED_WATCHERS.inc()

    def close(self) -> None:
        for watcher in self.watchers:
            watcher.stop()
