"""Between the pure core's types and the wire: Kafka records (podsched.events.v1), the internal
protos, and gRPC statuses. Kept in one place so every service reads and writes the same shapes."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress
from operator import attrgetter
from typing import Any

import grpc
from aiokafka.partitioner import DefaultPartitioner
from google.protobuf.timestamp_pb2 import Timestamp

from podsched.api import json_text
from podsched.api.codecs.pod import decode_recorded_pod, decode_recorded_pod_update
from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object, encode_json, parse_timestamp
from podsched.api.types import KIND_POD, ApiObject, Pod, PodDisruptionBudget, PodDisruptionBudgetStatus
from podsched.cluster import events as ev
from podsched.cluster.store import ADDED, MODIFIED, REMOVED, Change
from podsched.framework.interface import NodeToStatus
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Code, Status
from podsched_proto.events.v1 import events_pb2
from podsched_proto.filter.v1 import filter_pb2

OBJECTS_TOPIC = "podsched.objects.v1"
EVENTS_TOPIC = "podsched.events.v1"
# The key of the ResourceVersionMark records on the objects topic (never an object's key: those are
# "<kind>/<namespace>/<name>").
MARK_KEY = b"podsched.resource-version-mark"

_CHANGE_TYPES = {
    ADDED: events_pb2.ObjectChange.ADDED,
    MODIFIED: events_pb2.ObjectChange.MODIFIED,
    REMOVED: events_pb2.ObjectChange.DELETED,
}
_CHANGE_NAMES = {value: key for key, value in _CHANGE_TYPES.items()}


def topics(prefix: str) -> tuple[str, str]:
    """(objects topic, events topic) under a prefix."""
    return prefix + OBJECTS_TOPIC, prefix + EVENTS_TOPIC


_DEFAULT_PARTITIONER = DefaultPartitioner()


def record_partition(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
    """A producer's `partitioner`: aiokafka's default choice (murmur2 of the key, as the Java client
    hashes it), without computing the hash for a topic of one partition, where it can choose
    nothing. podsched's topics have one partition, and aiokafka's murmur2 is pure Python: about
    5 us for every record the binder writes."""
    if len(all_partitions) == 1:
        return all_partitions[0]
    return int(_DEFAULT_PARTITIONER(key, all_partitions, available))


# --- time ------------------------------------------------------------------------------------------


def to_timestamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    set_timestamp(stamp, seconds)
    return stamp


def set_timestamp(stamp: Timestamp, seconds: float) -> None:
    """Write `seconds` (since the epoch) into a Timestamp field in place."""
    whole = int(seconds // 1)
    stamp.seconds = whole
    stamp.nanos = round((seconds - whole) * 1e9) % 1_000_000_000


def from_timestamp(stamp: Timestamp) -> float:
    return stamp.seconds + stamp.nanos / 1e9


# --- objects -----------------------------------------------------------------------------------------


def object_key(obj: ApiObject) -> bytes:
    """The record key: one object's changes stay in one partition, in order."""
    return f"{obj.kind}/{obj.metadata.namespace}/{obj.metadata.name}".encode()


def to_json(obj: ApiObject) -> bytes:
    """The object's Kubernetes JSON, compact: the records' `object_json` (byte for byte what
    `json.dumps(encode_object(obj), separators=(",", ":"))` writes; `encode_json`)."""
    return encode_json(obj)


def reference(obj: ApiObject) -> events_pb2.ObjectReference:
    meta = obj.metadata
    return events_pb2.ObjectReference(kind=obj.kind, namespace=meta.namespace, name=meta.name, uid=meta.uid)


def set_reference(field: events_pb2.ObjectReference, kind: str, namespace: str, name: str, uid: str) -> None:
    """Write an ObjectReference into a message's field in place: one built apart and passed to the
    message's constructor is copied again into it."""
    field.kind = kind
    field.namespace = namespace
    field.name = name
    field.uid = uid


def change_message(
    change_type: str, obj: ApiObject, writer: str, now: float, object_json: bytes | None = None
) -> events_pb2.ObjectChange:
    """One change of `obj` (its state after the change; the last state for a deletion) as an
    ObjectChange: the Kafka record's value and the Watch stream's item. `object_json` is `to_json(obj)`
    when the caller has it already."""
    meta = obj.metadata
    message = events_pb2.ObjectChange(
        type=_CHANGE_TYPES[change_type],
        resource_version=meta.resource_version,
        object_json=to_json(obj) if object_json is None else object_json,
        writer=writer,
    )
    # The reference and the time written in place (one a record: 3.7 -> 2.5 us with its serialization).
    set_reference(message.object, obj.kind, meta.namespace, meta.name, meta.uid)
    set_timestamp(message.time, now)
    if isinstance(obj, Pod):
        message.node_name = obj.spec.node_name
        message.phase = obj.status.phase
        message.priority = obj.priority
        message.nominated_node_name = obj.status.nominated_node_name
    return message


