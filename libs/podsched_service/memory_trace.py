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
gave back.

Every report splits the resident set the ways that tell its owners apart: anonymous against
file-backed pages (the mapped code of the interpreter and its extensions), pymalloc's arenas (1 MiB
each, where Python keeps objects of up to 512 bytes) against the bytes its live blocks hold, malloc's
bytes in use and free, the objects the cyclic collector tracks and how many full collections have run.
PODSCHED_MEMORY_TRACE_COLLECT=1 runs a full collection after each report and logs what it found
unreachable and the pymalloc bytes that freed: garbage in cycles that waits in the oldest generation
(gc_tuning collects it rarely) shows there, and nowhere else.

PODSCHED_MEMORY_TRACE_FILL_CACHES=1 fills the timestamp caches (podsched.api.timestamps) to their
bounds at start, with timestamps of the year 2000 as long as the clock's. Those caches gain an entry
for every new timestamp text and every new second, so they fill only after half an hour to an hour
of churn; until then the cache filling is growth, bounded but indistinguishable from a leak in a
shorter run. Filled first, they hold as much from the start as they will after an hour, and what
still grows after the warm-up is something else. Real entries evict the filler as they come."""

from __future__ import annotations

import asyncio
import collections
import ctypes
import functools
import gc
import logging
import os
import tempfile
import tracemalloc
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from podsched.api import timestamps

log = logging.getLogger(__name__)

SECONDS_VARIABLE = "PODSCHED_MEMORY_TRACE_SECONDS"
FRAMES_VARIABLE = "PODSCHED_MEMORY_TRACE_FRAMES"
TRIM_VARIABLE = "PODSCHED_MEMORY_TRACE_TRIM"
COLLECT_VARIABLE = "PODSCHED_MEMORY_TRACE_COLLECT"
FILL_CACHES_VARIABLE = "PODSCHED_MEMORY_TRACE_FILL_CACHES"
# The filler's first second (2000-01-01T00:00:00Z), long before any object's timestamp, and the
# fractions of a second it writes: each second gets four instants as long as the clock's own
# (seconds with six or seven decimals), since format_timestamp keeps four instants for each second
# the per-second caches keep.
FILL_FIRST_SECOND = 946_684_800
FILL_FRACTIONS = (0.1234567, 0.3456789, 0.5678901, 0.7890123)
TOP = 12
PYMALLOC_ARENA_BYTES = 2**20  # CPython 3.10+ on 64-bit (radix tree): 1 MiB arenas


def start_from_environment(service: str) -> asyncio.Task[None] | None:
    """Start tracing if PODSCHED_MEMORY_TRACE_SECONDS is set: call once, on the service's event loop.

    The reports run on the event loop, not in a thread of their own: gc.get_objects() from another
    thread can catch a tuple that tuple(<generator>) is still building and break its construction
    (CPython raises SystemError in the thread that builds it)."""
    text = os.environ.get(SECONDS_VARIABLE, "").strip()
    if not text:
        return None
    try:
        interval = float(text)
        frames = int(os.environ.get(FRAMES_VARIABLE, "1"))
    except ValueError as error:
        raise ValueError(f"{SECONDS_VARIABLE}/{FRAMES_VARIABLE}: expected numbers: {error}") from None
    if interval <= 0 or frames < 0:
        raise ValueError(f"{SECONDS_VARIABLE} must be above 0 and {FRAMES_VARIABLE} at least 0")
    trim = os.environ.get(TRIM_VARIABLE, "") == "1"
    collect = os.environ.get(COLLECT_VARIABLE, "") == "1"
    if os.environ.get(FILL_CACHES_VARIABLE, "") == "1":
        log.warning("%s: filled the timestamp caches with %d entries", service, fill_timestamp_caches())
    if frames == 0:  # totals only: no tracer, no pause (a leader's lease outlives every report)
        report = _report_totals_forever(service, interval, trim, collect)
    else:
        tracemalloc.start(frames)
        report = _report_forever(service, interval)
    return asyncio.get_running_loop().create_task(report, name="memory-trace")


async def _report_totals_forever(service: str, interval: float, trim: bool, collect: bool) -> None:
    await asyncio.sleep(interval)
    baseline = baseline_totals()
    rounds = 0
    while True:
        await asyncio.sleep(interval)
        rounds += 1
        line = f"{service} memory totals #{rounds}: " + totals_line(baseline)
        if collect:
            line += "; " + collect_line()
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


def anonymous_bytes() -> int:
    """The anonymous part of the resident set (Linux: /proc/self/smaps_rollup; 0 elsewhere): what the
    process allocated, as against file-backed pages (code and data of the mapped libraries)."""
    try:
        with open("/proc/self/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Anonymous:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def thread_count() -> int:
    """The process's threads (gRPC's and the executors' too; Linux only, 0 elsewhere): each thread that
    allocates may get a malloc arena of its own."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


_PYMALLOC_FIELDS = {
    "# arenas allocated current": "arenas",
    "# bytes in allocated blocks": "blocks",
}


