"""The preemption service: PostFilter (DefaultPreemption) for pods that fit nowhere.

The coordinator holds a replica of the cluster and runs Evaluator.preempt: eligibility, the
potential nodes, the candidate offset, then the dry run, which it hands to the worker pool in
shards; it merges the shards in node order and picks the node (the five tie-breaks). Nothing is
written here: the queue service passes the decision to the binder."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import grpc
from opentelemetry import trace
from prometheus_client import Counter, Histogram

from podsched.fastpath import build_fast_algorithm
from podsched.framework.cycle_state import CycleState
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Code
from podsched.plugins.registry import build_framework
from podsched.preemption.evaluator import Evaluator, PreemptionOutcome
from podsched.preemption.sharding import run_shard, sharded_dry_run
from podsched.preemption.victims import NodeVictims
from podsched.scheduler.fit_error import FitError
from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from podsched_service import telemetry
from podsched_service.codec import node_to_status, reference
from podsched_service.scheduling import ClusterCopy, PodLookupError, load_scheduler_config, pod_to_place

from .config import PreemptionConfig
from .workers import WorkerPool, WorkerSettings

log = logging.getLogger(__name__)

# kube-scheduler's names, help texts and buckets.
PREEMPTION_ATTEMPTS = Counter("scheduler_preemption_attempts", "Total preemption attempts in the cluster till now")
PREEMPTION_VICTIMS = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    # kube-scheduler: "we think #victims>64 is pretty rare, therefore [64, +Inf) is considered a single bucket."
    buckets=[1, 2, 4, 8, 16, 32, 64],
)

STALE_FILTER_RESULTS = Counter(
    "podsched_preemption_stale_filter_results",
    "PostFilter requests whose Filter outcome predates a change that may let the pod fit (filtered again here)",
)


class PreemptionServicer(preemption_pb2_grpc.PreemptionServicer):
    def __init__(self, config: PreemptionConfig) -> None:
        self.config = config
        self.copy = ClusterCopy(config.kafka_bootstrap_servers, config.topic_prefix)
        self.scheduler_config = load_scheduler_config(config.scheduler_config)
        self.framework = build_framework(self.scheduler_config, self.copy.nominator)
        # The vectorized dry run (podsched.fastpath) decides in-process whenever it applies (resource-
        # only pods and clusters without inter-pod affinity): at 5000 nodes it is ~35x faster than
        # the plain SelectVictimsOnNode, more than the workers' parallelism can win back. The rest
        # goes to the worker pool. Both give the same answer (tests/unit/test_fastpath_equivalence.py).
        self.fast = build_fast_algorithm(self.scheduler_config, self.copy.nominator, offset=lambda n: 0)
        self.copy.cluster.listeners.append(self.fast.track_changes())
        self.pool: WorkerPool | None = None
        if config.workers > 0:
            self.pool = WorkerPool(
                config.workers,
                WorkerSettings(
                    config.kafka_bootstrap_servers,
                    config.topic_prefix,
                    config.scheduler_config,
                    config.otlp_endpoint,
                    config.trace_sample_ratio,
                    config.log_format,
                ),
            )

    async def start(self) -> None:
        if self.pool is not None:
            self.pool.start()  # the workers replay the log while the coordinator does
        await self.copy.replica.start()
        if self.pool is not None:
            await self.pool.wait_ready()
        log.info("preemption dry run over %d worker process(es)", self.config.workers)

    async def stop(self) -> None:
        if self.pool is not None:
            self.pool.stop()
        await self.copy.replica.stop()

    async def PostFilter(self, request: preemption_pb2.PostFilterRequest, context: grpc.aio.ServicerContext) -> Any:
        replica = self.copy.replica
        await self.copy.catch_up(request.min_resource_version, context)
        cluster = self.copy.cluster
        try:
            pod = pod_to_place(cluster, request.pod)
        except PodLookupError as error:
            await context.abort(error.code, str(error))
        filtered = request.filter_result
        diagnosis = node_to_status(list(filtered.node_statuses), filtered.absent_status)
        fit_error = FitError(filtered.num_all_nodes, diagnosis, filtered.pre_filter_message)
        snapshot = cluster.snapshot()
        now = time.time()
        version = replica.version
        pods_by_uid = cluster.pods_by_uid
        assumed = [(n.pod_uid, n.node_name) for n in request.assumed_nominations]

        def run_shards(shards: Sequence[Sequence[NodeInfo]], wanted: int) -> list[list[NodeVictims]]:
            if self.pool is None:
                pdbs = cluster.pdb_list()
                return [run_shard(self.framework, state, pod, shard, pdbs, now, wanted) for shard in shards]
            return self.pool.run_shards(
                shards, wanted, request.pod.uid, request.pod.pod_json, version, now, pods_by_uid, assumed
            )

        workers = max(1, self.config.workers)
        evaluator = Evaluator(
            self.framework,
            self.scheduler_config.preemption_args,
            offset=lambda n: 0,  # deterministic: a dry run predicts exactly what the real apply does
            executor=sharded_dry_run(run_shards, workers),
        )
        state = CycleState()
        outcome: PreemptionOutcome | None = None
        span = trace.get_current_span()
        try:
            # The batch's earlier nominations count here as they will in the log (and in the workers).
            with self.copy.assumed_nominations(request.assumed_nominations):
                if request.filter_resource_version and self.copy.room.may_fit_since(
                    pod, request.filter_resource_version
                ):
                    # This copy has a change the filter's answer predates that may let the pod fit:
                    # deciding on that diagnosis could evict a pod for nothing. Filter again here,
                    # on the same copy PostFilter then reads (one snapshot, as in kube-scheduler).
                    STALE_FILTER_RESULTS.inc()
                    span.set_attribute("podsched.dry_run_path", "filtered again")
                    cycle = self.fast.schedule(pod, snapshot, cluster.pdb_list(), self.copy.nominator, now)
                    if cycle.node_name or cycle.fit_error is None or cycle.preemption is None:
                        # It fits now (or the cycle ended in an error): the queue filters it again.
                        return preemption_pb2.PostFilterResponse(stale_filter_result=True, resource_version=version)
                    fit_error = FitError(cycle.fit_error.num_all_nodes, cycle.fit_error.node_to_status)
                    fit_error.pre_filter_msg = cycle.fit_error.pre_filter_msg
                    outcome = cycle.preemption
                elif self.config.dry_run == "auto":
                    outcome = self.fast.post_filter(
                        pod, diagnosis, snapshot, cluster.pdb_list(), self.copy.nominator, now
                    )
                    span.set_attribute("podsched.dry_run_path", "vectorized" if outcome else "workers")
                if outcome is None:
                    self.framework.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
                    outcome = evaluator.preempt(
                        state, pod, diagnosis, snapshot, cluster.pdb_list(), self.copy.nominator, now
                    )
        except (TimeoutError, RuntimeError) as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"preemption dry run failed: {error}")
        assert outcome is not None
        if outcome.status.code == Code.ERROR or outcome.status.message:
            fit_error.post_filter_msg = "preemption: " + outcome.status.message
        dry_run = bool(request.pod.pod_json)  # an API dry run: not a scheduling attempt, not counted
        if not dry_run:
            PREEMPTION_ATTEMPTS.inc()
        response = preemption_pb2.PostFilterResponse(
            message=fit_error.message(), candidates=len(outcome.candidates), resource_version=version
        )
        result = outcome.result
        if result is not None and result.nominated_node_name:
            response.nominated_node_name = result.nominated_node_name
            response.victims.extend(reference(victim) for victim in result.victims)
            response.nominations_to_clear.extend(reference(p) for p in result.lower_priority_nominated_pods)
            chosen = next((c for c in outcome.candidates if c.node_name == result.nominated_node_name), None)
            response.pdb_violations = chosen.num_pdb_violations if chosen is not None else 0
        elif result is not None:
            response.clear_own_nomination = True
        if response.nominated_node_name and not dry_run:
            PREEMPTION_VICTIMS.observe(len(response.victims))
        self._explain(pod, response, dry_run)
        return response

    def _explain(self, pod: Any, response: preemption_pb2.PostFilterResponse, dry_run: bool) -> None:
        """The decision on the PostFilter span and as one log line."""
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
