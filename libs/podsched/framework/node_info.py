"""NodeInfo, PodInfo and Snapshot (upstream framework/types.go and the cache snapshot).

NodeInfo aggregates what Filter and Score need about one node: its pods, the sum of their requests,
used host ports and the pods carrying (anti-)affinity. Preemption's dry run works on clones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from podsched.api.labels import selector_matches
from podsched.api.types import (
    NAMESPACE_NAME_LABEL,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    Pod,
    PodAffinityTerm,
    Resource,
)
from podsched.framework.resource import non_zero_requests, pod_requests

DEFAULT_HOST_IP = "0.0.0.0"


def namespace_labels(namespace: str) -> dict[str, str]:
    """podsched has no Namespace objects; every namespace carries its well-known name label, which is
    what namespaceSelector terms in practice select on."""
    return {NAMESPACE_NAME_LABEL: namespace}


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A PodAffinityTerm resolved against the pod that owns it: namespaces defaulted to the owner's,
    matchLabelKeys/mismatchLabelKeys folded into the selector."""

    namespaces: frozenset[str]
    selector: LabelSelector | None
    topology_key: str
    namespace_selector: LabelSelector | None

    def matches(self, pod: Pod) -> bool:
        if pod.namespace not in self.namespaces and not (
            self.namespace_selector is not None
            and selector_matches(self.namespace_selector, namespace_labels(pod.namespace))
        ):
            return False
        return selector_matches(self.selector, pod.labels)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def resolve_affinity_term(owner: Pod, term: PodAffinityTerm) -> AffinityTerm:
    namespaces = frozenset(term.namespaces)
    if not namespaces and term.namespace_selector is None:
        namespaces = frozenset({owner.namespace})
    selector = term.label_selector
    extra: list[LabelSelectorRequirement] = []
    for key in term.match_label_keys:
        if key in owner.labels:
            extra.append(LabelSelectorRequirement(key, "In", (owner.labels[key],)))
    for key in term.mismatch_label_keys:
        if key in owner.labels:
            extra.append(LabelSelectorRequirement(key, "NotIn", (owner.labels[key],)))
    if extra and selector is not None:
        selector = LabelSelector(selector.match_labels, selector.match_expressions + tuple(extra))
    return AffinityTerm(namespaces, selector, term.topology_key, term.namespace_selector)


class PodInfo:
    """A pod plus its pre-parsed affinity terms (computed once per pod version), and what it charges
    its node (`node_charge`, computed the first time it is added to one)."""

    __slots__ = (
        "charge",
        "pod",
        "preferred_affinity_terms",
        "preferred_anti_affinity_terms",
        "required_affinity_terms",
        "required_anti_affinity_terms",
    )

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.charge: NodeCharge | None = None
        affinity = pod.spec.affinity
        pod_affinity = affinity.pod_affinity if affinity else None
        anti_affinity = affinity.pod_anti_affinity if affinity else None
        self.required_affinity_terms: tuple[AffinityTerm, ...] = (
            tuple(resolve_affinity_term(pod, t) for t in pod_affinity.required) if pod_affinity else ()
        )
        self.required_anti_affinity_terms: tuple[AffinityTerm, ...] = (
            tuple(resolve_affinity_term(pod, t) for t in anti_affinity.required) if anti_affinity else ()
        )
        self.preferred_affinity_terms: tuple[WeightedAffinityTerm, ...] = (
            tuple(WeightedAffinityTerm(resolve_affinity_term(pod, w.term), w.weight) for w in pod_affinity.preferred)
            if pod_affinity
            else ()
        )
        self.preferred_anti_affinity_terms: tuple[WeightedAffinityTerm, ...] = (
            tuple(WeightedAffinityTerm(resolve_affinity_term(pod, w.term), w.weight) for w in anti_affinity.preferred)
            if anti_affinity
            else ()
        )

    @property
    def has_affinity(self) -> bool:
        return bool(
            self.required_affinity_terms
            or self.required_anti_affinity_terms
            or self.preferred_affinity_terms
            or self.preferred_anti_affinity_terms
        )


def _host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    ports: list[tuple[str, str, int]] = []
    for container in pod.spec.containers + pod.spec.init_containers:
        for port in container.ports:
            if port.host_port > 0:
                ports.append((port.host_ip or DEFAULT_HOST_IP, port.protocol or "TCP", port.host_port))
    return ports


# What a pod adds to its node's sums: (its requests, its non-zero CPU, its non-zero memory, its host
# ports). Kept on the PodInfo: a placed pod is added to and removed from a node several times
# (assumed for the rest of its request, again as a bind under way for the next one, then bound from
# the log), and the non-zero requests alone hash every container on each call. A plain tuple: built
# once for every pod a node takes, where a dataclass's construction costs more than its fields.
NodeCharge = tuple[Resource, int, int, tuple[tuple[str, str, int], ...]]


def node_charge(pod_info: PodInfo) -> NodeCharge:
    charge = pod_info.charge
    if charge is None:
        pod = pod_info.pod
        cpu, memory = non_zero_requests(pod)
        charge = pod_info.charge = (pod_requests(pod), cpu, memory, tuple(_host_ports(pod)))
    return charge


