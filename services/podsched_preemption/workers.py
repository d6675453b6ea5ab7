"""Worker processes that run SelectVictimsOnNode over shards of the candidate nodes.

Each worker is a separate process (the GIL makes one process one core) with its own replica of the
cluster following the log, so a request carries only the pod, the shard's node names and the
resource version to wait for, never cluster state. The coordinator merges the shards' outcomes in
node order (podsched.preemption.sharding), which gives the answer a single worker would give."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import multiprocessing
import multiprocessing.connection
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from podsched.cluster.state import Cluster
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo
from podsched.framework.runtime import Framework
from podsched.framework.status import Code, Status
from podsched.plugins.registry import build_framework, victim_policy_of
from podsched.preemption.sharding import run_shard
from podsched.preemption.victims import NodeVictims
from podsched.queue.nominator import assumed_nominations
from podsched.scheduler.assumed import AssumedPods
from podsched.scheduler.profile import Profiles
from podsched_proto.filter.v1 import filter_pb2
from podsched_service import gc_tuning, memory_trace, telemetry
from podsched_service.scheduling import ClusterCopy, assume_binds, load_scheduler_config, pod_to_place

from .instrumentation import ShardTelemetry

log = logging.getLogger(__name__)

WORKER_START_TIMEOUT = 120.0
SHARD_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    bootstrap: str
    prefix: str
    scheduler_config: str
    otlp_endpoint: str = ""
    trace_sample_ratio: float = 1.0
    log_format: str = "json"


# One node's outcome on the wire: (node, victim uids, PDB violations, status or None).
WireOutcome = tuple[str, list[str], int, tuple[int, list[str], str] | None]


class ShardObserver(Protocol):
    """What a worker reports of each shard (instrumentation.ShardTelemetry)."""

    def selecting_victims(
        self, worker: int, pod_uid: str, nodes: int, carrier: Mapping[str, str]
    ) -> AbstractContextManager[None]: ...
    def shard_answered(self, candidates: int) -> None: ...
    def shard_failed(self, error: Exception) -> None: ...


def _worker_main(settings: dict[str, Any], conn: multiprocessing.connection.Connection, index: int) -> None:
    gc_tuning.tune_for_service()
    parsed = WorkerSettings(**settings)
    telemetry.configure_logging(f"podsched-preemption-worker-{index}", parsed.log_format)
    # The workers' spans belong to the preemption service: same service.name as the coordinator.
    shutdown_tracing = telemetry.setup_tracing("podsched-preemption", parsed.otlp_endpoint, parsed.trace_sample_ratio)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve_worker(parsed, conn, index))
    finally:
        shutdown_tracing()


async def _serve_worker(
    settings: WorkerSettings,
    conn: multiprocessing.connection.Connection,
    index: int,
    observer: ShardObserver | None = None,
) -> None:
    observer = observer or ShardTelemetry()
    # The memory tracer (a debugging aid, off by default) in each worker too: each holds a copy of the
    # cluster, as the services do. The task is held here (the loop keeps only a weak reference).
    tracer = memory_trace.start_from_environment(f"podsched-preemption-worker-{index}")
    scheduler_config = load_scheduler_config(settings.scheduler_config)
    copy = ClusterCopy(settings.bootstrap, settings.prefix, scheduler_config=scheduler_config)
    # The dry run filters with the plugins of the pod's profile (its spec.schedulerName).
    frameworks = Profiles(
        scheduler_config,
        lambda profile: build_framework(profile, copy.nominator, priority_classes=copy.cluster.priority_classes),
    )
    await copy.replica.start()
    conn.send("ready")
    loop = asyncio.get_running_loop()
    # Each worker follows the log with its own event loop and tuned collector: the same timed full
    # collection as the services (gc_tuning), or its cyclic garbage pins pymalloc arenas as theirs did.
    collector = loop.create_task(gc_tuning.collect_periodically(), name="gc")
    requests: asyncio.Queue[Any] = asyncio.Queue()

    def readable() -> None:
        try:
            requests.put_nowait(conn.recv())
        except (EOFError, OSError):  # the coordinator is gone
            requests.put_nowait(None)

    loop.add_reader(conn.fileno(), readable)
    try:
        while True:
            request = await requests.get()
            if request is None:
                return
            request_id, pod_uid, pod_json, node_names, min_version, now, wanted, trace_carrier, assumed, binds = request
            with observer.selecting_victims(index, pod_uid, len(node_names), trace_carrier):
                try:
                    await copy.replica.wait_for(min_version)
                    with assumed_nominations(copy.nominator, copy.cluster.pods_by_uid, assumed):
                        # The coordinator's binds under way, as its own dry run assumes them.
                        placed = AssumedPods(copy.cluster.snapshot(), copy.nominator, lambda node_name: None)
                        try:
                            wire = [filter_pb2.AssumedBind(pod_uid=uid, node_name=node) for uid, node in binds]
                            assume_binds(placed, copy.cluster, wire)
                            outcomes = _run(copy.cluster, frameworks, pod_uid, pod_json, node_names, now, wanted)
                        finally:
                            placed.forget_all()
                    observer.shard_answered(sum(1 for outcome in outcomes if outcome[3] is None))
                    conn.send((request_id, "ok", outcomes))
                except Exception as error:  # report, keep serving: the coordinator fails the RPC
                    log.exception("shard failed")
                    observer.shard_failed(error)
                    conn.send((request_id, "error", f"{type(error).__name__}: {error}"))
    finally:  # the coordinator is gone (or the process stops)
        collector.cancel()
        if tracer is not None:
            tracer.cancel()
        loop.remove_reader(conn.fileno())
        await copy.replica.stop()


def _run(
    cluster: Cluster,
    frameworks: Profiles[Framework],
    pod_uid: str,
    pod_json: bytes,
    node_names: list[str],
    now: float,
    wanted: int,
) -> list[WireOutcome]:
    pod = pod_to_place(cluster, filter_pb2.PodToPlace(uid=pod_uid, pod_json=pod_json))
    framework = frameworks.for_pod(pod)
    if framework is None:  # the coordinator only asks for pods of a profile
        raise ValueError(f'profile not found for scheduler name "{pod.spec.scheduler_name}"')
    snapshot = cluster.snapshot()
    state = CycleState()
    framework.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
    nodes = [info for name in node_names if (info := snapshot.get(name)) is not None]
    policy = victim_policy_of(framework, now)
    outcomes = run_shard(framework, state, pod, nodes, cluster.pdb_list(), now, wanted, policy)
    return [
        (
            o.node_name,
            [victim.uid for victim in o.victims],
            o.num_pdb_violations,
            None if o.status is None else (int(o.status.code), list(o.status.reasons), o.status.plugin),
        )
        for o in outcomes
    ]


class WorkerPool:
    """N worker processes; `run_shards` sends one shard to each and waits for all."""

    def __init__(self, count: int, settings: WorkerSettings) -> None:
        self.count = count
        self.settings = settings
        self.processes: list[multiprocessing.process.BaseProcess] = []
        self._request_ids = itertools.count(1)
        self.connections: list[multiprocessing.connection.Connection] = []

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")  # a clean interpreter: no inherited event loop
        for index in range(self.count):
            parent, child = context.Pipe()
            process = context.Process(
                target=_worker_main, args=(asdict(self.settings), child, index), name=f"preemption-worker-{index}"
            )
            process.daemon = True
            process.start()
            child.close()
            self.processes.append(process)
            self.connections.append(parent)

    async def wait_ready(self) -> None:
        for index, conn in enumerate(self.connections):
            try:
                async with asyncio.timeout(WORKER_START_TIMEOUT):
                    while not conn.poll():
                        if not self.processes[index].is_alive():
                            exitcode = self.processes[index].exitcode
                            raise RuntimeError(f"preemption worker {index} exited with {exitcode}")
                        await asyncio.sleep(0.05)
            except TimeoutError:
                raise TimeoutError(f"preemption worker {index} not ready after {WORKER_START_TIMEOUT}s") from None
            assert conn.recv() == "ready"

    def run_shards(
        self,
        shards: Sequence[Sequence[NodeInfo]],
        wanted: int,
        pod_uid: str,
        pod_json: bytes,
        min_version: int,
        now: float,
        victims_by_uid: dict[str, Any],
        assumed: Sequence[tuple[str, str]] = (),
        binds: Sequence[tuple[str, str]] = (),
        trace_carrier: Mapping[str, str] | None = None,
    ) -> list[list[NodeVictims]]:
        """Blocking: the coordinator's PostFilter is one synchronous Evaluator.preempt call. Each
        worker's span joins the trace `trace_carrier` names."""
        request_id = next(self._request_ids)
        used = self.connections[: len(shards)]
        carrier = dict(trace_carrier or {})
        for conn, shard in zip(used, shards, strict=True):
            names = [info.name for info in shard]
            conn.send(
                (request_id, pod_uid, pod_json, names, min_version, now, wanted, carrier, list(assumed), list(binds))
            )
        results: list[list[NodeVictims]] = []
        for index, conn in enumerate(used):
            while True:  # skip late answers to an earlier request that timed out
                if not conn.poll(SHARD_TIMEOUT):
                    raise TimeoutError(f"preemption worker {index} did not answer in {SHARD_TIMEOUT}s")
                answer_id, kind, payload = conn.recv()
                if answer_id == request_id:
                    break
            if kind != "ok":
                raise RuntimeError(f"preemption worker {index}: {payload}")
            results.append([_outcome(item, victims_by_uid) for item in payload])
        return results

    def stop(self) -> None:
        for conn in self.connections:
            conn.close()
        for process in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()


def _outcome(item: WireOutcome, pods_by_uid: dict[str, Any]) -> NodeVictims:
    node_name, victim_uids, violations, status = item
    victims = [pods_by_uid[uid] for uid in victim_uids if uid in pods_by_uid]
    return NodeVictims(
        node_name, victims, violations, None if status is None else Status(Code(status[0]), status[1], status[2])
    )
