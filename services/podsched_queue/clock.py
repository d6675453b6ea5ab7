"""The queue service's clock, injected so the scheduling loop can run on a fake one in tests."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Wall-clock seconds since the epoch: backoff expiries, change and event timestamps."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: durations (attempt latency, flush intervals)."""
        ...


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()
