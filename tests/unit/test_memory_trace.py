"""The memory tracer's totals read what they claim to: pymalloc's arenas hold its live blocks, and a full
collection reports the cyclic garbage that waited for it."""

from __future__ import annotations

import gc

from podsched.api import timestamps
from podsched_service import memory_trace


class Node:
    def __init__(self) -> None:
        self.partner: Node | None = None


def test_pymalloc_arenas_hold_at_least_its_live_blocks_and_grow_with_small_objects() -> None:
    arenas, blocks = memory_trace.pymalloc_bytes()
    assert arenas >= blocks > 0
    kept = [(i, str(i)) for i in range(200_000)]  # tuples and short strings: pymalloc's blocks
    grown_arenas, grown_blocks = memory_trace.pymalloc_bytes()
    assert grown_blocks - blocks > 5 * 2**20, "200,000 small objects are several MiB of blocks"
    assert grown_arenas > arenas
    del kept


def test_a_full_collection_reports_the_cycles_it_found() -> None:
    gc.collect()
    gc.disable()  # the garbage must wait for the report's collection, not for an automatic one
    try:
        for _ in range(1000):
            first, second = Node(), Node()
            first.partner, second.partner = second, first
        del first, second
        line = memory_trace.collect_line()
    finally:
        gc.enable()
    found = int(line.split("found ")[1].split()[0])
    assert found >= 2000, line  # two Nodes (and their __dict__s) per cycle


def test_the_totals_line_gives_each_total_with_its_growth_since_the_baseline() -> None:
    baseline = memory_trace.baseline_totals()
    line = memory_trace.totals_line(baseline)
    for name in (
        "rss",
        "anonymous",
        "malloc in use",
        "pymalloc arenas",
        "pymalloc blocks",
        "full collections",
        "lru_cache",
    ):
        assert name in line, line
    assert baseline.rss >= baseline.anonymous > 0


def test_filling_the_timestamp_caches_leaves_each_at_its_bound_and_real_timestamps_still_parse() -> None:
    memory_trace.fill_timestamp_caches()
    caches = memory_trace.timestamp_caches()
    assert len(caches) == 4, "format_timestamp and the three per-second caches"
    for cache in caches:
        info = cache.cache_info()
        assert info.currsize == info.maxsize, info
    assert memory_trace.fill_timestamp_caches() == 0, "full caches take no more"
    assert timestamps.parse_timestamp("2026-11-26T17:40:22.5962248Z") == 1795714822.5962248
    assert timestamps.format_timestamp(1795714822.5962248) == "2026-11-26T17:40:22.5962248Z"
