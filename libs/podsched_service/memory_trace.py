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
holds a tuple per traced block, the "tuple" count); the cyclic collector runs before each report,
so garbage is not counted. Each report also sets the resident set against the traced heap, both
with their growth since the baseline: growth in RSS that the traced heap does not show is not a
Python object kept alive (it is the allocator's free memory, or C code's).

PODSCHED_MEMORY_TRACE_FRAMES (default 1) keeps more frames per allocation, to see who called the
line that allocates (slower still). FRAMES=0 reports only the totals (RSS, and glibc malloc's bytes
in use and free), without tracemalloc and without the pause a snapshot takes (on a loaded machine a
report with snapshots outlasts the scheduling leader's 6 s Kafka session, and the leader is deposed);
PODSCHED_MEMORY_TRACE_TRIM=1 then also calls malloc_trim(0) after each report and logs the RSS it
gave back."""

from __future__ import annotations

import asyncio
import collections
import ctypes
import gc
import logging
import os
import tracemalloc

log = logging.getLogger(__name__)

SECONDS_VARIABLE = "PODSCHED_MEMORY_TRACE_SECONDS"
FRAMES_VARIABLE = "PODSCHED_MEMORY_TRACE_FRAMES"
TRIM_VARIABLE = "PODSCHED_MEMORY_TRACE_TRIM"
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
    if interval <= 0 or frames < 0:
        raise ValueError(f"{SECONDS_VARIABLE} must be above 0 and {FRAMES_VARIABLE} at least 0")
    trim = os.environ.get(TRIM_VARIABLE, "") == "1"
    if frames == 0:  # totals only: no tracer, no pause (a leader's lease outlives every report)
        report = _report_totals_forever(service, interval, trim)
    else:
        tracemalloc.start(frames)
        report = _report_forever(service, interval)
    return asyncio.get_running_loop().create_task(report, name="memory-trace")


async def _report_totals_forever(service: str, interval: float, trim: bool) -> None:
    await asyncio.sleep(interval)
    baseline = baseline_totals()
    rounds = 0
    while True:
        await asyncio.sleep(interval)
        rounds += 1
        line = f"{service} memory totals #{rounds}: " + totals_line(baseline)
        if trim:
            line += "; " + trim_line()
        log.warning(line)


def type_counts() -> collections.Counter[str]:
    """Live objects the collector tracks, by type name (containers and instances; not str or int)."""
    return collections.Counter(type(o).__name__ for o in gc.get_objects())


def resident_bytes() -> int:
    """The process's resident set now (Linux: /proc/self/statm; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        return libc
    except (OSError, AttributeError):  # not glibc, or older than 2.33
        return None


def malloc_bytes() -> tuple[int, int]:
    """(in use, free) bytes of C's malloc over all its arenas (glibc's mallinfo2; (0, 0) elsewhere):
    what C code and Python's large objects hold, and what malloc keeps from the system unused."""
    libc = _libc()
    if libc is None:
        return 0, 0
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd), int(info.fordblks)


def trim_line() -> str:
    """Give malloc's free memory back to the system (malloc_trim(0)) and say what RSS that freed: RSS
    that goes is memory malloc held for freed objects, not memory anything uses."""
    libc = _libc()
    if libc is None:
        return "malloc_trim: not glibc"
    before = resident_bytes()
    libc.malloc_trim(0)
    return f"malloc_trim gave back {(before - resident_bytes()) / 2**20:.1f} MiB of RSS"


def totals_line(baseline: tuple[int, int, int, int, int]) -> str:
    """RSS against what tracemalloc sees, each with its growth since `baseline` (rss, traced, the
    tracer's own): RSS that grows while the traced heap does not is memory Python's allocator holds
    for freed objects (fragmentation), or memory C code allocates (gRPC's core, OpenSSL)."""
    rss, tracer = resident_bytes(), tracemalloc.get_tracemalloc_memory()
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    mib = 2**20
    parts = [("rss", rss, baseline[0]), ("traced", traced, baseline[1]), ("tracer's own", tracer, baseline[2])]
    used, free = malloc_bytes()
    parts += [("malloc in use", used, baseline[3]), ("malloc free", free, baseline[4])]
    return ", ".join(f"{name} {now / mib:.1f} MiB ({(now - then) / mib:+.1f})" for name, now, then in parts)


def baseline_totals() -> tuple[int, int, int, int, int]:
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    return (resident_bytes(), traced, tracemalloc.get_tracemalloc_memory(), *malloc_bytes())


async def _report_forever(service: str, interval: float) -> None:
    await asyncio.sleep(interval)
    baseline = tracemalloc.take_snapshot()
    baseline_types = type_counts()
    gc.collect()
    totals = baseline_totals()
    rounds = 0
    while True:
        await asyncio.sleep(interval)
        rounds += 1
        gc.collect()  # what is still counted below is alive, not garbage waiting for the collector
        snapshot = tracemalloc.take_snapshot()
        current, peak = tracemalloc.get_traced_memory()
        growth = snapshot.compare_to(baseline, "traceback")
        lines = [
            f"{service} memory growth #{rounds}: traced {current / 2**20:.1f} MiB (peak {peak / 2**20:.1f}); "
            + totals_line(totals)
        ]
        for stat in growth[:TOP]:
            where = " <- ".join(f"{frame.filename}:{frame.lineno}" for frame in stat.traceback)
            lines.append(f"  {stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks  {where}")
        types = type_counts()
        types.subtract(baseline_types)
        grown = [f"{name} {count:+d}" for name, count in types.most_common(TOP) if count > 0]
        lines.append("  object counts: " + ", ".join(grown))
        log.warning("\n".join(lines))
