"""The shared `check` is what makes both runners mean something: it must notice every kind of
difference, on a real observation (one scenario through `podsched simulate`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from scenarios.scenario import FOLDER, ScenarioError, check, load, observe_simulation, run_simulate

SCENARIO = FOLDER / "the-preemptor-is-nominated-while-its-victims-terminate-and-bound-after-their-grace-period.yaml"


def test_check_accepts_the_scenario_and_notices_each_kind_of_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = load(SCENARIO)
    seen = observe_simulation(run_simulate(scenario, tmp_path, capsys))
    assert check(scenario.expect, seen) == []

    def problems(change: Any) -> list[str]:
        expect = copy.deepcopy(scenario.expect)
        change(expect)
        return check(expect, seen)

    assert problems(lambda e: e.update(preempted=["low-0", "low-1"]))[0].startswith("preempted:")
    assert problems(lambda e: e["nodes"].update(high="n2"))[0].startswith("nodes: high expected on 'n2'")
    assert problems(lambda e: e["nodes"].update({"low-3": "n1"}))[0].startswith("nodes: low-3 should be on")
    assert problems(lambda e: e["nodes"].update({"low-0": None}))[0].startswith("nodes: low-0 should be gone")
    assert problems(lambda e: e["nominated"].update(high="n1"))[0].startswith("nominated: high")
    assert problems(lambda e: e["events"][0].update(message="Nominated to node n1 after preempting 3 pod(s)"))
    assert problems(lambda e: e["events"].reverse()), "events of one pod are checked in order"
    assert problems(lambda e: e.update(rejected=[{"kind": "Pod", "name": "x", "message": "m"}]))
    assert problems(lambda e: e.update(scheduledOrder=["low-0", "high"]))
    assert problems(lambda e: e["waited"][0].update(atLeastSeconds=3))[0].startswith("waited: high went")


def test_a_malformed_scenario_is_refused_naming_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "grace.yaml"
    path.write_text(
        "description: d\nsteps:\n- - {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: []}}\n"
        "expect: {}\n"
    )
    with pytest.raises(
        ScenarioError, match=r"grace.yaml: steps\[0\]\[0\] \(pod p\) spec.terminationGracePeriodSeconds"
    ):
        load(path)
    path.write_text("description: d\nsteps:\n- [{kind: Node}]\nexpect: {victims: []}\n")
    with pytest.raises(ScenarioError, match=r"grace.yaml: expect: unknown field\(s\) \['victims'\]"):
        load(path)
