"""`make soak DURATION=30m`: churn through the public API while services and Kafka brokers are killed with
SIGKILL at random times, then prove nothing was lost or broken and that no process's memory grows.

The system is the shape issue 16 asks for: a three-node KRaft cluster (every topic with three replicas,
min.insync.replicas=2) and the four services with two queue replicas (one leads the scheduling loop).

- Churn: one thread creates pods at a steady pace (a fraction of them high priority) and deletes the
  oldest once more than --live-pods are live, so the live cluster, and with it the state, stays bounded.
  The nodes hold fewer pods than are live, so high-priority pods preempt low ones all along. Every write
  the API acknowledged is recorded; a call that fails because a process is down is retried (creates are
  applies, so a retry of a write that did land changes nothing; a retried delete may find the pod gone).
- Chaos: a seeded RNG (the seed is printed first) picks when to kill and what: the binder, the filter,
  the preemption service, the queue replica that leads, the one that stands by, or one Kafka node, which
  is started again after a while. Never two nodes at once; kills go round all kinds in shuffled order.
  A supervisor starts any service that is not running, as systemd or Kubernetes would.
- Memory: the resident set of every process (each process of a service's group on its own: the
  preemption service's workers and multiprocessing's resource tracker too; each Kafka node) is sampled
  every few seconds into rss.jsonl.
- At the end churn and chaos stop, the cluster settles, and the whole Kafka log is read back and checked
  by tests/audit.py. Lost writes: a pod whose create was acknowledged, neither deleted by the soak nor
  preempted, that is not in the cluster; a pod whose delete was acknowledged that still is.

Writes rss.jsonl, summary.json and rss.png to --out-dir and prints the summary: first, last and largest
RSS per process and two slopes in MB/hour over the second half of the run, both without the first two
minutes after each (re)start (imports, the replay, and the garbage it leaves until the first timed full
collection):

- the slope of its level, judged: one line through every sample of the process, whichever incarnation
  took it. Without kills it is the one incarnation's growth; with kills it says whether the level a
  restarted process comes back to, and the level it reaches, rise over the run. Memory that is bounded
  over a month is flat by this measure however often the process restarts.
- the slope within incarnations, reported: each incarnation with its own intercept. With a kill every
  few minutes no incarnation outlives its warm-up (the caches it fills as new timestamps come, bounded
  but filling for an hour), so this is the warm-up's climb, not a trend; a run without kills
  (--kill-every 0) is what shows one process levelling off.

Also kills and other restarts, pods created, deleted and preempted, and the audit's violations. Exits 1
if any violation or lost write was found or a podsched process's level slope is over --max-slope (the
Kafka nodes' slopes are reported only: a JVM's resident set grows towards its fixed heap size).

    python -m benchmarks.soak --duration 30m [--seed N] [--out-dir docs/soak]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import re
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc

from podsched_devstack.kafka import ensure_kafka_installed
from podsched_devstack.kafka_cluster import KafkaCluster
from podsched_devstack.process import anonymous_bytes, group_pids, rss_bytes
from podsched_devstack.services import ServiceStack, StackSettings, service_of
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_service.leader_election import QUEUE_ROLE, current_leader
from tests.audit import audit, read_log

KILL_KINDS = ("binder", "filter", "preemption", "queue-leader", "queue-standby", "kafka-node")
# CANCELLED: the replica serving the call stopped in the middle of it (a deposed queue leader exits).
# Creates are applies and deletes are checked by name, so a retry of a call that did land is harmless.
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)
# After a (re)start, left out of the slopes: imports, the replay, and the garbage the replay leaves until
# the first timed full collection (gc_tuning: 60 s) frees it.
RESTART_WARM_UP_SECONDS = 120.0
# An incarnation sampled for less long after its warm-up says nothing of a trend within it.
MIN_SEGMENT_SECONDS = 60.0
MIB = 2**20


def parse_duration(text: str) -> float:
    """Seconds from "1800", "90s", "30m" or "1h"."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"duration: expected seconds or e.g. 90s, 30m, 1h; got {text!r}")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def service_variable(text: str) -> tuple[str, str]:
    """("NAME", "VALUE") from "NAME=VALUE"."""
    name, sep, value = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise argparse.ArgumentTypeError(f"--service-env: expected NAME=VALUE; got {text!r}")
    return name, value


