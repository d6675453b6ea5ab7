"""Gang scheduling with the GenericWorkload gate (upstream v1.37.2 gangscheduling plugin and
schedule_one_podgroup.go): PlacementFeasible's table, PreEnqueue holding a gang until its pods
exist, the queue popping a group as one, the all-or-nothing pod-group cycle (assumptions undone,
nothing bound unless minCount fits), the PodGroupPostFilter hook, the PodGroup's condition, and
the gate off leaving everything as it was."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import make_node, make_pod
from podsched.api.types import (
    CONDITION_POD_GROUP_INITIALLY_SCHEDULED,
    DISRUPTION_MODE_SINGLE,
    SCHEDULING_POLICY_BASIC,
    SCHEDULING_POLICY_GANG,
    ObjectMeta,
    Pod,
    PodGroup,
)
from podsched.cluster.binder import BindError
from podsched.config.scheduler_config import SchedulerConfig, parse_scheduler_config
from podsched.framework.node_info import PodInfo
from podsched.framework.status import Code, Status
from podsched.plugins.gang_scheduling import (
    WAITING_FOR_MIN_COUNT_PODS,
    PlacementProgress,
    placement_feasible,
)
from podsched.plugins.names import GANG_SCHEDULING
from podsched.plugins.pod_group_pods_count import normalize_placement_scores, score_placement
from podsched.preemption.pod_group_preemption import PodGroupPreemptionOutcome
from podsched.queue import scheduling_queue as sq
from podsched.queue.nominator import Nominator
from podsched.scheduler.pod_group_cycle import schedule_pod_group
from podsched.simulator.engine import Simulator

GATE_ON = SchedulerConfig(feature_gates=(("GenericWorkload", True),))
GROUP = "trainers"


def gang(min_count: int, name: str = GROUP) -> PodGroup:
    return PodGroup(
        ObjectMeta(name=name, namespace="default"), SCHEDULING_POLICY_GANG, min_count, DISRUPTION_MODE_SINGLE
    )


def basic(name: str = GROUP) -> PodGroup:
    return PodGroup(ObjectMeta(name=name, namespace="default"), SCHEDULING_POLICY_BASIC)


def worker(name: str, cpu: str = "1", group: str = GROUP) -> Pod:
    return make_pod(name).req(cpu=cpu).group(group).obj()


def simulator(config: SchedulerConfig = GATE_ON, nodes: int = 2, cpu: str = "2") -> Simulator:
    sim = Simulator(config)
    for index in range(nodes):
        sim.cluster.apply(make_node(f"n{index + 1}").capacity(cpu=cpu, memory="8Gi", pods=10).obj())
    return sim


def node_of(sim: Simulator, name: str) -> str:
    return sim.cluster.pods[("default", name)].spec.node_name


# --- GangScheduling.PlacementFeasible (upstream TestPlacementFeasible's cases) -------------------------


@pytest.mark.parametrize(
    ("group", "progress", "code", "message"),
    [
        (
            gang(3),
            PlacementProgress(1, 1),
            Code.UNSCHEDULABLE,
            "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining",
        ),
        (gang(3), PlacementProgress(2, 1), Code.WAIT, "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining"),
        (gang(3), PlacementProgress(0, 3), None, ""),
        (gang(3), PlacementProgress(4, 3), None, ""),
        (basic(), PlacementProgress(1, 0), Code.WAIT, "minCount (1) is not yet satisfied: 0 scheduled, 1 remaining"),
        (
            basic(),
            PlacementProgress(0, 0),
            Code.UNSCHEDULABLE,
            "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining",
        ),
    ],
    ids=[
        "a gang that can no longer reach minCount is unschedulable",
        "a gang that may still reach minCount waits",
        "a gang at minCount is feasible",
        "a gang past minCount with pods left is feasible",
        "a basic group waits for its first pod",
        "a basic group with no pod placed is unschedulable",
    ],
)
def test_placement_feasible(group: PodGroup, progress: PlacementProgress, code: Code | None, message: str) -> None:
    status = placement_feasible(group, progress)
    assert (status.code if status else None, status.message if status else "") == (code, message)
    if status is not None:
        assert status.plugin == GANG_SCHEDULING


def test_pod_group_pods_count_favours_the_placement_with_more_pods() -> None:
    assert score_placement(2, 3) == 5
    assert normalize_placement_scores([5, 10, 0]) == [50, 100, 0]
    with pytest.raises(ValueError, match="no pods from pod group"):
        normalize_placement_scores([0, 0])


# --- PreEnqueue and the queue --------------------------------------------------------------------------


def test_a_gang_is_held_until_its_group_and_min_count_pods_exist_then_binds_together() -> None:
    sim = simulator()
    sim.cluster.apply(worker("w0"))
    w0 = sim.cluster.pods[("default", "w0")]
    held = sim.queue.gated_status(w0.uid)
    assert held is not None and held.message == 'waiting for pods\'s pod group "trainers" to appear in scheduling queue'
    sim.cluster.apply(gang(3))
    sim.cluster.apply(worker("w1"))
    held = sim.queue.gated_status(w0.uid)
    assert held is not None and held.message == WAITING_FOR_MIN_COUNT_PODS
    assert sim.queue.location(w0.uid) == sq.UNSCHEDULABLE
    assert sim.run_until_quiescent() == 0  # nothing to attempt: no event, no condition
    assert not sim.cluster.events
    sim.cluster.apply(worker("w2"))
    assert sim.queue.gated_status(w0.uid) is None
    sim.run_until_quiescent()
    assert {node_of(sim, f"w{i}") for i in range(3)} == {"n1", "n2"}
    assert all(node_of(sim, f"w{i}") for i in range(3))
    group = sim.cluster.pod_groups[("default", GROUP)]
    condition = group.status.condition(CONDITION_POD_GROUP_INITIALLY_SCHEDULED)
    assert condition is not None and (condition.status, condition.reason) == ("True", "Scheduled")
    # One pod-group cycle: the other members were popped with the first, each with one attempt.
    assert [log.attempt for log in sim.cycles] == [1, 1, 1]


def test_lowering_min_count_lets_a_held_gang_in() -> None:
    sim = simulator()
    sim.cluster.apply(gang(3))
    sim.cluster.apply(worker("w0"))
    sim.cluster.apply(worker("w1"))
    sim.run_until_quiescent()
    assert not node_of(sim, "w0")
    sim.cluster.apply(gang(2))
    sim.run_until_quiescent()
    assert node_of(sim, "w0") and node_of(sim, "w1")


# --- the pod-group cycle -------------------------------------------------------------------------------


def test_a_gang_that_does_not_fit_whole_binds_nothing_and_its_assumptions_are_undone() -> None:
    sim = simulator()
    sim.cluster.apply(gang(5))
    for index in range(5):
        sim.cluster.apply(worker(f"w{index}"))
    sim.run_until_quiescent()
    assert [node_of(sim, f"w{i}") for i in range(5)] == [""] * 5
    assert all(not info.pods for info in sim.cluster.node_infos.values())
    failed = {e.involved_object.name: e.message for e in sim.cluster.events if e.reason == "FailedScheduling"}
    group_message = (
        "minCount (5) cannot be satisfied: 4 scheduled, 0 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
    assert failed == {
        **{f"w{i}": f"pod group is unschedulable, {group_message}" for i in range(4)},
        "w4": "0/2 nodes are available: 2 Insufficient cpu.",
    }
    condition = sim.cluster.pod_groups[("default", GROUP)].status.condition(CONDITION_POD_GROUP_INITIALLY_SCHEDULED)
    assert condition is not None and (condition.status, condition.reason, condition.message) == (
        "False",
        "Unschedulable",
        group_message,
    )
    # Rejected together: every pod waits in the pool with GangScheduling among its rejectors, and a
    # node added brings the whole group back, which then fits.
    for index in range(5):
        info = sim.queue.info(sim.cluster.pods[("default", f"w{index}")].uid)
        assert info is not None and GANG_SCHEDULING in info.unschedulable_plugins
    sim.cluster.apply(make_node("n3").capacity(cpu="2", memory="8Gi", pods=10).obj())
    sim.run_until_quiescent()
    assert all(node_of(sim, f"w{i}") for i in range(5))
    condition = sim.cluster.pod_groups[("default", GROUP)].status.condition(CONDITION_POD_GROUP_INITIALLY_SCHEDULED)
    assert condition is not None and condition.status == "True"


def test_the_pod_group_post_filter_hook_gets_the_groups_own_algorithm_and_its_message_is_appended() -> None:
    sim = simulator(nodes=1)
    group = gang(3)
    pods = [worker(f"w{i}") for i in range(3)]
    for pod in pods:
        pod.metadata.uid = f"uid-{pod.name}"
    algorithm = sim.profiles.default
    seen: dict[str, object] = {}

    def post_filter(group_arg, pods_arg, scheduling_func, snapshot, pdbs, now):  # type: ignore[no-untyped-def]
        seen["pods"] = [p.name for p in pods_arg]
        proposal = scheduling_func(snapshot)
        seen["proposal"] = ([a.node_name for a in proposal.assignments], proposal.status.code)
        return PodGroupPreemptionOutcome(Status(Code.UNSCHEDULABLE, ["no luck"]))

    result = schedule_pod_group(
        algorithm, group, pods, [], sim.cluster.snapshot(), [], sim.queue.nominator, sim.now, post_filter
    )
    assert seen == {"pods": ["w0", "w1", "w2"], "proposal": (["n1", "n1", ""], Code.UNSCHEDULABLE)}
    assert (
        result.status.message == "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
        # DynamicResources' PodGroupPostFilter answers first, as upstream's default plugins do.
        "deallocation and deletion of ResourceClaims completed, pod group preemption: no luck"
    )
    assert not sim.cluster.node_infos["n1"].pods  # neither run left an assumption behind
    assert [r.message for r in result.pods] == [f"pod group is unschedulable, {result.status.message}"] * 2 + [
        "0/1 nodes are available: 1 Insufficient cpu."
    ]


def test_a_groups_own_nominations_hold_no_room_against_its_members_in_its_cycle() -> None:
    # upstream's nominatedPodToInfo looks a nominated pod up in the queue; a group in flight is in
    # none of its structures, so its pods come back bare (priority 0, no requests) and Filter,
    # which adds nominated pods of >= priority, leaves them out.
    sim = simulator(nodes=2, cpu="2")
    assert sim.pod_groups is not None
    group = replace(gang(2), priority=10)
    small = make_pod("a").req(cpu="1").group(GROUP).priority(10).nominated("n1").obj()
    large = make_pod("b").req(cpu="2").group(GROUP).priority(10).nominated("n1").obj()
    nominator = sim.queue.nominator  # the one the profile's Filter reads
    for pod in (small, large):
        pod.metadata.uid = f"uid-{pod.name}"
        nominator.add(PodInfo(pod))
    result = sim.pod_groups.schedule(
        sim.profiles.default, group, [small, large], sim.cluster.snapshot(), [], nominator, sim.now
    )
    # "b"'s nomination would leave no room for "a" on n1 (it would go to n2 and "b" to n1).
    assert [r.node_name for r in result.pods] == ["n1", "n2"]
    # After the cycle each is nominated as itself again.
    assert sorted((i.pod.name, i.pod.priority) for i in nominator.nominated_pods_for_node("n1")) == [
        ("a", 10),
        ("b", 10),
    ]


def test_a_nominator_shows_a_group_in_flight_bare_and_restores_it_as_it_then_is() -> None:
    nominator = Nominator()
    pod = make_pod("a").req(cpu="1").group(GROUP).priority(10).nominated("n1").obj()
    nominator.add(PodInfo(pod))
    reader = nominator.journal_reader()
    with nominator.in_flight([pod]):
        (bare,) = nominator.nominated_pods_for_node("n1")
        assert (bare.pod.name, bare.pod.uid, bare.pod.priority, bare.pod.spec.containers) == ("a", pod.uid, 0, ())
        assert bare.pod.spec.pod_group_name == GROUP
        nominator.remove(pod)  # assumed in the cycle, then forgotten: nominated again, still bare
        nominator.add(PodInfo(pod), "n2")
        assert [i.pod.priority for i in nominator.nominated_pods_for_node("n2")] == [0]
    assert [i.pod for i in nominator.nominated_pods_for_node("n2")] == [pod]
    # The journal saw every change, so a reader summing it ends where the nominator is.
    changes = reader.changes()
    assert changes is not None
    net: dict[tuple[str, str, int], int] = {}
    for info, node, sign in changes:
        key = (info.pod.uid, node, info.pod.priority)
        net[key] = net.get(key, 0) + sign
    assert {key: n for key, n in net.items() if n} == {(pod.uid, "n1", 10): -1, (pod.uid, "n2", 10): 1}


def test_pods_that_disagree_with_their_group_fail_the_cycle_with_upstreams_error() -> None:
    sim = simulator()
    group = replace(gang(2), priority=10)
    pods = [make_pod("a").req(cpu="1").group(GROUP).priority(10).obj(), worker("b")]
    result = schedule_pod_group(
        sim.profiles.default, group, pods, [], sim.cluster.snapshot(), [], sim.queue.nominator, sim.now
    )
    assert result.status.code == Code.ERROR
    assert result.status.message == (
        "all pods in a single pod group should have the same priority as the pod group's priority, got 0 and 10"
    )
    assert result.condition(0.0).reason == "SchedulerError"
    # validateScheduledPods: a member already bound must agree with the group too.
    bound = make_pod("c").req(cpu="1").group(GROUP).node("n1").obj()
    result = schedule_pod_group(
        sim.profiles.default, group, pods[:1], [bound], sim.cluster.snapshot(), [], sim.queue.nominator, sim.now
    )
    assert result.status.code == Code.ERROR and "got 0 and 10" in result.status.message


def test_the_binder_binds_a_gang_whole_or_not_at_all() -> None:
    sim = simulator(nodes=1)
    for name in ("a", "b", "c"):
        sim.cluster.apply(make_pod(name).req(cpu="1").obj())
    uids = [sim.cluster.pods[("default", name)].uid for name in ("a", "b", "c")]
    with pytest.raises(BindError, match="would overcommit"):
        sim.cluster.bind_group([(uid, "n1") for uid in uids])
    assert not sim.cluster.node_infos["n1"].pods
    sim.cluster.bind_group([(uid, "n1") for uid in uids[:2]])
    assert len(sim.cluster.node_infos["n1"].pods) == 2


# --- the gate --------------------------------------------------------------------------------------------


def test_with_the_gate_off_groups_are_ignored_and_the_queue_never_looks_at_them() -> None:
    sim = simulator(SchedulerConfig())
    assert sim.queue.pre_enqueue is None and sim.pod_groups is None
    sim.cluster.apply(gang(5))
    for index in range(5):
        sim.cluster.apply(worker(f"w{index}"))
    sim.run_until_quiescent()
    assert sum(1 for i in range(5) if node_of(sim, f"w{i}")) == 4
    assert sim.cluster.pod_groups[("default", GROUP)].status.conditions == ()


def test_the_gate_is_read_from_the_configuration_file() -> None:
    assert parse_scheduler_config("featureGates: {GenericWorkload: true}").generic_workload
    assert not parse_scheduler_config("{}").generic_workload
    with pytest.raises(Exception, match=r"featureGates\[Gang\]: Invalid value: unrecognized feature gate: Gang"):
        parse_scheduler_config("featureGates: {Gang: true}")


def test_with_the_gate_off_the_api_serves_no_pod_group_as_upstream() -> None:
    text = (
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: trainers}\n"
        "spec: {schedulingPolicy: {gang: {minCount: 2}}}\n"
    )
    off = Simulator(SchedulerConfig())
    [rejection] = off.apply_text(text, "group.yaml")
    assert rejection.message == (
        'error: resource mapping not found for name: "trainers" namespace: "default" from "group.yaml": '
        'no matches for kind "PodGroup" in version "scheduling.k8s.io/v1beta1"\nensure CRDs are installed first'
    )
    assert not off.cluster.pod_groups
    on = Simulator(GATE_ON)
    assert on.apply_text(text, "group.yaml") == []
    assert ("default", GROUP) in on.cluster.pod_groups


# --- retried after pod-group preemption (DefaultPreemption's PreEnqueue) --------------------------

CLUSTER_WITH_A_VICTIM = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 100
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: '2', memory: 8Gi, pods: '10'}}
---
apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  containers: [{name: main, image: pause, resources: {requests: {cpu: '2'}}}]
  terminationGracePeriodSeconds: %d
  nodeName: n1
status: {phase: Running}
"""

