"""SchedulePodGroups decides the pod groups of one request in order, each with the caller's binds in
flight (assumed_binds) and the pods of the groups scheduled before it assumed on their nodes, and
stops after the first group that is not scheduled (services/podsched_preemption/service.py). Asked
over real gRPC with the queue stopped, so the request is the only thing that places them."""

from __future__ import annotations

import json

import grpc
import yaml

from live_api import Api
from manifest_dicts import COMMON, gang_member, node, pod_group
from podsched_devstack.services import ServiceStack
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc

SUCCESS, UNSCHEDULABLE = 0, 2


def test_each_group_of_a_request_sees_the_binds_in_flight_and_the_groups_before_it_and_a_rejected_one_ends_it(
    gang_stack: ServiceStack,
) -> None:
    api = Api(gang_stack.server)
    api.apply_text(COMMON.read_text())
    # Two 2-CPU nodes: room for two gangs of two 1-CPU pods, not three.
    api.apply_text(yaml.safe_dump_all([node("node-x", cpu="2"), node("node-y", cpu="2")]))
    api.close()
    gang_stack.stop_one("queue")
    names = ["g1", "g2", "g3", "g4"]
    documents = [pod_group(g, 2) for g in names] + [gang_member(f"{g}-{i}", g) for g in names for i in range(2)]
    with grpc.insecure_channel(gang_stack.settings.addresses["binder"]) as channel:
        written = binder_pb2_grpc.BinderStub(channel).WriteMany(
            binder_pb2.WriteManyRequest(
                writes=[binder_pb2.WriteRequest(object_json=json.dumps(d).encode()) for d in documents]
            ),
            timeout=30,
        )
    assert all(o.code == 0 for o in written.outcomes), [o.message for o in written.outcomes]
    uids = {
        json.loads(o.response.object_json)["metadata"]["name"]: json.loads(o.response.object_json)["metadata"]["uid"]
        for o in written.outcomes
    }
    version = max(o.response.resource_version for o in written.outcomes)
    request = preemption_pb2.SchedulePodGroupsRequest(
        groups=[
            preemption_pb2.PodGroupToSchedule(
                namespace="default",
                name=g,
                pods=[filter_pb2.PodToPlace(uid=uids[f"{g}-{i}"]) for i in range(2)],
            )
            for g in names
        ],
        min_resource_version=version,
    )
    with grpc.insecure_channel(gang_stack.settings.addresses["preemption"]) as channel:
        answer = preemption_pb2_grpc.PreemptionStub(channel).SchedulePodGroups(request, timeout=30)
        again = preemption_pb2_grpc.PreemptionStub(channel).SchedulePodGroups(request, timeout=30)

    # g1 and g2 fill both nodes between them; g3 finds no room left, and g4 is not decided.
    assert [d.code for d in answer.decided] == [SUCCESS, SUCCESS, UNSCHEDULABLE]
    placed: dict[str, int] = {}
    for decided in answer.decided[:2]:
        for outcome in decided.pods:
            placed[outcome.node_name] = placed.get(outcome.node_name, 0) + 1
    assert placed == {"node-x": 2, "node-y": 2}, "a group was placed where an earlier one already was"
    messages = [outcome.message for outcome in answer.decided[2].pods]
    assert "2 Insufficient cpu" in messages[0], messages
    # The assumptions lasted only for the request: nothing was written, the same request decides the same.
    assert again.decided == answer.decided

    # g3 alone fits; with g1's and g2's placements as binds in flight (the queue's next batch while
    # their writes are committed) it does not, as if they were in the log.
    alone = preemption_pb2.SchedulePodGroupsRequest(groups=[request.groups[2]], min_resource_version=version)
    in_flight = [
        filter_pb2.AssumedBind(pod_uid=outcome.pod_uid, node_name=outcome.node_name)
        for decided in answer.decided[:2]
        for outcome in decided.pods
    ]
    after = preemption_pb2.SchedulePodGroupsRequest(
        groups=[request.groups[2]], min_resource_version=version, assumed_binds=in_flight
    )
    with grpc.insecure_channel(gang_stack.settings.addresses["preemption"]) as channel:
        stub = preemption_pb2_grpc.PreemptionStub(channel)
        (on_its_own,) = stub.SchedulePodGroups(alone, timeout=30).decided
        (behind_the_binds,) = stub.SchedulePodGroups(after, timeout=30).decided
    assert on_its_own.code == SUCCESS
    assert behind_the_binds.code == UNSCHEDULABLE
    assert "2 Insufficient cpu" in behind_the_binds.pods[0].message, behind_the_binds.pods[0].message
