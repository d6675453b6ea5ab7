"""The services' JSON log lines: one object per line with the time in UTC to the millisecond, the
decision fields a call passes, and any value rendered (text, integers beyond 64 bits, objects that
are not JSON) rather than the line lost."""

from __future__ import annotations

import json
import logging

from podsched_service.telemetry import JsonLogFormatter

CREATED = 1_764_000_061.25  # 2025-11-24T16:01:01.250Z


def line(message: str, *args: object, **fields: object) -> dict[str, object]:
    record = logging.LogRecord("podsched_queue.scheduler", logging.INFO, "", 0, message, args, None)
    record.created, record.msecs = CREATED, 250.0
    record.__dict__.update(fields)
    text = JsonLogFormatter("podsched-queue").format(record)
    assert "\n" not in text
    parsed: dict[str, object] = json.loads(text)
    return parsed


def test_a_decision_line_carries_the_time_the_message_and_the_decision_fields() -> None:
    parsed = line("Scheduled %s/%s to %s", "ns", "web-1", "node-7", decision="Scheduled", pod="ns/web-1", attempt=2)
    assert parsed == {
        "time": "2025-11-24T16:01:01.250Z",
        "level": "info",
        "service": "podsched-queue",
        "logger": "podsched_queue.scheduler",
        "message": "Scheduled ns/web-1 to node-7",
        "decision": "Scheduled",
        "pod": "ns/web-1",
        "attempt": 2,
    }


def test_lines_within_one_second_and_the_next_each_carry_their_own_time() -> None:
    formatter = JsonLogFormatter("podsched-binder")
    times = []
    for created in (CREATED, CREATED + 0.5, CREATED + 1.0):
        record = logging.LogRecord("x", logging.INFO, "", 0, "m", (), None)
        record.created, record.msecs = created, (created % 1) * 1000
        times.append(json.loads(formatter.format(record))["time"])
    assert times == ["2025-11-24T16:01:01.250Z", "2025-11-24T16:01:01.750Z", "2025-11-24T16:01:02.250Z"]


def test_values_orjson_refuses_or_cannot_render_are_still_written() -> None:
    parsed = line("Ünïcode ✓", big=2**70, keys={1: "a"}, other=object)
    assert parsed["message"] == "Ünïcode ✓"
    assert parsed["big"] == 2**70
    assert parsed["keys"] == {"1": "a"}
    assert parsed["other"] == str(object)
