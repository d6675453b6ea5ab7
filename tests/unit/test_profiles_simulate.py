"""Scheduling profiles in `simulate`: each profile schedules the pods whose spec.schedulerName names it,
with its own plugins; pods for another scheduler are left alone; preemption and nominations cross
profiles as in upstream's one Scheduler (pkg/scheduler/profile, schedule_one.go frameworkForPod,
eventhandlers.go responsibleForPod). Also a preemptor nominated to one node that binds to another
once room frees there first (schedule_one.go: the nominated node is only tried first)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from manifest_dicts import COMMON, node, pod
from podsched.api.types import Pod
from podsched.config.scheduler_config import SchedulerConfig, parse_scheduler_config
from podsched.simulator.engine import Simulator

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
TWO_PROFILES = (
    HEADER
    + """profiles:
- schedulerName: default-scheduler
- schedulerName: no-preemption
  plugins:
    postFilter:
      disabled: [{name: DefaultPreemption}]
"""
)


@pytest.fixture(params=[True, False], ids=["fast path", "plain path"])
def fast(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def run(fast: bool, config: SchedulerConfig, *steps: list[dict[str, Any]]) -> Simulator:
    simulator = Simulator(config, columns=fast)
    assert not simulator.apply_text(COMMON.read_text(), "common.yaml")
    for index, documents in enumerate(steps):
        assert not simulator.apply_text(yaml.safe_dump_all(documents), f"step{index}.yaml")
        simulator.run_until_quiescent()
    return simulator


def of_scheduler(manifest: dict[str, Any], scheduler_name: str) -> dict[str, Any]:
    manifest["spec"]["schedulerName"] = scheduler_name
    return manifest


def current(simulator: Simulator, name: str) -> Pod:
    return next(p for p in simulator.cluster.history.values() if p.name == name)


def reasons(simulator: Simulator, name: str) -> list[str]:
    return [e.reason for e in simulator.cluster.events if e.involved_object.name == name]


def test_a_pod_for_another_scheduler_is_left_alone_even_with_room(fast: bool) -> None:
    simulator = run(
        fast,
        parse_scheduler_config(TWO_PROFILES),
        [
            node("n1"),
            of_scheduler(pod("theirs", "high-priority", "1"), "my-scheduler"),
            pod("ours", "low-priority", "1"),
        ],
    )
    theirs = current(simulator, "theirs")
    assert not theirs.spec.node_name and theirs.status.phase == "Pending"
    assert reasons(simulator, "theirs") == []  # never queued: no event, no attempt
    assert [c.pod for c in simulator.cycles] == ["default/ours"]
    assert current(simulator, "ours").spec.node_name == "n1"


def test_a_pod_for_another_scheduler_is_left_alone_under_the_default_configuration_too(fast: bool) -> None:
    simulator = run(fast, SchedulerConfig(), [node("n1"), of_scheduler(pod("theirs", "high-priority", "1"), "other")])
    assert not current(simulator, "theirs").spec.node_name
    assert simulator.cycles == [] and simulator.cluster.events == []


def test_each_profile_uses_its_own_post_filter(fast: bool) -> None:
    """Both pods fit only by preempting: the default profile's pod preempts, the pod of the profile
    with DefaultPreemption disabled waits with the Filter diagnosis alone."""
    simulator = run(
        fast,
        parse_scheduler_config(TWO_PROFILES),
        [node("n1", cpu="2"), pod("low-1", "low-priority", "1", node_name="n1", grace=0)],
        [node("n2", cpu="2"), pod("low-2", "low-priority", "2", node_name="n2", grace=0)],
        [
            of_scheduler(
                pod("waits", "high-priority", "2", spec={"nodeSelector": {"kubernetes.io/hostname": "n2"}}),
                "no-preemption",
            ),
            pod("preempts", "mid-priority", "2", spec={"nodeSelector": {"kubernetes.io/hostname": "n1"}}),
        ],
    )
    assert current(simulator, "preempts").spec.node_name == "n1"
    assert current(simulator, "low-1").metadata.deletion_timestamp is not None
    waits = current(simulator, "waits")
    assert not waits.spec.node_name and not waits.status.nominated_node_name
    assert "Nominated" not in reasons(simulator, "waits")
    failure = [e for e in simulator.cluster.events if e.involved_object.name == "waits"][-1]
    assert failure.reason == "FailedScheduling"
    # The Filter diagnosis alone, no "preemption: ..." part.
    assert failure.message == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector."
    )
    assert current(simulator, "low-2").spec.node_name == "n2" and current(simulator, "low-2").status.phase == "Running"


def test_each_profile_uses_its_own_filter_plugins(fast: bool) -> None:
    config = parse_scheduler_config(
        HEADER
        + """profiles:
- schedulerName: default-scheduler
- schedulerName: ignores-taints
  plugins:
    filter:
      disabled: [{name: TaintToleration}]
