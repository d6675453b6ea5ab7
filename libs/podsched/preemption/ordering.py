"""Pod importance, as util.MoreImportantPod and GetEarliestPodStartTime define it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from podsched.api.types import Pod


def pod_start_time(pod: Pod, now: float) -> float:
    """status.startTime, or `now` when unset: unstarted pods look youngest, so least important."""
    return pod.status.start_time if pod.status.start_time is not None else now


def more_important_pod(a: Pod, b: Pod, now: float) -> bool:
    """Higher priority wins; on equal priority the pod that started earlier wins."""
    pa, pb = a.priority, b.priority
    if pa != pb:
        return pa > pb
    return pod_start_time(a, now) < pod_start_time(b, now)


def importance_key(now: float) -> Callable[[Pod], tuple[int, float]]:
    """A sort key equivalent to more_important_pod (most important first)."""
    return lambda pod: (-pod.priority, pod_start_time(pod, now))


def earliest_start_time_of_top_priority(victims: Sequence[Pod], now: float) -> float | None:
    """GetEarliestPodStartTime: among the victims of maximum priority, the earliest start time."""
    if not victims:
        return None
    max_priority = victims[0].priority
    earliest = pod_start_time(victims[0], now)
    for pod in victims:
        priority = pod.priority
        if priority == max_priority:
            start = pod_start_time(pod, now)
            if start < earliest:
                earliest = start
        elif priority > max_priority:
            max_priority = priority
            earliest = pod_start_time(pod, now)
    return earliest
