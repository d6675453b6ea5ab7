"""The documentation's scenarios against the running system: four service processes, a real Kafka,
gRPC in between. The same scenarios run through `podsched simulate` in tests/scenarios; here they
must come out the same when every decision crosses process boundaries and the log."""

from __future__ import annotations

import time
from typing import Any

import yaml

from live_api import Api, node_of, nominated
from manifest_dicts import COMMON, node, pdb, pod
from podsched_proto.api.v1 import api_pb2


def apply(api: Api, *documents: dict[str, Any]) -> None:
    api.apply_text(yaml.safe_dump_all(documents))


def common(api: Api) -> None:
    api.apply_text(COMMON.read_text())


def preempted(api: Api) -> list[str]:
    return sorted(
        name
        for name, p in api.pods().items()
        if any(
            c["type"] == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
            for c in p["status"].get("conditions", [])
        )
    )


def events(api: Api, reason: str, name: str | None = None) -> list[Any]:
    return [e for e in api.events() if e.reason == reason and (name is None or e.involved_object.name == name)]


def bound(api: Api, name: str) -> str:
    return node_of(api.pods().get(name, {}))


def test_the_queue_schedules_high_then_mid_then_low(api: Api) -> None:
    common(api)
    cordoned = node("n1", cpu="4")
    cordoned["spec"] = {"unschedulable": True}
    apply(api, cordoned)
    apply(api, pod("low", "low-priority", "1"), pod("mid", "mid-priority", "1"), pod("high", "high-priority", "1"))
    api.wait(lambda: len(events(api, "FailedScheduling")) >= 3, what="three failed attempts on a cordoned node")
    time.sleep(1.2)  # past the 1 s initial backoff: the uncordon moves all three to activeQ at once
    apply(api, node("n1", cpu="4"))
    api.wait(lambda: all(bound(api, n) for n in ("low", "mid", "high")), what="all three bound")
    order = [e.involved_object.name for e in events(api, "Scheduled")]
    assert order == ["high", "mid", "low"]


def test_a_pending_pod_preempts_the_lowest_priority_pods_then_binds_after_their_grace_period(api: Api) -> None:
    common(api)
    apply(
        api,
        node("n1", cpu="4"),
        pod("low-1", "low-priority", "1", node_name="n1", grace=2),
        pod("low-2", "low-priority", "1", node_name="n1", grace=2),
        pod("mid-1", "mid-priority", "2", node_name="n1", grace=2),
    )
    started = time.monotonic()
    apply(api, pod("high", "high-priority", "2"))
    api.wait(lambda: nominated(api.pods()["high"]) == "n1", what="high nominated to n1")
    pods = api.pods()
    assert preempted(api) == ["low-1", "low-2"], "the lowest-priority pods that are enough"
    assert not node_of(pods["high"]), "nominated, not bound, while the victims terminate"
    assert all(pods[v]["metadata"].get("deletionTimestamp") for v in ("low-1", "low-2"))
    api.wait(lambda: bound(api, "high") == "n1", timeout=20, what="high bound after the grace period")
    assert time.monotonic() - started >= 2.0, "not before the victims' 2 s grace period ended"
    pods = api.pods()
    assert "low-1" not in pods and "low-2" not in pods and node_of(pods["mid-1"]) == "n1"
    preemption = events(api, "Preempted", "low-1")[0]
    assert preemption.related.name == "high" and "on node n1" in preemption.message
    assert events(api, "Nominated", "high") and events(api, "Killing", "low-2")


def test_a_non_preempting_pod_waits_without_preempting_and_goes_first_once_room_frees(api: Api) -> None:
    common(api)
    apply(api, node("n1", cpu="2"), pod("low", "low-priority", "2", node_name="n1", grace=0))
    apply(api, pod("polite", "high-priority-nonpreempting", "2"))
    api.wait(lambda: events(api, "FailedScheduling", "polite"), what="polite fails once")
    apply(api, pod("other-low", "low-priority", "2"))
    api.wait(lambda: events(api, "FailedScheduling", "other-low"), what="other-low fails once")
    assert preempted(api) == [], "a non-preempting pod never preempts"
    assert "not eligible due to preemptionPolicy=Never" in events(api, "FailedScheduling", "polite")[-1].message
    api.stub.Delete(api_pb2.DeleteRequest(resource="pods", name="low"), timeout=30)
    api.wait(lambda: bound(api, "polite"), what="polite bound once room frees")
    assert bound(api, "polite") == "n1" and not bound(api, "other-low"), "the higher-priority pod goes first"


