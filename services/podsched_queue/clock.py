"""The queue service's clock: the one every service injects (podsched_service.clock)."""

from __future__ import annotations

from podsched_service.clock import Clock, SystemClock

__all__ = ["Clock", "SystemClock"]
