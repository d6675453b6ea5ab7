"""The GenericWorkload part of the scheduler, wired over a cluster: GangScheduling's PreEnqueue for
the queue, one pod-group cycle per popped group (`pod_group_cycle.schedule_pod_group`, with
DefaultPreemption's PodGroupPostFilter where the profile enables preemption), and the writes that
follow it (`actuate_pod_group_result`). `simulate` and the services build it only when the
configuration turns the GenericWorkload gate on; with the gate off nothing here runs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from podsched.api.types import ObjectMeta, Pod, PodDisruptionBudget, PodGroup
from podsched.cluster.binder import BindError
from podsched.cluster.failure import record_scheduling_failure
from podsched.cluster.pod_group_status import set_pod_group_condition
from podsched.cluster.pod_groups import StorePodGroups
from podsched.cluster.state import Cluster
from podsched.config.scheduler_config import POD_GROUP_PREEMPTION_POLICY, SchedulerConfig
from podsched.framework.node_info import Snapshot
from podsched.framework.runtime import Framework
from podsched.framework.status import Code, Status
from podsched.plugins.gang_scheduling import GangScheduling
from podsched.plugins.names import DEFAULT_PREEMPTION, GANG_SCHEDULING
from podsched.preemption.pod_group_preemption import PodGroupPreemptionOutcome
from podsched.queue.nominator import Nominator
from podsched.scheduler.pod_group_cycle import (
    PodGroupPodResult,
    PodGroupPostFilter,
    PodGroupResult,
    default_pod_group_post_filter,
    schedule_pod_group,
)
from podsched.scheduler.schedule_one import SchedulingAlgorithm


class PodGroupScheduling:
    def __init__(self, cluster: Cluster, config: SchedulerConfig) -> None:
        self.pod_groups = StorePodGroups(cluster.store)
        self.gang = GangScheduling(self.pod_groups.pod_group, self.pod_groups.all_pods_count)
        self.config = config
        self.enable_pod_group_preemption_policy = config.feature_enabled(POD_GROUP_PREEMPTION_POLICY)
        self._post_filters: dict[int, PodGroupPostFilter | None] = {}

    def pre_enqueue(self, pod: Pod) -> Status | None:
        return self.gang.pre_enqueue(pod)

    def group_of(self, pod: Pod) -> PodGroup | None:
        """The PodGroup a pod is scheduled with; None for a pod outside any group or whose group
        does not exist (such a pod never leaves PreEnqueue)."""
        name = pod.spec.pod_group_name
        return None if name is None else self.pod_groups.pod_group(pod.namespace, name)

    def _post_filter(self, framework: Framework, scheduler_name: str) -> PodGroupPostFilter | None:
        """DefaultPreemption's PodGroupPostFilter for the profile whose framework this is, unless the
        profile disables it at the podGroupPostFilter extension point (disabling it at postFilter
        leaves pod-group preemption on, as upstream's separate extension points do)."""
        key = id(framework)
        if key not in self._post_filters:
            profile = self.config.profile_named(scheduler_name) or self.config
            enabled = profile.plugin_enabled("podGroupPostFilter", DEFAULT_PREEMPTION)
            self._post_filters[key] = (
                default_pod_group_post_filter(framework, self.pod_groups, self.enable_pod_group_preemption_policy)
                if enabled
                else None
            )
        return self._post_filters[key]

    def schedule(
        self,
        algorithm: SchedulingAlgorithm,
        group: PodGroup,
        pods: Sequence[Pod],
        snapshot: Snapshot,
        pdbs: Sequence[PodDisruptionBudget],
        nominator: Nominator,
        now: float,
    ) -> PodGroupResult:
        """One pod-group cycle for the group's popped `pods`, which are in flight meanwhile: their
        own nominations count as upstream's queue shows them then (`Nominator.in_flight`)."""
        scheduled = self.pod_groups.scheduled_pods(group.namespace, group.name)
        with nominator.in_flight(pods):
            return schedule_pod_group(
                algorithm,
                group,
                pods,
                scheduled,
                snapshot,
                pdbs,
                nominator,
                now,
                post_filter=self._post_filter(algorithm.framework, pods[0].spec.scheduler_name if pods else ""),
                check_preemption_policy=self.enable_pod_group_preemption_policy,
            )


@dataclass(frozen=True, slots=True)
class PodGroupWrite:
    """What happened to one pod of the group: bound to `node_name`, or failed with `message`
    (and `rejector_plugins` for the queue)."""

    pod: Pod
    node_name: str = ""
    message: str = ""
    nominated_node_name: str = ""
    rejector_plugins: frozenset[str] = frozenset()
    error: bool = False


def group_rejectors(per_pod: Iterable[Iterable[str]]) -> frozenset[str]:
    """What every pod of a group that was not placed waits on: GangScheduling (a pod of the group
    added, the group changed) and whatever rejected any of its pods (a node added, a pod gone), so
    the group's pods wait and come back together."""
    return frozenset({GANG_SCHEDULING}.union(*per_pod))


def starts_async_preemption(result: PodGroupResult) -> bool:
    """Whether the cycle's pod-group preemption sends evictions: prepareCandidateAsync skips victims
    already terminating and, with none left, starts nothing. One that does marks the group as
    running preemption, and DefaultPreemption's PreEnqueue holds the group back while it runs
    (`SchedulingQueue.add_attempted_pod_group`'s `preempting`)."""
    preemption = result.preemption
    return result.waiting_on_preemption and preemption is not None and sends_evictions(preemption.victims)


def sends_evictions(victims: Iterable[Pod | None]) -> bool:
    """Whether prepareCandidateAsync has an eviction to send: to a victim still there (None: gone)
    and not already terminating."""
    return any(victim is not None and victim.metadata.deletion_timestamp is None for victim in victims)


def actuate_pod_group_result(cluster: Cluster, result: PodGroupResult, now: float) -> list[PodGroupWrite]:
    """The writes after a pod-group cycle, as submitPodGroupAlgorithmResult makes them:

    1. A scheduled group binds its placed pods together (`Binder.bind_group`): if the binder refuses
       one, none binds and every pod fails with the refusal.
    2. A group waiting on preemption has its victims evicted (DisruptionTarget, graceful delete).
    3. Every pod that did not bind: PodScheduled=False and a FailedScheduling event with its
       message, nominated where preemption placed it.
    4. The PodGroupInitiallyScheduled condition.

    Returns one entry per pod, in the result's order. A rejected group's pods all carry
    GangScheduling among their rejectors (what they report); the queue takes them back as one
    entity that backs off and is retried whatever happens (`add_attempted_pod_group`)."""
    placements = [(r.pod.uid, r.node_name) for r in result.pods if r.node_name]
    bind_error = ""
    if placements:
        try:
            cluster.bind_group(placements)
        except BindError as error:
            bind_error = str(error)
    preemption = result.preemption
    if result.waiting_on_preemption and preemption is not None and preemption.victims and result.pods:
        scheduler_name = result.pods[0].pod.spec.scheduler_name
        for victim in preemption.victims:
            try:
                cluster.preempt_pod_group_victim(victim.uid, result.group, scheduler_name)
            except BindError:  # no longer of lower priority (its group changed): it stays
                continue
    victims = len(preemption.victims) if preemption is not None and result.waiting_on_preemption else 0
    rejected_together = group_rejectors(r.rejector_plugins for r in result.pods)
    writes: list[PodGroupWrite] = []
    for pod_result in result.pods:
        pod = pod_result.pod
        if pod_result.node_name and not bind_error:
            writes.append(PodGroupWrite(pod, node_name=pod_result.node_name))
            continue
        message = bind_error or pod_result.message
        nominated = pod_result.nominated_node_name
        if nominated:
            cluster.mark_unschedulable(pod.uid, message, nominated, victims)
        else:
            record_scheduling_failure(cluster, pod.uid, message)
        rejectors = frozenset(pod_result.rejector_plugins) if result.scheduled and not bind_error else rejected_together
        writes.append(PodGroupWrite(pod, "", message, nominated, rejectors, error=pod_result.error or bool(bind_error)))
    set_pod_group_condition(cluster.store, result.group.namespace, result.group.name, result.condition(now))
    return writes


def recorded_pod_group_result(
    cluster: Cluster,
    namespace: str,
    name: str,
    status: Status,
    waiting_on_preemption: bool,
    pods: Sequence[PodGroupWrite],
    victim_uids: Sequence[str],
) -> PodGroupResult:
    """A PodGroupResult as another process decided it (the binder writes what the preemption
    service's cycle decided), over this cluster's objects; pods no longer stored are left out."""
    group = cluster.pod_groups.get((namespace, name)) or PodGroup(ObjectMeta(name=name, namespace=namespace))
    results = [
        PodGroupPodResult(
            stored,
            None,
            node_name=write.node_name,
            message=write.message,
            rejector_plugins=set(write.rejector_plugins),
            error=write.error,
            nominated_node_name=write.nominated_node_name,
        )
        for write in pods
        if (stored := cluster.pods_by_uid.get(write.pod.uid)) is not None
    ]
    victims = [victim for uid in victim_uids if (victim := cluster.pods_by_uid.get(uid)) is not None]
    preemption = PodGroupPreemptionOutcome(Status(Code.SUCCESS), victims=victims) if waiting_on_preemption else None
    return PodGroupResult(group, status, results, waiting_on_preemption, preemption)
