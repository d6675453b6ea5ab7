"""Crash safety: 500 pods are being scheduled (with preemptions) while each service in
turn is killed with SIGKILL and restarted, then all of them at once, then the Kafka broker is
restarted. Afterwards an auditor replays the whole Kafka log (tests/audit.py) and checks: no
acknowledged write lost, resource versions strictly increasing (nothing applied twice), no pod
bound twice, no node ever overcommitted (terminating pods included), every victim of lower
priority than its preemptor, an event stream without gaps, and every pod bound or pending for a
stated reason."""

from __future__ import annotations

import asyncio
import time

import pytest
import yaml

from audit import audit, final_pods, pending_reasons, read_log, timeline
from crash_load import Submitter, settle, supervise, wait_for_acks
from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import SERVICES, ServiceStack

NODES = 40
SLOTS_PER_NODE = 10  # 1-CPU pods on 10-CPU nodes: 400 slots
LOW_PODS = 400
HIGH_PODS = 100  # each needs a low pod preempted


def kill_9_as_acks_arrive(stack: ServiceStack, submitter: Submitter, schedule: list[tuple[int, str]]) -> None:
    """For each (acks, service) in order: once the submitter has that many acknowledged writes, kill -9 the
    service and start it again, while the submitter goes on."""
    for acks, name in schedule:
        wait_for_acks(submitter, acks)
        stack.kill9(name)
        time.sleep(0.3)
        stack.start_one(name, wait=True)


def explain_several_victims(kafka: KafkaBroker, stack: ServiceStack) -> str:
    """The log's story of every preemptor that evicted more than one pod, and of its victims."""
    log = asyncio.run(read_log(kafka.bootstrap_servers, stack.settings.topic_prefix, timeout=60))
    victims: dict[str, set[str]] = {}
    for event in log.events:
        if event.reason == "Preempted" and event.HasField("related"):
            victims.setdefault(event.related.name, set()).add(event.involved_object.name)
    several = {preemptor: names for preemptor, names in victims.items() if len(names) > 1}
    nominated_to: dict[str, set[str]] = {}
    for change in log.changes:
        if change.nominated_node_name:
            nominated_to.setdefault(change.object.name, set()).add(change.nominated_node_name)
    return "\n".join(
        f"{preemptor} evicted {sorted(names)}; every pod bound or nominated to {sorted(nominated_to[preemptor])}:\n  "
        + "\n  ".join(timeline(log, {preemptor, *names}, frozenset(nominated_to[preemptor])))
        for preemptor, names in sorted(several.items())
    )


@pytest.mark.timeout(900)
def test_kill_9_of_each_service_all_services_and_the_broker_loses_nothing_and_breaks_no_invariant(
    kafka: KafkaBroker, stack: ServiceStack
) -> None:
    api = Api(stack.server)
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump_all([node(f"n{i:02}", cpu=str(SLOTS_PER_NODE)) for i in range(NODES)]))
    # The low pods fill the cluster; each high pod then has to preempt one.
    lows = Submitter(stack.server, [pod(f"low-{i:03}", "low-priority", "1", grace=1) for i in range(LOW_PODS)])
    lows.start()
    kill_9_as_acks_arrive(stack, lows, [(100, "binder"), (200, "filter"), (300, "queue")])
    lows.join(timeout=300)
    assert lows.error is None, f"submitter failed: {lows.error!r}"
    settle(api, LOW_PODS)

    submitter = Submitter(stack.server, [pod(f"high-{i:03}", "high-priority", "1", grace=1) for i in range(HIGH_PODS)])
    submitter.start()
    kill_9_as_acks_arrive(stack, submitter, [(10, "preemption"), (25, "binder"), (40, "queue")])
    wait_for_acks(submitter, 60)
    for name in SERVICES:  # all at once
        stack.kill9(name)
    stack.start()
    wait_for_acks(submitter, 80)
    kafka.stop()  # a clean broker restart mid-run
    kafka.start(timeout=120)
    supervise(stack)  # the binder exits if a commit fails while the broker is away: start it again
    submitter.join(timeout=300)
    assert submitter.error is None, f"submitter failed: {submitter.error!r}"
    acknowledged = lows.acknowledged + submitter.acknowledged
    assert len(acknowledged) == LOW_PODS + HIGH_PODS

    try:
        settle(api, LOW_PODS)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{explain_several_victims(kafka, stack)}") from None
    log = asyncio.run(read_log(kafka.bootstrap_servers, stack.settings.topic_prefix, timeout=60))
    violations = audit(log, acknowledged)
    assert violations == [], "\n".join(violations[:30])

    final = final_pods(log)
    live = {state.name: state for state in final.values() if not state.deleted}
    reasons = pending_reasons(log)
    unbound = [state for state in live.values() if not state.node_name]
    assert all(reasons.get(state.uid) for state in unbound), "a pending pod without a stated reason"
    assert sum(1 for s in live.values() if s.node_name) == NODES * SLOTS_PER_NODE, "the cluster ends full"
    assert all(live[f"high-{i:03}"].node_name for i in range(HIGH_PODS)), "every high-priority pod is bound"
    assert sum(1 for s in final.values() if s.deleted) == HIGH_PODS, (
        f"one low-priority victim per high pod\n{explain_several_victims(kafka, stack)}"
    )
    print(
        f"submit retries {lows.retries + submitter.retries}; bound {len(live) - len(unbound)}, pending {len(unbound)}, "
        f"preempted {sum(1 for s in final.values() if s.deleted)}; {len(log.changes)} changes, {len(log.events)} events"
    )
    api.close()
