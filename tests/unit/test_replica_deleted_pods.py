"""A replica that skips the updates of bound pods deleted later in the same fetch (the filter's and
the preemption service's: `skip_updates_of_deleted_pods`) ends every fetch with the same cluster, the
same nominations and the same RoomTracker answers as one that applies every record, on random pod
lifecycles (created, nominated, bound, relabelled, terminated, deleted, created again under the same
name) cut into random fetches."""

from __future__ import annotations

import asyncio
import itertools

from aiokafka import ConsumerRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_pod
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, MODIFIED, REMOVED
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator
from podsched.scheduler.room import RoomTracker
from podsched_service.codec import topics
from podsched_service.replica import Replica, deleted_later_in
from replicas import LIFECYCLE_NODES, copy_state, lifecycle_records

PREFIX = "skipped."
OBJECTS_TOPIC = topics(PREFIX)[0]
ACTIONS = ("create", "nominate", "bind", "relabel", "terminate", "delete")

steps = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(ACTIONS), st.sampled_from(LIFECYCLE_NODES)), max_size=40)


def fetches(batch: list[ConsumerRecord], cuts: list[int]) -> list[list[ConsumerRecord]]:
    """`batch` cut at the offsets `cuts`: the fetches a consumer might get."""
    bounds = sorted({0, len(batch), *(cut % (len(batch) + 1) for cut in cuts)})
    return [batch[start:end] for start, end in itertools.pairwise(bounds)]


def follow(batch: list[ConsumerRecord], cuts: list[int], skip: bool) -> list[dict[str, object]]:
    """The copy's state after each fetch, applied as `Replica._follow` applies one."""

    async def run() -> list[dict[str, object]]:
        cluster = Cluster(lambda: 1000.0, authoritative=False)
        nominator = Nominator()
        cluster.listeners.append(nominator_feed(nominator))
        room = RoomTracker(lambda: cluster.resource_version)
        cluster.listeners.append(room.on_change)
        replica = Replica(cluster, "127.0.0.1:9", PREFIX, skip_updates_of_deleted_pods=skip)
        states = []
        for fetch in fetches(batch, cuts):
            deleted_later = deleted_later_in(fetch) if skip else frozenset()
            for record in fetch:
                replica._apply(record, deleted_later)
            states.append(state(cluster, nominator, replica, room, len(batch)))
        await replica.reader.stop()
        return states

    return asyncio.run(run())


def state(
    cluster: Cluster, nominator: Nominator, replica: Replica, room: RoomTracker, versions: int
) -> dict[str, object]:
    """The copy's state, and RoomTracker's answer for a pod that fit nowhere at each version."""
    probe = make_pod("probe").req(cpu="100m").obj()
    return {
        **copy_state(cluster, nominator, replica),
        "may_fit_since": [room.may_fit_since(probe, version) for version in range(versions + 1)],
    }


@settings(max_examples=200, deadline=None)
@given(steps, st.lists(st.integers(0, 80), max_size=3))
def test_skipping_updates_of_pods_deleted_later_in_the_fetch_ends_each_fetch_the_same(
    plan: list[tuple[int, str, str]], cuts: list[int]
) -> None:
    batch = lifecycle_records(plan, OBJECTS_TOPIC)
    assert follow(batch, cuts, skip=True) == follow(batch, cuts, skip=False)


def test_a_victims_termination_and_removal_in_one_fetch_is_one_change() -> None:
    """A preempted victim: bound, then terminated and removed in one transaction. The copy hears
    its removal only; its termination is never decoded."""
    plan = [(0, "create", "n1"), (0, "bind", "n1"), (0, "terminate", "n1"), (0, "delete", "n1")]
    batch = lifecycle_records(plan, OBJECTS_TOPIC)
    bound_at = 4  # the nodes' two records, the pod's creation and its binding come first

    async def heard(skip: bool) -> list[str]:
        cluster = Cluster(lambda: 1000.0, authoritative=False)
        changes: list[str] = []
        cluster.listeners.append(lambda change: changes.append(change.type) if change.kind == "Pod" else None)
        replica = Replica(cluster, "127.0.0.1:9", PREFIX, skip_updates_of_deleted_pods=skip)
        for fetch in (batch[:bound_at], batch[bound_at:]):
            deleted_later = deleted_later_in(fetch) if skip else frozenset()
            for record in fetch:
                replica._apply(record, deleted_later)
        await replica.reader.stop()
        return changes

    assert asyncio.run(heard(skip=False)) == [ADDED, MODIFIED, MODIFIED, REMOVED]
    assert asyncio.run(heard(skip=True)) == [ADDED, MODIFIED, REMOVED]
