"""Every scenario file through `podsched simulate`, exactly as a user runs it (common.yaml, then one
manifest file per step, `-o json`), checked by the same `check` as the live runner
(tests/services/test_live_parity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenarios.scenario import (
    Scenario,
    all_scenarios,
    assert_as_expected,
    check_file_name,
    known_differences_text,
    observe_simulation,
    run_simulate,
)

SCENARIOS = all_scenarios()
SIMULATED = [s for s in SCENARIOS if not s.live_only]


@pytest.mark.parametrize("scenario", SIMULATED, ids=[s.name for s in SIMULATED])
def test_scenario_through_simulate(scenario: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_as_expected(scenario, observe_simulation(run_simulate(scenario, tmp_path, capsys)), "simulate")


def test_every_scenario_file_is_well_formed_and_named_as_a_sentence() -> None:
    assert len(SCENARIOS) >= 20, "the scenario files are missing"
    for scenario in SCENARIOS:
        check_file_name(scenario)


def test_every_live_only_scenario_is_listed_in_the_known_differences_with_its_reason() -> None:
    listed = known_differences_text()
    for scenario in SCENARIOS:
        if scenario.live_only:
            assert f"`{scenario.path.name}`" in listed, f"KNOWN_DIFFERENCES.md must name {scenario.path.name}"
