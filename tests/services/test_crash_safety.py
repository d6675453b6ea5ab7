"""Crash safety (DESIGN §2): 500 pods are being scheduled (with preemptions) while each service in
turn is killed with SIGKILL and restarted, then all of them at once, then the Kafka broker is
restarted. Afterwards an auditor replays the whole Kafka log (tests/audit.py) and checks: no
acknowledged write lost, resource versions strictly increasing (nothing applied twice), no pod
bound twice, no node ever overcommitted (terminating pods included), every victim of lower
priority than its preemptor, an event stream without gaps, and every pod bound or pending for a
stated reason."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import grpc
import pytest
import yaml

from audit import audit, final_pods, pending_reasons, read_log, timeline
from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import SERVICES, ServiceStack

NODES = 40
SLOTS_PER_NODE = 10  # 1-CPU pods on 10-CPU nodes: 400 slots
LOW_PODS = 400
HIGH_PODS = 100  # each needs a low pod preempted


class Submitter(threading.Thread):
    """Applies pods one by one, retrying while the public API is down, and records every write
    the API acknowledged."""

    def __init__(self, server: str, manifests: list[dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.manifests = manifests
        self.acknowledged: list[tuple[str, str, str]] = []
        self.retries = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        api = Api(self.server)
        try:
            for manifest in self.manifests:
                deadline = time.monotonic() + 120
                while True:
                    try:
                        api.apply_text(yaml.safe_dump(manifest))
                        break
                    except grpc.RpcError as error:
                        if error.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                            raise
                        if time.monotonic() > deadline:
                            raise
                        self.retries += 1
                        time.sleep(0.2)
                self.acknowledged.append(("Pod", "default", manifest["metadata"]["name"]))
        except BaseException as error:
            self.error = error
        finally:
            api.close()


def supervise(stack: ServiceStack) -> None:
    """What a process supervisor does: start any service that is not running."""
    for name in SERVICES:
        process = stack.processes.get(name)
        if process is None or process.poll() is not None:
            stack.processes.pop(name, None)
            stack.start_one(name, wait=True)


def wait_for_acks(submitter: Submitter, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(submitter.acknowledged) < count and submitter.is_alive():
        assert time.monotonic() < deadline, f"only {len(submitter.acknowledged)} of {count} pods acknowledged"
        time.sleep(0.05)


def kill_9_as_acks_arrive(stack: ServiceStack, submitter: Submitter, schedule: list[tuple[int, str]]) -> None:
    """For each (acks, service) in order: once the submitter has that many acknowledged writes, kill -9 the
    service and start it again, while the submitter goes on."""
    for acks, name in schedule:
        wait_for_acks(submitter, acks)
        stack.kill9(name)
        time.sleep(0.3)
        stack.start_one(name, wait=True)


def settle(api: Api, expected_pods: int, timeout: float = 300, quiet: float = 3.0) -> None:
    """Until nothing has changed for `quiet` seconds: no pod terminating, every pod bound or marked
    unschedulable, and the same placements at every look."""
    deadline = time.monotonic() + timeout
    last: Any = None
    since = time.monotonic()
    while time.monotonic() < deadline:
        pods = api.pods()
        view = sorted(
            (name, p["spec"].get("nodeName", ""), p["status"].get("nominatedNodeName", "")) for name, p in pods.items()
        )
        busy = len(pods) < expected_pods or any(
            p["metadata"].get("deletionTimestamp")
            or (
                not p["spec"].get("nodeName")
                and not any(
                    c["type"] == "PodScheduled" and c["status"] == "False" for c in p["status"].get("conditions", [])
                )
            )
            for p in pods.values()
        )
        if busy or view != last:
            last, since = view, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.2)
    pending = [
        name
        for name, p in api.pods().items()
        if p["metadata"].get("deletionTimestamp") or not p["spec"].get("nodeName")
    ]
    victims_by_preemptor: dict[str, list[str]] = {}
    for event in api.events():
        if event.reason == "Preempted":
            victims_by_preemptor.setdefault(event.related.name, []).append(event.involved_object.name)
    several = {name: victims for name, victims in victims_by_preemptor.items() if len(victims) > 1}
    raise AssertionError(
        f"the cluster did not settle in {timeout}s: {len(api.pods())} pods (expected {expected_pods}), "
        f"not settled: {sorted(pending)[:20]}, preemptors with several victims: {several}"
    )


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