def _swap_remove(pod_infos: list[PodInfo], uid: str) -> PodInfo | None:
    """Remove the pod with this UID the way upstream's removeFromSlice (framework/types.go) does: the
    last pod takes the removed pod's slot. The order of a node's pods is observable: preemption takes
    equally important victims in it (a stable sort of the node's pods), so it must follow upstream's."""
    for i, info in enumerate(pod_infos):
        if info.pod.uid == uid:
            last = pod_infos.pop()
            if i < len(pod_infos):
                pod_infos[i] = last
            return info
    return None


class NodeInfo:
    """Everything Filter/Score know about one node. Mutated only on clones during what-ifs or by the
    cache that owns it."""

    __slots__ = (
        "allocatable",
        "generation",
        "name",
        "node",
        "non_zero_cpu",
        "non_zero_memory",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node) -> None:
        self.node = node
        self.name = node.name  # read for every node of every cycle: a plain attribute, not a property
        self.allocatable = node.status.allocatable
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.requested = Resource()
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.used_ports: dict[tuple[str, str, int], int] = {}  # (ip, protocol, port) -> users
        self.generation = 0

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.name
        self.allocatable = node.status.allocatable
        self.generation += 1

    def add_pod(self, pod_info: PodInfo) -> None:
        requested, non_zero_cpu, non_zero_memory, host_ports = pod_info.charge or node_charge(pod_info)
        self.pods.append(pod_info)
        if pod_info.has_affinity:
            self.pods_with_affinity.append(pod_info)
        if pod_info.required_anti_affinity_terms:
            self.pods_with_required_anti_affinity.append(pod_info)
        self.requested.add(requested)
        self.requested.allowed_pod_number += 1
        self.non_zero_cpu += non_zero_cpu
        self.non_zero_memory += non_zero_memory
        for port in host_ports:
            self.used_ports[port] = self.used_ports.get(port, 0) + 1
        self.generation += 1

    def remove_pod(self, pod: Pod) -> bool:
        """Remove the pod with this UID; False if it is not on the node."""
        removed_info = _swap_remove(self.pods, pod.uid)
        if removed_info is None:
            return False
        requested, non_zero_cpu, non_zero_memory, host_ports = removed_info.charge or node_charge(removed_info)
        _swap_remove(self.pods_with_affinity, pod.uid)
        _swap_remove(self.pods_with_required_anti_affinity, pod.uid)
        self.requested.sub(requested)
        self.requested.allowed_pod_number -= 1
        self.non_zero_cpu -= non_zero_cpu
        self.non_zero_memory -= non_zero_memory
        for port in host_ports:
            remaining = self.used_ports.get(port, 0) - 1
            if remaining > 0:
                self.used_ports[port] = remaining
            else:
                self.used_ports.pop(port, None)
        self.generation += 1
        return True

    def port_conflicts(self, ports: Iterable[tuple[str, str, int]]) -> bool:
        """HostPortInfo.CheckConflict: 0.0.0.0 conflicts with the same protocol/port on any IP."""
        if not self.used_ports:
            return False
        for ip, protocol, port in ports:
            if ip == DEFAULT_HOST_IP:
                if any(p == protocol and n == port for (_, p, n) in self.used_ports):
                    return True
            elif (ip, protocol, port) in self.used_ports or (DEFAULT_HOST_IP, protocol, port) in self.used_ports:
                return True
        return False

    def clone(self) -> NodeInfo:
        clone = NodeInfo.__new__(NodeInfo)
        clone.node = self.node
        clone.name = self.name
        clone.allocatable = self.allocatable
        clone.pods = list(self.pods)
        clone.pods_with_affinity = list(self.pods_with_affinity)
        clone.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        clone.requested = self.requested.copy()
        clone.non_zero_cpu = self.non_zero_cpu
        clone.non_zero_memory = self.non_zero_memory
        clone.used_ports = dict(self.used_ports)
        clone.generation = self.generation
        return clone


def pod_host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    return _host_ports(pod)


class Snapshot:
    """The cluster as one scheduling cycle sees it: nodes in a stable order, by name."""

    __slots__ = ("_with_affinity", "_with_required_anti_affinity", "node_info_list", "node_info_map")

    def __init__(self, node_infos: Iterable[NodeInfo], by_name: Mapping[str, NodeInfo] | None = None) -> None:
        self.node_info_list: list[NodeInfo] = list(node_infos)
        # A caller that already keeps the map (the cluster) passes it: copying a dict is C-speed,
        # reading 5000 names through properties on every cycle is not.
        self.node_info_map: dict[str, NodeInfo] = (
            dict(by_name) if by_name is not None else {n.name: n for n in self.node_info_list}
        )
        self._with_affinity: list[NodeInfo] | None = None
        self._with_required_anti_affinity: list[NodeInfo] | None = None

    @staticmethod
    def from_map(node_infos: Mapping[str, NodeInfo]) -> Snapshot:
        return Snapshot(node_infos.values(), node_infos)

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def pods_changed(self) -> None:
        """A pod was added to or removed from one of these NodeInfos in place (an assumed bind): the
        lists of nodes with affinity pods are computed again when next asked for."""
        self._with_affinity = None
        self._with_required_anti_affinity = None

    def have_pods_with_affinity(self) -> list[NodeInfo]:
        if self._with_affinity is None:
            self._with_affinity = [n for n in self.node_info_list if n.pods_with_affinity]
        return self._with_affinity

    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]:
        if self._with_required_anti_affinity is None:
            self._with_required_anti_affinity = [n for n in self.node_info_list if n.pods_with_required_anti_affinity]
        return self._with_required_anti_affinity

    def __len__(self) -> int:
        return len(self.node_info_list)
