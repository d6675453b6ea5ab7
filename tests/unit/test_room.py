"""RoomTracker: which changes after a Filter outcome can let a pod fit (so PostFilter must not decide
on that outcome). The preemption service refuses a diagnosis older than such a change."""

from __future__ import annotations

from dataclasses import replace

from builders import make_node, make_pod
from podsched.api.types import Pod
from podsched.cluster.state import Cluster
from podsched.cluster.store import MODIFIED, REMOVED
from podsched.scheduler.room import RoomTracker


class Log:
    """A replica Cluster fed one recorded change at a time, as the services' copies are."""

    def __init__(self) -> None:
        self.cluster = Cluster(lambda: 1000.0, authoritative=False)
        self.room = RoomTracker(lambda: self.cluster.resource_version)
        self.cluster.listeners.append(self.room.on_change)

    def write(self, obj: object, change_type: str = MODIFIED) -> int:
        obj.metadata.resource_version = self.cluster.resource_version + 1  # type: ignore[attr-defined]
        self.cluster.restore(change_type, obj)  # type: ignore[arg-type]
        return self.cluster.resource_version


def full_cluster() -> tuple[Log, Pod, int]:
    log = Log()
    log.write(make_node("n1").capacity(cpu="2", pods="110").obj())
    low = make_pod("low").uid("low").priority(0).req(cpu="2").node("n1").obj()
    log.write(low)
    preemptor = make_pod("high").uid("high").priority(10).req(cpu="1").obj()
    version = log.write(preemptor)
    return log, preemptor, version


def test_a_pod_leaving_its_node_makes_room() -> None:
    log, preemptor, filtered_at = full_cluster()
    assert not log.room.may_fit_since(preemptor, filtered_at)
    log.write(log.cluster.pods_by_uid["low"], REMOVED)
    assert log.room.may_fit_since(preemptor, filtered_at)
    assert not log.room.may_fit_since(preemptor, log.cluster.resource_version)


def test_new_pending_pods_bindings_and_terminations_make_no_room() -> None:
    log, preemptor, filtered_at = full_cluster()
    log.write(make_pod("other").uid("other").priority(0).req(cpu="1").obj())
    log.write(make_node("n2").capacity(cpu="1", pods="110").obj())
    after_node = log.cluster.resource_version
    other = log.cluster.pods_by_uid["other"]
    log.write(replace(other, spec=replace(other.spec, node_name="n2")))  # bound
    low = log.cluster.pods_by_uid["low"]
    log.write(replace(low, metadata=replace(low.metadata, deletion_timestamp=999.0)))  # terminating, still there
    assert log.room.may_fit_since(preemptor, filtered_at)  # the node added at after_node
    assert not log.room.may_fit_since(preemptor, after_node)


def test_a_nomination_moving_away_makes_room() -> None:
    log, preemptor, _ = full_cluster()
    log.write(make_pod("nominee").uid("nominee").priority(10).req(cpu="1").nominated("n1").obj())
    filtered_at = log.cluster.resource_version
    nominee = log.cluster.pods_by_uid["nominee"]
    log.write(replace(nominee, status=replace(nominee.status, nominated_node_name="")))
    assert log.room.may_fit_since(preemptor, filtered_at)


def test_an_arrival_matters_only_to_pods_with_pod_affinity_or_spread() -> None:
    log, preemptor, filtered_at = full_cluster()
    log.write(make_node("n2").capacity(cpu="1", pods="110").obj())
    filtered_at = log.cluster.resource_version
    log.write(make_pod("web").uid("web").label("app", "web").req(cpu="1").node("n2").obj())
    assert not log.room.may_fit_since(preemptor, filtered_at)
    follower = (
        make_pod("follower")
        .uid("follower")
        .priority(10)
        .req(cpu="1")
        .pod_affinity("kubernetes.io/hostname", app="web")
        .obj()
    )
    assert log.room.may_fit_since(follower, filtered_at)
