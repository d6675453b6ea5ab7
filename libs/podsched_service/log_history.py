"""What the log still holds after a point: the changes after a resource version and the events after a
sequence, read back from Kafka for a Watch that resumes.

The objects topic is compacted, so an old change may be gone: the change recorded after it superseded it,
or its object was deleted and the tombstone has expired. Each change names the version recorded before it
(`previous_resource_version`), so a reader knows exactly where gaps are: from the version just before the
last gap on, the log holds every change. A resume from an older version fails with `TooOld`, as an etcd
compaction makes the API server answer 410 Gone "too old resource version", and the client relists.

The events topic loses its oldest events to retention; a resume from an event that is no longer recorded
(nor the one after it) fails the same way."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiokafka import ConsumerRecord

from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import mark_version
from podsched_service.kafka_log import LogReader


class TooOld(Exception):
    """The log no longer holds everything after `requested`; `oldest` is the oldest point it can resume
    from. The message is the API server's (resource versions) or its analogue (event sequences)."""

    def __init__(self, what: str, requested: int, oldest: int) -> None:
        super().__init__(f"too old {what}: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


@dataclass
class ChangesAfter:
    """Reads the objects topic, keeping the changes after `version` and tracking where the log is whole."""

    version: int
    changes: list[events_pb2.ObjectChange] = field(default_factory=list)
    last_change: int = 0  # the version of the last change read
    highest_mark: int = 0
    whole_from: int = 0  # every change after this version is in the log

    def read(self, record: ConsumerRecord) -> None:
        if record.value is None:
            return  # a tombstone: its DELETED record came before it
        marked = mark_version(record.key, record.value)
        if marked is not None:
            self.highest_mark = max(self.highest_mark, marked)
            return
        change = events_pb2.ObjectChange.FromString(record.value)
        if change.previous_resource_version != self.last_change:
            self.whole_from = change.previous_resource_version  # the changes in between were compacted away
        self.last_change = change.resource_version
        if change.resource_version > self.version:
            self.changes.append(change)

    def check(self) -> None:
        """Raise TooOld unless `changes` is every change after `version`."""
        whole_from = self.whole_from
        if self.highest_mark > self.last_change:
            whole_from = self.highest_mark  # the newest changes went entirely (deleted objects)
        if self.version < whole_from:
            raise TooOld("resource version", self.version, whole_from)


@dataclass
class EventsAfter:
    """Reads the events topic, keeping every record after the first record of event `sequence` (repeats of
    earlier events, their counts bumped, included: they happened after it)."""

    sequence: int
    events: list[events_pb2.Event] = field(default_factory=list)
    first_recorded: int | None = None  # the oldest event whose first record is still in the log
    found: bool = False
    # sequence -> the highest count read (the client has it, or gets it from `events`).
    counts: dict[int, int] = field(default_factory=dict)

    def read(self, record: ConsumerRecord) -> None:
        event = events_pb2.Event.FromString(record.value)
        self.counts[event.sequence] = max(self.counts.get(event.sequence, 0), event.count)
        if event.count == 1 and self.first_recorded is None:
            self.first_recorded = event.sequence
        if self.found or self.sequence < (self.first_recorded if self.first_recorded is not None else 0):
            self.events.append(event)
        elif event.sequence == self.sequence and event.count == 1:
            self.found = True

    def check(self) -> None:
        """Raise TooOld unless `events` is everything after `sequence`: its first record was read, or the
        first event still recorded is the one right after it."""
        oldest = (self.first_recorded if self.first_recorded is not None else self.sequence + 1) - 1
        if not self.found and self.sequence < oldest:
            raise TooOld("event sequence", self.sequence, oldest)


# Records read between two turns of the event loop: a Watch that resumes reads in a serving process.
READ_CHUNK = 500


async def read_after(bootstrap: str, topic: str, reader: ChangesAfter | EventsAfter) -> None:
    """Read `topic` from its beginning to its current end into `reader`."""
    log = LogReader(bootstrap, [topic])
    try:
        await log.start()
        await log.read_to_end(reader.read, chunk=READ_CHUNK)
    finally:
        await log.stop()
