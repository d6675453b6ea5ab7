"""The nominator: which pods are nominated to which node (status.nominatedNodeName or a PostFilter
result). Filter counts nominated pods of >= priority as already running on their node."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping

from podsched.api.types import Pod
from podsched.framework.node_info import PodInfo


class Nominator:
    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}  # pod uid -> node

    def add(self, pod_info: PodInfo, node_name: str | None = None) -> None:
        """Nominate the pod to `node_name`, or to its own status.nominatedNodeName when None
        (upstream's ModeOverride vs ModeNoop). An empty name clears the nomination. Bound pods are
        never nominated."""
        pod = pod_info.pod
        self.remove(pod)
        target = pod.status.nominated_node_name if node_name is None else node_name
        if not target or pod.spec.node_name:
            return
        self._node_of[pod.uid] = target
        self._by_node.setdefault(target, []).append(pod_info)

    def remove(self, pod: Pod) -> None:
        node = self._node_of.pop(pod.uid, None)
        if node is None:
            return
        remaining = [pi for pi in self._by_node.get(node, []) if pi.pod.uid != pod.uid]
        if remaining:
            self._by_node[node] = remaining
        else:
            self._by_node.pop(node, None)

    def update(self, old: Pod, new_info: PodInfo) -> None:
        """A pod update keeps a nomination made by the scheduler unless the new object sets or clears
        nominatedNodeName itself."""
        new = new_info.pod
        node_name: str | None = None
        if not new.status.nominated_node_name and old.status.nominated_node_name == new.status.nominated_node_name:
            node_name = self._node_of.get(old.uid)
        self.add(new_info, node_name)

    def nominated_node(self, pod: Pod) -> str:
        return self._node_of.get(pod.uid, "")

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, ()))

    def items(self) -> Iterator[tuple[str, list[PodInfo]]]:
        """(node, pods nominated there) for every node with nominations; do not mutate the lists."""
        return iter(self._by_node.items())

    def __len__(self) -> int:
        return len(self._node_of)


@contextlib.contextmanager
def assumed_nominations(
    nominator: Nominator, pods_by_uid: Mapping[str, Pod], nominations: Iterable[tuple[str, str]]
) -> Iterator[None]:
    """The nominator as if these (pod uid, node) nominations were made (an empty node clears), for
    the duration of one request; afterwards it is what it was. A pod that is unknown, or already
    bound, is skipped: the caller's view is older than this one.

    The filter and preemption services follow the log; a queue batch sends the nominations its earlier
    cycles decided and whose writes are still being committed, as a later cycle of one kube-scheduler
    sees the nominations its earlier cycles made."""
    previous: list[tuple[Pod, str]] = []
    try:
        for uid, node_name in nominations:
            pod = pods_by_uid.get(uid)
            if pod is None or pod.spec.node_name:
                continue
            previous.append((pod, nominator.nominated_node(pod)))
            nominator.add(PodInfo(pod), node_name)
        yield
    finally:
        for pod, node_name in reversed(previous):
            nominator.add(PodInfo(pod), node_name)
