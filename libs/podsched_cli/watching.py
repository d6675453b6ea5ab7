"""Watches that survive a dropped connection, as client-go's reflector does.

A Watch item says how far the client has read: a change its resource version, the bookmark after the
current state the version that state is complete at, an event its sequence. When the stream breaks (the
server restarts, the network drops) the watch is opened again from there, and the server replays what
happened in between from its log; so too when the server closes a watch whose client reads too slowly
(ABORTED). If the log no longer holds that point (compaction, retention), the
server says OUT_OF_RANGE "too old ..." and the watch starts over: objects are listed again (the current
state, then a bookmark), events read again from the oldest one recorded. What the caller has already
been given is filtered out here, so it sees nothing twice (`ObjectsSeen`, `EventDeduplicator`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc

from podsched_proto.api.v1 import api_pb2

# Codes after which the same watch is opened again: the server is going away or unreachable for a while,
# or it closed this watch because the client fell behind (ABORTED, "Forcing watcher close due to
# unresponsiveness": the server buffers a bounded number of items per watch).
RESUMABLE = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.INTERNAL, grpc.StatusCode.ABORTED}
)
RETRY_FIRST_SECONDS = 0.2
RETRY_MAX_SECONDS = 2.0


@dataclass
class WatchPoint:
    """Where a watch resumes. resource_version 0: list the current state again; event_sequence None:
    events from now on, -1: every event the log still holds."""

    resource_version: int = 0
    event_sequence: int | None = None
    listing: bool = False  # the current state is being sent: its items' versions are no resume point

    def request(self, template: api_pb2.WatchRequest) -> api_pb2.WatchRequest:
        request = api_pb2.WatchRequest()
        request.CopyFrom(template)
        request.since_resource_version = self.resource_version
        if self.event_sequence is not None:
            request.since_event_sequence = self.event_sequence
        self.listing = not template.events_only and self.resource_version == 0
        return request

    def advance(self, item: api_pb2.WatchEvent) -> None:
        which = item.WhichOneof("item")
        if which == "bookmark_resource_version":
            self.resource_version = item.bookmark_resource_version
            self.listing = False
        elif which == "change" and not self.listing:
            self.resource_version = max(self.resource_version, item.change.resource_version)
        elif which == "event":
            self.event_sequence = max(
                self.event_sequence if self.event_sequence is not None else -1, item.event.sequence
            )

    def too_old(self, details: str) -> None:
        """Start over from what the log still holds."""
        if "event sequence" in details:
            self.event_sequence = -1
        else:
            self.resource_version = 0


class ResumingWatch:
    """Iterate for every Watch item, across reconnections; `cancel()` (from another thread, or a signal
    handler) ends the iteration. `open_call(request)` starts one Watch call; a failure that is not a
    dropped connection or OUT_OF_RANGE is raised as `failure(error)` says."""

    def __init__(
        self,
        open_call: Callable[[api_pb2.WatchRequest], Any],
        template: api_pb2.WatchRequest,
        point: WatchPoint,
        failure: Callable[[grpc.RpcError], Exception],
        sleep: Callable[[float], None] = time.sleep,
        on_open: Callable[[api_pb2.WatchRequest], None] | None = None,
    ) -> None:
        self._open_call = open_call
        self._on_open = on_open
        self._template = template
        self.point = point
        self._failure = failure
        self._sleep = sleep
        self._call: Any = None
        self._cancelled = threading.Event()
        self.reconnections = 0

    def __iter__(self) -> Iterator[api_pb2.WatchEvent]:
        delay = RETRY_FIRST_SECONDS
        while not self._cancelled.is_set():
            request = self.point.request(self._template)
            if self._on_open is not None:
                self._on_open(request)
            self._call = self._open_call(request)
            try:
                for item in self._call:
                    delay = RETRY_FIRST_SECONDS
                    self.point.advance(item)
                    yield item
            except grpc.RpcError as error:
                code = error.code()
                if self._cancelled.is_set():
                    return
                if code == grpc.StatusCode.OUT_OF_RANGE:
                    self.point.too_old(error.details() or "")
                    continue
                if code not in RESUMABLE:
                    raise self._failure(error) from None
            if self._cancelled.is_set():
                return
            # The stream ended (a stopping server closes its watches) or the connection dropped.
            self.reconnections += 1
            self._sleep(delay)
            delay = min(RETRY_MAX_SECONDS, delay * 2)

    def cancel(self) -> None:
        self._cancelled.set()
        if self._call is not None:
            self._call.cancel()


@dataclass
class ObjectsSeen:
    """The version of each object shown so far, by uid: a change is shown only if it is newer, and a relist
    (after "too old") shows what changed while the watch was away, deletions included."""

    versions: dict[str, int] = field(default_factory=dict)
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    relisted: set[str] | None = None  # uids in the state being relisted, until its bookmark

    def start_relist(self) -> None:
        self.relisted = set()

    def is_new(self, uid: str, version: int, obj: dict[str, Any], deleted: bool) -> bool:
        if self.relisted is not None:
            self.relisted.add(uid)
        if self.versions.get(uid, 0) >= version:
            return False
        if deleted:
            self.versions.pop(uid, None)
            self.objects.pop(uid, None)
            self.versions[uid] = version  # a late copy of the deleted object must not come back
        else:
            self.versions[uid] = version
            self.objects[uid] = obj
        return True

    def end_relist(self) -> list[dict[str, Any]]:
        """The objects shown before that the relisted state no longer has: they were deleted meanwhile."""
        if self.relisted is None:
            return []
        gone = [uid for uid in self.objects if uid not in self.relisted]
        self.relisted = None
        return [self.objects.pop(uid) for uid in gone]
