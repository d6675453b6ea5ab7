"""When a Filter verdict of "fits nowhere" may no longer hold.

In one kube-scheduler process, Filter and PostFilter of a cycle read the same snapshot. Here they
run in different services, each on its own copy of the log, and the preemption service's copy may
be ahead of the version the filter answered at. If a change between the two made room (a pod left a
node, a nomination moved away, a node changed), the diagnosis PostFilter starts from is stale: the
pod might fit now, and preempting for it would evict a pod for nothing. (Seen in the crash test: a
preemptor whose victim had just gone was diagnosed on the copy before the removal and preempted a
second pod on the preemption service's newer copy.)

`RoomTracker` follows a `Cluster`'s changes and remembers the last version of each kind of change
that can turn "fits nowhere" into "fits": PostFilter then refuses a diagnosis older than that, and
the queue filters the pod again."""

from __future__ import annotations

from collections.abc import Callable

from podsched.api.types import KIND_NODE, KIND_POD, POD_FAILED, POD_SUCCEEDED, Pod
from podsched.cluster.store import Change


class RoomTracker:
    def __init__(self, current_version: Callable[[], int]) -> None:
        self._current_version = current_version
        # Last version at which a change freed resources, ports or nominated room, or changed a node.
        self.room_version = 0
        # Last version at which a pod was placed on a node: only pods with inter-pod affinity or
        # topology spread can fit because another pod arrived.
        self.placement_version = 0

    def on_change(self, change: Change) -> None:
        if change.kind == KIND_NODE:
            self.room_version = self._current_version()
        elif change.kind == KIND_POD:
            old, new = change.old, change.new
            assert old is None or isinstance(old, Pod)
            assert new is None or isinstance(new, Pod)
            old_node = old.spec.node_name if old is not None else ""
            new_node = new.spec.node_name if new is not None else ""
            old_nominated = old.status.nominated_node_name if old is not None else ""
            new_nominated = new.status.nominated_node_name if new is not None else ""
            ended = (
                new is not None
                and old is not None
                and new.status.phase != old.status.phase
                and (new.status.phase in (POD_SUCCEEDED, POD_FAILED))
            )
            if (old_node and (old_node != new_node or ended)) or (old_nominated and old_nominated != new_nominated):
                self.room_version = self._current_version()
            if new_node and new_node != old_node:
                self.placement_version = self._current_version()
            elif old is not None and new is not None and old_node and old.metadata.labels != new.metadata.labels:
                # A placed pod's labels decide other pods' affinity and spread.
                self.placement_version = self._current_version()

    def may_fit_since(self, pod: Pod, version: int) -> bool:
        """True if a change after `version` could let `pod` pass Filter where it failed at `version`."""
        if self.room_version > version:
            return True
        spec = pod.spec
        affinity = spec.affinity
        # Another pod's arrival can satisfy required pod affinity, or raise the least-loaded domain of
        # a spread constraint; it never lifts anti-affinity (only a departure does).
        depends_on_arrivals = bool(spec.topology_spread_constraints) or (
            affinity is not None and affinity.pod_affinity is not None
        )
        return depends_on_arrivals and self.placement_version > version
