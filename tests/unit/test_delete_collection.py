"""DeleteCollection's pure parts: which objects a namespace and selectors pick, and the single
writer deleting what was listed, each exactly as its own Delete (graceful termination, events),
skipping what is gone or was replaced since the listing; and a dry run's prediction of each delete,
which must be what the delete then does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import LOW_PRIORITY, make_node, make_pod, make_priority_class
from clocks import FakeClock
from podsched.api.errors import REASON_FORBIDDEN
from podsched.api.selector_syntax import parse_field_selector, parse_label_selector
from podsched.api.types import KIND_NODE, KIND_POD, KIND_PRIORITY_CLASS, POD_FAILED
from podsched.cluster import events as ev
from podsched.cluster.delete_collection import (
    Listed,
    delete_listed,
    objects_of_kind,
    predict_listed,
    select_collection,
    unsupported_field,
)
from podsched.cluster.state import Cluster

START = 1000.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def cluster(clock: FakeClock) -> Cluster:
    cluster = Cluster(clock)
    cluster.apply(make_node("n1").capacity(cpu="8", memory="8Gi").obj())
    cluster.apply(make_node("n2").capacity(cpu="8", memory="8Gi").unschedulable().obj())
    cluster.apply(make_pod("web-0").label("app", "web").node("n1").grace(30).obj())
    cluster.apply(make_pod("web-1").label("app", "web").obj())
    cluster.apply(make_pod("db-0").label("app", "db").node("n1").obj())
    cluster.apply(make_pod("web-0", namespace="team-a").label("app", "web").obj())
    return cluster


def names(objects: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(o.metadata.namespace, o.metadata.name) for o in objects]


def pods_chosen(cluster: Cluster, namespace: str | None, labels: str = "", fields: str = "") -> list[tuple[str, str]]:
    chosen = select_collection(
        objects_of_kind(cluster, KIND_POD),
        namespace,
        parse_label_selector(labels),
        parse_field_selector(fields),
        namespaced=True,
    )
    return names(chosen)


def listed(cluster: Cluster, *keys: tuple[str, str]) -> list[Listed]:
    return [Listed(ns, name, cluster.pods[(ns, name)].metadata.uid) for ns, name in keys]


def test_a_namespace_alone_picks_all_of_its_pods_in_name_order(cluster: Cluster) -> None:
    assert pods_chosen(cluster, "default") == [("default", "db-0"), ("default", "web-0"), ("default", "web-1")]


def test_every_namespace_is_picked_when_none_is_named(cluster: Cluster) -> None:
    assert pods_chosen(cluster, None, "app=web") == [
        ("default", "web-0"),
        ("default", "web-1"),
        ("team-a", "web-0"),
    ]


def test_a_label_selector_narrows_the_namespace(cluster: Cluster) -> None:
    assert pods_chosen(cluster, "default", "app in (db)") == [("default", "db-0")]


def test_a_field_selector_picks_by_the_pods_node(cluster: Cluster) -> None:
    assert pods_chosen(cluster, "default", "app=web", "spec.nodeName=n1") == [("default", "web-0")]
    assert pods_chosen(cluster, "default", "", "spec.nodeName!=n1,metadata.namespace=default") == [("default", "web-1")]


def test_a_node_is_picked_by_spec_unschedulable(cluster: Cluster) -> None:
    chosen = select_collection(
        objects_of_kind(cluster, KIND_NODE), None, (), parse_field_selector("spec.unschedulable=true"), False
    )
    assert names(chosen) == [("", "n2")]


@pytest.mark.parametrize(
    ("kind", "namespaced", "selector", "unsupported"),
    [
        (KIND_POD, True, "spec.nodeName=n1,status.phase=Running", None),
        (KIND_POD, True, "spec.restartPolicy=Always", "spec.restartPolicy"),
        (KIND_NODE, False, "metadata.namespace=default", "metadata.namespace"),
        (KIND_PRIORITY_CLASS, False, "metadata.name=high", None),
    ],
)
def test_only_the_fields_a_kind_is_selectable_by_are_accepted(
    kind: str, namespaced: bool, selector: str, unsupported: str | None
) -> None:
    assert unsupported_field(kind, namespaced, parse_field_selector(selector)) == unsupported


def test_each_listed_pod_is_deleted_as_its_own_delete_would_be(cluster: Cluster, clock: FakeClock) -> None:
    version_before = cluster.resource_version
    outcomes = delete_listed(cluster, KIND_POD, listed(cluster, ("default", "web-0"), ("default", "web-1")), None)
    running, pending = outcomes
    # Bound: it terminates for its grace period, with its Killing event, and keeps its node.
    assert running.deleted and running.terminating
    terminating = cluster.pods[("default", "web-0")]
    assert terminating.metadata.deletion_timestamp == START
    assert terminating.metadata.resource_version == running.resource_version > version_before
    # Never bound: gone at once, its Deleted event recorded.
    assert pending.deleted and not pending.terminating and ("default", "web-1") not in cluster.pods
    assert pending.resource_version > running.resource_version
    reasons = [(e.involved_object.name, e.reason) for e in cluster.events]
    assert ("web-0", ev.KILLING) in reasons and ("web-1", ev.DELETED) in reasons
    clock.now += 30
    cluster.complete_terminations()
    assert ("default", "web-0") not in cluster.pods


def test_a_grace_period_of_zero_removes_a_bound_pod_at_once(cluster: Cluster) -> None:
    (outcome,) = delete_listed(cluster, KIND_POD, listed(cluster, ("default", "web-0")), 0)
    assert outcome.deleted and not outcome.terminating and ("default", "web-0") not in cluster.pods


def test_a_pod_created_again_under_a_listed_name_is_not_deleted(cluster: Cluster) -> None:
    (stale,) = listed(cluster, ("default", "web-1"))
    cluster.delete(KIND_POD, "default", "web-1")
    _, again = cluster.apply(make_pod("web-1").label("app", "web").obj())
    (outcome,) = delete_listed(cluster, KIND_POD, [stale], None)
    assert not outcome.deleted and outcome.error is None
    assert cluster.pods[("default", "web-1")].metadata.uid == again.metadata.uid


def test_a_listed_pod_already_gone_is_skipped_and_the_rest_deleted(cluster: Cluster) -> None:
    items = listed(cluster, ("default", "db-0"), ("default", "web-1"))
    cluster.delete(KIND_POD, "default", "db-0", 0)
    gone, deleted = delete_listed(cluster, KIND_POD, items, None)
    assert not gone.deleted and gone.error is None
    assert deleted.deleted and ("default", "web-1") not in cluster.pods


def test_a_system_priority_class_is_refused_and_the_others_deleted(cluster: Cluster) -> None:
    cluster.apply(make_priority_class("low", LOW_PRIORITY))
    items = [Listed("", name, cluster.priority_classes[name].metadata.uid) for name in ("low", "system-node-critical")]
    low, system = delete_listed(cluster, KIND_PRIORITY_CLASS, items, None)
    assert low.deleted and "low" not in cluster.priority_classes
    assert not system.deleted and system.error is not None and system.error.reason == REASON_FORBIDDEN
    assert "system-node-critical" in cluster.priority_classes


# --- a server dry run ---------------------------------------------------------------------------------

FINALIZER = "batch.kubernetes.io/job-tracking"


def cluster_of_every_case(clock: FakeClock) -> Cluster:
    """Pods each delete treats differently: bound (terminates), unbound (goes at once), already
    terminating (kept as it is), Failed on its node (goes at once), held by a finalizer (kept)."""
    cluster = Cluster(clock)
    cluster.apply(make_node("n1").capacity(cpu="8", memory="8Gi").obj())
    cluster.apply(make_pod("bound").node("n1").grace(30).obj())
    cluster.apply(make_pod("unbound").obj())
    cluster.apply(make_pod("terminating").node("n1").grace(30).obj())
    cluster.delete(KIND_POD, "default", "terminating")
    cluster.apply(make_pod("failed").node("n1").req(cpu="100").obj())  # the node agent refuses it: Failed
    held = make_pod("held").obj()
    cluster.apply(replace(held, metadata=replace(held.metadata, finalizers=(FINALIZER,))))
    return cluster


@pytest.mark.parametrize("grace", [None, 0, 5])
def test_a_dry_run_predicts_what_deleting_each_listed_pod_does_and_changes_nothing(
    clock: FakeClock, grace: int | None
) -> None:
    predicted_on, deleted_on = cluster_of_every_case(clock), cluster_of_every_case(clock)
    chosen = select_collection(objects_of_kind(predicted_on, KIND_POD), "default", (), (), namespaced=True)
    assert predicted_on.pods[("default", "failed")].status.phase == POD_FAILED
    version, events = predicted_on.resource_version, len(predicted_on.events)

    predicted = predict_listed(predicted_on, KIND_POD, chosen, grace)
    assert predicted_on.resource_version == version and len(predicted_on.events) == events
    assert sorted(predicted_on.pods) == [("default", n) for n in sorted(o.metadata.name for o in chosen)]
    assert [p.resource_version for p in predicted] == [o.metadata.resource_version for o in chosen]

    items = [Listed(o.metadata.namespace, o.metadata.name, o.metadata.uid) for o in chosen]
    done = delete_listed(deleted_on, KIND_POD, items, grace)
    assert [(p.listed, p.deleted, p.terminating) for p in predicted] == [
        (d.listed, d.deleted, d.terminating) for d in done
    ]
    # A grace period of 0 removes even a pod already terminating; only a finalizer keeps one then.
    assert {p.listed.name for p in predicted if p.terminating} == (
        {"held"} if grace == 0 else {"bound", "terminating", "held"}
    )


def test_a_dry_run_refuses_a_system_priority_class_as_its_delete_would(cluster: Cluster) -> None:
    cluster.apply(make_priority_class("low", LOW_PRIORITY))
    chosen = [cluster.priority_classes[name] for name in ("low", "system-node-critical")]
    low, system = predict_listed(cluster, KIND_PRIORITY_CLASS, chosen, None)
    assert low.deleted and not low.terminating and "low" in cluster.priority_classes
    assert not system.deleted and system.error is not None and system.error.reason == REASON_FORBIDDEN
