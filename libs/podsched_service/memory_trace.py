"""A debugging aid for memory growth: PODSCHED_MEMORY_TRACE_SECONDS=N makes a service log, every N
seconds, the source lines whose live allocations grew most since a baseline, and the object types
whose counts grew most.

It tells a leak from state that is bounded by the live cluster and the retained log: run the stack
with churn (`make soak`, or `make up` and a loop of applies and deletes) with the variable set, and
read the `memory growth` lines in the services' logs. A line that keeps growing while the live
cluster stays the same size is a leak; growth that stops once the event retention (1 h) has filled
is the retained log. The baseline is taken after the first interval, so the replay at start is not
counted. Tracing slows allocation by a few times, and each report stops the service for a moment;
it is off unless the variable is set. The counts include the tracer's own baseline (its snapshot
holds a tuple per traced block, the "tuple" count) and the garbage the cyclic collector has not
collected yet.

PODSCHED_MEMORY_TRACE_FRAMES (default 1) keeps more frames per allocation, to see who called the
line that allocates (slower still)."""

from __future__ import annotations

import asyncio
import collections
import gc
import logging
import os
import tracemalloc

log = logging.getLogger(__name__)

SECONDS_VARIABLE = "PODSCHED_MEMORY_TRACE_SECONDS"
FRAMES_VARIABLE = "PODSCHED_MEMORY_TRACE_FRAMES"
TOP = 12


def start_from_environment(service: str) -> asyncio.Task[None] | None:
    """Start tracing if PODSCHED_MEMORY_TRACE_SECONDS is set: call once, on the service's event loop.

    The reports run on the event loop, not in a thread of their own: gc.get_objects() from another
    thread can catch a tuple that tuple(<generator>) is still building and break its construction
    (CPython raises SystemError in the thread that builds it)."""
    text = os.environ.get(SECONDS_VARIABLE, "").strip()
    if not text:
        return
    try:
        interval = float(text)
        frames = int(os.environ.get(FRAMES_VARIABLE, "1"))
    except ValueError as error:
        raise ValueError(f"{SECONDS_VARIABLE}/{FRAMES_VARIABLE}: expected numbers: {error}") from None
    if interval <= 0 or frames < 1:
        raise ValueError(f"{SECONDS_VARIABLE} must be above 0 and {FRAMES_VARIABLE} at least 1")
    tracemalloc.start(frames)
    return asyncio.get_running_loop().create_task(_report_forever(service, interval), name="memory-trace")


def type_counts() -> collections.Counter[str]:
    """Live objects the collector tracks, by type name (containers and instances; not str or int)."""
    return collections.Counter(type(o).__name__ for o in gc.get_objects())


async def _report_forever(service: str, interval: float) -> None:
    await asyncio.sleep(interval)
    baseline = tracemalloc.take_snapshot()
    baseline_types = type_counts()
    rounds = 0
    while True:
        await asyncio.sleep(interval)
        rounds += 1
        snapshot = tracemalloc.take_snapshot()
        current, peak = tracemalloc.get_traced_memory()
        growth = snapshot.compare_to(baseline, "traceback")
        lines = [f"{service} memory growth #{rounds}: traced {current / 2**20:.1f} MiB (peak {peak / 2**20:.1f})"]
        for stat in growth[:TOP]:
            where = " <- ".join(f"{frame.filename}:{frame.lineno}" for frame in stat.traceback)
            lines.append(f"  {stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks  {where}")
        types = type_counts()
        types.subtract(baseline_types)
        grown = [f"{name} {count:+d}" for name, count in types.most_common(TOP) if count > 0]
        lines.append("  object counts: " + ", ".join(grown))
        log.warning("\n".join(lines))
