"""Bounded state on the real broker: podsched.objects.v1 is compacted and keyed by object, a deletion
leaves a tombstone, and a restart on the compacted log rebuilds exactly the live cluster, with resource
versions that keep increasing past every version the history ever held.

The binder gets test-sized compaction settings (segments close after 200 ms, the cleaner starts at 1 %
superseded records, nothing is held back from compaction, tombstones stay 1 s); the broker's cleaner
looks every second (podsched_devstack.kafka). Nothing else differs from a production stack."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from audit import Log, audit, read_log
from live_api import Api, node_of
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings
from podsched_proto.api.v1 import api_pb2
from podsched_service.codec import topics
from stacks import running

# Test-sized compaction (PODSCHED_* settings of the binder, docs/topics.md).
COMPACT_SOON = {
    "PODSCHED_OBJECTS_SEGMENT_MS": "200",
    "PODSCHED_OBJECTS_MIN_CLEANABLE_DIRTY_RATIO": "0.01",
    "PODSCHED_OBJECTS_MIN_COMPACTION_LAG_MS": "0",
    "PODSCHED_OBJECTS_DELETE_RETENTION_MS": "1000",
}
PODS = 40
KEPT = 10  # pods left alive; the others are created, bound and deleted


def compacting_settings(kafka: KafkaBroker, run_dir: Path) -> StackSettings:
    prefix = f"t{uuid.uuid4().hex[:10]}."
    return StackSettings.on_free_ports(
        kafka.bootstrap_servers,
        run_dir,
        topic_prefix=prefix,
        workers=1,
        service_env={"binder": {**COMPACT_SOON, "PODSCHED_TRANSACTIONAL_ID": f"podsched-binder-{prefix}"}},
    )


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}},
    }


def pod(name: str) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def apply(api: Api, *objects: dict[str, Any]) -> None:
    requests = [api_pb2.ApplyRequest(object_json=json.dumps(obj).encode()) for obj in objects]
    for result in api.stub.ApplyBatch(api_pb2.ApplyBatchRequest(requests=requests), timeout=60).results:
        assert result.code == 0, result.message


def live_state(api: Api) -> dict[str, list[Any]]:
    """Every stored object, as the public API answers (Kubernetes JSON, resourceVersion included)."""
    state = {}
    for resource in ("nodes", "pods", "priorityclasses", "poddisruptionbudgets"):
        reply = api.stub.Get(api_pb2.GetRequest(resource=resource, all_namespaces=True), timeout=30)
        state[resource] = [json.loads(obj) for obj in reply.objects_json]
    for builtin in state["priorityclasses"]:
        if builtin["metadata"]["name"].startswith("system-"):
            # The built-in classes are not in the log: each process makes them when it starts.
            builtin["metadata"].pop("creationTimestamp", None)
    return state


def read(kafka: KafkaBroker, prefix: str) -> Log:
    return asyncio.run(read_log(kafka.bootstrap_servers, prefix))


def wait_for_log(kafka: KafkaBroker, prefix: str, condition: Any, what: str, timeout: float = 90.0) -> Log:
    import time

    deadline = time.monotonic() + timeout
    while True:
        log = read(kafka, prefix)
        if condition(log):
            return log
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: {len(log.changes)} changes")
        time.sleep(0.5)


@pytest.fixture
def compacting_stack(kafka: KafkaBroker, tmp_path: Path) -> Iterator[ServiceStack]:
    yield from running(compacting_settings(kafka, tmp_path / "services"))


def test_compaction_then_a_restart_rebuilds_exactly_the_live_state(
    kafka: KafkaBroker, compacting_stack: ServiceStack
) -> None:
    stack, prefix = compacting_stack, compacting_stack.settings.topic_prefix
    api = Api(stack.server)
    # Every change a client was shown: the restarted binder must go past all of these versions.
    watch = api.stub.Watch(api_pb2.WatchRequest(), timeout=300)
    shown: list[int] = []
    threading.Thread(target=collect_versions, args=(watch, shown), daemon=True).start()
    try:
        apply(api, node("node-a"), node("node-b"))
        apply(api, *(pod(f"p{i}") for i in range(PODS)))
        api.wait(lambda: all(node_of(p) for p in api.pods().values()) and len(api.pods()) == PODS, 60, "binds")
        doomed = [f"p{i}" for i in range(KEPT, PODS)]
        deleted_uids = set()
        for name in doomed:
            request = api_pb2.DeleteRequest(resource="pods", name=name, grace_period_seconds=0)
            deleted_uids.add(json.loads(api.stub.Delete(request, timeout=30).object_json)["metadata"]["uid"])
        api.wait(lambda: len(api.pods()) == KEPT, 60, "deletions")
        # A node relabelled again and again: each change supersedes the one before.
        for round_ in range(5):
            relabelled = node("node-b")
            relabelled["metadata"]["labels"] = {"round": str(round_)}
            apply(api, relabelled)

        # Only closed segments are compacted: later writes close the one holding the deletions.
        closers = iter(range(1000))

        def compacted(log: Log) -> bool:
            if not any(c.object.uid in deleted_uids for c in log.changes) and log.tombstones == 0:
                return True
            relabelled = node("node-a")
            relabelled["metadata"]["labels"] = {"closer": str(next(closers))}
            apply(api, relabelled)
            return False

        log = wait_for_log(kafka, prefix, compacted, "the deleted pods' records and tombstones to be compacted away")
        highest = max(shown)
        history = len(shown)  # changes shown to the watch: the whole history
        assert log.compacted, "compaction left no gap in the chain of previous_resource_version"
        assert len(log.changes) < history // 2, (len(log.changes), history)
        assert audit(log) == []
        before = live_state(api)
        assert sorted(p["metadata"]["name"] for p in before["pods"]) == sorted(f"p{i}" for i in range(KEPT))

        for name in ("queue", "preemption", "filter", "binder"):
            stack.stop_one(name)
        stack.start()
        api.close()
        api = Api(stack.server)

        assert live_state(api) == before, "the rebuilt state differs from the live state before the restart"
        apply(api, pod("after-restart"))
        created = api.wait(lambda: node_of(api.pods().get("after-restart", {})) and api.pods()["after-restart"])
        assert int(created["metadata"]["resourceVersion"]) > highest, (created["metadata"]["resourceVersion"], highest)
        final = read(kafka, prefix)
        after = [c.resource_version for c in final.changes if c.object.name == "after-restart"]
        assert after and min(after) > highest  # versions strictly increase over the whole log: audit() below
        assert audit(final) == []
    finally:
        watch.cancel()
        api.close()


def collect_versions(stream: Any, versions: list[int]) -> None:
    try:
        for item in stream:
            if item.HasField("change"):
                versions.append(item.change.resource_version)
    except grpc.RpcError:
        pass  # cancelled at the end, or the server restarted


def test_an_existing_topic_that_keeps_everything_is_made_compacted_at_start(kafka: KafkaBroker, tmp_path: Path) -> None:
    """A deployment from before compaction has topics with retention.ms=-1 and cleanup.policy=delete: the
    binder alters them at start (and logs what it changed)."""
    settings = compacting_settings(kafka, tmp_path / "services")
    objects_topic, events_topic = topics(settings.topic_prefix)
    old = {"retention.ms": "-1", "min.insync.replicas": "1"}
    both = (objects_topic, events_topic)

    async def create_old() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(name, 1, 1, topic_configs=old) for name in both])
        finally:
            await admin.close()

    async def configs(name: str) -> dict[str, str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
        await admin.start()
        try:
            [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
        finally:
            await admin.close()
        return {entry[0]: entry[1] for resource in response.resources for entry in resource[4]}

    asyncio.run(create_old())
    assert asyncio.run(configs(objects_topic))["cleanup.policy"] == "delete"
    started = running(settings)
    stack = next(started)
    try:
        objects, events = asyncio.run(configs(objects_topic)), asyncio.run(configs(events_topic))
        assert objects["cleanup.policy"] == "compact"
        assert objects["segment.ms"] == COMPACT_SOON["PODSCHED_OBJECTS_SEGMENT_MS"]
        assert objects["min.cleanable.dirty.ratio"] == COMPACT_SOON["PODSCHED_OBJECTS_MIN_CLEANABLE_DIRTY_RATIO"]
        assert objects["delete.retention.ms"] == COMPACT_SOON["PODSCHED_OBJECTS_DELETE_RETENTION_MS"]
        assert events["cleanup.policy"] == "delete" and events["retention.ms"] == "3600000"
        assert f"topic {objects_topic} existed with other settings; altered" in stack.tail("binder", 200)
    finally:
        started.close()
