"""A thin gRPC client of the public API for end-to-end assertions (the CLI is tested separately)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import grpc

from podsched.api.documents import load_documents
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc


class Api:
    """A thin gRPC client for assertions (the CLI is exercised separately)."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = api_pb2_grpc.PodSchedStub(self.channel)

    def apply_text(self, text: str, dry_run: bool = False) -> list[api_pb2.ApplyResponse]:
        return [
            self.stub.Apply(api_pb2.ApplyRequest(object_json=json.dumps(doc).encode(), dry_run=dry_run), timeout=30)
            for doc in load_documents(text, "test")
        ]

    def apply(self, *objects: Any, dry_run: bool = False) -> list[api_pb2.ApplyResponse]:
        from podsched.api.manifests import encode_object

        return [
            self.stub.Apply(
                api_pb2.ApplyRequest(object_json=json.dumps(encode_object(obj)).encode(), dry_run=dry_run), timeout=30
            )
            for obj in objects
        ]

    def pods(self, namespace: str = "default") -> dict[str, dict[str, Any]]:
        reply = self.stub.Get(api_pb2.GetRequest(resource="pods", namespace=namespace), timeout=30)
        return {pod["metadata"]["name"]: pod for pod in map(json.loads, reply.objects_json)}

    def events(self) -> list[Any]:
        return list(self.stub.ListEvents(api_pb2.ListEventsRequest(all_namespaces=True), timeout=30).events)

    def wait(self, condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.1)

    def close(self) -> None:
        self.channel.close()


def node_of(pod: dict[str, Any]) -> str:
    return str(pod.get("spec", {}).get("nodeName", ""))


def nominated(pod: dict[str, Any]) -> str:
    return str(pod.get("status", {}).get("nominatedNodeName", ""))
