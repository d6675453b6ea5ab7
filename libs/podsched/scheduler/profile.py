"""Scheduling profiles by scheduler name (upstream pkg/scheduler/profile: `profile.Map`).

Every profile of the configuration gets its own algorithm (its plugins, its PostFilter args); a pod
is scheduled by the profile its `spec.schedulerName` names (upstream's `frameworkForPod`), once per
cycle, and pods naming no profile are another scheduler's: they never reach the queue
(`only_responsible`, upstream's `responsibleForPod` filter on the unscheduled-pod informer). What
the profiles share is what upstream's one Scheduler holds: the cluster, the queue with its
nominator (nominated pods of every profile count in every profile's Filter, and victims are chosen
by priority whatever scheduler placed them) and the round-robin start index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

from podsched.api.types import KIND_POD, Pod
from podsched.cluster.store import Change
from podsched.config.scheduler_config import SchedulerConfig, responsible_for_pod


class RoundRobin(Protocol):
    next_start_node_index: int


T = TypeVar("T")
A = TypeVar("A", bound=RoundRobin)


class Profiles(Generic[T]):
    """One `T` (a framework, an algorithm, ...) per profile, built by `build` from the profile's
    SchedulerConfig, looked up by scheduler name."""

    def __init__(self, config: SchedulerConfig, build: Callable[[SchedulerConfig], T]) -> None:
        self.config = config
        self.default = build(config)  # the first profile's (the only one, usually)
        self.by_name: dict[str, T] = {config.scheduler_name: self.default}
        for profile in config.other_profiles:
            self.by_name[profile.scheduler_name] = build(profile)

    def __len__(self) -> int:
        return len(self.by_name)

    def __iter__(self) -> Iterator[T]:
        return iter(self.by_name.values())

    def for_pod(self, pod: Pod) -> T | None:
        """The pod's profile's; None for a pod of another scheduler."""
        return self.by_name.get(pod.spec.scheduler_name)


class AlgorithmProfiles(Profiles[A]):
    """Scheduling algorithms per profile, sharing upstream's one `nextStartNodeIndex`: the node where
    the next cycle starts its search is the scheduler's, whichever profile runs the cycle."""

    def __init__(self, config: SchedulerConfig, build: Callable[[SchedulerConfig], A]) -> None:
        super().__init__(config, build)
        self._last = self.default

    def for_pod(self, pod: Pod) -> A | None:
        algorithm = self.by_name.get(pod.spec.scheduler_name)
        if algorithm is not None and algorithm is not self._last:
            algorithm.next_start_node_index = self._last.next_start_node_index
            self._last = algorithm
        return algorithm

    @property
    def next_start_node_index(self) -> int:
        return self._last.next_start_node_index

    @next_start_node_index.setter
    def next_start_node_index(self, value: int) -> None:
        self._last.next_start_node_index = value


def only_responsible(config: SchedulerConfig, listener: Callable[[Change], None]) -> Callable[[Change], None]:
    """`listener` (a queue feed) without the changes of unassigned pods no profile schedules:
    upstream's unscheduled-pod informer filters them out, so they are never queued and never
    nominated. Assigned pods of any scheduler still pass: they take room on their nodes and their
    arrival or departure is a cluster event for the queue."""

    def on_change(change: Change) -> None:
        if change.kind == KIND_POD:
            old, new = change.old, change.new
            pod = new if new is not None else old
            assert pod is None or isinstance(pod, Pod)
            if (
                pod is not None
                and not (isinstance(old, Pod) and old.spec.node_name)
                and not (isinstance(new, Pod) and new.spec.node_name)
                and not responsible_for_pod(config, pod)
            ):
                return
        listener(change)

    return on_change
