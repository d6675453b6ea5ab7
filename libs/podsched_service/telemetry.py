"""Traces, metrics and logs of one service process.

Tracing: the OpenTelemetry SDK exports over OTLP/gRPC (Jaeger takes it directly). One pod's journey
is one trace: gRPC calls carry W3C trace context in their metadata (OpenTelemetry's gRPC
interceptors, RPC semantic conventions), and every Kafka record the binder writes carries it in its
headers, so a consumer parents its handling on the write that caused it (messaging semantic
conventions: a PRODUCER "send <topic>" span, CONSUMER "process <topic>" spans). With no endpoint
configured no provider is installed and every span is OpenTelemetry's no-op: tracing off costs a
function call, not an export.

Metrics: Prometheus text on GET http://<metrics_address>/metrics (prometheus_client's own HTTP
server thread), with kube-scheduler's names where kube-scheduler has the metric.

Logs: JSON lines carrying the current trace and span ids, so a log line leads to its trace."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import grpc
import orjson
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Span, SpanKind
from prometheus_client import Counter, Histogram, start_http_server

from podsched_service.clock import Clock, SystemClock

TRACER_NAME = "podsched"
_enabled = False


# --- tracing -------------------------------------------------------------------------------------


def setup_tracing(service: str, otlp_endpoint: str, sample_ratio: float = 1.0) -> Callable[[], None]:
    """Install the process's tracer provider (service.name = `service`); returns the flush-and-close
    to call at shutdown. An empty endpoint leaves tracing off."""
    global _enabled
    if not otlp_endpoint:
        return lambda: None
    # Imported here: the exporter pulls in grpc's OTLP stubs, which a process without tracing never needs.
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    provider = TracerProvider(
        resource=Resource.create({"service.name": service, "service.namespace": "podsched"}),
        sampler=ParentBased(TraceIdRatioBased(sample_ratio)),
    )
    insecure = not otlp_endpoint.startswith("https://")
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint, insecure=insecure), schedule_delay_millis=500)
    )
    trace.set_tracer_provider(provider)
    _enabled = True

    def shutdown() -> None:
        provider.force_flush(5_000)
        provider.shutdown()

    return shutdown


def tracing_enabled() -> bool:
    return _enabled


def tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


def _not_health_or_reflection() -> Any:
    from opentelemetry.instrumentation.grpc import filters

    return filters.negate(
        filters.any_of(
            filters.service_prefix("grpc.health."),
            filters.service_prefix("grpc.reflection."),
        )
    )


def server_interceptors(service: str, clock: Clock | None = None) -> list[grpc.aio.ServerInterceptor]:
    """Metrics for every RPC (timed on `clock`), plus an OpenTelemetry SERVER span (parented on the
    caller's trace context from the metadata) when tracing is on. Health checks and reflection are
    not traced."""
    interceptors: list[grpc.aio.ServerInterceptor] = [_ServerMetrics(clock or SystemClock())]
    if _enabled:
        from opentelemetry.instrumentation.grpc import aio_server_interceptor

        interceptors.insert(0, aio_server_interceptor(filter_=_not_health_or_reflection()))
    return interceptors


def client_interceptors(clock: Clock | None = None) -> list[grpc.aio.ClientInterceptor]:
    """Metrics for every outgoing unary RPC (timed on `clock`), plus a CLIENT span that injects the
    trace context into the metadata when tracing is on."""
    interceptors: list[grpc.aio.ClientInterceptor] = [_ClientMetrics(clock or SystemClock())]
    if _enabled:
        from opentelemetry.instrumentation.grpc import aio_client_interceptors

        interceptors = [*aio_client_interceptors(filter_=_not_health_or_reflection()), *interceptors]
    return interceptors


# --- Kafka hops -------------------------------------------------------------------------------------

Headers = list[tuple[str, bytes]]


def headers_for(span: Span) -> Headers:
    """W3C trace context of `span` as Kafka record headers."""
    return [(key, value.encode()) for key, value in carrier_of(span).items()]


def context_from_headers(headers: Sequence[tuple[str, bytes]] | None) -> otel_context.Context | None:
    """The context in a record's headers, or None (tracing off, or a record without trace context)."""
    if not headers:
        return None
    carrier = {key: value.decode(errors="replace") for key, value in headers}
    return context_from_carrier(carrier) if "traceparent" in carrier else None


def start_send_span(topic: str, record_count: int, parent: otel_context.Context | None) -> Span:
    """PRODUCER span for records of one write sent to `topic` (ended once the transaction commits)."""
    return tracer().start_span(
        f"send {topic}",
        context=parent,
        kind=SpanKind.PRODUCER,
        attributes={
            "messaging.system": "kafka",
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
            "messaging.destination.name": topic,
            "messaging.destination.partition.id": "0",
            "messaging.batch.message_count": record_count,
        },
    )


@contextmanager
def process_span(record: Any) -> Iterator[Span | None]:
    """CONSUMER span around the handling of one record, parented on the context in its headers;
    nothing for a record without trace context (or with tracing off)."""
    parent = context_from_headers(record.headers) if _enabled else None
    if parent is None:
        yield None
        return
    with tracer().start_as_current_span(
        f"process {record.topic}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes={
            "messaging.system": "kafka",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": record.topic,
            "messaging.destination.partition.id": str(record.partition),
            "messaging.kafka.offset": record.offset,
            "messaging.kafka.message.key": (record.key or b"").decode(errors="replace"),
        },
    ) as span:
        yield span


