"""`podsched simulate` decides as upstream kube-scheduler v1.37.2 does.

The bounded part of `make test-upstream` (tests/oracle/differential.py): random clusters from a fixed
hypothesis seed, plus every saved cluster under tests/oracle/regressions/, each through podsched's
simulator and the real upstream scheduler (tests/oracle/upstream). A cluster on which upstream, run up
to eight times, never gives podsched's outcome is a difference; the test fails listing each one with
the directory of its replayable files.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oracle.differential import (
    DEFAULT_OUT,
    Oracle,
    OracleError,
    Tally,
    compare_clusters,
    describe,
    generate,
    oracle_binary,
    read_case,
)

SEED = 20260101
COUNT = 150
REGRESSIONS = Path(__file__).resolve().parent / "regressions"
OUT = DEFAULT_OUT / "pytest"


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    problem = ""
    try:
        instance = Oracle(oracle_binary(build=True), hung_dir=OUT / "oracle-failures")
    except OracleError as error:
        problem = str(error)
    if problem:  # outside the except block: one plain message, no chained traceback
        pytest.fail(problem, pytrace=False)
    yield instance
    instance.close()


def _fail_on_differences(tally: Tally) -> None:
    if tally.differences:
        lines = [tally.line()]
        for verdict in tally.verdicts:
            lines.append(f"--- {verdict.path}\n{describe(verdict)}")
        pytest.fail("\n".join(lines), pytrace=False)


def test_random_clusters_are_scheduled_as_upstream_schedules_them(oracle: Oracle) -> None:
    shutil.rmtree(OUT / "random", ignore_errors=True)  # only this run's differences stay
    # About a third of them with PodGroups (GenericWorkload on), as `make test-upstream` draws them.
    cases = ((f"s{SEED}-{i:05d}", texts) for i, texts in enumerate(generate(COUNT, SEED)))
    tally = compare_clusters(cases, oracle, first_runs=1, out_dir=OUT / "random")
    assert tally.compared == COUNT
    _fail_on_differences(tally)


def test_saved_regression_clusters_are_scheduled_as_upstream_schedules_them(oracle: Oracle) -> None:
    saved = sorted(path for path in REGRESSIONS.iterdir() if path.is_dir()) if REGRESSIONS.is_dir() else []
    if not saved:
        pytest.fail(f"no saved clusters under {REGRESSIONS}", pytrace=False)
    shutil.rmtree(OUT / "regressions", ignore_errors=True)
    tally = compare_clusters(((path.name, read_case(path)) for path in saved), oracle, out_dir=OUT / "regressions")
    assert tally.compared == len(saved)
    _fail_on_differences(tally)
