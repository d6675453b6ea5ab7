"""Shared test setup: tests import `builders` from this folder and the packages from libs/; one real
Kafka broker serves every test that asks for `kafka`, one real Jaeger every test that asks for `jaeger`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT / "tests", ROOT / "libs", ROOT / "services"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from real_jaeger import start_jaeger_or_fail  # noqa: E402 (needs the paths above)
from real_kafka import start_broker_or_fail  # noqa: E402

from podsched_devstack.jaeger import Jaeger  # noqa: E402
from podsched_devstack.kafka import KafkaBroker  # noqa: E402


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    broker = start_broker_or_fail(tmp_path_factory.mktemp("kafka-session"))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jaeger]:
    """A real Jaeger v2 (in-memory storage, free loopback ports): `otlp_endpoint` for the services,
    `query_url` for podsched_devstack.jaeger's query helpers."""
    instance = start_jaeger_or_fail(tmp_path_factory.mktemp("jaeger-session"))
    try:
        yield instance
    finally:
        instance.stop()
