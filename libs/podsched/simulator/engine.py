"""`podsched simulate`: the whole scheduler in one process, on a simulated clock.

The same queue, framework, preemption and cluster code as the services, wired directly:
apply a file's objects -> schedule until nothing changes (grace periods and backoff elapse in
simulated time) -> next file. Every profile of the configuration schedules the pods whose
spec.schedulerName names it (podsched.scheduler.profile); other pods are never queued.
Deterministic: the preemption candidate offset is 0 and score ties go to the first node in node
order, unless an offset/RNG is injected.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from podsched.admission.resource_quota import QuotaAdmissionConfig
from podsched.api.errors import ApiError
from podsched.api.manifests import check_served, decode_object, load_documents
from podsched.api.types import PodGroup
from podsched.cluster.binder import BindError
from podsched.cluster.events import NAMESPACED
from podsched.cluster.state import Cluster
from podsched.config.scheduler_config import SchedulerConfig
from podsched.plugins.registry import build_algorithm
from podsched.preemption.evaluator import DryRunExecutor
from podsched.queue import scheduling_queue as sq
from podsched.queue.cluster_feed import queue_feed
from podsched.scheduler.driver import (
    PodGroupMember,
    ScheduleOneDriver,
    bind_failure,
    failure_of_cycle,
    record_failure,
)
from podsched.scheduler.pod_group_scheduler import (
    PodGroupScheduling,
    actuate_pod_group_result,
    starts_async_preemption,
)
from podsched.scheduler.profile import AlgorithmProfiles, only_responsible
from podsched.scheduler.schedule_one import SchedulingAlgorithm

# 2026-01-01T00:00:00Z: simulated time starts here so output is reproducible.
SIMULATION_EPOCH = 1767225600.0
DEFAULT_MAX_CYCLES = 1_000_000


@dataclass(slots=True)
class Rejection:
    kind: str
    namespace: str
    name: str
    reason: str
    message: str
    source: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(slots=True)
class CycleLog:
    """What one scheduling attempt decided (for tests, `describe` and benchmarks)."""

    time: float
    pod: str
    attempt: int
    node: str = ""
    message: str = ""
    nominated: str = ""
    victims: list[str] = field(default_factory=list)


class Simulator:
    def __init__(
        self,
        config: SchedulerConfig | None = None,
        start_time: float = SIMULATION_EPOCH,
        offset: Callable[[int], int] | None = None,
        rng: random.Random | None = None,
        executor: DryRunExecutor | None = None,
        columns: bool = True,
        admission: QuotaAdmissionConfig | None = None,
    ) -> None:
        self.config = config or SchedulerConfig()
        self.now = start_time
        clock = self.clock
        # The binder's admission, ResourceQuota included (`admission`: the --admission-config file).
        self.cluster = Cluster(clock, quota_admission=admission, keep_history=True)
        # GenericWorkload: GangScheduling's PreEnqueue holds a gang's pods until minCount exist.
        self.pod_groups = PodGroupScheduling(self.cluster, self.config) if self.config.generic_workload else None
        self.queue = sq.SchedulingQueue(
            clock,
            self.config.pod_initial_backoff_seconds,
            self.config.pod_max_backoff_seconds,
            pre_enqueue=self.pod_groups.pre_enqueue if self.pod_groups is not None else None,
        )
        run_offset = offset or (lambda n: 0)

        def build(profile: SchedulerConfig) -> SchedulingAlgorithm:
            # `columns`: the column strategy where it applies (same decisions as node by node,
            # tests/unit/test_fastpath_equivalence.py); told of every change.
            algorithm = build_algorithm(
                profile,
                self.queue.nominator,
                offset=run_offset,
                rng=rng,
                executor=executor,
                columns=columns,
                priority_classes=self.cluster.priority_classes,
            )
            if algorithm.columns is not None:
                self.cluster.listeners.append(algorithm.columns.track_changes())
            if self.pod_groups is not None:  # GenericWorkload: preemption weighs pods with their groups
                algorithm.framework.pod_groups = self.pod_groups.pod_groups
            return algorithm

        # One algorithm per profile; a pod is scheduled by its spec.schedulerName's.
        self.profiles = AlgorithmProfiles(self.config, build)
        self.algorithm = self.profiles.default
        self.cluster.listeners.append(only_responsible(self.config, queue_feed(self.queue)))
        self.driver = ScheduleOneDriver(self.queue, lambda uid: self.cluster.pods_by_uid.get(uid))
        self.rejected: list[Rejection] = []
        self.cycles: list[CycleLog] = []

    def clock(self) -> float:
        return self.now

    # --- input --------------------------------------------------------------------------------

    def apply_text(self, text: str, source: str = "-") -> list[Rejection]:
        """Apply every object of one file (document order). Bad objects are rejected one by one and
        change nothing; malformed files are rejected whole."""
        rejected: list[Rejection] = []
        try:
            documents = load_documents(text, source)
        except ApiError as error:
            error = error.as_client_side(source)
            rejected.append(
                Rejection(
                    error.kind or "",
                    error.namespace,
                    error.name or source,
                    error.reason,
                    error.kubectl_message(),
                    source,
                )
            )
            self.rejected.extend(rejected)
            return rejected
        for document in documents:
            try:
                obj = decode_object(document)
                check_served(obj, self.config.feature_enabled)  # PodGroup: only with GenericWorkload
                self.cluster.apply(obj)
            except ApiError as error:
                if error.message.startswith("no matches for kind"):
                    error = error.as_client_side(source)
                raw_metadata = document.get("metadata")
                metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
                namespace = error.namespace or str(metadata.get("namespace", "") or "")
                if not namespace and error.kind in NAMESPACED:
                    namespace = "default"
                rejected.append(
                    Rejection(
                        error.kind or str(document.get("kind", "")),
                        namespace,
                        error.name or str(metadata.get("name", "")),
                        error.reason,
                        error.kubectl_message(),
                        source,
                    )
                )
        self.rejected.extend(rejected)
        return rejected

    def apply_file(self, path: str) -> list[Rejection]:
        if path == "-":
            import sys

            return self.apply_text(sys.stdin.read(), "-")
        with open(path, encoding="utf-8") as handle:
            return self.apply_text(handle.read(), path)

    # --- scheduling ---------------------------------------------------------------------------

    def schedule_one(self) -> CycleLog | None:
        """Pop one pod and run one scheduling cycle; actuate its decision. None if nothing to do."""
        info = self.queue.pop()
        if info is None:
            return None
        pod = self.driver.skip_pod_schedule(info)
        if pod is None:
            return None
        algorithm = self.profiles.for_pod(pod)
        if algorithm is None:  # never queued (only_responsible); kept for a pod changed meanwhile
            self.queue.done(info.pod.uid)
            return None
        if self.pod_groups is not None and (group := self.pod_groups.group_of(pod)) is not None:
            return self._schedule_one_pod_group(self.pod_groups, info, group, algorithm)
        snapshot = self.cluster.snapshot()
        result = algorithm.schedule(pod, snapshot, self.cluster.pdb_list(), self.queue.nominator, self.now)
        log = CycleLog(self.now, f"{pod.namespace}/{pod.name}", info.attempts)
        if result.node_name:
            try:
                self.cluster.bind(pod.uid, result.node_name)
                log.node = result.node_name
                self.cycles.append(log)
                return log
            except BindError as error:  # the binder refuses; back off and retry
                failure = bind_failure(pod.uid, str(error))
        else:
            failure = failure_of_cycle(result)
            if failure.nominated_node_name and result.post_filter is not None:
                log.victims = [f"{v.namespace}/{v.name}" for v in result.post_filter.victims]
        log.nominated = failure.nominated_node_name
        log.message = failure.message
        # handleSchedulingFailure: the record first, then the pod back to the queue.
        record_failure(self.cluster, failure)
        self.driver.handle_scheduling_failure(info, failure)
        self.cycles.append(log)
        return log

    def _schedule_one_pod_group(
        self,
        pod_groups: PodGroupScheduling,
        popped: sq.QueuedPodInfo,
        group: PodGroup,
        algorithm: SchedulingAlgorithm,
    ) -> CycleLog | None:
        """scheduleOnePodGroup: the popped pod and its group's other queued pods in one pod-group
        cycle; a group that can be placed binds its placed pods together, otherwise none binds and
        each pod learns why. Returns the popped pod's log."""
        queued = self.driver.skip_pod_group_pod_schedule(
            [popped, *self.queue.take_group_members(group.namespace, group.name)]
        )
        if not queued:
            return None
        snapshot = self.cluster.snapshot()
        pods = [pod for _, pod in queued]
        result = pod_groups.schedule(
            algorithm, group, pods, snapshot, self.cluster.pdb_list(), self.queue.nominator, self.now
        )
        writes = actuate_pod_group_result(self.cluster, result, self.now)
        popped_log: CycleLog | None = None
        members: list[PodGroupMember] = []
        for (info, pod), write in zip(queued, writes, strict=True):
            log = CycleLog(self.now, f"{pod.namespace}/{pod.name}", info.attempts, write.node_name, write.message)
            log.nominated = write.nominated_node_name
            self.cycles.append(log)
            if info is popped:
                popped_log = log
            members.append(
                PodGroupMember(info, bool(write.node_name), write.message, write.rejector_plugins, write.error)
            )
        self.driver.add_attempted_pod_group_if_needed(
            group.namespace, group.name, result.status.code, members, preempting=starts_async_preemption(result)
        )
        return popped_log

    def run_until_quiescent(self, max_cycles: int = DEFAULT_MAX_CYCLES) -> int:
        """Schedule until nothing changes: no runnable pod, no pending termination, no backoff to wait
        for. Pods left in the unschedulable pool would only be retried by the 5-minute flush, which
        cannot succeed because nothing changed since they failed. Returns the cycles run."""
        cycles = 0
        quiet_version, quiet_since = -1, self.now
        while cycles < max_cycles:
            self.cluster.complete_terminations()
            self.cluster.reconcile()
            if self.queue.can_pop():
                if self.schedule_one() is not None:
                    cycles += 1
                continue
            termination = self.cluster.next_termination_time()
            backoff = self.queue.next_backoff_expiry()
            next_times = [t for t in (termination, backoff) if t is not None]
            if not next_times:
                break
            if termination is None:
                # Only the error backoffQ waits (rejected pod groups, and pods whose attempt failed
                # with an error): its entries are retried after each backoff whatever happens, as
                # upstream's; once the longest backoff has passed without a write to the cluster,
                # every one had a retry that changed nothing.
                version = self.cluster.resource_version
                if version != quiet_version:
                    quiet_version, quiet_since = version, self.now
                elif self.now - quiet_since > self.queue.longest_error_backoff() + sq.BACKOFF_FLUSH_INTERVAL:
                    break
            else:
                quiet_version = -1
            self.now = max(self.now, min(next_times))
            self.queue.flush_unschedulable_leftover()
        return cycles

    # --- output -------------------------------------------------------------------------------

    def result(self) -> dict[str, Any]:
        from podsched.api.manifests import encode_object, format_timestamp

        out: dict[str, Any] = {
            "pods": [encode_object(pod) for pod in self.cluster.history.values()],
            "events": [event.to_dict(format_timestamp) for event in self.cluster.events],
            "rejected": [r.to_dict() for r in self.rejected],
        }
        # Deployments, ReplicaSets and Jobs as they ended, when the input had any.
        workloads = [encode_object(w) for kind in self.cluster.workloads.values() for w in kind.values()]
        if workloads:
            out["workloads"] = workloads
        # PodGroups as they ended, with the scheduler's PodGroupInitiallyScheduled condition.
        if self.cluster.pod_groups:
            out["podGroups"] = [encode_object(group) for group in self.cluster.pod_groups.values()]
        return out
