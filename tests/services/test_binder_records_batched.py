"""Failed attempts and pod-group results reach the binder several to a call (RecordFailures,
RecordPodGroupResults; services/podsched_queue/binder_writes.py), and each is still written and
answered exactly as its own RecordFailure or RecordPodGroupResult: all of its writes or none, its
own outcome. Over a real stack: real gRPC, real Kafka."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import yaml

from live_api import Api, node_of, nominated
from manifest_dicts import COMMON, gang_member, node, pod, pod_group
from podsched_devstack.services import ServiceStack, scrape, value
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service.leader_election import QUEUE_ROLE, latest_epoch

BINDER = "podsched.binder.v1.Binder"
ELSEWHERE = "another-scheduler"  # no profile of the stack's: the queue leaves these pods alone
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION.value[0]


def handled(stack: ServiceStack, method: str) -> float:
    samples = scrape(stack.metrics_url("binder"))
    return value(samples, "grpc_server_handled_total", grpc_service=BINDER, grpc_method=method, grpc_code="OK")


def write_all(stack: ServiceStack, documents: list[dict[str, Any]]) -> dict[str, str]:
    """Write the objects straight to the binder; their uids by name."""
    with grpc.insecure_channel(stack.settings.addresses["binder"]) as channel:
        written = binder_pb2_grpc.BinderStub(channel).WriteMany(
            binder_pb2.WriteManyRequest(
                writes=[binder_pb2.WriteRequest(object_json=json.dumps(d).encode()) for d in documents]
            ),
            timeout=30,
        )
    assert all(o.code == 0 for o in written.outcomes), [o.message for o in written.outcomes]
    stored = [json.loads(o.response.object_json)["metadata"] for o in written.outcomes]
    return {metadata["name"]: metadata["uid"] for metadata in stored}


def queue_epoch(stack: ServiceStack) -> int:
    """The queue leader's epoch: a decision sent with an older one is refused as a deposed leader's."""
    return asyncio.run(latest_epoch(stack.settings.bootstrap, stack.settings.topic_prefix, QUEUE_ROLE))


def pod_condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == kind), None)


def test_record_failures_answers_each_failure_as_record_failure_would(stack: ServiceStack) -> None:
    api = Api(stack.server)
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump(node("node-a", cpu="1")))
    elsewhere = {"schedulerName": ELSEWHERE}
    uids = write_all(
        stack,
        [
            pod("victim", "low-priority", "1", node_name="node-a", grace=0),
            pod("preemptor", "high-priority", "1", spec=elsewhere),
            pod("refused", "low-priority", "1", spec=elsewhere),
            pod("plain", "high-priority", "1", spec=elsewhere),
        ],
    )
    epoch = queue_epoch(stack)
    failures = [
        binder_pb2.RecordFailureRequest(
            pod_uid=uids["preemptor"],
            message="0/1 nodes are available: 1 Insufficient cpu.",
            nominated_node_name="node-a",
            victim_uids=[uids["victim"]],
            leader_epoch=epoch,
        ),
        # Its victim has a higher priority than it: refused whole, nothing written for it.
        binder_pb2.RecordFailureRequest(
            pod_uid=uids["refused"],
            message="0/1 nodes are available: 1 Insufficient cpu.",
            nominated_node_name="node-a",
            victim_uids=[uids["plain"]],
            leader_epoch=epoch,
        ),
        binder_pb2.RecordFailureRequest(
            pod_uid=uids["plain"], message="0/1 nodes are available: 1 Insufficient cpu.", leader_epoch=epoch
        ),
    ]
    with grpc.insecure_channel(stack.settings.addresses["binder"]) as channel:
        reply = binder_pb2_grpc.BinderStub(channel).RecordFailures(
            binder_pb2.RecordFailuresRequest(failures=failures), timeout=30
        )
    assert [o.code for o in reply.outcomes] == [0, FAILED_PRECONDITION, 0]
    assert "does not have lower priority than its preemptor default/refused" in reply.outcomes[1].message
    assert not reply.outcomes[1].HasField("response")
    assert all(o.response.resource_version > 0 for o in (reply.outcomes[0], reply.outcomes[2]))

    pods = api.wait(
        lambda: api.pods() if "victim" not in api.pods() and nominated(api.pods()["preemptor"]) else None,
        what="the victim evicted and the preemptor nominated",
    )
    assert nominated(pods["preemptor"]) == "node-a"
    plain = pod_condition(pods["plain"], "PodScheduled")
    assert plain is not None and plain["status"] == "False" and "Insufficient cpu" in plain["message"]
    assert pod_condition(pods["refused"], "PodScheduled") is None and not nominated(pods["refused"])
    reasons = {(e.involved_object.name, e.reason) for e in api.events()}
    assert ("refused", "FailedScheduling") not in reasons
    assert {("preemptor", "FailedScheduling"), ("plain", "FailedScheduling"), ("victim", "Preempted")} <= reasons
    api.close()


def test_the_queue_records_a_preemption_runs_failures_in_record_failures(stack: ServiceStack) -> None:
    api = Api(stack.server)
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump(node("node-a", cpu="2")))
    api.apply_text(yaml.safe_dump_all([pod(f"low-{i}", "low-priority", "1", grace=0) for i in range(2)]))
    api.wait(lambda: all(node_of(p) for p in api.pods().values()) and len(api.pods()) == 2, what="both low pods bound")
    api.apply_text(yaml.safe_dump_all([pod(f"high-{i}", "high-priority", "1") for i in range(2)]))
    api.wait(
        lambda: all(node_of(api.pods().get(f"high-{i}", {})) for i in range(2)),
        what="both preemptors bound",
    )
    assert handled(stack, "RecordFailures") >= 1
    assert handled(stack, "RecordFailure") == 0, "the queue sent a failure on its own"
    api.close()


def test_record_pod_group_results_writes_each_group_whole_and_answers_it_alone(gang_stack: ServiceStack) -> None:
    api = Api(gang_stack.server)
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump_all([node("node-x", cpu="3")]))
    elsewhere = {"schedulerName": ELSEWHERE}
    uids = write_all(
        gang_stack,
        [pod_group("g1", 2), pod_group("g2", 2)]
        + [gang_member(f"{g}-{i}", g, spec=elsewhere) for g in ("g1", "g2") for i in range(2)],
    )

    epoch = queue_epoch(gang_stack)

    def result(group: str, nodes: list[str]) -> binder_pb2.RecordPodGroupResultRequest:
        return binder_pb2.RecordPodGroupResultRequest(
            namespace="default",
            name=group,
            code=0,
            leader_epoch=epoch,
            pods=[
                binder_pb2.PodGroupPodOutcome(pod_uid=uids[f"{group}-{i}"], node_name=node_name)
                for i, node_name in enumerate(nodes)
            ],
        )

    # g1 fits node-x, and so would g2's first pod; g2's second is placed on a node that does not exist:
    # the binder binds none of g2, and g1 all the same.
    with grpc.insecure_channel(gang_stack.settings.addresses["binder"]) as channel:
        reply = binder_pb2_grpc.BinderStub(channel).RecordPodGroupResults(
            binder_pb2.RecordPodGroupResultsRequest(
                results=[result("g1", ["node-x", "node-x"]), result("g2", ["node-x", "node-gone"])]
            ),
            timeout=30,
        )
    assert [o.code for o in reply.outcomes] == [0, 0]
    first, second = (o.response for o in reply.outcomes)
    assert sorted(first.bound_pod_uids) == sorted([uids["g1-0"], uids["g1-1"]]) and not first.bind_error
    assert list(second.bound_pod_uids) == [] and 'node "node-gone" not found' in second.bind_error
    pods = api.wait(
        lambda: api.pods() if all(node_of(api.pods().get(f"g1-{i}", {})) for i in range(2)) else None,
        what="g1 bound",
    )
    assert {node_of(pods[f"g1-{i}"]) for i in range(2)} == {"node-x"}
    assert not node_of(pods["g2-0"]) and not node_of(pods["g2-1"])
    api.close()


def test_the_queue_records_a_batch_of_gangs_in_record_pod_group_results(gang_stack: ServiceStack) -> None:
    api = Api(gang_stack.server)
    api.apply_text(COMMON.read_text())
    api.apply_text(yaml.safe_dump_all([node(f"node-{i}", cpu="4") for i in range(2)]))
    names = [f"g{i}" for i in range(4)]
    api.apply_text(
        yaml.safe_dump_all(
            [pod_group(g, 2) for g in names] + [gang_member(f"{g}-{i}", g) for g in names for i in range(2)]
        )
    )
    api.wait(
        lambda: len(api.pods()) == 8 and all(node_of(p) for p in api.pods().values()),
        what="every gang bound",
    )
    assert handled(gang_stack, "RecordPodGroupResults") >= 1
    assert handled(gang_stack, "RecordPodGroupResult") == 0, "the queue sent a group's result on its own"
    api.close()
