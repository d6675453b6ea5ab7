"""Where a Watch resumes, on both sides, over records and items built in memory (the live behaviour, against
Kafka and a restarted server, is tests/services/test_watch_resume.py).

The server reads the log after a point (podsched_service.log_history) and must say "too old" exactly when
compaction or retention removed something after it; the CLI (podsched_cli.watching) must resume from the
newest point it was given, never from a version inside a listed state, and show nothing twice."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import ConsumerRecord

from podsched_cli.watching import ObjectsSeen, WatchPoint
from podsched_proto.api.v1 import api_pb2
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import mark_record
from podsched_service.log_history import ChangesAfter, EventsAfter, TooOld


def record(key: bytes | None, value: bytes | None, offset: int = 0) -> ConsumerRecord[Any, Any]:
    return ConsumerRecord("t", 0, offset, 0, 0, key, value, None, 0, 0, [])


def change(version: int, previous: int, name: str = "p") -> ConsumerRecord[Any, Any]:
    message = events_pb2.ObjectChange(
        type=events_pb2.ObjectChange.MODIFIED,
        object=events_pb2.ObjectReference(kind="Pod", namespace="default", name=name, uid=name),
        resource_version=version,
        previous_resource_version=previous,
    )
    return record(f"Pod/default/{name}".encode(), message.SerializeToString())


def mark(version: int) -> ConsumerRecord[Any, Any]:
    return record(*mark_record(version))


def event(sequence: int, count: int = 1) -> ConsumerRecord[Any, Any]:
    return record(b"uid", events_pb2.Event(reason="Scheduled", sequence=sequence, count=count).SerializeToString())


def changes_after(version: int, records: list[ConsumerRecord[Any, Any]]) -> list[int]:
    reader = ChangesAfter(version)
    for r in records:
        reader.read(r)
    reader.check()
    return [c.resource_version for c in reader.changes]


# A log whose first changes were compacted: 3 names 1 as its predecessor, which nobody read.
COMPACTED = [change(3, 1, "a"), mark(3), change(4, 3, "b"), record(b"Pod/default/c", None), change(6, 4, "d"), mark(6)]


def test_every_change_after_a_version_the_log_holds_whole_is_replayed() -> None:
    assert changes_after(1, COMPACTED) == [3, 4, 6]
    assert changes_after(4, COMPACTED) == [6]
    assert changes_after(6, COMPACTED) == []


def test_a_version_before_the_last_gap_is_too_old_naming_the_oldest_that_resumes() -> None:
    with pytest.raises(TooOld, match=r"^too old resource version: 0 \(1\)$"):
        changes_after(0, COMPACTED)


def test_a_gap_in_the_middle_moves_the_oldest_resumable_version_past_it() -> None:
    records = [change(1, 0, "a"), change(2, 1, "b"), change(5, 3, "c"), mark(5)]  # 3's record is gone
    assert changes_after(3, records) == [5]
    with pytest.raises(TooOld, match=r"too old resource version: 2 \(3\)"):
        changes_after(2, records)


def test_changes_that_vanished_entirely_at_the_end_are_seen_through_the_mark() -> None:
    """Deleted objects' last changes (and tombstones) all compacted away: only the mark says they were."""
    records = [change(1, 0, "a"), change(2, 1, "b"), mark(9)]
    with pytest.raises(TooOld, match=r"too old resource version: 5 \(9\)"):
        changes_after(5, records)
    assert changes_after(9, records) == []


def events_after(sequence: int, records: list[ConsumerRecord[Any, Any]]) -> list[tuple[int, int]]:
    reader = EventsAfter(sequence)
    for r in records:
        reader.read(r)
    reader.check()
    return [(e.sequence, e.count) for e in reader.events]


def test_events_after_one_include_later_repeats_of_earlier_events() -> None:
    records = [event(0), event(1), event(0, count=2), event(2), event(1, count=2)]
    assert events_after(1, records) == [(0, 2), (2, 1), (1, 2)]
    assert events_after(-1, records) == [(0, 1), (1, 1), (0, 2), (2, 1), (1, 2)]


def test_events_retention_removed_are_too_old_unless_the_next_one_is_the_first_kept() -> None:
    records = [event(3, count=4), event(5), event(6)]  # 0..4 expired; a repeat of 3 outlived its first record
    assert events_after(4, records) == [(5, 1), (6, 1)]
    with pytest.raises(TooOld, match=r"too old event sequence: 3 \(4\)"):
        events_after(3, records)


def item(**fields: Any) -> api_pb2.WatchEvent:
    return api_pb2.WatchEvent(**fields)


def test_the_cli_resumes_after_the_bookmark_not_from_versions_inside_the_listed_state() -> None:
    point = WatchPoint()
    request = point.request(api_pb2.WatchRequest(kinds=["Pod"]))
    assert request.since_resource_version == 0 and not request.HasField("since_event_sequence")
    point.advance(item(change=events_pb2.ObjectChange(resource_version=40)))  # an object of the state
    assert point.resource_version == 0  # a drop now lists again
    point.advance(item(bookmark_resource_version=52))
    point.advance(item(change=events_pb2.ObjectChange(resource_version=53)))
    assert point.request(api_pb2.WatchRequest()).since_resource_version == 53
    point.too_old("too old resource version: 53 (60)")
    assert point.request(api_pb2.WatchRequest()).since_resource_version == 0


def test_the_cli_resumes_events_after_the_newest_sequence_and_from_the_oldest_kept_when_too_old() -> None:
    point = WatchPoint(event_sequence=7)
    template = api_pb2.WatchRequest(include_events=True, events_only=True)
    assert point.request(template).since_event_sequence == 7
    point.advance(item(event=events_pb2.Event(sequence=9)))
    point.advance(item(event=events_pb2.Event(sequence=4, count=3)))  # a repeat of an older one
    assert point.request(template).since_event_sequence == 9
    point.too_old("too old event sequence: 9 (20)")
    assert point.request(template).since_event_sequence == -1


def test_a_relist_shows_only_what_changed_and_what_went_while_away() -> None:
    seen = ObjectsSeen()
    seen.start_relist()
    assert seen.is_new("a", 3, {"name": "a"}, deleted=False)
    assert seen.is_new("b", 4, {"name": "b"}, deleted=False)
    assert seen.end_relist() == []
    assert not seen.is_new("a", 3, {"name": "a"}, deleted=False)  # the same change again: not shown
    seen.start_relist()  # "too old": the state again, where b is gone and a unchanged
    assert not seen.is_new("a", 3, {"name": "a"}, deleted=False)
    assert seen.end_relist() == [{"name": "b"}]
    assert seen.is_new("a", 8, {"name": "a2"}, deleted=True)
    assert not seen.is_new("a", 7, {"name": "a"}, deleted=False)  # older than its deletion
