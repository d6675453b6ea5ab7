"""What following the log costs a replica per SchedulingBasic pod, in microseconds of CPU.

    python -m benchmarks.replica_micro [--copy filter|queue] [--nodes N] [--pods P] [--rounds R]

A replica as the filter service holds it (`--copy filter`: a non-authoritative Cluster with the
nominator feed and the column strategy's change tracking, `--nodes` scheduler_perf nodes) or as the
queue service holds it (`--copy queue`: the scheduling queue's feed and the Watch fan-out, the
scheduling loop popping each pod between its two records) applies the binder's records of `--pods`
pods: each pod's created record, then its bound record, as `Replica._apply` does (ObjectChange
parsed, then `restore_change`: decoding, `Cluster.restore` and its listeners); the queue's copy also applies
each pod's Scheduled event. Each line is one step's CPU per pod, the best of `--rounds`, with the
services' garbage-collector thresholds; the records are made once, by the binder's own
`change_message`, before the clock starts.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from benchmarks.scheduler_perf import node_manifest, pod_template
from podsched.api.manifests import decode_object
from podsched.api.types import Pod
from podsched.cluster import events as ev
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, MODIFIED
from podsched.config.scheduler_config import SchedulerConfig
from podsched.plugins.registry import build_algorithm
from podsched.queue.cluster_feed import nominator_feed, queue_feed
from podsched.queue.nominator import Nominator
from podsched.queue.scheduling_queue import SchedulingQueue
from podsched.scheduler.profile import only_responsible
from podsched_proto.events.v1 import events_pb2
from podsched_queue.watch import WatchFanOut
from podsched_service import gc_tuning
from podsched_service.clock import SystemClock
from podsched_service.codec import change_message, decode_change_message, event_from_proto, event_to_proto
from podsched_service.restore import restore_change

BATCH = 128  # the scheduling loop's batch (PODSCHED_BATCH_SIZE): pods popped between their records
NOW = 1_764_000_000.0


@dataclass
class Copy:
    """A service's copy of the cluster and what runs between a batch's created and bound records."""

    cluster: Cluster
    popped: Callable[[], None] = lambda: None


def filter_copy(nodes: int) -> Copy:
    cluster = Cluster(lambda: NOW, authoritative=False)
    nominator = Nominator()
    config = SchedulerConfig()
    cluster.listeners.append(only_responsible(config, nominator_feed(nominator)))
    algorithm = build_algorithm(replace(config, preemption_enabled=False), nominator, offset=lambda n: 0)
    if algorithm.columns is not None:
        cluster.listeners.append(algorithm.columns.track_changes())
    add_nodes(cluster, nodes)
    return Copy(cluster)


def queue_copy(nodes: int) -> Copy:
    """As QueueService builds it: the queue's feed and the Watch fan-out (no Watch open)."""
    cluster = Cluster(lambda: NOW, authoritative=False)
    config = SchedulerConfig()
    queue = SchedulingQueue(lambda: NOW, config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds)
    cluster.listeners.append(only_responsible(config, queue_feed(queue)))
    cluster.listeners.append(WatchFanOut(SystemClock()).on_change)
    add_nodes(cluster, nodes)

    def pop_all() -> None:
        while queue.pop() is not None:
            pass

    return Copy(cluster, pop_all)


def add_nodes(cluster: Cluster, nodes: int) -> None:
    for index in range(nodes):
        node = decode_object(node_manifest(index))
        node.metadata.resource_version = index + 1
        node.metadata.uid = f"node-{index}"
        cluster.restore(ADDED, node)


def pod_records(nodes: int, pods: int, first_version: int, now: float = NOW) -> list[tuple[bytes, bytes, bytes]]:
    """(created record, bound record, Scheduled event record) of each pod, serialized as the binder
    writes them, the first pod created at `now` (each round starts at a later second: in a service
    every pod's timestamps are new, and no cache of an earlier round's may hold them)."""
    make = pod_template("default")
    records = []
    version = first_version
    for index in range(pods):
        pod = decode_object(make("scheduling-basic", f"pod-{index}"))
        assert isinstance(pod, Pod)
        pod.metadata.uid = f"00000000-0000-0000-0000-{index:012d}"
        pod.metadata.creation_timestamp = now + index / 1000
        pod.metadata.resource_version = version
        created = change_message(ADDED, pod, "podsched-binder", now + 0.5).SerializeToString()
        pod.metadata.resource_version = version + 1
        pod.spec.node_name = f"scheduler-perf-{index % nodes}"
        pod.status.phase = "Running"
        pod.status.start_time = now + 1 + index / 1000
        bound = change_message(MODIFIED, pod, "podsched-binder", now + 1.5).SerializeToString()
        message = f"Successfully assigned {pod.namespace}/{pod.name} to {pod.spec.node_name}"
        event = ev.Event("Normal", ev.SCHEDULED, message, ev.ref(pod), now + 1, "default-scheduler", "Binding")
        event.last_time, event.sequence = event.event_time, index
        records.append((created, bound, event_to_proto(event).SerializeToString()))
        version += 2
    return records


def apply(cluster: Cluster, value: bytes) -> None:
    restore_change(cluster, events_pb2.ObjectChange.FromString(value))


def decode_only(cluster: Cluster, value: bytes) -> None:
    decode_change_message(events_pb2.ObjectChange.FromString(value))


def apply_event(cluster: Cluster, value: bytes) -> None:
    cluster.restore_event(event_from_proto(events_pb2.Event.FromString(value)))


def best_us_per_pod(
    make_copy: Callable[[int], Copy], step: Callable[[Cluster, bytes], None], events: bool, args: argparse.Namespace
) -> float:
    best = float("inf")
    for round_index in range(args.rounds):
        copy = make_copy(args.nodes)
        cluster = copy.cluster
        records = pod_records(args.nodes, args.pods, args.nodes + 1, NOW + 3600 * (round_index + 1))
        began = time.process_time()
        for start in range(0, len(records), BATCH):
            batch = records[start : start + BATCH]
            for created, _, _ in batch:
                step(cluster, created)
            copy.popped()
            for _, bound, event in batch:
                step(cluster, bound)
                if events:
                    apply_event(cluster, event)
        best = min(best, (time.process_time() - began) / args.pods)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copy", choices=COPIES, default="filter", help="whose copy of the cluster")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    gc_tuning.tune_for_service()  # the services' collector thresholds
    make_copy = COPIES[args.copy]
    steps = [("decode", decode_only, False), ("decode_and_restore", apply, False)]
    if args.copy == "queue":  # the queue follows the events too (Events, describe, Watch)
        steps.append(("decode_and_restore_with_event", apply, True))
    for name, step, events in steps:
        us = best_us_per_pod(make_copy, step, events, args)
        line = {"copy": args.copy, "step": name, "nodes": args.nodes, "us_per_pod": round(us, 2)}
        print(json.dumps(line), flush=True)


COPIES: dict[str, Callable[[int], Copy]] = {"filter": filter_copy, "queue": queue_copy}


if __name__ == "__main__":
    main()
