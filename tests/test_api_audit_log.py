"""The API audit log's producer (podsched_service.api_audit.ApiAuditLog) against a real Kafka broker.

Every record a caller awaited is on the topic once, in the order the calls were made; records that
arrive while a send is in flight leave together in the next one (group commits); a caller that stops
waiting does not lose its record nor hold up the others; and no caller waits longer than
`record_timeout`, even behind a send a paused broker stalls. The broker is the session's real JVM
(tests/conftest.py), or one of the test's own to pause; a machine that cannot run it makes this
FAIL. No pytest-asyncio: each coroutine runs under asyncio.run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from pathlib import Path

import pytest
from real_kafka import start_broker_or_fail

from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.process import thread_states
from podsched_proto.audit.v1 import audit_pb2
from podsched_service.api_audit import ApiAuditLog
from podsched_service.kafka_log import LogReader

pytestmark = pytest.mark.kafka

DEADLINE_S = 60.0  # generous for a 2-core machine that runs other work


async def until_stopped(pid: int, timeout: float = 10.0) -> None:
    """Until every thread of `pid` is stopped. kill(SIGSTOP) returns before the process has stopped:
    a broker thread that is running can still answer a request sent right after it (a CI run saw the
    first record acknowledged, and only the one behind it stall)."""
    async with asyncio.timeout(timeout):
        while not ((states := thread_states(pid)) and all(state in ("T", "t") for state in states)):
            await asyncio.sleep(0.005)


def audit_event(name: str) -> audit_pb2.AuditEvent:
    return audit_pb2.AuditEvent(
        audit_id=str(uuid.uuid4()),
        stage=audit_pb2.AuditEvent.RESPONSE_COMPLETE,
        verb="create",
        object_ref=audit_pb2.ObjectReference(resource="pods", namespace="default", name=name, api_version="v1"),
        response_status=audit_pb2.ResponseStatus(code=201, grpc_code="OK"),
    )


async def recorded_ids(bootstrap: str, topic: str) -> list[str]:
    """The audit ids on the topic, in log order."""
    reader = LogReader(bootstrap, [topic])
    await reader.start()
    ids: list[str] = []
    try:
        await reader.read_to_end(lambda record: ids.append(audit_pb2.AuditEvent.FromString(record.value).audit_id))
    finally:
        await reader.stop()
    return ids


def test_records_sent_while_a_send_is_in_flight_leave_together_and_every_one_is_on_the_topic_once(
    kafka: KafkaBroker,
) -> None:
    async def run() -> None:
        audit_log = ApiAuditLog(kafka.bootstrap_servers, f"a{uuid.uuid4().hex[:10]}.")
        await audit_log.start()
        try:
            first = [audit_event(f"first-{i}") for i in range(100)]
            second = [audit_event(f"second-{i}") for i in range(100)]
            async with asyncio.timeout(DEADLINE_S):
                # A wave of calls in one turn of the event loop is one send.
                first_wave = asyncio.gather(*(audit_log.record(e) for e in first))
                while audit_log.sends == 0:
                    await asyncio.sleep(0)
                assert audit_log.sends == 1
                # Calls made while it is in flight wait for it, then leave together.
                second_wave = asyncio.gather(*(audit_log.record(e) for e in second))
                await first_wave
                await second_wave
            assert audit_log.sends == 2
            ids = await recorded_ids(kafka.bootstrap_servers, audit_log.topic)
            assert ids == [e.audit_id for e in first + second]
        finally:
            await audit_log.stop()

    asyncio.run(run())


def test_a_caller_that_stops_waiting_leaves_its_record_sent_and_the_others_answered(kafka: KafkaBroker) -> None:
    async def run() -> None:
        audit_log = ApiAuditLog(kafka.bootstrap_servers, f"a{uuid.uuid4().hex[:10]}.")
        await audit_log.start()
        try:
            events = [audit_event(f"pod-{i}") for i in range(10)]
            async with asyncio.timeout(DEADLINE_S):
                calls = [asyncio.ensure_future(audit_log.record(e)) for e in events]
                while audit_log.sends == 0:
                    await asyncio.sleep(0)
                calls[3].cancel()  # the client went away while its record was being sent
                outcomes = await asyncio.gather(*calls, return_exceptions=True)
                assert isinstance(outcomes[3], asyncio.CancelledError)
                assert [o for i, o in enumerate(outcomes) if i != 3] == [None] * 9
                await audit_log.record(later := audit_event("later"))  # the log goes on
            ids = await recorded_ids(kafka.bootstrap_servers, audit_log.topic)
            assert ids == [e.audit_id for e in [*events, later]]
        finally:
            await audit_log.stop()

    asyncio.run(run())


def test_a_record_that_cannot_be_sent_is_logged_in_full_and_the_call_answers(
    kafka: KafkaBroker, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> None:
        audit_log = ApiAuditLog(kafka.bootstrap_servers, f"a{uuid.uuid4().hex[:10]}.")
        await audit_log.start()
        producer = audit_log.producer
        assert producer is not None
        audit_log.producer = None  # as after stop: the record cannot be sent
        try:
            lost = audit_event("lost")
            async with asyncio.timeout(DEADLINE_S):
                await audit_log.record(lost)
        finally:
            await producer.stop()
        lines = [r for r in caplog.records if getattr(r, "decision", "") == "AuditRecordLost"]
        assert len(lines) == 1 and lost.audit_id in lines[0].getMessage()

    asyncio.run(run())


def test_a_call_made_behind_a_stalled_send_still_waits_no_longer_than_record_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A broker of the test's own is paused (SIGSTOP, as a long GC pause or a frozen host would):
    the first send stalls. A call made while it is in flight waits for that send, then for its own,
    and still answers `record_timeout` after it was made (not twice that), its record logged in full.
    Once the broker runs again, the producer still delivers both records."""
    record_timeout = 3.0
    broker = start_broker_or_fail(tmp_path / "kafka")
    pid = broker.pid
    assert pid is not None

    async def run() -> None:
        audit_log = ApiAuditLog(broker.bootstrap_servers, "stall.", record_timeout=record_timeout)
        await audit_log.start()
        loop = asyncio.get_running_loop()

        async def waited(event: audit_pb2.AuditEvent) -> float:
            called = loop.time()
            await audit_log.record(event)
            return loop.time() - called

        before, first, behind = audit_event("before"), audit_event("first"), audit_event("behind")
        try:
            async with asyncio.timeout(DEADLINE_S):
                await audit_log.record(before)  # connected, the topic's leader known: the stall is the send's
                os.kill(pid, signal.SIGSTOP)
                await until_stopped(pid)
                try:
                    first_call = asyncio.ensure_future(waited(first))
                    while audit_log.sends == 1:
                        await asyncio.sleep(0)
                    behind_waited = await waited(behind)  # made while the first send is in flight
                    first_waited = await first_call
                finally:
                    os.kill(pid, signal.SIGCONT)
            assert audit_log.sends == 3, "the call behind the first send went in a send of its own"
            # Waiting for the send ahead and then for its own took up to twice the timeout.
            waits = f"waited {behind_waited:.2f} s behind, {first_waited:.2f} s first"
            assert behind_waited < 1.5 * record_timeout and first_waited < 1.5 * record_timeout, waits
            lost = [r.getMessage() for r in caplog.records if getattr(r, "decision", "") == "AuditRecordLost"]
            assert len(lost) == 2 and first.audit_id in lost[0] and behind.audit_id in lost[1]
        finally:
            await audit_log.stop()  # flushes what the producer still has in flight
        ids = await recorded_ids(broker.bootstrap_servers, audit_log.topic)
        assert ids == [before.audit_id, first.audit_id, behind.audit_id]

    try:
        asyncio.run(run())
    finally:
        os.kill(pid, signal.SIGCONT)  # a paused broker would not stop
        broker.stop()
