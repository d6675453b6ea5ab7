"""The queue's connections to the filter, preemption and binder services, and the scheduler's
interfaces to them (scheduler.Filter, Preemption, Binder) over those connections."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc
from opentelemetry import trace

from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc
from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from podsched_service import telemetry
from podsched_service.server import CHANNEL_OPTIONS
from podsched_service.tls import ClientTLS

from .binder_writes import Outcome, SentTogether
from .config import QueueConfig

RPC_TIMEOUT = 60.0


# Several addresses (IP:port, comma-separated): gRPC's pick_first takes the first that accepts a
# connection and moves on when it goes away. A standby binder keeps its port closed until it leads, so
# the queue reaches whichever binder leads. Reconnect quickly: a new leader opens its port seconds
# after the old one died, and gRPC's default backoff would grow past that.
FAILOVER_OPTIONS = (("grpc.initial_reconnect_backoff_ms", 250), ("grpc.max_reconnect_backoff_ms", 2000))


def channel_target(address: str) -> str:
    """gRPC's target for one address or a comma-separated list of IP:port addresses."""
    return f"ipv4:{address}" if "," in address else address


def peer_channel(config: QueueConfig, address: str) -> grpc.aio.Channel:
    """A channel to the filter, preemption or binder service (`address`: one, or several IP:port
    comma-separated): TLS when PODSCHED_INTERNAL_TLS_CA_FILE is set (with the queue's client
    certificate, if configured, for services that require mutual TLS)."""
    interceptors = telemetry.client_interceptors()
    target, options = channel_target(address), (*CHANNEL_OPTIONS, *FAILOVER_OPTIONS)
    if not config.internal_tls_ca_file:
        return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)
    tls = ClientTLS(config.internal_tls_ca_file, config.internal_tls_cert_file, config.internal_tls_key_file)
    try:
        credentials = tls.credentials()
    except ValueError as error:
        raise ValueError(f"PODSCHED_INTERNAL_TLS_CA_FILE/CERT_FILE/KEY_FILE: {error}") from None
    return grpc.aio.secure_channel(target, credentials, options=options, interceptors=interceptors)


class FilterClient:
    """scheduler.Filter over the filter service."""

    def __init__(self, stub: filter_pb2_grpc.FilterStub) -> None:
        self.stub = stub

    async def find_nodes(self, request: filter_pb2.FindNodesRequest) -> filter_pb2.FindNodesResponse:
        return await self.stub.FindNodes(request, timeout=RPC_TIMEOUT)


class PreemptionClient:
    """scheduler.Preemption over the preemption service."""

    def __init__(self, stub: preemption_pb2_grpc.PreemptionStub) -> None:
        self.stub = stub

    async def post_filter_run(
        self, request: preemption_pb2.PostFilterRunRequest
    ) -> preemption_pb2.PostFilterRunResponse:
        return await self.stub.PostFilterRun(request, timeout=RPC_TIMEOUT)

    async def schedule_pod_groups(
        self, request: preemption_pb2.SchedulePodGroupsRequest
    ) -> preemption_pb2.SchedulePodGroupsResponse:
        return await self.stub.SchedulePodGroups(request, timeout=RPC_TIMEOUT)


class BinderClient:
    """scheduler.Binder over the binder service; every decision carries the leader epoch the queue
    schedules under (the binder refuses a deposed leader's). Failures recorded in the same turn of
    the event loop (a PostFilterRun's decisions, a batch's refused binds) leave in one
    RecordFailures, and pod-group results (a SchedulePodGroups batch's) in one
    RecordPodGroupResults: each still answered, or refused, as its own call would be."""

    def __init__(self, stub: binder_pb2_grpc.BinderStub, leader_epoch: Callable[[], int]) -> None:
        self.stub = stub
        self.leader_epoch = leader_epoch
        self._failures: SentTogether[binder_pb2.RecordFailureRequest, binder_pb2.RecordFailureResponse] = SentTogether(
            self._record_failures
        )
        self._pod_group_results: SentTogether[
            binder_pb2.RecordPodGroupResultRequest, binder_pb2.RecordPodGroupResultResponse
        ] = SentTogether(self._record_pod_group_results)

    async def bind(self, request: binder_pb2.BindRequest) -> binder_pb2.BindResponse:
        request.leader_epoch = self.leader_epoch()
        return await self.stub.Bind(request, timeout=RPC_TIMEOUT)

    async def record_failure(self, request: binder_pb2.RecordFailureRequest) -> binder_pb2.RecordFailureResponse:
        request.leader_epoch = self.leader_epoch()
        request.trace_context.update(telemetry.carrier_of(trace.get_current_span()))
        return await self._failures.call(request)

    async def record_pod_group_result(
        self, request: binder_pb2.RecordPodGroupResultRequest
    ) -> binder_pb2.RecordPodGroupResultResponse:
        request.leader_epoch = self.leader_epoch()
        request.trace_context.update(telemetry.carrier_of(trace.get_current_span()))
        return await self._pod_group_results.call(request)

    async def _record_failures(self, failures: list[binder_pb2.RecordFailureRequest]) -> Sequence[Outcome]:
        request = binder_pb2.RecordFailuresRequest(failures=failures)
        return (await self.stub.RecordFailures(request, timeout=RPC_TIMEOUT)).outcomes

    async def _record_pod_group_results(
        self, results: list[binder_pb2.RecordPodGroupResultRequest]
    ) -> Sequence[Outcome]:
        request = binder_pb2.RecordPodGroupResultsRequest(results=results)
        return (await self.stub.RecordPodGroupResults(request, timeout=RPC_TIMEOUT)).outcomes
