"""The binder's placement semantics in `Cluster`: safe binds, graceful termination of victims,
nominations, events, PDB status, and rejection of bad input without side effects."""

from __future__ import annotations

import pytest

from builders import HIGH_PRIORITY, LOW_PRIORITY, make_node, make_pdb, make_pod, make_priority_class
from clocks import FakeClock
from podsched.api.errors import ApiError
from podsched.api.types import CONDITION_DISRUPTION_TARGET, CONDITION_POD_SCHEDULED, POD_FAILED, POD_RUNNING, Pod
from podsched.cluster import events as ev
from podsched.cluster.binder import BIND_ALREADY_BOUND, BIND_NODE_NOT_FOUND, BIND_WOULD_OVERCOMMIT, BindError
from podsched.cluster.disruption import compute_pdb_status
from podsched.cluster.failure import record_scheduling_failure
from podsched.cluster.state import Cluster
from podsched.cluster.store import Change

START = 5000.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def cluster(clock: FakeClock) -> Cluster:
    cluster = Cluster(clock, keep_history=True)
    cluster.apply(make_node("n1").capacity(cpu="2", memory="4Gi").obj())
    cluster.apply(make_priority_class("low", LOW_PRIORITY))
    cluster.apply(make_priority_class("high", HIGH_PRIORITY))
    return cluster


def test_bind_places_the_pod_records_scheduled_and_starts_it(cluster: Cluster) -> None:
    _, pod = cluster.apply(make_pod("p").req(cpu="1").obj())
    bound = cluster.bind(pod.metadata.uid, "n1")
    assert bound.spec.node_name == "n1" and bound.status.phase == POD_RUNNING
    assert bound.status.start_time == START
    assert [e.reason for e in cluster.events] == [ev.SCHEDULED]
    assert cluster.node_infos["n1"].requested.milli_cpu == 1000


def test_a_bind_stores_a_new_pod_and_leaves_the_pending_one_as_it_was(cluster: Cluster) -> None:
    _, pod = cluster.apply(make_pod("p").req(cpu="1").obj())
    cluster.nominate(pod.metadata.uid, "n1")
    pending = cluster.pods_by_uid[pod.metadata.uid]
    spec, status = pending.spec, pending.status
    bound = cluster.bind(pod.metadata.uid, "n1")
    assert bound is not pending and bound.spec is not spec and bound.status is not status
    assert (spec.node_name, status.phase, status.nominated_node_name, status.start_time) == ("", "Pending", "n1", None)
    assert pending.condition(CONDITION_POD_SCHEDULED) is None
    assert (bound.status.nominated_node_name, bound.condition(CONDITION_POD_SCHEDULED).status) == ("", "True")
    assert cluster.pods_by_uid[pod.metadata.uid] is bound


def test_a_bind_that_would_overcommit_is_refused_and_changes_nothing(cluster: Cluster) -> None:
    _, first = cluster.apply(make_pod("first").req(cpu="2").obj())
    cluster.bind(first.metadata.uid, "n1")
    _, second = cluster.apply(make_pod("second").req(cpu="1").obj())
    with pytest.raises(BindError) as refused:
        cluster.bind(second.metadata.uid, "n1")
    assert refused.value.reason == BIND_WOULD_OVERCOMMIT
    assert cluster.pods_by_uid[second.metadata.uid].spec.node_name == ""
    assert cluster.node_infos["n1"].requested.milli_cpu == 2000


def test_a_pod_is_never_bound_twice(cluster: Cluster) -> None:
    _, pod = cluster.apply(make_pod("p").req(cpu="1").obj())
    cluster.bind(pod.metadata.uid, "n1")
    with pytest.raises(BindError) as refused:
        cluster.bind(pod.metadata.uid, "n1")
    assert refused.value.reason == BIND_ALREADY_BOUND
    assert len(cluster.node_infos["n1"].pods) == 1


def test_binding_to_an_unknown_node_is_refused(cluster: Cluster) -> None:
    _, pod = cluster.apply(make_pod("p").obj())
    with pytest.raises(BindError) as refused:
        cluster.bind(pod.metadata.uid, "nowhere")
    assert refused.value.reason == BIND_NODE_NOT_FOUND


def test_a_victim_keeps_its_resources_until_its_grace_period_ends(cluster: Cluster, clock: FakeClock) -> None:
    _, victim = cluster.apply(make_pod("victim").priority_class("low").req(cpu="2").grace(30).obj())
    cluster.bind(victim.metadata.uid, "n1")
    _, preemptor = cluster.apply(make_pod("preemptor").priority_class("high").req(cpu="2").obj())
    terminating = cluster.preempt_victim(victim.metadata.uid, preemptor, "n1")
    assert terminating is not None and terminating.metadata.deletion_timestamp == START
    condition = terminating.condition(CONDITION_DISRUPTION_TARGET)
    assert condition is not None and condition.reason == "PreemptionByScheduler"
    assert condition.message == "default-scheduler: preempting to accommodate a higher priority pod"
    with pytest.raises(BindError):
        cluster.bind(preemptor.metadata.uid, "n1")  # the terminating victim still holds the CPUs
    clock.now += 29
    assert cluster.complete_terminations() == 0
    clock.now += 1
    assert cluster.complete_terminations() == 1
    assert cluster.bind(preemptor.metadata.uid, "n1").spec.node_name == "n1"
    assert cluster.history[victim.metadata.uid].status.phase == POD_FAILED
    reasons = [e.reason for e in cluster.events if e.involved_object.name == "victim"]
    assert reasons == [ev.SCHEDULED, ev.PREEMPTED, ev.KILLING, ev.DELETED]


