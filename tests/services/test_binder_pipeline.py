"""The binder applies the next batch while the previous batch's transaction commits
(services/podsched_binder/service.py), and still answers each write only once its own batch has
committed, with the versions as of its own batch. One Binder in this process, over the session's
real Kafka broker; the log is read back by a Replica as any follower reads it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from manifest_dicts import node
from podsched.api.manifests import decode_object
from podsched.cluster.state import Cluster
from podsched_binder.config import BinderConfig
from podsched_binder.service import Binder
from podsched_devstack.kafka import KafkaBroker
from podsched_service.replica import Replica


class NodeWrite:
    """An operation that creates one node, and what the test sees of it: whether it has been
    applied, and whether the first write had been answered by then."""

    def __init__(self, name: str, first: asyncio.Future[Any] | None = None) -> None:
        self.node = decode_object(node(name), owned=True)
        self.first = first
        self.applied = False
        self.first_answered_when_applied: bool | None = None

    def __call__(self, cluster: Cluster) -> int:
        _, stored = cluster.apply(self.node)
        self.applied = True
        if self.first is not None:
            self.first_answered_when_applied = self.first.done()
        return stored.metadata.resource_version


async def until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll every loop turn (the commit in flight is a few broker round trips away)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0)


async def written_and_read_back(bootstrap: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}."
    binder = Binder(
        BinderConfig(
            kafka_bootstrap_servers=bootstrap,
            topic_prefix=prefix,
            leader_election=False,
            transactional_id=f"{prefix}binder",
        )
    )
    await binder.start()
    try:
        first = NodeWrite("node-a")
        (first_done,) = binder.submit_all([(first, None)])
        await until(lambda: first.applied, "the first write to be applied")
        # The first batch's transaction is in flight: its answer waits for the broker.
        second = NodeWrite("node-b", first_done)
        (second_done,) = binder.submit_all([(second, None)])
        await until(lambda: second.applied, "the second write to be applied")
        third = NodeWrite("node-c", first_done)
        (third_done,) = binder.submit_all([(third, None)])

        first_version, first_versions = await first_done
        second_version, second_versions = await second_done
        third_version, third_versions = await third_done

        assert second.first_answered_when_applied is False, "the second write waited for the first commit"
        assert third.first_answered_when_applied is False, "the third write waited for the first commit"
        # Answered with the versions as of their own batch: the first before the others were
        # applied, the two that arrived during its commit together, as of the later one.
        assert first_versions[0] == first_version < second_version < third_version
        assert second_versions == third_versions
        assert third_versions[0] == third_version
    finally:
        await binder.stop()

    cluster = Cluster(time.time, authoritative=False)
    replica = Replica(cluster, bootstrap, prefix, follow_events=True)
    try:
        await replica.replay()
    finally:
        await replica.stop()
    assert sorted(cluster.nodes) == ["node-a", "node-b", "node-c"]
    assert cluster.resource_version == third_version


def test_writes_arriving_during_a_commit_are_applied_meanwhile_and_answered_after_their_own(
    kafka: KafkaBroker,
) -> None:
    asyncio.run(asyncio.wait_for(written_and_read_back(kafka.bootstrap_servers), timeout=120))
