"""AssumedPods (upstream's AssumePod/ForgetPod): a pod placed earlier in a request counts on its node
and leaves the nominator while the request runs; afterwards the nodes, the nominator, the cluster's
objects and its listeners are as before, and none of them heard of the assumption."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import make_node, make_pod
from podsched.api.types import Pod
from podsched.cluster.state import Cluster
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.node_info import Snapshot
from podsched.plugins.registry import build_algorithm
from podsched.queue.nominator import Nominator
from podsched.scheduler.assumed import AssumedPods, bound_copy
from replicas import replica as cluster_replica

NOW = 1000.0


def replica() -> tuple[Cluster, Nominator, list[object]]:
    """A cluster as the filter service's copy holds it, its nominator fed from the log, and every
    change its listeners heard."""
    heard: list[object] = []
    cluster, nominator = cluster_replica(
        (
            make_node("n1").capacity(cpu="2", pods="110").obj(),
            make_node("n2").capacity(cpu="2", pods="110").obj(),
            make_pod("nominated").uid("nominated").priority(10).req(cpu="2").nominated("n1").obj(),
            make_pod("plain").uid("plain").priority(10).req(cpu="1").obj(),
            make_pod("running").uid("running").priority(10).req(cpu="1").node("n2").obj(),
        ),
        NOW,
        listeners=[heard.append],
    )
    heard.clear()
    return cluster, nominator, heard


def pods_by_node(snapshot: Snapshot) -> dict[str, list[str]]:
    return {info.name: [p.pod.name for p in info.pods] for info in snapshot.node_info_list}


def nominations(nominator: Nominator) -> dict[str, list[str]]:
    return {node: sorted(info.pod.name for info in infos) for node, infos in nominator.items() if infos}


def test_an_assumed_pod_counts_on_its_node_and_leaves_the_nominator_until_forgotten() -> None:
    cluster, nominator, heard = replica()
    snapshot = cluster.snapshot()
    changed: list[str] = []
    assumed = AssumedPods(snapshot, nominator, changed.append)

    assumed.assume(cluster.pods_by_uid["nominated"], "n1")
    assumed.assume(cluster.pods_by_uid["plain"], "n2")
    assert pods_by_node(snapshot) == {"n1": ["nominated"], "n2": ["running", "plain"]}
    assert snapshot.get("n1").requested.milli_cpu == 2000  # counted once: bound, no longer nominated
    assert nominations(nominator) == {}
    assert changed == ["n1", "n2"]

    assumed.forget_all()
    assert pods_by_node(snapshot) == {"n1": [], "n2": ["running"]}
    assert nominations(nominator) == {"n1": ["nominated"]}
    assert changed == ["n1", "n2", "n2", "n1"]  # latest first
    assert len(assumed) == 0
    assert heard == []  # the cluster's listeners never heard of it
    assert cluster.pods_by_uid["plain"].spec.node_name == ""  # nor did its objects


def test_a_later_cycle_sees_the_assumed_pod_on_either_strategy() -> None:
    for columns in (False, True):
        cluster, nominator, _ = replica()
        snapshot = cluster.snapshot()
        algorithm = build_algorithm(SchedulerConfig(), nominator, offset=lambda n: 0, columns=columns)
        if algorithm.columns is not None:
            cluster.listeners.append(algorithm.columns.track_changes())
        strategy = algorithm.columns

        def node_changed(name: str, strategy: object = strategy) -> None:
            if strategy is not None:
                strategy.mark_dirty(name)  # type: ignore[attr-defined]

        assumed = AssumedPods(snapshot, nominator, node_changed)
        one_cpu = make_pod("one-cpu").uid("one-cpu").priority(10).req(cpu="1").obj()
        assert algorithm.schedule(one_cpu, snapshot, [], nominator, NOW).node_name == "n2"  # n1: nominated 2 CPU
        assumed.assume(cluster.pods_by_uid["plain"], "n2")
        result = algorithm.schedule(one_cpu, snapshot, [], nominator, NOW)
        assert result.node_name == "", f"columns={columns}: n2 is full with the assumed pod"
        assumed.forget_all()
        assert algorithm.schedule(one_cpu, snapshot, [], nominator, NOW).node_name == "n2", f"columns={columns}"


def test_assuming_on_a_node_the_snapshot_lacks_is_refused_and_changes_nothing() -> None:
    cluster, nominator, _ = replica()
    snapshot = cluster.snapshot()
    assumed = AssumedPods(snapshot, nominator, lambda name: None)
    with pytest.raises(KeyError, match="node 'gone' is not in the snapshot"):
        assumed.assume(cluster.pods_by_uid["nominated"], "gone")
    assert nominations(nominator) == {"n1": ["nominated"]}
    assert len(assumed) == 0


@pytest.mark.parametrize(
    "pod",
    [
        make_pod("plain").obj(),
        make_pod("full").priority(7).req(cpu="1", memory="1Gi").node_selector(zone="a").toleration("k").obj(),
        make_pod("nominated").nominated("n1").pod_anti_affinity("zone", app="x").start_time(5.0).obj(),
    ],
    ids=["a bare pod", "a pod with requests, selector and tolerations", "a nominated pod with affinity"],
)
def test_the_bound_copy_is_what_replacing_the_node_name_gives_and_shares_what_replace_shares(pod: Pod) -> None:
    expected = replace(pod, spec=replace(pod.spec, node_name="n2"))
    copied = bound_copy(pod, "n2")
    assert copied == expected
    assert copied.spec is not pod.spec and pod.spec.node_name == ""
    assert copied.metadata is pod.metadata and copied.status is pod.status and copied.source is pod.source
    assert copied.spec.node_selector is pod.spec.node_selector and copied.spec.containers is pod.spec.containers


def test_a_later_request_assumes_the_same_pod_on_the_same_node_with_the_earlier_copy() -> None:
    cluster, nominator, _ = replica()
    snapshot = cluster.snapshot()
    first = AssumedPods(snapshot, nominator, lambda name: None)
    first.assume(cluster.pods_by_uid["plain"], "n2")
    first.assume(cluster.pods_by_uid["nominated"], "n1")
    copies = {info.pod.uid: info for node in ("n1", "n2") for info in snapshot.get(node).pods}
    first.forget_all()

    # The next request: "plain" again on n2 (a bind under way), "nominated" on another node, and
    # "running"'s uid is not in the earlier request at all.
    second = AssumedPods(snapshot, nominator, lambda name: None, earlier=first.bound)
    second.assume(cluster.pods_by_uid["plain"], "n2")
    second.assume(cluster.pods_by_uid["nominated"], "n2")
    on_n2 = {info.pod.uid: info for info in snapshot.get("n2").pods}
    assert on_n2["plain"] is copies["plain"]  # the same pod on the same node: the same copy
    assert on_n2["nominated"] is not copies["nominated"]  # another node: a copy of its own
    assert on_n2["nominated"].pod.spec.node_name == "n2"
    assert snapshot.get("n2").requested.milli_cpu == 1000 + 1000 + 2000
    second.forget_all()

    # A newer version of the pod (a record applied in between) is copied afresh.
    newer = replace(cluster.pods_by_uid["plain"], spec=replace(cluster.pods_by_uid["plain"].spec, priority=11))
    third = AssumedPods(snapshot, nominator, lambda name: None, earlier=second.bound)
    third.assume(newer, "n2")
    assumed_copy = next(info for info in snapshot.get("n2").pods if info.pod.uid == "plain")
    assert assumed_copy is not copies["plain"] and assumed_copy.pod.spec.priority == 11
    third.forget_all()
    assert pods_by_node(snapshot) == {"n1": [], "n2": ["running"]}
    assert snapshot.get("n2").requested.milli_cpu == 1000
    assert nominations(nominator) == {"n1": ["nominated"]}
