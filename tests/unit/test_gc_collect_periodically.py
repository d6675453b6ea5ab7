"""The services' timed full collection frees cyclic garbage however rarely the thresholds would."""

from __future__ import annotations

import asyncio
import gc
import weakref

from podsched_service import gc_tuning


class Node:
    def __init__(self) -> None:
        self.partner: Node | None = None


def test_cyclic_garbage_is_freed_by_the_timer_without_a_threshold_collection() -> None:
    async def scenario() -> bool:
        first, second = Node(), Node()
        first.partner, second.partner = second, first
        gone = weakref.ref(first)
        del first, second  # a cycle: reference counting cannot free it
        collector = asyncio.get_running_loop().create_task(gc_tuning.collect_periodically(0.01))
        try:
            deadline = asyncio.get_running_loop().time() + 10
            while gone() is not None and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.01)
        finally:
            collector.cancel()
        return gone() is None

    gc.disable()  # only the timer may collect
    try:
        assert asyncio.run(scenario()), "the cycle outlived 10 s of a 10 ms collection timer"
    finally:
        gc.enable()
