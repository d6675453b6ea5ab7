"""Configuration of the preemption service (environment variables PODSCHED_<FIELD>)."""

from __future__ import annotations

import dataclasses
import os

from podsched_service.config import DEFAULT_PREEMPTION_ADDRESS, DEFAULT_PREEMPTION_METRICS, CommonConfig


@dataclasses.dataclass(frozen=True, slots=True)
class PreemptionConfig(CommonConfig):
    # gRPC listen address of the Preemption service.
    listen_address: str = DEFAULT_PREEMPTION_ADDRESS
    # Prometheus metrics: GET http://<metrics_address>/metrics.
    metrics_address: str = DEFAULT_PREEMPTION_METRICS
    # Worker processes that run SelectVictimsOnNode over shards of the candidate nodes.
    workers: int = os.cpu_count() or 1
    # Where the dry run runs: "auto" decides in-process with the vectorized dry run whenever it
    # applies (resource-only pods, no inter-pod affinity in the cluster) and uses the workers
    # otherwise; "workers" always uses the worker pool. Both give the same answer.
    dry_run: str = "auto"

    def __post_init__(self) -> None:
        if self.dry_run not in ("auto", "workers"):
            raise ValueError(f'PODSCHED_DRY_RUN: "{self.dry_run}" is not one of "auto", "workers"')