def pymalloc_bytes() -> tuple[int, int]:
    """(arenas, live blocks) bytes of pymalloc, Python's allocator for objects of up to 512 bytes, from
    CPython's own statistics (sys._debugmallocstats, written to a C stream; (0, 0) if unavailable).
    An arena (1 MiB) goes back to the system only once every block in it is free: arenas that grow
    while the blocks do not are fragmentation; blocks that grow are live objects (or cyclic garbage
    the collector has not reached)."""
    libc = _libc()
    stats = getattr(ctypes.pythonapi, "_PyObject_DebugMallocStats", None)
    if libc is None or stats is None:
        return 0, 0
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    stats.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile(prefix="pymalloc-") as out:
        stream = libc.fopen(out.name.encode(), b"w")
        if not stream:
            return 0, 0
        stats(stream)
        libc.fclose(stream)
        text = Path(out.name).read_text()
    found = {"arenas": 0, "blocks": 0}
    for line in text.splitlines():
        name, _, value = line.partition("=")
        key = _PYMALLOC_FIELDS.get(name.strip())
        if key is not None:
            found[key] = int(value.strip().replace(",", ""))
    return found["arenas"] * PYMALLOC_ARENA_BYTES, found["blocks"]


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


@functools.cache  # one handle: a CDLL per report would itself be cyclic garbage
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


@dataclass(frozen=True)
class Totals:
    """One reading of where the process's memory is (bytes), to set against a baseline."""

    rss: int
    anonymous: int
    traced: int
    tracer: int
    malloc_in_use: int
    malloc_free: int
    pymalloc_arenas: int
    pymalloc_blocks: int


def baseline_totals() -> Totals:
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    arenas, blocks = pymalloc_bytes()
    return Totals(
        resident_bytes(), anonymous_bytes(), traced, tracemalloc.get_tracemalloc_memory(),
        *malloc_bytes(), arenas, blocks,
    )  # fmt: skip


_TOTALS_NAMES = (
    "rss", "anonymous", "traced", "tracer's own", "malloc in use", "malloc free", "pymalloc arenas",
    "pymalloc blocks",
)  # fmt: skip


def totals_line(baseline: Totals) -> str:
    """Each total now with its growth since `baseline`, then the collector's state: RSS that grows while
    the traced heap does not is memory Python's allocator holds for freed objects (fragmentation), or
    memory C code allocates (gRPC's core, protobuf's upb arenas, OpenSSL); file-backed RSS (rss minus
    anonymous) is code paged in, not allocation."""
    now = baseline_totals()
    mib = 2**20
    parts = [
        f"{name} {value / mib:.1f} MiB ({(value - then) / mib:+.1f})"
        for name, value, then in zip(_TOTALS_NAMES, astuple(now), astuple(baseline), strict=True)
    ]
    full_collections = gc.get_stats()[-1]["collections"]
    parts.append(f"gc counts {gc.get_count()} full collections {full_collections}, threads {thread_count()}")
    parts.append(f"lru_cache entries {lru_cache_entries()}")
    return ", ".join(parts)


def lru_cache_entries() -> int:
    """Entries held by every functools.lru_cache in the process (found through the collector): caches
    bounded by design still grow until they are full, which takes as long as it takes to see that
    many distinct keys (a cache keyed by the second fills in over an hour)."""
    return sum(
        o.cache_info().currsize
        for o in gc.get_objects()
        if isinstance(o, functools._lru_cache_wrapper)  # type: ignore[attr-defined]  # CPython's C type
    )


def timestamp_caches() -> list[Any]:
    """The lru_caches of podsched.api.timestamps (the private per-second ones too, found through the
    collector rather than by name)."""
    return [
        o
        for o in gc.get_objects()
        if isinstance(o, functools._lru_cache_wrapper)  # type: ignore[attr-defined]  # CPython's C type
        and o.__module__ == timestamps.__name__
    ]


def fill_timestamp_caches() -> int:
    """Fill every timestamp cache to its bound (PODSCHED_MEMORY_TRACE_FILL_CACHES) and return the
    entries added: formatting and parsing each filler timestamp fills the per-second caches and
    format_timestamp's instants."""
    caches = timestamp_caches()

    def entries() -> int:
        return sum(cache.cache_info().currsize for cache in caches)

    before = entries()
    second = FILL_FIRST_SECOND
    while any(cache.cache_info().currsize < (cache.cache_info().maxsize or 0) for cache in caches):
        for fraction in FILL_FRACTIONS:
            timestamps.parse_timestamp(timestamps.format_timestamp(second + fraction))
        second += 1
    return entries() - before


def collect_line() -> str:
    """Run a full collection and say what it found: cyclic garbage that waited for it (with gc_tuning's
    thresholds the older generations are collected rarely), by type, and the pymalloc bytes and RSS
    that freed. The garbage is held for a moment (gc.DEBUG_SAVEALL) to be counted, then freed."""
    before_blocks, before_rss = pymalloc_bytes()[1], resident_bytes()
    flags = gc.get_debug()
    gc.set_debug(flags | gc.DEBUG_SAVEALL)
    try:
        unreachable = gc.collect()
        kinds = collections.Counter(type(o).__name__ for o in gc.garbage)
        gc.garbage.clear()
    finally:
        gc.set_debug(flags)
    gc.collect()  # now the cycles the list held are garbage again, and freed
    after_blocks, after_rss = pymalloc_bytes()[1], resident_bytes()
    mib = 2**20
    top = ", ".join(f"{name} {count}" for name, count in kinds.most_common(8))
    return (
        f"full collection found {unreachable} unreachable objects ({top}), pymalloc blocks "
        f"{(after_blocks - before_blocks) / mib:+.1f} MiB, rss {(after_rss - before_rss) / mib:+.1f} MiB"
    )


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
