"""NodePorts: a requested hostPort must be free on the node."""

from __future__ import annotations

from collections.abc import Sequence

from podsched.api.types import Pod
from podsched.framework.cycle_state import CycleState
from podsched.framework.events import ASSIGNED_POD_DELETE, NODE_ADD, ClusterEventWithHint
from podsched.framework.interface import PreFilterExtensions, PreFilterResult
from podsched.framework.node_info import NodeInfo, pod_host_ports
from podsched.framework.status import Code, Status
from podsched.plugins import names

ERR_REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
_STATE_KEY = "PreFilter" + names.NODE_PORTS


class NodePorts:
    name = names.NODE_PORTS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable."""
        return [ClusterEventWithHint(NODE_ADD), ClusterEventWithHint(ASSIGNED_POD_DELETE)]

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        ports = pod_host_ports(pod)
        if not ports:
            return None, Status(Code.SKIP)
        state.write(_STATE_KEY, ports)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        ports = state.get(_STATE_KEY)
        if ports is None:
            ports = pod_host_ports(pod)
        if ports and node_info.port_conflicts(ports):
            return Status.unschedulable(self.name, ERR_REASON_PORTS)
        return None
