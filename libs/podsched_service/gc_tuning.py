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
tasks, exceptions with tracebacks, and one small cycle per gRPC call that grpc.aio's server builds
around the call's details while it finds the method's handler). Finding them less often costs memory,
and more than the garbage itself: with these thresholds a young collection waited for 50,000 net new
objects (five to nine minutes of a soak's churn, 2 to 5 MiB of garbage), and a full one never came.
The garbage is spread over pymalloc's 1 MiB arenas among objects that live on, and an arena goes back
to the system only once all of it is free, so every wave of garbage left the resident set a little
higher (docs/soak.md: RSS rose with pymalloc's arenas, 7 MiB in 9 minutes in the binder). A full
collection on a timer (`collect_periodically`) bounds how long garbage waits, whatever the load:
under a benchmark's load the thresholds still decide, at a soak's the timer does."""

from __future__ import annotations

import asyncio
import gc
import logging
import time

log = logging.getLogger(__name__)

# Net allocations between young collections, then young collections per middle one and middle ones
# per full one (CPython also skips a full one until a quarter of the long-lived objects are new).
THRESHOLDS = (50_000, 20, 100)
# Seconds between timed full collections. A full collection walks every tracked object and holds the
# event loop meanwhile: at a soak's 120 pods 0.1 to 1.4 s of wall time on the loaded 2-core machine
# (load average 20 to 40, mostly waiting for a core), longer at tens of thousands of pods; once a minute
# keeps it to about 1 % of a core even where it takes half a second of CPU.
FULL_COLLECTION_SECONDS = 60.0
SLOW_COLLECTION_SECONDS = 0.1  # CPU seconds: a pause worth a log line


def tune_for_service() -> None:
    """Collect cycles less often: call once at process start."""
    gc.set_threshold(*THRESHOLDS)


async def collect_periodically(interval: float = FULL_COLLECTION_SECONDS) -> None:
    """Run a full collection every `interval` seconds, forever (a task on the service's event loop;
    cancel it to stop): cyclic garbage waits at most that long, so it cannot ratchet the resident
    set up between the thresholds' rare collections."""
    while True:
        await asyncio.sleep(interval)
        began, began_cpu = time.perf_counter(), time.process_time()
        found = gc.collect()
        cpu = time.process_time() - began_cpu
        if cpu > SLOW_COLLECTION_SECONDS:  # CPU, not wall time: on a busy machine the wait for a core dominates
            log.info(
                "full collection took %.2f s of CPU, %.2f s in all (%d unreachable objects)",
                cpu, time.perf_counter() - began, found,
            )  # fmt: skip
