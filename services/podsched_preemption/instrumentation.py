"""What the preemption service reports: each PostFilter decision on the pod's span (the RPC's, or a
"preemption run cycle" span for a pod decided later in a run) and in the decision log, kube-scheduler's
preemption metrics and the service's own, the dry run's path, and each worker's "SelectVictimsOnNode
shard" span. The coordinator and the workers call these hooks (`PostFilterObserver` in service.py,
`ShardObserver` in workers.py); this is the one place that knows what is recorded about a decision."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping

from opentelemetry import trace
from prometheus_client import Counter, Histogram

from podsched.api.types import Pod, PodGroup
from podsched_proto.preemption.v1 import preemption_pb2
from podsched_service import telemetry

# Decision log lines keep the logger name their readers filter on (docs/observability.md).
log = logging.getLogger("podsched_preemption.service")

# kube-scheduler's names, help texts and buckets.
PREEMPTION_ATTEMPTS = Counter("scheduler_preemption_attempts", "Total preemption attempts in the cluster till now")
PREEMPTION_VICTIMS = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    # kube-scheduler: "we think #victims>64 is pretty rare, therefore [64, +Inf) is considered a single bucket."
    buckets=[1, 2, 4, 8, 16, 32, 64],
)

RUN_PODS = Histogram(
    "podsched_preemption_run_pods",
    "Pods decided per PostFilterRun request: the pod that fit nowhere and the pods after it that fit nowhere too",
    buckets=[1, 2, 4, 8, 16, 32, 64, 128],
)

STALE_FILTER_RESULTS = Counter(
    "podsched_preemption_stale_filter_results",
    "PostFilter requests whose Filter outcome predates a change that may let the pod fit (filtered again here)",
)

# podsched.dry_run_path: where a decision's dry run ran.
VECTORIZED = "vectorized"  # podsched.fastpath, in the coordinator
WORKERS = "workers"  # SelectVictimsOnNode on the worker pool, or in-process without workers
FILTERED_AGAIN = "filtered again"  # the request's Filter outcome was stale: a whole cycle here


class PostFilterTelemetry:
    """Spans, metrics and decision log lines of the coordinator's PostFilter decisions (a
    PostFilterObserver). Hooks without a span argument annotate the current one: the RPC's, or the
    run cycle's inside `run_cycle`."""

    def run_decided(self, decisions: int) -> None:
        """A PostFilterRun answered with this many decisions."""
        RUN_PODS.observe(decisions)

    def run_cycle(self, carrier: Mapping[str, str]) -> contextlib.AbstractContextManager[None]:
        """A "preemption run cycle" span for a pod decided after a run's first, in the pod's own trace
        (the context the queue sent with it). With tracing off, none: the hooks inside annotate the
        request's span, which records nothing either (a span per pod that records nothing was 3 % of
        the service's samples in PreemptionBasic)."""
        if not telemetry.tracing_enabled():
            return contextlib.nullcontext()
        return self._run_cycle_span(carrier)

    @contextlib.contextmanager
    def _run_cycle_span(self, carrier: Mapping[str, str]) -> Iterator[None]:
        parent = telemetry.context_from_carrier(carrier)
        with telemetry.tracer().start_as_current_span("preemption run cycle", context=parent):
            yield

    def run_ends_here(self) -> None:
        """Within `run_cycle`: the pod fits somewhere (or is not for the columns): the run stops before it."""
        trace.get_current_span().set_attribute("podsched.run_ends_here", True)

    def filtered_again(self) -> None:
        """The request's Filter outcome predates a change that may let the pod fit: filtered here."""
        STALE_FILTER_RESULTS.inc()
        self.dry_run_path(FILTERED_AGAIN)

    def dry_run_path(self, path: str) -> None:
        trace.get_current_span().set_attribute("podsched.dry_run_path", path)

    def shard_carrier(self) -> dict[str, str]:
        """The current trace for the workers' requests, so each shard's span joins the PostFilter's."""
        return telemetry.carrier_of(trace.get_current_span())

    @contextlib.contextmanager
    def pod_group_cycle(self) -> Iterator[None]:
        """A "schedule pod group" span for one group's cycle in a SchedulePodGroups batch (a lone
        group's cycle is reported on the request's span)."""
        with telemetry.tracer().start_as_current_span("schedule pod group"):
            yield

    def scheduling_pod_group(self, group: PodGroup, size: int) -> None:
        trace.get_current_span().set_attributes(
            {
                "podsched.pod_group.name": f"{group.namespace}/{group.name}",
                "podsched.pod_group.size": size,
                "podsched.pod_group.min_count": group.min_count,
                "podsched.pod_group.policy": group.scheduling_policy,
            }
        )

    def pod_group_scheduled(self, scheduled: bool) -> None:
        trace.get_current_span().set_attribute("podsched.pod_group.scheduled", scheduled)

    def decided(self, pod: Pod, response: preemption_pb2.PostFilterResponse, dry_run: bool) -> None:
        """A PostFilter decision: counted in kube-scheduler's preemption metrics unless it answers an
        API dry run (not a scheduling attempt), on the pod's span and as one log line."""
        if not dry_run:
            PREEMPTION_ATTEMPTS.inc()
            if response.nominated_node_name:
                PREEMPTION_VICTIMS.observe(len(response.victims))
        victims = [f"{v.namespace}/{v.name}" for v in response.victims]
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attributes(telemetry.pod_attributes(pod))
            span.set_attributes(
                {
                    "podsched.candidates": response.candidates,
                    "podsched.nominated_node": response.nominated_node_name,
                    "podsched.victims": victims,
                    "podsched.pdb_violations": response.pdb_violations,
                    "podsched.dry_run": dry_run,
                    "podsched.message": response.message,
                }
            )
        telemetry.decision(
            log,
            "preemption for %s/%s: %s",
            pod.namespace,
            pod.name,
            f"node {response.nominated_node_name}, victims {', '.join(victims)}"
            if response.nominated_node_name
            else "no candidate",
            decision="Preemption",
            pod=f"{pod.namespace}/{pod.name}",
            candidates=response.candidates,
            node=response.nominated_node_name,
            victims=victims,
            pdb_violations=response.pdb_violations,
            dry_run=dry_run,
        )


class ShardTelemetry:
    """The "SelectVictimsOnNode shard" span of each shard a worker runs (a ShardObserver)."""

    @contextlib.contextmanager
    def selecting_victims(self, worker: int, pod_uid: str, nodes: int, carrier: Mapping[str, str]) -> Iterator[None]:
        """The shard's span, in the PostFilter's trace (the carrier the coordinator sent)."""
        with telemetry.tracer().start_as_current_span(
            "SelectVictimsOnNode shard",
            context=telemetry.context_from_carrier(carrier),
            attributes={"podsched.worker": worker, "podsched.shard_nodes": nodes, "k8s.pod.uid": pod_uid},
        ):
            yield

    def shard_answered(self, candidates: int) -> None:
        """Within `selecting_victims`: how many of the shard's nodes are candidates."""
        trace.get_current_span().set_attribute("podsched.candidates", candidates)

    def shard_failed(self, error: Exception) -> None:
        """Within `selecting_victims`: the shard failed (the coordinator fails the RPC)."""
        trace.get_current_span().record_exception(error)
