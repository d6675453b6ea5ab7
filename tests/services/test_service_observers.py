"""The binder's, the filter's and the preemption service's business code report through their
observers and read time from their injected clock (services/podsched_*/instrumentation.py,
podsched_service.clock). Each servicer runs in this process on a real gRPC server (an ephemeral
port) over the session's real Kafka broker, with a fake clock and an observer that records every hook
it is called with before handing it to the real one. The spans and metrics the real observers make
end to end are checked by test_observability.py against a real Jaeger."""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
import yaml
from prometheus_client import REGISTRY

from manifest_dicts import COMMON, node, pod
from podsched.api.timestamps import format_timestamp
from podsched.cluster.store import REMOVED
from podsched_binder.config import BinderConfig
from podsched_binder.instrumentation import BinderTelemetry
from podsched_binder.service import Binder, BinderServicer
from podsched_devstack.kafka import KafkaBroker
from podsched_filter.config import FilterConfig
from podsched_filter.instrumentation import FilterTelemetry
from podsched_filter.service import FilterServicer
from podsched_preemption.config import PreemptionConfig
from podsched_preemption.instrumentation import PostFilterTelemetry, ShardTelemetry
from podsched_preemption.service import PreemptionServicer
from podsched_preemption.workers import WorkerSettings, _serve_worker
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc
from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from podsched_service import telemetry

START = 1_800_000_000.0  # the fake wall clock's start, far from the machine's own time
STEP = 0.25  # each read of the fake monotonic clock is this many seconds after the previous one
GRACE = 30  # the victim's terminationGracePeriodSeconds
BINDER_SERVICE = "podsched.binder.v1.Binder"


class SteppingClock:
    """Wall time stands still until the test moves it; each monotonic read is STEP after the last, so
    any duration measured between two reads is exactly STEP."""

    def __init__(self) -> None:
        self.now = START
        self.ticks = 0.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        self.ticks += STEP
        return self.ticks


class Recording:
    """An observer that keeps (hook, arguments) of every call, in order, and hands each call to the
    real observer `inner` (so spans and metrics are still made)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, hook: str) -> Callable[..., Any]:
        method = getattr(self.inner, hook)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((hook, args + tuple(kwargs.values())))
            return method(*args, **kwargs)

        return recorded

    def args_of(self, hook: str) -> list[tuple[Any, ...]]:
        return [args for name, args in self.calls if name == hook]


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@dataclass
class Services:
    clock: SteppingClock
    binder: Binder
    binder_observer: Recording
    filter_observer: Recording
    preemption_observer: Recording
    binder_stub: binder_pb2_grpc.BinderStub
    filter_stub: filter_pb2_grpc.FilterStub
    preemption_stub: preemption_pb2_grpc.PreemptionStub
    filter: FilterServicer
    preemption: PreemptionServicer

    async def write(self, manifest: dict[str, Any]) -> binder_pb2.WriteResponse:
        return await self.binder_stub.Write(binder_pb2.WriteRequest(object_json=json.dumps(manifest).encode()))


@contextlib.asynccontextmanager
async def in_process_services(kafka: KafkaBroker) -> AsyncIterator[Services]:
    """The binder, filter and preemption servicers on their own topics, each on a real gRPC server,
    sharing one fake clock; the Binder RPCs are timed by the gRPC interceptors, the server's and the
    client's, each on a fake clock of its own."""
    prefix = f"t{uuid.uuid4().hex[:10]}."
    common: dict[str, Any] = {"kafka_bootstrap_servers": kafka.bootstrap_servers, "topic_prefix": prefix}
    clock = SteppingClock()
    binder_observer = Recording(BinderTelemetry(clock))
    binder = Binder(
        BinderConfig(**common, leader_election=False, transactional_id=f"{prefix}binder"),
        clock=clock,
        observer=binder_observer,
    )
    await binder.start()
    filter_observer = Recording(FilterTelemetry())
    filter_servicer = FilterServicer(FilterConfig(**common), clock=clock, observer=filter_observer)
    preemption_observer = Recording(PostFilterTelemetry())
    preemption = PreemptionServicer(PreemptionConfig(**common, workers=0), clock=clock, observer=preemption_observer)
    await filter_servicer.start()
    await preemption.start()
    servers: list[grpc.aio.Server] = []
    channels: list[grpc.aio.Channel] = []

    async def serve(add: Callable[[grpc.aio.Server], None], timed: bool = False) -> grpc.aio.Channel:
        server = grpc.aio.server(
            interceptors=telemetry.server_interceptors("podsched-binder", clock=SteppingClock()) if timed else []
        )
        add(server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        servers.append(server)
        client_interceptors = telemetry.client_interceptors(clock=SteppingClock()) if timed else []
        channels.append(grpc.aio.insecure_channel(f"127.0.0.1:{port}", interceptors=client_interceptors))
        return channels[-1]

    binder_channel = await serve(
        lambda s: binder_pb2_grpc.add_BinderServicer_to_server(BinderServicer(binder), s), timed=True
    )
    filter_channel = await serve(lambda s: filter_pb2_grpc.add_FilterServicer_to_server(filter_servicer, s))
    preemption_channel = await serve(lambda s: preemption_pb2_grpc.add_PreemptionServicer_to_server(preemption, s))
    try:
        yield Services(
            clock,
            binder,
            binder_observer,
            filter_observer,
            preemption_observer,
            binder_pb2_grpc.BinderStub(binder_channel),
            filter_pb2_grpc.FilterStub(filter_channel),
            preemption_pb2_grpc.PreemptionStub(preemption_channel),
            filter_servicer,
            preemption,
        )
    finally:
        for channel in channels:
            await channel.close()
        for server in servers:
            await server.stop(None)
        await preemption.stop()
        await filter_servicer.stop()
        await binder.stop()


async def until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def run(scenario: Callable[[], Any]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=120))


