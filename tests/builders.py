"""Test builders: `make_pod("p").priority(HIGH).req(cpu="100m").node("n1").obj()`.

Upstream's st.MakePod()/st.MakeNode() wrappers, in Python. Shared constants are declared once here.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from podsched.api.quantity import to_int, to_milli
from podsched.api.types import (
    CONDITION_DISRUPTION_TARGET,
    CONDITION_POD_SCHEDULED,
    POD_RUNNING,
    REASON_PREEMPTION_BY_SCHEDULER,
    Affinity,
    Container,
    ContainerPort,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeSpec,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodCondition,
    PodDisruptionBudget,
    PodDisruptionBudgetStatus,
    PodSpec,
    PodStatus,
    PriorityClass,
    Resource,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import PreFilterExtensions
from podsched.framework.node_info import NodeInfo, PodInfo

LOW_PRIORITY = 0
MID_PRIORITY = 100
HIGH_PRIORITY = 1000
VERY_HIGH_PRIORITY = 10000
NEGATIVE_PRIORITY = -100

_uids = itertools.count(1)


def _requests(values: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    out = []
    for name, value in values.items():
        name = name.replace("_", "-") if name == "ephemeral_storage" else name
        out.append((name, to_milli(value) if name == "cpu" else to_int(value)))
    return tuple(out)


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._meta = ObjectMeta(name=name, namespace=namespace, uid=f"uid-{name}-{next(_uids)}")
        self._spec = PodSpec()
        self._status = PodStatus()
        self._containers: list[Container] = []
        self._affinity: dict[str, Any] = {}

    def uid(self, uid: str) -> PodBuilder:
        self._meta.uid = uid
        return self

    def namespace(self, namespace: str) -> PodBuilder:
        self._meta.namespace = namespace
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self._meta.labels[key] = value
        return self

    def priority(self, value: int) -> PodBuilder:
        self._spec.priority = value
        return self

    def priority_class(self, name: str) -> PodBuilder:
        self._spec.priority_class_name = name
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self._spec.preemption_policy = policy
        return self

    def group(self, pod_group_name: str) -> PodBuilder:
        """spec.schedulingGroup.podGroupName."""
        self._spec.pod_group_name = pod_group_name
        return self

    def req(self, **requests: Any) -> PodBuilder:
        """Add one container with these requests (cpu="1", memory="1Gi", **{"nvidia.com/gpu": 1})."""
        self._containers.append(Container(name=f"c{len(self._containers)}", requests=_requests(requests)))
        return self

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> PodBuilder:
        self._containers.append(
            Container(
                name=f"c{len(self._containers)}",
                ports=(ContainerPort(container_port=port, host_port=port, protocol=protocol, host_ip=host_ip),),
            )
        )
        return self

    def node(self, node_name: str) -> PodBuilder:
        self._spec.node_name = node_name
        self._status.phase = POD_RUNNING
        return self

    def nominated(self, node_name: str) -> PodBuilder:
        self._status.nominated_node_name = node_name
        return self

    def start_time(self, seconds: float) -> PodBuilder:
        self._status.start_time = seconds
        return self

    def scheduled_at(self, seconds: float | None, status: str = "True") -> PodBuilder:
        """A PodScheduled condition with this lastTransitionTime (None: a condition without one)."""
        self._status.conditions = (
            *self._status.conditions,
            PodCondition(CONDITION_POD_SCHEDULED, status, last_transition_time=seconds),
        )
        return self

    def grace(self, seconds: int) -> PodBuilder:
        self._spec.termination_grace_period_seconds = seconds
        return self

    def terminating(self, at: float = 0.0, by_preemption: bool = True) -> PodBuilder:
        self._meta.deletion_timestamp = at
        if by_preemption:
            self._status.conditions = (
                *self._status.conditions,
                PodCondition(CONDITION_DISRUPTION_TARGET, "True", REASON_PREEMPTION_BY_SCHEDULER),
            )
        return self

    def node_selector(self, **labels: str) -> PodBuilder:
        self._spec.node_selector = dict(labels)
        return self

    def toleration(self, key: str, value: str = "", effect: str = "", operator: str = "Equal") -> PodBuilder:
        self._spec.tolerations = (*self._spec.tolerations, Toleration(key, operator, value, effect))
        return self

    def node_affinity_in(self, key: str, *values: str) -> PodBuilder:
        term = NodeSelectorTerm(match_expressions=(NodeSelectorRequirement(key, "In", tuple(values)),))
        self._affinity["node"] = NodeAffinity(required=(term,))
        return self

    def pod_affinity(self, topology_key: str, **match_labels: str) -> PodBuilder:
        term = PodAffinityTerm(topology_key, LabelSelector(tuple(match_labels.items())))
        self._affinity["pod"] = PodAffinity(required=(term,))
        return self

    def pod_anti_affinity(self, topology_key: str, **match_labels: str) -> PodBuilder:
        term = PodAffinityTerm(topology_key, LabelSelector(tuple(match_labels.items())))
        self._affinity["anti"] = PodAffinity(required=(term,))
        return self

    def spread(self, max_skew: int, topology_key: str, when: str = "DoNotSchedule", **match_labels: str) -> PodBuilder:
        constraint = TopologySpreadConstraint(max_skew, topology_key, when, LabelSelector(tuple(match_labels.items())))
        self._spec.topology_spread_constraints = (*self._spec.topology_spread_constraints, constraint)
        return self

    def obj(self) -> Pod:
        containers = tuple(self._containers) or (Container(name="c0"),)
        affinity = None
        if self._affinity:
            affinity = Affinity(
                node_affinity=self._affinity.get("node"),
                pod_affinity=self._affinity.get("pod"),
                pod_anti_affinity=self._affinity.get("anti"),
            )
        spec = replace(self._spec, containers=containers, affinity=affinity)
        return Pod(
            metadata=replace(self._meta, labels=dict(self._meta.labels)), spec=spec, status=replace(self._status)
        )


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._meta = ObjectMeta(name=name, uid=f"node-{name}")
        self._capacity = Resource(allowed_pod_number=110)
        self._spec = NodeSpec()

    def capacity(self, **resources: Any) -> NodeBuilder:
        for name, value in resources.items():
            if name == "cpu":
                self._capacity.milli_cpu = to_milli(value)
            elif name == "memory":
                self._capacity.memory = to_int(value)
            elif name == "pods":
                self._capacity.allowed_pod_number = to_int(value)
            elif name == "ephemeral_storage":
                self._capacity.ephemeral_storage = to_int(value)
            else:
                self._capacity.scalar[name] = to_int(value)
        return self

    def scalar(self, name: str, value: int) -> NodeBuilder:
        self._capacity.scalar[name] = value
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self._meta.labels[key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        self._spec.taints = (*self._spec.taints, Taint(key, effect, value))
        return self

    def unschedulable(self) -> NodeBuilder:
        self._spec.unschedulable = True
        return self

    def obj(self) -> Node:
        return Node(
            metadata=replace(self._meta, labels=dict(self._meta.labels)),
            spec=replace(self._spec),
            status=NodeStatus(capacity=self._capacity.copy(), allocatable=self._capacity.copy()),
        )


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_pdb(
    name: str, namespace: str = "default", allowed: int = 0, disrupted: tuple[str, ...] = (), **match_labels: str
) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        metadata=ObjectMeta(name=name, namespace=namespace, uid=f"pdb-{name}"),
        selector=LabelSelector(tuple(match_labels.items())) if match_labels else LabelSelector(),
        min_available=1,
        status=PodDisruptionBudgetStatus(disruptions_allowed=allowed, disrupted_pods=dict.fromkeys(disrupted, 0.0)),
    )


def make_priority_class(
    name: str,
    value: int,
    global_default: bool = False,
    policy: str = "PreemptLowerPriority",
    annotations: dict[str, str] | None = None,
) -> PriorityClass:
    return PriorityClass(
        metadata=ObjectMeta(name=name, uid=f"pc-{name}", annotations=dict(annotations or {})),
        value=value,
        global_default=global_default,
        preemption_policy=policy,
    )


def selector_in(key: str, *values: str) -> LabelSelector:
    return LabelSelector(match_expressions=(LabelSelectorRequirement(key, "In", tuple(values)),))


def change_through_extension(
    plugin: PreFilterExtensions, state: CycleState, pod: Pod, node_infos: list[NodeInfo], change: str, changed_pod: Pod
) -> tuple[CycleState, list[NodeInfo]]:
    """As preemption's dry run does: clone the state and the changed pod's node, add (``change == "add"``)
    or remove ``changed_pod`` there and tell ``plugin``'s AddPod/RemovePod. Returns the cloned state and
    the nodes with the changed one; ``state`` and ``node_infos`` stay as they were."""
    what_if = state.clone()
    target = next(n for n in node_infos if n.name == changed_pod.spec.node_name).clone()
    changed = next((p for p in target.pods if p.pod.name == changed_pod.name), PodInfo(changed_pod))
    if change == "add":
        target.add_pod(changed)
        status = plugin.add_pod(what_if, pod, changed, target)
    else:
        target.remove_pod(changed.pod)
        status = plugin.remove_pod(what_if, pod, changed, target)
    assert status is None
    return what_if, [target if n.name == target.name else n for n in node_infos]
