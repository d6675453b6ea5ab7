"""Kubernetes Events (core/v1 Event shape) recorded for scheduling decisions, and the recorder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from podsched.api.types import (
    KIND_DEPLOYMENT,
    KIND_JOB,
    KIND_PDB,
    KIND_POD,
    KIND_POD_GROUP,
    KIND_REPLICA_SET,
    KIND_RESOURCE_QUOTA,
    ApiObject,
    Pod,
)

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


# The kinds whose events name a namespace (every kind but Node and PriorityClass).
NAMESPACED = frozenset(
    {KIND_POD, KIND_PDB, KIND_RESOURCE_QUOTA, KIND_REPLICA_SET, KIND_DEPLOYMENT, KIND_JOB, KIND_POD_GROUP}
)


def ref(obj: ApiObject) -> ObjectReference:
    namespace = obj.metadata.namespace if obj.kind in NAMESPACED else ""
    return ObjectReference(obj.kind, namespace, obj.metadata.name, obj.metadata.uid)


class EventRecorder:
    """The cluster's event log, as the Kubernetes event recorder keeps it: a repeat of an object's
    last event only bumps its count. `sequence` is an event's position in the cluster's whole event
    history; `events` holds the ones from `first_sequence` on (the log keeps events for a retention
    time, so a copy rebuilt from it starts where the log starts)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.events: list[Event] = []
        self.first_sequence = 0  # the sequence of events[0]
        # Called with every recorded Event, new or repeated (its count bumped).
        self.listeners: list[Callable[[Event], None]] = []

    def record(
        self,
        involved: ApiObject,
        type_: str,
        reason: str,
        message: str,
        controller: str = "",
        action: str = "",
        related: ApiObject | None = None,
    ) -> Event:
        """Record an Event; a repeat of the object's last event (same reason and message) only bumps
        its count, as the Kubernetes event recorder does. Without a controller the event is the
        scheduler's: reported under the scheduler name of the pod that acted (the preemptor for a
        victim's Preempted), as each kube-scheduler profile records with its own name."""
        if not controller:
            actor = related if related is not None else involved
            controller = actor.spec.scheduler_name if isinstance(actor, Pod) else SCHEDULER_CONTROLLER
        now = self.clock()
        involved_ref = ref(involved)
        for previous in reversed(self.events[-50:]):
            if previous.involved_object.uid == involved_ref.uid:
                if previous.reason == reason and previous.message == message:
                    previous.count += 1
                    previous.last_time = now
                    self._notify(previous)
                    return previous
                break
        event = Event(
            type_,
            reason,
            message,
            involved_ref,
            now,
            controller,
            action,
            ref(related) if related is not None else None,
            1,
            now,
            self.next_sequence,
        )
        self.events.append(event)
        self._notify(event)
        return event

    @property
    def next_sequence(self) -> int:
        """The sequence the next new event gets."""
        return self.first_sequence + len(self.events)

    def restore(self, event: Event) -> None:
        """Take one Event from the binder's log (a repeat carries the sequence it was first given).
        The first event restored into an empty log sets where it starts (older ones have expired);
        a repeat of an event older than that is dropped, as its first record was."""
        if not self.events and self.first_sequence == 0:
            self.first_sequence = event.sequence
        index = event.sequence - self.first_sequence
        if index < 0:
            return
        if index < len(self.events):
            self.events[index] = event
        elif index == len(self.events):
            self.events.append(event)
        else:
            raise ValueError(f"event sequence {event.sequence} skips {self.next_sequence}..{event.sequence - 1}")
        self._notify(event)

    def expire(self, before: float, keep_at_most: int | None = None) -> int:
        """Forget events first recorded before `before`, oldest first, as the events topic's retention
        forgets their records, and beyond the newest `keep_at_most`: a long-running copy then holds
        what a copy rebuilt from the log would, not every event since it started. The newest event
        is always kept (it says where the sequence continues). Returns how many were forgotten."""
        events = self.events
        count = 0 if keep_at_most is None else max(0, len(events) - max(keep_at_most, 1))
        while count < len(events) - 1 and events[count].event_time < before:
            count += 1
        if count:
            del events[:count]  # in place: the cluster's `events` is this list
            self.first_sequence += count
        return count

    def _notify(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)
