"""FindNodes places the pods of one request in order, each with the earlier ones assumed on their
nodes (services/podsched_filter/service.py). Asked over real gRPC with the queue stopped, so the
request is the only thing that places them."""

from __future__ import annotations

import json
from typing import Any

import grpc
import yaml

from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_devstack.services import ServiceStack
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc


def keeps_b_pods_away(name: str) -> dict[str, Any]:
    """A 1-CPU pod no pod labelled app=b may share a node with."""
    anti_affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "b"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    return pod(name, "low-priority", "1", spec={"affinity": anti_affinity})


def test_a_pod_assumed_earlier_in_the_request_keeps_a_later_pod_off_its_node_by_anti_affinity(
    stack: ServiceStack, api: Api
) -> None:
    api.apply_text(COMMON.read_text())
    api.apply_text(
        yaml.safe_dump_all([node("node-x"), node("node-y"), pod("filler", "low-priority", "3500m", node_name="node-y")])
    )
    api.wait(lambda: "filler" in api.pods(), what="the filler pod")
    stack.stop_one("queue")
    with grpc.insecure_channel(stack.settings.addresses["binder"]) as channel:
        written = binder_pb2_grpc.BinderStub(channel).WriteMany(
            binder_pb2.WriteManyRequest(
                writes=[
                    binder_pb2.WriteRequest(object_json=json.dumps(p).encode())
                    for p in (keeps_b_pods_away("a"), pod("b", "low-priority", "1", labels={"app": "b"}))
                ]
            ),
            timeout=30,
        )
    uids = [json.loads(o.response.object_json)["metadata"]["uid"] for o in written.outcomes]
    with grpc.insecure_channel(stack.settings.addresses["filter"]) as channel:
        found = filter_pb2_grpc.FilterStub(channel).FindNodes(
            filter_pb2.FindNodesRequest(
                pods=[filter_pb2.PodToPlace(uid=uid) for uid in uids],
                min_resource_version=max(o.response.resource_version for o in written.outcomes),
            ),
            timeout=30,
        )
    first, second = found.placements
    assert first.node_name == "node-x", "node-y has 500m left"
    # node-y is too full, and on node-x the pod assumed just before it forbids it.
    assert not second.node_name, f"b was placed on {second.node_name} beside a"
    assert "anti-affinity" in second.message, second.message


def test_a_pod_whose_bind_is_under_way_is_assumed_on_its_node_once(stack: ServiceStack, api: Api) -> None:
    """FindNodesRequest.assumed_binds: a placed pod whose Bind is not yet acknowledged takes its room
    for the request; a pod the log already has bound is not counted twice."""
    api.apply_text(COMMON.read_text())
    api.apply_text(
        yaml.safe_dump_all([node("node-x"), node("node-y"), pod("bound", "low-priority", "1", node_name="node-y")])
    )
    bound_uid = api.wait(lambda: api.pods().get("bound", {}).get("metadata", {}).get("uid"), what="the bound pod")
    stack.stop_one("queue")
    with grpc.insecure_channel(stack.settings.addresses["binder"]) as channel:
        written = binder_pb2_grpc.BinderStub(channel).WriteMany(
            binder_pb2.WriteManyRequest(
                writes=[
                    binder_pb2.WriteRequest(object_json=json.dumps(pod(name, "low-priority", cpu)).encode())
                    for name, cpu in (("binding", "3"), ("next", "3500m"))
                ]
            ),
            timeout=30,
        )
    binding, following = (json.loads(o.response.object_json)["metadata"]["uid"] for o in written.outcomes)
    version = max(o.response.resource_version for o in written.outcomes)

    def place(assumed: list[tuple[str, str]]) -> filter_pb2.Placement:
        with grpc.insecure_channel(stack.settings.addresses["filter"]) as channel:
            found = filter_pb2_grpc.FilterStub(channel).FindNodes(
                filter_pb2.FindNodesRequest(
                    pods=[filter_pb2.PodToPlace(uid=following)],
                    min_resource_version=version,
                    assumed_binds=[filter_pb2.AssumedBind(pod_uid=u, node_name=n) for u, n in assumed],
                    dry_run=True,
                ),
                timeout=30,
            )
        return found.placements[0]

    assert place([]).node_name == "node-x", "node-y has 3 CPU left, node-x all 4"
    # With 3 CPU assumed on node-x, neither node has 3500m.
    assert not place([(binding, "node-x")]).node_name
    # The bound pod is on node-y already: assuming it there again (or elsewhere) changes nothing.
    assert place([(bound_uid, "node-x")]).node_name == "node-x"
    # And the assumption lasted only for its request.
    assert place([]).node_name == "node-x"
