"""The ReplicaSet, Deployment and Job controllers (podsched.controllers), driven through `simulate`'s
engine (the same Cluster the binder runs) and, for the pure rules, called directly."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from podsched.api.manifests import decode_object
from podsched.api.types import KIND_DEPLOYMENT, KIND_JOB, KIND_REPLICA_SET, Deployment, Pod, ReplicaSet
from podsched.controllers.deployment import (
    new_replica_set_replicas,
    old_replica_sets_scale_down,
    surge_and_unavailable,
)
from podsched.controllers.replica_set import pods_to_delete
from podsched.simulator.engine import Simulator

CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def template(cpu: str = "1", image: str = "pause", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}, **({"annotations": annotations} if annotations else {})},
        "spec": {
            "priorityClassName": "low",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": image, "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def deployment(replicas: int = 2, **template_args: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(**template_args),
        },
    }


def run(sim: Simulator, *documents: dict[str, Any]) -> list[Any]:
    rejected = sim.apply_text(yaml.safe_dump_all(documents))
    sim.run_until_quiescent()
    return rejected


def new_simulator(*documents: dict[str, Any]) -> Simulator:
    sim = Simulator()
    sim.apply_text(CLASSES)
    run(sim, *documents)
    return sim


def live_pods(sim: Simulator) -> list[Pod]:
    return [p for p in sim.cluster.pods.values() if p.metadata.deletion_timestamp is None]


def events(sim: Simulator, reason: str) -> list[str]:
    return [e.message for e in sim.cluster.events if e.reason == reason]


# --- ReplicaSet -------------------------------------------------------------------------------------------


def test_a_deployment_creates_one_replica_set_whose_pods_carry_owner_references_and_generated_names() -> None:
    sim = new_simulator(node("n1"), deployment(replicas=3))
    (rs,) = sim.cluster.workloads[KIND_REPLICA_SET].values()
    assert isinstance(rs, ReplicaSet) and rs.name.startswith("web-") and rs.replicas == 3
    assert rs.metadata.controller_ref() is not None and rs.metadata.controller_ref().kind == KIND_DEPLOYMENT  # type: ignore[union-attr]
    pods = live_pods(sim)
    assert len(pods) == 3 and all(p.spec.node_name == "n1" for p in pods)
    for pod in pods:
        ref = pod.metadata.controller_ref()
        assert ref is not None and (ref.kind, ref.name, ref.uid) == (KIND_REPLICA_SET, rs.name, rs.uid)
        assert pod.name.startswith(f"{rs.name}-") and len(pod.name) == len(rs.name) + 6
        assert pod.priority == 100  # the template's priorityClassName went through Priority admission
    assert sorted(events(sim, "SuccessfulCreate")) == sorted(f"Created pod: {p.name}" for p in pods)
    assert events(sim, "ScalingReplicaSet") == [f"Scaled up replica set {rs.name} from 0 to 3"]
    status = sim.cluster.workloads[KIND_DEPLOYMENT][("default", "web")].status
    assert (status.replicas, status.updated_replicas, status.available_replicas) == (3, 3, 3)


def test_a_preempted_replica_is_replaced_at_once_and_the_replacement_waits_when_nothing_fits() -> None:
    sim = new_simulator(node("n1", cpu="2"), deployment(replicas=2))
    first = {p.name for p in live_pods(sim)}
    high = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "high"},
        "spec": {
            "priorityClassName": "high",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}],
        },
    }
    run(sim, high)
    replacements = [p for p in live_pods(sim) if p.name != "high"]
    assert len(replacements) == 2 and not {p.name for p in replacements} & first
    assert all(p.spec.node_name == "" for p in replacements)  # n1 holds the preemptor
    assert sim.cluster.pods[("default", "high")].spec.node_name == "n1"
    victims = [sim.cluster.history[uid] for uid in sim.cluster.history if sim.cluster.history[uid].name in first]
    assert all(v.condition("DisruptionTarget").reason == "PreemptionByScheduler" for v in victims)  # type: ignore[union-attr]


def test_scaling_down_deletes_unscheduled_pods_before_running_ones() -> None:
    sim = new_simulator(node("n1", cpu="2"), deployment(replicas=3))
    pending = [p.name for p in live_pods(sim) if not p.spec.node_name]
    assert len(pending) == 1
    run(sim, deployment(replicas=2))
    remaining = live_pods(sim)
    assert len(remaining) == 2 and all(p.spec.node_name == "n1" for p in remaining)
    assert f"Deleted pod: {pending[0]}" in events(sim, "SuccessfulDelete")


# --- Deployment rollout ----------------------------------------------------------------------------------


def test_a_template_change_rolls_out_a_new_replica_set_and_scales_the_old_one_to_zero() -> None:
    sim = new_simulator(node("n1", cpu="8"), deployment(replicas=4))
    (old,) = sim.cluster.workloads[KIND_REPLICA_SET].values()
    run(sim, deployment(replicas=4, image="pause:2"))
    sets = {rs.name: rs for rs in sim.cluster.workloads[KIND_REPLICA_SET].values()}
    assert len(sets) == 2 and sets[old.name].replicas == 0
    (new,) = [rs for name, rs in sets.items() if name != old.name]
    assert new.replicas == 4
    pods = live_pods(sim)
    assert len(pods) == 4 and all(p.metadata.controller_ref().uid == new.uid for p in pods)  # type: ignore[union-attr]
    scaling = events(sim, "ScalingReplicaSet")
    # maxSurge 25% of 4 = 1, maxUnavailable 25% = 1: the new set first grows to 1 (total 5)...
    assert scaling[1] == f"Scaled up replica set {new.name} from 0 to 1"
    assert f"Scaled down replica set {old.name} from 1 to 0" in scaling


def deployment_of(replicas: int, surge: int | str, unavailable: int | str) -> Deployment:
    doc = deployment(replicas=replicas)
    doc["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    obj = decode_object(doc)
    assert isinstance(obj, Deployment)
    return obj


def replica_set(name: str, replicas: int, available: int, created: float) -> ReplicaSet:
    rs = ReplicaSet(decode_object(deployment()).metadata, replicas)  # type: ignore[union-attr]
    rs.metadata.name, rs.metadata.creation_timestamp = name, created
    rs.status.available_replicas = available
    return rs


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [
        pytest.param(4, "25%", "25%", (1, 1), id="percentages: surge rounds up, unavailable down"),
        pytest.param(3, "25%", "25%", (1, 0), id="25% of 3 is 1 to surge and 0 unavailable"),
        pytest.param(3, 0, 1, (0, 1), id="no surge: replace one at a time"),
        pytest.param(10, 2, "50%", (2, 5), id="an absolute surge and a percentage"),
    ],
)
def test_rolling_update_fenceposts(replicas: int, surge: Any, unavailable: Any, expected: tuple[int, int]) -> None:
    assert surge_and_unavailable(deployment_of(replicas, surge, unavailable)) == expected


def test_the_new_replica_set_grows_only_within_the_surge_and_old_ones_shrink_within_the_availability() -> None:
    d = deployment_of(4, 1, 1)
    old = replica_set("web-old", 4, 4, 1.0)
    new = replica_set("web-new", 0, 0, 2.0)
    assert new_replica_set_replicas(d, [old, new], new) == 1  # 4 + 1 surge - 4 current
    assert old_replica_sets_scale_down(d, [old], available=4) == {"web-old": 3}  # 4 available - (4 - 1)
    assert old_replica_sets_scale_down(d, [old], available=3) == {}


def test_pods_to_delete_rank_unscheduled_then_pending_then_the_newest() -> None:
    sim = new_simulator(node("n1", cpu="2"), deployment(replicas=3))
    pods = list(sim.cluster.pods.values())
    unscheduled = next(p for p in pods if not p.spec.node_name)
    assert pods_to_delete(pods, 1) == [unscheduled]


# --- generateName and bad manifests ----------------------------------------------------------------------


def test_generate_name_works_for_a_bare_pod_and_names_differ() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "batch-"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    sim = new_simulator(node("n1"), pod, pod)
    names = sorted(p.name for p in sim.cluster.pods.values())
    assert len(names) == 2 and names[0] != names[1] and all(n.startswith("batch-") and len(n) == 11 for n in names)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param(
            {**deployment(), "spec": {**deployment()["spec"], "selector": {"matchLabels": {"app": "other"}}}},
            'Error from server (Invalid): Deployment "web" is invalid: spec.template.metadata.labels: Invalid value: '
            'map[string]string{"app":"web"}: `selector` does not match template `labels`',
            id="a selector that does not match the template",
        ),
        pytest.param(
            {**deployment(), "spec": {**deployment()["spec"], "replicas": -1}},
            'Error from server (Invalid): Deployment "web" is invalid: spec.replicas: Invalid value: -1: '
            "must be greater than or equal to 0",
            id="negative replicas",
        ),
        pytest.param(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": "rs"},
                "spec": {"template": template()},
            },
            'Error from server (Invalid): ReplicaSet "rs" is invalid: spec.selector: Required value',
            id="a ReplicaSet without a selector",
        ),
        pytest.param(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": template()}},
            'Error from server (Invalid): Job "j" is invalid: spec.template.spec.restartPolicy: Required value: '
            'valid values: "OnFailure", "Never"',
            id="a Job without restartPolicy",
        ),
        pytest.param(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "j"},
                "spec": {
                    "backoffLimit": -1,
                    "podFailurePolicy": {
                        "rules": [{"action": "Skip", "onPodConditions": [{"type": "DisruptionTarget"}]}]
                    },
                    "template": {**template(), "spec": {**template()["spec"], "restartPolicy": "Never"}},
                },
            },
            'Error from server (Invalid): Job "j" is invalid: [spec.backoffLimit: Invalid value: -1: must be greater '
            'than or equal to 0, spec.podFailurePolicy.rules[0].action: Unsupported value: "Skip": supported values: '
            '"Count", "FailIndex", "FailJob", "Ignore"]',
            id="a Job with a negative backoffLimit and an unknown podFailurePolicy action",
        ),
    ],
)
def test_bad_workload_manifests_get_kubectls_error_and_change_nothing(document: dict[str, Any], message: str) -> None:
    sim = new_simulator(node("n1"))
    before = (len(sim.cluster.events), sim.cluster.resource_version)
    rejected = run(sim, document)
    assert [r.message for r in rejected] == [message]
    assert (len(sim.cluster.events), sim.cluster.resource_version) == before
    assert not any(sim.cluster.workloads[k] for k in (KIND_DEPLOYMENT, KIND_REPLICA_SET, KIND_JOB))
    assert not sim.cluster.pods


# --- Job --------------------------------------------------------------------------------------------------


def job(
    name: str = "train",
    run_seconds: str = "10",
    exit_code: str = "0",
    policy: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    annotations = {"sim.podsched.io/run-seconds": run_seconds, "sim.podsched.io/exit-code": exit_code}
    body = template(annotations=annotations)
    body["spec"]["restartPolicy"] = "Never"
    job_spec: dict[str, Any] = {**spec, "template": body}
    if policy is not None:
        job_spec["podFailurePolicy"] = {"rules": policy}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": job_spec}


def job_status(sim: Simulator, name: str = "train") -> Any:
    return sim.cluster.workloads[KIND_JOB][("default", name)].status


def final_condition(sim: Simulator, name: str = "train") -> tuple[str, str]:
    final = [c for c in job_status(sim, name).conditions if c.type in ("Complete", "Failed")]
    return (final[-1].type, final[-1].reason) if final else ("", "")


def test_a_job_runs_its_completions_parallelism_at_a_time_and_completes_when_they_succeed() -> None:
    sim = new_simulator(node("n1", cpu="8"), job(completions=5, parallelism=2))
    status = job_status(sim)
    assert (status.succeeded, status.failed, status.active) == (5, 0, 0)
    assert final_condition(sim) == ("Complete", "CompletionsReached")
    assert status.completion_time == status.start_time + 30  # 2 + 2 + 1 pods, 10 s each
    assert events(sim, "Completed") == ["Job completed"]
    assert len(events(sim, "SuccessfulCreate")) == 5
    # Counted pods keep no tracking finalizer; they stay, Succeeded, as upstream keeps them.
    pods = list(sim.cluster.pods.values())
    assert len(pods) == 5 and all(p.status.phase == "Succeeded" and not p.metadata.finalizers for p in pods)


def test_failed_pods_count_against_the_backoff_limit_until_the_job_fails() -> None:
    sim = new_simulator(node("n1"), job(exit_code="3", backoffLimit=2))
    status = job_status(sim)
    assert (status.succeeded, status.failed) == (0, 3)  # backoffLimit 2: the third failure fails the Job
    assert final_condition(sim) == ("Failed", "BackoffLimitExceeded")
    assert events(sim, "BackoffLimitExceeded") == ["Job has reached the specified backoff limit"]
    assert [c.type for c in status.conditions] == ["FailureTarget", "Failed"]


def test_a_fail_job_rule_on_an_exit_code_fails_the_job_at_the_first_matching_failure() -> None:
    rules = [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]
    sim = new_simulator(node("n1"), job(exit_code="42", backoffLimit=6, policy=rules))
    assert final_condition(sim) == ("Failed", "PodFailurePolicy")
    assert job_status(sim).failed == 1


def test_an_ignore_rule_on_an_exit_code_does_not_count_the_failure_and_the_pod_is_replaced() -> None:
    rules = [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]
    sim = Simulator()
    sim.apply_text(CLASSES)
    sim.apply_text(yaml.safe_dump_all([node("n1"), job(exit_code="7", backoffLimit=0, policy=rules)]))
    sim.run_until_quiescent(max_cycles=5)  # every pod fails and is ignored: it would go on forever
    status = job_status(sim)
    assert status.failed == 0 and final_condition(sim) == ("", "")
    assert len(events(sim, "SuccessfulCreate")) >= 2


def test_active_deadline_seconds_fails_a_running_job_and_stops_its_pods() -> None:
    sim = new_simulator(node("n1"), job(run_seconds="100", activeDeadlineSeconds=30))
    assert final_condition(sim) == ("Failed", "DeadlineExceeded")
    assert events(sim, "DeadlineExceeded") == ["Job was active longer than specified deadline"]
    assert sim.now == pytest.approx(sim_start() + 30 + 1)  # the deadline, then the pod's 1 s grace period
    assert not sim.cluster.pods  # the stopped pod went once its grace period ended


def sim_start() -> float:
    from podsched.simulator.engine import SIMULATION_EPOCH

    return SIMULATION_EPOCH


def test_deleting_a_job_deletes_its_pods() -> None:
    sim = new_simulator(node("n1"), job(run_seconds="100", parallelism=2, completions=2))
    assert len(sim.cluster.pods) == 2
    sim.cluster.delete(KIND_JOB, "default", "train")
    sim.run_until_quiescent()
    assert not sim.cluster.pods and not sim.cluster.workloads[KIND_JOB]
