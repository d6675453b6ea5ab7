"""Cyclic garbage collector settings for the long-running services.

A service keeps its whole copy of the cluster in memory (millions of Python objects at 5000 nodes
and 30000 pods) and allocates short-lived ones for every record it decodes and every request it
serves. With CPython's defaults (a young collection every 700 net allocations, an older one every
10 of those) the collector ran every few records and walked young objects over and over. With the thresholds
below, SchedulingBasic (`make bench WORKLOAD=SchedulingBasic BENCH_ARGS="--workers 0"`, two runs
each way, alternated) takes 2.55 instead of 2.8 ms of CPU per pod over all processes, 675-725
instead of 628-640 pods/s.

Freezing the rebuilt state (gc.freeze) was tried and dropped: it empties the long-lived generation
CPython weighs full collections against, so they ran more often, and throughput did not improve.

Reference counting frees nearly everything here; the collector only has to find cycles (asyncio
tasks, exceptions with tracebacks), and finding them less often costs a little memory, not
correctness."""

from __future__ import annotations

import gc

# Net allocations between young collections, then young collections per middle one and middle ones
# per full one (CPython also skips a full one until a quarter of the long-lived objects are new).
THRESHOLDS = (50_000, 20, 100)


def tune_for_service() -> None:
    """Collect cycles less often: call once at process start."""
    gc.set_threshold(*THRESHOLDS)