def test_a_preemption_is_reported_by_each_service_at_each_step_on_the_injected_clock(kafka: KafkaBroker) -> None:
    """Write, FindNodes, PostFilter, RecordFailure, the victim's removal after its grace period and
    the preemptor's Bind: each step calls its hook, every timestamp is the fake wall clock's, every
    duration the fake monotonic clock's."""

    async def scenario() -> None:
        async with in_process_services(kafka) as s:
            commits_before = sample("podsched_kafka_commit_duration_seconds_count")
            commit_seconds_before = sample("podsched_kafka_commit_duration_seconds_sum")
            write_rpc = {"grpc_service": BINDER_SERVICE, "grpc_method": "Write"}
            writes_before = sample("grpc_server_handling_seconds_count", **write_rpc)
            write_seconds_before = sample("grpc_server_handling_seconds_sum", **write_rpc)
            client_seconds_before = sample("grpc_client_handling_seconds_sum", **write_rpc)
            binds_before = sample("podsched_binds_total", result="bound")
            refused_before = sample("podsched_binds_total", result="refused")
            attempts_before = sample("scheduler_preemption_attempts_total")

            # --- writes: the cluster's timestamps are the fake wall clock's ---------------------------
            for document in yaml.safe_load_all(COMMON.read_text()):
                await s.write(document)
            await s.write(node("n1", cpu="2"))
            victim = await s.write(pod("victim", "low-priority", "2", node_name="n1", grace=GRACE))
            preemptor = await s.write(pod("preemptor", "high-priority", "2"))
            pending = await s.write(pod("pending", "low-priority", "1"))
            stored = json.loads(preemptor.object_json)
            assert stored["metadata"]["creationTimestamp"] == format_timestamp(START)
            written = 4 + 1 + 3  # the priority classes, the node, the pods
            assert len(s.binder_observer.args_of("within")) >= written  # each operation ran in its RPC's trace
            changes = [args[0] for args in s.binder_observer.args_of("change_recorded")]
            assert {(c.kind, c.new.name) for c in changes if c.new is not None} >= {
                ("Node", "n1"),
                ("Pod", "victim"),
                ("Pod", "preemptor"),
            }
            # Every commit was timed on the fake monotonic clock: STEP each; every Write RPC on the
            # server interceptor's fake clock and on the client interceptor's, STEP each.
            commits = sample("podsched_kafka_commit_duration_seconds_count") - commits_before
            assert commits == len(s.binder_observer.args_of("committing")) >= 1
            assert sample("podsched_kafka_commit_duration_seconds_sum") - commit_seconds_before == commits * STEP
            writes = sample("grpc_server_handling_seconds_count", **write_rpc) - writes_before
            assert writes == written
            assert sample("grpc_server_handling_seconds_sum", **write_rpc) - write_seconds_before == writes * STEP
            assert sample("grpc_client_handling_seconds_sum", **write_rpc) - client_seconds_before == writes * STEP

            # --- Filter: the pod fits nowhere; its outcome is reported -------------------------------
            version = preemptor.resource_version
            ref = filter_pb2.PodToPlace(uid=preemptor.uid)
            found = await s.filter_stub.FindNodes(filter_pb2.FindNodesRequest(pods=[ref], min_resource_version=version))
            (placement,) = found.placements
            assert not placement.node_name and placement.feasible_nodes == 0
            ((placed_pod, placed, carrier, single),) = s.filter_observer.args_of("placed")
            assert placed_pod.name == "preemptor" and placed == placement and not carrier and single

            # --- PostFilter: the decision and its dry run's path are reported -----------------------
            decision = await s.preemption_stub.PostFilter(
                preemption_pb2.PostFilterRequest(
                    pod=ref,
                    filter_result=placement,
                    min_resource_version=version,
                    filter_resource_version=found.resource_version,
                )
            )
            assert decision.nominated_node_name == "n1" and [v.name for v in decision.victims] == ["victim"]
            ((decided_pod, decided, dry_run),) = s.preemption_observer.args_of("decided")
            assert decided_pod.name == "preemptor" and decided == decision and dry_run is False
            assert s.preemption_observer.args_of("dry_run_path") == [("vectorized",)]
            assert sample("scheduler_preemption_attempts_total") - attempts_before == 1

            # --- RecordFailure: a refused one leaves its span as the refusal it is --------------------
            # (a pending pod may not preempt one of its own priority: FAILED_PRECONDITION, nothing
            # changed, whatever context managers the refusal passed through)
            refused = binder_pb2.RecordFailureRequest(
                pod_uid=pending.uid, message="refused", nominated_node_name="n1", victim_uids=[victim.uid]
            )
            with pytest.raises(grpc.aio.AioRpcError) as refusal:
                await s.binder_stub.RecordFailure(refused)
            assert refusal.value.code() == grpc.StatusCode.FAILED_PRECONDITION, refusal.value.details()
            assert s.binder_observer.args_of("recording_failure") == [(refused, s.binder.cluster.pods_by_uid)]

            # --- RecordFailure: the eviction and the events are reported ------------------------------
            await s.binder_stub.RecordFailure(
                binder_pb2.RecordFailureRequest(
                    pod_uid=preemptor.uid,
                    message=decision.message,
                    nominated_node_name="n1",
                    victim_uids=[victim.uid],
                )
            )
            (_, (failure, _)) = s.binder_observer.args_of("recording_failure")
            assert failure.pod_uid == preemptor.uid and list(failure.victim_uids) == [victim.uid]
            reasons = {args[0].reason for args in s.binder_observer.args_of("event_recorded")}
            assert {"Preempted", "FailedScheduling"} <= reasons

            # --- the grace period ends on the fake clock, not after thirty real seconds -------------
            def victim_removed() -> bool:
                return any(
                    c.type == REMOVED and c.old.name == "victim"
                    for (c,) in s.binder_observer.args_of("change_recorded")
                )

            assert not victim_removed()
            s.clock.now += GRACE
            await s.write(node("n2", cpu="1"))  # any batch wakes the binder's termination timer
            await until(victim_removed, "the victim's removal once the fake clock passed its grace period")

            # --- Bind: bound, then refused, each reported -------------------------------------------
            bindings = [binder_pb2.Binding(pod_uid=preemptor.uid, node_name="n1")]
            first = await s.binder_stub.Bind(binder_pb2.BindRequest(bindings=bindings))
            again = await s.binder_stub.Bind(binder_pb2.BindRequest(bindings=bindings))
            assert first.results[0].bound and not again.results[0].bound
            bound_calls = s.binder_observer.args_of("binding")
            assert [(context, bound_pod.name, node_name) for context, bound_pod, node_name in bound_calls] == [
                (None, "preemptor", "n1"),
                (None, "preemptor", "n1"),
            ]
            assert sample("podsched_binds_total", result="bound") - binds_before == 1
            assert sample("podsched_binds_total", result="refused") - refused_before == 1
            # Each batch was counted once and left its observer's per-batch state behind.
            assert len(s.binder_observer.args_of("batch_started")) == len(s.binder_observer.args_of("batch_applied"))

    run(scenario)