GANG_OF_TWO = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: trainers}
spec: {schedulingPolicy: {gang: {minCount: 2}}, priorityClassName: high}
""" + "".join(
    f"""---
apiVersion: v1
kind: Pod
metadata: {{name: w{index}}}
spec:
  containers: [{{name: main, image: pause, resources: {{requests: {{cpu: '1'}}}}}}]
  priorityClassName: high
  schedulingGroup: {{podGroupName: trainers}}
"""
    for index in range(2)
)


def group_cycles(sim: Simulator) -> list[float]:
    return sorted({log.time - sim.cycles[0].time for log in sim.cycles if log.pod == "default/w0"})


def test_a_gang_whose_preemption_runs_is_retried_when_its_victim_is_gone_not_on_its_backoff() -> None:
    sim = Simulator(GATE_ON)
    assert sim.apply_text(CLUSTER_WITH_A_VICTIM % 45, "cluster.yaml") == []
    sim.run_until_quiescent()
    assert sim.apply_text(GANG_OF_TWO, "gang.yaml") == []
    assert sim.schedule_one() is not None  # the gang's cycle: it preempts the victim
    victim = sim.cluster.pods[("default", "victim")]
    assert victim.metadata.deletion_timestamp is not None
    # DefaultPreemption's PreEnqueue holds the group back while its preemption runs: it waits in
    # the pool for an assigned pod's deletion instead of its 1 s backoff.
    infos = [sim.queue.info(sim.cluster.pods[("default", f"w{i}")].uid) for i in range(2)]
    assert {sim.queue.location(info.pod.uid) for info in infos if info is not None} == {sq.UNSCHEDULABLE}
    sim.run_until_quiescent()
    assert node_of(sim, "w0") == node_of(sim, "w1") == "n1"
    # Tried twice: once preempting, once when the victim's 45 s grace period had passed.
    assert group_cycles(sim) == [0.0, 45.0]


def test_a_gang_whose_victims_already_terminate_sends_no_eviction_and_backs_off() -> None:
    # prepareCandidateAsync skips victims being deleted already: with none left it starts nothing,
    # DefaultPreemption's PreEnqueue holds nothing back, and the group backs off (1 s, then 2 s,
    # 4 s, each ending where the next 1 s window of backoffQ begins).
    sim = Simulator(GATE_ON)
    assert sim.apply_text(CLUSTER_WITH_A_VICTIM % 10, "cluster.yaml") == []
    sim.run_until_quiescent()
    sim.cluster.delete("Pod", "default", "victim")
    assert sim.apply_text(GANG_OF_TWO, "gang.yaml") == []
    sim.run_until_quiescent()
    assert node_of(sim, "w0") == node_of(sim, "w1") == "n1"
    # Its victim is gone at 10 s, when its backoff (5 s + 4 s, aligned: 10 s) happens to end too.
    assert group_cycles(sim) == [0.0, 2.0, 5.0, 10.0]
