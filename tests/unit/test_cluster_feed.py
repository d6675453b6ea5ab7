"""The queue's cluster feed classifies an assigned pod's update as upstream's
PodSchedulingPropertiesChange (framework/events.go) does: only a label change is an event the
plugins registered for; a victim's eviction (DisruptionTarget, deletionTimestamp) moves no pod."""

from __future__ import annotations

from dataclasses import replace

from builders import HIGH_PRIORITY, make_pod
from podsched.api.types import KIND_POD
from podsched.cluster.store import ADDED, MODIFIED, REMOVED, Change
from podsched.plugins import names
from podsched.queue import scheduling_queue as sq
from podsched.queue.cluster_feed import queue_feed


def pool_with_one_pod_rejected_by_topology_spread() -> sq.SchedulingQueue:
    queue = sq.SchedulingQueue(lambda: 1000.0)
    queue.add(make_pod("pending").priority(HIGH_PRIORITY).obj())
    info = queue.pop()
    assert info is not None
    assert queue.add_unschedulable_if_not_present(info, {names.POD_TOPOLOGY_SPREAD}) == sq.UNSCHEDULABLE
    return queue


def test_an_assigned_pods_eviction_moves_no_pod() -> None:
    queue = pool_with_one_pod_rejected_by_topology_spread()
    running = make_pod("victim").node("n1").label("app", "web").obj()
    evicted = replace(running, metadata=replace(running.metadata, deletion_timestamp=1000.0))
    queue_feed(queue)(Change(MODIFIED, KIND_POD, running, evicted))
    assert queue.pending_counts()[sq.UNSCHEDULABLE] == 1


def test_an_assigned_pods_label_change_moves_the_pods_whose_rejector_cares() -> None:
    queue = pool_with_one_pod_rejected_by_topology_spread()
    running = make_pod("other").node("n1").label("app", "web").obj()
    relabelled = replace(running, metadata=replace(running.metadata, labels={"app": "db"}))
    queue_feed(queue)(Change(MODIFIED, KIND_POD, running, relabelled))
    assert queue.pending_counts()[sq.UNSCHEDULABLE] == 0


def pool_with_one_pod_rejected_by_inter_pod_affinity() -> sq.SchedulingQueue:
    queue = sq.SchedulingQueue(lambda: 1000.0)
    queue.add(make_pod("pending").priority(HIGH_PRIORITY).pod_affinity("kubernetes.io/hostname", app="db").obj())
    info = queue.pop()
    assert info is not None
    assert queue.add_unschedulable_if_not_present(info, {names.INTER_POD_AFFINITY}) == sq.UNSCHEDULABLE
    return queue


def test_an_added_pod_that_does_not_match_the_affinity_moves_nothing() -> None:
    # InterPodAffinity.isSchedulableAfterAssignedPodChange: QueueSkip for a pod outside the terms.
    queue = pool_with_one_pod_rejected_by_inter_pod_affinity()
    queue_feed(queue)(Change(ADDED, KIND_POD, None, make_pod("web").node("n1").label("app", "web").obj()))
    assert queue.pending_counts()[sq.UNSCHEDULABLE] == 1
    queue_feed(queue)(Change(ADDED, KIND_POD, None, make_pod("other-ns", "team").node("n1").label("app", "db").obj()))
    assert queue.pending_counts()[sq.UNSCHEDULABLE] == 1


def test_an_added_pod_that_matches_the_affinity_moves_the_pod() -> None:
    queue = pool_with_one_pod_rejected_by_inter_pod_affinity()
    queue_feed(queue)(Change(ADDED, KIND_POD, None, make_pod("db").node("n1").label("app", "db").obj()))
    assert queue.pending_counts()[sq.UNSCHEDULABLE] == 0


def test_a_deleted_pod_whose_anti_affinity_repelled_the_pod_moves_it() -> None:
    queue = sq.SchedulingQueue(lambda: 1000.0)
    queue.add(make_pod("pending").priority(HIGH_PRIORITY).label("app", "web").obj())
    info = queue.pop()
    assert info is not None
    queue.add_unschedulable_if_not_present(info, {names.INTER_POD_AFFINITY})
    bystander = make_pod("bystander").node("n1").label("app", "db").obj()
    queue_feed(queue)(Change(REMOVED, KIND_POD, bystander, None))
    assert queue.pending_counts()[sq.UNSCHEDULABLE] == 1
    repeller = make_pod("repeller").node("n1").pod_anti_affinity("kubernetes.io/hostname", app="web").obj()
    queue_feed(queue)(Change(REMOVED, KIND_POD, repeller, None))
    assert queue.pending_counts()[sq.UNSCHEDULABLE] == 0
