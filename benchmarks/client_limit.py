"""scheduler_perf's client-side rate limit, which the harness's creator keeps to.

Upstream's harness talks to its apiserver through client-go at QPS 5000 and burst 5000
(test/integration/scheduler_perf/util.go, mustSetupCluster): a token bucket that starts full, takes
one token per request and refills at QPS. Each object the harness sends in an ApplyBatch is one
create request there, so it takes one token here."""

from __future__ import annotations

import time
from collections.abc import Callable

CLIENT_QPS = 5000.0
CLIENT_BURST = 5000


class TokenBucket:
    """client-go's token bucket (golang.org/x/time/rate underneath): `reserve(n)` takes n tokens at
    once, going into debt if need be, and says how long to wait before sending, so that over any
    stretch of time no more than burst + qps * seconds tokens are spent."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if qps <= 0 or burst <= 0:
            raise ValueError(f"rate limit: qps ({qps}) and burst ({burst}) must be positive")
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def reserve(self, n: int) -> float:
        """Take `n` tokens; the seconds until they are earned (0.0 when the bucket had them)."""
        now = self.clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= n
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps
