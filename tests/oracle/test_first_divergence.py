"""The tie shown at the first divergence (tests/oracle/differential.py): on a large cluster where
several pods each land on one of many equally scored nodes, no few upstream runs reproduce podsched's
whole outcome, so the first decision where podsched and upstream seed 1 part is checked against the
final scores upstream itself logs at verbosity 10.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.differential import (
    DIFFERENCE,
    TIE,
    Oracle,
    OracleError,
    Verdict,
    _settle,
    _settle_by_first_divergence,
    first_divergence_tie,
    oracle_binary,
    podsched_decisions,
    read_case,
    run_podsched,
    upstream_decisions,
)

CASE = Path(__file__).resolve().parent / "regressions" / "many-equally-scored-nodes-tie-at-the-first-divergence"


@pytest.fixture(scope="module")
def binary() -> Path:
    problem = ""
    try:
        path = oracle_binary(build=True)
    except OracleError as error:
        problem = str(error)
    if problem:
        pytest.fail(problem, pytrace=False)
    return path


def test_a_bind_to_another_equally_scored_node_is_a_tie_at_the_first_divergence(binary: Path) -> None:
    texts = read_case(CASE)
    verdict = Verdict(CASE.name, texts, podsched=run_podsched(texts))
    with Oracle(binary) as oracle:
        verdict.upstream = [oracle.run(f"{CASE.name}#{run}", texts, seed=run + 1) for run in range(8)]
    # The premise: no upstream run gives podsched's whole outcome.
    assert not _settle(verdict)
    assert verdict.kind == DIFFERENCE
    assert _settle_by_first_divergence(verdict, binary)
    assert verdict.kind == TIE
    assert verdict.tie.startswith("tie at the first divergence, shown by upstream's scores: decision ")
    assert " binds default/" in verdict.tie


def _answer(binds: list[tuple[str, str, int]], nominations: list[tuple[str, str, int]]) -> dict[str, object]:
    def entries(items: list[tuple[str, str, int]]) -> list[dict[str, object]]:
        return [{"namespace": "default", "name": name, "node": node, "time": time} for name, node, time in items]

    return {"binds": entries(binds), "nominations": entries(nominations), "preempted": []}


def _log(pod: str, scores: dict[str, int], bound: str) -> str:
    lines = [f'I1124 09:00:00.000000 1 schedule_one.go:117] "Attempting to schedule pod" pod="{pod}"']
    lines += [
        f'I1124 09:00:00.000001 1 schedule_one.go:1052] "Calculated node\'s final score for pod" pod="{pod}" '
        f'node="{node}" score={score}'
        for node, score in scores.items()
    ]
    lines.append(
        f'I1124 09:00:00.000002 1 schedule_one.go:483] "Successfully bound pod to node" pod="{pod}" '
        f'node="{bound}" evaluatedNodes=3 feasibleNodes=3'
    )
    return "\n".join(lines)


def test_only_an_equal_maximal_score_for_both_nodes_makes_the_first_divergence_a_tie() -> None:
    ours = [("bind", "default/a", "n1"), ("bind", "default/b", "n1")]
    answer = _answer([("a", "n1", 0), ("b", "n2", 0)], [])
    equal = _log("default/a", {"n1": 9}, "n1") + "\n" + _log("default/b", {"n1": 7, "n2": 7, "n3": 3}, "n2")
    assert "decision 2 binds default/b to n1 (podsched) or n2 (upstream seed 1)" in first_divergence_tie(
        ours, answer, equal
    )
    lower = _log("default/a", {"n1": 9}, "n1") + "\n" + _log("default/b", {"n1": 6, "n2": 7}, "n2")
    assert first_divergence_tie(ours, answer, lower) == ""
    # A different pod bound first is no tie: the queues themselves differ.
    assert first_divergence_tie(ours, _answer([("b", "n2", 0), ("a", "n1", 0)], []), equal) == ""


def test_decisions_within_one_second_are_put_in_the_same_order_on_both_sides() -> None:
    answer = _answer([("a", "n1", 0), ("b", "n2", 3)], [("b", "n2", 0)])
    assert upstream_decisions(answer) == [
        ("nominate", "default/b", "n2"),
        ("bind", "default/a", "n1"),
        ("bind", "default/b", "n2"),
    ]
    events = [
        {
            "reason": "Scheduled",
            "message": "Successfully assigned default/a to n1",
            "eventTime": "2026-01-01T00:00:00Z",
            "involvedObject": {"namespace": "default", "name": "a"},
        },
        {
            "reason": "Nominated",
            "message": "Nominated to node n2 after preempting 1 pod(s)",
            "eventTime": "2026-01-01T00:00:00.500000Z",
            "involvedObject": {"namespace": "default", "name": "b"},
        },
        {
            "reason": "Scheduled",
            "message": "Successfully assigned default/b to n2",
            "eventTime": "2026-01-01T00:00:03Z",
            "involvedObject": {"namespace": "default", "name": "b"},
        },
    ]
    assert podsched_decisions({"events": events}) == upstream_decisions(answer)
