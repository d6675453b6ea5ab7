"""The preemption service: PostFilter (DefaultPreemption) for pods that fit nowhere.

The coordinator holds a replica of the cluster and runs Evaluator.preempt: eligibility, the
potential nodes, the candidate offset, then the dry run, which it hands to the worker pool in
shards; it merges the shards in node order and picks the node (the five tie-breaks). Nothing is
written here: the queue service passes the decision to the binder."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from podsched.api.types import Pod, PodGroup
from podsched.config.scheduler_config import SchedulerConfig
from podsched.fastpath import ColumnStrategy, VectorizedDryRun
from podsched.fastpath.dry_run import COLUMN_INPUTS_KEY, OutcomeMemory
from podsched.framework.cycle_state import PreFilterOnRead
from podsched.framework.interface import ClusterView, NodeToStatus, PostFilterResult
from podsched.framework.node_info import NodeInfo, Snapshot
from podsched.framework.runtime import run_post_filter
from podsched.framework.status import Status
from podsched.plugins.registry import build_algorithm, post_filter_plugins, victim_policy_of
from podsched.preemption.evaluator import DryRunExecutor
from podsched.preemption.explain import explain_preemption
from podsched.preemption.sharding import run_shard, sharded_dry_run
from podsched.preemption.victims import NodeVictims, VictimPolicy
from podsched.scheduler.assumed import AssumedPods
from podsched.scheduler.fit_error import FitError
from podsched.scheduler.pod_group_cycle import PodGroupResult
from podsched.scheduler.pod_group_scheduler import PodGroupScheduling
from podsched.scheduler.profile import Profiles
from podsched.scheduler.schedule_one import SchedulingAlgorithm
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from podsched_service.clock import Clock, SystemClock
from podsched_service.codec import node_to_status, reference
from podsched_service.scheduling import (
    ClusterCopy,
    PodLookupError,
    assume_binds,
    decision_nominations,
    load_scheduler_config,
    pod_to_place,
)

from .config import PreemptionConfig
from .instrumentation import VECTORIZED, WORKERS, PostFilterTelemetry
from .workers import WorkerPool, WorkerSettings

log = logging.getLogger(__name__)


class PostFilterObserver(Protocol):
    """What the coordinator reports at each step of a decision (instrumentation.PostFilterTelemetry).
    Hooks annotate the current request, or the run cycle inside `run_cycle`."""

    def run_decided(self, decisions: int) -> None: ...
    def run_cycle(self, carrier: Mapping[str, str]) -> AbstractContextManager[None]: ...
    def run_ends_here(self) -> None: ...
    def filtered_again(self) -> None: ...
    def dry_run_path(self, path: str) -> None: ...
    def shard_carrier(self) -> dict[str, str]: ...
    def pod_group_cycle(self) -> AbstractContextManager[None]: ...
    def scheduling_pod_group(self, group: PodGroup, size: int) -> None: ...
    def pod_group_scheduled(self, scheduled: bool) -> None: ...
    def decided(self, pod: Pod, response: preemption_pb2.PostFilterResponse, dry_run: bool) -> None: ...


@dataclass(frozen=True, slots=True)
class ProfilePostFilter:
    """One profile's PostFilter: its configuration (DefaultPreemption's args) and its algorithm, whose
    framework the dry run filters with and whose column strategy the vectorized dry run reads, with
    what the vectorized dry runs of PostFilter requests found (each request's dry run computes only
    the nodes that changed since)."""

    config: SchedulerConfig
    algorithm: SchedulingAlgorithm
    columns: ColumnStrategy
    dry_run_memory: OutcomeMemory


@dataclass(frozen=True, slots=True)
class _PodGroupEntry:
    """A group of a SchedulePodGroup(s) request, looked up: its pods, their refs and their profile."""

    group: PodGroup
    pods: list[Pod]
    refs: list[filter_pb2.PodToPlace]
    profile: ProfilePostFilter


def _pod_group_response(
    entry: _PodGroupEntry, result: PodGroupResult, resource_version: int
) -> preemption_pb2.SchedulePodGroupResponse:
    response = preemption_pb2.SchedulePodGroupResponse(
        code=int(result.status.code),
        message=result.status.message,
        waiting_on_preemption=result.waiting_on_preemption,
        resource_version=resource_version,
    )
    if result.waiting_on_preemption and result.preemption is not None:
        response.victim_uids.extend(victim.uid for victim in result.preemption.victims)
    for ref, pod_result in zip(entry.refs, result.pods, strict=True):
        response.pods.add(
            pod_uid=pod_result.pod.uid,
            node_name=pod_result.node_name,
            message=pod_result.message,
            rejector_plugins=sorted(pod_result.rejector_plugins),
            error=pod_result.error,
            nominated_node_name=pod_result.nominated_node_name,
            trace_context=ref.trace_context,
        )
    return response


class PreemptionServicer(preemption_pb2_grpc.PreemptionServicer):
    def __init__(
        self, config: PreemptionConfig, clock: Clock | None = None, observer: PostFilterObserver | None = None
    ) -> None:
        self.config = config
        self.clock = clock or SystemClock()  # the dry runs' `now` (grace periods, victims' start times)
        self.observer = observer or PostFilterTelemetry()
        self.scheduler_config = load_scheduler_config(config.scheduler_config)
        # Pending pods are decoded when a request comes: most are scheduled without ever reaching here.
        self.copy = ClusterCopy(
            config.kafka_bootstrap_servers,
            config.topic_prefix,
            scheduler_config=self.scheduler_config,
            defer_pending_pods=True,
            clock=self.clock.time,
        )
        # GenericWorkload: pod-group cycles (SchedulePodGroup) on this copy; None with the gate off.
        self.pod_groups = (
            PodGroupScheduling(self.copy.cluster, self.scheduler_config)
            if self.scheduler_config.generic_workload
            else None
        )
        # Each pod is decided by its own profile's (spec.schedulerName).
        self.profiles = Profiles(self.scheduler_config, self._build)
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

    def _build(self, profile: SchedulerConfig) -> ProfilePostFilter:
        algorithm = build_algorithm(
            profile, self.copy.nominator, offset=lambda n: 0, priority_classes=self.copy.cluster.priority_classes
        )
        columns = algorithm.columns
        assert isinstance(columns, ColumnStrategy)  # build_algorithm's default
        self.copy.cluster.listeners.append(columns.track_changes())
        if self.pod_groups is not None:  # GenericWorkload: preemption weighs pods with their groups
            algorithm.framework.pod_groups = self.pod_groups.pod_groups
        return ProfilePostFilter(profile, algorithm, columns, OutcomeMemory())

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
        await self.copy.catch_up(request.min_resource_version, context)
        pod = await self._lookup(request.pod, context)
        try:
            # The batch's earlier nominations count here as they will in the log (and in the workers).
            with self.copy.assumed_nominations(request.assumed_nominations), self._assumed_binds(request.assumed_binds):
                return self._decide(pod, request)
        except (TimeoutError, RuntimeError) as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"preemption dry run failed: {error}")

    async def PostFilterRun(
        self, request: preemption_pb2.PostFilterRunRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        first = request.first
        # The run reads no pending pod but its own and the nominated ones (the nominator, the
        # victims and PDBs are of bound pods): the other pending pods' records stay undecoded, as
        # without a run. Decoding them all was a fifth of this service's CPU in PreemptionAsync and
        # Unschedulable, whose every run came while thousands of measured pods were pending.
        run_pods = [
            first.pod.uid,
            *(n.pod_uid for n in first.assumed_nominations),
            *(b.pod_uid for b in first.assumed_binds),
            *(ref.uid for ref in request.next),
        ]
        await self.copy.catch_up(first.min_resource_version, context, pods=run_pods)
        if first.pod.pod_json:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "first.pod: a run is for stored pods (PostFilter answers dry runs)"
            )
        pod = await self._lookup(first.pod, context)
        response = preemption_pb2.PostFilterRunResponse(resource_version=self.copy.replica.version)
        try:
            with contextlib.ExitStack() as assumed:
                assumed.enter_context(self.copy.assumed_nominations(first.assumed_nominations))
                assumed.enter_context(self._assumed_binds(first.assumed_binds))
                decision = self._decide(pod, first)
                response.decisions.add(decision=decision)
                if not decision.stale_filter_result:
                    assumed.enter_context(self._assume(pod, decision))
                    self._continue_run(request.next, response, assumed)
        except (TimeoutError, RuntimeError) as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"preemption dry run failed: {error}")
        self.observer.run_decided(len(response.decisions))
        return response

    async def SchedulePodGroup(
        self, request: preemption_pb2.SchedulePodGroupRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        """One pod-group cycle on this copy (podsched.scheduler.pod_group_cycle), with pod-group
        preemption where the pods' profile enables DefaultPreemption. Writes nothing."""
        await self._require_pod_groups(context)
        await self.copy.catch_up(request.min_resource_version, context)
        try:
            entry = self._pod_group_entry(request.namespace, request.name, request.pods)
        except PodLookupError as error:
            await context.abort(error.code, str(error))
            raise
        with self.copy.assumed_nominations(request.assumed_nominations):
            (decided,) = self._schedule_pod_groups([entry], batch=False)
        return decided

    async def SchedulePodGroups(
        self, request: preemption_pb2.SchedulePodGroupsRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        """The pod-group cycles of groups popped in a row, in order, each with the caller's binds
        under way and the groups scheduled before it assumed; stops after the first group that is
        not scheduled. Writes nothing."""
        await self._require_pod_groups(context)
        await self.copy.catch_up(request.min_resource_version, context)
        entries: list[_PodGroupEntry] = []
        for group in request.groups:
            try:
                entries.append(self._pod_group_entry(group.namespace, group.name, group.pods))
            except PodLookupError as error:
                if not entries:  # nothing decidable before it: fail as SchedulePodGroup would
                    await context.abort(error.code, str(error))
                    raise
                break  # decided up to it; the queue tries it again first
        with self.copy.assumed_nominations(request.assumed_nominations):
            decided = self._schedule_pod_groups(entries, batch=True, assumed_binds=request.assumed_binds)
        return preemption_pb2.SchedulePodGroupsResponse(decided=decided, resource_version=self.copy.replica.version)

    async def _require_pod_groups(self, context: grpc.aio.ServicerContext) -> None:
        if self.pod_groups is None:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION, "pod groups are scheduled only with the GenericWorkload gate on"
            )

    def _pod_group_entry(self, namespace: str, name: str, refs: Sequence[filter_pb2.PodToPlace]) -> _PodGroupEntry:
        """The group, its pods and their profile, or PodLookupError naming what is missing."""
        group = self.copy.cluster.pod_groups.get((namespace, name))
        if group is None:
            raise PodLookupError(grpc.StatusCode.NOT_FOUND, f'podgroups.scheduling.k8s.io "{name}" not found')
        pods = [pod_to_place(self.copy.cluster, ref) for ref in refs]
        profile = self.profiles.for_pod(pods[0]) if pods else None
        if profile is None:
            raise PodLookupError(grpc.StatusCode.FAILED_PRECONDITION, "no profile schedules the group's pods")
        return _PodGroupEntry(group, pods, list(refs), profile)

    def _schedule_pod_groups(
        self,
        entries: Sequence[_PodGroupEntry],
        *,
        batch: bool,
        assumed_binds: Sequence[filter_pb2.AssumedBind] = (),
    ) -> list[preemption_pb2.SchedulePodGroupResponse]:
        """The groups' cycles in order on one snapshot, the caller's binds under way assumed first,
        then the placed pods of each scheduled group for the groups after it, until the first group
        not scheduled. In a batch each cycle is reported on its own span; a lone group's on the
        request's."""
        assert self.pod_groups is not None
        cluster = self.copy.cluster
        snapshot = cluster.snapshot()
        pdbs = cluster.pdb_list()
        decided: list[preemption_pb2.SchedulePodGroupResponse] = []
        assumed = AssumedPods(snapshot, self.copy.nominator, self._node_changed)
        try:
            assume_binds(assumed, cluster, assumed_binds)
            for entry in entries:
                with self.observer.pod_group_cycle() if batch else contextlib.nullcontext():
                    self.observer.scheduling_pod_group(entry.group, len(entry.pods))
                    result = self.pod_groups.schedule(
                        entry.profile.algorithm,
                        entry.group,
                        entry.pods,
                        snapshot,
                        pdbs,
                        self.copy.nominator,
                        self.clock.time(),
                    )
                    self.observer.pod_group_scheduled(result.scheduled)
                decided.append(_pod_group_response(entry, result, self.copy.replica.version))
                if not result.scheduled:
                    break
                for pod_result in result.pods:
                    if pod_result.node_name:
                        assumed.assume(pod_result.pod, pod_result.node_name)
        finally:
            assumed.forget_all()
        return decided

    def _node_changed(self, node_name: str) -> None:
        """A node whose pods an assumption changed: every profile's column strategy re-reads it."""
        for profile in self.profiles:
            profile.columns.mark_dirty(node_name)

    async def _lookup(self, ref: filter_pb2.PodToPlace, context: grpc.aio.ServicerContext) -> Pod:
        try:
            return pod_to_place(self.copy.cluster, ref)
        except PodLookupError as error:
            await context.abort(error.code, str(error))
            raise  # unreachable: abort raises

    @contextlib.contextmanager
    def _assumed_binds(self, binds: Sequence[filter_pb2.AssumedBind]) -> Iterator[None]:
        """The caller's placements whose Bind is still being committed, on their nodes for one request:
        kube-scheduler's PostFilter sees the pods its earlier cycles assumed, whether or not their
        binding has finished."""
        if not binds:
            yield
            return
        assumed = AssumedPods(self.copy.cluster.snapshot(), self.copy.nominator, self._node_changed)
        try:
            assume_binds(assumed, self.copy.cluster, binds)
            yield
        finally:
            assumed.forget_all()

    def _assume(self, pod: Pod, decision: preemption_pb2.PostFilterResponse) -> AbstractContextManager[None]:
        """The nominator as the decision's RecordFailure will leave it, as the queue assumes it for
        the cycles after it."""
        return self.copy.assumed_nominations(decision_nominations(pod.uid, decision))

    def _continue_run(
        self,
        refs: Sequence[filter_pb2.PodToPlace],
        response: preemption_pb2.PostFilterRunResponse,
        assumed: contextlib.ExitStack,
    ) -> None:
        """The cycles of the pods after the run's first, in order, each on this copy with every earlier
        decision assumed, while each fits nowhere: the Filter outcome the next FindNodes would give
        (a pod that fits nowhere visits every node, so the filter's round-robin start is unaffected),
        then PostFilter. Stops before a pod that fits, is gone or bound, or is not for the columns;
        with PODSCHED_DRY_RUN=workers (every dry run on the worker pool) a run is its first pod only."""
        if self.config.dry_run != "auto":
            return
        cluster = self.copy.cluster
        snapshot = cluster.snapshot()
        pdbs = cluster.pdb_list()
        now = self.clock.time()
        for ref in refs:
            pod = cluster.pods_by_uid.get(ref.uid)
            profile = self.profiles.for_pod(pod) if pod is not None else None
            if pod is None or pod.spec.node_name or ref.pod_json or profile is None:
                return
            with self.observer.run_cycle(ref.trace_context):
                cycle = profile.algorithm.schedule_on_columns(pod, snapshot, pdbs, self.copy.nominator, now)
                if cycle is None or cycle.node_name or cycle.fit_error is None or cycle.post_filter_status is None:
                    self.observer.run_ends_here()
                    return
                self.observer.dry_run_path(VECTORIZED)
                answer = (cycle.post_filter, cycle.post_filter_status)
                decision = self._response(pod, answer, cycle.fit_error, response.resource_version)
            fit_error = cycle.fit_error
            response.decisions.add(
                filter_result=filter_pb2.Placement(
                    uid=pod.uid,
                    evaluated_nodes=cycle.evaluated_nodes,
                    feasible_nodes=cycle.feasible_nodes,
                    rejector_plugins=sorted(cycle.rejector_plugins),
                    num_all_nodes=fit_error.num_all_nodes,
                    pre_filter_message=fit_error.pre_filter_msg,
                ),
                decision=decision,
            )
            assumed.enter_context(self._assume(pod, decision))

    def _decide(self, pod: Pod, request: preemption_pb2.PostFilterRequest) -> preemption_pb2.PostFilterResponse:
        """PostFilter for `pod` from the Filter outcome the request carries (the request's assumed
        nominations in place), or a stale answer when this copy has since made room for the pod."""
        cluster = self.copy.cluster
        filtered = request.filter_result
        diagnosis = node_to_status(filtered.node_statuses, filtered.absent_status)
        fit_error = FitError(filtered.num_all_nodes, diagnosis, filtered.pre_filter_message)
        snapshot = cluster.snapshot()
        now = self.clock.time()
        version = self.copy.replica.version
        profile = self.profiles.for_pod(pod)
        if profile is None or not profile.config.preemption_enabled:
            # No PostFilter in the pod's profile (or no profile: another scheduler's pod): the
            # failure is the Filter outcome alone, as the queue records it without asking here.
            return preemption_pb2.PostFilterResponse(message=fit_error.message(), resource_version=version)
        answer: tuple[PostFilterResult | None, Status] | None = None
        if request.filter_resource_version and self.copy.room.may_fit_since(pod, request.filter_resource_version):
            # This copy has a change the filter's answer predates that may let the pod fit: deciding
            # on that diagnosis could evict a pod for nothing. Filter again here, on the same copy
            # PostFilter then reads (one snapshot, as in kube-scheduler).
            self.observer.filtered_again()
            cycle = profile.algorithm.schedule(pod, snapshot, cluster.pdb_list(), self.copy.nominator, now)
            if cycle.node_name or cycle.fit_error is None or cycle.post_filter_status is None:
                # It fits now (or the cycle ended in an error): the queue filters it again.
                return preemption_pb2.PostFilterResponse(stale_filter_result=True, resource_version=version)
            fit_error = FitError(cycle.fit_error.num_all_nodes, cycle.fit_error.node_to_status)
            fit_error.pre_filter_msg = cycle.fit_error.pre_filter_msg
            answer = (cycle.post_filter, cycle.post_filter_status)
        if answer is None:
            answer = self._post_filter(profile, pod, request, diagnosis, snapshot, now)
        dry_run = bool(request.pod.pod_json)
        response = self._response(pod, answer, fit_error, version, dry_run=dry_run)
        if dry_run:  # what apply --dry-run=server prints under its prediction
            policy = victim_policy_of(profile.algorithm.framework, now)
            # With GenericWorkload, also what the pods' PodGroups changed (the framework's lister).
            groups = profile.algorithm.framework.pod_groups
            response.explanations.extend(
                explain_preemption(pod, answer[0], snapshot, cluster.pdb_list(), policy, now, groups)
            )
        return response

    def _post_filter(
        self,
        profile: ProfilePostFilter,
        pod: Pod,
        request: preemption_pb2.PostFilterRequest,
        diagnosis: NodeToStatus,
        snapshot: Snapshot,
        now: float,
    ) -> tuple[PostFilterResult | None, Status]:
        """DefaultPreemption on the request's Filter outcome. The vectorized dry run (podsched.fastpath)
        decides in-process whenever it applies (resource-only pods and clusters without inter-pod
        affinity): at 5000 nodes it is ~35x faster than the plain SelectVictimsOnNode, more than the
        workers' parallelism can win back. The rest goes to the worker pool (or runs in-process
        without workers). Both give the same answer (tests/unit/test_fastpath_equivalence.py)."""
        cluster = self.copy.cluster
        version = self.copy.replica.version
        pods_by_uid = cluster.pods_by_uid
        assumed = [(n.pod_uid, n.node_name) for n in request.assumed_nominations]
        framework = profile.algorithm.framework
        nodes = snapshot.node_info_list
        # PreFilter runs if the dry run goes node by node (or to the workers, which run their own).
        state = PreFilterOnRead(
            lambda state: framework.run_pre_filter_plugins(state, pod, nodes), other_keys=(COLUMN_INPUTS_KEY,)
        )

        def run_shards(
            shards: Sequence[Sequence[NodeInfo]], wanted: int, policy: VictimPolicy
        ) -> list[list[NodeVictims]]:
            if self.pool is None:
                pdbs = cluster.pdb_list()
                return [run_shard(framework, state, pod, shard, pdbs, now, wanted, policy) for shard in shards]
            # The workers select victims with their own copy of the profile's PostFilter plugin.
            return self.pool.run_shards(
                shards,
                wanted,
                request.pod.uid,
                request.pod.pod_json,
                version,
                now,
                pods_by_uid,
                assumed,
                binds=[(b.pod_uid, b.node_name) for b in request.assumed_binds],
                trace_carrier=self.observer.shard_carrier(),
            )

        executor: DryRunExecutor = sharded_dry_run(run_shards, max(1, self.config.workers))
        vectorized = None
        if self.config.dry_run == "auto":
            executor = vectorized = VectorizedDryRun(profile.columns, fallback=executor, memory=profile.dry_run_memory)
        # The profile's PostFilter plugins (DefaultPreemption, PreemptionToleration) on this executor.
        plugins = post_filter_plugins(
            profile.config,
            framework,
            offset=lambda n: 0,  # deterministic: a dry run predicts exactly what the real apply does
            executor=executor,
            priority_classes=cluster.priority_classes,
        )
        view = ClusterView(snapshot, cluster.pdb_list(), self.copy.nominator, now)
        answer = run_post_filter(plugins, state, pod, diagnosis, view)
        self.observer.dry_run_path(VECTORIZED if vectorized and vectorized.vectorized_runs else WORKERS)
        return answer

    def _response(
        self,
        pod: Pod,
        answer: tuple[PostFilterResult | None, Status],
        fit_error: FitError,
        version: int,
        dry_run: bool = False,
    ) -> preemption_pb2.PostFilterResponse:
        """The PostFilter decision as the queue passes it to the binder (reported to the observer)."""
        result, status = answer
        fit_error.post_filter_msg = status.message
        candidates = result.candidates if result is not None else []
        response = preemption_pb2.PostFilterResponse(
            message=fit_error.message(), candidates=len(candidates), resource_version=version
        )
        if result is not None and result.nominated_node_name:
            response.nominated_node_name = result.nominated_node_name
            response.victims.extend(reference(victim) for victim in result.victims)
            response.nominations_to_clear.extend(reference(p) for p in result.lower_priority_nominated_pods)
            chosen = next((c for c in candidates if c.node_name == result.nominated_node_name), None)
            response.pdb_violations = chosen.num_pdb_violations if chosen is not None else 0
        elif result is not None:
            response.clear_own_nomination = True
        self.observer.decided(pod, response, dry_run)
        return response
