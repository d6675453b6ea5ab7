"""The dashboard's view models: from API objects (as the Watch delivers them) to what the page draws.
No browser: the mirror is fed changes and events by hand, the views read it with `now` given; the
follower's tests run it against a stand-in of the queue's API on a real gRPC server. The browser tests
(tests/services/test_dashboard.py) check the same things on a live stack."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import grpc
import pytest

from podsched.api.timestamps import format_timestamp
from podsched_cli.kubeconfig import Connection
from podsched_dashboard import traces, views
from podsched_dashboard.api_client import ApiClient
from podsched_dashboard.mirror import ADDED, DELETED, MODIFIED, NODES, PREEMPTIONS, QUEUE, ClusterMirror
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.events.v1 import events_pb2

T0 = 1_800_000_000.0  # a fixed "now" for every case
HIGH, MID, LOW = 1_000_000, 1000, 100


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def node(
    name: str,
    cpu: str = "4",
    *,
    unschedulable: bool = False,
    taints: list[dict[str, str]] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(
    name: str,
    priority: int,
    cpu: str = "1",
    *,
    node_name: str = "",
    created: float = T0 - 60,
    terminating_since: float | None = None,
    grace: int = 30,
    nominated: str = "",
    reason: str = "",
    never: bool = False,
    labels: dict[str, str] | None = None,
    uid: str = "",
    phase: str = "",
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "uid": uid or f"uid-{name}",
        "creationTimestamp": format_timestamp(created),
        "labels": labels or {},
    }
    if terminating_since is not None:
        meta["deletionTimestamp"] = format_timestamp(terminating_since)
        meta["deletionGracePeriodSeconds"] = grace
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if never:
        spec["preemptionPolicy"] = "Never"
    status: dict[str, Any] = {"phase": phase or ("Running" if node_name else "Pending")}
    if nominated:
        status["nominatedNodeName"] = nominated
    if reason:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": reason}
        ]
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pdb(name: str, app: str, current: int, desired: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": desired, "selector": {"matchLabels": {"app": app}}},
        "status": {
            "currentHealthy": current,
            "desiredHealthy": desired,
            "expectedPods": current,
            "disruptionsAllowed": max(0, current - desired),
        },
    }


def preempted(victim: str, preemptor: str, node_name: str, when: float = T0 - 5) -> dict[str, Any]:
    return {
        "reason": "Preempted",
        "message": f"Preempted by pod uid-{preemptor} on node {node_name}",
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": victim, "uid": f"uid-{victim}"},
        "related": {"kind": "Pod", "namespace": "default", "name": preemptor, "uid": f"uid-{preemptor}"},
        "eventTime": format_timestamp(when),
    }


class Cluster:
    """A mirror fed like the Watch feeds it: each object ADDED with an increasing resource version."""

    def __init__(self) -> None:
        self.mirror = ClusterMirror(timeline_length=3)
        self.version = 0

    def add(self, *objects: dict[str, Any], change: str = ADDED) -> Cluster:
        for obj in objects:
            self.version += 1
            self.mirror.apply_change(change, obj["kind"], obj, self.version)
        return self

    def classes(self) -> Cluster:
        return self.add(
            priority_class("high-priority", HIGH),
            priority_class("mid-priority", MID),
            priority_class("low-priority", LOW),
        )


# --- bands ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("priority", "band", "rank"),
    [
        pytest.param(HIGH, "high-priority", 0, id="a pod at a class's value is in that class's band"),
        pytest.param(5000, "mid-priority", 1, id="a pod between two classes is in the lower one's band"),
        pytest.param(LOW, "low-priority", 2, id="the least important class is the last band"),
        pytest.param(0, "below every class", 3, id="a pod below every class gets a band of its own, after them"),
    ],
)
def test_a_pod_belongs_to_the_class_with_the_highest_value_at_or_below_its_priority(
    priority: int, band: str, rank: int
) -> None:
    bands = views.priority_bands(
        [
            priority_class("low-priority", LOW),
            priority_class("high-priority", HIGH),
            priority_class("mid-priority", MID),
        ]
    )
    found = views.band_of(priority, bands)
    assert (found.name, found.rank) == (band, rank)


# --- nodes ------------------------------------------------------------------------------------------


def test_a_node_card_splits_each_bar_by_band_and_sets_terminating_victims_apart() -> None:
    cluster = (
        Cluster()
        .classes()
        .add(
            node("node-a"),
            pod("web-0", MID, "1", node_name="node-a"),
            pod("batch-0", LOW, "1", node_name="node-a"),
            pod("batch-1", LOW, "500m", node_name="node-a", terminating_since=T0 - 10),
            pod("done", LOW, "1", node_name="node-a", phase="Failed"),  # released its resources
        )
    )
    page = views.nodes_page(cluster.mirror)
    card = page["nodes"][0]
    cpu = next(r for r in card["resources"] if r["name"] == "cpu")
    assert cpu["requested"] == 2500 and cpu["allocatable"] == 4000 and cpu["label"] == "2.5 / 4"
    assert [(s["rank"], s["terminating"], s["amount"]) for s in cpu["segments"]] == [
        (1, False, 1000),
        (2, False, 1000),
        (2, True, 500),
    ]
    pods = next(r for r in card["resources"] if r["name"] == "pods")
    assert pods["requested"] == 3
    assert [(c["name"], c["terminating"]) for c in card["pods"]] == [
        ("web-0", False),
        ("batch-0", False),
        ("batch-1", True),
    ]
    assert card["pods"][2]["graceDeadline"] == T0 - 10 + 30
    assert card["terminatingCount"] == 1


def test_cordoned_and_tainted_nodes_are_marked_and_can_be_filtered() -> None:
    cluster = Cluster().add(
        node("a"),
        node("b", unschedulable=True),
        node("c", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
    )
    cards = {c["name"]: c for c in views.nodes_page(cluster.mirror)["nodes"]}
    assert cards["b"]["unschedulable"] and not cards["a"]["unschedulable"]
    assert cards["c"]["taints"] == ["gpu=true:NoSchedule"]
    assert [c["name"] for c in views.nodes_page(cluster.mirror, which="cordoned")["nodes"]] == ["b"]
    assert [c["name"] for c in views.nodes_page(cluster.mirror, which="tainted")["nodes"]] == ["c"]


def test_nodes_are_searched_by_name_or_label_and_paged_on_the_server() -> None:
    cluster = Cluster().add(*(node(f"n{i:03d}", labels={"zone": "z1" if i % 2 else "z0"}) for i in range(120)))
    page = views.nodes_page(cluster.mirror, page=3, page_size=50)
    assert (page["total"], page["page"], page["pages"], len(page["nodes"])) == (120, 3, 3, 20)
    assert page["nodes"][0]["name"] == "n100"
    zone = views.nodes_page(cluster.mirror, query="zone=z1", page_size=50)
    assert zone["total"] == 60 and all(int(c["name"][1:]) % 2 for c in zone["nodes"])
    assert views.nodes_page(cluster.mirror, page=99, page_size=50)["page"] == 3  # clamped to the last page


def test_a_node_lists_the_pending_pods_nominated_to_it() -> None:
    cluster = Cluster().classes().add(node("node-a"), pod("xyz-0", HIGH, "2", nominated="node-a"))
    card = views.nodes_page(cluster.mirror)["nodes"][0]
    assert card["nominated"] == [{"namespace": "default", "name": "xyz-0", "priority": HIGH}]


def test_cluster_totals_count_bound_pending_and_terminating_pods() -> None:
    cluster = (
        Cluster()
        .classes()
        .add(
            node("a"),
            node("b", unschedulable=True),
            pod("p1", LOW, "1", node_name="a"),
            pod("p2", LOW, "1", node_name="a", terminating_since=T0),
            pod("p3", HIGH, "2"),
        )
    )
    totals = views.cluster_totals(cluster.mirror)
    assert (totals["nodes"], totals["cordoned"], totals["bound"], totals["pending"], totals["terminating"]) == (
        2,
        1,
        2,
        1,
        1,
    )
    cpu = next(r for r in totals["resources"] if r["name"] == "cpu")
    assert (cpu["requested"], cpu["allocatable"]) == (2000, 8000)


# --- queue ------------------------------------------------------------------------------------------


def test_the_queue_is_in_priority_then_waiting_order_with_reason_nomination_and_policy() -> None:
    cluster = (
        Cluster()
        .classes()
        .add(
            node("a"),
            pod("low-old", LOW, created=T0 - 300, reason="0/1 nodes are available: 1 Insufficient cpu."),
            pod("high", HIGH, created=T0 - 10, nominated="a"),
            pod("low-new", LOW, created=T0 - 20, never=True),
            pod("bound", LOW, node_name="a"),
        )
    )
    page = views.queue_page(cluster.mirror, T0)
    assert [p["name"] for p in page["pods"]] == ["high", "low-old", "low-new"]
    high, low_old, low_new = page["pods"]
    assert high["nominatedNode"] == "a" and high["band"] == "high-priority"
    assert low_old["reason"] == "0/1 nodes are available: 1 Insufficient cpu." and low_old["waitingSeconds"] == 300
    assert low_new["nonPreempting"] and not low_old["nonPreempting"]
    assert [(g["priority"], g["count"]) for g in page["groups"]] == [(HIGH, 1), (LOW, 2)]


def test_the_queue_is_searched_by_name_or_reason_and_counts_stay_whole() -> None:
    cluster = (
        Cluster()
        .classes()
        .add(
            pod("a", LOW, reason="0/3 nodes are available: 3 Insufficient cpu."),
            pod("b", LOW, reason="0/3 nodes are available: 3 node(s) had untolerated taint."),
        )
    )
    page = views.queue_page(cluster.mirror, T0, query="taint")
    assert [p["name"] for p in page["pods"]] == ["b"]
    assert (page["total"], page["matching"]) == (2, 1)


def test_a_pod_leaves_the_queue_when_it_binds_and_the_views_that_changed_are_told() -> None:
    cluster = Cluster().classes().add(node("a"), pod("p", LOW))
    before = dict(cluster.mirror.view_versions)
    cluster.add(pod("p", LOW, node_name="a"), change=MODIFIED)
    assert views.queue_page(cluster.mirror, T0)["total"] == 0
    moved = {view for view, version in cluster.mirror.view_versions.items() if version != before[view]}
    assert {NODES, QUEUE} <= moved and PREEMPTIONS not in moved


# --- preemptions ------------------------------------------------------------------------------------


def test_a_preemption_is_one_timeline_entry_with_its_victims_grace_and_trace_link() -> None:
    cluster = (
        Cluster()
        .classes()
        .add(
            node("node-a"),
            pod("xyz-0", HIGH, "2", nominated="node-a"),
            pod("batch-2", LOW, node_name="node-a", terminating_since=T0 - 5),
            pod("batch-4", LOW, node_name="node-a", terminating_since=T0 - 5),
        )
    )
    cluster.mirror.apply_event(preempted("batch-2", "xyz-0", "node-a"))
    cluster.mirror.apply_event(preempted("batch-4", "xyz-0", "node-a"))
    cluster.mirror.apply_event(preempted("batch-4", "xyz-0", "node-a"))  # listed, then watched: once
    entries = views.timeline(cluster.mirror, T0)["entries"]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["node"] == "node-a" and entry["preemptor"]["name"] == "xyz-0"
    assert entry["preemptor"]["state"] == "nominated to node-a"
    assert [(v["name"], v["state"], v["graceLeftSeconds"]) for v in entry["victims"]] == [
        ("batch-2", "terminating", 25.0),
        ("batch-4", "terminating", 25.0),
    ]
    assert entry["traceLink"] == f"trace/default/xyz-0?since={int(T0 - 5)}"


def test_victims_that_are_gone_and_a_bound_preemptor_are_shown_as_such() -> None:
    cluster = Cluster().classes().add(node("node-a"), pod("xyz-0", HIGH, "2", node_name="node-a"))
    cluster.mirror.apply_event(preempted("batch-2", "xyz-0", "node-a"))
    entry = views.timeline(cluster.mirror, T0)["entries"][0]
    assert entry["preemptor"]["state"] == "bound to node-a"
    assert entry["victims"][0]["state"] == "gone" and entry["victims"][0]["graceLeftSeconds"] is None


def test_a_budget_below_its_minimum_after_a_preemption_is_a_violation() -> None:
    cluster = (
        Cluster()
        .classes()
        .add(
            node("node-a"),
            pod("db-0", LOW, node_name="node-a", labels={"app": "db"}, terminating_since=T0),
            pod("web-0", LOW, node_name="node-a", labels={"app": "web"}, terminating_since=T0),
            pdb("db-pdb", "db", current=1, desired=2),
            pdb("web-pdb", "web", current=3, desired=2),
        )
    )
    cluster.mirror.apply_event(preempted("db-0", "xyz-0", "node-a"))
    cluster.mirror.apply_event(preempted("web-0", "xyz-0", "node-a"))
    entry = views.timeline(cluster.mirror, T0)["entries"][0]
    assert [v["pdbs"] for v in entry["victims"]] == [["default/db-pdb"], ["default/web-pdb"]]
    assert [b["name"] for b in entry["pdbViolations"]] == ["db-pdb"]


def test_the_timeline_keeps_the_newest_preemptions_and_searches_them() -> None:
    cluster = Cluster()  # timeline_length=3
    for i in range(5):
        cluster.mirror.apply_event(preempted(f"v{i}", f"p{i}", f"node-{i}", when=T0 + i))
    timeline = views.timeline(cluster.mirror, T0)
    assert [e["preemptor"]["name"] for e in timeline["entries"]] == ["p4", "p3", "p2"]
    assert [e["node"] for e in views.timeline(cluster.mirror, T0, query="node-3")["entries"]] == ["node-3"]
    assert "uid-p0" not in cluster.mirror.preemption_parts and "uid-v0" not in cluster.mirror.preemption_parts


# --- policies and what-if ---------------------------------------------------------------------------


def test_policies_list_classes_by_importance_with_their_pods_and_budgets_with_status() -> None:
    cluster = Cluster().classes().add(pod("a", LOW), pod("b", LOW), pod("c", HIGH), pdb("db-pdb", "db", 1, 2))
    quota = {
        "metadata": {"name": "q", "namespace": "default"},
        "spec": {"hard": {"pods": "10"}},
        "status": {"hard": {"pods": "10"}, "used": {"pods": "3"}},
    }
    body = views.policies(cluster.mirror, [quota])
    assert [(c["name"], c["pods"]) for c in body["priorityClasses"]] == [
        ("high-priority", 1),
        ("mid-priority", 0),
        ("low-priority", 2),
    ]
    assert body["pdbs"][0]["violated"] and body["pdbs"][0]["disruptionsAllowed"] == 0
    assert body["quotas"] == [
        {"namespace": "default", "name": "q", "resources": [{"name": "pods", "used": "3", "hard": "10"}]}
    ]


def test_a_what_if_draws_its_node_now_and_after_without_changing_the_mirror() -> None:
    cluster = (
        Cluster()
        .classes()
        .add(
            node("node-a"),
            pod("batch-2", LOW, node_name="node-a"),
            pod("batch-3", LOW, node_name="node-a"),
            pod("web-0", MID, "2", node_name="node-a"),
        )
    )
    version = cluster.mirror.version
    answer = views.whatif_view(
        cluster.mirror,
        pod("xyz-1", HIGH, "2"),
        {
            "nominatedNodeName": "node-a",
            "victims": [{"namespace": "default", "name": "batch-2"}, {"namespace": "default", "name": "batch-3"}],
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
        },
    )
    assert answer["nominatedNodeName"] == "node-a" and answer["victims"] == ["default/batch-2", "default/batch-3"]
    now, after = answer["node"], answer["after"]
    assert {c["name"]: c["wouldBePreempted"] for c in now["pods"]} == {"web-0": False, "batch-2": True, "batch-3": True}
    assert [(c["name"], c["incoming"]) for c in after["pods"]] == [("xyz-1", True), ("web-0", False)]
    cpu_now = next(r for r in now["resources"] if r["name"] == "cpu")
    cpu_after = next(r for r in after["resources"] if r["name"] == "cpu")
    assert cpu_now["label"] == "4 / 4" and not any(s["incoming"] for s in cpu_now["segments"])
    assert cpu_after["label"] == "4 / 4"
    assert [(s["rank"], s["incoming"], s["amount"]) for s in cpu_after["segments"]] == [
        (1, False, 2000),
        (0, True, 2000),
    ]
    assert cluster.mirror.version == version and "xyz-1" not in {k[1] for k in cluster.mirror.pods}


def test_a_deleted_pod_leaves_every_index() -> None:
    cluster = Cluster().classes().add(node("a"), pod("p", LOW, node_name="a"), pod("q", LOW))
    cluster.add(pod("p", LOW, node_name="a"), pod("q", LOW), change=DELETED)
    assert not cluster.mirror.pods and not cluster.mirror.pending and not cluster.mirror.pods_on("a")


def test_a_redelivered_change_older_than_the_mirror_is_dropped() -> None:
    cluster = Cluster().add(node("a"))
    cluster.mirror.apply_change(MODIFIED, "Node", node("a", cpu="8"), 1)  # version 1 again: a producer retry
    assert views.node_allocatable(cluster.mirror.nodes["a"])["cpu"] == 4000


# --- trace links ------------------------------------------------------------------------------------


def test_the_trace_link_chooses_the_trace_with_the_nominating_attempt_not_the_dry_run() -> None:
    def span(operation: str, **tags: str) -> dict[str, Any]:
        return {"operationName": operation, "tags": [{"key": k, "value": v} for k, v in tags.items()]}

    dry_run = {"traceID": "dry", "spans": [span("admission", **{"k8s.pod.name": "xyz-0"})]}
    other_pod = {
        "traceID": "other",
        "spans": [span("scheduling attempt", **{"k8s.pod.name": "abc", "podsched.nominated_node": "n"})],
    }
    real = {
        "traceID": "real",
        "spans": [span("scheduling attempt", **{"k8s.pod.name": "xyz-0", "podsched.nominated_node": "node-a"})],
    }
    assert traces.choose_trace([dry_run, other_pod, real], "default", "xyz-0") == "real"
    assert traces.choose_trace([dry_run], "default", "xyz-0") is None
    assert traces.trace_url("http://127.0.0.1:16686/", "real") == "http://127.0.0.1:16686/trace/real"


# --- scale ------------------------------------------------------------------------------------------


def test_at_5000_nodes_and_30000_pods_the_browser_gets_one_page_not_the_cluster() -> None:
    import time

    cluster = Cluster().classes()
    cluster.add(*(node(f"node-{i:04d}", cpu="32", labels={"zone": f"z{i % 3}"}) for i in range(5000)))
    cluster.add(
        *(
            pod(
                f"p{i}",
                (LOW, MID, HIGH)[i % 3],
                node_name=f"node-{i % 5000:04d}" if i < 25_000 else "",
                reason="" if i < 25_000 else "0/5000 nodes are available: 5000 Insufficient cpu.",
            )
            for i in range(30_000)
        )
    )
    answers = {
        "summary": lambda: views.cluster_totals(cluster.mirror),
        "nodes": lambda: views.nodes_page(cluster.mirror, page=7, page_size=50),
        "nodes searched": lambda: views.nodes_page(cluster.mirror, query="zone=z1", page_size=50),
        "queue": lambda: views.queue_page(cluster.mirror, T0, page=3, page_size=50),
    }
    for what, answer in answers.items():
        began = time.perf_counter()
        body = answer()
        seconds = time.perf_counter() - began
        size = len(json.dumps(body))
        print(f"{what}: {size / 1024:.0f} KiB in {seconds * 1000:.0f} ms")
        assert size < 200 * 1024, f"{what}: {size} bytes is not one page"
        assert seconds < 2.0, f"{what}: {seconds:.2f} s"
    assert views.cluster_totals(cluster.mirror)["pending"] == 5000
    assert len(views.nodes_page(cluster.mirror, page_size=50)["nodes"]) == 50
    assert views.queue_page(cluster.mirror, T0, page_size=50)["pages"] == 100


# --- following the API ------------------------------------------------------------------------------


def test_preemptions_listed_after_newer_watched_ones_keep_the_timeline_in_time_order() -> None:
    mirror = ClusterMirror(timeline_length=3)
    mirror.apply_event(preempted("batch-9", "web-9", "node-a", when=T0 - 1))  # the Watch's, newest
    mirror.apply_listed_events(
        [preempted(f"batch-{i}", f"web-{i}", "node-a", when=T0 - 10 + i) for i in range(4)]
        + [preempted("batch-9", "web-9", "node-a", when=T0 - 1)]  # listed as well: still one entry
    )
    assert [p.preemptor.name for p in mirror.preemptions.values()] == ["web-2", "web-3", "web-9"]
    assert set(mirror.preemption_parts) == {
        f"uid-{n}" for n in ("web-2", "batch-2", "web-3", "batch-3", "web-9", "batch-9")
    }


class _QueueLoadingEvents(api_pb2_grpc.PodSchedServicer):
    """The public API of a queue that has replayed its objects but is still loading its events: Watch
    sends the current state and its bookmark, ListEvents answers only once `events_loaded` is set."""

    def __init__(self) -> None:
        self.events_loaded = asyncio.Event()
        self.listing_started = asyncio.Event()

    async def Watch(self, request: api_pb2.WatchRequest, context: Any) -> Any:
        state = node("node-a")
        yield api_pb2.WatchEvent(
            change=events_pb2.ObjectChange(
                type=events_pb2.ObjectChange.ADDED,
                object=events_pb2.ObjectReference(kind="Node", name="node-a", uid="node-a"),
                object_json=json.dumps(state).encode(),
                resource_version=7,
            )
        )
        yield api_pb2.WatchEvent(bookmark_resource_version=7)
        await asyncio.Event().wait()  # nothing changes afterwards

    async def ListEvents(self, request: api_pb2.ListEventsRequest, context: Any) -> api_pb2.ListEventsResponse:
        self.listing_started.set()
        await self.events_loaded.wait()
        event = events_pb2.Event(
            type="Normal",
            reason="Preempted",
            message="Preempted by pod uid-web on node node-a",
            involved_object=events_pb2.ObjectReference(kind="Pod", namespace="default", name="batch", uid="uid-batch"),
            related=events_pb2.ObjectReference(kind="Pod", namespace="default", name="web", uid="uid-web"),
            count=1,
        )
        event.event_time.FromSeconds(int(T0))
        return api_pb2.ListEventsResponse(events=[event])


def test_the_objects_are_followed_while_the_events_are_still_loading() -> None:
    async def run() -> None:
        server = grpc.aio.server()
        queue = _QueueLoadingEvents()
        api_pb2_grpc.add_PodSchedServicer_to_server(queue, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        client = ApiClient(Connection(address=f"127.0.0.1:{port}"), timeout=30.0)
        mirror = ClusterMirror()
        following = asyncio.create_task(client.follow(mirror, lambda: None))
        try:
            async with asyncio.timeout(20):
                await queue.listing_started.wait()
                while not mirror.synced:
                    await asyncio.sleep(0.01)
            assert set(mirror.nodes) == {"node-a"} and not mirror.preemptions  # synced before any events
            queue.events_loaded.set()
            async with asyncio.timeout(20):
                while not mirror.preemptions:
                    await asyncio.sleep(0.01)
            assert [p.preemptor.name for p in mirror.preemptions.values()] == ["web"]
        finally:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
            await client.close()
            await server.stop(None)

    asyncio.run(run())
