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
from podsched_devstack.kafka import DevstackError, KafkaBroker, ensure_kafka_installed
from podsched_devstack.kafka_cluster import KafkaCluster
from podsched_devstack.services import ServiceStack, StackSettings
from stacks import GENERIC_WORKLOAD_ON, running, running_with_config


def new_settings(kafka: KafkaBroker, run_dir: Path, **settings: Any) -> StackSettings:
    prefix = f"t{uuid.uuid4().hex[:10]}."
    return StackSettings.on_free_ports(kafka.bootstrap_servers, run_dir, topic_prefix=prefix, **settings)


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """A replicated three-node Kafka cluster for the module's tests (podsched_devstack.kafka_cluster),
    or the test fails saying why."""
    cluster = KafkaCluster(tmp_path_factory.mktemp("kafka-cluster"))
    problem = None
    try:
        ensure_kafka_installed()
        cluster.start(timeout=240)
    except DevstackError as error:
        problem = str(error)
    if problem is not None:
        cluster.stop()
        pytest.fail(problem, pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def stack(kafka: KafkaBroker, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServiceStack]:
    started = running(new_settings(kafka, tmp_path / "services", workers=2))
    services = next(started)
    try:
        yield services
    finally:
        started.close()  # stops the stack
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            for name in ("queue", "filter", "preemption", "binder"):
                print(f"--- {name} log ---\n{services.tail(name, 40)}")


@pytest.fixture
def gang_stack(kafka: KafkaBroker, tmp_path: Path) -> Iterator[ServiceStack]:
    """The four services with the GenericWorkload gate on, so PodGroups are served and gangs scheduled."""
    started = running_with_config(kafka, tmp_path, GENERIC_WORKLOAD_ON)
    yield next(started)
    started.close()


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
