"""Service configuration: one frozen dataclass per service, read from the environment.

Every field `some_field` is read from `PODSCHED_SOME_FIELD`; the dataclass default applies when
the variable is unset. docker-compose.yml and deploy/ set exactly these variables (a test checks
the compose file against the dataclasses)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, TypeVar

ENV_PREFIX = "PODSCHED_"

DEFAULT_KAFKA = "127.0.0.1:19092"
DEFAULT_QUEUE_ADDRESS = "127.0.0.1:50051"  # the public API; the CLI's default --server
DEFAULT_FILTER_ADDRESS = "127.0.0.1:50052"
DEFAULT_PREEMPTION_ADDRESS = "127.0.0.1:50053"
DEFAULT_BINDER_ADDRESS = "127.0.0.1:50054"
# Prometheus /metrics endpoints (HTTP), one per service.
DEFAULT_QUEUE_METRICS = "127.0.0.1:9451"
DEFAULT_FILTER_METRICS = "127.0.0.1:9452"
DEFAULT_PREEMPTION_METRICS = "127.0.0.1:9453"
DEFAULT_BINDER_METRICS = "127.0.0.1:9454"


@dataclasses.dataclass(frozen=True, slots=True)
class CommonConfig:
    """Fields every service has."""

    # Kafka bootstrap servers, comma separated.
    kafka_bootstrap_servers: str = DEFAULT_KAFKA
    # Prepended to every topic name (tests give each run its own topics on one broker).
    topic_prefix: str = ""
    # A kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration file; empty for the defaults.
    scheduler_config: str = ""
    # An apiserver.config.k8s.io/v1 AdmissionConfiguration (ResourceQuota plugin: limitedResources);
    # empty for the defaults (the critical priority classes limited to kube-system).
    admission_config: str = ""
    # Seconds a stopping service lets in-flight RPCs finish after SIGTERM.
    shutdown_grace_seconds: float = 5.0
    # OTLP/gRPC endpoint traces are exported to (Jaeger: http://127.0.0.1:4317); empty turns tracing off.
    otlp_endpoint: str = ""
    # Fraction of new traces (pods) recorded; a trace started upstream keeps its caller's decision.
    trace_sample_ratio: float = 1.0
    # host:port of the Prometheus text endpoint (GET /metrics); empty turns it off. Each service
    # redeclares the field with its own default port.
    metrics_address: str = ""
    # "json": one JSON object per line with trace_id/span_id (for log pipelines); "text": for humans.
    log_format: str = "json"
    # TLS on this service's gRPC port: PEM certificate chain and private key; both empty = plaintext.
    tls_cert_file: str = ""
    tls_key_file: str = ""
    # PEM CA bundle client certificates must chain to; set = mutual TLS (gRPC Python can only require
    # a client certificate, not request one), and on the public API a certificate identifies its
    # holder (CN = user, O = groups). Empty = no client certificates.
    tls_client_ca_file: str = ""
    # Comma-separated groups (certificate subject O); set = only callers whose client certificate
    # carries one of them may call anything but health checks (internal services: the queue's group).
    tls_client_groups: str = ""


ConfigT = TypeVar("ConfigT")


def env_name(field_name: str) -> str:
    return ENV_PREFIX + field_name.upper()


def env_names(config_class: type) -> dict[str, str]:
    """field name -> environment variable, for every field of a config dataclass."""
    return {f.name: env_name(f.name) for f in dataclasses.fields(config_class)}


def _convert(raw: str, default: Any, field: dataclasses.Field[Any]) -> Any:
    kind = type(default) if default is not None else str
    try:
        if kind is bool:
            lowered = raw.strip().lower()
            if lowered not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(raw)
            return lowered in ("1", "true", "yes")
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise ValueError(f"{env_name(field.name)}: invalid value {raw!r} (expected {kind.__name__})") from None
    return raw


def load_config(config_class: type[ConfigT], environ: Mapping[str, str] | None = None, **overrides: Any) -> ConfigT:
    """Defaults <- environment <- keyword overrides. Raises ValueError naming the variable on bad input."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for field in dataclasses.fields(config_class):  # type: ignore[arg-type]
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()  # type: ignore[misc]
        raw = environ.get(env_name(field.name))
        if raw is not None:
            values[field.name] = _convert(raw, default, field)
    values.update(overrides)
    return config_class(**values)
