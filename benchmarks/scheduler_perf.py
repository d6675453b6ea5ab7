"""Upstream scheduler_perf workloads, end to end through the running services and Kafka.

    python -m benchmarks.scheduler_perf [--workload NAME ...] [--scale F] [--workers N] [--plot-dir DIR]

For each workload: a fresh stack (the four services as processes on free ports, their own topics on
one real Kafka broker), then scheduler_perf's ops through the public gRPC API:
createNodes -> createPods(init) -> [churn] -> createPods(measured, collectMetrics).

Measured exactly as upstream (benchmarks.throughput): the collector follows the object log (as
upstream's follows the scheduler's informer) and, once a second, counts the measured pods that are
bound. The pods are created as upstream's creator creates them: 30 calls at a time, at most 5000
objects a second (`--in-flight`, `--qps`). Also: submit-to-bound latency of each measured pod (its Apply
sent -> its bind seen on the log; with the creator ahead of the scheduler, most of it is waiting in the
queue), upstream's own latency figure (attempt_p50_ms: the P50 of the successful scheduling attempts),
and the peak resident memory of each service's process group (workers included).

Output: a progress bar on stderr; one JSON line per workload on stdout with workload, nodes,
init_pods, measured_pods, throughput_avg/p50/p90/p99, latency_p50_ms/p99_ms/max_ms, attempt_p50_ms, rss_mb (peak, summed
over services), rss_mb_by_service, duration_s, samples; cpu_ms_per_pod (CPU each service, the
Kafka broker and this harness used during the measured phase, per measured pod) and cpu_busy (that
CPU over the phase's wall time and the machine's cores); calibration_us (how fast the machine was
just before: one pod record's decode, best of three timings); per_pod (scheduling attempts by result, the
binder's Kafka transactions and records, per measured pod, from the services' metrics); call_ms
(the queue's mean wait per call to each service, by method, and the binder's mean transaction,
"commit"); and a PNG of throughput over time per
workload in --plot-dir.

Templates (test/integration/scheduler_perf/templates/): node 4 CPU / 32Gi / 110 pods; pod-default
100m/500Mi; pod-low-priority 900m/500Mi, grace 0; pod-high-priority priority 10, 3 CPU/500Mi;
pod-high-priority-large-cpu priority 10, 9 CPU. Upstream's harness disables Priority admission and
writes spec.priority directly; here admission is on, so priority 10 comes from a PriorityClass of
value 10 and priority 0 from a PriorityClass of value 0.

GangScheduling (upstream's podgroup/gangscheduling) is read from upstream's own config and templates
(:data:`UPSTREAM_WORKLOADS`): PodGroups gang-<i> (gang minCount podsPerGroup) created before the measured
pods, pods test-gang-scheduling-<i> (100m/100Mi) joining gang-<i / podsPerGroup>, with the GenericWorkload
gate on in every service's scheduler configuration."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
from aiokafka import AIOKafkaConsumer, TopicPartition

from benchmarks.client_limit import CLIENT_BURST, CLIENT_QPS, TokenBucket
from benchmarks.histogram import bucket_quantile
from benchmarks.throughput import burst_rate, summarize, throughput_samples
from podsched.api.manifests import decode_object
from podsched_devstack.kafka import KafkaBroker, ensure_kafka_installed
from podsched_devstack.services import MetricSamples, ServiceStack, StackSettings, process_cpu_seconds, scrape
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.events.v1 import events_pb2
from podsched_queue.config import QueueConfig
from podsched_service.codec import change_message, decode_change, mark_version, topics
from podsched_service.server import CHANNEL_OPTIONS

MEASURED_NAMESPACE = "measured"
INIT_NAMESPACE = "init"
CHURN_NAMESPACE = "churn"
APPLY_BATCH = 32  # objects per ApplyBatch call (1: one Apply call per object)
# The creator works as scheduler_perf's (runners.go, CreatePod): 30 workers, each sending one call
# after the other (there a create of one pod, here an ApplyBatch), within its client's rate limit
# (benchmarks.client_limit, QPS 5000 objects a second). Upstream's creator runs ahead of its
# scheduler, which so always has pods waiting; so does this one.
CREATORS = 30
IN_FLIGHT = CREATORS * APPLY_BATCH  # objects being applied at once (--in-flight)
SAMPLE_INTERVAL = 1.0


# --- upstream templates ------------------------------------------------------------------------


def node_manifest(index: int) -> dict[str, Any]:
    name = f"scheduler-perf-{index}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


PRIORITY_CLASSES = [priority_class("perf-zero", 0), priority_class("perf-ten", 10)]


def pod_template(kind: str) -> Callable[[str, str], dict[str, Any]]:
    cpu, priority_class_name, grace = {
        "default": ("100m", "perf-zero", None),
        "low-priority": ("900m", "perf-zero", 0),
        "high-priority": ("3000m", "perf-ten", None),
        "high-priority-large-cpu": ("9", "perf-ten", None),
    }[kind]

    def make(namespace: str, name: str) -> dict[str, Any]:
        resources = {"cpu": cpu, "memory": "500Mi"}
        spec: dict[str, Any] = {
            "priorityClassName": priority_class_name,
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": resources, "limits": resources},
                }
            ],
        }
        if grace is not None:
            spec["terminationGracePeriodSeconds"] = grace
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}

    return make


@dataclass(frozen=True)
class Workload:
    name: str
    nodes: int
    init_pods: int
    init_template: str
    measured_pods: int
    measured_template: str
    churn_template: str = ""  # created every churn_interval while the measured pods run
    churn_interval: float = 0.2
    # Gang workloads (upstream's podgroup/ configs): pod_groups PodGroups, pod_group_manifest(index), are
    # created before the measured pods, which are measured_manifest(index) instead of measured_template
    # (upstream's templates rendered; the namespace is set here). feature_gates go into the scheduler
    # configuration every service reads, as upstream's test case turns them on.
    measured_manifest: Callable[[int], dict[str, Any]] | None = None
    pod_groups: int = 0
    pod_group_manifest: Callable[[int], dict[str, Any]] | None = None
    feature_gates: tuple[tuple[str, bool], ...] = ()

    def scaled(self, factor: float) -> Workload:
        def s(n: int) -> int:
            return max(1, int(n * factor)) if n else 0

        measured = s(self.measured_pods)
        if self.pod_groups:  # whole groups: a gang cut short would never schedule
            measured = s(self.pod_groups) * (self.measured_pods // self.pod_groups)
        return replace(
            self,
            nodes=s(self.nodes),
            init_pods=s(self.init_pods),
            measured_pods=measured,
            pod_groups=s(self.pod_groups),
        )

    def measured_documents(self) -> list[dict[str, Any]]:
        if self.measured_manifest is None:
            make = pod_template(self.measured_template)
            return [make(MEASURED_NAMESPACE, f"pod-{i}") for i in range(self.measured_pods)]
        return [_in_namespace(self.measured_manifest(i), MEASURED_NAMESPACE) for i in range(self.measured_pods)]

    def pod_group_documents(self) -> list[dict[str, Any]]:
        if self.pod_group_manifest is None:
            return []
        return [_in_namespace(self.pod_group_manifest(i), MEASURED_NAMESPACE) for i in range(self.pod_groups)]

    def scheduler_config(self) -> dict[str, Any] | None:
        """The KubeSchedulerConfiguration the services run with, or None for podsched's default."""
        if not self.feature_gates:
            return None
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "featureGates": dict(self.feature_gates),
        }


