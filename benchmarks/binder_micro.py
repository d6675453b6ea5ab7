"""What the binder's writes cost in process, in microseconds of CPU, the transaction left out.

    python -m benchmarks.binder_micro [--rounds R]

The binder service's own `Binder` (its cluster, its change and event capture, its observer, and
its decision log lines written to a temporary file as the service's go to its log file) holds
scheduler_perf nodes and applies, with recording on as inside a batch, and nothing committed:

  create    SchedulingBasic pods created (`Cluster.apply` of the decoded pod): per pod, admission,
            the store, the created record and its JSON
  bind      those pods bound: per pod, the bind, its Scheduled event, the records and their JSON
  evict     PreemptionBasic/1000Nodes' failed attempts (`record_scheduling_failure`), each preemptor
            nominated to a full node with 3 of its 4 low-priority pods as victims: per preemptor, the
            evictions (grace 0), the nomination and every record, event and log line of them

Timed with the process's CPU time, the best of `--rounds` fresh binders. One JSON line per step.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from collections.abc import Callable

from benchmarks.scheduler_perf import PRIORITY_CLASSES, node_manifest, pod_template
from podsched.api.manifests import decode_object
from podsched.cluster.failure import record_scheduling_failure
from podsched_binder.config import BinderConfig
from podsched_binder.service import Binder
from podsched_service import gc_tuning, telemetry

FAILURE_MESSAGE = "0/1000 nodes are available: 1000 Insufficient cpu."


def binder_with_nodes(nodes: int) -> Binder:
    binder = Binder(BinderConfig(leader_election=False))
    for manifest in PRIORITY_CLASSES:
        binder.cluster.apply(decode_object(manifest))
    for index in range(nodes):
        binder.cluster.apply(decode_object(node_manifest(index)))
    return binder


def recorded(binder: Binder, step: Callable[[], None]) -> float:
    """CPU seconds of `step` with the binder recording, as inside a batch."""
    binder._recording = True
    began = time.process_time()
    try:
        step()
    finally:
        elapsed = time.process_time() - began
        binder._recording = False
        binder._records.clear()
        binder._batch_json.clear()
    return elapsed


def create_and_bind_us_per_pod(pods: int = 4096, nodes: int = 5000) -> tuple[float, float]:
    binder = binder_with_nodes(nodes)
    make = pod_template("default")
    uids: list[str] = []

    def create_all() -> None:
        uids.extend(binder.cluster.apply(decode_object(make("sb", f"pod-{i}")))[1].metadata.uid for i in range(pods))

    created = recorded(binder, create_all)

    def bind_all() -> None:
        for index, uid in enumerate(uids):
            binder.cluster.bind(uid, f"scheduler-perf-{index % nodes}")

    return created / pods * 1e6, recorded(binder, bind_all) / pods * 1e6


def evict_us_per_preemptor(nodes: int = 1000) -> float:
    binder = binder_with_nodes(nodes)
    cluster = binder.cluster
    low, high = pod_template("low-priority"), pod_template("high-priority")
    victims: dict[str, list[str]] = {}
    for index in range(nodes * 4):
        node_name = f"scheduler-perf-{index % nodes}"
        uid = cluster.apply(decode_object(low("pb", f"low-{index}")))[1].metadata.uid
        cluster.bind(uid, node_name)
        victims.setdefault(node_name, []).append(uid)
    preemptors = [cluster.apply(decode_object(high("pb", f"high-{i}")))[1].metadata.uid for i in range(nodes)]

    def fail_all() -> None:
        for index, uid in enumerate(preemptors):
            node_name = f"scheduler-perf-{index}"
            record_scheduling_failure(cluster, uid, FAILURE_MESSAGE, node_name, victims[node_name][:3])

    return recorded(binder, fail_all) / nodes * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="fresh binders per step; the best is reported")
    args = parser.parse_args()
    gc_tuning.tune_for_service()  # the services' collector thresholds
    telemetry.configure_logging("podsched-binder")  # decision lines as the service writes them
    log_file = tempfile.TemporaryFile("w")  # noqa: SIM115 - held for the process's life
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(log_file)
    created, bound = zip(*(create_and_bind_us_per_pod() for _ in range(args.rounds)), strict=True)
    evicted = [evict_us_per_preemptor() for _ in range(args.rounds)]
    for name, figures in (("create", created), ("bind", bound), ("evict", evicted)):
        print(json.dumps({"step": name, "us": round(min(figures), 1)}), flush=True)


if __name__ == "__main__":
    main()
