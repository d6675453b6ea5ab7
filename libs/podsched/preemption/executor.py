"""What the preemption executor does beyond evicting the victims (framework/preemption/executor.go,
prepareCandidateAsync: SchedulerAsyncPreemption is on by default since 1.33).

The evaluator only names the victims; evicting them is the caller's (binder, simulator). What else
the executor changes is decided here, once, for both execution strategies."""

from __future__ import annotations

from collections.abc import Sequence

from podsched.api.types import Pod
from podsched.framework.interface import PodNominator


def nominations_to_clear(
    nominator: PodNominator | None, preemptor: Pod, node_name: str, victims: Sequence[Pod]
) -> list[Pod]:
    """The pods nominated to `node_name` with a lower priority than `preemptor`: they may no longer
    fit there, so their nomination is cleared and they look elsewhere.

    None when every victim is already terminating: the asynchronous executor then has no eviction
    to send and returns before it clears anything, so those pods keep their nomination (and stay
    where the queue has them) until a victim's deletion moves them."""
    if nominator is None or all(v.metadata.deletion_timestamp is not None for v in victims):
        return []
    return [
        info.pod
        for info in nominator.nominated_pods_for_node(node_name)
        if info.pod.priority < preemptor.priority and info.pod.uid != preemptor.uid
    ]
