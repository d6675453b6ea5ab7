"""PodDisruptionBudget status as the disruption controller keeps it: the arithmetic of
`compute_pdb_status` (upstream's getExpectedPodCount, countHealthyPods, buildDisruptedPodMap and
updatePdbStatus), the binder's `Cluster` writing a new status for every change that moves it, and
replicas keeping the status the binder's log carries."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from builders import LOW_PRIORITY, make_node, make_pdb, make_pod, make_priority_class
from podsched.api.types import KIND_PDB, POD_FAILED, Pod, PodDisruptionBudget, PodDisruptionBudgetStatus
from podsched.cluster.disruption import DISRUPTION_DELETION_TIMEOUT, compute_pdb_status
from podsched.cluster.state import Cluster
from podsched.cluster.store import Change
from podsched_service.codec import change_record, decode_change

NOW = 5000.0


def budget(
    min_available: int | str | None = None, max_unavailable: int | str | None = None, generation: int = 1
) -> PodDisruptionBudget:
    pdb = replace(make_pdb("web", app="web"), min_available=min_available, max_unavailable=max_unavailable)
    pdb.metadata.generation = generation
    return pdb


def web(name: str) -> Pod:
    return make_pod(name).label("app", "web").node("n1").obj()


def failed(pod: Pod) -> Pod:
    return replace(pod, status=replace(pod.status, phase=POD_FAILED))


def numbers(status: PodDisruptionBudgetStatus) -> tuple[int, int, int, int]:
    """(expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed)"""
    return status.expected_pods, status.current_healthy, status.desired_healthy, status.disruptions_allowed


FOUR_RUNNING = [web("a"), web("b"), web("c"), web("d")]


@dataclass(frozen=True)
class Case:
    pdb: PodDisruptionBudget
    pods: list[Pod]
    want: tuple[int, int, int, int]  # (expected, healthy, desired, allowed)


CASES = {
    "an integer minAvailable expects every matching pod and allows the healthy ones above it": Case(
        budget(min_available=2), FOUR_RUNNING, (4, 4, 2, 2)
    ),
    "an integer minAvailable above the healthy pods allows no disruption, never a negative one": Case(
        budget(min_available=5), FOUR_RUNNING, (4, 4, 5, 0)
    ),
    "minAvailable 0 allows every healthy pod to go": Case(budget(min_available=0), FOUR_RUNNING, (4, 4, 0, 4)),
    "a budget that matches no pod expects none and allows nothing": Case(
        budget(min_available=0), [make_pod("x").label("app", "db").node("n1").obj()], (0, 0, 0, 0)
    ),
    # Upstream's getExpectedScale sums the scale of the pods' controllers; bare pods (podsched stores
    # no workload controllers) are unmanaged and left out, so nothing is expected and nothing allowed.
    "a percentage minAvailable over bare pods expects none (unmanaged) and allows nothing": Case(
        budget(min_available="50%"), FOUR_RUNNING, (0, 4, 0, 0)
    ),
    "an integer maxUnavailable over bare pods expects none and allows nothing": Case(
        budget(max_unavailable=1), FOUR_RUNNING, (0, 4, 0, 0)
    ),
    "a percentage maxUnavailable over bare pods expects none and allows nothing": Case(
        budget(max_unavailable="25%"), FOUR_RUNNING, (0, 4, 0, 0)
    ),
    "a terminating pod is expected but not healthy": Case(
        budget(min_available=2),
        [web("a"), web("b"), web("c"), make_pod("d").label("app", "web").node("n1").terminating(NOW - 1).obj()],
        (4, 3, 2, 1),
    ),
    "a failed pod is still listed, so expected, but not healthy": Case(
        budget(min_available=2), [web("a"), web("b"), failed(web("c"))], (3, 2, 2, 0)
    ),
    "a pending pod is expected but not healthy": Case(
        budget(min_available=1), [web("a"), web("b"), make_pod("p").label("app", "web").obj()], (3, 2, 1, 1)
    ),
    "pods the selector does not match and pods of other namespaces do not count": Case(
        budget(min_available=1),
        [
            web("a"),
            web("b"),
            make_pod("db").label("app", "db").node("n1").obj(),
            make_pod("elsewhere", namespace="other").label("app", "web").node("n1").obj(),
        ],
        (2, 2, 1, 1),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_pdb_status_arithmetic(case: Case) -> None:
    namespace = case.pdb.namespace
    status = compute_pdb_status(case.pdb, [p for p in case.pods if p.namespace == namespace], NOW)
    assert numbers(status) == case.want
    assert status.observed_generation == case.pdb.metadata.generation


def test_an_empty_selector_matches_every_pod_of_the_namespace_as_policy_v1_does() -> None:
    pdb = replace(make_pdb("all"), min_available=1)
    pods = [web("a"), make_pod("b").label("app", "db").node("n1").obj(), make_pod("c").node("n1").obj()]
    assert numbers(compute_pdb_status(pdb, pods, NOW)) == (3, 3, 1, 2)


def test_a_pod_listed_in_disrupted_pods_is_not_healthy_until_its_deletion_timeout_passes() -> None:
    pods = [web("a"), web("b"), web("c"), make_pod("d").label("app", "web").node("n1").terminating(NOW).obj()]
    pdb = budget(min_available=1)
    pdb.status = PodDisruptionBudgetStatus(
        disrupted_pods={
            "a": NOW - 10,  # evicted lately: on its way out
            "b": NOW - DISRUPTION_DELETION_TIMEOUT - 1,  # expected to be deleted long ago: dropped
            "d": NOW - 10,  # being deleted already: dropped, it is not healthy anyway
            "gone": NOW - 10,  # no such pod any more: dropped
        }
    )
    status = compute_pdb_status(pdb, pods, NOW)
    assert status.disrupted_pods == {"a": NOW - 10}
    assert numbers(status) == (4, 2, 1, 1)


def test_observed_generation_is_the_budgets_generation() -> None:
    assert compute_pdb_status(budget(min_available=1, generation=7), FOUR_RUNNING, NOW).observed_generation == 7


# --- the binder's Cluster: every change that moves the status writes a new one -------------------------


class Recorder:
    """The PDB changes a Cluster reports, as the binder's log would carry them."""

    def __init__(self, cluster: Cluster) -> None:
        self.changes: list[Change] = []
        cluster.listeners.append(self._listen)

    def _listen(self, change: Change) -> None:
        if change.kind == KIND_PDB:
            self.changes.append(change)

    def take(self) -> list[tuple[str, tuple[int, int, int, int]]]:
        taken = [(c.type, numbers(c.new.status)) for c in self.changes if isinstance(c.new, PodDisruptionBudget)]
        self.changes.clear()
        return taken


