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
