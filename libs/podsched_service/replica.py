"""A service's copy of the cluster, rebuilt from the binder's log and kept current by following it.

Every service except the binder holds one. A request names the resource version its caller has
seen; `wait_for` blocks until the copy has applied it, so answers are never computed on a copy
older than the caller's view (the binder's version order is total: podsched.objects.v1 has one
partition).

The objects topic is compacted to the live cluster, and a service serves once it has replayed it.
The events topic is kept by time (an hour of events, however many pods churned in it), and nothing a
service decides depends on it: a copy that follows events (the queue's, for Events and describe)
starts serving before they are loaded and loads them in the background with a second consumer
(`events_loaded`); what answers from them waits for that. Once they are loaded, the objects'
consumer takes the events partitions over where the second stopped: one fetch then brings a
transaction's records of both topics (each topic's records stay in log order; across topics there
was never an order, and an event that comes before its predecessors waits in `_early_events`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Container, Coroutine, Iterable

from aiokafka import ConsumerRecord
from prometheus_client import Counter, Gauge

from podsched.api.types import KIND_POD
from podsched.cluster import events as ev
from podsched.cluster.state import Cluster
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import (
    event_from_proto,
    mark_version,
    pending_pod_change,
    topics,
)
from podsched_service.kafka_log import LogReader
from podsched_service.restore import restore_change
from podsched_service.telemetry import process_span, tracing_enabled

log = logging.getLogger(__name__)

# Event records applied between two turns of the event loop while the events load behind a serving
# service (a few milliseconds of decoding: a request waits a few of these turns).
EVENTS_LOAD_CHUNK = 100

EVENTS_LOADED = Gauge(
    "podsched_replica_events_loaded",
    "1 once the events the log held at start are loaded (Events lists wait for it), 0 while they load.",
)
CONSUMER_LAG = Gauge(
    "podsched_kafka_consumer_lag_records",
    "Committed records on the topic this replica has not applied yet (last stable offset - position).",
    ["topic"],
)
RECORDS_APPLIED = Counter("podsched_kafka_records_consumed_total", "Records this replica applied.", ["topic"])
RESOURCE_VERSION = Gauge("podsched_replica_resource_version", "The last resource version this replica applied.")


class Replica:
    def __init__(
        self,
        cluster: Cluster,
        bootstrap: str,
        prefix: str,
        follow_events: bool = False,
        events_tail: int | None = None,
        events_retention_seconds: float | None = None,
        defer_pending_pods: bool = False,
        skip_updates_of_deleted_pods: bool = False,
    ) -> None:
        """`events_tail`: read only that many of the newest event records (the binder needs the next
        sequence and the recent events a repeat is matched against, not the whole retention window).
        `events_retention_seconds`: while following, forget events older than the events topic keeps
        them (a copy running for days holds the last hour, as one rebuilt from the log does).

        `defer_pending_pods`: keep the records of pods that are pending and not nominated (and not
        held yet) undecoded until `apply_deferred`, which the owner calls before it reads the copy.
        For a replica that reads pending pods only when asked about them (the preemption service:
        most pods are scheduled by the filter and never reach it): a pod bound in the meantime is
        decoded once, bound, and its pending records never.

        `skip_updates_of_deleted_pods`: an update of a bound pod whose deletion comes later in the
        same fetch is not applied (a preempted victim's DisruptionTarget and deletionTimestamp, then
        its removal, one transaction). For a copy whose owner reads it only between fetches and
        reacts to no single change (the filter's, the preemption service's): the copy after the
        fetch is the same, and so is what its RoomTracker says (the removal frees the node later).
        Not for the queue's: its scheduling queue hears every change, as upstream's informers
        deliver every watch event."""
        self.cluster = cluster
        self.objects_topic, self.events_topic = topics(prefix)
        self.reader = LogReader(bootstrap, [self.objects_topic])
        tails = {self.events_topic: events_tail} if events_tail is not None else None
        self.events_reader = LogReader(bootstrap, [self.events_topic], tails) if follow_events else None
        # Set once the events the log held at start are applied (at once without follow_events).
        self.events_loaded = asyncio.Event()
        if self.events_reader is None:
            self.events_loaded.set()
        # True while the record being applied is one the events log held at start: its events are
        # history, not news (`event_listeners` do not hear them).
        self._replaying_events = False
        # Called with every event applied as it happens (after the load), e.g. to send it to watches.
        self.event_listeners: list[Callable[[ev.Event], None]] = []
        cluster.event_listeners.append(self._event_applied)
        self.version = 0  # the last resource version applied
        self.events_retention_seconds = events_retention_seconds
        self._early_events: dict[int, ev.Event] = {}  # events that arrived before their predecessors
        # Pod UID -> the newest record of a pending, not nominated pod this copy does not hold yet
        # (None: every record is applied as it arrives). Insertion order is log order: a newer
        # record of the same pod is moved to the end.
        self._deferred: dict[str, events_pb2.ObjectChange] | None = {} if defer_pending_pods else None
        self.skip_updates_of_deleted_pods = skip_updates_of_deleted_pods
        self._progress = asyncio.Condition()
        self._tasks: list[asyncio.Task[None]] = []
        # Called after every batch of records is applied (e.g. to wake the scheduling loop).
        self.on_applied: list[Callable[[], None]] = []
        # Each topic's metric children, looked up once: `labels()` costs more than the count it
        # keeps, and a busy log brings a batch of a record or two at a time.
        followed = (self.objects_topic, self.events_topic)
        self._records_applied = {topic: RECORDS_APPLIED.labels(topic) for topic in followed}
        self._consumer_lag = {topic: CONSUMER_LAG.labels(topic) for topic in followed}

    @property
    def event_sequence(self) -> int:
        """The last event sequence applied with every earlier one still in the log (-1: none)."""
        return self.cluster.recorder.next_sequence - 1

    async def replay(self) -> int:
        """Apply the log up to its current end, events included; returns how many records were read."""
        count = await self._replay_objects()
        if self.events_reader is not None:
            count += await self._load_events()
        return count

    async def _replay_objects(self) -> int:
        await self.reader.start()
        count = await self.reader.read_to_end(self._apply)
        log.info("replayed %d object records up to resource version %d", count, self.version)
        return count

    async def _load_events(self) -> int:
        """Apply the events the log holds now; `event_listeners` hear none of them."""
        assert self.events_reader is not None
        began = asyncio.get_running_loop().time()
        await self.events_reader.start()
        self._replaying_events = True
        try:
            count = await self.events_reader.read_to_end(self._apply, chunk=EVENTS_LOAD_CHUNK)
        finally:
            self._replaying_events = False
        self.events_loaded.set()
        EVENTS_LOADED.set(1)
        seconds = asyncio.get_running_loop().time() - began
        log.info("loaded %d event records in %.1f s, up to event sequence %d", count, seconds, self.event_sequence)
        async with self._progress:
            self._progress.notify_all()
        return count

    async def start(self) -> None:
        """Replay the objects to the log's current end and follow them in the background; load the
        events (if followed) in the background, then follow them. Returns once the objects are
        replayed: `events_loaded` says when the events are."""
        EVENTS_LOADED.set(0)
        await self._replay_objects()
        self._in_background(self._follow(self.reader), "replica-follow")
        if self.events_reader is not None:
            self._in_background(self._load_then_hand_over_events(self.events_reader), "replica-events")
        else:
            EVENTS_LOADED.set(1)

    def _in_background(self, work: Coroutine[None, None, None], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        task.add_done_callback(_follow_ended)
        self._tasks.append(task)

    async def _load_then_hand_over_events(self, events_reader: LogReader) -> None:
        await self._load_events()
        await self.reader.take_over(events_reader)

    def _after_objects(self) -> None:
        RESOURCE_VERSION.set(self.version)
        for callback in self.on_applied:
            callback()

    def _after_events(self) -> None:
        if self.events_retention_seconds is not None:
            self.cluster.recorder.expire(self.cluster.clock() - self.events_retention_seconds)

    async def _follow(self, reader: LogReader) -> None:
        consumer = reader.consumer
        while True:
            batches = await consumer.getmany(timeout_ms=1000)
            if not batches:
                continue
            traced = tracing_enabled()
            for partition, records in batches.items():
                deleted_later: Container[int] = ()
                if self.skip_updates_of_deleted_pods and partition.topic == self.objects_topic:
                    deleted_later = deleted_later_in(records)
                for record in records:
                    if traced and record.headers:
                        with process_span(record):  # the handling (and the listeners it runs) joins the writer's trace
                            self._apply(record, deleted_later)
                    else:
                        self._apply(record, deleted_later)
                self._records_applied[partition.topic].inc(len(records))
                stable = consumer.last_stable_offset(partition)
                if stable is not None:
                    self._consumer_lag[partition.topic].set(max(0, stable - await consumer.position(partition)))
            topics_read = {partition.topic for partition in batches}
            if self.objects_topic in topics_read:
                self._after_objects()
            if self.events_topic in topics_read:
                self._after_events()
            async with self._progress:
                self._progress.notify_all()

    def _apply(self, record: ConsumerRecord, deleted_later: Container[int] = ()) -> None:
        """Apply one record; `deleted_later`: the offsets of records whose object's deletion comes
        later in the same fetch (see `skip_updates_of_deleted_pods`)."""
        if record.topic == self.objects_topic:
            if record.value is None:
                return  # a tombstone: the DELETED record before it was the change
            marked = mark_version(record.key, record.value)
            if marked is not None:
                # Versions up to the mark were handed out, even if compaction removed their changes.
                if marked > self.version:
                    self.version = marked
                    self.cluster.restore_resource_version(marked)
                return
            message = events_pb2.ObjectChange.FromString(record.value)
            version = message.resource_version
            if version <= self.version:
                return  # already applied (cannot happen with transactions; cheap to guard)
            self.version = version
            if record.offset in deleted_later and self._bound_pod_update(message):
                self.cluster.restore_resource_version(version)
                return
            if self._deferred is not None and self._defer(message):
                self.cluster.restore_resource_version(version)
                return
            restore_change(self.cluster, message)
            return
        event = event_from_proto(events_pb2.Event.FromString(record.value))
        recorder = self.cluster.recorder
        if not recorder.events and event.count > 1:
            return  # a repeat whose first record has expired (the topic's retention)
        if not recorder.events or event.sequence <= recorder.next_sequence:
            self.cluster.restore_event(event)
        else:
            self._early_events[event.sequence] = event
        while recorder.next_sequence in self._early_events:
            self.cluster.restore_event(self._early_events.pop(recorder.next_sequence))

    def _event_applied(self, event: ev.Event) -> None:
        if self._replaying_events:
            return
        for listener in self.event_listeners:
            listener(event)

    def _bound_pod_update(self, message: events_pb2.ObjectChange) -> bool:
        """Whether the record updates a pod this copy holds bound: its node cannot change, and its
        removal frees the node whatever the update said."""
        if message.type != events_pb2.ObjectChange.MODIFIED or message.object.kind != KIND_POD:
            return False
        held = self.cluster.pods_by_uid.get(message.object.uid)
        return held is not None and bool(held.spec.node_name)

    def _defer(self, message: events_pb2.ObjectChange) -> bool:
        """Keep a pending pod's record for later (True), or say the record is to be applied now: the
        pod is bound, nominated, deleted or already held. Its deferred record, if any, is dropped
        then: the newer record says all of the pod's state, as a restore does."""
        assert self._deferred is not None
        if message.object.kind != KIND_POD:
            return False
        uid = message.object.uid
        self._deferred.pop(uid, None)
        if pending_pod_change(message) and uid not in self.cluster.pods_by_uid:
            self._deferred[uid] = message
            return True
        return False

    def apply_deferred(self, uids: Iterable[str] | None = None) -> int:
        """Decode and apply the deferred pod records, in log order; returns how many. The copy is then
        what applying every record as it came would have made it (each restore says a pod's whole
        state, and no listener reacts to a pending, not nominated pod's arrival). With `uids`, only
        those pods' records: the copy is then that as far as those pods and every pod bound or
        nominated go, and the other pending pods' records wait for a later call."""
        if not self._deferred:
            return 0
        if uids is None:
            deferred = list(self._deferred.values())
            self._deferred.clear()
        else:
            deferred = [message for uid in set(uids) if (message := self._deferred.pop(uid, None)) is not None]
            deferred.sort(key=lambda message: message.resource_version)
        for message in deferred:
            restore_change(self.cluster, message)
        return len(deferred)

    async def wait_for(self, version: int, event_sequence: int = -1, timeout: float = 30.0) -> None:
        """Until this copy has applied `version` (and every event up to `event_sequence`)."""
        if self.version >= version and self.event_sequence >= event_sequence:
            return
        async with asyncio.timeout(timeout):
            async with self._progress:
                await self._progress.wait_for(lambda: self.version >= version and self.event_sequence >= event_sequence)

    async def wait_for_events(self, event_sequence: int, timeout: float) -> None:
        """Until the events the log held at start are loaded and every event up to `event_sequence`
        is applied (TimeoutError after `timeout` seconds)."""
        async with asyncio.timeout(timeout):
            await self.events_loaded.wait()
            async with self._progress:
                await self._progress.wait_for(lambda: self.event_sequence >= event_sequence)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.reader.stop()
        if self.events_reader is not None:
            await self.events_reader.stop()


def deleted_later_in(records: list[ConsumerRecord]) -> set[int]:
    """The offsets of the objects topic's records followed, in `records`, by a tombstone of their
    key: the object they change is deleted later in the fetch (the binder writes a tombstone right
    after every DELETED record, in the same transaction). The DELETED records are among them."""
    tombstoned: set[bytes] = set()
    offsets: set[int] = set()
    for record in reversed(records):
        if record.value is None:
            tombstoned.add(record.key)
        elif record.key in tombstoned:
            offsets.add(record.offset)
    return offsets


def _follow_ended(task: asyncio.Task[None]) -> None:
    """A replica that stopped following answers from an ever older cluster: crash instead (the
    services are crash-only; a supervisor restarts the process, which replays the log)."""
    if task.cancelled() or task.exception() is None:
        return
    log.critical("following the log failed; exiting so the service restarts", exc_info=task.exception())
    os._exit(3)
