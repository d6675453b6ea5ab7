"""The scheduling leader's own structures stay the size of the live cluster however many pods came
and went: the queue's copy of the cluster, its scheduling queue (pods bound, pods failed and backed
off, pods deleted while in flight) and the in-flight event log. A long soak showed the queue's RSS
drifting while its traced Python heap stayed flat (docs/soak.md); this is the Python side of that."""

from __future__ import annotations

import random

from builders import make_node, make_pod
from clocks import FakeClock
from podsched.config.scheduler_config import SchedulerConfig
from podsched.queue import scheduling_queue as sq
from podsched.queue.cluster_feed import queue_feed
from podsched.scheduler.profile import only_responsible
from replicas import LogFollowingReplica, live_pod_objects

LIVE_PODS = 60
NODES = 4
EVENTS_RETENTION = 120.0


class LeaderChurn(LogFollowingReplica):
    """The binder's copy writes; the queue's copy follows it and feeds the scheduling queue, which a
    leader drains: most pods bind, some fit nowhere and go back to the queue, some are deleted while
    in flight."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        super().__init__(self.clock)
        self.queue = sq.SchedulingQueue(self.clock, 1.0, 10.0)
        self.replica.listeners.append(only_responsible(SchedulerConfig(), queue_feed(self.queue)))
        for i in range(NODES):
            self.binder.apply(make_node(f"n{i}").capacity(cpu="100", memory="100Gi", pods="1000").obj())
        self.random = random.Random(7)
        self.created = 0
        self.live: list[str] = []
        self.sync()

    def sync(self) -> None:
        super().sync()
        self.binder.recorder.expire(self.clock() - EVENTS_RETENTION, keep_at_most=5000)
        self.replica.recorder.expire(self.clock() - EVENTS_RETENTION)

    def pods(self, count: int) -> None:
        for _ in range(count):
            name = f"p{self.created}"
            self.created += 1
            self.binder.apply(make_pod(name).req(cpu="100m").grace(0).obj())
            self.live.append(name)
            self.sync()
            self.schedule()
            if len(self.live) > LIVE_PODS:
                self.binder.delete("Pod", "default", self.live.pop(0), grace_period=0)
                self.sync()
            self.clock.now += 0.5
            self.queue.flush_backoff_completed()
            self.queue.flush_unschedulable_leftover()

    def schedule(self) -> None:
        info = self.queue.pop()
        while info is not None:
            uid, roll = info.pod.uid, self.random.random()
            if roll < 0.1:  # deleted while in flight: the queue hears the deletion, the attempt ends
                self.live.remove(info.pod.name)
                self.binder.delete("Pod", "default", info.pod.name, grace_period=0)
                self.sync()
                self.queue.done(uid)
            elif roll < 0.3:  # fits nowhere this time
                self.queue.add_unschedulable_if_not_present(info, {"NodeResourcesFit"})
            else:
                self.binder.bind(uid, f"n{self.random.randrange(NODES)}")
                self.sync()
                self.queue.done(uid)
            info = self.queue.pop()


def queue_entries(queue: sq.SchedulingQueue) -> int:
    """Everything the queue keeps per pod, summed (a pod it forgot must be in none of them)."""
    in_flight = queue._in_flight
    return (
        len(queue._infos)
        + len(queue._where)
        + len(queue._first_seen)
        + len(queue._entry_seq)
        + len(queue._unschedulable)
        + len(in_flight._start)
        + len(in_flight._own)
        + len(in_flight._log)
    )


def test_the_leaders_queue_and_copy_keep_no_pod_they_no_longer_hold() -> None:
    churn = LeaderChurn()
    churn.pods(300)
    pods_before, entries_before = live_pod_objects(), queue_entries(churn.queue)
    events_before = len(churn.replica.events)
    churn.pods(1500)
    assert live_pod_objects() <= pods_before + LIVE_PODS  # the live set is the same size; which pods differ
    assert queue_entries(churn.queue) <= max(entries_before, 8 * LIVE_PODS)
    # Nothing is in flight between attempts, so no missed event is kept for anyone.
    assert churn.queue._in_flight._log == [] and churn.queue._in_flight._start == {}
    assert set(churn.queue._infos) <= set(churn.replica.pods_by_uid)
    assert len(churn.replica.events) <= 2 * events_before  # the retention window, not the history
    assert len(churn.replica.pods) == len(churn.live) <= LIVE_PODS


def test_a_queue_that_never_pops_keeps_no_entry_for_pods_it_no_longer_holds() -> None:
    # A standby queue replica takes every pending pod from the log and never pops one: the entries
    # deleted pods leave in activeQ (skipped when popped) must not pile up.
    queue = sq.SchedulingQueue(FakeClock(), 1.0, 10.0)
    kept = [make_pod(f"kept-{i}").obj() for i in range(10)]
    for pod in kept:
        queue.add(pod)
    for i in range(5000):
        pod = make_pod(f"churned-{i}").obj()
        queue.add(pod)
        queue.delete(pod)
    assert len(queue._active) <= 2 * len(kept) + 64 + 1
    assert [queue.pop().pod.name for _ in kept] == [pod.name for pod in kept], "the queued pods, in order"
