"""Configuration of the queue service (environment variables PODSCHED_<FIELD>)."""

from __future__ import annotations

import dataclasses

from podsched_service.config import (
    DEFAULT_BINDER_ADDRESS,
    DEFAULT_FILTER_ADDRESS,
    DEFAULT_PREEMPTION_ADDRESS,
    DEFAULT_QUEUE_ADDRESS,
    DEFAULT_QUEUE_METRICS,
    CommonConfig,
)


@dataclasses.dataclass(frozen=True, slots=True)
class QueueConfig(CommonConfig):
    # gRPC listen address of the public API (PodSched); the CLI's default server.
    listen_address: str = DEFAULT_QUEUE_ADDRESS
    # Prometheus metrics: GET http://<metrics_address>/metrics.
    metrics_address: str = DEFAULT_QUEUE_METRICS
    # Where the filter, preemption and binder services listen.
    filter_address: str = DEFAULT_FILTER_ADDRESS
    preemption_address: str = DEFAULT_PREEMPTION_ADDRESS
    binder_address: str = DEFAULT_BINDER_ADDRESS
