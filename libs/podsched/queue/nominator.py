"""The nominator: which pods are nominated to which node (status.nominatedNodeName or a PostFilter
result). Filter counts nominated pods of >= priority as already running on their node."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence

from podsched.api.types import ObjectMeta, Pod, PodSpec
from podsched.framework.node_info import PodInfo

# Entries the change journal keeps for a reader that stopped reading; past that the older half is
# dropped and a reader that far behind starts over from `items()`.
JOURNAL_LIMIT = 4096

Change = tuple["PodInfo", str, int]  # (pod, node, +1 nominated / -1 no longer)


class Nominator:
    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}  # pod uid -> node
        # Every nomination made (+1) or dropped (-1), in order, so a reader can keep per-node sums
        # current without rescanning every nominated pod (the vectorized cycle's nominated load).
        # Only what some reader has not read yet is kept: an entry holds the pod as it then was, so
        # a journal kept for its own sake would hold thousands of pods long gone from the cluster.
        self._journal: list[Change] = []
        self._journal_base = 0  # the position of _journal[0]
        self._readers: weakref.WeakSet[JournalReader] = weakref.WeakSet()
        # The pods of the pod group whose cycle runs (see `in_flight`): uid -> the pod's own info.
        self._in_flight: dict[str, PodInfo] = {}

    def add(self, pod_info: PodInfo, node_name: str | None = None) -> None:
        """Nominate the pod to `node_name`, or to its own status.nominatedNodeName when None
        (upstream's ModeOverride vs ModeNoop). An empty name clears the nomination. Bound pods are
        never nominated."""
        pod = pod_info.pod
        self.remove(pod)
        target = pod.status.nominated_node_name if node_name is None else node_name
        if not target or pod.spec.node_name:
            return
        if pod.uid in self._in_flight:
            self._in_flight[pod.uid] = pod_info
            pod_info = _bare(pod)
        self._node_of[pod.uid] = target
        self._by_node.setdefault(target, []).append(pod_info)
        self._record(pod_info, target, 1)

    @contextlib.contextmanager
    def in_flight(self, pods: Iterable[Pod]) -> Iterator[None]:
        """While a pod group's cycle runs, its popped `pods` count as upstream counts them.

        NominatedPodsForNode looks each nominated pod up in the queue (nominatedPodToInfo); a group
        in flight is in none of its queues, so its nominated pods come back as bare pods with only
        their name, namespace, UID and schedulingGroup: priority 0, no requests, no labels. Filter
        then skips them for a preemptor of priority above 0 and, for one of priority 0 or less,
        counts them on their node as pods that request nothing. Afterwards each is nominated as
        it then is."""
        pods = list(pods)
        self._in_flight = {pod.uid: PodInfo(pod) for pod in pods}
        for pod in pods:
            self._swap(pod.uid, _bare(pod))
        try:
            yield
        finally:
            own, self._in_flight = self._in_flight, {}
            for uid, info in own.items():
                self._swap(uid, info)

    def _swap(self, uid: str, new: PodInfo) -> None:
        """Store `new` for a nominated pod (not nominated: nothing to do), in the journal too."""
        node = self._node_of.get(uid)
        if node is None:
            return
        infos = self._by_node[node]
        for index, info in enumerate(infos):
            if info.pod.uid == uid:
                self._record(info, node, -1)
                infos[index] = new
                self._record(new, node, 1)
                return

    def remove(self, pod: Pod) -> None:
        node = self._node_of.pop(pod.uid, None)
        if node is None:
            return
        remaining = []
        for pi in self._by_node.get(node, []):
            if pi.pod.uid == pod.uid:
                self._record(pi, node, -1)
            else:
                remaining.append(pi)
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

    def nominated_pod_info(self, pod: Pod) -> PodInfo | None:
        """What the nominator holds for the pod (what Filter adds on its node); None if not nominated."""
        node = self._node_of.get(pod.uid)
        if node is None:
            return None
        return next((info for info in self._by_node[node] if info.pod.uid == pod.uid), None)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, ()))

    def items(self) -> Iterator[tuple[str, list[PodInfo]]]:
        """(node, pods nominated there) for every node with nominations; do not mutate the lists."""
        return iter(self._by_node.items())

    def __len__(self) -> int:
        return len(self._node_of)

    # --- the change journal ----------------------------------------------------------------------

    def journal_reader(self) -> JournalReader:
        """A reader of the changes made from now on. The journal keeps what its slowest live reader
        has not read (none at all while no reader exists: a standby queue replica never reads)."""
        reader = JournalReader(self, self.position)
        self._readers.add(reader)
        return reader

    def _record(self, pod_info: PodInfo, node_name: str, sign: int) -> None:
        if not self._readers:
            self._journal_base += 1
            return
        self._journal.append((pod_info, node_name, sign))
        if len(self._journal) > JOURNAL_LIMIT:
            drop = len(self._journal) // 2
            del self._journal[:drop]
            self._journal_base += drop

    @property
    def position(self) -> int:
        """The journal position after the latest change."""
        return self._journal_base + len(self._journal)

    def _read(self, reader: JournalReader) -> Sequence[Change] | None:
        if reader.position < self._journal_base:
            changes = None
        else:
            changes = self._journal[reader.position - self._journal_base :]
        reader.position = self.position
        self._forget_read()
        return changes

    def _forget_read(self) -> None:
        """Drop the entries every live reader has read."""
        oldest = min((reader.position for reader in self._readers), default=self.position)
        if oldest > self._journal_base:
            del self._journal[: oldest - self._journal_base]
            self._journal_base = oldest


class JournalReader:
    """One reader's place in a Nominator's change journal."""

    def __init__(self, nominator: Nominator, position: int) -> None:
        self.nominator = nominator
        self.position = position

    def changes(self) -> Sequence[Change] | None:
        """The changes since the last call (or since this reader was made), in order; None when
        some of them are no longer kept (the reader rebuilds from `Nominator.items()`)."""
        return self.nominator._read(self)


def _bare(pod: Pod) -> PodInfo:
    """podRef.toPod: the pod as the nominator keeps it, without its spec."""
    meta = ObjectMeta(name=pod.name, namespace=pod.namespace, uid=pod.uid)
    return PodInfo(Pod(meta, PodSpec(pod_group_name=pod.spec.pod_group_name)))


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
            current = nominator.nominated_node(pod)
            if current == node_name:  # the log got there first: nothing to assume (or to undo)
                continue
            previous.append((pod, current))
            nominator.add(PodInfo(pod), node_name)
        yield
    finally:
        for pod, node_name in reversed(previous):
            nominator.add(PodInfo(pod), node_name)
