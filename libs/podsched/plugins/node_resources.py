"""NodeResourcesFit (Filter + LeastAllocated score) and NodeResourcesBalancedAllocation.

Failure data is structured (resource, requested, used, capacity) and turned into upstream's words
in one place, `InsufficientResource.reason`."""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from podsched.api.types import RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, Pod, Resource
from podsched.framework.cycle_state import CycleState
from podsched.framework.events import ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, ClusterEventWithHint
from podsched.framework.interface import (
    MAX_NODE_SCORE,
    NodeColumnsView,
    PreFilterExtensions,
    PreFilterResult,
    ResourceCheck,
)
from podsched.framework.node_info import NodeInfo
from podsched.framework.resource import non_zero_requests, pod_requests
from podsched.framework.status import Code, Status
from podsched.plugins import names

REASON_TOO_MANY_PODS = "Too many pods"


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool  # the pod asks for more than the node has in total: preemption cannot help

    @property
    def reason(self) -> str:
        if self.resource == "pods":
            return REASON_TOO_MANY_PODS
        return f"Insufficient {self.resource}"


def fits_request(request: Resource, node_info: NodeInfo) -> list[InsufficientResource]:
    """fitsRequest: every resource the pod asks for must fit in allocatable minus requested."""
    insufficient: list[InsufficientResource] = []
    allocatable = node_info.allocatable
    requested = node_info.requested
    allowed_pods = allocatable.allowed_pod_number
    if len(node_info.pods) + 1 > allowed_pods:
        insufficient.append(InsufficientResource("pods", 1, len(node_info.pods), allowed_pods, False))
    if not (request.milli_cpu or request.memory or request.ephemeral_storage or request.scalar):
        return insufficient
    if request.milli_cpu > 0 and request.milli_cpu > allocatable.milli_cpu - requested.milli_cpu:
        insufficient.append(
            InsufficientResource(
                "cpu",
                request.milli_cpu,
                requested.milli_cpu,
                allocatable.milli_cpu,
                request.milli_cpu > allocatable.milli_cpu,
            )
        )
    if request.memory > 0 and request.memory > allocatable.memory - requested.memory:
        insufficient.append(
            InsufficientResource(
                "memory", request.memory, requested.memory, allocatable.memory, request.memory > allocatable.memory
            )
        )
    if request.ephemeral_storage > 0 and (
        request.ephemeral_storage > allocatable.ephemeral_storage - requested.ephemeral_storage
    ):
        insufficient.append(
            InsufficientResource(
                "ephemeral-storage",
                request.ephemeral_storage,
                requested.ephemeral_storage,
                allocatable.ephemeral_storage,
                request.ephemeral_storage > allocatable.ephemeral_storage,
            )
        )
    for name, quantity in request.scalar.items():
        if quantity == 0:
            continue
        capacity = allocatable.scalar.get(name, 0)
        used = requested.scalar.get(name, 0)
        if quantity > capacity - used:
            insufficient.append(InsufficientResource(name, quantity, used, capacity, quantity > capacity))
    return insufficient


class NodeResourcesFit:
    """Filter: the pod's requests fit. Score: LeastAllocated over cpu and memory (weights 1, 1)."""

    name = names.NODE_RESOURCES_FIT

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable."""
        return [
            ClusterEventWithHint(NODE_ADD),
            ClusterEventWithHint(NODE_UPDATE),
            ClusterEventWithHint(ASSIGNED_POD_DELETE),
        ]

    def __init__(self, score_resources: Sequence[tuple[str, int]] = (("cpu", 1), ("memory", 1))) -> None:
        self.score_resources = tuple(score_resources)

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        insufficient = fits_request(pod_requests(pod), node_info)
        if not insufficient:
            return None
        code = Code.UNSCHEDULABLE
        if any(item.unresolvable for item in insufficient):
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return Status(code, [item.reason for item in insufficient], self.name)

    def fit_checks(self, pod: Pod) -> tuple[ResourceCheck, ...]:
        """fitsRequest's checks besides the pod count: every requested resource, in its order."""
        request = pod_requests(pod)
        checks = [
            ResourceCheck(resource, value, _insufficient_reason(resource))
            for resource, value in (
                (RESOURCE_CPU, request.milli_cpu),
                (RESOURCE_MEMORY, request.memory),
                (RESOURCE_EPHEMERAL_STORAGE, request.ephemeral_storage),
            )
            if value > 0
        ]
        checks += [
            ResourceCheck(resource, value, _insufficient_reason(resource))
            for resource, value in request.scalar.items()
            if value != 0
        ]
        return tuple(checks)

    def score_key(self, pod: Pod) -> Hashable:
        return non_zero_requests(pod)

    def score_columns(self, pod: Pod, nodes: NodeColumnsView, rows: I64 | None) -> I64:
        """least_allocated_score for many nodes at once, with the same integer arithmetic."""
        pod_cpu, pod_memory = non_zero_requests(pod)
        cpu_capacity, memory_capacity = nodes.values("alloc_cpu", rows), nodes.values("alloc_mem", rows)
        cpu = _least_allocated(nodes.values("nz_cpu", rows) + pod_cpu, cpu_capacity)
        memory = _least_allocated(nodes.values("nz_mem", rows) + pod_memory, memory_capacity)
        # The average over the resources the node has any of.
        counted = (cpu_capacity != 0).astype(np.int64) + (memory_capacity != 0)
        scores: I64 = (cpu + memory) // np.maximum(counted, 1)
        return scores

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        pod_cpu, pod_memory = non_zero_requests(pod)
        return least_allocated_score(
            node_info.non_zero_cpu + pod_cpu,
            node_info.non_zero_memory + pod_memory,
            node_info.allocatable.milli_cpu,
            node_info.allocatable.memory,
        )

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        return None