@dataclass
class SoakOptions:
    duration: float
    seed: int
    nodes: int = 10
    cpus_per_node: int = 10  # 1-CPU pods: nodes * cpus_per_node fit at once
    live_pods: int = 120  # more than fit, so high-priority pods preempt
    creates_per_second: float = 2.0
    high_fraction: float = 0.2
    kill_every: float = 60.0  # mean seconds between kills; 0: no kills (churn only, growth without restarts)
    kafka_down: tuple[float, float] = (5.0, 20.0)  # a killed Kafka node is started again after this long
    sample_every: float = 5.0
    max_slope: float = 50.0  # MB/hour of a process's level over the second half before the soak fails
    warm_up: float = 600.0  # seconds: from then on, the summary gives each process's growth per 10 minutes
    full_round: bool = False  # churn on past the duration until every kind of kill was done once
    min_creates: int = 0  # and until this many pods were created (a slow machine still fills the nodes)
    # How long the events topic, and with it the queue's and the binder's memory, keeps events (None:
    # the services' default, 1 h). A run must last well beyond it to show memory level off.
    events_retention: float | None = None
    # More variables for every service (e.g. PODSCHED_MEMORY_TRACE_SECONDS, or an allocator setting to try).
    service_env: dict[str, str] = field(default_factory=dict)


@dataclass
class Counters:
    created: int = 0
    created_high: int = 0
    deleted: int = 0
    already_gone: int = 0  # deletes that found the pod gone (preempted, or a retried delete that had landed)
    retries: int = 0
    kills: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KILL_KINDS, 0))
    other_restarts: dict[str, int] = field(default_factory=dict)  # services that died of their own accord


class PublicApi:
    """The public API over every queue replica's address (gRPC's pick-first tries them in order and moves
    on when one goes away), retrying while no replica answers."""

    def __init__(self, addresses: list[str], patience: float = 240.0) -> None:
        target = "ipv4:" + ",".join(addresses)
        self.channel = grpc.insecure_channel(target)
        self.stub = api_pb2_grpc.PodSchedStub(self.channel)
        self.patience = patience
        self.retries = 0

    def call(self, what: str, rpc: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + self.patience
        while True:
            try:
                return rpc()
            except grpc.RpcError as error:
                if error.code() not in RETRYABLE or time.monotonic() > deadline:
                    raise RuntimeError(f"{what}: {error.code().name}: {error.details()}") from error
                self.retries += 1
                time.sleep(0.3)

    def apply(self, manifest: dict[str, Any]) -> None:
        request = api_pb2.ApplyRequest(object_json=json.dumps(manifest).encode())
        self.call(
            f"apply {manifest['kind']} {manifest['metadata']['name']}", lambda: self.stub.Apply(request, timeout=20)
        )

    def delete_pod(self, name: str) -> bool:
        """True if this call deleted the pod, False if it was gone already."""
        request = api_pb2.DeleteRequest(resource="pods", name=name)
        try:
            self.call(f"delete pod {name}", lambda: self.stub.Delete(request, timeout=20))
        except RuntimeError as error:
            cause = error.__cause__
            if isinstance(cause, grpc.RpcError) and cause.code() == grpc.StatusCode.NOT_FOUND:
                return False
            raise
        return True

    def pods(self) -> dict[str, dict[str, Any]]:
        request = api_pb2.GetRequest(resource="pods", namespace="default")
        reply = self.call("get pods", lambda: self.stub.Get(request, timeout=30))
        return {pod["metadata"]["name"]: pod for pod in map(json.loads, reply.objects_json)}

    def close(self) -> None:
        self.channel.close()


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def node_manifest(name: str, cpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": str(cpus), "memory": f"{4 * cpus}Gi", "pods": "110"}},
    }


def pod_manifest(name: str, priority: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "soak"}},
        "spec": {
            "priorityClassName": priority,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "main", "image": "pause", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ],
        },
    }


def retention_env(events_retention: float | None) -> dict[str, str]:
    """The services' variables for an events retention (the binder sets the topic, the queue follows)."""
    if events_retention is None:
        return {}
    return {"PODSCHED_EVENTS_RETENTION_MS": str(int(events_retention * 1000))}


