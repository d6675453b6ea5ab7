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
    # Pods popped per scheduling batch: placed in queue order by one FindNodes (each with the earlier
    # ones assumed) and bound by one Bind, which decides what as many one-pod cycles would. 1 = one
    # pod per cycle.
    batch_size: int = 128
