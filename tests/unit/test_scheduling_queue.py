"""The scheduling queue, after upstream's scheduling_queue_test.go: PrioritySort order, backoff
1 s doubling to 10 s, moves on cluster events, in-flight events, the 5-minute leftover flush and
the nominator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import HIGH_PRIORITY, LOW_PRIORITY, MID_PRIORITY, make_pod
from clocks import FakeClock
from podsched.framework.node_info import PodInfo
from podsched.plugins import names
from podsched.queue import scheduling_queue as sq
from podsched.queue.nominator import Nominator


def new_queue(clock: FakeClock, pop_from_backoff_q: bool = False) -> sq.SchedulingQueue:
    return sq.SchedulingQueue(clock, pop_from_backoff_q=pop_from_backoff_q)


def test_active_queue_pops_higher_priority_first_then_earlier_queue_time() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("low").priority(LOW_PRIORITY).obj())
    clock.now += 1
    queue.add(make_pod("high-late").priority(HIGH_PRIORITY).obj())
    queue.add(make_pod("mid").priority(MID_PRIORITY).obj())
    clock.now -= 0.5
    queue.add(make_pod("high-early").priority(HIGH_PRIORITY).obj())
    order = []
    while (info := queue.pop()) is not None:
        order.append(info.pod.name)
    assert order == ["high-early", "high-late", "mid", "low"]


@pytest.mark.parametrize(("count", "seconds"), [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (9, 10)])
def test_backoff_starts_at_one_second_and_doubles_up_to_ten(count: int, seconds: float) -> None:
    queue = new_queue(FakeClock(1000.0))
    rejected = sq.QueuedPodInfo(PodInfo(make_pod("p").obj()), timestamp=0.0, attempts=count, unschedulable_count=count)
    failing = sq.QueuedPodInfo(PodInfo(make_pod("q").obj()), timestamp=0.0, attempts=count, consecutive_errors=count)
    assert queue.backoff_duration(rejected) == seconds
    assert queue.backoff_duration(failing) == seconds


def fail(queue: sq.SchedulingQueue, plugins: set[str], error: bool = False) -> str:
    info = queue.pop()
    assert info is not None
    return queue.add_unschedulable_if_not_present(info, plugins, error=error)


def test_a_rejected_pod_waits_in_the_pool_until_an_event_its_rejector_cares_about() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("p").obj())
    assert fail(queue, {names.NODE_RESOURCES_FIT}) == sq.UNSCHEDULABLE
    assert queue.on_event(sq.ASSIGNED_POD_ADD) == 0, "a new pod on a node frees nothing"
    assert queue.location(queue_uid(queue)) == sq.UNSCHEDULABLE
    assert queue.on_event(sq.ASSIGNED_POD_DELETE) == 1
    assert queue.location(queue_uid(queue)) == sq.BACKOFF, "moved within its 1 s backoff"
    clock.now += 1.0
    assert queue.flush_backoff_completed() == 1
    assert queue.location(queue_uid(queue)) == sq.ACTIVE


def queue_uid(queue: sq.SchedulingQueue) -> str:
    return next(iter(queue._infos))


def test_a_failure_taken_back_later_backs_off_from_when_the_attempt_failed() -> None:
    """The service returns a failed pod only once its writes are read back: the pod's backoff counts
    from the failure, as upstream's handleSchedulingFailure stamps it before it writes anything, so
    an event after the backoff moves it to activeQ ahead of a lower-priority pod."""
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("low").priority(LOW_PRIORITY).obj())
    queue.add(make_pod("urgent").priority(HIGH_PRIORITY).obj())
    urgent, low = queue.pop(), queue.pop()
    assert urgent is not None and low is not None and urgent.pod.name == "urgent"
    failed_at = clock.now
    clock.now += 0.4  # the failures' record committed and read back
    assert queue.add_unschedulable_if_not_present(low, {names.NODE_RESOURCES_FIT}) == sq.UNSCHEDULABLE
    queue.add_unschedulable_if_not_present(urgent, {names.NODE_RESOURCES_FIT}, failed_at=failed_at)
    clock.now = failed_at + 1.0  # urgent's 1 s backoff is over, low's (stamped on return) is not
    assert queue.on_event(sq.NODE_ADD) == 2
    assert queue.location(urgent.pod.uid) == sq.ACTIVE
    assert queue.location(low.pod.uid) == sq.BACKOFF


def test_node_affinity_rejections_ignore_pod_deletions_but_not_new_nodes() -> None:
    queue = new_queue(FakeClock(1000.0))
    queue.add(make_pod("p").obj())
    fail(queue, {names.NODE_AFFINITY})
    assert queue.on_event(sq.ASSIGNED_POD_DELETE) == 0
    assert queue.on_event(sq.NODE_ADD) == 1


def test_an_event_during_the_attempt_sends_the_pod_to_backoff_instead_of_the_pool() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("p").obj())
    info = queue.pop()
    assert info is not None
    queue.on_event(sq.ASSIGNED_POD_DELETE)
    assert queue.add_unschedulable_if_not_present(info, {names.NODE_RESOURCES_FIT}) == sq.BACKOFF


def test_an_error_always_backs_off() -> None:
    queue = new_queue(FakeClock(1000.0))
    queue.add(make_pod("p").obj())
    assert fail(queue, set(), error=True) == sq.BACKOFF


def test_the_queue_time_is_refreshed_so_a_retried_pod_queues_behind_its_equals() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("first").priority(MID_PRIORITY).obj())
    queue.add(make_pod("second").priority(MID_PRIORITY).obj())
    clock.now += 1
    info = queue.pop()
    assert info is not None and info.pod.name == "first"
    queue.on_event(sq.NODE_ADD)  # in flight: the failed pod will go straight back
    queue.add_unschedulable_if_not_present(info, {names.NODE_RESOURCES_FIT})
    clock.now += 5
    queue.flush_backoff_completed()
    popped = [queue.pop(), queue.pop()]
    assert [p.pod.name for p in popped if p] == ["second", "first"]


def test_pods_left_unschedulable_for_five_minutes_are_retried() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("p").obj())
    fail(queue, {names.NODE_AFFINITY})
    clock.now += 299
    assert queue.flush_unschedulable_leftover() == 0
    clock.now += 2
    assert queue.flush_unschedulable_leftover() == 1
    assert queue.location(queue_uid(queue)) == sq.ACTIVE


def test_an_idle_queue_pops_from_backoff_without_waiting_when_enabled() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock, pop_from_backoff_q=True)
    queue.add(make_pod("p").obj())
    info = queue.pop()
    assert info is not None
    queue.on_event(sq.NODE_ADD)  # in flight: the rejected pod goes to backoffQ
    assert queue.add_unschedulable_if_not_present(info, {names.NODE_RESOURCES_FIT}) == sq.BACKOFF
    assert queue.pop() is not None


def test_a_pod_that_failed_with_an_error_is_never_popped_before_its_backoff_ends() -> None:
    # upstream's entityErrorBackoffQ: PopFromBackoffQ pops entityBackoffQ only.
    clock = FakeClock(1000.0)
    queue = new_queue(clock, pop_from_backoff_q=True)
    queue.add(make_pod("p").obj())
    assert fail(queue, set(), error=True) == sq.BACKOFF
    assert not queue.can_pop() and queue.pop() is None
    clock.now = 1002.0
    assert queue.can_pop()
    info = queue.pop()
    assert info is not None and info.pod.name == "p"


def test_an_errors_backoff_ends_where_the_window_after_its_expiration_begins() -> None:
    # getBackoffTime aligns the expiration down to backoffQ's 1 s window, and isEntityBackingoff
    # holds the pod while that window has not passed: failed at 1000.5 with 1 s of backoff, it
    # waits until 1002.0, where the flush of that window moves it.
    clock = FakeClock(1000.5)
    queue = new_queue(clock, pop_from_backoff_q=True)
    queue.add(make_pod("p").obj())
    fail(queue, set(), error=True)
    assert queue.next_backoff_expiry() == 1002.0
    clock.now = 1001.6
    assert queue.flush_backoff_completed() == 0
    clock.now = 1002.0
    assert queue.flush_backoff_completed() == 1
    assert queue.location(queue_uid(queue)) == sq.ACTIVE


def _reject_into_backoff(queue: sq.SchedulingQueue) -> sq.QueuedPodInfo:
    """Pop a pod and reject it after an event it cares about arrived while it was in flight, which
    sends it to backoffQ (not the unschedulable pool)."""
    info = queue.pop()
    assert info is not None
    queue.on_event(sq.NODE_ADD)
    assert queue.add_unschedulable_if_not_present(info, {names.NODE_RESOURCES_FIT}) == sq.BACKOFF
    return info


def test_a_rejections_backoff_ends_where_the_window_after_its_expiration_begins() -> None:
    # With PopFromBackoffQ upstream aligns every backoff (entityBackoffQ's as entityErrorBackoffQ's)
    # to the 1 s window: rejected at 1000.5 with 1 s of backoff, the pod backs off until 1002.0.
    clock = FakeClock(1000.5)
    queue = new_queue(clock, pop_from_backoff_q=True)
    queue.add(make_pod("p").obj())
    _reject_into_backoff(queue)
    assert queue.next_backoff_expiry() == 1002.0
    clock.now = 1001.6
    assert queue.flush_backoff_completed() == 0
    clock.now = 1002.0
    assert queue.flush_backoff_completed() == 1


def test_backoffs_ending_in_one_window_pop_in_active_queue_order() -> None:
    # lessBackoffCompletedWithPriority: within one window, priority first, then the earlier timestamp.
    clock = FakeClock(1000.2)
    queue = new_queue(clock, pop_from_backoff_q=True)
    queue.add(make_pod("low").priority(LOW_PRIORITY).obj())
    _reject_into_backoff(queue)  # backoff ends at 1001.2
    clock.now = 1000.7
    queue.add(make_pod("high").priority(HIGH_PRIORITY).obj())
    _reject_into_backoff(queue)  # backoff ends at 1001.7: the same window
    popped = [queue.pop(), queue.pop()]  # activeQ is empty: popped from backoffQ early
    assert [info.pod.name for info in popped if info is not None] == ["high", "low"]


def test_an_errors_backoff_doubles_over_its_consecutive_errors_not_its_rejections() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("p").obj())
    for _ in range(2):
        assert fail(queue, {names.NODE_RESOURCES_FIT}) == sq.UNSCHEDULABLE
        queue.activate(queue_uid(queue))
    assert fail(queue, set(), error=True) == sq.BACKOFF  # third attempt, first error: 1 s
    assert queue.next_backoff_expiry() == 1001.0
    clock.now = 1001.0
    assert fail(queue, set(), error=True) == sq.BACKOFF  # second error in a row: 2 s
    assert queue.next_backoff_expiry() == 1003.0


def test_a_rejections_backoff_doubles_over_its_unschedulable_attempts_not_its_errors() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("p").obj())
    fail(queue, set(), error=True)
    clock.now = 1001.0
    info = queue.pop()
    assert info is not None and info.attempts == 2
    queue.on_event(sq.NODE_ADD)  # in flight: the rejected pod goes to backoffQ
    assert queue.add_unschedulable_if_not_present(info, {names.NODE_RESOURCES_FIT}) == sq.BACKOFF
    assert info.consecutive_errors == 0 and info.unschedulable_count == 1
    assert queue.next_backoff_expiry() == 1002.0, "one unschedulable attempt: 1 s, the error does not count"


def test_a_failure_with_no_rejector_plugin_counts_as_an_error() -> None:
    # AddUnschedulablePodIfNotPresent: no unschedulable or pending plugin means an error.
    clock = FakeClock(1000.0)
    queue = new_queue(clock, pop_from_backoff_q=True)
    queue.add(make_pod("p").obj())
    assert fail(queue, set(), error=False) == sq.BACKOFF
    info = queue.info(queue_uid(queue))
    assert info is not None and info.consecutive_errors == 1 and info.unschedulable_count == 0
    assert queue.pop() is None, "in the error backoffQ, not popped early"


def test_an_error_clears_the_rejectors_of_an_earlier_attempt() -> None:
    # The framework clears a failed pod's plugins: it backs off in the error backoffQ, whatever
    # rejected it before.
    clock = FakeClock(1000.0)
    queue = new_queue(clock, pop_from_backoff_q=True)
    queue.add(make_pod("p").obj())
    fail(queue, {names.NODE_RESOURCES_FIT})
    queue.activate(queue_uid(queue))
    fail(queue, {names.NODE_RESOURCES_FIT}, error=True)
    info = queue.info(queue_uid(queue))
    assert info is not None and info.unschedulable_plugins == set()
    assert queue.pop() is None


def test_an_error_with_backoff_disabled_goes_straight_to_active() -> None:
    # queueAfterBackoff: with podMaxBackoffSeconds 0 the pod is not backing off, so activeQ.
    queue = sq.SchedulingQueue(FakeClock(1000.0), max_backoff=0.0)
    queue.add(make_pod("p").obj())
    assert fail(queue, set(), error=True) == sq.ACTIVE
    assert queue.pop() is not None


def test_no_event_moves_a_pod_that_failed_with_an_error_but_activate_does() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock, pop_from_backoff_q=True)
    queue.add(make_pod("p").obj())
    fail(queue, set(), error=True)
    for event in (sq.NODE_ADD, sq.ASSIGNED_POD_DELETE, sq.WILDCARD):
        assert queue.on_event(event) == 0
    assert queue.flush_unschedulable_leftover() == 0
    assert queue.location(queue_uid(queue)) == sq.BACKOFF
    assert queue.pop() is None, "nor does an idle queue"
    queue.activate(queue_uid(queue))
    assert queue.location(queue_uid(queue)) == sq.ACTIVE


def test_a_waiting_pod_is_not_popped_before_its_backoff_ends_when_disabled() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    queue.add(make_pod("p").obj())
    fail(queue, set(), error=True)
    assert queue.pop() is None
    clock.now += 1
    assert queue.pop() is not None


def test_a_deleted_pod_leaves_every_queue_and_its_nomination() -> None:
    queue = new_queue(FakeClock(1000.0))
    pod = make_pod("p").nominated("n1").obj()
    queue.add(pod)
    assert queue.nominator.nominated_node(pod) == "n1"
    queue.delete(pod)
    assert queue.pop() is None
    assert queue.nominator.nominated_pods_for_node("n1") == []


def test_clearing_a_nomination_requeues_the_waiting_pod() -> None:
    queue = new_queue(FakeClock(1000.0))
    pod = make_pod("p").nominated("n1").obj()
    queue.add(pod)
    fail(queue, {names.NODE_RESOURCES_FIT})
    cleared = make_pod("p").uid(pod.uid).obj()
    queue.update(pod, cleared)
    assert queue.location(pod.uid) in (sq.ACTIVE, sq.BACKOFF)
    assert queue.nominator.nominated_node(cleared) == ""


def test_a_cleared_nomination_moves_the_pod_only_through_its_rejectors_hints() -> None:
    # Upstream's Update sees a status-only change (the general Pod/Update no plugin registers for):
    # the pod stays in the pool; the nomination leaving the node is then an AssignedPodDelete for the
    # pods of lower or equal priority, the pod itself included, which NodeResourcesFit registers
    # for and NodeAffinity does not.
    queue = new_queue(FakeClock(1000.0))
    pod = make_pod("p").nominated("n1").obj()
    queue.add(pod)
    fail(queue, {names.NODE_AFFINITY})
    queue.update(pod, make_pod("p").uid(pod.uid).obj())
    assert queue.location(pod.uid) == sq.UNSCHEDULABLE


def test_nominator_keeps_a_scheduler_nomination_across_unrelated_updates_and_ignores_bound_pods() -> None:
    nominator = Nominator()
    pod = make_pod("p").obj()
    nominator.add(PodInfo(pod), "n1")
    relabelled = make_pod("p").uid(pod.uid).label("x", "y").obj()
    nominator.update(pod, PodInfo(relabelled))
    assert nominator.nominated_node(relabelled) == "n1"
    bound = make_pod("p").uid(pod.uid).node("n2").obj()
    nominator.add(PodInfo(bound), "n1")
    assert len(nominator) == 0


def test_unpop_returns_an_untried_pod_to_its_place_without_counting_an_attempt() -> None:
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    for name, priority in (("a", 10), ("b", 10), ("c", 5)):
        queue.add(make_pod(name).priority(priority).obj())
        clock.now += 1
    first, second = queue.pop(), queue.pop()
    assert first is not None and second is not None
    assert (first.pod.name, second.pod.name) == ("a", "b")
    queue.unpop(second)
    assert second.attempts == 0 and second.initial_attempt_timestamp is None
    assert queue.location(second.pod.uid) == sq.ACTIVE
    again = queue.pop()
    assert again is not None and again.pod.name == "b" and again.attempts == 1


operations = st.lists(
    st.tuples(st.sampled_from(["begin", "record", "record_for", "end", "end_if_missed"]), st.integers(0, 5)),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(operations, st.sampled_from([2, 3, 4096]))
def test_in_flight_events_give_each_pod_exactly_the_events_since_it_was_popped(
    ops: list[tuple[str, int]], trim_at: int
) -> None:
    """The shared log against one list per in-flight pod (what it replaced), trimming included; a pod
    ending with `end_if_missed` is asked about the events it would have listed."""
    events = sq.InFlightEvents()
    events.TRIM_AT = trim_at
    model: dict[str, list[str]] = {}
    for step, (op, n) in enumerate(ops):
        uid = f"pod-{n}"
        if op == "begin":
            events.begin(uid)
            model[uid] = []
        elif op == "record":
            events.record(f"event-{step}")
            for missed in model.values():
                missed.append(f"event-{step}")
        elif op == "record_for":
            events.record_for(uid, f"own-{step}")
            if uid in model:
                model[uid].append(f"own-{step}")
        elif op == "end":
            assert sorted(event for event, _ in events.end_with_checks(uid)) == sorted(model.pop(uid, []))
        else:  # whether it missed one that matters, looked at up to the first
            assert events.end_if_missed(uid, matters) == any(matters(event) for event in model.pop(uid, []))
    for uid in list(model):
        assert sorted(event for event, _ in events.end_with_checks(uid)) == sorted(model.pop(uid))


def matters(event: str) -> bool:
    return event.endswith(("3", "7"))


def test_equal_priority_pods_requeued_at_the_same_instant_come_out_in_the_order_they_failed() -> None:
    # PrioritySort's Less compares Timestamps; on a moving clock the pod that failed last has the
    # latest one, whatever order a later event moves the pool in (here: the order pods were first seen).
    clock = FakeClock(1000.0)
    queue = new_queue(clock)
    pods = [make_pod(name).priority(HIGH_PRIORITY).obj() for name in ("a", "b", "c")]
    for pod in pods:
        queue.add(pod)
    for _ in pods:
        assert fail(queue, {names.NODE_RESOURCES_FIT}) == sq.UNSCHEDULABLE
    queue.activate(pods[0].uid)  # "a" is tried again and fails again, at the same instant
    assert fail(queue, {names.NODE_RESOURCES_FIT}) == sq.UNSCHEDULABLE
    clock.now += 30  # backoff over: the event sends them all to activeQ
    assert queue.on_event(sq.ASSIGNED_POD_DELETE) == 3
    order = []
    while (info := queue.pop()) is not None:
        order.append(info.pod.name)
    assert order == ["b", "c", "a"]


# --- a rejected pod group (AddAttemptedPodGroupIfNeeded) ------------------------------------------


def test_pod_group_backoff_doubles_from_one_second_up_to_ten_times_the_square_root_of_its_size() -> None:
    queue = new_queue(FakeClock(1000.0))
    assert [queue.pod_group_backoff_duration(count, 1) for count in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    # Four pods: at most 10 s * sqrt(4) = 20 s; nine: 30 s.
    assert [queue.pod_group_backoff_duration(count, 4) for count in range(1, 7)] == [1, 2, 4, 8, 16, 20]
    assert queue.pod_group_backoff_duration(6, 9) == 30
    assert queue.pod_group_backoff_duration(0, 4) == 0


def _rejected_group(queue: sq.SchedulingQueue, names_: list[str]) -> list[sq.QueuedPodInfo]:
    for name in names_:
        queue.add(make_pod(name).group("g").obj())
    popped = queue.pop()
    assert popped is not None
    return [popped, *queue.take_group_members("default", "g")]


def test_a_rejected_pod_group_backs_off_as_one_entity_and_no_event_moves_it() -> None:
    clock = FakeClock(1000.0)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    infos = _rejected_group(queue, ["g-0", "g-1"])
    failed = [(info, {names.GANG_SCHEDULING, names.NODE_RESOURCES_FIT}, "rejected") for info in infos]
    assert queue.add_attempted_pod_group("default", "g", failed, error=False) == sq.BACKOFF
    assert {queue.location(i.pod.uid) for i in infos} == {sq.BACKOFF}
    # No unschedulable plugins: no cluster event moves it, and PopFromBackoffQ does not take it early.
    assert queue.on_event(sq.ASSIGNED_POD_DELETE) == 0
    assert queue.pop() is None and not queue.can_pop()
    # 1 s, and over when backoffQ's next 1 s ordering window begins after that.
    assert queue.next_backoff_expiry() == clock.now + 2
    clock.now += 1
    assert not queue.can_pop()
    clock.now += 1
    assert queue.can_pop()
    infos = [queue.pop(), *queue.take_group_members("default", "g")]
    assert len(infos) == 2
    # A second rejection doubles the backoff; a scheduled group starts over.
    failed = [(info, {names.GANG_SCHEDULING}, "rejected") for info in infos if info is not None]
    queue.add_attempted_pod_group("default", "g", failed, error=False)
    assert queue.next_backoff_expiry() == clock.now + 3


def test_a_groups_backoff_ends_where_the_window_after_its_expiration_begins() -> None:
    # alignToWindow truncates BackoffExpiration to the second; isEntityBackingoff holds the entity
    # while that second has not passed.
    assert [sq.SchedulingQueue.backoff_window_end(t) for t in (1001.0, 1001.2, 1001.999, 1002.0)] == [
        1002.0,
        1002.0,
        1002.0,
        1003.0,
    ]
    clock = FakeClock(1000.5)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    infos = _rejected_group(queue, ["g-0"])
    queue.add_attempted_pod_group("default", "g", [(infos[0], {names.GANG_SCHEDULING}, "rejected")], error=False)
    assert queue.next_backoff_expiry() == 1002.0  # 1000.5 + 1 s is in the window [1001, 1002)


def test_the_pods_of_a_rejected_pod_group_are_counted_apart_in_backoff_until_the_group_is_retried() -> None:
    clock = FakeClock(1000.0)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    infos = _rejected_group(queue, ["g-0", "g-1"])
    queue.add(make_pod("alone").obj())
    alone = queue.pop()
    assert alone is not None and alone.pod.name == "alone"
    queue.add_unschedulable_if_not_present(alone, set(), error=True)
    queue.add_attempted_pod_group("default", "g", [(info, set(), "rejected") for info in infos], error=False)
    assert queue.pending_counts()[sq.BACKOFF] == 3 and queue.pod_group_backoff_count() == 2
    clock.now += 2  # the group's 1 s backoff ends where backoffQ's next 1 s window begins
    assert queue.flush_backoff_completed() == 3
    assert queue.pod_group_backoff_count() == 0


def test_a_pod_added_to_a_group_in_backoff_waits_with_it() -> None:
    clock = FakeClock(1000.0)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    infos = _rejected_group(queue, ["g-0"])
    queue.add_attempted_pod_group("default", "g", [(infos[0], {names.GANG_SCHEDULING}, "rejected")], error=False)
    queue.add(make_pod("g-1").group("g").obj())
    assert queue.pop() is None
    clock.now += 2
    assert queue.pop() is not None


# --- a pod group whose preemption is running (DefaultPreemption's PreEnqueue) ---------------------


def _group_preempting(queue: sq.SchedulingQueue, rejectors: set[str]) -> list[sq.QueuedPodInfo]:
    """A two-pod group rejected in a cycle that started its asynchronous preemption."""
    infos = _rejected_group(queue, ["g-0", "g-1"])
    failed = [(info, {names.GANG_SCHEDULING, *rejectors}, "preempting") for info in infos]
    assert queue.add_attempted_pod_group("default", "g", failed, error=False, preempting=True) == sq.UNSCHEDULABLE
    return infos


def test_a_group_whose_preemption_runs_waits_in_the_pool_until_an_assigned_pod_is_deleted() -> None:
    clock = FakeClock(1000.0)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    infos = _group_preempting(queue, {names.NODE_RESOURCES_FIT})
    assert {queue.location(i.pod.uid) for i in infos} == {sq.UNSCHEDULABLE}
    assert all(names.DEFAULT_PREEMPTION in i.unschedulable_plugins for i in infos)
    clock.now += 5  # its backoff (1 s) is long over, but a gated group is no backoff entity
    assert queue.pop() is None and not queue.can_pop()
    # NodeResourcesFit registers for a new node, DefaultPreemption (which gates the group) does not.
    assert queue.on_event(sq.NODE_ADD) == 0
    # An assigned pod's deletion is DefaultPreemption's event, and NodeResourcesFit's hint says
    # Queue for it: the whole group leaves the pool as one entity.
    assert queue.on_event(sq.ASSIGNED_POD_DELETE) == 2
    assert {queue.location(i.pod.uid) for i in infos} == {sq.ACTIVE}
    popped = [queue.pop(), *queue.take_group_members("default", "g")]
    assert sorted(i.pod.name for i in popped if i is not None) == ["g-0", "g-1"]


def test_a_gated_group_goes_to_backoff_when_the_deletion_comes_before_its_backoff_ends() -> None:
    clock = FakeClock(1000.0)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    infos = _group_preempting(queue, {names.NODE_RESOURCES_FIT})
    assert queue.on_event(sq.ASSIGNED_POD_DELETE) == 2
    assert {queue.location(i.pod.uid) for i in infos} == {sq.BACKOFF}
    assert queue.pop() is None  # the error backoffQ is never popped early
    clock.now += 2
    assert queue.pop() is not None


def test_a_gated_group_no_rejector_of_which_cares_waits_for_the_five_minute_flush() -> None:
    clock = FakeClock(1000.0)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    infos = _group_preempting(queue, set())  # GangScheduling and DefaultPreemption skip a deletion
    assert queue.on_event(sq.ASSIGNED_POD_DELETE) == 0
    clock.now += 301
    assert queue.flush_unschedulable_leftover() == 2
    assert {queue.location(i.pod.uid) for i in infos} == {sq.ACTIVE}


def test_a_deletion_while_the_group_was_in_flight_moves_it_as_if_it_came_after_the_attempt() -> None:
    # The cycle's own victims (a grace period of 0) go while the group is in flight; upstream's
    # executor sends their deletions after the attempt, when the group is parked already.
    clock = FakeClock(1000.0)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    infos = _rejected_group(queue, ["g-0", "g-1"])
    queue.on_event(sq.ASSIGNED_POD_DELETE)
    failed = [(info, {names.NODE_RESOURCES_FIT}, "preempting") for info in infos]
    assert queue.add_attempted_pod_group("default", "g", failed, error=False, preempting=True) == sq.BACKOFF
    # A deletion another event's preCheck leaves out (a lower-priority pod's nomination released)
    # does not move it.
    infos = [queue_pop_after_backoff(queue, clock), *queue.take_group_members("default", "g")]
    queue.on_event(sq.ASSIGNED_POD_DELETE, pre_check=lambda pod: False)
    failed = [(info, {names.NODE_RESOURCES_FIT}, "preempting") for info in infos]
    assert queue.add_attempted_pod_group("default", "g", failed, error=False, preempting=True) == sq.UNSCHEDULABLE


def queue_pop_after_backoff(queue: sq.SchedulingQueue, clock: FakeClock) -> sq.QueuedPodInfo:
    expiry = queue.next_backoff_expiry()
    assert expiry is not None
    clock.now = expiry
    info = queue.pop()
    assert info is not None
    return info


def test_a_pod_added_to_a_gated_group_waits_in_the_pool_with_it() -> None:
    clock = FakeClock(1000.0)
    queue = sq.SchedulingQueue(clock, pop_from_backoff_q=True, pre_enqueue=lambda pod: None)
    _group_preempting(queue, {names.NODE_RESOURCES_FIT})
    queue.add(make_pod("g-2").group("g").obj())
    clock.now += 5
    assert queue.pop() is None
    assert queue.on_event(sq.ASSIGNED_POD_DELETE) == 3
