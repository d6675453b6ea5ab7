"""What only the live system has: a dry run (`podsched apply --dry-run=server`). Before each step of a
scenario file, the dry run of the step's pod must predict what the real apply then does (the node it
is bound to, or the node it is nominated to and its victims), as the scenario's expectations state,
and change nothing. The scenario itself runs through both modes in test_live_parity.py and
tests/scenarios/test_simulate_parity.py."""

from __future__ import annotations

import json

from live_scenarios import LiveRun
from scenarios.scenario import FOLDER, assert_as_expected, load

from live_api import Api
from podsched_devstack.services import ServiceStack
from podsched_proto.api.v1 import api_pb2

SCENARIO = FOLDER / "a-pod-that-fits-goes-to-the-free-node-and-a-larger-one-preempts-the-cheapest-victims.yaml"


def dry_run(api: Api, document: dict[str, object]) -> api_pb2.ApplyResponse:
    request = api_pb2.ApplyRequest(object_json=json.dumps(document).encode(), dry_run=True)
    response: api_pb2.ApplyResponse = api.stub.Apply(request, timeout=30)
    return response


def test_a_dry_run_predicts_what_the_real_apply_then_does_and_changes_nothing(api: Api, stack: ServiceStack) -> None:
    scenario = load(SCENARIO)
    expect = scenario.expect
    run = LiveRun(scenario, api, stack)
    run.step(0)

    small, high = scenario.steps[1], scenario.steps[2]
    assert isinstance(small, list) and isinstance(high, list)
    fits = dry_run(api, small[0]).dry_run
    assert fits.node_name == expect["nodes"]["small"] and not fits.victims and not fits.nominated_node_name
    run.step(1)

    pods_before, events_before = api.pods(), len(api.events())
    answer = dry_run(api, high[0])
    assert answer.action == "created"
    outcome = answer.dry_run
    assert not outcome.node_name, "it does not fit anywhere without preempting"
    assert outcome.nominated_node_name == expect["nodes"]["high"]
    assert sorted(v.name for v in outcome.victims) == sorted(expect["preempted"])
    assert api.pods() == pods_before and len(api.events()) == events_before, "a dry run changes nothing"
    run.step(2)

    assert_as_expected(scenario, run.observe(), "live, after the dry runs")
