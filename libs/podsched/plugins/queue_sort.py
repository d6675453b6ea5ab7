"""PrioritySort: the activeQ order. Higher priority first; equal priority, earlier queue time first."""

from __future__ import annotations

from typing import Protocol

from podsched.plugins import names

NAME = names.PRIORITY_SORT


class QueuedPodLike(Protocol):
    @property
    def priority(self) -> int: ...

    @property
    def timestamp(self) -> float: ...


def priority_sort_less(a: QueuedPodLike, b: QueuedPodLike) -> bool:
    """PrioritySort.Less. `timestamp` is the time the pod was (re-)added to the queue, not its
    creation time: a pod that failed and came back queues behind its equals."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return a.timestamp < b.timestamp


def priority_sort_key(priority: int, timestamp: float) -> tuple[int, float]:
    """A heap key equivalent to priority_sort_less."""
    return (-priority, timestamp)
