"""A cluster as a service's replica holds it: objects restored from the log with increasing resource
versions, and a nominator fed by the log's changes as the filter and preemption services feed theirs;
or a replica that follows a binder's copy through encoded records."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable

from podsched.api.types import ApiObject, Pod
from podsched.cluster.state import Cluster
from podsched.cluster.store import MODIFIED, Change
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator
from podsched_service.codec import change_record, decode_change


def replica(
    objects: Iterable[ApiObject], now: float = 1000.0, *, listeners: Iterable[Callable[[Change], None]] = ()
) -> tuple[Cluster, Nominator]:
    """`objects` restored in order (resource versions 1, 2, ...) into a non-authoritative cluster; the
    extra `listeners` hear the changes after the nominator does."""
    cluster = Cluster(lambda: now, authoritative=False)
    nominator = Nominator()
    cluster.listeners.append(nominator_feed(nominator))
    cluster.listeners.extend(listeners)
    for version, obj in enumerate(objects, start=1):
        obj.metadata.resource_version = version
        cluster.restore(MODIFIED, obj)
    return cluster, nominator


class LogFollowingReplica:
    """The binder's authoritative copy and a replica that follows its log: every change the binder
    makes is encoded as its record and decoded as a service decodes it, and `sync()` restores the
    records and events written since the last call, as a service's consumer would."""

    def __init__(self, clock: Callable[[], float], keep_history: bool = False) -> None:
        self.binder = Cluster(clock, keep_history=keep_history)
        self.replica = Cluster(clock, authoritative=False, keep_history=keep_history)
        self._clock = clock
        self._records: list[bytes] = []
        self.binder.listeners.append(self._record)

    def _record(self, change: Change) -> None:
        self._records.append(change_record(change, "test", self._clock(), 0)[2])

    def sync(self) -> None:
        for value in self._records:
            change_type, obj, _ = decode_change(value)
            self.replica.restore(change_type, obj)
        self._records.clear()
        for event in self.binder.events:
            if event.sequence >= self.replica.recorder.next_sequence:
                self.replica.restore_event(event)


def live_pod_objects() -> int:
    """How many Pod objects the interpreter holds (after a full collection): what a copy that forgot
    a pod must no longer count."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Pod))
