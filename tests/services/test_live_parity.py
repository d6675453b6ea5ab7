"""Every scenario file (tests/scenarios/*.yaml) through the live system: the four services as separate
processes on the session's real Kafka broker, topics of the scenario's own. common.yaml, then each step
one Apply per object (one Delete for a delete step), waiting after each step until the system is
quiescent; then the same `check` as `podsched simulate`'s runner (tests/scenarios/test_simulate_parity.py)
on what the public API shows."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_scenarios import run_live
from scenarios.scenario import Scenario, all_scenarios, assert_as_expected

from live_api import Api
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings
from stacks import running

SCENARIOS = all_scenarios()

# Differences the live system has today that are being fixed elsewhere; each mark is strict, so it is
# noticed (and removed) the moment the scenario passes.
EXPECTED_FAILURES: dict[str, str] = {}


def _params() -> list[Any]:
    params = []
    for scenario in SCENARIOS:
        marks = []
        if scenario.name in EXPECTED_FAILURES:
            marks.append(pytest.mark.xfail(strict=True, reason=EXPECTED_FAILURES[scenario.name]))
        params.append(pytest.param(scenario, id=scenario.name, marks=marks))
    return params


@pytest.fixture
def scenario_stack(kafka: KafkaBroker, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServiceStack]:
    """tests/services/conftest.py's `stack` (own topic prefix, free ports); for a scenario with a
    KubeSchedulerConfiguration, the same with that configuration given to every service."""
    scenario: Scenario = request.node.callspec.params["scenario"]
    if not scenario.config:
        yield request.getfixturevalue("stack")
        return
    config_file = tmp_path / "scheduler-config.yaml"
    config_file.write_text(scenario.config)
    settings = StackSettings.on_free_ports(
        kafka.bootstrap_servers,
        tmp_path / "services",
        topic_prefix=f"t{uuid.uuid4().hex[:10]}.",
        workers=2,
        scheduler_config=str(config_file),
    )
    started = running(settings)
    services = next(started)
    try:
        yield services
    finally:
        started.close()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            for name in ("queue", "filter", "preemption", "binder"):
                print(f"--- {name} log ---\n{services.tail(name, 40)}")


@pytest.mark.parametrize("scenario", _params())
def test_scenario_on_the_live_system(scenario: Scenario, scenario_stack: ServiceStack) -> None:
    api = Api(scenario_stack.server)
    try:
        observed = run_live(scenario, api, scenario_stack)
    finally:
        api.close()
    assert_as_expected(scenario, observed, "live")
