"""Start a real Jaeger for tests, or fail the test saying why (never skip: a silently skipped tracing test
would hide a broken CI image, e.g. one without Go)."""

from __future__ import annotations

from pathlib import Path

import pytest

from podsched_devstack.jaeger import Jaeger, ensure_jaeger_installed
from podsched_devstack.kafka import DevstackError


def start_jaeger_or_fail(data_dir: Path, timeout: float = 60.0) -> Jaeger:
    """A Jaeger on free loopback ports with in-memory storage, ready for OTLP and queries."""
    jaeger = Jaeger(data_dir)
    problem = None
    try:
        ensure_jaeger_installed()  # built once into the cache (`make jaeger-install`); minutes the first time
        jaeger.start(timeout=timeout)
    except DevstackError as error:  # no go, build failure, Jaeger did not come up: say why, plainly
        problem = str(error)
    if problem is not None:  # outside the except block, so the report is not doubled by exception chaining
        pytest.fail(problem, pytrace=False)
    return jaeger
