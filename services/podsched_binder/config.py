"""Configuration of the binder service (environment variables PODSCHED_<FIELD>)."""

from __future__ import annotations

import dataclasses

from podsched_service.config import DEFAULT_BINDER_ADDRESS, DEFAULT_BINDER_METRICS, CommonConfig


@dataclasses.dataclass(frozen=True, slots=True)
class BinderConfig(CommonConfig):
    # gRPC listen address of the Binder service.
    listen_address: str = DEFAULT_BINDER_ADDRESS
    # Prometheus metrics: GET http://<metrics_address>/metrics.
    metrics_address: str = DEFAULT_BINDER_METRICS
    # Kafka transactional.id: one binder writes at a time; a restarted binder fences the old one.
    transactional_id: str = "podsched-binder"
    # Writes arriving while a transaction commits are applied and committed together, up to this many.
    max_batch: int = 256
