"""assumed_nominations: the nominations a queue batch decided but the log does not carry yet count for
one request (FindNodes, PostFilter, a worker's shard), then the nominator is what the log says again."""

from __future__ import annotations

import pytest

from builders import make_node, make_pod
from podsched.cluster.state import Cluster
from podsched.queue.nominator import Nominator, assumed_nominations
from replicas import replica as cluster_replica


def replica() -> tuple[Cluster, Nominator]:
    """A cluster as the services' copies hold it, its nominator fed from the log."""
    return cluster_replica(
        (
            make_node("n1").capacity(cpu="4", pods="110").obj(),
            make_node("n2").capacity(cpu="4", pods="110").obj(),
            make_pod("a").uid("a").priority(10).req(cpu="1").nominated("n1").obj(),
            make_pod("b").uid("b").priority(10).req(cpu="1").obj(),
            make_pod("bound").uid("bound").priority(10).req(cpu="1").node("n2").obj(),
        )
    )


def nominations(nominator: Nominator) -> dict[str, list[str]]:
    return {node: sorted(info.pod.name for info in infos) for node, infos in nominator.items()}


def test_assumed_nominations_count_inside_and_the_logs_come_back_after() -> None:
    cluster, nominator = replica()
    assert nominations(nominator) == {"n1": ["a"]}
    assumed = [
        ("b", "n1"),  # a new nomination
        ("a", ""),  # a clearing
        ("bound", "n1"),  # bound meanwhile: skipped
        ("gone", "n1"),  # unknown here: skipped
    ]
    with assumed_nominations(nominator, cluster.pods_by_uid, assumed):
        assert nominations(nominator) == {"n1": ["b"]}
    assert nominations(nominator) == {"n1": ["a"]}


def test_the_nominator_is_restored_when_the_request_fails() -> None:
    cluster, nominator = replica()
    with pytest.raises(RuntimeError), assumed_nominations(nominator, cluster.pods_by_uid, [("a", "n2")]):
        assert nominations(nominator) == {"n2": ["a"]}
        raise RuntimeError("the dry run failed")
    assert nominations(nominator) == {"n1": ["a"]}
