"""A cluster as a service's replica holds it: objects restored from the log with increasing resource
versions, and a nominator fed by the log's changes as the filter and preemption services feed theirs."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from podsched.api.types import ApiObject
from podsched.cluster.state import Cluster
from podsched.cluster.store import MODIFIED, Change
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator


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
