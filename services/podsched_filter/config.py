"""Configuration of the filter service (environment variables PODSCHED_<FIELD>)."""

from __future__ import annotations

import dataclasses

from podsched_service.config import DEFAULT_FILTER_ADDRESS, DEFAULT_FILTER_METRICS, CommonConfig


@dataclasses.dataclass(frozen=True, slots=True)
class FilterConfig(CommonConfig):
    # gRPC listen address of the Filter service.
    listen_address: str = DEFAULT_FILTER_ADDRESS
    # Prometheus metrics: GET http://<metrics_address>/metrics.
    metrics_address: str = DEFAULT_FILTER_METRICS