class Soak:
    def __init__(self, options: SoakOptions, cluster: KafkaCluster, run_dir: Path, log: Callable[[str], None]) -> None:
        self.options = options
        self.cluster = cluster
        self.rng = random.Random(options.seed)
        self.say = log
        settings = StackSettings.on_free_ports(
            cluster.bootstrap_servers,
            run_dir / "services",
            topic_prefix=f"soak{uuid.uuid4().hex[:8]}.",
            queue_replicas=2,
            extra_env={**retention_env(options.events_retention), **options.service_env},
        )
        self.stack = ServiceStack(settings)
        self.run_dir = run_dir
        self.lock = threading.Lock()  # guards stack.processes: the killer, the supervisor and the sampler share it
        self.halt = threading.Event()
        self.chaos_halt = threading.Event()
        self.counters = Counters()
        self.acknowledged_creates: list[str] = []
        self.acknowledged_deletes: set[str] = set()
        self.errors: list[str] = []
        self.kill_log: list[tuple[float, str, str]] = []  # (seconds since start, kind, process)
        self.samples: list[dict[str, Any]] = []
        self.began = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.began

    # -- the processes ------------------------------------------------------------------------------------

    def start_service(self, name: str) -> None:
        with self.lock:
            self.stack.start_one(name, wait=False)
        self.stack.wait_healthy(name, timeout=180)

    def supervise(self) -> None:
        """Start any service that is not running (the binder exits on its own when a commit fails)."""
        while not self.halt.wait(0.5):
            for name in self.stack.settings.names:
                with self.lock:
                    process = self.stack.processes.get(name)
                    dead = process is not None and process.poll() is not None
                    if dead:
                        self.stack.processes.pop(name)
                    missing = process is None or dead
                if missing:
                    if dead:
                        self.counters.other_restarts[name] = self.counters.other_restarts.get(name, 0) + 1
                        self.say(f"[{self.elapsed():7.1f}s] {name} exited on its own; starting it again")
                    try:
                        self.start_service(name)
                    except Exception as error:  # tried again on the next round
                        self.say(f"[{self.elapsed():7.1f}s] {name} did not start: {error}")

    def queue_leader(self) -> str | None:
        try:
            found = asyncio.run(
                current_leader(self.cluster.bootstrap_servers, self.stack.settings.topic_prefix, QUEUE_ROLE)
            )
        except Exception:  # no answer while a Kafka node is away: a replica at random
            return None
        return found[0] if found else None

    def kill(self, kind: str) -> None:
        if kind == "kafka-node":
            broker = self.rng.choice(self.cluster.brokers)
            down = self.rng.uniform(*self.options.kafka_down)
            self.record_kill(kind, f"kafka-{broker.node_id}")
            broker.kill9()
            self.chaos_halt.wait(down)  # cut short at the end of the run: the audit needs every node
            broker.start(timeout=240)
            self.say(f"[{self.elapsed():7.1f}s] kafka-{broker.node_id} serves again")
            return
        if kind.startswith("queue-"):
            leader = self.queue_leader()
            replicas = [n for n in self.stack.settings.names if service_of(n) == "queue"]
            if leader not in replicas:
                leader = self.rng.choice(replicas)
            name = leader if kind == "queue-leader" else next(n for n in replicas if n != leader)
        else:
            name = kind
        with self.lock:
            if name not in self.stack.processes:
                self.say(f"[{self.elapsed():7.1f}s] {name} is not running; no kill")
                return
            self.record_kill(kind, name)
            self.stack.kill9(name)  # the supervisor starts it again

    def record_kill(self, kind: str, name: str) -> None:
        self.counters.kills[kind] += 1
        self.kill_log.append((round(self.elapsed(), 1), kind, name))
        self.say(f"[{self.elapsed():7.1f}s] kill -9 {name}")

    def chaos(self) -> None:
        if self.options.kill_every <= 0:
            return
        order: list[str] = []
        while True:
            gap = self.rng.uniform(0.5, 1.5) * self.options.kill_every
            if self.chaos_halt.wait(gap):
                return
            if not order:
                order = list(KILL_KINDS)
                self.rng.shuffle(order)
            try:
                self.kill(order.pop())
            except Exception as error:  # a failed kill or restart is a finding
                self.errors.append(f"chaos: {error}")
                self.say(f"[{self.elapsed():7.1f}s] chaos failed: {error}")

    def sample(self) -> None:
        with (self.run_dir / "rss.jsonl").open("w") as out:
            while True:
                with self.lock:
                    groups = {name: process.pid for name, process in self.stack.processes.items()}
                rss: dict[str, int] = {}
                anonymous: dict[str, int] = {}
                pids: dict[str, int] = {}
                for name, pgid in groups.items():
                    for label, pid in group_members(name, pgid).items():
                        value = rss_bytes(pid)
                        if value:
                            rss[label], pids[label] = value, pid
                            anonymous[label] = anonymous_bytes(pid) or 0
                for broker in self.cluster.brokers:
                    pid = broker.pid
                    value = rss_bytes(pid) if pid is not None else None
                    if pid is not None and value:
                        rss[f"kafka-{broker.node_id}"], pids[f"kafka-{broker.node_id}"] = value, pid
                line = {"t": round(self.elapsed(), 1), "rss": rss, "anonymous": anonymous, "pid": pids}
                self.samples.append(line)
                out.write(json.dumps(line) + "\n")
                out.flush()
                if self.halt.wait(self.options.sample_every):
                    return

    # -- the churn ----------------------------------------------------------------------------------------

    def churn_over(self) -> bool:
        if self.elapsed() < self.options.duration or self.counters.created < self.options.min_creates:
            return False
        return not self.options.full_round or all(self.counters.kills.values())

    def churn(self, api: PublicApi) -> None:
        live: collections.deque[str] = collections.deque()
        serial = 0
        pace = 1.0 / self.options.creates_per_second
        next_at = time.monotonic()
        while not self.churn_over():
            next_at += pace
            serial += 1
            high = self.rng.random() < self.options.high_fraction
            name = f"{'high' if high else 'low'}-{serial:06}"
            api.apply(pod_manifest(name, "soak-high" if high else "soak-low"))
            self.acknowledged_creates.append(name)
            self.counters.created += 1
            self.counters.created_high += high
            live.append(name)
            while len(live) > self.options.live_pods:
                oldest = live.popleft()
                if api.delete_pod(oldest):
                    self.counters.deleted += 1
                else:
                    self.counters.already_gone += 1
                self.acknowledged_deletes.add(oldest)
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at = max(next_at, time.monotonic() - 1.0)  # after a stall, do not burst to catch up

    def settle(self, api: PublicApi, timeout: float = 600.0, quiet: float = 5.0) -> None:
        """Until no pod terminates, every pod is bound or marked unschedulable, and nothing moves for `quiet` s."""
        deadline = time.monotonic() + timeout
        last: Any = None
        since = time.monotonic()
        while time.monotonic() < deadline:
            pods = api.pods()
            view = sorted((name, p["spec"].get("nodeName", "")) for name, p in pods.items())
            busy = any(
                p["metadata"].get("deletionTimestamp")
                or (
                    not p["spec"].get("nodeName")
                    and not any(
                        c["type"] == "PodScheduled" and c["status"] == "False"
                        for c in p["status"].get("conditions", [])
                    )
                )
                for p in pods.values()
            )
            if busy or view != last:
                last, since = view, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.5)
        self.errors.append(f"the cluster did not settle within {timeout:.0f}s")

    # -- the run ------------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        options = self.options
        self.say(f"soak: seed {options.seed}, {options.duration:.0f}s, run directory {self.run_dir}")
        self.stack.start(timeout=240)
        self.began = time.monotonic()
        addresses = [self.stack.settings.addresses[n] for n in self.stack.settings.names if service_of(n) == "queue"]
        api = PublicApi(addresses)
        threads = [threading.Thread(target=f, daemon=True) for f in (self.supervise, self.sample)]
        chaos = threading.Thread(target=self.chaos, daemon=True)
        try:
            api.apply(priority_class("soak-low", 100))
            api.apply(priority_class("soak-high", 1000))
            for i in range(options.nodes):
                api.apply(node_manifest(f"node-{i:02}", options.cpus_per_node))
            for thread in [*threads, chaos]:
                thread.start()
            try:
                self.churn(api)
            except Exception as error:  # reported with the audit
                self.errors.append(f"churn: {error}")
            churn_seconds = self.elapsed()
            self.chaos_halt.set()
            chaos.join()
            self.say(f"[{self.elapsed():7.1f}s] churn and chaos stopped; settling")
            self.settle(api)
            final = api.pods()
        finally:
            self.halt.set()
            for thread in threads:
                thread.join(timeout=300)
            api.close()
        self.counters.retries = api.retries
        try:
            log = asyncio.run(read_log(self.cluster.bootstrap_servers, self.stack.settings.topic_prefix, timeout=300))
        finally:
            self.stack.stop()
        victims = {e.involved_object.name for e in log.events if e.reason == "Preempted"}
        kept = [n for n in self.acknowledged_creates if n not in self.acknowledged_deletes and n not in victims]
        acknowledged = [("Pod", "default", n) for n in kept] + [
            ("Node", "", f"node-{i:02}") for i in range(options.nodes)
        ]
        violations = audit(log, acknowledged)
        lost = sorted(set(kept) - set(final))
        resurrected = sorted((self.acknowledged_deletes | victims) & set(final))
        return self.summary(churn_seconds, violations, lost, resurrected, len(victims), len(final), log)

    def summary(
        self,
        churn_seconds: float,
        violations: list[str],
        lost: list[str],
        resurrected: list[str],
        preempted: int,
        live: int,
        log: Any,
    ) -> dict[str, Any]:
        rss = rss_summary(self.samples, churn_seconds, warm_up=self.options.warm_up)
        over = sorted(
            name
            for name, r in rss.items()
            if not name.startswith("kafka-")  # a JVM's RSS grows towards its fixed -Xmx heap: reported, not judged
            and r["slope_mb_per_hour"] is not None
            and r["slope_mb_per_hour"] > self.options.max_slope
        )
        return {
            "seed": self.options.seed,
            "duration_seconds": round(churn_seconds, 1),
            "options": {k: v for k, v in asdict(self.options).items() if k not in ("duration", "seed")},
            "pods": {
                "created": self.counters.created,
                "created_high_priority": self.counters.created_high,
                "deleted": self.counters.deleted,
                "delete_found_gone": self.counters.already_gone,
                "preempted": preempted,
                "live_at_end": live,
            },
            "kills": self.counters.kills,
            "kills_total": sum(self.counters.kills.values()),
            "other_restarts": self.counters.other_restarts,
            "api_retries": self.counters.retries,
            "log": {
                "changes": len(log.changes),
                "events": len(log.events),
                "tombstones": log.tombstones,
                "compacted": log.compacted,
            },
            "violations": len(violations),
            "violation_samples": violations[:20],
            "lost_writes": lost[:20],
            "lost_write_count": len(lost),
            "resurrected_deletes": resurrected[:20],
            "errors": self.errors,
            "rss": rss,
            "slope_over_limit": over,
            "ok": not (violations or lost or resurrected or self.errors or over),
        }


