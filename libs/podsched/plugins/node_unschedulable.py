"""NodeUnschedulable: cordoned nodes take only pods tolerating the unschedulable taint."""

from __future__ import annotations

from podsched.api.types import TAINT_NO_SCHEDULE, Pod, Taint
from podsched.framework.cycle_state import CycleState
from podsched.framework.events import NODE_ADD, NODE_UPDATE, ClusterEventWithHint
from podsched.framework.interface import NodeSignature
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Status
from podsched.plugins import names
from podsched.plugins.taint_toleration import tolerations_tolerate_taint

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=TAINT_NO_SCHEDULE)


class NodeUnschedulable:
    name = names.NODE_UNSCHEDULABLE

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable."""
        return [ClusterEventWithHint(NODE_ADD), ClusterEventWithHint(NODE_UPDATE)]

    def sign_pod(self, pod: Pod) -> NodeSignature:
        """The verdict reads the pod's tolerations and the node's unschedulable flag."""
        return NodeSignature(pod.spec.tolerations, ())

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not node_info.node.spec.unschedulable:
            return None
        if tolerations_tolerate_taint(pod.spec.tolerations, _UNSCHEDULABLE_TAINT):
            return None
        return Status.unresolvable(self.name, ERR_REASON_UNSCHEDULABLE)
