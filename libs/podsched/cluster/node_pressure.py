"""Node-pressure eviction, as the kubelet's eviction manager does it (pkg/kubelet/eviction).

Pods state what they use with annotations (there are no containers to measure):
`sim.podsched.io/usage-memory` and `sim.podsched.io/usage-ephemeral-storage`, quantities such as
`1500Mi`. A usage change is a pod update like any other, so it is on the binder's log. A node's
hard eviction thresholds are `--eviction-hard` in its annotation `sim.podsched.io/eviction-hard`
(`memory.available<500Mi,nodefs.available<10%`), else the kubelet's defaults
(`memory.available<100Mi,nodefs.available<10%`); available = capacity - the usage of the pods that
run there.

When a node crosses a threshold the node gets the MemoryPressure (DiskPressure) condition and its
NoSchedule taint, so the scheduler stops placing pods there, and pods are evicted one at a time, in
the kubelet's order, until the node is below every threshold again:
  1. pods whose usage of the starved resource exceeds their requests first,
  2. then lower priority first,
  3. then the larger usage above requests first.
An evicted pod is killed at once (hard eviction has no grace period) and stays listed as the kubelet
leaves it: phase Failed, reason Evicted, the DisruptionTarget condition with reason
TerminationByKubelet, and an Evicted event with the kubelet's message. Once no threshold is crossed
the condition and the taint stay for --eviction-pressure-transition-period after the node last
crossed a threshold (5 min by default; the node's `sim.podsched.io/eviction-pressure-transition-period`
in seconds), then go: the binder's timer and simulate's clock wake for it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from podsched.api.quantity import parse_quantity
from podsched.api.types import (
    CONDITION_DISRUPTION_TARGET,
    KIND_NODE,
    KIND_POD,
    POD_FAILED,
    POD_RUNNING,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    TAINT_NO_SCHEDULE,
    Node,
    Pod,
    PodCondition,
    Taint,
)
from podsched.cluster import events as ev
from podsched.cluster.store import Change, Store
from podsched.framework.resource import pod_request_map

USAGE_ANNOTATION_PREFIX = "sim.podsched.io/usage-"
EVICTION_HARD_ANNOTATION = "sim.podsched.io/eviction-hard"
DEFAULT_EVICTION_HARD = "memory.available<100Mi,nodefs.available<10%"
# --eviction-pressure-transition-period, in seconds: how long a pressure condition stays after the
# node last crossed the threshold.
TRANSITION_PERIOD_ANNOTATION = "sim.podsched.io/eviction-pressure-transition-period"
DEFAULT_TRANSITION_PERIOD_SECONDS = 300.0
REASON_EVICTED = "Evicted"
REASON_TERMINATION_BY_KUBELET = "TerminationByKubelet"


@dataclass(frozen=True, slots=True)
class Signal:
    """An eviction signal: the resource it watches, the node condition and taint it raises."""

    name: str
    resource: str
    condition: str
    taint: str
    reason_pressure: str  # the condition's reason when True, and when False (the kubelet's words)
    reason_no_pressure: str


SIGNALS = {
    "memory.available": Signal(
        "memory.available",
        RESOURCE_MEMORY,
        "MemoryPressure",
        "node.kubernetes.io/memory-pressure",
        "KubeletHasInsufficientMemory",
        "KubeletHasSufficientMemory",
    ),
    "nodefs.available": Signal(
        "nodefs.available",
        RESOURCE_EPHEMERAL_STORAGE,
        "DiskPressure",
        "node.kubernetes.io/disk-pressure",
        "KubeletHasDiskPressure",
        "KubeletHasNoDiskPressure",
    ),
}


@dataclass(frozen=True, slots=True)
class Threshold:
    signal: Signal
    text: str  # as written: "500Mi" or "10%"
    quantity: Fraction | None = None
    percentage: Fraction | None = None

    def minimum(self, capacity: int) -> Fraction:
        """The available amount below which the threshold is crossed."""
        if self.percentage is not None:
            return capacity * self.percentage / 100
        assert self.quantity is not None
        return self.quantity


def parse_thresholds(text: str) -> list[Threshold]:
    """`memory.available<500Mi,nodefs.available<10%` (the kubelet's --eviction-hard); entries that do
    not parse, or name a signal podsched does not model, are ignored."""
    thresholds = []
    for entry in text.split(","):
        name, _, value = entry.strip().partition("<")
        signal = SIGNALS.get(name.strip())
        value = value.strip()
        if signal is None or not value:
            continue
        try:
            if value.endswith("%"):
                thresholds.append(Threshold(signal, value, percentage=Fraction(value[:-1])))
            else:
                thresholds.append(Threshold(signal, value, quantity=parse_quantity(value)))
        except (ValueError, ZeroDivisionError):
            continue
    return thresholds


def usage(pod: Pod, resource: str) -> int:
    """The pod's stated usage of `resource` in base units (0 when it states none or nonsense)."""
    text = pod.metadata.annotations.get(USAGE_ANNOTATION_PREFIX + resource)
    if not text:
        return 0
    try:
        return max(0, int(parse_quantity(text)))
    except ValueError:
        return 0


def _states_usage(pod: Pod) -> bool:
    return any(key.startswith(USAGE_ANNOTATION_PREFIX) for key in pod.metadata.annotations)


def eviction_order(pods: list[Pod], resource: str) -> list[Pod]:
    """rankMemoryPressure / rankDiskPressure: exceeding requests first, then lower priority, then the
    larger usage above requests."""

    def key(pod: Pod) -> tuple[int, int, int]:
        above = usage(pod, resource) - pod_request_map(pod).get(resource, 0)
        return (0 if above > 0 else 1, pod.priority, -above)

    return sorted(pods, key=key)


def _format_bytes(value: Fraction | int) -> str:
    """The kubelet prints quantities in their canonical form: `500Mi`, `1536Mi`, `3Gi`."""
    number = int(value)
    if number < 0:
        return "-" + _format_bytes(-number)
    for suffix, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if number and number % size == 0:
            return f"{number // size}{suffix}"
    return str(number)


class EvictionManager:
    """Watches the nodes whose pods or settings changed; `relieve` evicts on those under pressure."""

    def __init__(self, store: Store, recorder: ev.EventRecorder, clock: Callable[[], float]) -> None:
        self.store = store
        self.recorder = recorder
        self.clock = clock
        self._dirty: set[str] = set()
        # (node, signal name) -> when the pressure condition may go (last crossing + transition period).
        self._pressure_until: dict[tuple[str, str], float] = {}
        store.listeners.append(self._on_change)

    def next_lift_time(self) -> float | None:
        """When a node's pressure condition is next due to go."""
        return min(self._pressure_until.values(), default=None)

    def _on_change(self, change: Change) -> None:
        if not self.store.authoritative:
            return
        for obj in (change.old, change.new):
            # Only a pod that states a usage moves what is available (the binder's hot path binds
            # many pods that state none: they cost nothing here).
            if change.kind == KIND_POD and isinstance(obj, Pod) and obj.spec.node_name and _states_usage(obj):
                self._dirty.add(obj.spec.node_name)
            elif change.kind == KIND_NODE and isinstance(obj, Node):
                self._dirty.add(obj.name)

    def relieve(self) -> int:
        """Check every node marked since the last call; returns how many pods were evicted."""
        now = self.clock()
        self._dirty.update(node for (node, _), until in self._pressure_until.items() if until <= now)
        evicted = 0
        while self._dirty:
            name = self._dirty.pop()
            node = self.store.nodes.get(name)
            if node is not None:
                evicted += self._relieve_node(node)
        return evicted

    def _running(self, node: Node) -> list[Pod]:
        info = self.store.node_infos.get(node.name)
        if info is None:
            return []
        return [
            p.pod for p in info.pods if p.pod.status.phase == POD_RUNNING and p.pod.metadata.deletion_timestamp is None
        ]

    def _crossed(self, node: Node, thresholds: list[Threshold]) -> list[tuple[Threshold, Fraction]]:
        """The thresholds crossed on the node, with what is available. A resource no running pod
        states a usage of is not measured (nothing is known of it), so it never crosses."""
        crossed = []
        pods = self._running(node)
        for threshold in thresholds:
            capacity = node.status.capacity.get(threshold.signal.resource)
            measured = any(USAGE_ANNOTATION_PREFIX + threshold.signal.resource in p.metadata.annotations for p in pods)
            if not capacity or not measured:
                continue
            available = Fraction(capacity - sum(usage(p, threshold.signal.resource) for p in pods))
            if available < threshold.minimum(capacity):
                crossed.append((threshold, available))
        return crossed

    def _relieve_node(self, node: Node) -> int:
        thresholds = parse_thresholds(node.metadata.annotations.get(EVICTION_HARD_ANNOTATION, DEFAULT_EVICTION_HARD))
        evicted = 0
        crossed = self._crossed(node, thresholds)
        self._set_pressure(node, self._pressured(node, {t.signal for t, _ in crossed}))
        while crossed:
            threshold, available = crossed[0]
            resource = threshold.signal.resource
            candidates = eviction_order(self._running(node), resource)
            if not candidates:
                break
            self._evict(candidates[0], threshold, available)
            evicted += 1
            crossed = self._crossed(node, thresholds)
        return evicted

    def _pressured(self, node: Node, crossing: set[Signal]) -> set[Signal]:
        """The signals whose condition the node shows: crossing now, or within the transition period
        of the last crossing. A taint found without a known crossing time (after a restart) counts
        as crossed now."""
        now = self.clock()
        try:
            period = float(
                node.metadata.annotations.get(TRANSITION_PERIOD_ANNOTATION, DEFAULT_TRANSITION_PERIOD_SECONDS)
            )
        except ValueError:
            period = DEFAULT_TRANSITION_PERIOD_SECONDS
        tainted = {t.key for t in node.spec.taints}
        shown = set()
        for signal in SIGNALS.values():
            key = (node.name, signal.name)
            if signal in crossing or (signal.taint in tainted and key not in self._pressure_until):
                self._pressure_until[key] = now + period
            until = self._pressure_until.get(key)
            if until is not None and until > now:
                shown.add(signal)
            else:
                self._pressure_until.pop(key, None)
        return shown

    def _evict(self, pod: Pod, threshold: Threshold, available: Fraction) -> None:
        resource = threshold.signal.resource
        container = pod.spec.containers[0].name if pod.spec.containers else pod.name
        used, requested = usage(pod, resource), pod_request_map(pod).get(resource, 0)
        # eviction_manager's evictionMessage: the node, the threshold, and each container over its request.
        message = (
            f"The node was low on resource: {resource}. Threshold quantity: {threshold.text}, "
            f"available: {_format_bytes(available)}. "
        )
        if used > requested:
            message += (
                f"Container {container} was using {_format_bytes(used)}, request is {_format_bytes(requested)}, "
                f"has larger consumption of {resource}. "
            )
        now = self.clock()
        condition = PodCondition(CONDITION_DISRUPTION_TARGET, "True", REASON_TERMINATION_BY_KUBELET, message, now)
        conditions = (*(c for c in pod.status.conditions if c.type != condition.type), condition)
        self.recorder.record(pod, ev.WARNING, REASON_EVICTED, message, ev.NODE_AGENT_CONTROLLER)
        self.store.update_pod_status(
            pod, phase=POD_FAILED, reason=REASON_EVICTED, message=message, conditions=conditions
        )

    def _set_pressure(self, node: Node, signals: set[Signal]) -> None:
        """The node's pressure conditions and NoSchedule taints as `signals` say (written only if changed)."""
        ours = {s.taint for s in SIGNALS.values()}
        taints = tuple(t for t in node.spec.taints if t.key not in ours) + tuple(
            Taint(s.taint, TAINT_NO_SCHEDULE) for s in sorted(signals, key=lambda s: s.name)
        )
        if set(taints) == set(node.spec.taints):
            return
        source = copy.deepcopy(node.source)
        status = source.setdefault("status", {})
        kept = {s.condition for s in SIGNALS.values()}
        conditions = [c for c in status.get("conditions") or [] if c.get("type") not in kept]
        for signal in SIGNALS.values():
            pressured = signal in signals
            conditions.append(
                {
                    "type": signal.condition,
                    "status": "True" if pressured else "False",
                    "reason": signal.reason_pressure if pressured else signal.reason_no_pressure,
                }
            )
        status["conditions"] = conditions
        new = replace(node, metadata=replace(node.metadata), spec=replace(node.spec, taints=taints), source=source)
        self.store.stamp(new)
        self.store.store_node(node, new)