def change_record(
    change: Change, writer: str, now: float, previous_version: int
) -> tuple[ApiObject, bytes, bytes, bytes]:
    """A cluster Change as (the object it records, key, serialized ObjectChange, the object's JSON).
    `previous_version` is the version of the change recorded just before it on the topic."""
    obj = change.new if change.new is not None else change.old
    assert obj is not None
    object_json = to_json(obj)
    message = change_message(change.type, obj, writer, now, object_json)
    message.previous_resource_version = previous_version
    return obj, object_key(obj), message.SerializeToString(), object_json


def mark_record(version: int) -> tuple[bytes, bytes]:
    """(key, value) of the ResourceVersionMark saying `version` is the last change recorded."""
    return MARK_KEY, events_pb2.ResourceVersionMark(resource_version=version).SerializeToString()


def mark_version(key: bytes | None, value: bytes | None) -> int | None:
    """The version a record of the objects topic marks, or None for a change or a tombstone."""
    if key != MARK_KEY or value is None:
        return None
    return int(events_pb2.ResourceVersionMark.FromString(value).resource_version)


def decode_change(value: bytes) -> tuple[str, ApiObject, int]:
    """A serialized ObjectChange as (change type, object, resource version). A DELETED record's
    object is the last state the object had."""
    return decode_change_message(events_pb2.ObjectChange.FromString(value))


def pending_pod_change(record: events_pb2.ObjectChange) -> bool:
    """A change that leaves a pod pending and not nominated: the record's own fields say so, without
    decoding its JSON."""
    return (
        record.object.kind == "Pod"
        and record.type != events_pb2.ObjectChange.DELETED
        and not record.node_name
        and not record.nominated_node_name
    )


def decode_change_message(record: events_pb2.ObjectChange, held: Pod | None = None) -> tuple[str, ApiObject, int]:
    """`decode_change` of a parsed ObjectChange. The record is the binder's, so a pod's JSON is
    decoded as the binder validated it (`decode_recorded_pod`), without checking it again; the
    first pod of each spec, and every other kind, go through `decode_object`. `held`: the pod as a
    replica's copy holds it, decoded from an earlier record of it and changed by nothing since;
    what of it the record leaves as it was is taken from it (`decode_recorded_pod_update`)."""
    document = json_text.loads_written(record.object_json)
    if record.object.kind == KIND_POD:
        pod = None if held is None else decode_recorded_pod_update(document, held)
        if pod is None:
            pod = decode_recorded_pod(document)
        if pod is not None:
            pod.metadata.resource_version = record.resource_version
            return _CHANGE_NAMES[record.type], pod, record.resource_version
    # Decoding drops a PDB's status (clients may not set it), but in the binder's log that status is
    # the disruption controller's, which every replica keeps. Taken out first: `owned=True` lets the
    # decoder take the document apart, status included. A ResourceQuota's status is dropped for good:
    # every copy derives usage from its own pods.
    status = document.get("status")
    obj = decode_object(document, owned=True)
    if isinstance(obj, PodDisruptionBudget):
        obj.status = pdb_status_from_json(status if isinstance(status, dict) else {})
    obj.metadata.resource_version = record.resource_version
    return _CHANGE_NAMES[record.type], obj, record.resource_version


def pdb_status_from_json(status: dict[str, Any]) -> PodDisruptionBudgetStatus:
    return PodDisruptionBudgetStatus(
        current_healthy=int(status.get("currentHealthy", 0)),
        desired_healthy=int(status.get("desiredHealthy", 0)),
        disruptions_allowed=int(status.get("disruptionsAllowed", 0)),
        expected_pods=int(status.get("expectedPods", 0)),
        disrupted_pods={name: parse_timestamp(moment) for name, moment in (status.get("disruptedPods") or {}).items()},
        observed_generation=int(status.get("observedGeneration", 0)),
    )


# --- events ------------------------------------------------------------------------------------------


def _ref_from_proto(ref: events_pb2.ObjectReference) -> ev.ObjectReference:
    return ev.ObjectReference(ref.kind, ref.namespace, ref.name, ref.uid)


def event_to_proto(event: ev.Event) -> events_pb2.Event:
    message = events_pb2.Event(
        type=event.type,
        reason=event.reason,
        message=event.message,
        reporting_controller=event.reporting_controller,
        action=event.action,
        count=event.count,
        sequence=event.sequence,
    )
    # The references and times written in place (one an event: 4.4 -> 2.9 us with its serialization).
    involved = event.involved_object
    set_reference(message.involved_object, involved.kind, involved.namespace, involved.name, involved.uid)
    set_timestamp(message.event_time, event.event_time)
    set_timestamp(message.last_time, event.last_time)
    related = event.related
    if related is not None:
        set_reference(message.related, related.kind, related.namespace, related.name, related.uid)
    return message


def event_from_proto(message: events_pb2.Event) -> ev.Event:
    return ev.Event(
        message.type,
        message.reason,
        message.message,
        _ref_from_proto(message.involved_object),
        from_timestamp(message.event_time),
        message.reporting_controller,
        message.action,
        _ref_from_proto(message.related) if message.HasField("related") else None,
        message.count,
        from_timestamp(message.last_time),
        message.sequence,
    )


