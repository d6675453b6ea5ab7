"""Every service: gRPC health and reflection; SIGTERM stops it cleanly (exit 0) and a restart
rebuilds the same state from Kafka."""

from __future__ import annotations

import grpc
import yaml
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_devstack.services import SERVICES, ServiceStack
from podsched_service.healthcheck import check

EXPECTED_SERVICE = {
    "queue": "podsched.api.v1.PodSched",
    "filter": "podsched.filter.v1.Filter",
    "preemption": "podsched.preemption.v1.Preemption",
    "binder": "podsched.binder.v1.Binder",
}


def listed_services(address: str) -> set[str]:
    with grpc.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        return {service.name for reply in replies for service in reply.list_services_response.service}


def test_health_reflection_graceful_stop_and_rebuild(stack: ServiceStack, api: Api) -> None:
    api.apply_text(COMMON.read_text())
    objects = [node("n1", cpu="4"), pod("a", "low-priority", "1"), pod("b", "mid-priority", "2")]
    api.apply_text(yaml.safe_dump_all(objects))
    api.wait(lambda: all(p["spec"].get("nodeName") for p in api.pods().values()), what="both bound")
    before = api.pods()
    for name in SERVICES:
        address = stack.settings.addresses[name]
        assert check(address, ""), f"{name} is not SERVING"
        assert check(address, EXPECTED_SERVICE[name]), f"{name} does not report its own service as SERVING"
        assert {EXPECTED_SERVICE[name], "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= (
            listed_services(address)
        )
    for name in SERVICES:
        assert stack.stop_one(name) == 0, f"{name} did not exit cleanly on SIGTERM:\n{stack.tail(name)}"
        assert not check(stack.settings.addresses[name], timeout=0.5)
        stack.start_one(name)
    api.close()
    fresh = Api(stack.server)
    assert fresh.pods() == before, "state rebuilt from Kafka after restarts"
    fresh.close()
