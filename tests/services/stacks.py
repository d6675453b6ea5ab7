"""Starting a live stack for a test: one way for every fixture."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from podsched_devstack.kafka import DevstackError
from podsched_devstack.services import ServiceStack, StackSettings


def running(settings: StackSettings) -> Iterator[ServiceStack]:
    """A fixture body: the stack started (a failed start fails the test with the services' logs, not a
    traceback), then stopped."""
    stack = ServiceStack(settings)
    try:
        stack.start()
    except DevstackError as error:
        stack.stop()
        pytest.fail(str(error), pytrace=False)
    try:
        yield stack
    finally:
        stack.stop()
