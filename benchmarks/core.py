"""Scheduling-core micro benchmarks: the scheduling algorithm node by node ("plain") against its
column strategy ("fast").

    python -m benchmarks.core [--case NAME] [--path plain|fast] [--runs N] [--quick] [--clock wall|cpu]

Prints one JSON line per case and path on stdout (progress goes to stderr):
case, path ("plain" or "fast"), nodes, pods (running pods in the cluster), p50_ms, p99_ms, runs,
plus mean_ms and cold_ms (the first call; for the fast path it includes building the columns of
every node once). Percentiles are nearest-rank, as scheduler_perf computes them. `--clock cpu` times
with the process's CPU time instead of the wall clock: on a machine that other work shares, it
compares two commits more steadily (make bench-core BENCH_ARGS="--clock cpu").

"plain" is build_algorithm(columns=False): every cycle node by node; "fast" is build_algorithm()'s
column strategy wired as the simulator wires it: track_changes(), every changed node reported
through mark_dirty.

Templates are upstream scheduler_perf's (test/integration/scheduler_perf/templates/): node 4 CPU /
32Gi / 110 pods; pod-default 100m / 500Mi; pod-low-priority 900m / 500Mi, priority 0, grace 0;
pod-high-priority priority 10, 3 CPU / 500Mi.

Cases:
  filter_score_5000n     one pod-default pod against 5000 nodes holding 1000 running pod-default
                         pods: one full schedule() call per run, a different pod each run (the
                         round-robin start index moves as in a real scheduler; nothing is bound).
  filter_score_5000n_seq pods scheduled in sequence and bound (NodeInfo updated, the fast path's
                         columns told through mark_dirty): the time per pod includes keeping the
                         columns fresh.
  preempt_5000n_20000p   5000 nodes each full with 4 low-priority pods; one high-priority
                         preemptor; the whole schedule() call including PostFilter (preemption
                         decision), with a random candidate offset per run.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Protocol

from podsched.api.quantity import to_int, to_milli
from podsched.api.types import (
    Container,
    Node,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodDisruptionBudget,
    PodSpec,
    PodStatus,
    Resource,
)
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.plugins.registry import build_algorithm
from podsched.queue.nominator import Nominator
from podsched.scheduler.schedule_one import CycleResult, SchedulingAlgorithm

NOW = 1_767_225_600.0
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]
NODES = 5000


# --- scheduler_perf templates ------------------------------------------------------------------


def make_node(name: str) -> Node:
    capacity = Resource(milli_cpu=to_milli("4"), memory=to_int("32Gi"), allowed_pod_number=110)
    return Node(
        metadata=ObjectMeta(name=name, uid=f"node-{name}", labels={"kubernetes.io/hostname": name}),
        status=NodeStatus(capacity=capacity.copy(), allocatable=capacity.copy()),
    )


def make_pod(
    name: str, cpu: str, memory: str, priority: int = 0, grace: int = 30, node: str = "", start: float | None = None
) -> Pod:
    requests = (("cpu", to_milli(cpu)), ("memory", to_int(memory)))
    spec = PodSpec(
        containers=(Container(name="pause", requests=requests),),
        priority=priority,
        termination_grace_period_seconds=grace,
        node_name=node,
    )
    status = PodStatus(phase="Running" if node else "Pending", start_time=start)
    return Pod(metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"), spec=spec, status=status)


def pod_default(name: str, node: str = "", start: float | None = None) -> Pod:
    return make_pod(name, "100m", "500Mi", node=node, start=start)


def pod_low_priority(name: str, node: str, start: float) -> Pod:
    return make_pod(name, "900m", "500Mi", priority=0, grace=0, node=node, start=start)


def pod_high_priority(name: str) -> Pod:
    return make_pod(name, "3", "500Mi", priority=10)


def cluster(nodes: int, pods_per_node: Callable[[int], list[Pod]]) -> tuple[list[NodeInfo], int]:
    infos = [NodeInfo(make_node(f"node-{i}")) for i in range(nodes)]
    running = 0
    for i, info in enumerate(infos):
        for pod in pods_per_node(i):
            info.add_pod(PodInfo(pod))
            running += 1
    return infos, running


# --- measurement -------------------------------------------------------------------------------


@dataclass(slots=True)
class Measurement:
    case: str
    path: str
    nodes: int
    pods: int
    samples_ms: list[float]
    cold_ms: float
    extra: dict[str, object]

    def line(self) -> str:
        samples = sorted(self.samples_ms)

        def rank(q: float) -> float:  # nearest-rank percentile
            return samples[max(0, math.ceil(q * len(samples)) - 1)]

        record: dict[str, object] = {
            "case": self.case,
            "path": self.path,
            "nodes": self.nodes,
            "pods": self.pods,
            "p50_ms": round(rank(0.5), 4),
            "p99_ms": round(rank(0.99), 4),
            "runs": len(samples),
            "mean_ms": round(sum(samples) / len(samples), 4),
            "cold_ms": round(self.cold_ms, 3),
            "clock": clock_name(),
        }
        record.update(self.extra)
        return json.dumps(record)


def clock_name() -> str:
    return next(name for name, function in CLOCKS.items() if function is clock)


def progress(message: str) -> None:
    print(f"[benchmarks.core] {message}", file=sys.stderr, flush=True)


class Scheduler(Protocol):
    def schedule(
        self, pod: Pod, snapshot: Snapshot, pdbs: list[PodDisruptionBudget], nominator: Nominator, now: float
    ) -> CycleResult: ...


def build(path: str, nominator: Nominator, offset: Callable[[int], int] | None = None) -> SchedulingAlgorithm:
    """The algorithm node by node, or with its column strategy wired as the simulator wires it
    (changes reported through mark_dirty, so a cycle does not re-check every NodeInfo)."""
    algorithm = build_algorithm(SchedulerConfig(), nominator, offset=offset, columns=path == "fast")
    if algorithm.columns is not None:
        algorithm.columns.track_changes()
    return algorithm


def cycle(
    algorithm: Scheduler, pod: Pod, snapshot: Snapshot, nominator: Nominator, bind: Callable[[CycleResult], None]
) -> tuple[float, CycleResult]:
    """One timed schedule() call (plus `bind`, timed too)."""
    started = clock()
    result = algorithm.schedule(pod, snapshot, [], nominator, NOW)
    bind(result)
    return (clock() - started) * 1000.0, result


def no_bind(result: CycleResult) -> None:
    return None


def runs_for(path: str, runs: int) -> int:
    return runs if path == "fast" else max(3, runs // 4)


# --- cases -------------------------------------------------------------------------------------


def spread_pods(i: int) -> list[Pod]:
    """1000 pod-default pods over 5000 nodes: one on every fifth node."""
    return [pod_default(f"init-{i}", f"node-{i}", NOW)] if i % 5 == 0 else []


def filter_score(runs: int, paths: tuple[str, ...]) -> Iterator[Measurement]:
    """SchedulingBasic-like: one pod-default pod per run, nothing bound."""
    infos, running = cluster(NODES, spread_pods)
    snapshot = Snapshot(infos)
    nominator = Nominator()
    for path in paths:
        algorithm = build(path, nominator)
        cold, _ = cycle(algorithm, pod_default("cold"), snapshot, nominator, no_bind)
        samples = []
        for run in range(runs_for(path, runs)):
            elapsed, result = cycle(algorithm, pod_default(f"measured-{run}"), snapshot, nominator, no_bind)
            assert result.node_name, result.message
            samples.append(elapsed)
        progress(f"filter_score_5000n {path}: {len(samples)} runs")
        yield Measurement("filter_score_5000n", path, NODES, running, samples, cold, {})


def filter_score_sequence(runs: int, paths: tuple[str, ...]) -> Iterator[Measurement]:
    """Pods scheduled one after another and bound, as the scheduler does: per pod, schedule()
    plus the bind (NodeInfo.add_pod) plus, for the fast path, mark_dirty of that node."""
    for path in paths:
        infos, running = cluster(NODES, spread_pods)
        snapshot = Snapshot(infos)
        nominator = Nominator()
        algorithm = build(path, nominator)
        bind = Binder({info.name: info for info in infos}, algorithm)
        cold, _ = cycle(algorithm, pod_default("cold"), snapshot, nominator, bind)
        samples = []
        for run in range(runs_for(path, runs) * 2):
            elapsed, _ = cycle(algorithm, pod_default(f"seq-{run}"), snapshot, nominator, bind)
            samples.append(elapsed)
        progress(f"filter_score_5000n_seq {path}: {len(samples)} pods")
        yield Measurement("filter_score_5000n_seq", path, NODES, running, samples, cold, {"per": "pod, incl. bind"})


@dataclass(slots=True)
class Binder:
    """Binds like the cluster does (a new Pod object with spec.nodeName, added to the NodeInfo)
    and reports the changed node to the fast path."""

    by_name: dict[str, NodeInfo]
    algorithm: SchedulingAlgorithm

    def __call__(self, result: CycleResult) -> None:
        pod = result.pod
        bound = replace(pod, spec=replace(pod.spec, node_name=result.node_name))
        self.by_name[result.node_name].add_pod(PodInfo(bound))
        if self.algorithm.columns is not None:
            self.algorithm.columns.mark_dirty(result.node_name)


def full_of_low_priority_pods(i: int) -> list[Pod]:
    return [pod_low_priority(f"low-{i}-{j}", f"node-{i}", NOW - 4 * i - j) for j in range(4)]


def preempt(runs: int, paths: tuple[str, ...]) -> Iterator[Measurement]:
    """PreemptionBasic-like: every node full with 4 low-priority pods; a 3-CPU preemptor must evict 3
    (the decision only: victims are not deleted)."""
    infos, running = cluster(NODES, full_of_low_priority_pods)
    snapshot = Snapshot(infos)
    nominator = Nominator()
    draws = random.Random(7)
    scripted: list[int] = []

    def offset(n: int) -> int:
        return scripted.pop() if scripted else draws.randrange(n)

    for path in paths:
        algorithm = build(path, nominator, offset)
        cold, _ = cycle(algorithm, pod_high_priority("cold"), snapshot, nominator, no_bind)
        if path == "fast":  # steady state: offsets covering every node, so every node's pods were read once
            scripted.extend(range(0, NODES, 500))
            while scripted:
                cycle(algorithm, pod_high_priority(f"warm-{len(scripted)}"), snapshot, nominator, no_bind)
        samples = []
        for run in range(runs_for(path, runs)):
            elapsed, result = cycle(algorithm, pod_high_priority(f"preemptor-{run}"), snapshot, nominator, no_bind)
            assert result.post_filter is not None and len(result.post_filter.victims) == 3, result.message
            samples.append(elapsed)
        progress(f"preempt_5000n_20000p {path}: {len(samples)} runs")
        yield Measurement("preempt_5000n_20000p", path, NODES, running, samples, cold, {})


BURST_NODES = 1000
BURST_NOMINATED = 900


def preempt_late_in_a_burst(runs: int, paths: tuple[str, ...]) -> Iterator[Measurement]:
    """PreemptionBasic/1000Nodes late in its burst of preemptors: every node full with 4 low-priority
    pods, 900 of the nodes already nominated to an earlier preemptor whose victims are not gone yet.
    A new preemptor's cycle fits nowhere and its dry run must walk past the nominated nodes (which
    the nominated load fills) to find candidates among the last 100."""
    infos, running = cluster(BURST_NODES, full_of_low_priority_pods)
    snapshot = Snapshot(infos)
    nominator = Nominator()
    for i in range(BURST_NOMINATED):
        nominator.add(PodInfo(pod_high_priority(f"nominated-{i}")), f"node-{i}")
    draws = random.Random(11)
    for path in paths:
        algorithm = build(path, nominator, lambda n: draws.randrange(n))
        cold, _ = cycle(algorithm, pod_high_priority("cold"), snapshot, nominator, no_bind)
        samples = []
        for run in range(runs_for(path, runs)):
            elapsed, result = cycle(algorithm, pod_high_priority(f"preemptor-{run}"), snapshot, nominator, no_bind)
            assert result.post_filter is not None and len(result.post_filter.victims) == 3, result.message
            assert int(result.post_filter.nominated_node_name.split("-")[1]) >= BURST_NOMINATED
            samples.append(elapsed)
        progress(f"preempt_1000n_late_burst {path}: {len(samples)} runs")
        yield Measurement("preempt_1000n_late_burst", path, BURST_NODES, running, samples, cold, {})


CASES: dict[str, Callable[[int, tuple[str, ...]], Iterator[Measurement]]] = {
    "filter_score_5000n": filter_score,
    "filter_score_5000n_seq": filter_score_sequence,
    "preempt_5000n_20000p": preempt,
    "preempt_1000n_late_burst": preempt_late_in_a_burst,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=sorted(CASES), help="run only this case")
    parser.add_argument("--path", choices=("plain", "fast"), help="run only this path")
    parser.add_argument("--runs", type=int, default=400, help="runs of the fast path (plain: runs/4, >= 3)")
    parser.add_argument("--quick", action="store_true", help="few runs, for a smoke test")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall time or the process's CPU time")
    args = parser.parse_args(argv)
    global clock
    clock = CLOCKS[args.clock]
    runs = 40 if args.quick else args.runs
    for name, case in CASES.items():
        if args.case and name != args.case:
            continue
        progress(f"{name}: building the cluster")
        for measurement in case(runs, (args.path,) if args.path else ("plain", "fast")):
            print(measurement.line(), flush=True)


if __name__ == "__main__":
    main()
