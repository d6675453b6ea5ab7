"""A long-running service's copy of the cluster stays the size of the live cluster plus the retained
event window, however many pods came and went: no record of every pod ever seen, no event kept
longer than the events topic keeps it."""

from __future__ import annotations

from dataclasses import replace

from builders import make_node, make_pod
from clocks import FakeClock
from podsched.cluster import events as ev
from replicas import LogFollowingReplica, live_pod_objects

EVENTS_RETENTION = 600.0


class Churn(LogFollowingReplica):
    """The binder's copy and a replica following its log, with pods created, bound and deleted through
    the binder's operations."""

    def __init__(self, keep_history: bool = False) -> None:
        self.clock = FakeClock()
        super().__init__(self.clock, keep_history=keep_history)
        self.binder.apply(make_node("n1").capacity(cpu="100", memory="100Gi", pods="1000").obj())
        self.created = 0

    def pods(self, count: int) -> None:
        for _ in range(count):
            name = f"p{self.created}"
            self.created += 1
            self.binder.apply(make_pod(name).req(cpu="10m").grace(0).obj())
            self.binder.bind(self.binder.pods[("default", name)].uid, "n1")
            self.binder.delete("Pod", "default", name, grace_period=0)
            self.clock.now += 1.0
        self.sync()


def test_a_service_copy_keeps_no_pod_it_no_longer_holds() -> None:
    churn = Churn()
    churn.pods(100)
    before = live_pod_objects()
    churn.pods(1000)
    assert live_pod_objects() <= before
    for cluster in (churn.binder, churn.replica):
        assert cluster.pods == {} and cluster.pods_by_uid == {}
        assert cluster.history == {}


def test_simulate_keeps_every_pod_it_saw() -> None:
    churn = Churn(keep_history=True)
    churn.pods(50)
    for cluster in (churn.binder, churn.replica):
        assert len(cluster.history) == 50
        assert cluster.pods == {}


def test_events_older_than_the_retention_are_forgotten() -> None:
    churn = Churn()
    recorder = churn.binder.recorder
    for _ in range(10):  # 10 rounds of 200 pods, 200 s each: 2,000 s of churn
        churn.pods(200)
        recorder.expire(churn.clock() - EVENTS_RETENTION)
        churn.replica.recorder.expire(churn.clock() - EVENTS_RETENTION)
    kept = recorder.events
    assert kept[0].event_time >= churn.clock() - EVENTS_RETENTION
    # Every pod recorded at least one event (Scheduled, Deleted): far more were recorded than kept.
    assert recorder.next_sequence > 3 * len(kept)
    assert recorder.first_sequence + len(kept) == recorder.next_sequence
    assert [e.sequence for e in kept] == list(range(recorder.first_sequence, recorder.next_sequence))
    assert [e.sequence for e in churn.replica.events] == [e.sequence for e in kept]


def test_the_sequence_continues_after_expiry() -> None:
    clock = FakeClock()
    recorder = ev.EventRecorder(clock)
    node = make_node("n1").obj()
    for i in range(10):
        recorder.record(node, ev.NORMAL, "Test", f"event {i}")
        clock.now += 10
    assert recorder.expire(clock() + 1000) == 9  # everything is old, but the newest stays
    assert [e.message for e in recorder.events] == ["event 9"]
    added = recorder.record(node, ev.NORMAL, "Test", "event 10")
    assert added.sequence == 10 and recorder.next_sequence == 11
    # A replica restores a repeat of a kept event in place, and drops one of a forgotten event.
    recorder.restore(replace(recorder.events[0], count=2))
    assert recorder.events[0].count == 2
    recorder.restore(replace(added, sequence=3, count=5))
    assert len(recorder.events) == 2


def test_keep_at_most_bounds_the_count() -> None:
    clock = FakeClock()
    recorder = ev.EventRecorder(clock)
    node = make_node("n1").obj()
    for i in range(100):
        recorder.record(node, ev.NORMAL, "Test", f"event {i}")
    assert recorder.expire(clock() - EVENTS_RETENTION, keep_at_most=30) == 70
    assert len(recorder.events) == 30 and recorder.events[-1].message == "event 99"
    assert recorder.first_sequence == 70