def group_members(service: str, pgid: int) -> dict[str, int]:
    """A service's processes by label: the service under its name, its workers (the preemption service's)
    as <service>-worker-N in order of pid, multiprocessing's resource tracker as <service>-resource-tracker.
    Each is judged on its own: a limit per process would be three times as strict for a group of three."""
    members: dict[str, int] = {}
    workers = 0
    for pid in sorted(group_pids(pgid)):
        if pid == pgid:
            members[service] = pid
        elif b"resource_tracker" in command_line(pid):
            members[f"{service}-resource-tracker"] = pid
        else:
            workers += 1
            members[f"{service}-worker-{workers}"] = pid
    return members


def command_line(pid: int) -> bytes:
    """/proc/PID/cmdline (empty once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def fixed_effects_slope(segments: list[list[tuple[float, float]]]) -> float | None:
    """The least-squares slope of y over t shared by every segment, each with an intercept of its own (a
    restarted process starts from its own baseline: the drop at a restart is not a trend)."""
    numerator = denominator = 0.0
    for points in segments:
        if len(points) < 2:
            continue
        mean_t = sum(t for t, _ in points) / len(points)
        mean_y = sum(y for _, y in points) / len(points)
        numerator += sum((t - mean_t) * (y - mean_y) for t, y in points)
        denominator += sum((t - mean_t) ** 2 for t, _ in points)
    return numerator / denominator if denominator > 0 else None


def rss_summary(
    samples: list[dict[str, Any]], duration: float, warm_up: float | None = None
) -> dict[str, dict[str, Any]]:
    """Per process: first, last and largest RSS (MiB), incarnations seen, over the second half of the run
    the slope of its level and the slope within its incarnations (MB/hour; see the module's docstring)
    and, with `warm_up` (seconds), the slope of its level from then to the end in MiB per 10 minutes, of
    RSS and of its anonymous part (what the process allocated, without mapped code)."""
    names = sorted({name for s in samples for name in s["rss"]})
    result: dict[str, dict[str, Any]] = {}
    for name in names:
        series = [(s["t"], s["rss"][name], s["pid"][name]) for s in samples if name in s["rss"]]
        started: dict[int, float] = {}
        for t, _, pid in series:
            started.setdefault(pid, t)
        second_half = _incarnations(series, started, duration / 2, duration)
        level = level_slope(second_half)
        within = fixed_effects_slope(_long_enough(second_half))
        result[name] = {
            "first_mib": round(series[0][1] / MIB, 1),
            "last_mib": round(series[-1][1] / MIB, 1),
            "max_mib": round(max(v for _, v, _ in series) / MIB, 1),
            "incarnations": len(started),
            "slope_mb_per_hour": None if level is None else round(level, 1),
            "slope_samples": sum(len(points) for points in second_half),
            "within_incarnations_mb_per_hour": None if within is None else round(within, 1),
        }
        if warm_up is not None:
            anonymous = [
                (s["t"], s["anonymous"][name], s["pid"][name]) for s in samples if name in s.get("anonymous", {})
            ]
            for key, values in (("rss", series), ("anonymous", anonymous)):
                after = level_slope(_incarnations(values, started, warm_up, duration))
                # MB/hour to MiB per 10 minutes
                result[name][f"{key}_mib_per_10_min_after_warm_up"] = (
                    None if after is None else round(after * 1e6 / MIB / 6, 2)
                )
    return result


def level_slope(incarnations: list[list[tuple[float, float]]]) -> float | None:
    """The least-squares slope of one line through the samples of every incarnation: whether the level a
    process holds, restarted or not, rises."""
    return fixed_effects_slope([[point for points in incarnations for point in points]])


def _incarnations(
    series: list[tuple[float, float, int]], started: dict[int, float], begin: float, end: float
) -> list[list[tuple[float, float]]]:
    """The samples between `begin` and `end` (seconds) as (hours, MB), by incarnation, each without its
    first RESTART_WARM_UP_SECONDS."""
    by_pid: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    for t, value, pid in series:
        if begin <= t <= end and t - started[pid] >= RESTART_WARM_UP_SECONDS:
            by_pid[pid].append((t / 3600, value / 1e6))
    return list(by_pid.values())


def _long_enough(incarnations: list[list[tuple[float, float]]]) -> list[list[tuple[float, float]]]:
    return [points for points in incarnations if points[-1][0] - points[0][0] >= MIN_SEGMENT_SECONDS / 3600]


def plot(samples: list[dict[str, Any]], kills: list[tuple[float, str, str]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({name for s in samples for name in s["rss"]})
    figure, (services, brokers) = plt.subplots(2, 1, figsize=(11, 8), sharex=True)
    for name in names:
        points = [(s["t"] / 60, s["rss"][name] / MIB) for s in samples if name in s["rss"]]
        axes = brokers if name.startswith("kafka-") else services
        (line,) = axes.plot([t for t, _ in points], [v for _, v in points], label=name, linewidth=1)
        anonymous = [(s["t"] / 60, s["anonymous"][name] / MIB) for s in samples if name in s.get("anonymous", {})]
        if axes is services and anonymous:  # what the process allocated, without its mapped code
            axes.plot(*zip(*anonymous, strict=True), color=line.get_color(), linestyle="--", linewidth=0.7)
    for axes in (services, brokers):
        for t, _, victim in kills:
            is_broker = victim.startswith("kafka-")
            if is_broker == (axes is brokers):
                axes.axvline(t / 60, color="grey", linestyle=":", linewidth=0.8)
        axes.set_ylabel("RSS (MiB)" if axes is brokers else "RSS (MiB; dashed: its anonymous part)")
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(loc="lower right", fontsize=8, ncol=3)
    services.set_title(title, fontsize=10)
    brokers.set_xlabel("minutes (dotted: kill -9 of a process in that panel)")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def run_soak(
    options: SoakOptions, cluster: KafkaCluster, run_dir: Path, out_dir: Path, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """One soak on a running cluster; writes rss.jsonl (in run_dir and out_dir), summary.json and rss.png to out_dir."""
    run_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    soak = Soak(options, cluster, run_dir, log)
    summary = soak.run()
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if out_dir != run_dir:
        (out_dir / "rss.jsonl").write_text((run_dir / "rss.jsonl").read_text())
    title = (
        f"podsched soak: {summary['duration_seconds'] / 60:.0f} min, seed {options.seed}, "
        f"{summary['kills_total']} kills, {summary['pods']['created']} pods created, "
        f"{summary['pods']['preempted']} preempted, {summary['violations']} violations"
    )
    plot(soak.samples, soak.kill_log, out_dir / "rss.png", title)
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    print(json.dumps({k: v for k, v in summary.items() if k != "rss"}))
    print(
        f"{'process':<28}{'first MiB':>10}{'last MiB':>10}{'max MiB':>10}{'MB/hour':>10}{'within':>8}"
        f"{'starts':>8}{'MiB/10min':>11}{'anon':>8}  (MB/hour: the level; MiB/10min: after the warm-up)"
    )

    def figure(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for name, r in summary["rss"].items():
        print(
            f"{name:<28}{r['first_mib']:>10.1f}{r['last_mib']:>10.1f}{r['max_mib']:>10.1f}"
            f"{figure(r['slope_mb_per_hour'], 1):>10}{figure(r['within_incarnations_mb_per_hour'], 1):>8}"
            f"{r['incarnations']:>8}"
            f"{figure(r.get('rss_mib_per_10_min_after_warm_up'), 2):>11}"
            f"{figure(r.get('anonymous_mib_per_10_min_after_warm_up'), 2):>8}"
        )
    pods = summary["pods"]
    print(
        f"pods created {pods['created']}, deleted {pods['deleted']}, preempted {pods['preempted']}; "
        f"kills {summary['kills']}; other restarts {summary['other_restarts']}; "
        f"violations {summary['violations']}; lost writes {summary['lost_write_count']}; "
        f"{'OK' if summary['ok'] else 'FAILED'}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=parse_duration, required=True, help="seconds, or e.g. 90s, 30m, 1h")
    parser.add_argument("--seed", type=int, default=None, help="default: a random one (printed)")
    parser.add_argument("--out-dir", type=Path, default=Path(".cache/soak/latest"))
    parser.add_argument("--kill-every", type=float, default=60.0, help="mean seconds between kills; 0: none")
    parser.add_argument("--live-pods", type=int, default=120)
    parser.add_argument("--rate", type=float, default=2.0, help="pods created per second")
    parser.add_argument(
        "--max-slope", type=float, default=50.0, help="MB/hour a process's level may rise over the second half"
    )
    parser.add_argument(
        "--warm-up",
        type=parse_duration,
        default=600.0,
        help="from then on the summary gives each process's growth in MiB per 10 minutes (default 10m)",
    )
    parser.add_argument(
        "--events-retention",
        type=parse_duration,
        default=None,
        help="how long events are kept (topic and memory), e.g. 15m; default: the services' 1 h",
    )
    parser.add_argument(
        "--service-env",
        type=service_variable,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable for every service (repeatable), e.g. PODSCHED_MEMORY_TRACE_SECONDS=60",
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"soak seed {seed} (repeat with --seed {seed})", flush=True)
    options = SoakOptions(
        duration=args.duration, seed=seed, kill_every=args.kill_every, live_pods=args.live_pods,
        creates_per_second=args.rate, max_slope=args.max_slope, events_retention=args.events_retention,
        service_env=dict(args.service_env), warm_up=args.warm_up,
    )  # fmt: skip
    ensure_kafka_installed()
    run_dir = Path(tempfile.mkdtemp(prefix="podsched-soak-"))
    cluster = KafkaCluster(run_dir / "kafka")
    cluster.start(timeout=240)
    try:
        summary = run_soak(options, cluster, run_dir, args.out_dir, log=lambda line: print(line, flush=True))
    finally:
        cluster.stop()
    print_summary(summary)
    print(f"wrote {args.out_dir}/summary.json, rss.jsonl and rss.png (run directory {run_dir})")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
