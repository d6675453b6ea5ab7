"""Start a real Kafka broker for tests, or fail the test saying why (never skip: a silently skipped
broker test would hide a broken CI image)."""

from __future__ import annotations

from pathlib import Path

import pytest

from podsched_devstack.kafka import DevstackError, KafkaBroker, ensure_kafka_installed


def start_broker_or_fail(data_dir: Path, timeout: float = 120.0) -> KafkaBroker:
    broker = KafkaBroker(data_dir)
    problem = None
    try:
        ensure_kafka_installed()
        broker.start(timeout=timeout)
    except DevstackError as error:  # no java/mvn, Maven failure, broker did not come up: say why, plainly
        problem = str(error)
    if problem is not None:  # outside the except block, so the report is not doubled by exception chaining
        pytest.fail(problem, pytrace=False)
    return broker
