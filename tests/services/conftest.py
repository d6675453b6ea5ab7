"""The real system for end-to-end tests: the session's Kafka broker (tests/conftest.py), and for each test the
four services as separate processes on free ports with topics of their own (so tests never see
each other's state). Nothing is mocked; a machine that cannot run Kafka fails these tests with
the reason."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from live_api import Api
from podsched_devstack.kafka import DevstackError, KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings


def new_stack(kafka: KafkaBroker, run_dir: Path, **settings: Any) -> ServiceStack:
    prefix = f"t{uuid.uuid4().hex[:10]}."
    return ServiceStack(StackSettings.on_free_ports(kafka.bootstrap_servers, run_dir, topic_prefix=prefix, **settings))


@pytest.fixture
def stack(kafka: KafkaBroker, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServiceStack]:
    services = new_stack(kafka, tmp_path / "services", workers=2)
    try:
        services.start()
    except DevstackError as error:
        services.stop()
        pytest.fail(str(error), pytrace=False)
    try:
        yield services
    finally:
        services.stop()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            for name in ("queue", "filter", "preemption", "binder"):
                print(f"--- {name} log ---\n{services.tail(name, 40)}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def api(stack: ServiceStack) -> Iterator[Api]:
    client = Api(stack.server)
    yield client
    client.close()
