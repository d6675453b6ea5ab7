"""Assumed pods (upstream's cache AssumePod and ForgetPod): a pod placed by an earlier cycle counts
on its node while later cycles run, before its bind is in the log.

The assumption is an overlay on the snapshot's NodeInfos and nothing else: the cluster's objects,
its listeners (the room tracker, PDB and quota status) and the log never hear of it. As upstream's
assume() does, an assumed pod leaves the nominator, so its request is not counted twice on the node
(once bound, once nominated). `forget_all` undoes every assumption in reverse order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from operator import attrgetter

from podsched.api.types import Pod, PodSpec
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.queue.nominator import Nominator

_POD_FIELDS = [f.name for f in fields(Pod)]
_SPEC_FIELDS = [f.name for f in fields(PodSpec)]
_pod_values = attrgetter(*_POD_FIELDS)
_spec_values = attrgetter(*_SPEC_FIELDS)
_SPEC_AT = _POD_FIELDS.index("spec")
_NODE_NAME_AT = _SPEC_FIELDS.index("node_name")


def bound_copy(pod: Pod, node_name: str) -> Pod:
    """`replace(pod, spec=replace(pod.spec, node_name=node_name))`: the pod as assumed on its node,
    sharing everything but the spec's top. Field by field: `dataclasses.replace` checks every
    field on every call, and a FindNodes copies each pod it places twice (placed, then assumed as a
    bind under way by the next request), 10 us a pod."""
    spec = list(_spec_values(pod.spec))
    spec[_NODE_NAME_AT] = node_name
    values = list(_pod_values(pod))
    values[_SPEC_AT] = PodSpec(*spec)
    return Pod(*values)


# A pod as an assumption found it, the node it was assumed on, and its bound copy's PodInfo. A
# FindNodes assumes each pod it places, and the next request assumes it again as a bind under way:
# the second takes the first's copy (copying a pod was a third of an assumption). A plain tuple: one
# is built for every assumption.
BoundPod = tuple[Pod, str, PodInfo]


class AssumedPods:
    """The pods assumed on `snapshot`'s nodes during one request. `node_changed` hears every node
    whose pods an assumption or a forget changed (the column strategy refreshes its row)."""

    def __init__(
        self,
        snapshot: Snapshot,
        nominator: Nominator,
        node_changed: Callable[[str], None],
        earlier: Mapping[str, BoundPod] | None = None,
    ) -> None:
        """`earlier`: an earlier request's `bound` pods, whose copies this one takes again for the
        same pod (the same object: pods are values) on the same node instead of copying it anew."""
        self.snapshot = snapshot
        self.nominator = nominator
        self.node_changed = node_changed
        self._earlier = earlier or {}
        self._assumed: list[tuple[NodeInfo, Pod, str]] = []  # (node, the pod as it was, its nomination)
        # Pod UID -> the pod as it was, its node and its bound copy's PodInfo, for a later request.
        self.bound: dict[str, BoundPod] = {}

    def __len__(self) -> int:
        return len(self._assumed)

    def assume(self, pod: Pod, node_name: str) -> None:
        """Count `pod` as bound to `node_name` until forgotten; a node not in the snapshot is an error."""
        node_info = self.snapshot.get(node_name)
        if node_info is None:
            raise KeyError(f"node {node_name!r} is not in the snapshot")
        earlier = self._earlier.get(pod.uid)
        if earlier is not None and earlier[0] is pod and earlier[1] == node_name:
            bound_info = earlier[2]
        else:
            bound_info = PodInfo(bound_copy(pod, node_name))
        self.bound[pod.uid] = (pod, node_name, bound_info)
        nomination = self.nominator.nominated_node(pod)
        self.nominator.remove(pod)
        node_info.add_pod(bound_info)
        self._assumed.append((node_info, pod, nomination))
        self.snapshot.pods_changed()
        self.node_changed(node_name)

    def forget_all(self) -> None:
        """Undo every assumption, latest first: the nodes' pods and the nominations are as before."""
        while self._assumed:
            node_info, pod, nomination = self._assumed.pop()
            node_info.remove_pod(pod)  # by UID
            if nomination:
                self.nominator.add(PodInfo(pod), nomination)
            self.snapshot.pods_changed()
            self.node_changed(node_info.name)
