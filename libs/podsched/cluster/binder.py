"""The binder's semantics: the single writer of placement decisions.

* binds pods, refusing a bind that would overcommit a node (requests of bound *and terminating*
  pods never exceed allocatable) or bind a pod twice;
* evicts preemption victims the way kube-scheduler does: DisruptionTarget condition with reason
  PreemptionByScheduler, then a graceful delete that keeps the victim's resources on the node
  for terminationGracePeriodSeconds;
* sets and clears status.nominatedNodeName;
* writes a failed attempt as handleSchedulingFailure does (`cluster.failure` orders the writes of
  a whole decision).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from podsched.api.pod_copy import copy_pod, copy_spec, copy_status
from podsched.api.types import (
    CONDITION_DISRUPTION_TARGET,
    CONDITION_POD_SCHEDULED,
    REASON_PREEMPTION_BY_SCHEDULER,
    REASON_UNSCHEDULABLE,
    Pod,
    PodCondition,
    PodGroup,
)
from podsched.cluster import events as ev
from podsched.cluster.node_agent import NodeAgent, start
from podsched.cluster.store import Store
from podsched.framework.node_info import NodeInfo, PodInfo
from podsched.framework.resource import pod_requests
from podsched.plugins.node_resources import fits_request


# Not frozen (as ApiError): a context manager the error leaves through, such as a span, sets its
# __traceback__, which a frozen dataclass refuses (the caller then got a TypeError instead).
@dataclass(eq=False)
class BindError(Exception):
    """A bind the binder refused; `reason` is one of the constants below."""

    reason: str
    message: str

    def __str__(self) -> str:
        return self.message


BIND_ALREADY_BOUND = "AlreadyBound"
BIND_NODE_NOT_FOUND = "NodeNotFound"
BIND_POD_NOT_FOUND = "PodNotFound"
BIND_WOULD_OVERCOMMIT = "WouldOvercommit"
BIND_POD_TERMINATING = "PodTerminating"
NOT_LOWER_PRIORITY = "NotLowerPriority"


def with_condition(pod: Pod, condition: PodCondition) -> tuple[PodCondition, ...]:
    """The pod's conditions with `condition` replacing any of its type."""
    kept = tuple(c for c in pod.status.conditions if c.type != condition.type)
    return (*kept, condition)


