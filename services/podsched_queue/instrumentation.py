"""What the scheduling loop reports: each attempt's span (in the pod's trace), kube-scheduler's attempt
metrics and the decision log. The scheduler calls these hooks at each step of a cycle
(`SchedulingObserver` in scheduler.py) and stays free of span attributes; this is the one place that
knows what is recorded about an attempt."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, StatusCode
from prometheus_client import Counter, Gauge, Histogram

from podsched.api.types import KIND_POD, PodGroup
from podsched.cluster import events as ev
from podsched.cluster.store import ADDED, REMOVED, Change
from podsched.queue import scheduling_queue as sq
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2
from podsched_service import telemetry

from .clock import Clock
from .pipeline import ERROR, REQUEUED, Attempt

# Decision log lines keep the logger name their readers filter on (docs/observability.md).
log = logging.getLogger("podsched_queue.service")

# kube-scheduler's own metric names, labels and buckets.
SCHEDULE_ATTEMPTS = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.",
    ["result", "profile"],
)
ATTEMPT_DURATION = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=[0.001 * 2**i for i in range(15)],
)
PENDING_PODS = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
    "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods; 'gated' means "
    "number of pods a PreEnqueue plugin holds back (GenericWorkload: a gang waiting for its pods); 'incomplete' "
    "means number of pods waiting for their PodGroup to be observed; 'pending' means number of pods waiting "
    "for their in-flight pod group to be requeued.",
    ["queue"],
)
# GenericWorkload: one per pod-group cycle (upstream's podGroupScheduleAttempts and latency).
POD_GROUP_SCHEDULE_ATTEMPTS = Counter(
    "scheduler_podgroup_schedule_attempts_total",
    "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not be "
    "scheduled, while 'error' means an internal scheduler problem.",
    ["result", "profile"],
)
POD_GROUP_ATTEMPT_DURATION = Histogram(
    "scheduler_podgroup_scheduling_attempt_duration_seconds",
    "Pod group scheduling attempt latency in seconds",
    ["result", "profile"],
    buckets=[0.001 * 2**i for i in range(15)],
)
POD_GROUP_BACKOFF_PODS = Gauge(
    "podsched_pod_group_backoff_pods",
    "Number of pods in backoffQ that wait with their rejected pod group (GenericWorkload): no cluster event "
    "moves them, and the group is retried when its backoff ends (1s doubling, at most podMaxBackoffSeconds "
    'times the square root of its size). Included in scheduler_pending_pods{queue="backoff"}.',
)
QUEUE_LABELS = {
    sq.ACTIVE: "active",
    sq.BACKOFF: "backoff",
    sq.UNSCHEDULABLE: "unschedulable",
    sq.GATED: "gated",
    sq.INCOMPLETE: "incomplete",
    sq.PENDING: "pending",
}


def report_pending_pods(queue: sq.SchedulingQueue) -> None:
    """scheduler_pending_pods and podsched_pod_group_backoff_pods read `queue`'s counts at each scrape."""
    for queue_name, label in QUEUE_LABELS.items():
        PENDING_PODS.labels(label).set_function(lambda name=queue_name: queue.pending_counts()[name])
    POD_GROUP_BACKOFF_PODS.set_function(queue.pod_group_backoff_count)


