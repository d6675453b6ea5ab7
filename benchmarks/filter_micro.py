"""What the filter service spends per SchedulingBasic pod, in microseconds of CPU, step by step.

    python -m benchmarks.filter_micro [--nodes N] [--pods P] [--batch B] [--rounds R]

A `FilterServicer` (not started: no broker, no gRPC server) holds `--nodes` scheduler_perf nodes
and 1000 bound pods, then serves `--pods` pod-default pods in FindNodes requests of `--batch`, in the
order the queue drives it in SchedulingBasic:

  created     the binder's created records of the next batch, applied as the replica applies a
              record (`Replica._apply`: ObjectChange parsed, `decode_change_message`,
              `Cluster.restore` and its listeners)
  find_nodes  the FindNodes request parsed from its bytes, `FilterServicer.FindNodes` (the previous
              batch's pods assumed as binds under way, then each pod placed with the earlier ones
              assumed) and the response serialized: what the service does between gRPC's bytes in
              and out
  bound       the previous batch's bound records, applied the same way, after the request (its
              Bind overlaps the next FindNodes)

Each line is one step's CPU per pod (`time.process_time`), the best of `--rounds`, with the
services' garbage-collector thresholds. The first batch is not counted (its FindNodes reads every
node into the column strategy's columns, once per process). Records and requests are made outside
the timed steps. Where the time goes: run it under `py-spy record --format raw` (cProfile's own
cost per call skews these many small calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from aiokafka import ConsumerRecord

from benchmarks.scheduler_perf import node_manifest, pod_template
from podsched.api.manifests import decode_object
from podsched.api.types import Pod
from podsched.cluster.store import ADDED, MODIFIED
from podsched_filter.config import FilterConfig
from podsched_filter.service import FilterServicer
from podsched_proto.filter.v1 import filter_pb2
from podsched_service import gc_tuning
from podsched_service.codec import change_message

NOW = 1_764_000_000.0
WRITER = "podsched-binder"
INIT_PODS = 1000


class FixedClock:
    def time(self) -> float:
        return NOW


class Log:
    """The objects topic as the servicer's replica reads it: records with increasing versions."""

    def __init__(self, servicer: FilterServicer) -> None:
        self.replica = servicer.copy.replica
        self.version = 0
        self.offset = 0

    def record(self, change_type: str, obj: Any) -> ConsumerRecord[bytes, bytes]:
        self.version += 1
        obj.metadata.resource_version = self.version
        value = change_message(change_type, obj, WRITER, NOW).SerializeToString()
        self.offset += 1
        return ConsumerRecord(
            self.replica.objects_topic, 0, self.offset, 0, 0, obj.metadata.uid.encode(), value, None, 0, len(value), ()
        )

    def apply(self, records: list[ConsumerRecord[bytes, bytes]]) -> None:
        for record in records:
            self.replica._apply(record)


def new_pod(index: int, node_name: str = "") -> Pod:
    pod = decode_object(pod_template("default")("scheduling-basic", f"pod-{index}"))
    assert isinstance(pod, Pod)
    pod.metadata.uid = f"00000000-0000-0000-0000-{index:012d}"
    pod.metadata.creation_timestamp = NOW + index / 1000
    pod.spec.priority = 0  # perf-zero, as admission resolves it
    if node_name:
        bind(pod, node_name)
    return pod


def bind(pod: Pod, node_name: str) -> None:
    pod.spec.node_name = node_name
    pod.status.phase = "Running"
    pod.status.start_time = NOW + 1


async def new_servicer(nodes: int) -> tuple[FilterServicer, Log]:
    """A filter servicer whose replica has applied the nodes and the init pods (the consumer is made
    inside a running loop, as aiokafka asks, and never started)."""
    servicer = FilterServicer(
        FilterConfig(kafka_bootstrap_servers="127.0.0.1:9", topic_prefix="filter-micro."), clock=FixedClock()
    )
    log = Log(servicer)
    records = []
    for index in range(nodes):
        node = decode_object(node_manifest(index))
        node.metadata.uid = f"node-{index}"
        records.append(log.record(ADDED, node))
    records += [log.record(ADDED, new_pod(-1 - i, f"scheduler-perf-{i % nodes}")) for i in range(INIT_PODS)]
    log.apply(records)
    return servicer, log


async def one_round(nodes: int, pods: int, batch: int) -> dict[str, float]:
    servicer, log = await new_servicer(nodes)
    batches = [[new_pod(i) for i in range(start, min(start + batch, pods))] for start in range(0, pods, batch)]
    spent = {"created": 0.0, "find_nodes": 0.0, "bound": 0.0}
    in_flight: list[tuple[Pod, str]] = []  # the previous batch's placements, its Bind under way
    placed = 0
    for number, pods_of_batch in enumerate(batches):
        if number == 1:  # the first batch read every node into the columns: once per process, not counted
            spent = dict.fromkeys(spent, 0.0)
            placed = 0
        created = [log.record(ADDED, pod) for pod in pods_of_batch]
        began = time.process_time()
        log.apply(created)
        spent["created"] += time.process_time() - began

        request = filter_pb2.FindNodesRequest(
            pods=[filter_pb2.PodToPlace(uid=pod.uid) for pod in pods_of_batch],
            min_resource_version=log.version,
            assumed_binds=[filter_pb2.AssumedBind(pod_uid=pod.uid, node_name=node) for pod, node in in_flight],
        ).SerializeToString()
        began = time.process_time()
        response = await servicer.FindNodes(filter_pb2.FindNodesRequest.FromString(request), None)
        answer = response.SerializeToString()
        spent["find_nodes"] += time.process_time() - began

        bound = []
        for pod, node in in_flight:
            bind(pod, node)
            bound.append(log.record(MODIFIED, pod))
        began = time.process_time()
        log.apply(bound)
        spent["bound"] += time.process_time() - began

        placements = filter_pb2.FindNodesResponse.FromString(answer).placements
        in_flight = [(pod, p.node_name) for pod, p in zip(pods_of_batch, placements, strict=True) if p.node_name]
        if len(in_flight) != len(pods_of_batch):
            raise SystemExit(f"a pod of the batch was not placed: {placements[len(in_flight)]}")
        placed += len(in_flight)
    await servicer.stop()
    return {step: seconds * 1e6 / placed for step, seconds in spent.items()}


def best_of(rounds: int, measure: Callable[[], dict[str, float]]) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(rounds):
        for step, us in measure().items():
            best[step] = min(best.get(step, float("inf")), us)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=4224)  # 33 batches: 32 counted
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    gc_tuning.tune_for_service()  # the services' collector thresholds

    def measure() -> dict[str, float]:
        return asyncio.run(one_round(args.nodes, args.pods, args.batch))

    best = best_of(args.rounds, measure)
    best["total"] = sum(best.values())
    for step, us in best.items():
        print(json.dumps({"step": step, "nodes": args.nodes, "batch": args.batch, "us_per_pod": round(us, 1)}))


if __name__ == "__main__":
    main()
