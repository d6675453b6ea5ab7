"""The vectorized cycle's nominated load (`NominatedColumns`), kept current from the nominator's
journal, against the sum it replaces: every nominated pod of >= priority on a node the columns have,
the asking pod excluded. Random sequences of nominations, clearings, node additions, journal overflow,
and pods whose requests are out of the exact range."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_node, make_pod
from podsched.api.types import Pod
from podsched.fastpath import nominated as nominated_module
from podsched.fastpath.columns import SAFE_LIMIT, NodeColumns
from podsched.fastpath.nominated import NominatedColumns, OutOfRange
from podsched.framework.interface import ResourceCheck
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.resource import pod_requests
from podsched.queue import nominator as nominator_module
from podsched.queue.nominator import Nominator

GPU = "example.com/gpu"
CHECKS = (ResourceCheck("cpu", 1, ""), ResourceCheck("memory", 1, ""), ResourceCheck(GPU, 1, ""))


def expected(nominator: Nominator, index: dict[str, int], pod: Pod, checks: tuple[ResourceCheck, ...]) -> Any:
    """The plain sum, as {row: (count, amounts)}; "out of range" when the vectorized one must refuse."""
    loads: dict[int, list[int]] = {}
    for node_name, pod_infos in nominator.items():
        row = index.get(node_name)
        if row is None:
            continue
        for pod_info in pod_infos:
            other = pod_info.pod
            if other.priority < pod.priority or other.uid == pod.uid:
                continue
            amounts = [pod_requests(other).get(check.resource) for check in checks]
            if not all(0 <= a < SAFE_LIMIT for a in amounts):
                return "out of range"
            load = loads.setdefault(row, [0] * (1 + len(checks)))
            load[0] += 1
            for k, amount in enumerate(amounts):
                load[k + 1] += amount
    return {row: tuple(load) for row, load in loads.items()}


def actual(columns: NominatedColumns, nominator: Nominator, node_columns: NodeColumns, pod: Pod) -> Any:
    try:
        load = columns.load(nominator, node_columns, pod, CHECKS)
    except OutOfRange:
        return "out of range"
    if load is None:
        return {}
    rows, counts, amounts = load
    return {
        int(row): (int(counts[i]), *(int(a[i]) for a in amounts)) for i, row in enumerate(np.asarray(rows).tolist())
    }


def pod_with(name: str, priority: int, cpu: int, gpu: int, huge: bool) -> Pod:
    builder = make_pod(name).priority(priority).req(cpu=f"{cpu}m", memory="1Mi", **({GPU: gpu} if gpu else {}))
    pod = builder.obj()
    if huge:  # a request the vectorized arithmetic cannot add exactly
        pod_requests(pod).memory = SAFE_LIMIT
    return pod


OPERATIONS = st.lists(
    st.one_of(
        # (pod, node): n3 to n5 are not in the columns until that many nodes have been added
        st.tuples(st.just("nominate"), st.integers(0, 7), st.integers(0, 5)),
        st.tuples(st.just("clear"), st.integers(0, 7), st.just(0)),
        st.tuples(st.just("add node"), st.just(0), st.just(0)),
        st.tuples(st.just("ask"), st.integers(0, 7), st.just(0)),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(
    operations=OPERATIONS,
    priorities=st.lists(st.integers(-2, 2), min_size=8, max_size=8),
    cpus=st.lists(st.integers(0, 4000), min_size=8, max_size=8),
    gpus=st.lists(st.integers(0, 2), min_size=8, max_size=8),
    huge=st.lists(st.booleans(), min_size=8, max_size=8).map(lambda flags: [f and i == 7 for i, f in enumerate(flags)]),
    journal_limit=st.sampled_from([4, 4096]),
)
def test_the_columns_add_up_to_the_nominated_pods_a_filter_counts(
    operations: list[tuple[str, int, int]],
    priorities: list[int],
    cpus: list[int],
    gpus: list[int],
    huge: list[bool],
    journal_limit: int,
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nominator_module, "JOURNAL_LIMIT", journal_limit)  # small: readers fall behind it
        replay(operations, priorities, cpus, gpus, huge)


def replay(
    operations: list[tuple[str, int, int]], priorities: list[int], cpus: list[int], gpus: list[int], huge: list[bool]
) -> None:
    pods = [pod_with(f"p{i}", priorities[i], cpus[i], gpus[i], huge[i]) for i in range(8)]
    infos = [NodeInfo(make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj()) for i in range(3)]
    node_columns = NodeColumns()
    node_columns.sync(Snapshot(infos))
    nominator = Nominator()
    columns = NominatedColumns()
    for operation, which, node in operations:
        pod = pods[which]
        if operation == "nominate":
            nominator.add(PodInfo(pod), f"n{node}")
        elif operation == "clear":
            nominator.remove(pod)
        elif operation == "add node":
            infos.append(NodeInfo(make_node(f"n{len(infos)}").capacity(cpu="4").obj()))
            node_columns.sync(Snapshot(infos))
        else:
            assert actual(columns, nominator, node_columns, pod) == expected(nominator, node_columns.index, pod, CHECKS)
    for pod in pods:  # and once more for every pod at the end
        assert actual(columns, nominator, node_columns, pod) == expected(nominator, node_columns.index, pod, CHECKS)


def test_a_reader_behind_the_journal_rebuilds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nominator_module, "JOURNAL_LIMIT", 2)
    infos = [NodeInfo(make_node("n0").capacity(cpu="4").obj())]
    node_columns = NodeColumns()
    node_columns.sync(Snapshot(infos))
    nominator, columns = Nominator(), NominatedColumns()
    asking = pod_with("asking", 0, 100, 0, False)
    assert columns.load(nominator, node_columns, asking, CHECKS) is None
    idle = nominator.journal_reader()
    for i in range(5):
        nominator.add(PodInfo(pod_with(f"p{i}", 1, 100, 0, False)), "n0")
    assert idle.changes() is None  # the journal no longer reaches back that far
    assert actual(columns, nominator, node_columns, asking) == {0: (5, 500, 5 * 2**20, 0)}
    assert nominated_module.COUNT == ""


def test_the_journal_keeps_only_what_a_reader_has_not_read() -> None:
    """An entry holds the pod as it was: once every reader has read it (or with no reader at all, as
    on a standby queue replica) a pod that is no longer nominated is not kept alive by the journal."""
    nominator = Nominator()
    first = pod_with("first", 1, 100, 0, False)
    alone = sys.getrefcount(first)
    nominator.add(PodInfo(first), "n0")
    nominator.remove(first)
    assert sys.getrefcount(first) == alone  # no reader: nothing journaled

    reader = nominator.journal_reader()
    second = pod_with("second", 1, 100, 0, False)
    alone = sys.getrefcount(second)
    nominator.add(PodInfo(second), "n0")
    nominator.remove(second)
    assert sys.getrefcount(second) > alone  # the reader has not read it yet
    changes = reader.changes()
    assert changes is not None
    assert [(info.pod.name, node, sign) for info, node, sign in changes] == [("second", "n0", 1), ("second", "n0", -1)]
    del changes
    assert sys.getrefcount(second) == alone
    assert reader.changes() == []


def test_a_slower_reader_keeps_what_it_has_not_read() -> None:
    nominator = Nominator()
    fast, slow = nominator.journal_reader(), nominator.journal_reader()
    nominator.add(PodInfo(pod_with("a", 1, 100, 0, False)), "n0")
    assert [info.pod.name for info, _, _ in fast.changes() or ()] == ["a"]
    nominator.add(PodInfo(pod_with("b", 1, 100, 0, False)), "n1")
    assert [info.pod.name for info, _, _ in slow.changes() or ()] == ["a", "b"]
    assert [info.pod.name for info, _, _ in fast.changes() or ()] == ["b"]