def _in_namespace(document: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {**document, "metadata": {**document.get("metadata", {}), "namespace": namespace}}


WORKLOADS = {
    w.name: w
    for w in [
        Workload("SchedulingBasic/5000Nodes_10000Pods", 5000, 1000, "default", 10000, "default"),
        Workload("PreemptionBasic/500Nodes", 500, 2000, "low-priority", 500, "high-priority"),
        Workload("PreemptionBasic/1000Nodes", 1000, 4000, "low-priority", 1000, "high-priority"),
        Workload("PreemptionAsync/5000Nodes", 5000, 20000, "low-priority", 5000, "default", "high-priority"),
        Workload(
            "Unschedulable/5kNodes/100Init/10kPods", 5000, 100, "default", 10000, "default", "high-priority-large-cpu"
        ),
    ]
}
SHORT_NAMES = {
    "SchedulingBasic": "SchedulingBasic/5000Nodes_10000Pods",
    "PreemptionBasic500": "PreemptionBasic/500Nodes",
    "PreemptionBasic1000": "PreemptionBasic/1000Nodes",
    "PreemptionAsync": "PreemptionAsync/5000Nodes",
    "Unschedulable": "Unschedulable/5kNodes/100Init/10kPods",
    "GangScheduling": "GangScheduling/5000Nodes_1000Gangs_3000Pods",
}
# Workloads whose objects come from upstream's own template files (PodGroups and gang pods), read from
# the test package's performance-config.yaml and templates/ when chosen: name -> scheduler_perf package.
UPSTREAM_WORKLOADS = {"GangScheduling/5000Nodes_1000Gangs_3000Pods": "podgroup/gangscheduling"}


def workload_named(name: str) -> Workload:
    if name in WORKLOADS:
        return WORKLOADS[name]
    from benchmarks.upstream_config import load_workload  # it imports this module for Workload

    return load_workload(UPSTREAM_WORKLOADS[name], name)


# --- the run ------------------------------------------------------------------------------------


@dataclass
class BindWatch:
    """Follows the object log: when did each pod of a namespace get its node."""

    bootstrap: str
    topic: str
    bound_at: dict[str, dict[str, float]] = field(default_factory=dict)  # namespace -> name -> time
    # A preemptor's way to its node: when it was created, when it was first nominated (and where),
    # and when pods of a namespace left each node (its victims), so `preemptor_phases` can split its
    # latency.
    added_at: dict[str, dict[str, float]] = field(default_factory=dict)
    nominated_at: dict[str, dict[str, tuple[float, str]]] = field(default_factory=dict)
    deleted_from: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # namespace -> node -> times

    async def run(self, stop: asyncio.Event) -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
            # A fetch returns as soon as a record is committed, so the wait bounds only the empty
            # fetches: at 20 ms this consumer sent more fetch requests than every service together,
            # and the broker's CPU for them was counted as podsched's.
            fetch_max_wait_ms=500,
        )
        await consumer.start()
        try:
            partition = TopicPartition(self.topic, 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            while not stop.is_set():
                batches = await consumer.getmany(timeout_ms=100)
                now = time.monotonic()
                for records in batches.values():
                    for record in records:
                        if record.value is None or mark_version(record.key, record.value) is not None:
                            continue  # a tombstone or a ResourceVersionMark
                        change = events_pb2.ObjectChange.FromString(record.value)
                        if change.object.kind != "Pod":
                            continue
                        namespace, name = change.object.namespace, change.object.name
                        if change.type == events_pb2.ObjectChange.ADDED:
                            self.added_at.setdefault(namespace, {}).setdefault(name, now)
                        if change.type == events_pb2.ObjectChange.DELETED:
                            if change.node_name:
                                deleted = self.deleted_from.setdefault(namespace, {})
                                deleted.setdefault(change.node_name, []).append(now)
                        elif change.node_name:
                            self.bound_at.setdefault(namespace, {}).setdefault(name, now)
                        elif change.nominated_node_name:
                            nominated = self.nominated_at.setdefault(namespace, {})
                            nominated.setdefault(name, (now, change.nominated_node_name))
        finally:
            await consumer.stop()

    def count(self, namespace: str) -> int:
        return len(self.bound_at.get(namespace, {}))

    def preemptor_phases(
        self, namespace: str, victims_namespace: str, sent_at: dict[str, float]
    ) -> dict[str, dict[str, float]]:
        """Where the latency of a namespace's nominated pods went, in ms (p50, p90, max over them):
        submitted -> created (the API), created -> nominated (queueing, the first attempt and its
        PostFilter, the failure's commit), nominated -> victims gone (the last pod of `victims_namespace` to leave its
        nominated node before it was bound: their grace period) and victims gone -> bound (the
        retry: backoff, queueing behind other pods, its cycle and bind)."""
        bound = self.bound_at.get(namespace, {})
        deleted = self.deleted_from.get(victims_namespace, {})
        added = self.added_at.get(namespace, {})
        phases: dict[str, list[float]] = {
            "to_created": [],
            "to_nominated": [],
            "to_victims_gone": [],
            "to_bound": [],
        }
        for name, (nominated, node) in self.nominated_at.get(namespace, {}).items():
            if name not in bound or name not in sent_at:
                continue
            gone = max((t for t in deleted.get(node, ()) if t <= bound[name]), default=nominated)
            gone = max(gone, nominated)  # victims removed in the nomination's own transaction
            created = added.get(name, sent_at[name])
            phases["to_created"].append((created - sent_at[name]) * 1000)
            phases["to_nominated"].append((nominated - created) * 1000)
            phases["to_victims_gone"].append((gone - nominated) * 1000)
            phases["to_bound"].append((bound[name] - gone) * 1000)
        return {
            phase: {f"p{p}": round(_nearest(sorted(values), p), 1) for p in (50, 90, 100)}
            for phase, values in phases.items()
            if values
        }


class Progress:
    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.began = label, total, time.monotonic()

    def show(self, done: int, note: str = "") -> None:
        width = 30
        filled = int(width * done / self.total) if self.total else width
        elapsed = time.monotonic() - self.began
        sys.stderr.write(
            f"\r{self.label:<28} [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} {elapsed:6.1f}s {note}   "
        )
        sys.stderr.flush()

    def finish(self) -> None:
        sys.stderr.write("\n")


async def apply_all(
    stub: Any,
    documents: list[dict[str, Any]],
    sent_at: dict[str, float] | None = None,
    progress: Progress | None = None,
    size: int = APPLY_BATCH,
    in_flight: int = IN_FLIGHT,
    qps: float = CLIENT_QPS,
) -> None:
    """Apply every document, `in_flight` objects at a time: ApplyBatch calls of `size` objects (one
    Apply per object when `size` is 1), at most `qps` objects a second after a burst of as many (0:
    no limit). A refused object stops the benchmark."""
    chunks = iter([documents[i : i + size] for i in range(0, len(documents), size)])
    done = 0
    limit = TokenBucket(qps, CLIENT_BURST) if qps > 0 else None

    async def worker() -> None:
        nonlocal done
        for chunk in chunks:
            if limit is not None and (wait := limit.reserve(len(chunk))) > 0:
                await asyncio.sleep(wait)
            if sent_at is not None:
                now = time.monotonic()
                for document in chunk:
                    sent_at[document["metadata"]["name"]] = now
            requests = [api_pb2.ApplyRequest(object_json=json.dumps(document).encode()) for document in chunk]
            if size == 1:
                await stub.Apply(requests[0], timeout=120)
            else:
                reply = await stub.ApplyBatch(api_pb2.ApplyBatchRequest(requests=requests), timeout=120)
                refused = [
                    (d["metadata"]["name"], r.message) for d, r in zip(chunk, reply.results, strict=True) if r.code
                ]
                if refused:
                    raise RuntimeError(f"{len(refused)} object(s) refused, e.g. {refused[0][0]}: {refused[0][1]}")
            before = done
            done += len(chunk)
            if progress is not None and done // 200 != before // 200:
                progress.show(done)

    await asyncio.gather(*(worker() for _ in range(max(1, in_flight // size))))


async def wait_bound(watch: BindWatch, namespace: str, count: int, progress: Progress, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while watch.count(namespace) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {watch.count(namespace)}/{count} {namespace} pods bound after {timeout:.0f}s")
        progress.show(watch.count(namespace))
        await asyncio.sleep(0.2)
    progress.show(count)
    progress.finish()


async def run_workload(
    workload: Workload,
    broker: KafkaBroker,
    run_dir: Path,
    workers: int,
    timeout: float,
    scale: float = 1.0,
    batch_size: int = 0,
    apply_batch: int = APPLY_BATCH,
    measured_phase: Callable[[ServiceStack], Callable[[], None]] | None = None,
    in_flight: int = IN_FLIGHT,
    qps: float = CLIENT_QPS,
) -> dict[str, Any]:
    """`measured_phase`, when given, is called as the measured pods start (e.g. to attach a profiler
    to the services) and returns what to call once they are all bound."""
    prefix = f"perf{uuid.uuid4().hex[:8]}."
    scheduler_config = ""
    if (config := workload.scheduler_config()) is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / f"{prefix}scheduler-config.json"  # JSON is YAML
        path.write_text(json.dumps(config))
        scheduler_config = str(path)
    stack = ServiceStack(
        StackSettings.on_free_ports(
            broker.bootstrap_servers,
            run_dir / prefix.rstrip("."),
            topic_prefix=prefix,
            workers=workers,
            scheduler_config=scheduler_config,
            extra_env={"PODSCHED_BATCH_SIZE": str(batch_size)} if batch_size else {},
        )
    )
    calibration_us = calibrate()
    stack.start()
    stop = asyncio.Event()
    watch = BindWatch(broker.bootstrap_servers, topics(prefix)[0])
    watch_task = asyncio.create_task(watch.run(stop))
    peak_rss: dict[str, int] = {}
    channel = grpc.aio.insecure_channel(stack.server, options=CHANNEL_OPTIONS)
    stub = api_pb2_grpc.PodSchedStub(channel)
    try:
        await apply_all(stub, PRIORITY_CLASSES, size=apply_batch)
        progress = Progress(f"{workload.nodes} nodes", workload.nodes)
        await apply_all(stub, [node_manifest(i) for i in range(workload.nodes)], progress=progress, size=apply_batch)
        progress.show(workload.nodes)
        progress.finish()

        init = pod_template(workload.init_template)
        progress = Progress(f"{workload.init_pods} init pods", workload.init_pods)
        await apply_all(stub, [init(INIT_NAMESPACE, f"init-{i}") for i in range(workload.init_pods)], size=apply_batch)
        await wait_bound(watch, INIT_NAMESPACE, workload.init_pods, progress, timeout)

        await apply_all(stub, workload.pod_group_documents(), size=apply_batch)
        sent_at: dict[str, float] = {}
        ticks: list[tuple[float, int]] = []
        rss_series: list[dict[str, int]] = []
        progress = Progress(workload.name.split("/")[0], workload.measured_pods)

        async def sampler() -> None:
            while True:
                await asyncio.sleep(SAMPLE_INTERVAL)
                ticks.append((time.monotonic(), watch.count(MEASURED_NAMESPACE)))
                rss = stack.rss_bytes()
                rss_series.append(rss)
                for name, value in rss.items():
                    peak_rss[name] = max(peak_rss.get(name, 0), value)
                recent = throughput_samples(ticks[-3:])
                progress.show(ticks[-1][1], f"{recent[-1]:7.0f} pods/s" if recent else "")

        async def churn() -> None:
            make = pod_template(workload.churn_template)
            for index in itertools.count():
                await stub.Apply(
                    api_pb2.ApplyRequest(object_json=json.dumps(make(CHURN_NAMESPACE, f"churn-{index}")).encode()),
                    timeout=120,
                )
                await asyncio.sleep(workload.churn_interval)

        background = [asyncio.create_task(sampler())]
        if workload.churn_template:
            background.append(asyncio.create_task(churn()))
        began = time.monotonic()
        cpu_before = cpu_snapshot(stack, broker)
        metrics_before = await asyncio.to_thread(scrape_services, stack)
        counters_before, attempts_before = counter_snapshot(metrics_before), attempt_buckets(metrics_before)
        end_measured_phase = measured_phase(stack) if measured_phase is not None else None
        try:
            await apply_all(
                stub, workload.measured_documents(), sent_at, size=apply_batch, in_flight=in_flight, qps=qps
            )
            # Upstream's barrier (waitUntilPodsScheduledInNamespace): a check at once, then one a
            # second, and the collector stops at the check that sees every measured pod bound. A
            # collector tick between the last bind and that check samples the last, partial second.
            deadline = time.monotonic() + timeout
            while watch.count(MEASURED_NAMESPACE) < workload.measured_pods:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{watch.count(MEASURED_NAMESPACE)}/{workload.measured_pods} measured pods "
                        f"bound after {timeout:.0f}s"
                    )
                await asyncio.sleep(SAMPLE_INTERVAL)
        finally:
            if end_measured_phase is not None:
                end_measured_phase()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            progress.show(watch.count(MEASURED_NAMESPACE))
            progress.finish()
        duration = time.monotonic() - began
        cpu_after = cpu_snapshot(stack, broker)
        metrics_after = await asyncio.to_thread(scrape_services, stack)
        counters = counter_snapshot(metrics_after)
        counted = {name: counters[name] - counters_before.get(name, 0.0) for name in counters}
        attempts = {le: count - attempts_before.get(le, 0.0) for le, count in attempt_buckets(metrics_after).items()}
        bound = watch.bound_at.get(MEASURED_NAMESPACE, {})
        latencies = sorted((bound[name] - sent_at[name]) * 1000 for name in bound if name in sent_at)
        created = watch.added_at.get(MEASURED_NAMESPACE, {})
        after_created = sorted((bound[name] - created[name]) * 1000 for name in bound if name in created)
        summary = summarize(throughput_samples(ticks))
        # A burst bound within one of the collector's 1 s intervals gives it no sample: then the rate
        # from the first measured pod sent to the last bind, and the line says so.
        measured_by = "collector" if summary.samples else "first sent to last bind"
        average = summary.average if summary.samples else burst_rate(list(bound.values()), min(sent_at.values()))
        return {
            "workload": workload.name,
            "nodes": workload.nodes,
            "init_pods": workload.init_pods,
            "measured_pods": workload.measured_pods,
            "throughput_avg": round(average, 1),
            "throughput_measured_by": measured_by,
            "throughput_p50": round(summary.perc50, 1),
            "throughput_p90": round(summary.perc90, 1),
            "throughput_p99": round(summary.perc99, 1),
            "latency_p50_ms": round(_nearest(latencies, 50), 1),
            "latency_p99_ms": round(_nearest(latencies, 99), 1),
            "latency_max_ms": round(latencies[-1], 1) if latencies else 0.0,
            # Upstream's latency figure, computed as its collector does: the P50 of the scheduling
            # attempts that succeeded in the measured phase (from the queue's pop to the bind's answer).
            "attempt_p50_ms": _rounded_ms(bucket_quantile(0.5, attempts)) if attempts else None,
            # Whether the harness or the scheduler sets the pace: how fast the measured pods were
            # created (from the first sent to the last in the log), and how long each then waited for
            # its bind. A scheduler that keeps up binds about as fast as the pods are created.
            "created_pods_per_s": creation_rate(sent_at, created),
            "bound_after_created_ms": {f"p{p}": round(_nearest(after_created, p), 1) for p in (50, 90)},
            # For the preemptors (nominated before they were bound): where their latency went.
            "preemptor_phases_ms": watch.preemptor_phases(MEASURED_NAMESPACE, INIT_NAMESPACE, sent_at),
            "rss_mb": round(sum(peak_rss.values()) / 2**20, 1),
            "rss_mb_by_service": {name: round(value / 2**20, 1) for name, value in sorted(peak_rss.items())},
            "duration_s": round(duration, 1),
            # CPU spent by each process while the measured pods were created and scheduled, per measured
            # pod: where the machine's two cores go ("harness" is this process: the client and the watch).
            "cpu_ms_per_pod": {
                name: round((cpu_after[name] - cpu_before[name]) * 1000 / workload.measured_pods, 3)
                for name in cpu_after
            },
            # How much work the measured pods made, per measured pod: scheduling attempts by result,
            # the binder's Kafka transactions and records (churn and evictions included).
            "per_pod": {
                name: round(value / workload.measured_pods, 3)
                for name, value in sorted(counted.items())
                if not name.startswith(("grpc_client", "podsched_kafka_commit_duration", "grpc_server"))
            },
            # How long one call of the queue to each service took on average (its scheduling loop
            # waits for FindNodes, PostFilterRun and Bind; Write/WriteMany serve the API).
            "call_ms": call_ms(counted),
            "cpu_busy": round(sum(cpu_after[n] - cpu_before[n] for n in cpu_after) / duration / CORES, 2),
            "calibration_us": round(calibration_us, 1),
            "samples": summary.samples,
            "workers": workers,
            "scale": scale,
            "batch_size": batch_size or QueueConfig().batch_size,
            "apply_batch": apply_batch,
            "_ticks": [(t - began, n) for t, n in ticks],
        }
    finally:
        stop.set()
        await asyncio.gather(watch_task, return_exceptions=True)
        await channel.close()
        stack.stop()


CORES = os.cpu_count() or 1
# Counters read from the services' /metrics around the measured phase: (service, metric, label to split by).
COUNTERS = (
    ("queue", "scheduler_schedule_attempts_total", "result"),
    ("binder", "podsched_kafka_transactions_total", ""),
    ("binder", "podsched_kafka_records_produced_total", ""),
    # How long the queue's scheduling loop waited on each downstream call, in seconds per measured pod.
    ("queue", "grpc_client_handling_seconds_sum", "grpc_method"),
    ("queue", "grpc_client_handled_total", "grpc_method"),
    # How long the binder's transactions took, first send to commit (its Kafka round trips).
    ("binder", "podsched_kafka_commit_duration_seconds_sum", ""),
    ("binder", "podsched_kafka_commit_duration_seconds_count", ""),
    # How long the queue took to serve each public-API call (an ApplyBatch: its creates' whole path).
    ("queue", "grpc_server_handling_seconds_sum", "grpc_method"),
    ("queue", "grpc_server_handling_seconds_count", "grpc_method"),
)


def scrape_services(stack: ServiceStack) -> dict[str, MetricSamples]:
    """Each service's /metrics that the snapshots below read, scraped once (the scrapes taken as the
    measured phase starts count in its CPU)."""
    services = {service for service, _, _ in COUNTERS} | {"queue"}
    return {service: scrape(url) for service in sorted(services) if (url := stack.metrics_url(service))}


def counter_snapshot(metrics: dict[str, MetricSamples]) -> dict[str, float]:
    """The COUNTERS as {"metric[label value]": value}, summed over the other labels."""
    out: dict[str, float] = {}
    for service, metric, split_by in COUNTERS:
        for (name, labels), sample in metrics.get(service, {}).items():
            if name != metric:
                continue
            label = dict(labels).get(split_by) if split_by else None
            key = metric.removesuffix("_total") + (f"[{label}]" if label is not None else "")
            out[key] = out.get(key, 0.0) + sample
    return out


def attempt_buckets(metrics: dict[str, MetricSamples]) -> dict[float, float]:
    """The queue's scheduler_scheduling_attempt_duration_seconds{result="scheduled"} as {upper bound:
    cumulative count}, summed over profiles."""
    out: dict[float, float] = {}
    for (name, labels), sample in metrics.get("queue", {}).items():
        if name == "scheduler_scheduling_attempt_duration_seconds_bucket":
            found = dict(labels)
            if found.get("result") == "scheduled":
                upper = float(found["le"])  # "+Inf" reads as inf
                out[upper] = out.get(upper, 0.0) + sample
    return out


def _rounded_ms(seconds: float) -> float | None:
    return None if math.isnan(seconds) else round(seconds * 1000, 1)


def call_ms(counted: dict[str, float]) -> dict[str, float]:
    """Mean milliseconds over the measured phase: per queue -> service call, by method; per binder
    transaction ("commit"); and per public-API write the queue served ("queue Apply...")."""
    out = {}
    if commits := counted.get("podsched_kafka_commit_duration_seconds_count"):
        out["commit"] = round(counted["podsched_kafka_commit_duration_seconds_sum"] * 1000 / commits, 2)
    out.update(_mean_ms(counted, "grpc_client_handling_seconds_sum", "grpc_client_handled"))
    # Only the writes: a Watch is handled for as long as its client keeps it open.
    served = _mean_ms(counted, "grpc_server_handling_seconds_sum", "grpc_server_handling_seconds_count")
    out.update({f"queue {method}": ms for method, ms in served.items() if method.startswith("Apply")})
    return out


def _mean_ms(counted: dict[str, float], seconds_key: str, calls_key: str) -> dict[str, float]:
    """Method -> mean milliseconds, from `seconds_key[method]` over `calls_key[method]`."""
    out = {}
    for key, seconds in sorted(counted.items()):
        if key.startswith(seconds_key + "["):
            method = key[len(seconds_key) :]
            if calls := counted.get(calls_key + method, 0.0):
                out[method.strip("[]")] = round(seconds * 1000 / calls, 2)
    return out


def calibrate(rounds: int = 3, repeat: int = 2000) -> float:
    """How fast this machine is right now: microseconds to decode one pod's log record (what every
    replica does for every change), best of `rounds`. Shared cloud machines change speed from minute
    to minute; throughputs of two runs compare only alongside their calibrations."""
    pod = decode_object(pod_template("default")("calibration", "pod"))
    pod.metadata.uid, pod.metadata.resource_version = "calibration-uid", 1
    record = change_message("ADDED", pod, "calibration", 0.0).SerializeToString()
    best = math.inf
    for _ in range(rounds):
        began = time.perf_counter()
        for _ in range(repeat):
            decode_change(record)
        best = min(best, (time.perf_counter() - began) / repeat)
    return best * 1e6


def cpu_snapshot(stack: ServiceStack, broker: KafkaBroker) -> dict[str, float]:
    """CPU seconds used so far by each service, the Kafka broker and this process."""
    out = stack.cpu_seconds()
    broker_pid = broker.pid
    out["kafka"] = (process_cpu_seconds(broker_pid) or 0.0) if broker_pid is not None else 0.0
    times = os.times()
    out["harness"] = times.user + times.system
    return out


def creation_rate(sent_at: dict[str, float], created_at: dict[str, float]) -> float:
    """Pods per second from the first one sent until the last one sent was in the log."""
    created = [created_at[name] for name in sent_at if name in created_at]
    if not created:
        return 0.0
    elapsed = max(created) - min(sent_at.values())
    return round(len(created) / elapsed, 1) if elapsed > 0 else 0.0


def _nearest(ascending: list[float], percent: float) -> float:
    if not ascending:
        return 0.0
    return ascending[max(0, math.ceil(len(ascending) * percent / 100) - 1)]


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(results), 1, figsize=(9, 2.6 * len(results)), squeeze=False)
    for axis, result in zip(axes[:, 0], results, strict=True):
        ticks = result["_ticks"]
        times = [t for t, _ in ticks[1:]]
        rates = [(n2 - n1) / (t2 - t1) for (t1, n1), (t2, n2) in itertools.pairwise(ticks)]
        axis.plot(times, rates, linewidth=1.2)
        axis.axhline(result["throughput_avg"], linestyle="--", linewidth=0.8, color="gray")
        axis.set_title(f"{result['workload']}: avg {result['throughput_avg']} pods/s", fontsize=9)
        axis.set_ylabel("pods/s")
    axes[-1, 0].set_xlabel("seconds since the measured pods started")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


async def main_async(args: argparse.Namespace) -> int:
    names = [SHORT_NAMES.get(n, n) for n in args.workload] or [*WORKLOADS, *UPSTREAM_WORKLOADS]
    unknown = [n for n in names if n not in WORKLOADS and n not in UPSTREAM_WORKLOADS]
    if unknown:
        print(f"unknown workload(s) {unknown}; known: {sorted(SHORT_NAMES)}", file=sys.stderr)
        return 2
    ensure_kafka_installed()
    results = []
    with tempfile.TemporaryDirectory(prefix="podsched-bench-") as tmp:
        broker = KafkaBroker(Path(tmp) / "kafka")
        broker.start(timeout=120)
        try:
            for name in names:
                workload = workload_named(name).scaled(args.scale)
                if args.nodes:  # the scaling runs: same pods, another cluster size
                    workload = replace(workload, nodes=args.nodes)
                result = await run_workload(
                    workload,
                    broker,
                    Path(tmp) / "runs",
                    args.workers,
                    args.timeout,
                    args.scale,
                    args.batch_size,
                    args.apply_batch,
                    in_flight=args.in_flight,
                    qps=args.qps,
                )
                print(json.dumps({k: v for k, v in result.items() if not k.startswith("_")}), flush=True)
                results.append(result)
        finally:
            broker.stop()
    if args.plot_dir and results:
        args.plot_dir.mkdir(parents=True, exist_ok=True)
        target = args.plot_dir / "throughput.png"
        plot(results, target)
        print(f"plot: {target}", file=sys.stderr)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", action="append", default=[], help=f"one of {sorted(SHORT_NAMES)}")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply nodes and pod counts (quick runs)")
    parser.add_argument("--nodes", type=int, default=0, help="override the node count (scaling runs)")
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="preemption worker processes (0: these resource-only workloads take the in-process vectorized "
        "dry run anyway, and on a 2-core machine idle workers only add replicas that follow the log)",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for each phase")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=0,
        help=f"the queue's PODSCHED_BATCH_SIZE (0: its default, {QueueConfig().batch_size})",
    )
    parser.add_argument(
        "--apply-batch",
        type=int,
        default=APPLY_BATCH,
        help=f"objects per ApplyBatch call when creating nodes and pods (1: one Apply per object; {APPLY_BATCH})",
    )
    parser.add_argument(
        "--in-flight",
        type=int,
        default=IN_FLIGHT,
        help=f"measured objects being applied at once ({IN_FLIGHT}: {CREATORS} calls, as upstream's {CREATORS} "
        "creating workers); with fewer, the creation may be what holds the bind rate back "
        "(created_pods_per_s close to throughput_avg)",
    )
    parser.add_argument(
        "--qps",
        type=float,
        default=CLIENT_QPS,
        help=f"objects created per second at most, after a burst of {CLIENT_BURST} (upstream's client: "
        f"{CLIENT_QPS:.0f}); 0: no limit",
    )
    parser.add_argument("--plot-dir", type=Path, default=Path(".cache/bench"))
    sys.exit(asyncio.run(main_async(parser.parse_args())))


if __name__ == "__main__":
    main()
