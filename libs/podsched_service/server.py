"""The gRPC server every service runs: its servicers plus health checking and reflection, and a
clean lifecycle.

start: the service rebuilds its state from Kafka, then opens its port and reports SERVING.
SIGTERM/SIGINT: NOT_SERVING (load balancers stop sending), drain in-flight RPCs for the grace
period, then the service's own shutdown (the binder commits its last transaction; consumers and
producers close and flush)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
import uvloop
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from podsched_service import gc_tuning, memory_trace, telemetry
from podsched_service.config import load_config
from podsched_service.tls import ClientGroupGate, ServerTLS

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]
CHANNEL_OPTIONS = SERVER_OPTIONS


Lifecycle = Callable[[], Awaitable[None]]
# Registers a service's servicers on the server; returns (its full gRPC service name, start, stop).
Build = Callable[[Any, grpc.aio.Server], tuple[str, Lifecycle, Lifecycle]]


def run_service(name: str, config_class: type, build: Build) -> None:
    """`python -m podsched_<service>`: configuration from PODSCHED_*, telemetry (logs, traces,
    metrics endpoint), then serve until SIGTERM."""
    gc_tuning.tune_for_service()
    try:
        config = load_config(config_class)
        telemetry.configure_logging(name, config.log_format)
        tls = ServerTLS.from_config(config)
        credentials = tls.credentials() if tls is not None else None
    except ValueError as error:
        sys.exit(f"{name}: {error}")
    shutdown_tracing = telemetry.setup_tracing(name, config.otlp_endpoint, config.trace_sample_ratio)
    telemetry.start_metrics_server(config.metrics_address)
    if config.metrics_address:
        log.info("%s metrics on http://%s/metrics", name, config.metrics_address)

    async def serve() -> None:
        try:
            # A debugging aid, off by default; the task is held here (the loop keeps only a weak reference).
            tracer = memory_trace.start_from_environment(name)
        except ValueError as error:
            sys.exit(f"{name}: {error}")
        collector = asyncio.get_running_loop().create_task(gc_tuning.collect_periodically(), name="gc")
        host = ServiceHost(name, config.listen_address, config.shutdown_grace_seconds, tls, credentials)
        try:
            service_name, start, stop = build(config, host.server)
        except ValueError as error:  # a file the configuration names is unusable (tokens, policy, TLS)
            sys.exit(f"{name}: {error}")
        host.add_service_names([service_name])
        await host.run(start, stop)
        collector.cancel()
        if tracer is not None:
            tracer.cancel()

    try:
        # uvloop: asyncio's API on libuv, about half the CPU per turn of the loop, which every
        # service takes for each Kafka fetch, produce and RPC.
        uvloop.run(serve())
    finally:
        shutdown_tracing()  # export what the last requests recorded


class ServiceHost:
    """Hosts one service: servicers are added to `server`, `run` serves until a signal arrives.
    With `tls` the port serves TLS (`credentials`, read from its files), mutual TLS if it has a
    client CA; its client groups, if any, gate every RPC but health checks."""

    def __init__(
        self,
        name: str,
        listen_address: str,
        grace: float,
        tls: ServerTLS | None = None,
        credentials: grpc.ServerCredentials | None = None,
    ) -> None:
        self.name = name
        self.listen_address = listen_address
        self.grace = grace
        self.tls = tls
        self.credentials = credentials if credentials is not None or tls is None else tls.credentials()
        interceptors = telemetry.server_interceptors(name)
        if tls is not None and tls.client_groups:
            interceptors.append(ClientGroupGate(tls.client_groups))
        self.server = grpc.aio.server(options=SERVER_OPTIONS, interceptors=interceptors)
        self.health = HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.service_names: list[str] = []
        self.stopping = asyncio.Event()

    def add_service_names(self, service_names: Sequence[str]) -> None:
        """The services whose health is reported and which reflection lists (with health and reflection)."""
        self.service_names += service_names
        reflection.enable_server_reflection(
            [*self.service_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
            self.server,
        )

    async def _set_all(self, status: health_pb2.HealthCheckResponse.ServingStatus.ValueType) -> None:
        for service in ["", *self.service_names]:
            await self.health.set(service, status)

    async def run(self, start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]) -> None:
        """`start` the service (rebuild from Kafka), listen and report SERVING until SIGTERM/SIGINT
        or `stopping` is set; then NOT_SERVING, drain, and `stop`."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        try:
            # The port opens only once the state is rebuilt: no request can reach a half-built
            # service, and until then health checks fail (connection refused = not serving).
            await start()
            if self.credentials is not None:
                port = self.server.add_secure_port(self.listen_address, self.credentials)
            else:
                port = self.server.add_insecure_port(self.listen_address)
            if port == 0:
                raise OSError(f"{self.name}: cannot listen on {self.listen_address}")
            await self.server.start()
            await self._set_all(health_pb2.HealthCheckResponse.SERVING)
            security = "plaintext"
            if self.tls is not None:
                security = "mutual TLS" if self.tls.mutual else "TLS"
            log.info("%s serving on %s (%s)", self.name, self.listen_address, security)
            await self.stopping.wait()
            log.info("%s stopping: draining for up to %.1fs", self.name, self.grace)
        finally:
            await self._set_all(health_pb2.HealthCheckResponse.NOT_SERVING)
            await self.server.stop(self.grace)
            await stop()
            log.info("%s stopped", self.name)
