"""FitError: the `0/3 nodes are available: ...` message, formatted in one place exactly as upstream."""

from __future__ import annotations

from dataclasses import dataclass

from podsched.framework.interface import NodeToStatus

NO_NODE_AVAILABLE_FORMAT = "0/{} nodes are available"


@dataclass(slots=True)
class FitError:
    num_all_nodes: int
    node_to_status: NodeToStatus
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def reason_histogram(self) -> dict[str, int]:
        """Each node contributes each of its status reasons once; nodes absent from the map
        contribute the absent status' reasons."""
        return self.node_to_status.reason_counts(self.num_all_nodes)

    def message(self) -> str:
        message = NO_NODE_AVAILABLE_FORMAT.format(self.num_all_nodes) + ":"
        if self.pre_filter_msg:
            # A PreFilter rejection is copied onto every node; counting it again would repeat it.
            message += f" {self.pre_filter_msg}."
        else:
            histogram = sorted(f"{count} {reason}" for reason, count in self.reason_histogram().items())
            if histogram:
                message += f" {', '.join(histogram)}."
        if self.post_filter_msg:
            message += f" {self.post_filter_msg}."
        return message
