"""Optional tracing of the CLI's own calls: with PODSCHED_OTLP_ENDPOINT set (the variable the
services read), `podsched apply` starts each pod's trace, so Jaeger shows the journey from the
client on. Unset, the CLI loads no tracing code at all."""

from __future__ import annotations

import os
from collections.abc import Callable

ENDPOINT_VARIABLE = "PODSCHED_OTLP_ENDPOINT"
SERVICE_NAME = "podsched-cli"
_enabled = False


def setup() -> Callable[[], None]:
    """Install a tracer provider if the endpoint is set; returns the flush to run before exiting."""
    global _enabled
    endpoint = os.environ.get(ENDPOINT_VARIABLE, "")
    if not endpoint or _enabled:
        return lambda: None
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=not endpoint.startswith("https://"))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _enabled = True
    return lambda: provider.force_flush(5_000)


def enabled() -> bool:
    return _enabled