def carrier_of(span: Span) -> dict[str, str]:
    """W3C trace context of `span` as a string map (for a per-item field of a batched request)."""
    carrier: dict[str, str] = {}
    if _enabled and span.get_span_context().is_valid:
        propagate.inject(carrier, context=trace.set_span_in_context(span))
    return carrier


def context_from_carrier(carrier: Any) -> otel_context.Context | None:
    """The context a `carrier_of` map holds, or None (tracing off, or nothing sent)."""
    if not _enabled or not carrier:
        return None
    return propagate.extract(dict(carrier))


def pod_attributes(pod: Any) -> dict[str, Any]:
    """Who a span is about, in OpenTelemetry's k8s attribute names."""
    return {
        "k8s.pod.name": pod.name,
        "k8s.namespace.name": pod.namespace,
        "k8s.pod.uid": pod.uid,
        "podsched.pod.priority": pod.spec.priority or 0,
    }


# --- metrics ---------------------------------------------------------------------------------------

GRPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
GRPC_SERVER_HANDLED = Counter(
    "grpc_server_handled_total",
    "RPCs completed on the server, by method and status code.",
    ["grpc_service", "grpc_method", "grpc_code"],
)
GRPC_SERVER_SECONDS = Histogram(
    "grpc_server_handling_seconds",
    "Time the server took to handle an RPC.",
    ["grpc_service", "grpc_method"],
    buckets=GRPC_BUCKETS,
)
GRPC_CLIENT_HANDLED = Counter(
    "grpc_client_handled_total",
    "RPCs this service made that completed, by method and status code.",
    ["grpc_service", "grpc_method", "grpc_code"],
)
GRPC_CLIENT_SECONDS = Histogram(
    "grpc_client_handling_seconds",
    "Round-trip time of RPCs this service made.",
    ["grpc_service", "grpc_method"],
    buckets=GRPC_BUCKETS,
)


def _split_method(full: str) -> tuple[str, str]:
    service, _, method = full.lstrip("/").partition("/")
    return service, method