def least_allocated_score(
    cpu_requested: int, memory_requested: int, cpu_allocatable: int, memory_allocatable: int
) -> int:
    """leastRequestedScore per resource, then the weighted (1:1) integer average over the resources
    the node has: one it has none of allocatable is left out of the average (leastResourceScorer)."""
    total = counted = 0
    for requested, capacity in ((cpu_requested, cpu_allocatable), (memory_requested, memory_allocatable)):
        if capacity == 0:
            continue
        counted += 1
        if requested <= capacity:
            total += (capacity - requested) * MAX_NODE_SCORE // capacity
    return total // counted if counted else 0


def balanced_allocation_score(
    cpu_requested: int, memory_requested: int, cpu_allocatable: int, memory_allocatable: int
) -> int:
    """balancedResourceScorer for cpu and memory: 100 * (1 - |f_cpu - f_mem| / 2), fractions capped at 1;
    a resource the node has none of is left out, and one fraction alone is perfectly balanced.
    Written out for the two resources (no list, no loop): the column strategy scores every node
    an assumption changed through this, twice a pod."""
    if cpu_allocatable == 0 or memory_allocatable == 0:
        return MAX_NODE_SCORE  # (1 - 0.0) * MAX_NODE_SCORE
    std = abs(min(cpu_requested / cpu_allocatable, 1.0) - min(memory_requested / memory_allocatable, 1.0)) / 2
    return math.trunc((1 - std) * MAX_NODE_SCORE)


def balance_change_score(score_with_pod: int, score_without_pod: int) -> int:
    """balancedResourceScorer (v1.37): the change in balance the pod brings, mapped back into
    [MAX/2, MAX]: about 75 when the balance barely moves, towards 100 when it improves, towards 50
    when it worsens. Both scores are in [MAX/2, MAX], so the division never sees a negative."""
    half = MAX_NODE_SCORE // 2
    return half + (half + score_with_pod - score_without_pod) // 2


I64 = npt.NDArray[np.int64]


@functools.lru_cache(maxsize=1024)
def _insufficient_reason(resource: str) -> str:
    return InsufficientResource(resource, 0, 0, 0, False).reason


def _least_allocated(requested: I64, capacity: I64) -> I64:
    """leastRequestedScore of one resource, elementwise (0 where the node has none of it)."""
    usable = (capacity != 0) & (requested <= capacity)
    scores: I64 = np.where(usable, (capacity - requested) * MAX_NODE_SCORE // np.where(capacity == 0, 1, capacity), 0)
    return scores


def _balanced_allocation(cpu_requested: I64, memory_requested: I64, cpu_capacity: I64, memory_capacity: I64) -> I64:
    """balanced_allocation_score, elementwise, with the same float64 operations."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu = np.minimum(cpu_requested / cpu_capacity, 1.0)
        memory = np.minimum(memory_requested / memory_capacity, 1.0)
    both = (cpu_capacity != 0) & (memory_capacity != 0)
    std = np.where(both, np.abs(cpu - memory) / 2, 0.0)
    score: I64 = np.trunc((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return score


class NodeResourcesBalancedAllocation:
    """Favors nodes whose cpu and memory use the pod brings closer to equal proportions (scored as the
    change in balance, as upstream v1.37 does). Uses actual requests (not
    the non-zero defaults) and skips best-effort pods, which request nothing (upstream #129138)."""

    name = names.NODE_RESOURCES_BALANCED_ALLOCATION

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        request = pod_requests(pod)
        if request.milli_cpu == 0 and request.memory == 0:
            return Status(Code.SKIP)
        return None

    def score_key(self, pod: Pod) -> Hashable:
        request = pod_requests(pod)
        return request.milli_cpu, request.memory

    def score_columns(self, pod: Pod, nodes: NodeColumnsView, rows: I64 | None) -> I64:
        """balance_change_score for many nodes at once, with the same float64 arithmetic."""
        request = pod_requests(pod)
        cpu, memory = nodes.values("req_cpu", rows), nodes.values("req_mem", rows)
        cpu_capacity, memory_capacity = nodes.values("alloc_cpu", rows), nodes.values("alloc_mem", rows)
        with_pod = _balanced_allocation(cpu + request.milli_cpu, memory + request.memory, cpu_capacity, memory_capacity)
        without_pod = _balanced_allocation(cpu, memory, cpu_capacity, memory_capacity)
        half = MAX_NODE_SCORE // 2
        scores: I64 = half + (half + with_pod - without_pod) // 2
        return scores

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        request = pod_requests(pod)
        requested, allocatable = node_info.requested, node_info.allocatable
        with_pod = balanced_allocation_score(
            requested.milli_cpu + request.milli_cpu,
            requested.memory + request.memory,
            allocatable.milli_cpu,
            allocatable.memory,
        )
        without_pod = balanced_allocation_score(
            requested.milli_cpu, requested.memory, allocatable.milli_cpu, allocatable.memory
        )
        return balance_change_score(with_pod, without_pod)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        return None
