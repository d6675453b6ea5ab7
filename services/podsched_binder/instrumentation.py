"""What the binder reports: the spans of its writes in the trace of the request that caused them
("bind pod", "record scheduling failure", "record pod group result"; a victim's "terminate pod" and a
replacement's "replace pod" in the evicting trace), a PRODUCER span per trace and topic of each
transaction, the binder's Prometheus metrics and the decision log of the events it records. The
binder calls these hooks (`BinderObserver` in service.py) and holds trace contexts without looking
into them; this is the one place that knows what is recorded about a write."""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, StatusCode
from prometheus_client import Counter, Histogram

from podsched.api.types import KIND_POD, Pod
from podsched.cluster import events as ev
from podsched.cluster.binder import BindError
from podsched.cluster.store import ADDED, REMOVED, Change
from podsched_proto.binder.v1 import binder_pb2
from podsched_service import telemetry
from podsched_service.clock import Clock

# Decision log lines keep the logger name their readers filter on (docs/observability.md).
log = logging.getLogger("podsched_binder.service")

# The trace a write belongs to: the binder carries it from the RPC to the records, unopened.
TraceContext = otel_context.Context
# Each record's Kafka headers (its send span's trace context), None with tracing off.
RecordHeaders = list[tuple[str, bytes]] | None