class Binder:
    """Placement writes over the store; a refusal is a BindError raised before anything changes."""

    def __init__(
        self, store: Store, recorder: ev.EventRecorder, node_agent: NodeAgent, clock: Callable[[], float]
    ) -> None:
        self.store = store
        self.recorder = recorder
        self.node_agent = node_agent
        self.clock = clock

    def bind(self, pod_uid: str, node_name: str) -> Pod:
        """Bind a pending pod. Refuses (BindError, nothing changed) a pod already bound or terminating,
        an unknown node, or a bind that would overcommit the node: requests of bound plus
        terminating pods must stay within allocatable."""
        pod = self.store.pods_by_uid.get(pod_uid)
        if pod is None:
            raise BindError(BIND_POD_NOT_FOUND, f"pod with uid {pod_uid} not found")
        if pod.spec.node_name:
            raise BindError(
                BIND_ALREADY_BOUND, f'pod {pod.namespace}/{pod.name} is already assigned to node "{pod.spec.node_name}"'
            )
        if pod.metadata.deletion_timestamp is not None:
            raise BindError(BIND_POD_TERMINATING, f"pod {pod.namespace}/{pod.name} is being deleted")
        _node_with_room(pod, node_name, self.store.node_infos.get(node_name))
        now = self.clock()
        # Fresh copies changed in place: a bind is the binder's hottest write (see `pod_copy`).
        spec = copy_spec(pod.spec)
        spec.node_name = node_name
        status = copy_status(pod.status)
        status.nominated_node_name = ""  # cleared once bound (ClearingNominatedNodeNameAfterBinding)
        status.conditions = with_condition(pod, PodCondition(CONDITION_POD_SCHEDULED, "True", last_transition_time=now))
        start(status, now)  # the node agent starts a bound pod at once
        new = copy_pod(pod)
        new.spec = spec
        new.status = status
        self.store.stamp(new)
        self.store.store_pod(pod, new)
        self.recorder.record(
            new,
            ev.NORMAL,
            ev.SCHEDULED,
            f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}",
            action="Binding",
        )
        return new

    def bind_group(self, placements: Sequence[tuple[str, str]]) -> list[Pod]:
        """Bind a gang's pods together: every (pod uid, node) is checked as `bind` checks it, each
        counting the ones before it on its node, before any is bound; one refusal refuses them all
        (BindError, nothing changed), so a gang is never left partly bound."""
        planned: dict[str, NodeInfo] = {}
        for pod_uid, node_name in placements:
            pod = self.store.pods_by_uid.get(pod_uid)
            if pod is None:
                raise BindError(BIND_POD_NOT_FOUND, f"pod with uid {pod_uid} not found")
            if pod.spec.node_name or pod.metadata.deletion_timestamp is not None:
                return [self.bind(pod_uid, node_name)]  # raises the refusal `bind` gives
            info = _node_with_room(pod, node_name, planned.get(node_name) or self.store.node_infos.get(node_name))
            if node_name not in planned:
                info = info.clone()
                planned[node_name] = info
            info.add_pod(PodInfo(replace(pod, spec=replace(pod.spec, node_name=node_name))))
        return [self.bind(pod_uid, node_name) for pod_uid, node_name in placements]

    def mark_unschedulable(
        self, pod_uid: str, message: str, nominated_node: str = "", victims: int = 0, clear_nomination: str = ""
    ) -> Pod | None:
        """A failed attempt, written as upstream's handleSchedulingFailure writes it: a FailedScheduling
        event and one status update with PodScheduled=False/Unschedulable and, when PostFilter
        nominated a node, nominatedNodeName (after a Nominated event), or, given a `clear_nomination`
        reason, the pod's nomination cleared (after a NominationCleared event). A status that already
        says all that is not written again."""
        pod = self.store.pods_by_uid.get(pod_uid)
        if pod is None or pod.spec.node_name:
            return pod
        changes: dict[str, Any] = {}
        if nominated_node and pod.status.nominated_node_name != nominated_node:
            self._record_nomination(pod, nominated_node, victims)
            changes["nominated_node_name"] = nominated_node
        elif clear_nomination and pod.status.nominated_node_name:
            self._record_nomination_cleared(pod, clear_nomination)
            changes["nominated_node_name"] = ""
        self.recorder.record(pod, ev.WARNING, ev.FAILED_SCHEDULING, message, action="Scheduling")
        existing = pod.condition(CONDITION_POD_SCHEDULED)
        if existing is None or (existing.status, existing.reason, existing.message) != (
            "False",
            REASON_UNSCHEDULABLE,
            message,
        ):
            condition = PodCondition(CONDITION_POD_SCHEDULED, "False", REASON_UNSCHEDULABLE, message, self.clock())
            changes["conditions"] = with_condition(pod, condition)
        return self.store.update_pod_status(pod, **changes) if changes else pod

    def nominate(self, pod_uid: str, node_name: str, victims: int = 0) -> Pod | None:
        pod = self.store.pods_by_uid.get(pod_uid)
        if pod is None or pod.spec.node_name or pod.status.nominated_node_name == node_name:
            return pod
        if node_name:
            self._record_nomination(pod, node_name, victims)
        return self.store.update_pod_status(pod, nominated_node_name=node_name)

    def clear_nomination(self, pod_uid: str, because: str) -> Pod | None:
        pod = self.store.pods_by_uid.get(pod_uid)
        if pod is None or not pod.status.nominated_node_name:
            return pod
        self._record_nomination_cleared(pod, because)
        return self.store.update_pod_status(pod, nominated_node_name="")

    def _record_nomination(self, pod: Pod, node_name: str, victims: int) -> None:
        self.recorder.record(
            pod,
            ev.NORMAL,
            ev.NOMINATED,
            f"Nominated to node {node_name} after preempting {victims} pod(s)",
            action="Nominating",
        )

    def _record_nomination_cleared(self, pod: Pod, because: str) -> None:
        self.recorder.record(
            pod,
            ev.NORMAL,
            ev.NOMINATION_CLEARED,
            f"Nomination to node {pod.status.nominated_node_name} cleared: {because}",
            action="ClearingNomination",
        )

    def preempt_victim(self, victim_uid: str, preemptor: Pod, node_name: str) -> Pod | None:
        """prepareCandidate for one victim: DisruptionTarget condition, a Preempted event naming the
        preemptor and node, then a graceful delete. Victims already terminating are left alone.

        The victim must have lower priority than the preemptor: its own, or (GenericWorkload) its
        PodGroup's, which is what preemption weighs a group's pod by."""
        victim = self.store.pods_by_uid.get(victim_uid)
        if victim is None or victim.metadata.deletion_timestamp is not None:
            return victim
        if min(victim.priority, self.effective_priority(victim)) >= preemptor.priority:
            raise BindError(
                NOT_LOWER_PRIORITY,
                f"victim {victim.namespace}/{victim.name} does not have lower priority than its preemptor",
            )
        message = f"Preempted by pod {preemptor.uid} on node {node_name}"
        return self._evict(victim, preemptor.spec.scheduler_name, "pod", message, preemptor)

    def preempt_pod_group_victim(self, victim_uid: str, preemptor: PodGroup, scheduler_name: str) -> Pod | None:
        """prepareCandidate for one victim of a pod-group preemption (GenericWorkload): as
        `preempt_victim`, with the Preempted event naming the PodGroup and, as upstream's executor
        does, the candidate "cluster" (a group preempts across the cluster, not on one node). The
        victim's priority (its group's, if it has one) must be below the preemptor group's."""
        victim = self.store.pods_by_uid.get(victim_uid)
        if victim is None or victim.metadata.deletion_timestamp is not None:
            return victim
        if self.effective_priority(victim) >= preemptor.group_priority:
            raise BindError(
                NOT_LOWER_PRIORITY,
                f"victim {victim.namespace}/{victim.name} does not have lower priority than its preemptor "
                f"PodGroup {preemptor.namespace}/{preemptor.name}",
            )
        message = f"Preempted by PodGroup {preemptor.uid} on node cluster"
        return self._evict(victim, scheduler_name, "PodGroup", message, preemptor)

    def effective_priority(self, pod: Pod) -> int:
        """GetPodPriority: the priority of the pod's PodGroup when it exists, else the pod's own."""
        name = pod.spec.pod_group_name
        group = self.store.pod_groups.get((pod.namespace, name)) if name is not None else None
        return group.group_priority if group is not None else pod.priority

    def _evict(self, victim: Pod, scheduler_name: str, kind: str, message: str, related: Pod | PodGroup) -> Pod | None:
        condition = PodCondition(
            CONDITION_DISRUPTION_TARGET,
            "True",
            REASON_PREEMPTION_BY_SCHEDULER,
            f"{scheduler_name}: preempting to accommodate a higher priority {kind}",
            self.clock(),
        )
        self.recorder.record(
            victim, ev.NORMAL, ev.PREEMPTED, message, controller=scheduler_name, action="Preempting", related=related
        )
        return self.node_agent.start_termination(
            victim, victim.spec.termination_grace_period_seconds, with_condition(victim, condition)
        )


def _node_with_room(pod: Pod, node_name: str, info: NodeInfo | None) -> NodeInfo:
    """`info`, the node `pod` is to be bound to, unless the bind is refused (BindError): an unknown
    node, or one it would overcommit (requests of bound plus terminating pods must stay within
    allocatable)."""
    if info is None:
        raise BindError(BIND_NODE_NOT_FOUND, f'node "{node_name}" not found')
    insufficient = fits_request(pod_requests(pod), info)
    if insufficient:
        reasons = ", ".join(i.reason for i in insufficient)
        raise BindError(
            BIND_WOULD_OVERCOMMIT,
            f"binding {pod.namespace}/{pod.name} to {node_name} would overcommit it: {reasons}",
        )
    return info
