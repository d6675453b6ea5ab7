"""Node-pressure eviction (podsched.cluster.node_pressure): the kubelet's ranking, thresholds, the
evicted pod's status and event, and the node's pressure condition and taint."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import yaml

from podsched.api.manifests import encode_object
from podsched.api.types import Pod
from podsched.cluster.node_pressure import eviction_order, parse_thresholds
from podsched.simulator.engine import Simulator

CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mid}
value: 1000
"""
GI = 1 << 30


def node(memory: str = "4Gi", eviction_hard: str | None = "memory.available<500Mi") -> dict[str, Any]:
    annotations = {"sim.podsched.io/eviction-hard": eviction_hard} if eviction_hard else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "annotations": annotations},
        "status": {"capacity": {"cpu": "8", "memory": memory, "pods": "110"}},
    }


def pod(
    name: str, priority_class: str, request: str, usage: str | None = None, node_name: str = "n1"
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if usage is not None:
        metadata["annotations"] = {"sim.podsched.io/usage-memory": usage}
    spec: dict[str, Any] = {
        "priorityClassName": priority_class,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1", "memory": request}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def simulate(*steps: list[dict[str, Any]]) -> Simulator:
    sim = Simulator()
    sim.apply_text(CLASSES)
    for step in steps:
        sim.apply_text(yaml.safe_dump_all(step))
        sim.run_until_quiescent()
    return sim


def evicted(sim: Simulator) -> list[str]:
    return [e.involved_object.name for e in sim.cluster.events if e.reason == "Evicted"]


def test_thresholds_parse_quantities_and_percentages_and_ignore_unknown_signals() -> None:
    memory, disk = parse_thresholds("memory.available<500Mi, nodefs.available<10%,imagefs.available<15%,bogus")
    assert (memory.signal.resource, memory.minimum(4 * GI)) == ("memory", Fraction(500 * (1 << 20)))
    assert (disk.signal.resource, disk.minimum(1000)) == ("ephemeral-storage", Fraction(100))


def test_the_kubelets_order_over_requests_first_then_priority_then_usage_above_requests() -> None:
    sim = simulate(
        [
            node(memory="64Gi"),
            pod("within-low", "low", "2Gi", usage="2Gi"),
            pod("over-mid-big", "mid", "1Gi", usage="5Gi"),
            pod("over-mid-small", "mid", "1Gi", usage="2Gi"),
            pod("over-low", "low", "1Gi", usage="1100Mi"),
        ]
    )
    pods = [p for p in sim.cluster.pods.values() if isinstance(p, Pod)]
    assert [p.name for p in eviction_order(pods, "memory")] == [
        "over-low",
        "over-mid-big",
        "over-mid-small",
        "within-low",
    ]


def test_an_evicted_pod_gets_the_kubelets_status_and_event_and_the_node_its_taint_while_short() -> None:
    sim = simulate(
        [node(), pod("steady", "low", "1Gi", usage="1Gi"), pod("hog", "mid", "1Gi", usage="3Gi")],
    )
    assert evicted(sim) == ["hog"]
    hog = sim.cluster.pods[("default", "hog")]
    assert (hog.status.phase, hog.status.reason) == ("Failed", "Evicted")
    condition = hog.condition("DisruptionTarget")
    assert condition is not None and condition.reason == "TerminationByKubelet"
    assert (
        condition.message
        == hog.status.message
        == (
            "The node was low on resource: memory. Threshold quantity: 500Mi, available: 0. "
            "Container main was using 3Gi, request is 1Gi, has larger consumption of memory. "
        )
    )
    assert sim.cluster.pods[("default", "steady")].status.phase == "Running"
    # Relieved by the eviction: no taint, the MemoryPressure condition False again.
    node_json = encode_object(sim.cluster.nodes["n1"])
    assert not node_json["spec"].get("taints")
    pressure = next(c for c in node_json["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert (pressure["status"], pressure["reason"]) == ("False", "KubeletHasSufficientMemory")


def test_the_pressure_taint_stays_for_the_transition_period_and_keeps_new_pods_off_the_node() -> None:
    sim = simulate([node(memory="2Gi"), pod("a", "low", "1Gi", usage="1900Mi"), pod("b", "mid", "512Mi", node_name="")])
    assert evicted(sim) == ["a"]
    times = {(e.reason, e.involved_object.name): e.event_time for e in sim.cluster.events}
    # b waits out the 5 minutes of --eviction-pressure-transition-period behind the NoSchedule taint.
    assert times[("Scheduled", "b")] - times[("Evicted", "a")] >= 300
    failed = [e.message for e in sim.cluster.events if e.reason == "FailedScheduling"]
    assert failed and "node.kubernetes.io/memory-pressure" in failed[0]
    assert not sim.cluster.nodes["n1"].spec.taints


def test_the_default_threshold_is_the_kubelets_100mi() -> None:
    sim = simulate([node(memory="1Gi", eviction_hard=None), pod("p", "low", "512Mi", usage="950Mi")])
    assert evicted(sim) == ["p"]
    sim = simulate([node(memory="1Gi", eviction_hard=None), pod("p", "low", "512Mi", usage="900Mi")])
    assert evicted(sim) == []
