"""Kubernetes Events (core/v1 Event shape) recorded for scheduling decisions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NORMAL = "Normal"
WARNING = "Warning"

# Reasons, declared once.
SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"
PREEMPTED = "Preempted"
NOMINATED = "Nominated"
NOMINATION_CLEARED = "NominationCleared"
KILLING = "Killing"
DELETED = "Deleted"
OUT_OF_RESOURCES = "OutOfResources"

SCHEDULER_CONTROLLER = "default-scheduler"
BINDER_CONTROLLER = "podsched-binder"
NODE_AGENT_CONTROLLER = "kubelet"


@dataclass(frozen=True, slots=True)
class ObjectReference:
    kind: str
    namespace: str
    name: str
    uid: str

    def to_dict(self) -> dict[str, str]:
        out = {"kind": self.kind, "name": self.name, "uid": self.uid}
        if self.namespace:
            out["namespace"] = self.namespace
        return out


@dataclass(slots=True)
class Event:
    type: str
    reason: str
    message: str
    involved_object: ObjectReference
    event_time: float
    reporting_controller: str
    action: str = ""
    related: ObjectReference | None = None
    count: int = 1
    last_time: float = 0.0
    sequence: int = 0  # position in the cluster's event log, for ordering and gap detection

    def to_dict(self, format_time: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "type": self.type,
            "reason": self.reason,
            "message": self.message,
            "involvedObject": self.involved_object.to_dict(),
            "eventTime": format_time(self.event_time),
            "reportingController": self.reporting_controller,
            "count": self.count,
        }
        if self.action:
            out["action"] = self.action
        if self.related is not None:
            out["related"] = self.related.to_dict()
        if self.count > 1:
            out["lastTimestamp"] = format_time(self.last_time)
        return out