def test_equal_priority_never_preempts(api: Api) -> None:
    common(api)
    apply(api, node("n1", cpu="2"), pod("first", "mid-priority", "2", node_name="n1"))
    apply(api, pod("second", "mid-priority", "2"))
    api.wait(lambda: events(api, "FailedScheduling", "second"), what="second fails")
    assert preempted(api) == []
    assert "No preemption victims found for incoming pod" in events(api, "FailedScheduling", "second")[-1].message


def test_pdbs_are_respected_when_possible_and_best_effort_otherwise(api: Api) -> None:
    common(api)
    apply(
        api,
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        pod("db", "low-priority", "2", node_name="n1", labels={"app": "db"}, grace=0),
        pod("cache", "mid-priority", "2", node_name="n2", labels={"app": "cache"}, grace=0),
        pdb("db-pdb", 1, app="db"),
    )
    apply(api, pod("high", "high-priority", "2"))
    api.wait(lambda: bound(api, "high"), what="high bound")
    assert bound(api, "high") == "n2", "a higher-priority victim beats violating the PDB"
    apply(api, pod("high-2", "high-priority", "2"))
    api.wait(lambda: bound(api, "high-2"), what="high-2 bound")
    assert bound(api, "high-2") == "n1", "no other choice: the PDB is violated (best effort)"
    assert [e.involved_object.name for e in events(api, "Preempted")] == ["cache", "db"]


def test_a_higher_priority_pod_takes_a_node_nominated_for_a_lower_one_and_clears_that_nomination(api: Api) -> None:
    common(api)
    apply(api, node("n1", cpu="2"), pod("low", "low-priority", "2", node_name="n1", grace=3))
    apply(api, pod("mid", "mid-priority", "2"))
    api.wait(lambda: nominated(api.pods()["mid"]) == "n1", what="mid nominated to n1")
    apply(api, pod("high", "high-priority", "2"))
    api.wait(lambda: events(api, "NominationCleared", "mid"), what="mid's nomination cleared")
    api.wait(lambda: bound(api, "high") == "n1", timeout=20, what="high bound to n1")
    assert not bound(api, "mid")
    assert "n1" in events(api, "NominationCleared", "mid")[0].message


def test_a_dry_run_predicts_what_the_real_apply_then_does_and_changes_nothing(api: Api) -> None:
    common(api)
    apply(
        api,
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        pod("low-a", "low-priority", "1", node_name="n1", grace=1),
        pod("low-b", "low-priority", "1", node_name="n1", grace=1),
        pod("mid", "mid-priority", "2", node_name="n2", grace=1),
        node("n3", cpu="1"),
    )
    (fits,) = api.apply_text(yaml.safe_dump(pod("small", "low-priority", "1")), dry_run=True)
    assert fits.dry_run.node_name == "n3" and not fits.dry_run.victims
    apply(api, pod("small", "low-priority", "1"))
    api.wait(lambda: bound(api, "small"), what="small bound")
    assert bound(api, "small") == "n3"
    before = api.pods()
    events_before = len(api.events())
    (answer,) = api.apply_text(yaml.safe_dump(pod("high", "high-priority", "2")), dry_run=True)
    assert answer.action == "created"
    outcome = answer.dry_run
    assert outcome.nominated_node_name == "n1"
    assert sorted(v.name for v in outcome.victims) == ["low-a", "low-b"]
    assert api.pods() == before and len(api.events()) == events_before, "a dry run changes nothing"
    apply(api, pod("high", "high-priority", "2"))
    api.wait(lambda: nominated(api.pods()["high"]) or bound(api, "high"), what="high nominated")
    assert nominated(api.pods()["high"]) == outcome.nominated_node_name
    assert preempted(api) == sorted(v.name for v in outcome.victims)