def test_a_preemption_worker_reports_each_shard_it_runs(kafka: KafkaBroker) -> None:
    """A worker's loop (podsched_preemption.workers), in this process on a real pipe, selects the
    victims of one shard and reports it: the shard's span is opened for its worker, pod and nodes,
    and the candidates it found are reported; a shard that fails is reported as failed."""

    async def scenario() -> None:
        async with in_process_services(kafka) as s:
            for document in yaml.safe_load_all(COMMON.read_text()):
                await s.write(document)
            await s.write(node("n1", cpu="2"))
            await s.write(pod("victim", "low-priority", "2", node_name="n1"))
            preemptor = await s.write(pod("preemptor", "high-priority", "2"))
            observer = Recording(ShardTelemetry())
            coordinator, worker_end = multiprocessing.Pipe()
            settings = WorkerSettings(s.binder.config.kafka_bootstrap_servers, s.binder.config.topic_prefix, "")
            worker = asyncio.create_task(_serve_worker(settings, worker_end, 7, observer))
            try:
                await until(coordinator.poll, "the worker's ready")
                assert coordinator.recv() == "ready"
                shard = (1, preemptor.uid, b"", ["n1"], preemptor.resource_version, START, 1, {}, [], [])
                coordinator.send(shard)
                await until(coordinator.poll, "the shard's answer")
                answer_id, kind, outcomes = coordinator.recv()
                assert (answer_id, kind) == (1, "ok") and outcomes[0][0] == "n1" and outcomes[0][1]
                gone = (2, "no-such-pod", b"", ["n1"], preemptor.resource_version, START, 1, {}, [], [])
                coordinator.send(gone)
                await until(coordinator.poll, "the failed shard's answer")
                assert coordinator.recv()[:2] == (2, "error")
            finally:
                coordinator.close()
                await asyncio.wait_for(worker, timeout=10)  # the coordinator is gone: the worker returns
                worker_end.close()
            assert observer.args_of("selecting_victims") == [
                (7, preemptor.uid, 1, {}),
                (7, "no-such-pod", 1, {}),
            ]
            assert observer.args_of("shard_answered") == [(1,)]
            ((error,),) = observer.args_of("shard_failed")
            assert "no-such-pod" in str(error)

    run(scenario)
