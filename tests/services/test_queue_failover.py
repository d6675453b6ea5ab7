"""Failover. Two queue replicas: both serve the public API, the one elected over Kafka schedules.
Killing the leader with SIGKILL under load hands the scheduling loop to the standby within 15 s, every
pod gets scheduled, nothing is bound twice (tests/audit.py), and the binder refuses the deposed
leader's epoch. Two binders: the elected one writes, the standby waits with its port closed; killing
the writing binder under load hands the log to the standby (fenced by the transactional id) within
15 s, with the same outcome."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from conftest import new_settings

from audit import audit, final_pods, read_log
from crash_load import Submitter, settle, wait_for_acks
from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service.leader_election import BINDER_ROLE, QUEUE_ROLE, EpochFence, current_leader
from stacks import running

NODES = 10
SLOTS_PER_NODE = 10
LOW_PODS = 100
HIGH_PODS = 20  # each needs a low pod preempted
FAILOVER_LIMIT = 15.0  # seconds from the kill until the standby leads


@pytest.fixture
def two_queues(kafka: KafkaBroker, tmp_path: Path) -> Iterator[ServiceStack]:
    yield from running(new_settings(kafka, tmp_path / "services", queue_replicas=2))


@pytest.fixture
def two_binders(kafka: KafkaBroker, tmp_path: Path) -> Iterator[ServiceStack]:
    yield from running(new_settings(kafka, tmp_path / "services", binder_replicas=2))


def leader(stack: ServiceStack, role: str = QUEUE_ROLE) -> tuple[str, int]:
    found = asyncio.run(current_leader(stack.settings.bootstrap, stack.settings.topic_prefix, role))
    assert found is not None, f"no {role} replica leads"
    return found


def wait_for_leader(
    stack: ServiceStack, other_than: str, timeout: float, role: str = QUEUE_ROLE
) -> tuple[str, int, float]:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        name, epoch = leader(stack, role)
        if name != other_than:
            return name, epoch, time.monotonic() - began
        time.sleep(0.2)
    raise AssertionError(f"{other_than} still leads {timeout}s after it was killed")


def fill_with_low_pods(api: Api, server: str) -> list[tuple[str, str, str]]:
    """The nodes, full of low-priority pods (each high pod then has to preempt one)."""
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump_all([node(f"n{i:02}", cpu=str(SLOTS_PER_NODE)) for i in range(NODES)]))
    lows = Submitter(server, [pod(f"low-{i:03}", "low-priority", "1", grace=1) for i in range(LOW_PODS)])
    lows.start()
    lows.join(timeout=300)
    assert lows.error is None, f"submitter failed: {lows.error!r}"
    settle(api, LOW_PODS)
    return lows.acknowledged


def audit_all_bound(stack: ServiceStack, acknowledged: list[tuple[str, str, str]]) -> None:
    log = asyncio.run(read_log(stack.settings.bootstrap, stack.settings.topic_prefix, timeout=60))
    violations = audit(log, acknowledged)
    assert violations == [], "\n".join(violations[:30])
    live = {state.name: state for state in final_pods(log).values() if not state.deleted}
    assert all(live[f"high-{i:03}"].node_name for i in range(HIGH_PODS)), "every high-priority pod is bound"


def test_a_deposed_leader_is_fenced_from_its_successors_epoch_on() -> None:
    fence = EpochFence(floor=3)
    assert fence.admit(2) is not None and "deposed" in (fence.admit(2) or "")
    assert fence.admit(3) is None
    assert fence.admit(5) is None
    assert fence.admit(4) == (
        "leader epoch 4 is older than 5: this scheduler was deposed and another leads (it must stop scheduling)"
    )
    assert fence.admit(0) is not None, "a scheduler outside the election cannot write beside a leader"


@pytest.mark.timeout(600)
def test_kill_9_of_the_scheduling_leader_hands_over_to_the_standby(two_queues: ServiceStack) -> None:
    stack = two_queues
    first, first_epoch = leader(stack)
    standby = "queue-2" if first == "queue" else "queue"
    api = Api(stack.settings.addresses[standby])  # both serve the API: use the one that stays
    acknowledged = fill_with_low_pods(api, stack.settings.addresses[standby])

    highs = Submitter(
        stack.settings.addresses[standby],
        [pod(f"high-{i:03}", "high-priority", "1", grace=1) for i in range(HIGH_PODS)],
    )
    highs.start()
    wait_for_acks(highs, 5)
    stack.kill9(first)
    second, second_epoch, took = wait_for_leader(stack, first, FAILOVER_LIMIT)
    assert second == standby and second_epoch > first_epoch
    highs.join(timeout=300)
    assert highs.error is None, f"submitter failed: {highs.error!r}"
    settle(api, LOW_PODS)

    # The deposed leader's epoch is refused by the binder, whatever it might still send.
    with grpc.insecure_channel(stack.settings.addresses["binder"]) as channel:
        binder = binder_pb2_grpc.BinderStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            binder.Bind(
                binder_pb2.BindRequest(
                    bindings=[binder_pb2.Binding(pod_uid="any", node_name="n00")], leader_epoch=first_epoch
                ),
                timeout=10,
            )
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"leader epoch {first_epoch} is older than {second_epoch}" in str(refused.value.details())

    audit_all_bound(stack, acknowledged + highs.acknowledged)
    print(f"{first} (epoch {first_epoch}) killed; {second} leads (epoch {second_epoch}) after {took:.1f} s")
    api.close()


@pytest.mark.timeout(600)
def test_kill_9_of_the_writing_binder_hands_the_log_to_the_standby(two_binders: ServiceStack) -> None:
    stack = two_binders
    first, first_epoch = leader(stack, BINDER_ROLE)
    assert first == "binder", "the first binder leads: the standby started after it served"
    api = Api(stack.server)
    acknowledged = fill_with_low_pods(api, stack.server)
    highs = Submitter(stack.server, [pod(f"high-{i:03}", "high-priority", "1", grace=1) for i in range(HIGH_PODS)])
    highs.start()
    wait_for_acks(highs, 5)
    stack.kill9("binder")
    second, second_epoch, took = wait_for_leader(stack, first, FAILOVER_LIMIT, BINDER_ROLE)
    assert second == "binder-2" and second_epoch > first_epoch
    highs.join(timeout=300)
    assert highs.error is None, f"submitter failed: {highs.error!r}"
    settle(api, LOW_PODS)
    audit_all_bound(stack, acknowledged + highs.acknowledged)
    print(f"binder (epoch {first_epoch}) killed; binder-2 writes (epoch {second_epoch}) after {took:.1f} s")
    api.close()
