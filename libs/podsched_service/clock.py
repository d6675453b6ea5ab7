"""The clock a service reads, injected so its business code runs on a fake one in tests (kube-scheduler
injects `clock.Clock` the same way)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Wall-clock seconds since the epoch: timestamps of changes and events, grace-period deadlines."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: durations (attempt latency, commit time, RPC time)."""
        ...


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()
