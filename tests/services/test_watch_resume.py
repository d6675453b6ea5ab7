"""A Watch that resumes, as Kubernetes watches do, on the real broker and the real services.

`Watch(since_resource_version=N)` replays every change after N from the log and then follows; an N the
compacted log no longer holds everything after fails with OUT_OF_RANGE "too old resource version: N (M)";
`podsched get pods --watch` and `podsched events --watch` (the real CLI, as a process) keep going across a
kill -9 of the server, and print every change and event once: nothing lost, nothing repeated (checked
against the log itself)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiokafka import AIOKafkaProducer
from test_bounded_log import apply, compacting_settings, node, pod, wait_for_log

from audit import Log, audit, read_log
from live_api import Api, node_of
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings, scrape, value
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import to_timestamp, topics
from podsched_service.kafka_log import TopicSettings, ensure_topics
from podsched_service.log_history import ChangesAfter, TooOld, read_after
from stacks import running

ROOT = Path(__file__).resolve().parents[2]


def read(kafka: KafkaBroker, prefix: str) -> Log:
    return asyncio.run(read_log(kafka.bootstrap_servers, prefix))


def take(stream: Any, count: int, timeout: float = 30.0) -> list[api_pb2.WatchEvent]:
    """The next `count` items of a Watch stream, or fail after `timeout` seconds."""
    items: list[api_pb2.WatchEvent] = []
    failed: list[grpc.RpcError] = []
    done = threading.Event()

    def reader() -> None:
        try:
            for item in stream:
                items.append(item)
                if len(items) == count:
                    break
        except grpc.RpcError as error:
            failed.append(error)
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    assert done.wait(timeout), f"{len(items)} of {count} watch items after {timeout}s"
    if failed:
        raise failed[0]
    assert len(items) == count, f"the watch ended after {len(items)} of {count} items"
    return items


@pytest.fixture
def compacting_stack(kafka: KafkaBroker, tmp_path: Path) -> Iterator[ServiceStack]:
    yield from running(compacting_settings(kafka, tmp_path / "services"))


def test_a_watch_from_a_resource_version_replays_every_later_change_then_follows(
    kafka: KafkaBroker, stack: ServiceStack, api: Api
) -> None:
    prefix = stack.settings.topic_prefix
    apply(api, node("node-a"))
    apply(api, *(pod(f"early-{i}") for i in range(5)))
    api.wait(lambda: len(api.pods()) == 5 and all(node_of(p) for p in api.pods().values()), 60, "binds")
    resume_from = max(c.resource_version for c in read(kafka, prefix).changes)
    apply(api, *(pod(f"later-{i}") for i in range(5)))
    api.stub.Delete(api_pb2.DeleteRequest(resource="pods", name="early-0", grace_period_seconds=0), timeout=30)
    api.wait(lambda: "early-0" not in api.pods() and all(node_of(p) for p in api.pods().values()), 60, "settled")
    expected = [c for c in read(kafka, prefix).changes if c.resource_version > resume_from and c.object.kind == "Pod"]
    assert any(c.type == events_pb2.ObjectChange.DELETED for c in expected)

    stream = api.stub.Watch(api_pb2.WatchRequest(kinds=["Pod"], since_resource_version=resume_from), timeout=60)
    replayed = take(stream, len(expected))
    assert [(i.change.resource_version, i.change.type, i.change.object.uid) for i in replayed] == [
        (c.resource_version, c.type, c.object.uid) for c in expected
    ]
    assert [i.change.object_json for i in replayed] == [c.object_json for c in expected]
    apply(api, pod("after-resume"))
    [follows] = take(stream, 1)
    assert follows.change.object.name == "after-resume"
    assert follows.change.resource_version > expected[-1].resource_version
    stream.cancel()


def test_a_version_compaction_removed_is_too_old_and_the_oldest_one_it_names_resumes(
    kafka: KafkaBroker, compacting_stack: ServiceStack
) -> None:
    stack, prefix = compacting_stack, compacting_stack.settings.topic_prefix
    api = Api(stack.server)
    try:
        [created] = api.apply_text(json.dumps(node("node-a")))
        first = int(json.loads(created.object_json)["metadata"]["resourceVersion"])  # superseded below
        apply(api, *(pod(f"p{i}") for i in range(10)))
        api.wait(lambda: len(api.pods()) == 10 and all(node_of(p) for p in api.pods().values()), 60, "binds")
        closers = iter(range(1000))

        def compacted(log: Log) -> bool:
            if log.compacted and first not in {c.resource_version for c in log.changes}:
                return True
            relabelled = node("node-a")
            relabelled["metadata"]["labels"] = {"closer": str(next(closers))}
            apply(api, relabelled)
            return False

        wait_for_log(kafka, prefix, compacted, "compaction of the node's superseded changes")
        with pytest.raises(grpc.RpcError) as refused:
            take(api.stub.Watch(api_pb2.WatchRequest(since_resource_version=first), timeout=30), 1)
        assert refused.value.code() == grpc.StatusCode.OUT_OF_RANGE
        details = refused.value.details() or ""
        assert details.startswith(f"too old resource version: {first} ("), details
        oldest = int(details.rsplit("(", 1)[1].rstrip(")"))
        assert oldest > first
        # From the oldest version it names, a watch resumes: every change after it, in order.
        expected = [c for c in read(kafka, prefix).changes if c.resource_version > oldest]
        stream = api.stub.Watch(api_pb2.WatchRequest(since_resource_version=oldest), timeout=30)
        got = take(stream, len(expected))
        assert [i.change.resource_version for i in got] == [c.resource_version for c in expected]
        stream.cancel()
    finally:
        api.close()


class CliWatch:
    """`podsched ARGS...` as a process, its stdout lines collected as they come."""

    def __init__(self, server: str, *args: str) -> None:
        env = {**os.environ, "PODSCHED_SERVER": server, "PYTHONPATH": str(ROOT / "libs")}
        command = [sys.executable, "-c", "from podsched_cli.main import main; raise SystemExit(main())", *args]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def wait_for(self, condition: Any, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition(self.lines):
            if self.process.poll() is not None:
                stderr = self.process.stderr.read() if self.process.stderr else ""
                raise AssertionError(f"the CLI exited ({self.process.returncode}): {stderr}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the CLI printed:\n{''.join(self.lines)}")
            time.sleep(0.1)

    def stop(self) -> str:
        self.process.terminate()
        _, stderr = self.process.communicate(timeout=30)
        self.thread.join(timeout=10)
        return stderr


def test_the_cli_watches_resume_across_a_server_restart_with_nothing_lost_or_repeated(
    kafka: KafkaBroker, stack: ServiceStack, api: Api
) -> None:
    prefix = stack.settings.topic_prefix
    apply(api, node("node-a"))
    apply(api, *(pod(f"before-{i}") for i in range(3)))
    api.wait(lambda: len(api.pods()) == 3 and all(node_of(p) for p in api.pods().values()), 60, "binds")
    pods = CliWatch(stack.server, "get", "pods", "--watch", "-o", "json")
    events = CliWatch(stack.server, "events", "--watch", "-o", "json")
    try:
        pods.wait_for(lambda lines: len(lines) >= 3, "the current pods")
        events.wait_for(lambda lines: len(lines) >= 3, "the events so far")
        apply(api, pod("during-0"))
        pods.wait_for(lambda lines: any('"during-0"' in line for line in lines), "a change before the restart")

        stack.kill9("queue")  # the watches' connection drops; changes keep coming while it is down
        stack.start_one("queue")
        apply(api, *(pod(f"after-{i}") for i in range(3)))
        api.stub.Delete(api_pb2.DeleteRequest(resource="pods", name="before-0", grace_period_seconds=0), timeout=30)
        api.wait(lambda: "before-0" not in api.pods() and all(node_of(p) for p in api.pods().values()), 60, "settled")

        log = read(kafka, prefix)
        pod_changes = [c for c in log.changes if c.object.kind == "Pod"]
        last = pod_changes[-1].resource_version
        pods.wait_for(
            lambda lines: any(json.loads(line)["metadata"]["resourceVersion"] == str(last) for line in lines),
            f"the last pod change (resource version {last})",
        )
        wanted_events = {e.sequence for e in log.events if e.involved_object.namespace == "default"}
        events.wait_for(lambda lines: len(lines) >= len(wanted_events), f"{len(wanted_events)} events")
    finally:
        pods_err, events_err = pods.stop(), events.stop()

    shown = [json.loads(line) for line in pods.lines]
    versions = [int(obj["metadata"]["resourceVersion"]) for obj in shown]
    listed = 3  # the current state first: one object per pod, in the state's order
    assert len(versions) == len(set(versions)), f"a change was shown twice: {versions}\n{pods_err}"
    first_state = {(obj["metadata"]["uid"], int(obj["metadata"]["resourceVersion"])) for obj in shown[:listed]}
    assert {obj["metadata"]["name"] for obj in shown[:listed]} == {f"before-{i}" for i in range(3)}
    after_list = max(v for _, v in first_state)
    expected = [c.resource_version for c in pod_changes if c.resource_version > after_list]
    assert versions[listed:] == expected, f"lost or out of order: {versions[listed:]} vs {expected}\n{pods_err}"

    # An event is (object, reason, message); a repeat prints it again with a higher count.
    printed = [
        (e["involvedObject"]["uid"], e["reason"], e["message"], e["count"]) for e in map(json.loads, events.lines)
    ]
    assert len(printed) == len(set(printed)), f"an event was shown twice: {printed}\n{events_err}"
    recorded = {
        (e.involved_object.uid, e.reason, e.message, e.count)
        for e in log.events
        if e.involved_object.namespace == "default"
    }
    assert set(printed) <= recorded
    newest = {}
    for uid, reason, message, count in recorded:
        newest[(uid, reason, message)] = max(newest.get((uid, reason, message), 0), count)
    missing = {key for key, count in newest.items() if (*key, count) not in set(printed)}
    assert not missing, f"lost: {missing}\n{events_err}"
    assert audit(log) == []


def test_the_cli_relists_when_compaction_removed_its_resume_point(
    kafka: KafkaBroker, compacting_stack: ServiceStack
) -> None:
    """While the public API is down, pods are deleted and created through the binder and compaction removes
    the changes after the CLI's resume point: on reconnecting it is told "too old resource version", lists
    again, and shows just what changed while it was away (the deletion as DELETED with the pod's last
    state), nothing it had shown already."""
    stack, prefix = compacting_stack, compacting_stack.settings.topic_prefix
    api = Api(stack.server)
    pods = CliWatch(stack.server, "get", "pods", "--watch", "-o", "json", "--output-watch-events")
    binder = grpc.insecure_channel(stack.settings.addresses["binder"])
    try:
        apply(api, node("node-a"))
        apply(api, *(pod(f"keep-{i}") for i in range(3)))
        api.wait(lambda: len(api.pods()) == 3 and all(node_of(p) for p in api.pods().values()), 60, "binds")
        last_shown = max(c.resource_version for c in read(kafka, prefix).changes if c.object.kind == "Pod")
        pods.wait_for(
            lambda lines: any(
                json.loads(line)["object"]["metadata"]["resourceVersion"] == str(last_shown) for line in lines
            ),
            "the pods as they are",
        )
        shown_before = len(pods.lines)
        stack.kill9("queue")
        writes = binder_pb2_grpc.BinderStub(binder)
        writes.Delete(binder_pb2.DeleteRequest(kind="Pod", namespace="default", name="keep-0", grace_period_seconds=0))
        for name in ("new-0", "new-1"):
            writes.Write(binder_pb2.WriteRequest(object_json=json.dumps(pod(name)).encode()), timeout=30)
        relabels = iter(range(1000))

        def too_old(_: Log) -> bool:
            history = ChangesAfter(last_shown)
            asyncio.run(read_after(kafka.bootstrap_servers, f"{prefix}podsched.objects.v1", history))
            try:
                history.check()
            except TooOld:
                return True
            relabelled = node("node-a")
            relabelled["metadata"]["labels"] = {"round": str(next(relabels))}
            writes.Write(binder_pb2.WriteRequest(object_json=json.dumps(relabelled).encode()), timeout=30)
            return False

        wait_for_log(kafka, prefix, too_old, f"compaction past resource version {last_shown}")
        stack.start_one("queue")
        pods.wait_for(
            lambda lines: (
                {"new-0", "new-1", "keep-0"}
                <= {json.loads(line)["object"]["metadata"]["name"] for line in lines[shown_before:]}
            ),
            "the relisted changes",
        )
        time.sleep(1)  # anything more it would print, it prints now
    finally:
        pods_err = pods.stop()
        binder.close()
        api.close()

    items = [json.loads(line) for line in pods.lines]
    seen = [(i["object"]["metadata"]["uid"], i["object"]["metadata"]["resourceVersion"], i["type"]) for i in items]
    assert len(seen) == len(set(seen)), f"shown twice: {seen}\n{pods_err}"
    after = items[shown_before:]
    gone = [i for i in after if i["type"] == "DELETED"]
    assert [i["object"]["metadata"]["name"] for i in gone] == ["keep-0"], after
    assert not any(i["object"]["metadata"]["name"] in ("keep-1", "keep-2") and i["type"] == "ADDED" for i in after)
    assert "too old" not in pods_err  # the relist is the CLI's own business: no error printed


# --- a restart with an hour of events behind it ------------------------------------------------------

HISTORY_EVENTS = 150_000  # enough that loading them outlasts the checks made while they load


def history_event(sequence: int, now: float) -> events_pb2.Event:
    """One pod-deleted event, as the binder records after churn (the pods themselves are long gone)."""
    name = f"churn-{sequence}"
    return events_pb2.Event(
        type="Normal",
        reason="Deleted",
        message=f"Deleted pod history/{name}",
        involved_object=events_pb2.ObjectReference(kind="Pod", namespace="history", name=name, uid=f"uid-{name}"),
        event_time=to_timestamp(now),
        reporting_controller="podsched-binder",
        count=1,
        last_time=to_timestamp(now),
        sequence=sequence,
    )


async def write_event_history(bootstrap: str, prefix: str, count: int) -> None:
    """The events topic as the binder leaves it after `count` pods of churn in the last hour, written
    before the stack starts (the binder then continues the sequence at `count`)."""
    await ensure_topics(bootstrap, prefix, TopicSettings())
    _, events_topic = topics(prefix)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, max_batch_size=1 << 20)
    await producer.start()
    try:
        now = time.time()
        for sequence in range(count):
            event = history_event(sequence, now)
            await producer.send(events_topic, event.SerializeToString(), key=event.involved_object.uid.encode())
        await producer.flush()
    finally:
        await producer.stop()


class Collector:
    """Every item of a Watch stream, collected by a thread until the stream is cancelled."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.items: list[api_pb2.WatchEvent] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with contextlib.suppress(grpc.RpcError):
            for item in self.stream:
                self.items.append(item)

    def events(self) -> list[tuple[int, int]]:
        return [(i.event.sequence, i.event.count) for i in self.items if i.HasField("event")]

    def wait(self, condition: Any, what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {len(self.items)} items"
            time.sleep(0.1)

    def stop(self) -> None:
        self.stream.cancel()
        self.thread.join(timeout=10)


def test_the_queue_serves_before_its_events_are_loaded_and_watches_opened_meanwhile_miss_and_repeat_nothing(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    """The events topic holds an hour of churn (HISTORY_EVENTS records) when the stack starts. The queue
    serves once the objects are replayed: while its events still load (its podsched_replica_events_loaded
    gauge is 0) it answers Get, a Watch of everything from now and a Watch of events resumed from inside
    the history both open, and Apply answers. Pods bound meanwhile and after the load record new events. The
    watch from now gets every event recorded after the queue started, none of the history; the resumed
    one every event after its resume point; each exactly once and in the log's order. A ListEvents asked
    during the load answers once the events are in, with the whole history."""
    prefix = f"t{uuid.uuid4().hex[:10]}."
    asyncio.run(write_event_history(kafka.bootstrap_servers, prefix, HISTORY_EVENTS))
    settings = StackSettings.on_free_ports(kafka.bootstrap_servers, tmp_path / "services", topic_prefix=prefix)
    stack = ServiceStack(settings)
    # The queue last, on its own: its load starts when it does, not while the others start.
    try:
        stack.start(tuple(name for name in settings.names if name != "queue"))
        stack.start_one("queue")
    except BaseException:
        stack.stop()
        raise
    api = Api(stack.server)
    # Every event in one ListEvents answer: tens of megabytes.
    big_messages = grpc.insecure_channel(stack.server, options=[("grpc.max_receive_message_length", 256 << 20)])
    lists = api_pb2_grpc.PodSchedStub(big_messages)
    watches: list[Collector] = []
    try:

        def loading() -> bool:
            return value(scrape(stack.metrics_url("queue")), "podsched_replica_events_loaded") == 0

        everything = Collector(api.stub.Watch(api_pb2.WatchRequest(include_events=True)))
        watches.append(everything)
        everything.wait(lambda: any(i.HasField("bookmark_resource_version") for i in everything.items), "the bookmark")
        resume_from = HISTORY_EVENTS - 10
        request = api_pb2.WatchRequest(include_events=True, events_only=True, since_event_sequence=resume_from)
        resumed = Collector(api.stub.Watch(request))
        watches.append(resumed)
        listed: list[api_pb2.ListEventsResponse] = []

        def list_events() -> None:
            listed.append(lists.ListEvents(api_pb2.ListEventsRequest(all_namespaces=True), timeout=120))

        listing = threading.Thread(target=list_events)
        listing.start()
        assert loading(), "the load ended before the watches opened and the list was asked: raise HISTORY_EVENTS"
        assert api.pods() == {}  # Get answers during the load (the resumed watch reads the log meanwhile)
        apply(api, node("node-a"), pod("during-load-0"))  # so does Apply
        apply(api, pod("during-load-1"))

        deadline = time.monotonic() + 120
        while loading():
            assert time.monotonic() < deadline, "the events did not load in 120 s"
            time.sleep(0.2)
        listing.join(timeout=120)
        apply(api, *(pod(f"after-load-{i}") for i in range(3)))
        api.wait(lambda: len(api.pods()) == 5 and all(node_of(p) for p in api.pods().values()), 60, "binds")

        log = read(kafka, prefix)
        recorded = [(e.sequence, e.count) for e in log.events]
        new = [(s, c) for s, c in recorded if s >= HISTORY_EVENTS]
        assert len(new) >= 5, new  # a Scheduled event per pod at least
        after_resume = [(s, c) for s, c in recorded if s > resume_from]
        everything.wait(lambda: len(everything.events()) >= len(new), f"{len(new)} new events")
        resumed.wait(lambda: len(resumed.events()) >= len(after_resume), f"{len(after_resume)} events")
        time.sleep(1)  # anything more they would get, they get now
        assert everything.events() == new
        assert resumed.events() == after_resume

        [during] = listed
        sequences = [e.sequence for e in during.events]
        assert sequences[:HISTORY_EVENTS] == list(range(HISTORY_EVENTS))
        after = lists.ListEvents(api_pb2.ListEventsRequest(all_namespaces=True), timeout=120)
        assert [e.sequence for e in after.events] == sorted({s for s, _ in recorded})
    finally:
        for watch in watches:
            watch.stop()
        big_messages.close()
        api.close()
        stack.stop()


# A queue whose Watches may fall only this many items behind, so that a burst of 100 pods overflows them.
SMALL_WATCH_BUFFER = 20


@pytest.fixture
def small_buffer_stack(kafka: KafkaBroker, tmp_path: Path) -> Iterator[ServiceStack]:
    prefix = f"t{uuid.uuid4().hex[:10]}."
    settings = StackSettings.on_free_ports(
        kafka.bootstrap_servers,
        tmp_path / "services",
        topic_prefix=prefix,
        service_env={"queue": {"PODSCHED_WATCH_BUFFER_SIZE": str(SMALL_WATCH_BUFFER)}},
    )
    yield from running(settings)


def test_a_stalled_watch_is_closed_and_the_cli_resumes_with_nothing_lost_or_repeated(
    kafka: KafkaBroker, small_buffer_stack: ServiceStack
) -> None:
    stack = small_buffer_stack
    api = Api(stack.server)
    # Without BDP probing the client's HTTP/2 window stays at 64 KiB: a client that stops reading stops
    # the server's sending after some 100 items (with it gRPC's windows grow to megabytes first).
    channel = grpc.insecure_channel(stack.server, options=[("grpc.http2.bdp_probe", 0)])
    try:
        apply(api, node("node-a"), pod("first"))
        api.wait(lambda: "first" in api.pods() and node_of(api.pods()["first"]), 60, "the first pod bound")
        pods = CliWatch(stack.server, "get", "pods", "--watch", "-o", "json")
        stalled = api_pb2_grpc.PodSchedStub(channel).Watch(api_pb2.WatchRequest(kinds=["Pod"]), timeout=120)
        try:
            pods.wait_for(lambda lines: len(lines) >= 1, "the current pods")
            _, bookmark = take(stalled, 2)  # the state and its bookmark; then this client reads no more
            assert bookmark.bookmark_resource_version > 0
            # One ApplyBatch is one binder transaction, which the replica hands the watchers at once:
            # more than SMALL_WATCH_BUFFER changes, so the CLI's watch is closed too, then resumes.
            apply(api, *(pod(f"burst-{i}") for i in range(100)))
            api.wait(lambda: len(api.pods()) == 101 and all(node_of(p) for p in api.pods().values()), 120, "binds")
            pod_changes = [c for c in read(kafka, stack.settings.topic_prefix).changes if c.object.kind == "Pod"]
            last = pod_changes[-1].resource_version
            pods.wait_for(
                lambda lines: any(json.loads(line)["metadata"]["resourceVersion"] == str(last) for line in lines),
                f"the last pod change (resource version {last})",
            )
            # The stalled client reads again: what the server had sent before it gave up, then the end.
            with pytest.raises(grpc.RpcError) as ended:
                for _ in stalled:
                    pass
            assert ended.value.code() == grpc.StatusCode.ABORTED
            assert "Forcing watcher close due to unresponsiveness" in (ended.value.details() or "")
            terminated = value(scrape(stack.metrics_url("queue")), "podsched_terminated_watchers_total")
            assert terminated >= 2, f"{terminated} watches closed: the CLI's was not"
        finally:
            stalled.cancel()
            pods_err = pods.stop()
    finally:
        channel.close()
        api.close()

    versions = [int(json.loads(line)["metadata"]["resourceVersion"]) for line in pods.lines]
    assert len(versions) == len(set(versions)), f"a change was shown twice: {versions}\n{pods_err}"
    listed = versions[0]  # the current state: the first pod
    expected = [c.resource_version for c in pod_changes if c.resource_version > listed]
    assert versions[1:] == expected, f"lost or out of order: {versions[1:]} vs {expected}\n{pods_err}"