BINDS = Counter("podsched_binds_total", "Bind requests the binder applied, by result (bound / refused).", ["result"])
BOUND, REFUSED = BINDS.labels("bound"), BINDS.labels("refused")
TRANSACTIONS = Counter("podsched_kafka_transactions_total", "Kafka transactions the binder ran.", ["result"])
RECORDS_PRODUCED = Counter("podsched_kafka_records_produced_total", "Records the binder committed.", ["topic"])
COMMIT_SECONDS = Histogram(
    "podsched_kafka_commit_duration_seconds",
    "Time from the first send of a batch to its committed transaction.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
BATCH_OPERATIONS = Histogram(
    "podsched_binder_batch_operations",
    "RPC operations applied in one batch (one transaction).",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
)
EVENTS = Counter("podsched_events_total", "Events the binder recorded, by type and reason.", ["type", "reason"])
# Decisions the binder logs one line each for (the queue logs Scheduled and FailedScheduling).
LOGGED_REASONS = frozenset({ev.PREEMPTED, ev.NOMINATED, ev.NOMINATION_CLEARED, ev.KILLING, ev.DELETED})
# A victim's eviction is one line, its Preempted one (naming the preemptor, the node and the grace
# period): its Killing, and its Deleted when the grace period is 0, come in the same batch and add
# nothing an operator needs (the events themselves are all recorded). A Deleted that ends a grace
# period later has its own line.
EVICTION_FOLLOW_UPS = frozenset({ev.KILLING, ev.DELETED})


class BinderTelemetry:
    """Spans, metrics and decision log lines of the binder's writes (a BinderObserver)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock  # times each commit
        # Trace context of each victim's eviction, so its removal after the grace period (a later
        # batch, started by the timer) is part of the preemptor's trace.
        self._eviction_contexts: dict[str, TraceContext] = {}
        # Trace context of the last eviction of a pod a workload controls, by the workload's uid: the
        # replacement its controller creates joins that trace (a "replace pod" span under it). One per
        # workload, so this is bounded by the workloads.
        self._owner_eviction_contexts: dict[str, TraceContext] = {}
        # This batch's "terminate pod" spans, by pod uid: the removal's records and events go under them.
        self._termination_contexts: dict[str, TraceContext] = {}
        # The pods this batch preempted (their Preempted line stands for the whole eviction).
        self._preempted: set[str] = set()
        # EVENTS' child of each (type, reason): `labels` looks it up under a lock, for every event.
        self._event_counters: dict[tuple[str, str], Any] = {}

    # --- the trace a write belongs to ------------------------------------------------------------

    def current_trace(self) -> TraceContext:
        """The caller's trace: an operation submitted now runs, and records its changes, in it."""
        return otel_context.get_current()

    def trace_of(self, carrier: Mapping[str, str]) -> TraceContext | None:
        """The trace a per-item field of a batched request names, or None (none sent, tracing off)."""
        return telemetry.context_from_carrier(carrier)

    def within(self, context: TraceContext | None) -> contextlib.AbstractContextManager[None]:
        """Run the block in `context` (None: stay in the current one)."""
        return _STAY if context is None else _Attached(context)

    # --- a batch --------------------------------------------------------------------------------

    def batch_started(self, operations: int) -> None:
        BATCH_OPERATIONS.observe(operations)

    def batch_applied(self) -> None:
        """The batch's operations ran: its "terminate pod" spans are done with."""
        self._termination_contexts.clear()
        self._preempted.clear()

    def change_recorded(self, change: Change) -> TraceContext:
        """The trace a change's records belong to: the current one, except for a pod removed after
        its grace period (a "terminate pod" span in the evicting trace) and a pod a controller
        created to replace an evicted one (a "replace pod" span there)."""
        context = otel_context.get_current()
        if not telemetry.tracing_enabled() or change.kind != KIND_POD:
            return context
        old, new = change.old, change.new
        if new is not None and new.metadata.deletion_timestamp and (old is None or not old.metadata.deletion_timestamp):
            self._eviction_contexts[new.uid] = context
            owner = new.metadata.controller_ref()
            if owner is not None and trace.get_current_span(context).get_span_context().is_valid:
                self._owner_eviction_contexts[owner.uid] = context
        if change.type == REMOVED and old is not None:
            return self._termination_context(old.uid, old) or context
        if change.type == ADDED and new is not None:
            return self._replacement_context(new) or context
        return context

    def event_recorded(self, event: ev.Event, pods_by_uid: Mapping[str, Pod]) -> TraceContext:
        """Count the event, log a decision the binder makes (one line per eviction), and return the
        trace its record belongs to (a Deleted pod's "terminate pod" span when someone evicted it)."""
        counter = self._event_counters.get((event.type, event.reason))
        if counter is None:
            counter = self._event_counters[(event.type, event.reason)] = EVENTS.labels(event.type, event.reason)
        counter.inc()
        uid = event.involved_object.uid
        context = self._termination_contexts.get(uid) or otel_context.get_current()
        if event.reason == ev.DELETED and telemetry.tracing_enabled():
            context = self._termination_context(uid, pods_by_uid.get(uid)) or context
        if event.reason not in LOGGED_REASONS or (event.reason in EVICTION_FOLLOW_UPS and uid in self._preempted):
            return context
        fields: dict[str, Any] = {}
        if event.reason == ev.PREEMPTED:
            self._preempted.add(uid)
            victim = pods_by_uid.get(uid)
            if victim is not None:
                fields["grace_period_seconds"] = victim.spec.termination_grace_period_seconds
        with self.within(context):
            obj = event.involved_object
            telemetry.decision(
                log,
                "%s %s/%s: %s",
                event.reason,
                obj.namespace,
                obj.name,
                event.message,
                decision=event.reason,
                pod=f"{obj.namespace}/{obj.name}",
                # The preemptor of a Preempted victim (the message names only its UID, as upstream's does).
                related=f"{event.related.namespace}/{event.related.name}" if event.related else None,
                **fields,
            )
        return context

    def _replacement_context(self, pod: Any) -> TraceContext | None:
        """A pod a controller created after one of its pods was evicted: a "replace pod" span in the
        evicting trace, so the replacement's journey continues the preemption that caused it."""
        owner = pod.metadata.controller_ref()
        evicted_in = self._owner_eviction_contexts.pop(owner.uid, None) if owner is not None else None
        if evicted_in is None or owner is None:
            return None
        attributes = telemetry.pod_attributes(pod)
        attributes["podsched.owner"] = f"{owner.kind}/{owner.name}"
        span = telemetry.tracer().start_span("replace pod", context=evicted_in, attributes=attributes)
        span.end()
        return trace.set_span_in_context(span, evicted_in)

    def _termination_context(self, uid: str, pod: Any) -> TraceContext | None:
        """The "terminate pod" span of an evicted pod removed in this batch (created by whichever of
        its Deleted event and its removal comes first), or None for a pod nobody evicted."""
        if uid in self._termination_contexts:
            return self._termination_contexts[uid]
        evicted_in = self._eviction_contexts.pop(uid, None)
        if evicted_in is None:
            return None
        attributes = telemetry.pod_attributes(pod) if pod is not None else {"k8s.pod.uid": uid}
        if pod is not None:
            attributes["k8s.node.name"] = pod.spec.node_name
        span = telemetry.tracer().start_span("terminate pod", context=evicted_in, attributes=attributes)
        span.end()
        context = trace.set_span_in_context(span, evicted_in)
        self._termination_contexts[uid] = context
        return context

    # --- the transaction ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def committing(self, records: Sequence[tuple[str, TraceContext]]) -> Iterator[list[RecordHeaders]]:
        """Around one transaction of (topic, trace) records: yields each record's headers, and counts
        and times the transaction as committed if the block completes, aborted if it raises."""
        spans, headers = self._send_spans(records)
        began = self.clock.monotonic()
        try:
            yield headers
        except BaseException as error:
            TRANSACTIONS.labels("aborted").inc()
            for span in spans:
                span.set_status(StatusCode.ERROR, f"transaction not committed: {error}")
                span.end()
            raise
        TRANSACTIONS.labels("committed").inc()
        COMMIT_SECONDS.observe(self.clock.monotonic() - began)
        for topic, count in collections.Counter(topic for topic, _ in records).items():
            RECORDS_PRODUCED.labels(topic).inc(count)
        for span in spans:
            span.end()

    def _send_spans(self, records: Sequence[tuple[str, TraceContext]]) -> tuple[list[Span], list[RecordHeaders]]:
        """One PRODUCER span per (trace context, topic) in the batch; each record carries its span's
        context in its headers, so consumers continue the trace of the write that made it."""
        if not telemetry.tracing_enabled():
            return [], [None] * len(records)
        by_group: dict[tuple[int, str], tuple[Span, list[tuple[str, bytes]]]] = {}
        counts: dict[tuple[int, str], int] = {}
        for topic, context in records:
            counts[(id(context), topic)] = counts.get((id(context), topic), 0) + 1
        headers: list[RecordHeaders] = []
        for topic, context in records:
            group = (id(context), topic)
            if group not in by_group:
                span = telemetry.start_send_span(topic, counts[group], context)
                by_group[group] = (span, telemetry.headers_for(span))
            headers.append(list(by_group[group][1]))
        return [span for span, _ in by_group.values()], headers

    # --- the scheduling decisions ------------------------------------------------------------------

    def binding(
        self, context: TraceContext | None, pod: Pod | None, node_name: str
    ) -> contextlib.AbstractContextManager[None]:
        """A "bind pod" span around one bind, under `context` (the pod's attempt, when the queue sent
        it: a Bind carries many pods) or else the RPC's. A BindError leaving the block is a refusal:
        on the span and counted, then raised on. With tracing off only the count is kept: a span
        that records nothing cost about 3.5 us of every bind."""
        if not telemetry.tracing_enabled():
            return _COUNTED_BIND
        return _BindPodSpan(context, pod, node_name)

    @contextlib.contextmanager
    def recording_pod_group_result(self, request: binder_pb2.RecordPodGroupResultRequest) -> Iterator[None]:
        """The "record pod group result" span around a pod-group cycle's writes."""
        with telemetry.tracer().start_as_current_span("record pod group result") as span:
            span.set_attributes(
                {
                    "podsched.pod_group.name": f"{request.namespace}/{request.name}",
                    "podsched.pod_group.size": len(request.pods),
                    "podsched.pod_group.scheduled": request.code == 0,
                    "podsched.victims": list(request.victim_uids),
                }
            )
            yield

    def pod_group_bound(self, count: int) -> None:
        """Within `recording_pod_group_result`: how many of the group's pods were bound."""
        trace.get_current_span().set_attribute("podsched.pod_group.bound", count)
        BOUND.inc(count)

    @contextlib.contextmanager
    def recording_failure(
        self, request: binder_pb2.RecordFailureRequest, pods_by_uid: Mapping[str, Any]
    ) -> Iterator[None]:
        """Evictions, nomination changes and the FailedScheduling event in one "record scheduling
        failure" span, so a trace shows what the binder actually changed (victims already gone are
        skipped). Enter it before the writes: it names the pods as they were."""
        with telemetry.tracer().start_as_current_span("record scheduling failure") as span:
            if span.is_recording():
                pod = pods_by_uid.get(request.pod_uid)
                if pod is not None:
                    span.set_attributes(telemetry.pod_attributes(pod))
                victims = [
                    f"{victim.namespace}/{victim.name}"
                    for uid in request.victim_uids
                    if (victim := pods_by_uid.get(uid)) is not None
                ]
                span.set_attributes(
                    {
                        "podsched.nominated_node": request.nominated_node_name,
                        "podsched.victims": victims,
                        "podsched.nominations_cleared": len(request.clear_nomination_uids)
                        + int(request.clear_own_nomination),
                    }
                )
            yield


# Context managers entered for every operation and every bind: classes rather than generators, whose
# setup costs several times more.
_STAY = contextlib.nullcontext()


class _Attached:
    __slots__ = ("context", "token")

    def __init__(self, context: TraceContext) -> None:
        self.context = context

    def __enter__(self) -> None:
        self.token = otel_context.attach(self.context)

    def __exit__(self, *exc_info: object) -> None:
        otel_context.detach(self.token)


class _BindPodSpan:
    """BinderTelemetry.binding's span: current while the bind runs; a BindError is the bind's answer
    (the span's status and `podsched.bind.refused`), any other exception is recorded as one."""

    __slots__ = ("span", "token")

    def __init__(self, context: TraceContext | None, pod: Pod | None, node_name: str) -> None:
        attributes: dict[str, Any] = {}
        if telemetry.tracing_enabled():
            if pod is not None:
                attributes.update(telemetry.pod_attributes(pod))
            attributes["k8s.node.name"] = node_name
        self.span = telemetry.tracer().start_span("bind pod", context=context, attributes=attributes)

    def __enter__(self) -> None:
        self.token = otel_context.attach(trace.set_span_in_context(self.span))

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: object) -> None:
        otel_context.detach(self.token)
        if isinstance(error, BindError):
            self.span.set_status(StatusCode.ERROR, error.message)
            self.span.set_attribute("podsched.bind.refused", error.reason)
            REFUSED.inc()
        elif error is not None:
            self.span.record_exception(error)
            self.span.set_status(StatusCode.ERROR, f"{type(error).__name__}: {error}")
        else:
            BOUND.inc()
        self.span.end()


class _CountedBind:
    """BinderTelemetry.binding with tracing off: a bind counted as bound, or as refused when a
    BindError leaves the block (any other exception is not a bind's answer, and is not counted)."""

    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: object) -> None:
        if isinstance(error, BindError):
            REFUSED.inc()
        elif error is None:
            BOUND.inc()


_COUNTED_BIND = _CountedBind()
