"""The filter service: Filter and Score over every node, on a replica that follows the binder's log.

Pods of one request are placed in order on the same replica: a pod placed earlier in the batch is
assumed on its node (AssumedPods, as kube-scheduler's cache assumes a pod before its bind completes)
while later pods are filtered, then the assumptions are forgotten; the binds themselves come back
through the log. The batch stops at the first pod that fits nowhere."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

import grpc

from podsched.api.types import Pod
from podsched.cluster.state import Cluster
from podsched.config.scheduler_config import SchedulerConfig
from podsched.plugins.registry import build_algorithm
from podsched.scheduler.assumed import AssumedPods, BoundPod
from podsched.scheduler.profile import AlgorithmProfiles
from podsched.scheduler.schedule_one import CycleResult, SchedulingAlgorithm
from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc
from podsched_service.clock import Clock, SystemClock
from podsched_service.codec import status_groups
from podsched_service.scheduling import (
    ClusterCopy,
    PodLookupError,
    assume_binds,
    load_scheduler_config,
    pod_to_place,
)

from .config import FilterConfig
from .instrumentation import FilterTelemetry

log = logging.getLogger(__name__)


class FilterObserver(Protocol):
    """What the filter reports of each pod it places (instrumentation.FilterTelemetry)."""

    def placed(self, pod: Pod, found: filter_pb2.Placement, carrier: Mapping[str, str], single: bool) -> None:
        """`carrier`: the pod's trace context as the request sent it; `single`: the request's only pod."""
        ...


class FilterServicer(filter_pb2_grpc.FilterServicer):
    def __init__(
        self, config: FilterConfig, clock: Clock | None = None, observer: FilterObserver | None = None
    ) -> None:
        self.config = config
        self.clock = clock or SystemClock()  # the cycles' `now` (injected: tests run the servicer on a fixed time)
        self.observer = observer or FilterTelemetry()
        scheduler_config = load_scheduler_config(config.scheduler_config)
        self.copy = ClusterCopy(
            config.kafka_bootstrap_servers,
            config.topic_prefix,
            scheduler_config=scheduler_config,
            clock=self.clock.time,
        )
        self.profiles = AlgorithmProfiles(scheduler_config, self._build)
        # The profiles' column strategies, told of every node an assumption changes.
        self._column_strategies = [algorithm.columns for algorithm in self.profiles if algorithm.columns is not None]
        # The pods the last request assumed, with their bound copies: the next request assumes the
        # ones it placed again, as binds under way, with the same copies.
        self._last_bound: dict[str, BoundPod] = {}

    def _build(self, profile: SchedulerConfig) -> SchedulingAlgorithm:
        """A profile's Filter and Score. PostFilter is the preemption service's: here a pod that fits
        nowhere gets its diagnosis only."""
        algorithm = build_algorithm(replace(profile, preemption_enabled=False), self.copy.nominator, offset=lambda n: 0)
        if algorithm.columns is not None:
            self.copy.cluster.listeners.append(algorithm.columns.track_changes())
        return algorithm

    def _node_changed(self, node_name: str) -> None:
        for strategy in self._column_strategies:
            strategy.mark_dirty(node_name)

    async def start(self) -> None:
        await self.copy.replica.start()

    async def stop(self) -> None:
        await self.copy.replica.stop()

    async def FindNodes(self, request: filter_pb2.FindNodesRequest, context: grpc.aio.ServicerContext) -> Any:
        replica = self.copy.replica
        await self.copy.catch_up(request.min_resource_version, context)
        cluster = self.copy.cluster
        with self.copy.assumed_nominations(request.assumed_nominations):
            placements = self._place(request, cluster)
        return filter_pb2.FindNodesResponse(placements=placements, resource_version=replica.version)

    def _place(self, request: filter_pb2.FindNodesRequest, cluster: Cluster) -> list[filter_pb2.Placement]:
        profiles = self.profiles
        start_index = profiles.next_start_node_index
        placements: list[filter_pb2.Placement] = []
        # One snapshot for the request: it holds the cluster's own NodeInfos, on which the pods placed
        # earlier in the request (and the caller's binds under way) are assumed until it ends
        # (copying the 5000-node map for every pod was a tenth of this service's CPU).
        snapshot = cluster.snapshot()
        pdbs = cluster.pdb_list()
        assumed = AssumedPods(snapshot, self.copy.nominator, self._node_changed, earlier=self._last_bound)
        try:
            assume_binds(assumed, cluster, request.assumed_binds)
            for ref in request.pods:
                try:
                    pod = pod_to_place(cluster, ref)
                except PodLookupError as error:
                    placements.append(filter_pb2.Placement(uid=ref.uid, error=str(error)))
                    continue
                if pod.spec.node_name:
                    placements.append(
                        filter_pb2.Placement(uid=ref.uid, error=f"pod is already bound to {pod.spec.node_name}")
                    )
                    continue
                algorithm = profiles.for_pod(pod)
                if algorithm is None:  # the queue never sends one; a dry run may
                    message = f'profile not found for scheduler name "{pod.spec.scheduler_name}"'
                    placements.append(filter_pb2.Placement(uid=ref.uid, error=message))
                    continue
                result = algorithm.schedule(pod, snapshot, pdbs, self.copy.nominator, self.clock.time())
                placements.append(placement(ref.uid, result, len(cluster.node_infos)))
                self.observer.placed(pod, placements[-1], ref.trace_context, single=len(request.pods) == 1)
                if not result.node_name:
                    break
                if len(request.pods) > 1 and not ref.pod_json:
                    assumed.assume(pod, result.node_name)
        finally:
            assumed.forget_all()  # the binds arrive through the log
            if request.dry_run:
                profiles.next_start_node_index = start_index
            else:
                self._last_bound = assumed.bound
        return placements


def placement(uid: str, result: CycleResult, num_all_nodes: int) -> filter_pb2.Placement:
    out = filter_pb2.Placement(
        uid=uid,
        node_name=result.node_name,
        evaluated_nodes=result.evaluated_nodes,
        feasible_nodes=result.feasible_nodes,
        num_all_nodes=num_all_nodes,
        error=result.error,
    )
    fit_error = result.fit_error
    if fit_error is not None:
        out.message = fit_error.message()
        out.pre_filter_message = fit_error.pre_filter_msg
        out.node_statuses.extend(status_groups(fit_error.node_to_status))
        absent = fit_error.node_to_status.absent
        out.absent_status.CopyFrom(
            filter_pb2.NodeStatusGroup(code=int(absent.code), reasons=absent.reasons, plugin=absent.plugin)
        )
        out.rejector_plugins.extend(sorted(result.rejector_plugins))
        out.num_all_nodes = fit_error.num_all_nodes
    return out
