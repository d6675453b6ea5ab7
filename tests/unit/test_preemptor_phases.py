"""The bench harness splits each preemptor's latency at its nomination and its victims' removal."""

from __future__ import annotations

from benchmarks.scheduler_perf import BindWatch


def test_each_preemptor_is_split_at_creation_nomination_and_its_victims_leaving_its_node() -> None:
    watch = BindWatch("unused:9092", "unused")
    sent_at = {"a": 0.0, "b": 0.0}
    watch.added_at["m"] = {"a": 0.1, "b": 0.2}
    watch.nominated_at["m"] = {"a": (1.0, "n1"), "b": (2.0, "n2")}
    # n1's victims left with the nomination's own commit (before it on the log); n2's later, and a
    # pod that left n2 after b was bound is not b's victim.
    watch.deleted_from["init"] = {"n1": [0.9, 0.95], "n2": [2.5, 9.0]}
    watch.bound_at["m"] = {"a": 3.0, "b": 4.0}

    phases = watch.preemptor_phases("m", "init", sent_at)

    assert phases["to_created"] == {"p50": 100.0, "p90": 200.0, "p100": 200.0}
    assert phases["to_nominated"] == {"p50": 900.0, "p90": 1800.0, "p100": 1800.0}
    assert phases["to_victims_gone"] == {"p50": 0.0, "p90": 500.0, "p100": 500.0}
    assert phases["to_bound"] == {"p50": 1500.0, "p90": 2000.0, "p100": 2000.0}


def test_pods_never_nominated_or_not_yet_bound_are_left_out() -> None:
    watch = BindWatch("unused:9092", "unused")
    watch.nominated_at["m"] = {"late": (1.0, "n1")}
    watch.bound_at["m"] = {"direct": 0.5}

    assert watch.preemptor_phases("m", "init", {"late": 0.0, "direct": 0.0}) == {}
