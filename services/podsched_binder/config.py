"""Configuration of the binder service (environment variables PODSCHED_<FIELD>)."""

from __future__ import annotations

import dataclasses

from podsched_service.config import DEFAULT_BINDER_ADDRESS, DEFAULT_BINDER_METRICS, CommonConfig
from podsched_service.kafka_log import TopicSettings


@dataclasses.dataclass(frozen=True, slots=True)
class BinderConfig(CommonConfig):
    # gRPC listen address of the Binder service.
    listen_address: str = DEFAULT_BINDER_ADDRESS
    # Prometheus metrics: GET http://<metrics_address>/metrics.
    metrics_address: str = DEFAULT_BINDER_METRICS
    # Kafka transactional.id: one binder writes at a time; a restarted binder fences the old one.
    transactional_id: str = "podsched-binder"
    # Several binders may run: the one elected over Kafka writes and listens, the others wait with
    # their port closed (clients list every binder's address and use the one that answers).
    leader_election: bool = True
    # This replica's name in the election (Kafka's group.instance.id); empty: <hostname>-<listen port>.
    replica_id: str = ""
    # Writes arriving while a transaction commits are applied and committed together, up to this many.
    max_batch: int = 256
    # The topics (created by the binder, and altered to these settings when they exist with others;
    # docs/topics.md). podsched.objects.v1 is compacted: segments close after this many ms or bytes
    # (only closed segments are compacted), the cleaner starts at this fraction of superseded
    # records, records younger than the lag (ms) are never compacted (a Watch resumes from any
    # version this recent), a deletion's tombstone stays this long (ms).
    objects_segment_ms: int = 600_000
    objects_segment_bytes: int = 67_108_864
    objects_min_cleanable_dirty_ratio: float = 0.5
    objects_min_compaction_lag_ms: int = 300_000
    objects_delete_retention_ms: int = 86_400_000
    # podsched.events.v1 keeps events this many ms (the API server's --event-ttl default: 1 h).
    events_retention_ms: int = 3_600_000

    def topic_settings(self) -> TopicSettings:
        return TopicSettings(
            objects_segment_ms=self.objects_segment_ms,
            objects_segment_bytes=self.objects_segment_bytes,
            objects_min_cleanable_dirty_ratio=self.objects_min_cleanable_dirty_ratio,
            objects_min_compaction_lag_ms=self.objects_min_compaction_lag_ms,
            objects_delete_retention_ms=self.objects_delete_retention_ms,
            events_retention_ms=self.events_retention_ms,
        )
