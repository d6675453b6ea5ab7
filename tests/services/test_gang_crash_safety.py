"""Gangs through crashes (GenericWorkload): twelve gangs of four 1-CPU pods (minCount 4) are submitted
to ten 4-CPU nodes (room for ten gangs) while the binder, the queue and the preemption service are
each killed with SIGKILL and restarted. Afterwards the committed Kafka log shows that every gang is
bound whole or not at all, and that each gang's binds were written together: consecutive records of
one transaction (consecutive offsets, no commit marker between them), so no crash could have left
part of a gang bound. The general invariants (tests/audit.py) hold too."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from audit import audit, final_pods, read_log
from crash_load import Submitter, settle, supervise, wait_for_acks
from live_api import Api
from manifest_dicts import COMMON, gang_member, node, pod_group
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack
from podsched_proto.events.v1.events_pb2 import ObjectChange

NODES = 10
CPUS_PER_NODE = 4
GANGS = 12
GANG_SIZE = 4


def gang_binds(changes: list[ObjectChange], offsets: list[int]) -> dict[str, list[tuple[int, int]]]:
    """Per gang, (index in the log, offset) of each record that first bound one of its pods."""
    bound: set[str] = set()
    binds: dict[str, list[tuple[int, int]]] = {}
    for index, change in enumerate(changes):
        if change.object.kind != "Pod" or not change.node_name or change.object.uid in bound:
            continue
        bound.add(change.object.uid)
        spec = json.loads(change.object_json).get("spec", {})
        gang = (spec.get("schedulingGroup") or {}).get("podGroupName")
        if gang:
            binds.setdefault(gang, []).append((index, offsets[index]))
    return binds


@pytest.mark.timeout(900)
def test_kill_9_while_gangs_bind_never_leaves_part_of_a_gang_bound(
    kafka: KafkaBroker, gang_stack: ServiceStack
) -> None:
    stack = gang_stack
    api = Api(stack.server)
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump_all([node(f"n{i:02}", cpu=str(CPUS_PER_NODE)) for i in range(NODES)]))
    gangs = [f"gang-{g:02}" for g in range(GANGS)]
    api.apply_text(yaml.safe_dump_all([pod_group(name, GANG_SIZE) for name in gangs]))
    submitter = Submitter(
        stack.server, [gang_member(f"{name}-{i}", name, grace=0) for name in gangs for i in range(GANG_SIZE)]
    )
    submitter.start()
    for acks, name in [(9, "binder"), (18, "queue"), (27, "preemption"), (36, "binder")]:
        wait_for_acks(submitter, acks)
        stack.kill9(name)
        stack.start_one(name, wait=True)
    submitter.join(timeout=300)
    supervise(stack)
    assert submitter.error is None, f"submitter failed: {submitter.error!r}"
    assert len(submitter.acknowledged) == GANGS * GANG_SIZE
    settle(api, GANGS * GANG_SIZE)

    log = asyncio.run(read_log(kafka.bootstrap_servers, stack.settings.topic_prefix, timeout=60))
    violations = audit(log, submitter.acknowledged)
    assert violations == [], "\n".join(violations[:30])

    final = {state.name: state for state in final_pods(log).values() if not state.deleted}
    bound_per_gang = {name: sum(1 for i in range(GANG_SIZE) if final[f"{name}-{i}"].node_name) for name in gangs}
    assert set(bound_per_gang.values()) <= {0, GANG_SIZE}, f"a gang partly bound: {bound_per_gang}"
    assert sum(1 for n in bound_per_gang.values() if n) == NODES * CPUS_PER_NODE // GANG_SIZE, bound_per_gang

    # Each bound gang's binds: one run of consecutive records at consecutive offsets (one transaction).
    binds = gang_binds(log.changes, log.change_offsets)
    for name, count in bound_per_gang.items():
        records = binds.get(name, [])
        assert len(records) == count, f"{name}: {len(records)} bind records for {count} bound pods"
        if records:
            indexes = [index for index, _ in records]
            offsets = [offset for _, offset in records]
            assert indexes == list(range(indexes[0], indexes[0] + count)), f"{name}'s binds are not together"
            assert offsets == list(range(offsets[0], offsets[0] + count)), f"{name}'s binds span a commit"
    api.close()