@pytest.fixture
def cluster() -> Cluster:
    cluster = Cluster(lambda: NOW)
    cluster.apply(make_node("n1").capacity(cpu="8", memory="16Gi").obj())
    cluster.apply(make_priority_class("low", LOW_PRIORITY))
    return cluster


def new_pod(name: str, app: str = "web", node: str = "n1") -> Pod:
    builder = make_pod(name).priority_class("low").label("app", app).req(cpu="100m")
    return (builder.node(node) if node else builder).obj()


def test_a_budget_created_after_its_pods_is_stored_and_reported_with_its_status(cluster: Cluster) -> None:
    for name in ("a", "b", "c"):
        cluster.apply(new_pod(name))
    recorder = Recorder(cluster)
    action, stored = cluster.apply(budget(min_available=2))
    cluster.refresh_pdb_status()  # the end of the binder's batch
    assert action == "created"
    assert isinstance(stored, PodDisruptionBudget) and numbers(stored.status) == (3, 3, 2, 1)
    # One change, the ADDED one, already with the status: no status change ahead of the object's own.
    assert recorder.take() == [("ADDED", (3, 3, 2, 1))]
    assert stored.metadata.generation == 1 and stored.status.observed_generation == 1


def test_a_budget_created_before_its_pods_in_one_batch_gets_their_status_at_the_batchs_end(
    cluster: Cluster,
) -> None:
    recorder = Recorder(cluster)
    cluster.apply(budget(min_available=2))
    for name in ("a", "b", "c"):
        cluster.apply(new_pod(name))
    cluster.refresh_pdb_status()
    assert recorder.take() == [("ADDED", (0, 0, 2, 0)), ("MODIFIED", (3, 3, 2, 1))]


