"""A replica that defers pending pods' records (the preemption service's: `defer_pending_pods`) ends
up, once `apply_deferred` has run, with the same cluster as one that applies every record as it
arrives: the same pods, nodes' pods, nominations and resource version, on random pod lifecycles
(created, failed attempts, nominated, nomination cleared, bound, deleted, created again)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from aiokafka import ConsumerRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_node, make_pod
from podsched.api.types import CONDITION_POD_SCHEDULED, Pod, PodCondition
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, MODIFIED, REMOVED
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator
from podsched_service.codec import change_message, object_key, to_json, topics
from podsched_service.replica import Replica

PREFIX = "deferral."
OBJECTS_TOPIC = topics(PREFIX)[0]
NODES = ("n1", "n2")
ACTIONS = ("create", "fail", "nominate", "clear", "bind", "delete")

steps = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(ACTIONS), st.sampled_from(NODES)), max_size=40)


def records(plan: list[tuple[int, str, str]]) -> list[ConsumerRecord]:
    """The objects topic's records of two nodes and the pods' lifecycles `plan` describes."""
    changes: list[tuple[str, object]] = [(ADDED, make_node(name).capacity(cpu="4", pods=10).obj()) for name in NODES]
    pods: dict[int, Pod] = {}
    generation = 0
    for index, action, node in plan:
        pod = pods.get(index)
        if pod is None:
            if action != "create":
                continue
            generation += 1
            pod = make_pod(f"p{index}").uid(f"uid-{index}-{generation}").req(cpu="100m").obj()
            changes.append((ADDED, pod))
        elif action == "delete":
            changes.append((REMOVED, pod))
            del pods[index]
            continue
        elif pod.spec.node_name or action == "create":
            continue  # a bound pod only goes
        elif action == "fail":
            failed = PodCondition(CONDITION_POD_SCHEDULED, "False", "Unschedulable")
            pod = replace(pod, status=replace(pod.status, conditions=(failed,)))
            changes.append((MODIFIED, pod))
        elif action in ("nominate", "clear"):
            nominated = node if action == "nominate" else ""
            pod = replace(pod, status=replace(pod.status, nominated_node_name=nominated))
            changes.append((MODIFIED, pod))
        else:
            pod = replace(pod, spec=replace(pod.spec, node_name=node), status=replace(pod.status, phase="Running"))
            changes.append((MODIFIED, pod))
        pods[index] = pod
    out = []
    for offset, (change_type, obj) in enumerate(changes):
        stamped = replace(obj, metadata=replace(obj.metadata, resource_version=offset + 1))  # type: ignore[type-var]
        value = change_message(change_type, stamped, "test", 1000.0).SerializeToString()
        out.append(ConsumerRecord(OBJECTS_TOPIC, 0, offset, 0, 0, object_key(stamped), value, None, 0, len(value), []))
    return out


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


def state(cluster: Cluster, nominator: Nominator, replica: Replica) -> dict[str, object]:
    return {
        "pods": {uid: to_json(pod) for uid, pod in sorted(cluster.pods_by_uid.items())},
        "by_key": sorted(cluster.store.pods),
        "on_nodes": {
            name: sorted(info.pod.uid for info in cluster.snapshot().get(name).pods)  # type: ignore[union-attr]
            for name in NODES
        },
        "nominated": sorted((node, info.pod.uid) for node, infos in nominator.items() for info in infos),
        "version": (cluster.resource_version, replica.version),
    }


@settings(max_examples=150, deadline=None)
@given(steps)
def test_deferring_pending_pods_ends_in_the_same_cluster(plan: list[tuple[int, str, str]]) -> None:
    batch = records(plan)
    assert state(*follow(batch, defer=True)) == state(*follow(batch, defer=False))


def test_a_pod_bound_before_any_request_is_decoded_once() -> None:
    batch = records([(0, "create", "n1"), (0, "fail", "n1"), (0, "bind", "n2")])

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
    batch = records(plan)

    async def build() -> tuple[dict[str, object], dict[str, object], dict[str, str]]:
        cluster, nominator, replica = fed_copy(batch, defer=True)
        uids = {uid for uid in replica._deferred if int(uid.split("-")[1]) in named}
        assert replica.apply_deferred(uids) == len(uids)
        partial = state(cluster, nominator, replica)
        named_pods = {uid: to_json(cluster.pods_by_uid[uid]) for uid in uids}
        replica.apply_deferred()
        await replica.reader.stop()
        return partial, state(cluster, nominator, replica), named_pods

    partial, whole, named_pods = asyncio.run(build())
    expected = state(*follow(batch, defer=False))
    assert whole == expected
    expected_pods = expected["pods"]
    assert isinstance(expected_pods, dict)
    assert named_pods == {uid: expected_pods[uid] for uid in named_pods}
    for key in ("on_nodes", "nominated", "version"):
        assert partial[key] == expected[key], key