def test_a_victim_must_have_lower_priority_than_its_preemptor(cluster: Cluster) -> None:
    _, pod = cluster.apply(make_pod("peer").priority_class("high").req(cpu="1").obj())
    cluster.bind(pod.metadata.uid, "n1")
    _, other = cluster.apply(make_pod("other").priority_class("high").obj())
    with pytest.raises(BindError):
        cluster.preempt_victim(pod.metadata.uid, other, "n1")
    assert cluster.pods_by_uid[pod.metadata.uid].metadata.deletion_timestamp is None


def test_a_pod_created_on_a_full_node_is_refused_by_the_node_agent(cluster: Cluster) -> None:
    cluster.apply(make_pod("a").req(cpu="2").node("n1").obj())
    _, refused = cluster.apply(make_pod("b").req(cpu="1").node("n1").obj())
    assert refused.status.phase == POD_FAILED
    assert cluster.node_infos["n1"].requested.milli_cpu == 2000
    assert cluster.events[-1].reason == ev.OUT_OF_RESOURCES


def test_nominating_and_clearing_record_events(cluster: Cluster) -> None:
    _, pod = cluster.apply(make_pod("p").obj())
    cluster.nominate(pod.metadata.uid, "n1", victims=2)
    assert cluster.pods_by_uid[pod.metadata.uid].status.nominated_node_name == "n1"
    cluster.clear_nomination(pod.metadata.uid, "pod default/x with higher priority preempted on that node")
    assert cluster.pods_by_uid[pod.metadata.uid].status.nominated_node_name == ""
    assert [e.reason for e in cluster.events] == [ev.NOMINATED, ev.NOMINATION_CLEARED]


def test_repeated_failed_scheduling_events_are_counted_not_duplicated(cluster: Cluster) -> None:
    _, pod = cluster.apply(make_pod("p").obj())
    for _ in range(3):
        cluster.mark_unschedulable(pod.metadata.uid, "0/1 nodes are available: 1 Insufficient cpu.")
    assert len(cluster.events) == 1 and cluster.events[0].count == 3


def test_deleting_a_priority_class_leaves_pods_as_they_are(cluster: Cluster) -> None:
    cluster.apply(make_priority_class("batch", 7))
    pod = make_pod("p").obj()
    pod.spec.priority_class_name = "batch"
    _, admitted = cluster.apply(pod)
    cluster.delete("PriorityClass", "", "batch")
    assert cluster.pods_by_uid[admitted.metadata.uid].priority == 7


def test_a_rejected_object_changes_nothing(cluster: Cluster) -> None:
    pod = make_pod("p").obj()
    pod.spec.priority_class_name = "missing"
    before = (dict(cluster.pods), len(cluster.events))
    with pytest.raises(ApiError) as rejected:
        cluster.apply(pod)
    assert rejected.value.reason == "Forbidden"
    assert (dict(cluster.pods), len(cluster.events)) == before


def test_pdb_status_counts_running_matching_pods_not_being_deleted(clock: FakeClock) -> None:
    pods = [
        make_pod("a").label("app", "db").node("n1").obj(),
        make_pod("b").label("app", "db").node("n1").obj(),
        make_pod("c").label("app", "db").node("n1").terminating(START).obj(),
        make_pod("d").label("app", "web").node("n1").obj(),
    ]
    status = compute_pdb_status(make_pdb("db", app="db"), pods, START)
    assert (status.expected_pods, status.current_healthy, status.desired_healthy, status.disruptions_allowed) == (
        3,
        2,
        1,
        1,
    )


def pod_changes(cluster: Cluster) -> list[str]:
    """The pod changes written from now on, as their new nominatedNodeName and PodScheduled status."""
    seen: list[str] = []

    def listen(change: Change) -> None:
        pod = change.new
        if isinstance(pod, Pod):
            condition = pod.condition(CONDITION_POD_SCHEDULED)
            scheduled = condition.status if condition is not None else None
            seen.append(f"{pod.name}: nominated={pod.status.nominated_node_name!r} scheduled={scheduled!r}")

    cluster.listeners.append(listen)
    return seen


def test_a_failed_attempt_with_a_nomination_is_one_status_update(cluster: Cluster) -> None:
    # upstream's handleSchedulingFailure patches PodScheduled=False and nominatedNodeName together
    _, pod = cluster.apply(make_pod("p").priority_class("high").req(cpu="1").obj())
    written = pod_changes(cluster)
    events_before = len(cluster.events)
    record_scheduling_failure(cluster, pod.metadata.uid, "0/1 nodes are available", nominated_node="n1")
    assert written == ["p: nominated='n1' scheduled='False'"]
    assert [e.reason for e in cluster.events[events_before:]] == [ev.NOMINATED, ev.FAILED_SCHEDULING]


def test_a_failed_attempt_that_clears_its_own_nomination_is_one_status_update(cluster: Cluster) -> None:
    _, pod = cluster.apply(make_pod("p").priority_class("high").req(cpu="1").obj())
    cluster.nominate(pod.metadata.uid, "n1")
    written = pod_changes(cluster)
    events_before = len(cluster.events)
    record_scheduling_failure(cluster, pod.metadata.uid, "0/1 nodes are available", clear_own_nomination=True)
    assert written == ["p: nominated='' scheduled='False'"]
    assert [e.reason for e in cluster.events[events_before:]] == [ev.NOMINATION_CLEARED, ev.FAILED_SCHEDULING]
    # the same failure again changes nothing but the event's count
    record_scheduling_failure(cluster, pod.metadata.uid, "0/1 nodes are available", clear_own_nomination=True)
    assert len(written) == 1