def test_every_pod_change_that_moves_the_status_writes_a_new_one(cluster: Cluster) -> None:
    cluster.apply(new_pod("a"))
    cluster.apply(new_pod("b"))
    cluster.apply(budget(min_available=1))
    recorder = Recorder(cluster)

    def step() -> list[tuple[str, tuple[int, int, int, int]]]:
        cluster.refresh_pdb_status()
        return recorder.take()

    _, pending = cluster.apply(new_pod("c", node=""))
    assert step() == [("MODIFIED", (3, 2, 1, 1))], "a created pod is expected"
    cluster.bind(pending.metadata.uid, "n1")
    assert step() == [("MODIFIED", (3, 3, 1, 2))], "a bound pod starts running: healthy"
    cluster.delete("Pod", "default", "c")  # graceful: deletionTimestamp set
    assert step() == [("MODIFIED", (3, 2, 1, 1))], "a terminating pod is not healthy"
    cluster.delete("Pod", "default", "b", grace_period=0)
    assert step() == [("MODIFIED", (2, 1, 1, 0))], "a removed pod is not expected"
    cluster.apply(new_pod("a", app="other"))
    assert step() == [("MODIFIED", (1, 0, 1, 0))], "a pod relabelled out of the selector leaves the budget"
    cluster.apply(new_pod("x", app="db"))
    assert step() == [], "a change that moves no status writes none"


def test_a_spec_change_bumps_the_generation_and_writes_the_status_for_it(cluster: Cluster) -> None:
    for name in ("a", "b", "c"):
        cluster.apply(new_pod(name))
    cluster.apply(budget(min_available=2))
    recorder = Recorder(cluster)
    assert cluster.apply(budget(min_available=2))[0] == "unchanged"
    action, stored = cluster.apply(budget(min_available=1))
    assert action == "configured" and isinstance(stored, PodDisruptionBudget)
    assert (stored.metadata.generation, stored.status.observed_generation) == (2, 2)
    assert recorder.take() == [("MODIFIED", (3, 3, 1, 2))]
    _, stored = cluster.apply(replace(budget(), selector=make_pdb("x", app="none").selector, min_available=1))
    assert isinstance(stored, PodDisruptionBudget)
    assert (stored.metadata.generation, stored.status.observed_generation, numbers(stored.status)) == (
        3,
        3,
        (0, 0, 1, 0),
    )


def test_a_generation_in_the_manifest_is_ignored_on_create(cluster: Cluster) -> None:
    _, stored = cluster.apply(budget(min_available=1, generation=9))
    assert stored.metadata.generation == 1


def test_a_status_change_keeps_the_old_objects_resource_version(cluster: Cluster) -> None:
    _, created = cluster.apply(budget(min_available=1))
    version = created.metadata.resource_version
    recorder = Recorder(cluster)
    cluster.apply(new_pod("a"))
    cluster.refresh_pdb_status()
    (change,) = recorder.changes
    assert change.old is created and created.metadata.resource_version == version
    assert change.new is not None and change.new.metadata.resource_version > version


def test_a_replica_following_the_log_keeps_the_binders_status(cluster: Cluster) -> None:
    """Replicas (queue, filter, preemption and its workers) decode each record of the binder's log and
    never compute PDB status themselves: the status must survive the record's encoding."""
    replica = Cluster(lambda: NOW, authoritative=False)
    records: list[bytes] = []
    cluster.listeners.append(lambda change: records.append(change_record(change, "binder", NOW, 0)[2]))
    cluster.apply(new_pod("a"))
    cluster.apply(budget(min_available=1))
    cluster.apply(new_pod("b"))
    cluster.refresh_pdb_status()
    for value in records:
        change_type, obj, _ = decode_change(value)
        replica.restore(change_type, obj)
    assert replica.pdbs == cluster.pdbs
    assert numbers(replica.pdbs[("default", "web")].status) == (2, 2, 1, 1)
    assert replica.pdbs[("default", "web")].status.observed_generation == 1