"""
    )
    tainted = node("n1")
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    simulator = run(
        fast,
        config,
        [
            tainted,
            of_scheduler(pod("lenient", "low-priority", "1"), "ignores-taints"),
            pod("strict", "low-priority", "1"),
        ],
    )
    assert current(simulator, "lenient").spec.node_name == "n1"
    strict = current(simulator, "strict")
    assert not strict.spec.node_name
    assert [e.message for e in simulator.cluster.events if e.involved_object.name == "strict"][-1].startswith(
        "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}."
    )


def test_a_pod_of_one_profile_preempts_a_lower_priority_pod_of_another(fast: bool) -> None:
    config = parse_scheduler_config(TWO_PROFILES)
    simulator = run(
        fast,
        config,
        [node("n1", cpu="2"), of_scheduler(pod("batch", "low-priority", "2", grace=5), "no-preemption")],
        [pod("urgent", "high-priority", "2")],
    )
    assert current(simulator, "batch").spec.node_name == "n1"
    assert current(simulator, "batch").metadata.deletion_timestamp is not None
    assert "Preempted" in reasons(simulator, "batch")
    assert current(simulator, "urgent").spec.node_name == "n1"


def test_a_nomination_of_one_profile_keeps_a_lower_priority_pod_of_another_off_the_node(fast: bool) -> None:
    """`high` (default profile) preempts on n1 and is nominated there while its victim terminates;
    `small`, of the other profile and lower priority, would fit beside the victim's room but not beside
    the nominated `high`, and is kept off n1 until `high` binds."""
    simulator = run(
        fast,
        parse_scheduler_config(TWO_PROFILES),
        [node("n1", cpu="2"), pod("victim", "low-priority", "2", node_name="n1", grace=30)],
        [
            pod("high", "high-priority", "1"),
            of_scheduler(pod("small", "mid-priority", "1", spec={"terminationGracePeriodSeconds": 0}), "no-preemption"),
        ],
    )
    # While the victim terminated, `small` failed on n1 because `high`'s nomination counts for it.
    first = next(e for e in simulator.cluster.events if e.involved_object.name == "small")
    assert first.reason == "FailedScheduling"
    assert first.message == "0/1 nodes are available: 1 Insufficient cpu."
    scheduled = [e.involved_object.name for e in simulator.cluster.events if e.reason == "Scheduled"]
    assert scheduled == ["high", "small"]
    assert current(simulator, "high").spec.node_name == current(simulator, "small").spec.node_name == "n1"


def test_a_preemptor_nominated_to_one_node_binds_to_another_that_frees_first(fast: bool) -> None:
    """`preemptor` preempts the two low pods on n1 (3 s grace) rather than the mid pod on n2 and is
    nominated to n1; `urgent` (lower than the preemptor, higher than the mid pod) then preempts the
    mid pod on n2 (1 s grace). When n2 frees, the preemptor's retry tries n1 first, which is still
    full, then every node, and binds to n2 (urgent's nomination there is of lower priority, so it
    does not count). The n1 victims still terminate (nothing undoes a preemption), the preemptor's
    nomination is gone once bound, and `urgent` ends on n1."""
    urgent_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "urgent"},
        "value": 100000,
    }
    simulator = run(
        fast,
        SchedulerConfig(),
        [
            urgent_class,
            node("n1", cpu="2"),
            node("n2", cpu="2"),
            pod("low-1", "low-priority", "1", node_name="n1", grace=3),
            pod("low-2", "low-priority", "1", node_name="n1", grace=3),
            pod("mid", "mid-priority", "2", node_name="n2", grace=1),
        ],
        [pod("preemptor", "high-priority", "2", grace=1), pod("urgent", "urgent", "2", grace=1)],
    )
    events = [(e.reason, e.involved_object.name, e.message) for e in simulator.cluster.events]
    assert ("Nominated", "preemptor", "Nominated to node n1 after preempting 2 pod(s)") in events
    assert ("Scheduled", "preemptor", "Successfully assigned default/preemptor to n2") in events
    preemptor = current(simulator, "preemptor")
    assert preemptor.spec.node_name == "n2" and not preemptor.status.nominated_node_name
    bound_at = next(e.event_time for e in simulator.cluster.events if e.reason == "Scheduled")
    for victim in ("low-1", "low-2"):
        assert "Preempted" in reasons(simulator, victim)
        assert current(simulator, victim).metadata.deletion_timestamp is not None
        deleted_at = next(
            e.event_time for e in simulator.cluster.events if e.reason == "Deleted" and e.involved_object.name == victim
        )
        assert deleted_at > bound_at  # the preemptor bound to n2 during the n1 victims' grace period
    assert current(simulator, "urgent").spec.node_name == "n1"


def test_a_nomination_of_another_schedulers_pod_does_not_count(fast: bool) -> None:
    """Upstream's nominator holds only pods its queue has seen: a pending pod of another scheduler
    that carries a nominatedNodeName takes no room from this scheduler's pods."""
    theirs = of_scheduler(pod("theirs", "high-priority", "2", status={"nominatedNodeName": "n1"}), "my-scheduler")
    simulator = run(fast, SchedulerConfig(), [node("n1", cpu="2"), theirs], [pod("ours", "low-priority", "2")])
    assert current(simulator, "theirs").status.nominated_node_name == "n1"
    assert current(simulator, "ours").spec.node_name == "n1"


def test_each_profile_reports_its_events_under_its_own_scheduler_name(fast: bool) -> None:
    # kube-scheduler gives every profile an event recorder named after its schedulerName; a victim's
    # Preempted event comes from the preemptor's profile. Node-agent and binder events keep theirs.
    simulator = run(
        fast,
        parse_scheduler_config(TWO_PROFILES),
        [node("n1", cpu="2"), pod("low", "low-priority", "2", node_name="n1", grace=0)],
        [of_scheduler(pod("high", "high-priority", "2"), "no-preemption"), pod("mid", "mid-priority", "2")],
    )
    controllers = {(e.involved_object.name, e.reason): e.reporting_controller for e in simulator.cluster.events}
    assert controllers[("high", "FailedScheduling")] == "no-preemption"
    assert controllers[("mid", "Nominated")] == "default-scheduler"
    assert controllers[("low", "Preempted")] == "default-scheduler"
    # `high` outranks `mid`'s nomination and takes the room mid's preemption made, as upstream.
    assert controllers[("high", "Scheduled")] == "no-preemption"
    assert controllers[("low", "Killing")] == "kubelet"
