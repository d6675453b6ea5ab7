"""The dashboard on a large cluster: `python -m benchmarks.dashboard_scale [--nodes 5000 --pods 30000]`.

Starts a Kafka broker and the four services on free ports, applies the nodes and the pods (most of them
created already placed with spec.nodeName, the rest pending: too big for any node, non-preempting, so
they wait with a FailedScheduling reason), then starts the dashboard and measures what a browser would
see: how long until the dashboard has the cluster (its first Watch), its memory, and the time and size of
each answer the page asks for. Prints one JSON line."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import grpc

from podsched_devstack.dashboard import DashboardProcess
from podsched_devstack.kafka import KafkaBroker, ensure_kafka_installed
from podsched_devstack.process import free_ports, rss_bytes
from podsched_devstack.services import ServiceStack, StackSettings
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc

BATCH = 500
PRIORITIES = (("low", 100), ("mid", 1000), ("high", 1_000_000))
WAITING_CLASS = "waiting"


def node(index: int) -> dict[str, Any]:
    name = f"node-{index:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": f"z{index % 3}"}},
        "status": {"capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
    }


def pod(index: int, nodes: int, pending: bool) -> dict[str, Any]:
    klass, _ = PRIORITIES[index % len(PRIORITIES)]
    spec: dict[str, Any] = {
        "priorityClassName": klass,
        "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    }
    if pending:
        spec["containers"][0]["resources"]["requests"]["cpu"] = "64"  # fits no node
        spec["priorityClassName"] = WAITING_CLASS  # non-preempting: no PostFilter for it
    else:
        spec["nodeName"] = f"node-{index % nodes:05d}"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{index:06d}"}, "spec": spec}


async def apply_all(server: str, documents: list[dict[str, Any]]) -> None:
    async with grpc.aio.insecure_channel(server) as channel:
        stub = api_pb2_grpc.PodSchedStub(channel)
        chunks = [documents[i : i + BATCH] for i in range(0, len(documents), BATCH)]

        async def send(chunk: list[dict[str, Any]]) -> None:
            requests = [api_pb2.ApplyRequest(object_json=json.dumps(d).encode()) for d in chunk]
            reply = await stub.ApplyBatch(api_pb2.ApplyBatchRequest(requests=requests), timeout=300)
            refused = [r.message for r in reply.results if r.code]
            if refused:
                raise RuntimeError(f"{len(refused)} refused, e.g. {refused[0]}")

        for start in range(0, len(chunks), 4):
            await asyncio.gather(*(send(chunk) for chunk in chunks[start : start + 4]))


def timed_get(url: str) -> dict[str, Any]:
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read()
    return {"ms": round((time.perf_counter() - began) * 1000, 1), "kib": round(len(body) / 1024, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=30000)
    parser.add_argument("--pending", type=int, default=5000, help="of the pods, how many wait")
    args = parser.parse_args()
    ensure_kafka_installed()
    with tempfile.TemporaryDirectory(prefix="podsched-dashboard-scale-") as tmp:
        broker = KafkaBroker(Path(tmp) / "kafka")
        broker.start(timeout=120)
        settings = StackSettings.on_free_ports(
            broker.bootstrap_servers, Path(tmp) / "run", topic_prefix=f"d{uuid.uuid4().hex[:8]}.", workers=1
        )
        stack = ServiceStack(settings)
        dashboard = DashboardProcess(Path(tmp) / "run", "", listen_address=f"127.0.0.1:{free_ports(1)[0]}")
        try:
            stack.start()
            classes = [
                {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
                for n, v in PRIORITIES
            ]
            classes.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": WAITING_CLASS},
                    "value": 50,
                    "preemptionPolicy": "Never",
                }
            )
            began = time.monotonic()
            asyncio.run(apply_all(stack.server, classes))
            asyncio.run(apply_all(stack.server, [node(i) for i in range(args.nodes)]))
            placed = args.pods - args.pending
            pods = [pod(i, args.nodes, pending=i >= placed) for i in range(args.pods)]
            asyncio.run(apply_all(stack.server, pods))
            applied = time.monotonic() - began
            print(f"applied {len(pods)} pods and {args.nodes} nodes in {applied:.1f} s", file=sys.stderr, flush=True)
            dashboard.server = stack.server
            began = time.monotonic()
            dashboard.start(timeout=600)
            synced = time.monotonic() - began
            url = dashboard.url
            answers = {
                "summary": timed_get(f"{url}/api/summary"),
                "nodes page 1": timed_get(f"{url}/api/nodes"),
                "nodes page 40": timed_get(f"{url}/api/nodes?page=40"),
                "nodes search zone=z1": timed_get(f"{url}/api/nodes?q=zone%3Dz1"),
                "nodes filter full": timed_get(f"{url}/api/nodes?filter=full"),
                "queue page 1": timed_get(f"{url}/api/queue"),
                "queue search": timed_get(f"{url}/api/queue?q=p-02"),
                "preemptions": timed_get(f"{url}/api/preemptions"),
                "page": timed_get(f"{url}/"),
            }
            assert dashboard.process is not None
            result = {
                "nodes": args.nodes,
                "pods": args.pods,
                "pending": args.pending,
                "apply_seconds": round(applied, 1),
                "dashboard_sync_seconds": round(synced, 1),
                "dashboard_rss_mib": round((rss_bytes(dashboard.process.pid) or 0) / 2**20),
                "answers": answers,
            }
            print(json.dumps(result), flush=True)
        finally:
            dashboard.stop()
            stack.stop()
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