class AttemptTelemetry:
    """Spans, metrics and decision log lines of the scheduling attempts (a SchedulingObserver)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.spans: dict[Attempt, Span] = {}
        # Each pod's trace: the context its creation arrived in (the consumer span of the record that
        # added it), so every scheduling attempt of the pod joins the trace its apply started.
        self.pod_contexts: dict[str, otel_context.Context] = {}

    def remember_pod_context(self, change: Change) -> None:
        """A cluster listener (only needed while tracing is on)."""
        if change.kind != KIND_POD:
            return
        if change.type == ADDED and change.new is not None:
            if trace.get_current_span().get_span_context().is_valid:
                self.pod_contexts[change.new.uid] = otel_context.get_current()
        elif change.type == REMOVED and change.old is not None:
            self.pod_contexts.pop(change.old.uid, None)

    def started(self, attempt: Attempt) -> None:
        if not telemetry.tracing_enabled():
            # The span a tracer that records nothing would give, without asking it (about 2.5 us a
            # pod with its attributes); `within` then has no span to enter either.
            self.spans[attempt] = trace.INVALID_SPAN
            return
        pod = attempt.pod
        span = telemetry.tracer().start_span(
            "scheduling attempt", context=self.pod_contexts.get(pod.uid), attributes=telemetry.pod_attributes(pod)
        )
        span.set_attribute("podsched.attempt", attempt.info.attempts)
        self.spans[attempt] = span

    def in_pod_group(self, attempt: Attempt, group: PodGroup, size: int) -> None:
        """The attempt is one of a pod-group cycle: the group's name, size and policy on its span."""
        self.spans[attempt].set_attributes(
            {
                "podsched.pod_group.name": f"{group.namespace}/{group.name}",
                "podsched.pod_group.size": size,
                "podsched.pod_group.min_count": group.min_count,
                "podsched.pod_group.policy": group.scheduling_policy,
            }
        )

    def pod_group_finished(self, profile: str, result: str, began: float) -> None:
        """A pod-group cycle's result (scheduled, unschedulable, waiting_on_preemption, error)."""
        POD_GROUP_SCHEDULE_ATTEMPTS.labels(result, profile).inc()
        POD_GROUP_ATTEMPT_DURATION.labels(result, profile).observe(self.clock.monotonic() - began)

    @contextlib.contextmanager
    def batch(self, attempts: list[Attempt]) -> Iterator[None]:
        """The calls of a one-pod batch belong to that pod's attempt; a larger batch's calls get a span
        of their own, linked to every pod's attempt (each pod's own outcome is in its trace anyway)."""
        if not telemetry.tracing_enabled():
            yield  # no spans to link (a Link per pod of the batch)
            return
        if len(attempts) == 1:
            with trace.use_span(self.spans[attempts[0]], end_on_exit=False):
                yield
            return
        calls_span = telemetry.tracer().start_span(
            "scheduling batch",
            links=[Link(self.spans[a].get_span_context()) for a in attempts],
            attributes={"podsched.batch_size": len(attempts)},
        )
        with trace.use_span(calls_span, end_on_exit=True):
            yield

    def within(self, attempt: Attempt) -> contextlib.AbstractContextManager[None]:
        """Calls made for this attempt alone (PostFilter, RecordFailure) and its log lines join its span
        (nothing to join with tracing off: entering a span that records nothing cost about 3 us for
        every pod's decision line)."""
        span = self.spans[attempt]
        if span is trace.INVALID_SPAN:
            return contextlib.nullcontext()
        return _entered(span)

    def carrier(self, attempt: Attempt) -> dict[str, str]:
        """The attempt's trace context for a per-pod field of a batched request."""
        return telemetry.carrier_of(self.spans[attempt])

    def filtered(self, attempt: Attempt, placement: filter_pb2.Placement, *, preemption_run: bool = False) -> None:
        attributes: dict[str, Any] = {
            "podsched.feasible_nodes": placement.feasible_nodes,
            "podsched.evaluated_nodes": placement.evaluated_nodes,
        }
        if preemption_run:
            attributes["podsched.preemption_run"] = True
        self.spans[attempt].set_attributes(attributes)

    def bind_answered(self, attempt: Attempt, node_name: str, bound: bool) -> None:
        self.spans[attempt].set_attribute("k8s.node.name", node_name)
        if not bound:
            return
        pod = attempt.pod
        with self.within(attempt):
            telemetry.decision(
                log,
                "Scheduled %s/%s to %s",
                pod.namespace,
                pod.name,
                node_name,
                decision=ev.SCHEDULED,
                pod=f"{pod.namespace}/{pod.name}",
                node=node_name,
                attempt=attempt.info.attempts,
            )

    def fit_nowhere(self, attempt: Attempt, placement: filter_pb2.Placement) -> None:
        self.spans[attempt].set_attribute("podsched.message", placement.message)

    def stale_filter_result(self, attempt: Attempt) -> None:
        self.spans[attempt].set_attribute("podsched.stale_filter_result", True)

    def decided(self, attempt: Attempt, decision: preemption_pb2.PostFilterResponse) -> None:
        """A PostFilter decision on the pod's span and in the decision log."""
        pod = attempt.pod
        victims = [f"{v.namespace}/{v.name}" for v in decision.victims]
        self.spans[attempt].set_attributes(
            {
                "podsched.candidates": decision.candidates,
                "podsched.nominated_node": decision.nominated_node_name,
                "podsched.victims": victims,
                "podsched.pdb_violations": decision.pdb_violations,
                "podsched.message": decision.message,
            }
        )
        fields = {
            "decision": ev.FAILED_SCHEDULING,
            "pod": f"{pod.namespace}/{pod.name}",
            "attempt": attempt.info.attempts,
        }
        with self.within(attempt):
            if decision.nominated_node_name:
                telemetry.decision(
                    log,
                    "%s/%s nominated to %s, preempting %s",
                    pod.namespace,
                    pod.name,
                    decision.nominated_node_name,
                    ", ".join(victims),
                    **{**fields, "decision": ev.NOMINATED},
                    node=decision.nominated_node_name,
                    victims=victims,
                    pdb_violations=decision.pdb_violations,
                )
            else:
                telemetry.decision(
                    log, "FailedScheduling %s/%s: %s", pod.namespace, pod.name, decision.message, **fields
                )

    def finished(self, attempt: Attempt) -> None:
        """kube-scheduler's result label (scheduled, unschedulable, error) on the span and the metrics;
        a requeued pod, returned untried, is not an attempt and is not counted."""
        result = attempt.result
        span = self.spans.pop(attempt)
        span.set_attribute("podsched.result", result)
        if result == ERROR:
            span.set_status(StatusCode.ERROR)
        span.end()
        if result != REQUEUED:
            profile = attempt.pod.spec.scheduler_name  # upstream's profile label: the pod's profile
            SCHEDULE_ATTEMPTS.labels(result, profile).inc()
            ATTEMPT_DURATION.labels(result, profile).observe(attempt.duration(self.clock.monotonic()))


@contextlib.contextmanager
def _entered(span: Span) -> Iterator[None]:
    with trace.use_span(span, end_on_exit=False):
        yield
