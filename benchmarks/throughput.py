"""scheduler_perf's SchedulingThroughput, computed exactly as upstream's throughputCollector does
(test/integration/scheduler_perf/util.go, throughputCollector), so our numbers
sit beside upstream's thresholds.

The collector looks at the number of measured pods that are bound once per second (a tick):
- ticks before the first bound pod are ignored; the first tick that sees any is the baseline and
  gives no sample (warm-up: creating and scheduling start independently);
- a tick that sees no new pod is skipped; the next tick that does records newPods / the actual
  seconds since the last recorded tick, once for itself and once for every skipped tick, so
  percentiles are not flattered by the pause;
- Average is the mean of the samples (not pods / total time); percentiles are nearest-rank over
  the ascending samples, so Perc99 is close to the fastest second."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def throughput_samples(ticks: Sequence[tuple[float, int]]) -> list[float]:
    """Samples (pods/s) from (tick time in seconds, measured pods bound so far) taken every second."""
    samples: list[float] = []
    started = False
    last_count = 0
    last_time = 0.0
    skipped = 0
    for now, scheduled in ticks:
        if scheduled == 0:
            continue
        if not started:
            started = True
            last_count, last_time = scheduled, now
            continue
        new = scheduled - last_count
        if new == 0:
            skipped += 1
            continue
        rate = new / (now - last_time)
        samples.extend([rate] * (skipped + 1))
        last_count, last_time, skipped = scheduled, now, 0
    return samples


def burst_rate(bind_times: Sequence[float], started: float) -> float:
    """Pods per second from `started` (the first measured pod sent) to the last bind: the figure for
    a burst that the collector cannot measure because every pod was bound within one of its 1 s
    intervals (upstream logs "Failed to measure SchedulingThroughput ... Increase pods and/or nodes"
    and reports nothing). It counts the burst's whole time, creation and first attempts included,
    not just its binds, which can all come at its end (the preemptors of PreemptionBasic are bound
    once their victims are gone). 0.0 when no pod was bound, or none after `started`."""
    if not bind_times:
        return 0.0
    elapsed = max(bind_times) - started
    return len(bind_times) / elapsed if elapsed > 0 else 0.0


def nearest_rank(ascending: Sequence[float], percent: float) -> float:
    """Upstream's percentile: element ceil(n * p / 100) - 1 of the sorted samples."""
    if not ascending:
        return 0.0
    index = max(0, math.ceil(len(ascending) * percent / 100) - 1)
    return ascending[index]


@dataclass(frozen=True, slots=True)
class Summary:
    average: float
    perc50: float
    perc90: float
    perc95: float
    perc99: float
    samples: int


def summarize(samples: Sequence[float]) -> Summary:
    ordered = sorted(samples)
    average = sum(ordered) / len(ordered) if ordered else 0.0
    return Summary(
        average,
        nearest_rank(ordered, 50),
        nearest_rank(ordered, 90),
        nearest_rank(ordered, 95),
        nearest_rank(ordered, 99),
        len(ordered),
    )
