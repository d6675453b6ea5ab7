"""Evicting pod-group preemption's victims (the binder) and saying why pods of PodGroups were or were
not preempted (preemption.group_explain, describe pod)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import HIGH_PRIORITY, LOW_PRIORITY, MID_PRIORITY, make_node, make_pod, make_priority_class
from podsched.api.manifests import decode_object
from podsched.api.types import CONDITION_DISRUPTION_TARGET, Pod, PodGroup
from podsched.cluster import events as ev
from podsched.cluster.binder import NOT_LOWER_PRIORITY, BindError
from podsched.cluster.state import Cluster
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.status import Code, Status
from podsched.preemption.domain import cross_nodes_victims
from podsched.preemption.group_explain import explain_pod_group_preemption, explain_units_on_node
from podsched.preemption.pod_group_preemption import PodGroupPreemptionOutcome, PodGroupPreemptor
from podsched_cli.output import Protection, protection_lines

START = 5000.0


def pod_group(name: str, priority_class: str, mode: str = "single", gang: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "priorityClassName": priority_class,
        "schedulingPolicy": {"gang": {"minCount": gang}} if gang else {"basic": {}},
        "disruptionMode": {mode: {}},
    }
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def member(name: str, group: str, priority_class: str, node: str = "") -> Pod:
    builder = make_pod(name).priority_class(priority_class).req(cpu="1")
    pod = (builder.node(node) if node else builder).obj()
    pod.spec.pod_group_name = group
    return pod


@pytest.fixture
def cluster() -> Cluster:
    cluster = Cluster(lambda: START)
    for node in ("n1", "n2"):
        cluster.apply(make_node(node).capacity(cpu="2", memory="4Gi").obj())
    for name, value in (("low", LOW_PRIORITY), ("mid", MID_PRIORITY), ("high", HIGH_PRIORITY)):
        cluster.apply(make_priority_class(name, value))
    return cluster


def test_a_pod_groups_victims_are_evicted_naming_the_group_and_the_cluster(cluster: Cluster) -> None:
    _, ring = cluster.apply(decode_object(pod_group("ring", "low", "all")))
    _, train = cluster.apply(decode_object(pod_group("train", "high", gang=2)))
    assert isinstance(train, PodGroup) and isinstance(ring, PodGroup)
    victims = [cluster.apply(member(f"ring-{i}", "ring", "high", f"n{i + 1}"))[1] for i in range(2)]

    for victim in victims:
        cluster.preempt_pod_group_victim(victim.uid, train, "default-scheduler")

    for victim in victims:
        evicted = cluster.pods_by_uid[victim.uid]
        assert evicted.metadata.deletion_timestamp is not None
        condition = evicted.condition(CONDITION_DISRUPTION_TARGET)
        assert condition is not None and condition.message == (
            "default-scheduler: preempting to accommodate a higher priority PodGroup"
        )
    preempted = [e for e in cluster.events if e.reason == ev.PREEMPTED]
    assert [e.message for e in preempted] == [f"Preempted by PodGroup {train.uid} on node cluster"] * 2
    assert preempted[0].related is not None and preempted[0].related.kind == "PodGroup"


def test_a_victim_whose_group_is_not_below_the_preemptor_group_is_refused(cluster: Cluster) -> None:
    cluster.apply(decode_object(pod_group("peer", "high")))
    _, train = cluster.apply(decode_object(pod_group("train", "high", gang=1)))
    assert isinstance(train, PodGroup)
    _, victim = cluster.apply(member("peer-0", "peer", "low", "n1"))
    with pytest.raises(BindError) as refused:
        cluster.preempt_pod_group_victim(victim.uid, train, "default-scheduler")
    assert refused.value.reason == NOT_LOWER_PRIORITY
    assert cluster.pods_by_uid[victim.uid].metadata.deletion_timestamp is None


def test_a_pod_may_preempt_a_higher_priority_pod_of_a_lower_priority_group(cluster: Cluster) -> None:
    cluster.apply(decode_object(pod_group("batch", "low")))
    _, victim = cluster.apply(member("batch-0", "batch", "high", "n1"))
    _, preemptor = cluster.apply(make_pod("mid").priority_class("mid").req(cpu="2").obj())
    cluster.preempt_victim(victim.uid, preemptor, "n1")
    assert cluster.pods_by_uid[victim.uid].metadata.deletion_timestamp is not None


class Groups:
    def __init__(self, groups: dict[str, PodGroup], pods: list[Pod]) -> None:
        self.groups, self.pods = groups, pods

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        return self.groups.get(name)

    def pod_group_name(self, pod: Pod) -> str | None:
        return pod.spec.pod_group_name

    def scheduled_pods(self, namespace: str, name: str) -> list[Pod]:
        return [p for p in self.pods if p.spec.pod_group_name == name and p.spec.node_name]


def _group(name: str, priority: int, mode: str) -> PodGroup:
    group = decode_object(pod_group(name, "x", mode))
    assert isinstance(group, PodGroup)
    group.priority = priority
    return group


def _snapshot(pods: list[Pod]) -> Snapshot:
    infos = {n: NodeInfo(make_node(n).capacity(cpu="4").obj()) for n in ("n1", "n2")}
    for pod in pods:
        infos[pod.spec.node_name].add_pod(PodInfo(pod))
    return Snapshot(infos.values())


def test_the_explanations_say_which_groups_went_whole_and_which_pods_their_group_protected() -> None:
    ring = [make_pod(f"ring-{i}").priority(HIGH_PRIORITY).node(f"n{i + 1}").obj() for i in range(2)]
    guard = make_pod("guard").priority(LOW_PRIORITY).node("n2").obj()
    for pod in ring:
        pod.spec.pod_group_name = "ring"
    guard.spec.pod_group_name = "guards"
    groups = Groups(
        {"ring": _group("ring", LOW_PRIORITY, "all"), "guards": _group("guards", HIGH_PRIORITY, "single")},
        [*ring, guard],
    )
    snapshot = _snapshot([*ring, guard])
    units = cross_nodes_victims(snapshot, groups, snapshot.node_info_list)
    ring_unit = next(u for u in units if len(u.pods) == 2)
    preemptor = PodGroupPreemptor("default", "train", MID_PRIORITY, (), "PreemptLowerPriority")
    outcome = PodGroupPreemptionOutcome(Status(Code.SUCCESS), {}, ring, units=[ring_unit], victim_units=[ring_unit])

    lines = explain_pod_group_preemption(preemptor, outcome, snapshot, groups)

    assert lines == [
        "default/ring-0, default/ring-1 on nodes n1, n2 are preempted together: PodGroup default/ring has "
        "disruptionMode All, so its pods go as one (priority 0, below PodGroup default/train's 100)",
        "default/guard is not preempted: its PodGroup default/guards has priority 1000, "
        "not below PodGroup default/train's 100",
    ]
    never = PodGroupPreemptor("default", "train", MID_PRIORITY, (), "Never")
    assert explain_pod_group_preemption(never, outcome, snapshot, groups) == [
        "PodGroup default/train preempts nothing: its preemptionPolicy is Never, so its pods wait for room"
    ]
    spared = explain_units_on_node(make_pod("p").priority(MID_PRIORITY).obj(), "n1", [], [ring_unit], snapshot, groups)
    assert spared == [
        "default/ring-0, default/ring-1 on nodes n1, n2 are not preempted: PodGroup default/ring "
        "(disruptionMode All) was put back whole and default/p's 100 still fits"
    ]


def test_describe_says_how_a_pods_group_weighs_it_and_who_preempted_it() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "ring-0", "namespace": "default"},
        "spec": {
            "priority": 1000,
            "schedulingGroup": {"podGroupName": "ring"},
            "containers": [{"name": "c", "image": "pause"}],
        },
    }
    ring = pod_group("ring", "low", "all") | {"spec": {**pod_group("ring", "low", "all")["spec"], "priority": 0}}
    train = pod_group("train", "high", gang=2) | {
        "spec": {**pod_group("train", "high", gang=2)["spec"], "priority": 1000000}
    }
    events = [
        {
            "reason": "Preempted",
            "message": "Preempted by PodGroup u on node cluster",
            "related": {"kind": "PodGroup", "namespace": "default", "name": "train"},
        }
    ]

    lines = protection_lines(pod, events, Protection(pod_group=ring, preemptor=train), START)

    assert lines == [
        "PodGroup default/ring has disruptionMode All: preemption takes all of its running pods together or none "
        "of them, weighed at the group's priority 0, not its own 1000",
        "Preempted by PodGroup default/train (priority 1000000): a pod group looks for room across the whole "
        "cluster at once, and this pod was in the way",
    ]


def test_a_dry_runs_explanations_tell_that_a_group_goes_whole_with_the_pod_chosen_on_the_node() -> None:
    """explain_preemption (what apply --dry-run=server prints) with the PodGroup lister: the victim on
    the chosen node takes its All group's pod on the other node along."""
    from podsched.framework.interface import PostFilterResult
    from podsched.preemption.explain import explain_preemption
    from podsched.preemption.victims import DEFAULT_VICTIM_POLICY

    ring = [make_pod(f"ring-{i}").priority(HIGH_PRIORITY).node(f"n{i + 1}").obj() for i in range(2)]
    for pod in ring:
        pod.spec.pod_group_name = "ring"
    groups = Groups({"ring": _group("ring", LOW_PRIORITY, "all")}, ring)
    snapshot = _snapshot(ring)
    preemptor = make_pod("p").priority(MID_PRIORITY).obj()
    result = PostFilterResult("n1", list(ring))

    lines = explain_preemption(preemptor, result, snapshot, [], DEFAULT_VICTIM_POLICY, START, groups)

    assert lines == [
        "default/ring-0, default/ring-1 on nodes n1, n2 are preempted together: PodGroup default/ring has "
        "disruptionMode All, so its pods go as one (priority 0, below default/p's 100)"
    ]
    # Without the lister (gate off), the group's pods are ordinary pods of priority 1000: nothing to say.
    assert explain_preemption(preemptor, result, snapshot, [], DEFAULT_VICTIM_POLICY, START) == []
