"""A clock the test moves: what the scheduling queue and the cluster call (`clock()`) and what a
service reads (podsched_service.clock.Clock: `time()`, `monotonic()`), all reading `now`."""

from __future__ import annotations


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now
