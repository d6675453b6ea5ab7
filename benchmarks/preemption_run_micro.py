"""What one PostFilterRun costs the preemption service per preemptor, in process, in milliseconds of CPU.

    python -m benchmarks.preemption_run_micro [--runs N] [--run-length L] [--nominated K] [--profile FILE]

The preemption service's servicer (workers 0, the vectorized dry run, the decision log lines going to
/dev/null as the service writes them) holds a copy of PreemptionBasic/1000Nodes late in its burst of
preemptors: 1000 scheduler_perf nodes, each with 4 low-priority pods (900m), except that `--nominated`
of them (the first ones, where a dry run with the service's candidate offset 0 finds its candidates
first) are nominated to an earlier preemptor whose three victims are gone (grace 0: the binder removes
them with the nomination), so one low-priority pod is left there. `--run-length` pending preemptors
(3 CPU, priority 10) are asked about in one PostFilterRun, as the queue asks: the first with the
filter service's Filter outcome (its Placement, node statuses and all), the rest by UID.

Each run times, with the process's CPU time: parsing the request as gRPC hands it over, the servicer's
PostFilterRun, and serializing the answer. The copy is not changed by a run (each decision is assumed
only for the run), so every run answers the same; the first run is left out (it builds the columns).
The service's clock moves on between runs, as between two requests.
Prints one JSON line: per preemptor, p50 and best over the runs, and the decisions of one run
(nominated nodes), so two commits can be checked to decide the same.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import math
import os
import time
from typing import Any, NoReturn

import grpc

from benchmarks.scheduler_perf import PRIORITY_CLASSES, node_manifest, pod_template
from podsched.api.manifests import decode_object
from podsched.cluster.store import ADDED
from podsched.config.scheduler_config import SchedulerConfig
from podsched.plugins.registry import build_algorithm
from podsched_filter.service import placement
from podsched_preemption.config import PreemptionConfig
from podsched_preemption.service import PreemptionServicer
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2
from podsched_service import gc_tuning, telemetry

NOW = 1_764_000_000.0
NODES = 1000
LOW_PER_NODE = 4
NAMESPACE = "preemption-basic"


class SteppingClock:
    """A wall clock that moves on a millisecond at every reading, as a service's does between requests
    (the victims here all have start times, so the decisions do not depend on it)."""

    def __init__(self) -> None:
        self.now = NOW

    def time(self) -> float:
        self.now += 0.001
        return self.now

    def monotonic(self) -> float:
        return time.monotonic()


class Context:
    """What PostFilterRun asks of its gRPC context when it fails: an abort that raises."""

    async def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        raise RuntimeError(f"{code.name}: {details}")


def manifest_of(kind: str, name: str, priority: int, **status: Any) -> dict[str, Any]:
    manifest = pod_template(kind)(NAMESPACE, name)
    manifest["spec"]["priority"] = priority  # admitted: the binder's records carry it
    manifest["metadata"]["uid"] = f"uid-{name}"
    manifest["metadata"]["creationTimestamp"] = "2025-11-24T16:00:00Z"
    node = status.pop("node", "")
    if node:
        manifest["spec"]["nodeName"] = node
    manifest["status"] = status
    return manifest


def late_burst(servicer: PreemptionServicer, nominated: int, run_length: int) -> list[str]:
    """Fills the servicer's copy (as following the log would) and returns the run's pod UIDs."""
    cluster = servicer.copy.cluster
    version = 0

    def restore(manifest: dict[str, Any]) -> None:
        nonlocal version
        version += 1
        manifest["metadata"]["resourceVersion"] = str(version)
        obj = decode_object(manifest)
        obj.metadata.resource_version = version
        cluster.restore(ADDED, obj)

    for priority_class in PRIORITY_CLASSES:
        restore(dict(priority_class))
    for index in range(NODES):
        node = node_manifest(index)
        node["metadata"]["uid"] = f"node-{index}"
        restore(node)
    for index in range(NODES):
        node_name = f"scheduler-perf-{index}"
        left = 1 if index < nominated else LOW_PER_NODE
        for slot in range(left):
            started = f"2025-11-24T16:{index % 60:02d}:{slot:02d}Z"
            low = f"low-{index}-{slot}"
            restore(manifest_of("low-priority", low, 0, node=node_name, phase="Running", startTime=started))
        if index < nominated:
            waiting = f"nominated-{index}"
            restore(manifest_of("high-priority", waiting, 10, phase="Pending", nominatedNodeName=node_name))
    uids = []
    for index in range(run_length):
        restore(manifest_of("high-priority", f"preemptor-{index}", 10, phase="Pending"))
        uids.append(f"uid-preemptor-{index}")
    servicer.copy.replica.version = version
    return uids


def first_filter_outcome(servicer: PreemptionServicer, uid: str) -> filter_pb2.Placement:
    """The filter service's Placement for the run's first pod on the same cluster."""
    cluster = servicer.copy.cluster
    filter_algorithm = build_algorithm(SchedulerConfig(), servicer.copy.nominator, offset=lambda n: 0)
    result = filter_algorithm.schedule(
        cluster.pods_by_uid[uid], cluster.snapshot(), cluster.pdb_list(), servicer.copy.nominator, NOW
    )
    assert not result.node_name, result.node_name
    return placement(uid, result, len(cluster.node_infos))


def rank(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    servicer = PreemptionServicer(PreemptionConfig(workers=0), clock=SteppingClock())
    uids = late_burst(servicer, args.nominated, args.run_length)
    request = preemption_pb2.PostFilterRunRequest(
        first=preemption_pb2.PostFilterRequest(
            pod=filter_pb2.PodToPlace(uid=uids[0]),
            filter_result=first_filter_outcome(servicer, uids[0]),
            min_resource_version=servicer.copy.replica.version,
            filter_resource_version=servicer.copy.replica.version,
        ),
        next=[filter_pb2.PodToPlace(uid=uid) for uid in uids[1:]],
    ).SerializeToString()
    context = Context()

    async def one_run() -> tuple[float, preemption_pb2.PostFilterRunResponse]:
        began = time.process_time()
        response = await servicer.PostFilterRun(
            preemption_pb2.PostFilterRunRequest.FromString(request),
            context,  # type: ignore[arg-type]
        )
        response.SerializeToString()
        return time.process_time() - began, response

    _, response = await one_run()  # builds the columns
    samples = []
    profiler = cProfile.Profile() if args.profile else None
    for _ in range(args.runs):
        if profiler is not None:
            profiler.enable()
        elapsed, answer = await one_run()
        if profiler is not None:
            profiler.disable()
        assert answer == response, "a run changed the copy"
        samples.append(elapsed * 1000 / len(answer.decisions))
    if profiler is not None:
        profiler.dump_stats(args.profile)
    decisions = [d.decision for d in response.decisions]
    return {
        "case": "postfilter_run_1000n_late_burst",
        "nominated": args.nominated,
        "decisions": len(decisions),
        "p50_ms_per_preemptor": round(rank(samples, 0.5), 4),
        "best_ms_per_preemptor": round(min(samples), 4),
        "runs": len(samples),
        "clock": "cpu",
        "nominated_nodes": [d.nominated_node_name for d in decisions],
        "victims": sum(len(d.victims) for d in decisions),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--run-length", type=int, default=32, help="preemptors in the PostFilterRun")
    parser.add_argument("--nominated", type=int, default=900, help="nodes nominated to earlier preemptors")
    parser.add_argument("--profile", default="", help="write cProfile stats of the timed runs here")
    args = parser.parse_args(argv)
    if not 0 <= args.nominated <= NODES - args.run_length:
        parser.error(f"--nominated: must be between 0 and {NODES - args.run_length} (room for the run)")
    # The service's logging, decision lines included, written where they cost the same and show nowhere.
    telemetry.configure_logging("podsched-preemption")
    logging.getLogger().handlers[0].stream = open(os.devnull, "w")  # type: ignore[attr-defined]  # noqa: SIM115
    gc_tuning.tune_for_service()  # the services' collector thresholds
    print(json.dumps(asyncio.run(measure(args))), flush=True)


if __name__ == "__main__":
    main()
