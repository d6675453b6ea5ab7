"""NodeName: a pod that names a node (spec.nodeName set before scheduling) fits only there."""

from __future__ import annotations

from podsched.api.types import Pod
from podsched.framework.cycle_state import CycleState
from podsched.framework.events import NODE_ADD, ClusterEventWithHint
from podsched.framework.interface import NodeSignature
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Status
from podsched.plugins import names

ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name"


class NodeName:
    name = names.NODE_NAME

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable."""
        return [ClusterEventWithHint(NODE_ADD)]

    def sign_pod(self, pod: Pod) -> NodeSignature:
        """The verdict reads spec.nodeName and, when it is set, the node's name."""
        return NodeSignature(pod.spec.node_name, None if pod.spec.node_name else ())

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if pod.spec.node_name and pod.spec.node_name != node_info.name:
            return Status.unresolvable(self.name, ERR_REASON_NODE_NAME)
        return None
