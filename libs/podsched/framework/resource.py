"""Pod resource requests as the scheduler computes them (component-helpers resource.PodRequests)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from podsched.api.types import (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    Container,
    Pod,
    Resource,
)

# Upstream's non-zero defaults (pkg/scheduler/util/pod_resources.go): a pod that requests nothing is
# still counted as using this much when *scoring* (never when filtering), so empty pods spread out.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def _add_requests(total: dict[str, int], requests: tuple[tuple[str, int], ...]) -> None:
    for name, value in requests:
        total[name] = total.get(name, 0) + value


def _max_requests(total: dict[str, int], requests: dict[str, int]) -> None:
    for name, value in requests.items():
        if value > total.get(name, 0):
            total[name] = value


def _pod_total(pod: Pod, amounts: Callable[[Container], tuple[tuple[str, int], ...]]) -> dict[str, int]:
    """Sum of app containers and sidecars, at least the largest init container's peak.

    Init containers run one at a time before the app containers; a sidecar (restartPolicy Always)
    keeps running, so it adds to every later init container and to the app containers."""
    total: dict[str, int] = {}
    for container in pod.spec.containers:
        _add_requests(total, amounts(container))
    init_peak: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    for init in pod.spec.init_containers:
        if init.restart_policy == "Always":
            _add_requests(sidecars, amounts(init))
            _max_requests(init_peak, dict(sidecars))
        else:
            step = dict(sidecars)
            _add_requests(step, amounts(init))
            _max_requests(init_peak, step)
    for name, value in sidecars.items():
        total[name] = total.get(name, 0) + value
    _max_requests(total, init_peak)
    return total


def pod_request_map(pod: Pod) -> dict[str, int]:
    """PodRequests: the containers' requests as `_pod_total` combines them, plus overhead."""
    total = _pod_total(pod, lambda container: container.requests)
    _add_requests(total, pod.spec.overhead)
    return total


def pod_limit_map(pod: Pod) -> dict[str, int]:
    """PodLimits: the containers' limits combined like requests; overhead is added only to the
    resources some container limits (an unlimited resource stays unlimited)."""
    total = _pod_total(pod, lambda container: container.limits)
    for name, value in pod.spec.overhead:
        if name in total:
            total[name] += value
    return total


def pod_requests(pod: Pod) -> Resource:
    """The pod's effective request, cached on the pod (pods are values: the spec never changes)."""
    cached = pod._requests
    if cached is None:
        cached = Resource.from_map(pod_request_map(pod))
        pod._requests = cached
    return cached


def non_zero_requests(pod: Pod) -> tuple[int, int]:
    """(milli_cpu, memory) with upstream's defaults for containers that do not request them.

    Upstream applies the default per container, before summing; we do the same. Only a missing
    request takes the default: an explicit `cpu: 0` stays 0 (applyNonMissing in
    component-helpers' PodRequests)."""
    spec = pod.spec
    return _non_zero_requests(spec.containers, spec.init_containers, spec.overhead)


# Kept per value of the fields it reads (tuples of frozen dataclasses): every NodeInfo.add_pod and
# remove_pod, and LeastAllocated's Score on every node it scores, ask for it, and the pods of one
# template share those tuples (hashing them is a third of computing this).
@functools.lru_cache(maxsize=4096)
def _non_zero_requests(
    containers: tuple[Container, ...], init_containers: tuple[Container, ...], overhead: tuple[tuple[str, int], ...]
) -> tuple[int, int]:
    cpu = 0
    memory = 0

    def container_values(container: Container) -> tuple[int, int]:
        values = dict(container.requests)
        return (
            values.get(RESOURCE_CPU, DEFAULT_MILLI_CPU_REQUEST),
            values.get(RESOURCE_MEMORY, DEFAULT_MEMORY_REQUEST),
        )

    for container in containers:
        c, m = container_values(container)
        cpu += c
        memory += m
    init_cpu = init_memory = 0
    for init in init_containers:
        c, m = container_values(init)
        if init.restart_policy == "Always":
            cpu += c
            memory += m
        init_cpu = max(init_cpu, c)
        init_memory = max(init_memory, m)
    cpu = max(cpu, init_cpu)
    memory = max(memory, init_memory)
    extra = dict(overhead)
    return cpu + extra.get(RESOURCE_CPU, 0), memory + extra.get(RESOURCE_MEMORY, 0)
