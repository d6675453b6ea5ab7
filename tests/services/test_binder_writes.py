"""Concurrent Apply calls reach the binder as one WriteMany (services/podsched_queue/binder_writes.py),
and each caller still gets exactly its own Write's answer."""

from __future__ import annotations

import json

import grpc

from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_devstack.services import ServiceStack, scrape, value
from podsched_proto.api.v1 import api_pb2
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc

BINDER = "podsched.binder.v1.Binder"


def write_calls(stack: ServiceStack) -> tuple[float, float]:
    samples = scrape(stack.metrics_url("binder"))

    def count(method: str) -> float:
        return value(samples, "grpc_server_handled_total", grpc_service=BINDER, grpc_method=method, grpc_code="OK")

    return count("Write"), count("WriteMany")


def test_an_apply_batch_of_forty_pods_is_one_write_many(stack: ServiceStack) -> None:
    api = Api(stack.server)
    api.apply_text(COMMON.read_text())
    api.stub.Apply(api_pb2.ApplyRequest(object_json=json.dumps(node("n1", cpu="64")).encode()), timeout=30)
    writes_before, many_before = write_calls(stack)
    requests = [
        api_pb2.ApplyRequest(object_json=json.dumps(pod(f"w-{i}", "low-priority", "100m")).encode()) for i in range(40)
    ]
    reply = api.stub.ApplyBatch(api_pb2.ApplyBatchRequest(requests=requests), timeout=60)
    assert [(r.code, r.response.action) for r in reply.results] == [(0, "created")] * 40
    uids = {json.loads(r.response.object_json)["metadata"]["uid"] for r in reply.results}
    assert len(uids) == 40, "each caller got its own object back"
    writes_after, many_after = write_calls(stack)
    assert writes_after == writes_before, "no single Write: the forty went together"
    assert many_after - many_before == 1, f"{many_after - many_before} WriteMany calls for one batch of forty"
    assert set(api.pods()) >= {f"w-{i}" for i in range(40)}
    api.close()


def test_write_many_answers_each_write_as_write_would(stack: ServiceStack) -> None:
    api = Api(stack.server)
    api.apply_text(COMMON.read_text())
    channel = grpc.insecure_channel(stack.settings.addresses["binder"])
    binder = binder_pb2_grpc.BinderStub(channel)
    good = json.dumps(pod("wm-good", "low-priority", "100m")).encode()
    invalid = json.dumps(pod("wm-bad", "low-priority", "-1")).encode()
    reply = binder.WriteMany(
        binder_pb2.WriteManyRequest(writes=[binder_pb2.WriteRequest(object_json=b) for b in (good, b"{", invalid)]),
        timeout=30,
    )
    codes = [o.code for o in reply.outcomes]
    assert codes == [0, grpc.StatusCode.INVALID_ARGUMENT.value[0], grpc.StatusCode.INVALID_ARGUMENT.value[0]]
    assert reply.outcomes[0].response.action == "created" and reply.outcomes[0].response.resource_version > 0
    assert reply.outcomes[1].message.startswith("error: invalid JSON")
    assert 'Pod "wm-bad" is invalid' in reply.outcomes[2].message
    # Written behind the queue's back: its replica gets there through the log.
    pods = api.wait(lambda: api.pods() if "wm-good" in api.pods() else None, what="wm-good in the queue's copy")
    assert "wm-bad" not in pods
    channel.close()
    api.close()
