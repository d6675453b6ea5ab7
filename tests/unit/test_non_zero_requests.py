"""non_zero_requests: upstream's non-zero defaults (100m CPU, 200Mi memory for a container that
requests neither), applied per container before summing, init containers' peak, sidecars and
overhead. The answer is kept per value of the containers, init containers and overhead, so a pod
whose spec has other values (a different template, or a spec replaced) gets its own answer."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import make_pod
from podsched.api.types import Container, Pod
from podsched.framework.resource import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, non_zero_requests

MI = 1024 * 1024


def pod_with(
    containers: tuple[Container, ...],
    init_containers: tuple[Container, ...] = (),
    overhead: tuple[tuple[str, int], ...] = (),
) -> Pod:
    pod = make_pod("p").obj()
    spec = replace(pod.spec, containers=containers, init_containers=init_containers, overhead=overhead)
    return replace(pod, spec=spec)


CASES = {
    "a container requesting nothing counts as the defaults": (
        pod_with((Container("c"),)),
        (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST),
    ),
    "an explicit zero stays zero, the missing memory takes its default": (
        pod_with((Container("c", requests=(("cpu", 0),)),)),
        (0, DEFAULT_MEMORY_REQUEST),
    ),
    "the default applies per container before summing": (
        pod_with((Container("a", requests=(("cpu", 300), ("memory", 64 * MI))), Container("b"))),
        (300 + DEFAULT_MILLI_CPU_REQUEST, 64 * MI + DEFAULT_MEMORY_REQUEST),
    ),
    "an init container larger than the app containers sets the peak": (
        pod_with(
            (Container("a", requests=(("cpu", 100), ("memory", MI))),),
            (Container("i", requests=(("cpu", 900),)),),
        ),
        (900, DEFAULT_MEMORY_REQUEST),
    ),
    "a sidecar adds to the app containers": (
        pod_with(
            (Container("a", requests=(("cpu", 100), ("memory", MI))),),
            (Container("s", requests=(("cpu", 50), ("memory", MI)), restart_policy="Always"),),
        ),
        (150, 2 * MI),
    ),
    "overhead adds to the total": (
        pod_with((Container("a", requests=(("cpu", 100), ("memory", MI))),), overhead=(("cpu", 10), ("memory", MI))),
        (110, 2 * MI),
    ),
}


@pytest.mark.parametrize("pod, expected", CASES.values(), ids=CASES.keys())
def test_non_zero_requests(pod: Pod, expected: tuple[int, int]) -> None:
    assert non_zero_requests(pod) == expected


def test_a_spec_with_other_containers_gets_its_own_answer_although_the_first_was_kept() -> None:
    small = make_pod("small").req(cpu="100m", memory="1Mi").obj()
    assert non_zero_requests(small) == (100, MI)
    bigger = make_pod("x").req(cpu="2", memory="2Mi").obj().spec.containers
    big = replace(small, spec=replace(small.spec, containers=bigger))
    assert non_zero_requests(big) == (2000, 2 * MI)
    equal_but_distinct = make_pod("again").req(cpu="100m", memory="1Mi").obj()
    assert equal_but_distinct.spec.containers is not small.spec.containers
    assert non_zero_requests(equal_but_distinct) == (100, MI)
