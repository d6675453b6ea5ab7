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
    # Pods of the PodGroups popped in a row for one SchedulePodGroups request (GenericWorkload): the
    # groups are cycled in queue order on one view and stop at the first not scheduled, which decides
    # what as many groups one after the other would. A first group comes whole whatever its size.
    pod_group_batch_size: int = 384
    # Bearer tokens accepted on the public API: kube-apiserver's --token-auth-file CSV
    # (token,user,uid,"group1,group2"); empty = no tokens. Authentication is on when this or
    # PODSCHED_TLS_CLIENT_CA_FILE is set; otherwise every caller is system:admin.
    token_file: str = ""
    # Who may do what (cluster admins, namespace tenants; docs/security.md); empty = every
    # authenticated caller may do anything.
    authorization_file: str = ""
    # TLS to the filter, preemption and binder services: the CA bundle that verifies them (set = TLS
    # on), and the client certificate and key the queue presents when they require mutual TLS.
    internal_tls_ca_file: str = ""
    internal_tls_cert_file: str = ""
    internal_tls_key_file: str = ""
    # Several queue replicas may run: all serve the public API, and the one the election over Kafka
    # makes leader runs the scheduling loop (podsched_service.leader_election); off: this one
    # schedules at once, alone.
    leader_election: bool = True
    # This replica's name in the election (Kafka's group.instance.id: a replica restarted under the
    # same name takes its place at once); empty: <hostname>-<listen port>.
    replica_id: str = ""
    # Record every write to the public API (accepted or refused, with the caller) on
    # <prefix>podsched.audit.v1.
    api_audit: bool = True
    # How long the events topic keeps events (the binder's PODSCHED_EVENTS_RETENTION_MS, which sets
    # the topic): the queue's copy forgets older events as the topic does, and serves the same window.
    events_retention_ms: int = 3_600_000
    # Items one Watch may have waiting to be sent; a Watch further behind is closed (ABORTED) and its
    # client resumes from the last resource version it read (podsched_queue.watch.WATCH_BUFFER_SIZE).
    watch_buffer_size: int = 10_000