class _ServerMetrics(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler  # streams (Watch) and health checks are counted by neither histogram nor counter
        service, method = _split_method(details.method)
        behavior = handler.unary_unary
        clock = self.clock

        async def measured(request: Any, context: grpc.aio.ServicerContext) -> Any:
            began = clock.monotonic()
            code = grpc.StatusCode.OK
            try:
                return await behavior(request, context)
            except BaseException:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            finally:
                code = context.code() or code
                GRPC_SERVER_HANDLED.labels(service, method, _code_name(code)).inc()
                GRPC_SERVER_SECONDS.labels(service, method).observe(clock.monotonic() - began)

        return grpc.unary_unary_rpc_method_handler(
            measured,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


class _ClientMetrics(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        service, name = _split_method(method)
        began = self.clock.monotonic()
        call = await continuation(details, request)
        try:
            await call
        finally:
            code = await call.code()
            GRPC_CLIENT_HANDLED.labels(service, name, _code_name(code)).inc()
            GRPC_CLIENT_SECONDS.labels(service, name).observe(self.clock.monotonic() - began)
        return call


def _code_name(code: grpc.StatusCode | int) -> str:
    return code.name if isinstance(code, grpc.StatusCode) else str(code)


def start_metrics_server(address: str) -> None:
    """Serve GET /metrics on `address` (host:port) from a daemon thread; empty: no endpoint."""
    if not address:
        return
    host, _, port = address.rpartition(":")
    try:
        start_http_server(int(port), addr=host or "0.0.0.0")
    except (OSError, ValueError) as error:
        raise OSError(f"PODSCHED_METRICS_ADDRESS={address}: cannot serve metrics: {error}") from error


# --- logs --------------------------------------------------------------------------------------------

# LogRecord attributes that are not worth a JSON field of their own.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: time, level, service, logger, message, the current trace_id and
    span_id (hex, as Jaeger shows them), and any `extra={...}` fields the call passed.

    The queue writes a decision line for every pod it schedules: the line is rendered by orjson
    (compact, UTF-8; `json` only for what orjson refuses) and the time's whole second is formatted
    once per second: with the caller's frame no longer looked up (`configure_logging`), a line went
    from about 15 to 9.5 us of CPU."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service
        self._second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text

    def _time(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second[0]:
            self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        return f"{self._second[1]}.{int(record.msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self._time(record),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            line["trace_id"] = format(context.trace_id, "032x")
            line["span_id"] = format(context.span_id, "016x")
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        try:
            return orjson.dumps(line, default=str).decode()
        except TypeError:  # an integer beyond 64 bits, a key that is not a string
            return json.dumps(line, default=str)


JsonLogFormatter.converter = time.gmtime  # type: ignore[assignment]


class GroupedLineHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A StreamHandler that writes its lines in groups: one write and flush per `FLUSH_SECONDS` on
    the running event loop, not one per line (the queue's decision line for every pod made that
    write and flush 4-6 % of its CPU samples).

    The lines stay whole and in order: a group is every line since the last write, joined, in one
    write. A line at WARNING or above is written at once, with the lines before it, so an error is
    never held back; so is every line logged outside an event loop (start-up, worker threads), a
    group that reaches `MAX_PENDING_BYTES`, and whatever is pending at exit (logging.shutdown) or
    before a fork (a child never writes its parent's lines twice). A process killed with SIGKILL
    loses the lines of its last `FLUSH_SECONDS` at most, and never more than `MAX_PENDING_BYTES`."""

    FLUSH_SECONDS = 0.1
    MAX_PENDING_BYTES = 64 * 1024

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self._pending: list[str] = []
        self._pending_chars = 0
        # The loop that will write the pending lines, or None when no write is scheduled.
        self._flush_loop: asyncio.AbstractEventLoop | None = None
        os.register_at_fork(before=self.flush)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self._pending.append(line)
        self._pending_chars += len(line) + 1
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if (
            record.levelno >= logging.WARNING
            or loop is None
            or self._pending_chars >= self.MAX_PENDING_BYTES
            or (self._flush_loop is not None and self._flush_loop is not loop)
        ):
            self.flush()
        elif self._flush_loop is None:
            self._flush_loop = loop
            loop.call_later(self.FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._flush_loop = None
            if self._pending:
                text = "\n".join(self._pending) + "\n"
                self._pending.clear()
                self._pending_chars = 0
                # A closed or broken stderr: as StreamHandler, never raise from logging.
                with contextlib.suppress(Exception):
                    self.stream.write(text)
            super().flush()


def configure_logging(service: str, log_format: str = "json") -> None:
    if log_format not in ("json", "text"):
        raise ValueError(f"PODSCHED_LOG_FORMAT: invalid value {log_format!r} (expected json or text)")
    handler = GroupedLineHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonLogFormatter(service))
    else:
        handler.setFormatter(logging.Formatter(f"%(asctime)s {service} %(levelname)s %(name)s: %(message)s"))
    # No line shows the caller's file and line, so logging need not walk the stack to find them
    # (the logging HOWTO's "Optimization"; about a tenth of what a decision line cost).
    logging._srcfile = None  # type: ignore[attr-defined]
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    logging.getLogger("aiokafka").setLevel(logging.WARNING)


def decision(logger: logging.Logger, message: str, *args: Any, **fields: Any) -> None:
    """Log one scheduling decision: `fields` become JSON fields (decision=..., pod=..., node=...)."""
    logger.info(message, *args, extra=fields)
