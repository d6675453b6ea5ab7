"""A replica that defers pending pods' records (the preemption service's: `defer_pending_pods`) ends
up, once `apply_deferred` has run, with the same cluster as one that applies every record as it
arrives: the same pods, nodes' pods, nominations and resource version, on random pod lifecycles
(created, failed attempts, nominated, nomination cleared, bound, deleted, created again)."""

from __future__ import annotations

import asyncio

from aiokafka import ConsumerRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from podsched.cluster.state import Cluster
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator
from podsched_service.codec import to_json, topics
from podsched_service.replica import Replica
from replicas import LIFECYCLE_NODES, copy_state, lifecycle_records

PREFIX = "deferral."
OBJECTS_TOPIC = topics(PREFIX)[0]
ACTIONS = ("create", "fail", "nominate", "clear", "bind", "delete")

steps = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(ACTIONS), st.sampled_from(LIFECYCLE_NODES)), max_size=40)


def fed_copy(batch: list[ConsumerRecord], defer: bool) -> tuple[Cluster, Nominator, Replica]:
    """A cluster copy with its nominator, `batch` applied record by record (pending pods' records
    deferred when `defer`). Called inside a running event loop: the Replica's reader needs one."""
    cluster = Cluster(lambda: 1000.0, authoritative=False)
    nominator = Nominator()
    cluster.listeners.append(nominator_feed(nominator))
    replica = Replica(cluster, "127.0.0.1:9", PREFIX, defer_pending_pods=defer)
    for record in batch:
        replica._apply(record)
    return cluster, nominator, replica


def follow(batch: list[ConsumerRecord], defer: bool) -> tuple[Cluster, Nominator, Replica]:
    async def build() -> tuple[Cluster, Nominator, Replica]:
        cluster, nominator, replica = fed_copy(batch, defer)
        replica.apply_deferred()
        await replica.reader.stop()
        return cluster, nominator, replica

    return asyncio.run(build())


@settings(max_examples=150, deadline=None)
@given(steps)
def test_deferring_pending_pods_ends_in_the_same_cluster(plan: list[tuple[int, str, str]]) -> None:
    batch = lifecycle_records(plan, OBJECTS_TOPIC)
    assert copy_state(*follow(batch, defer=True)) == copy_state(*follow(batch, defer=False))


def test_a_pod_bound_before_any_request_is_decoded_once() -> None:
    batch = lifecycle_records([(0, "create", "n1"), (0, "fail", "n1"), (0, "bind", "n2")], OBJECTS_TOPIC)

    async def count() -> tuple[int, int]:
        cluster = Cluster(lambda: 1000.0, authoritative=False)
        heard: list[str] = []
        cluster.listeners.append(lambda change: heard.append(change.type) if change.kind == "Pod" else None)
        replica = Replica(cluster, "127.0.0.1:9", PREFIX, defer_pending_pods=True)
        for record in batch:
            replica._apply(record)
        applied = replica.apply_deferred()
        await replica.reader.stop()
        return len(heard), applied

    heard, applied = asyncio.run(count())
    # The pending pod's two records were never applied: the pod arrived bound, and nothing was left.
    assert (heard, applied) == (1, 0)


@settings(max_examples=100, deadline=None)
@given(steps, st.sets(st.integers(0, 3)))
def test_applying_some_pods_deferred_records_first_leaves_them_as_they_came(
    plan: list[tuple[int, str, str]], named: set[int]
) -> None:
    """A PostFilterRun applies only its own pods' deferred records: those pods, and every bound or
    nominated one, are then as in a copy that applied every record as it came, and the records left
    deferred are applied later to the same cluster."""
    batch = lifecycle_records(plan, OBJECTS_TOPIC)

    async def build() -> tuple[dict[str, object], dict[str, object], dict[str, str]]:
        cluster, nominator, replica = fed_copy(batch, defer=True)
        uids = {uid for uid in replica._deferred if int(uid.split("-")[1]) in named}
        assert replica.apply_deferred(uids) == len(uids)
        partial = copy_state(cluster, nominator, replica)
        named_pods = {uid: to_json(cluster.pods_by_uid[uid]) for uid in uids}
        replica.apply_deferred()
        await replica.reader.stop()
        return partial, copy_state(cluster, nominator, replica), named_pods

    partial, whole, named_pods = asyncio.run(build())
    expected = copy_state(*follow(batch, defer=False))
    assert whole == expected
    expected_pods = expected["pods"]
    assert isinstance(expected_pods, dict)
    assert named_pods == {uid: expected_pods[uid] for uid in named_pods}
    for key in ("on_nodes", "nominated", "version"):
        assert partial[key] == expected[key], key
