"""What a pod charges its node (requests, non-zero requests, host ports) is kept on its PodInfo:
a NodeInfo's sums after any mix of adds and removes are those computed from the pods it holds."""

from __future__ import annotations

from builders import make_node, make_pod
from podsched.api.types import Pod, Resource
from podsched.framework.node_info import NodeInfo, PodInfo, pod_host_ports
from podsched.framework.resource import non_zero_requests, pod_requests


def expected_sums(pods: list[Pod]) -> tuple[int, int, int, int, int, dict[tuple[str, str, int], int]]:
    requested = Resource()
    ports: dict[tuple[str, str, int], int] = {}
    cpu = memory = 0
    for pod in pods:
        requested.add(pod_requests(pod))
        pod_cpu, pod_memory = non_zero_requests(pod)
        cpu += pod_cpu
        memory += pod_memory
        for port in pod_host_ports(pod):
            ports[port] = ports.get(port, 0) + 1
    return requested.milli_cpu, requested.memory, cpu, memory, len(pods), ports


def sums(node_info: NodeInfo) -> tuple[int, int, int, int, int, dict[tuple[str, str, int], int]]:
    requested = node_info.requested
    return (
        requested.milli_cpu,
        requested.memory,
        node_info.non_zero_cpu,
        node_info.non_zero_memory,
        requested.allowed_pod_number,
        node_info.used_ports,
    )


def test_the_sums_follow_adds_and_removes_of_pods_with_and_without_requests_and_ports() -> None:
    node_info = NodeInfo(make_node("n").capacity(cpu="8", memory="16Gi", pods=10).obj())
    pods = [
        make_pod("bare").uid("bare").node("n").obj(),  # the non-zero defaults
        make_pod("cpu").uid("cpu").node("n").req(cpu="1").obj(),  # memory's default only
        make_pod("both").uid("both").node("n").req(cpu="500m", memory="1Gi").host_port(8080).obj(),
        make_pod("port").uid("port").node("n").req(cpu="100m").host_port(8080, host_ip="10.0.0.1").obj(),
    ]
    infos = [PodInfo(pod) for pod in pods]
    for info in infos:
        node_info.add_pod(info)
    assert sums(node_info) == expected_sums(pods)

    assert node_info.remove_pod(pods[2])
    assert sums(node_info) == expected_sums([pods[0], pods[1], pods[3]])
    node_info.add_pod(infos[2])  # the same PodInfo again, as an assumption taken twice is
    assert sums(node_info) == expected_sums(pods)
    for pod in pods:
        assert node_info.remove_pod(pod)
    assert sums(node_info) == (0, 0, 0, 0, 0, {})