def event_record(event: ev.Event) -> tuple[bytes, bytes]:
    """An Event as (key, serialized Event): keyed by the involved object's UID."""
    return event.involved_object.uid.encode(), event_to_proto(event).SerializeToString()


# --- Filter outcome <-> NodeToStatus -------------------------------------------------------------------


def status_groups(diagnosis: NodeToStatus) -> list[filter_pb2.NodeStatusGroup]:
    """Per-node statuses grouped by identical status, each group's nodes in visiting order."""
    # Nodes failing for one reason usually share one Status object (the vectorized cycle interns
    # them): each object's group is looked up once, and each group's names go into the message at once.
    names_by_key: dict[tuple[int, tuple[str, ...], str], list[str]] = {}
    names_by_object: dict[int, list[str]] = {}
    for node_name, status in diagnosis.statuses.items():
        names = names_by_object.get(id(status))
        if names is None:
            key = (int(status.code), tuple(status.reasons), status.plugin)
            names = names_by_object[id(status)] = names_by_key.setdefault(key, [])
        names.append(node_name)
    return [
        filter_pb2.NodeStatusGroup(code=code, reasons=reasons, plugin=plugin, node_names=names)
        for (code, reasons, plugin), names in names_by_key.items()
    ]


def node_to_status(groups: Sequence[filter_pb2.NodeStatusGroup], absent: filter_pb2.NodeStatusGroup) -> NodeToStatus:
    """The inverse of `status_groups`: nodes keep their visiting order within each group; the order
    across groups does not matter to PostFilter (it walks nodes in snapshot order)."""
    absent_status = Status(Code(absent.code), list(absent.reasons), absent.plugin) if absent.code else None
    return StatusGroups(
        [(Status(Code(group.code), list(group.reasons), group.plugin), group.node_names) for group in groups],
        absent_status,
    )


_NAME = attrgetter("name")


class StatusGroups(NodeToStatus):
    """A diagnosis as the filter service sends it, a few groups of nodes that share one status (a
    node in one group at most), read as such: the nodes PostFilter may help and the FitError
    histogram come from the groups, and the map of every node is built only if a reader asks for
    it (a node's own status: a nominated preemptor's, or a write)."""

    __slots__ = ("_groups",)

    def __init__(self, groups: list[tuple[Status, Sequence[str]]], absent: Status | None) -> None:
        super().__init__(absent)
        self._statuses: dict[str, Status] | None = None  # type: ignore[assignment]
        self._groups = groups

    @property
    def statuses(self) -> dict[str, Status]:
        if self._statuses is None:
            statuses: dict[str, Status] = {}
            for status, names in self._groups:
                statuses.update(dict.fromkeys(names, status))
            self._statuses = statuses
        return self._statuses

    @statuses.setter
    def statuses(self, statuses: dict[str, Status]) -> None:
        self._statuses = statuses

    def nodes_with_code(self, code: Code, all_nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
        if self._statuses is not None:  # the map may have changed
            return super().nodes_with_code(code, all_nodes)
        if self.absent.code == code:  # every node but those of groups with another code
            other = set(chain.from_iterable(names for status, names in self._groups if status.code != code))
            return [node for node in all_nodes if node.name not in other]
        matching = set(chain.from_iterable(names for status, names in self._groups if status.code == code))
        return list(compress(all_nodes, map(matching.__contains__, map(_NAME, all_nodes))))

    def reason_counts(self, num_all_nodes: int) -> dict[str, int]:
        if self._statuses is not None:
            return super().reason_counts(num_all_nodes)
        counts: dict[str, int] = {}
        recorded = 0
        for status, names in self._groups:
            recorded += len(names)
            for reason in status.reasons if names else ():
                counts[reason] = counts.get(reason, 0) + len(names)
        self._count_absent(counts, num_all_nodes - recorded)
        return counts


# --- errors --------------------------------------------------------------------------------------------

_CODES = {
    "Invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "BadRequest": grpc.StatusCode.INVALID_ARGUMENT,
    # Admission refusals (Kubernetes 403 from an admission plugin); authorization uses PERMISSION_DENIED.
    "Forbidden": grpc.StatusCode.FAILED_PRECONDITION,
    # An admission plugin's plain error (no reason; upstream's `insufficient quota to match these
    # scopes`): a refusal like Forbidden, not a fault to retry.
    "": grpc.StatusCode.FAILED_PRECONDITION,
    "AlreadyExists": grpc.StatusCode.ALREADY_EXISTS,
    "NotFound": grpc.StatusCode.NOT_FOUND,
    "Conflict": grpc.StatusCode.ABORTED,
}


def status_code(error: ApiError) -> grpc.StatusCode:
    return _CODES.get(error.reason, grpc.StatusCode.INVALID_ARGUMENT)


_CODE_OF_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def status_code_of(number: int) -> grpc.StatusCode:
    """The gRPC status code a per-item result field holds as its number (ApplyResult, WriteOutcome)."""
    return _CODE_OF_NUMBER.get(number, grpc.StatusCode.UNKNOWN)
