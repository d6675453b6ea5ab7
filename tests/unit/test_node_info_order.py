"""The order of a node's pods follows upstream's NodeInfo (framework/types.go): AddPod appends,
RemovePod moves the last pod into the removed pod's slot, and the cache's updatePod is a remove then
an add. Preemption takes equally important victims in this order, so it is observable."""

from __future__ import annotations

from dataclasses import replace

from builders import LOW_PRIORITY, make_node, make_pod
from podsched.framework.node_info import NodeInfo, PodInfo


def names(node_info: NodeInfo) -> list[str]:
    return [info.pod.name for info in node_info.pods]


def test_removing_a_pod_moves_the_last_pod_into_its_slot() -> None:
    node_info = NodeInfo(make_node("n").capacity(cpu="8", pods=10).obj())
    pods = [make_pod(f"r{i}").node("n").req(cpu="1").obj() for i in range(4)]
    for pod in pods:
        node_info.add_pod(PodInfo(pod))
    assert node_info.remove_pod(pods[1])
    assert names(node_info) == ["r0", "r3", "r2"]
    assert node_info.requested.milli_cpu == 3000
    assert node_info.remove_pod(pods[2])  # the last one: nothing moves
    assert names(node_info) == ["r0", "r3"]
    assert not node_info.remove_pod(pods[1])


def test_an_updated_pod_goes_to_the_end_and_the_last_pod_takes_its_place() -> None:
    node_info = NodeInfo(make_node("n").capacity(cpu="8", pods=10).obj())
    pods = [make_pod(f"r{i}").node("n").priority(LOW_PRIORITY).obj() for i in range(4)]
    for pod in pods:
        node_info.add_pod(PodInfo(pod))
    updated = replace(pods[0], status=replace(pods[0].status, nominated_node_name=""))
    node_info.remove_pod(pods[0])
    node_info.add_pod(PodInfo(updated))
    assert names(node_info) == ["r3", "r1", "r2", "r0"]


def test_the_affinity_lists_lose_the_removed_pod_the_same_way() -> None:
    node_info = NodeInfo(make_node("n").capacity(cpu="8", pods=10).obj())
    pods = [
        make_pod(f"a{i}").node("n").label("app", "x").pod_anti_affinity("kubernetes.io/hostname", app="x").obj()
        for i in range(3)
    ]
    for pod in pods:
        node_info.add_pod(PodInfo(pod))
    node_info.remove_pod(pods[0])
    assert [i.pod.name for i in node_info.pods_with_affinity] == ["a2", "a1"]
    assert [i.pod.name for i in node_info.pods_with_required_anti_affinity] == ["a2", "a1"]
