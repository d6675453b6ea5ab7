"""One scheduling cycle (upstream schedule_one_test.go highlights): how many nodes are searched,
the FitError message, the nominated node tried first and nominated pods reserving their room."""

from __future__ import annotations

import pytest

from builders import HIGH_PRIORITY, LOW_PRIORITY, MID_PRIORITY, make_node, make_pod
from podsched.api.types import Node, Pod
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.plugins.registry import build_algorithm
from podsched.queue.nominator import Nominator
from podsched.scheduler.schedule_one import CycleResult, num_feasible_nodes_to_find

NOW = 10_000.0
NODE = {"cpu": "4", "memory": "8Gi"}


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [(50, 0, 50), (500, 0, 230), (1000, 0, 420), (5000, 0, 500), (15000, 0, 750), (1000, 10, 100), (1000, 50, 500)],
    ids=lambda v: str(v),
)
def test_the_number_of_feasible_nodes_to_find_is_adaptive_with_a_floor_of_100(
    nodes: int, percentage: int, expected: int
) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def schedule(nodes: list[Node], pods: list[Pod], pod: Pod, nominated: list[Pod] = ()) -> CycleResult:  # type: ignore[assignment]
    infos = {node.name: NodeInfo(node) for node in nodes}
    for running in pods:
        infos[running.spec.node_name].add_pod(PodInfo(running))
    nominator = Nominator()
    for waiting in nominated:
        nominator.add(PodInfo(waiting))
    algorithm = build_algorithm(SchedulerConfig(), nominator, offset=lambda n: 0)
    return algorithm.schedule(pod, Snapshot(infos.values()), [], nominator, NOW)


def test_the_fit_error_counts_each_nodes_first_failure_and_sorts_the_reasons() -> None:
    nodes = [
        make_node("unlabelled").capacity(**NODE).obj(),
        make_node("hdd").capacity(**NODE).label("disk", "hdd").obj(),
        make_node("tainted").capacity(**NODE).label("disk", "ssd").taint("dedicated", "gpu").obj(),
        make_node("full").capacity(**NODE).label("disk", "ssd").obj(),
    ]
    pods = [make_pod("filler").priority(HIGH_PRIORITY).req(cpu="4").node("full").obj()]
    pod = make_pod("p").priority(LOW_PRIORITY).req(cpu="1").node_selector(disk="ssd").obj()
    result = schedule(nodes, pods, pod)
    assert result.node_name == ""
    assert result.message == (
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}, "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/4 nodes are available: 1 No preemption victims found for incoming pod, "
        "3 Preemption is not helpful for scheduling.."
    )
    assert result.rejector_plugins == {"NodeAffinity", "TaintToleration", "NodeResourcesFit"}


def test_a_request_larger_than_any_node_is_unresolvable_and_preemption_is_not_tried() -> None:
    nodes = [make_node("n1").capacity(**NODE).obj(), make_node("n2").capacity(**NODE).obj()]
    pods = [make_pod("low").priority(LOW_PRIORITY).req(cpu="1").node("n1").obj()]
    result = schedule(nodes, pods, make_pod("huge").priority(HIGH_PRIORITY).req(cpu="9").obj())
    assert result.message == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.."
    )
    assert result.post_filter is not None and result.post_filter.nominated_node_name == ""
    assert result.post_filter.candidates == []


def test_the_nominated_node_is_tried_first_even_if_another_node_scores_higher() -> None:
    nodes = [make_node("empty").capacity(**NODE).obj(), make_node("busy").capacity(**NODE).obj()]
    pods = [make_pod("other").priority(LOW_PRIORITY).req(cpu="2").node("busy").obj()]
    plain = schedule(nodes, pods, make_pod("p").req(cpu="1").obj())
    assert plain.node_name == "empty", "LeastAllocated prefers the empty node"
    nominated = schedule(nodes, pods, make_pod("p").req(cpu="1").nominated("busy").obj())
    assert nominated.node_name == "busy"


def test_nominated_pods_of_higher_or_equal_priority_reserve_their_room() -> None:
    nodes = [make_node("n1").capacity(**NODE).obj()]
    waiting = make_pod("waiting").priority(HIGH_PRIORITY).req(cpu="3").nominated("n1").obj()
    blocked = schedule(nodes, [], make_pod("p").priority(MID_PRIORITY).req(cpu="2").obj(), [waiting])
    assert blocked.node_name == ""
    assert blocked.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_nominated_pods_of_lower_priority_do_not_reserve_room() -> None:
    nodes = [make_node("n1").capacity(**NODE).obj()]
    waiting = make_pod("waiting").priority(LOW_PRIORITY).req(cpu="3").nominated("n1").obj()
    result = schedule(nodes, [], make_pod("p").priority(MID_PRIORITY).req(cpu="2").obj(), [waiting])
    assert result.node_name == "n1"


def test_the_search_resumes_where_the_last_cycle_stopped() -> None:
    nodes = [make_node(f"n{i:03d}").capacity(**NODE).obj() for i in range(200)]
    infos = [NodeInfo(node) for node in nodes]
    algorithm = build_algorithm(SchedulerConfig(percentage_of_nodes_to_score=50), None)
    snapshot = Snapshot(infos)
    first = algorithm.schedule(make_pod("a").obj(), snapshot, [], None, NOW)
    assert first.feasible_nodes == 100 and algorithm.next_start_node_index == 100
    algorithm.schedule(make_pod("b").obj(), snapshot, [], None, NOW)
    assert algorithm.next_start_node_index == 0
