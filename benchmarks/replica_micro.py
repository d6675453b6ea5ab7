"""What following the log costs a filter replica per SchedulingBasic pod, in microseconds of CPU.

    python -m benchmarks.replica_micro [--nodes N] [--pods P] [--rounds R]

A replica as the filter service holds it (a non-authoritative Cluster with the nominator feed and
the column strategy's change tracking, `--nodes` scheduler_perf nodes) applies the binder's records
of `--pods` pods: each pod's created record, then its bound record, as `Replica._apply` does
(ObjectChange parsed, `decode_change_message`, `Cluster.restore` and its listeners). Each line is
one step's CPU per pod, the best of `--rounds`, with the services' garbage-collector thresholds;
the records are made once, by the binder's own `change_message`, before the clock starts.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import replace

from benchmarks.scheduler_perf import node_manifest, pod_template
from podsched.api.manifests import decode_object
from podsched.api.types import Pod
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, MODIFIED
from podsched.config.scheduler_config import SchedulerConfig
from podsched.plugins.registry import build_algorithm
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator
from podsched.scheduler.profile import only_responsible
from podsched_proto.events.v1 import events_pb2
from podsched_service import gc_tuning
from podsched_service.codec import change_message, decode_change_message


def filter_copy(nodes: int) -> Cluster:
    cluster = Cluster(lambda: 1_764_000_000.0, authoritative=False)
    nominator = Nominator()
    config = SchedulerConfig()
    cluster.listeners.append(only_responsible(config, nominator_feed(nominator)))
    algorithm = build_algorithm(replace(config, preemption_enabled=False), nominator, offset=lambda n: 0)
    if algorithm.columns is not None:
        cluster.listeners.append(algorithm.columns.track_changes())
    for index in range(nodes):
        node = decode_object(node_manifest(index))
        node.metadata.resource_version = index + 1
        node.metadata.uid = f"node-{index}"
        cluster.restore(ADDED, node)
    return cluster


def pod_records(nodes: int, pods: int, first_version: int) -> list[tuple[bytes, bytes]]:
    """(created record, bound record) of each pod, serialized as the binder writes them."""
    make = pod_template("default")
    records = []
    version = first_version
    for index in range(pods):
        pod = decode_object(make("scheduling-basic", f"pod-{index}"))
        assert isinstance(pod, Pod)
        pod.metadata.uid = f"00000000-0000-0000-0000-{index:012d}"
        pod.metadata.creation_timestamp = 1_764_000_000.0 + index / 1000
        pod.metadata.resource_version = version
        created = change_message(ADDED, pod, "podsched-binder", 1_764_000_000.5).SerializeToString()
        pod.metadata.resource_version = version + 1
        pod.spec.node_name = f"scheduler-perf-{index % nodes}"
        pod.status.phase = "Running"
        pod.status.start_time = 1_764_000_001.0 + index / 1000
        bound = change_message(MODIFIED, pod, "podsched-binder", 1_764_000_001.5).SerializeToString()
        records.append((created, bound))
        version += 2
    return records


def apply(cluster: Cluster, value: bytes) -> None:
    change_type, obj, _ = decode_change_message(events_pb2.ObjectChange.FromString(value))
    cluster.restore(change_type, obj)


def decode_only(cluster: Cluster, value: bytes) -> None:
    decode_change_message(events_pb2.ObjectChange.FromString(value))


def best_us_per_pod(step: Callable[[Cluster, bytes], None], nodes: int, pods: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        cluster = filter_copy(nodes)
        records = pod_records(nodes, pods, nodes + 1)
        began = time.process_time()
        for created, bound in records:
            step(cluster, created)
            step(cluster, bound)
        best = min(best, (time.process_time() - began) / pods)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    gc_tuning.tune_for_service()  # the services' collector thresholds
    for name, step in (("decode", decode_only), ("decode_and_restore", apply)):
        us = best_us_per_pod(step, args.nodes, args.pods, args.rounds)
        print(json.dumps({"step": name, "nodes": args.nodes, "us_per_pod": round(us, 2)}), flush=True)


if __name__ == "__main__":
    main()
