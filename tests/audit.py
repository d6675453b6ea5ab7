"""Auditor of the Kafka log: proves from what was written that no acknowledged write is lost or duplicated,
no node is ever overcommitted, no pod is bound twice and every victim has lower priority than its preemptor.

The crash-safety tests kill services (or all of them) at arbitrary moments and then need to know whether
anything unsafe ever happened, not merely whether the final state looks right: a node overcommitted for one
record and then repaired, or a pod bound twice to the same place after a replayed transaction, leaves no trace
in the final state. The log is the only complete history (the binder is its single writer and writes in
transactions), so this module reads it back in full and replays it:

- `read_log` reads both topics from the beginning to their end offsets with read_committed, so aborted
  transactions of a killed binder are invisible, as they are to every real consumer.
- The objects topic is compacted and the events topic has a retention time, so "in full" means what Kafka
  still holds. Each change names the version recorded before it (`previous_resource_version`): where a
  record's predecessor is not the record read before it, compaction removed changes in between. Checks that
  need the whole history of an object (created before any other change, victims recorded) are made for
  the part of the log before the first such gap and relaxed after it; the checks on what remains (versions
  strictly increase and never go back below the last recorded one, bindings, node capacity, event counts)
  hold over the whole log. Events are numbered from where the events topic starts.
- `audit` checks the invariants over a `Log` and returns human-readable violations naming the object
  (an empty list means the log is clean). It is pure, so its logic is unit-tested over hand-built logs.
- `final_pods` and `pending_reasons` summarize where the replay ends, so a test can assert that every pod
  is either bound or pending for a stated reason (liveness after a restart).
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import UnknownTopicOrPartitionError

from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object
from podsched.api.types import KIND_NODE, KIND_POD, POD_FAILED, POD_SUCCEEDED, Node, Pod, Resource
from podsched.framework.resource import pod_requests
from podsched_proto.events.v1.events_pb2 import Event, ObjectChange, ResourceVersionMark

OBJECTS_TOPIC = "podsched.objects.v1"
MARK_KEY = b"podsched.resource-version-mark"  # podsched_service.codec.MARK_KEY, as a consumer would spell it
EVENTS_TOPIC = "podsched.events.v1"

ADDED = ObjectChange.ADDED
MODIFIED = ObjectChange.MODIFIED
DELETED = ObjectChange.DELETED

FAILED_SCHEDULING = "FailedScheduling"
PREEMPTED = "Preempted"
SCHEDULED = "Scheduled"

UNKNOWN_TOPIC_OR_PARTITION = UnknownTopicOrPartitionError.errno

# Phases in which a bound pod no longer holds its node's resources (the node agent has stopped it).
TERMINAL_PHASES = frozenset({POD_FAILED, POD_SUCCEEDED})


@dataclass(slots=True)
class Log:
    """What the cluster wrote, as every read_committed consumer sees it.

    `changes` are the ObjectChange records in offset order (one partition: the binder's total order);
    `change_offsets` are their offsets, parallel to `changes`, or empty for a hand-built log (messages then
    say "record #i"). `events` are the Event records, partition by partition in offset order (one object's
    events share a key, so they are in order among themselves). `problems` are records that could not be
    decoded or a topic layout that breaks the total order; `audit` reports them as violations."""

    changes: list[ObjectChange] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    change_offsets: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Index into `changes` of the first record after a gap compaction left (len(changes) if none): before
    # it the log is the whole history.
    first_gap: int | None = None
    # The ResourceVersionMark values in offset order, with the index of the change they follow.
    marks: list[tuple[int, int]] = field(default_factory=list)
    # Tombstones (deletions whose records compaction may remove) read on the objects topic.
    tombstones: int = 0
    # The events topic no longer starts at offset 0: retention removed its oldest events.
    events_trimmed: bool = False

    @property
    def gap_index(self) -> int:
        return len(self.changes) if self.first_gap is None else self.first_gap

    @property
    def compacted(self) -> bool:
        return self.gap_index < len(self.changes)


@dataclass(slots=True)
class PodState:
    """A pod's last recorded state (for a deleted pod, the state it had when it went)."""

    uid: str
    namespace: str
    name: str
    node_name: str = ""
    phase: str = ""
    priority: int = 0
    nominated_node_name: str = ""
    deleted: bool = False
    terminating: bool = False  # metadata.deletionTimestamp set, not yet DELETED

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.name} (uid {self.uid})"


# --- reading -----------------------------------------------------------------------------------------------


async def read_log(bootstrap: str, prefix: str, timeout: float = 30) -> Log:
    """Read `{prefix}podsched.objects.v1` and `{prefix}podsched.events.v1` from offset 0 to the end offsets
    they have now (the last stable offsets, under read_committed), and decode every record.

    Records committed after the end offsets were taken are left out, so the result is a snapshot; a topic
    that does not exist yet reads as empty. Raises TimeoutError naming the lagging partitions if the ends
    are not reached within `timeout` seconds (a hung broker must fail the test, not hang it)."""
    objects_topic, events_topic = prefix + OBJECTS_TOPIC, prefix + EVENTS_TOPIC
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    records: dict[TopicPartition, list[tuple[int, bytes | None, bytes | None]]] = defaultdict(list)
    ends: dict[TopicPartition, int] = {}
    starts: dict[TopicPartition, int] = {}
    positions: dict[TopicPartition, int] = {}
    try:
        async with asyncio.timeout(timeout):
            partitions = await _partitions(bootstrap, [objects_topic, events_topic])
            if partitions:
                consumer.assign(partitions)
                await consumer.seek_to_beginning(*partitions)
                ends = await consumer.end_offsets(partitions)
                starts = await consumer.beginning_offsets(partitions)
                positions = {tp: await consumer.position(tp) for tp in partitions}
                while lagging := [tp for tp in partitions if positions[tp] < ends[tp]]:
                    batch = await consumer.getmany(*lagging, timeout_ms=500)
                    for tp, batch_records in batch.items():
                        records[tp].extend((r.offset, r.key, r.value) for r in batch_records if r.offset < ends[tp])
                    # Control records (transaction markers) and aborted records move the position without
                    # being returned, so the position, not the record count, tells when the end is reached.
                    for tp in lagging:
                        positions[tp] = await consumer.position(tp)
    except TimeoutError:
        lag = ", ".join(f"{tp.topic}[{tp.partition}] at {positions.get(tp)} of {end}" for tp, end in ends.items())
        raise TimeoutError(f"read_log: end offsets not reached within {timeout}s: {lag or 'no metadata'}") from None
    finally:
        await consumer.stop()
    log = _decode(records, objects_topic, events_topic)
    log.events_trimmed = any(offset > 0 for tp, offset in starts.items() if tp.topic == events_topic)
    return log


async def _partitions(bootstrap: str, topics: list[str]) -> list[TopicPartition]:
    """Every partition of the topics that exist. Asked of the admin client: the consumer's own metadata only
    knows topics it has been told about, and asking it would not say whether a topic exists."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(topics)
    finally:
        await admin.close()
    partitions: list[TopicPartition] = []
    for topic in described:
        if topic["error_code"] == UNKNOWN_TOPIC_OR_PARTITION:
            continue
        if topic["error_code"] != 0:
            raise RuntimeError(f"read_log: describing topic {topic['topic']} failed with error {topic['error_code']}")
        partitions += [
            TopicPartition(topic["topic"], p["partition"])
            for p in sorted(topic["partitions"], key=lambda p: p["partition"])
        ]
    return partitions


def _decode(
    records: dict[TopicPartition, list[tuple[int, bytes | None, bytes | None]]], objects_topic: str, events_topic: str
) -> Log:
    log = Log()
    object_partitions = sorted(tp.partition for tp in records if tp.topic == objects_topic)
    if len(object_partitions) > 1:
        log.problems.append(
            f"{objects_topic} has records in partitions {object_partitions}: the writer's total order needs one"
        )
    for tp in sorted(records, key=lambda tp: (tp.topic != objects_topic, tp.partition)):
        for offset, key, value in records[tp]:
            where = f"{tp.topic}[{tp.partition}]@{offset}"
            try:
                if value is None and tp.topic == objects_topic:
                    log.tombstones += 1
                    continue
                if value is None:
                    raise ValueError("null value")
                if tp.topic == objects_topic and key == MARK_KEY:
                    log.marks.append((len(log.changes), ResourceVersionMark.FromString(value).resource_version))
                elif tp.topic == objects_topic:
                    change = ObjectChange.FromString(value)
                    previous = log.changes[-1].resource_version if log.changes else 0
                    if log.first_gap is None and change.previous_resource_version != previous:
                        log.first_gap = len(log.changes)  # changes between the two were compacted away
                    log.changes.append(change)
                    log.change_offsets.append(offset)
                else:
                    log.events.append(Event.FromString(value))
            except Exception as exc:  # a corrupt record is a finding, not a reason to stop reading
                log.problems.append(f"{where}: cannot decode record: {exc}")
    return log


# --- replay helpers ----------------------------------------------------------------------------------------


def _where(log: Log, index: int) -> str:
    if index < len(log.change_offsets):
        return f"offset {log.change_offsets[index]}"
    return f"record #{index}"


def _ref_label(change: ObjectChange) -> str:
    ref = change.object
    name = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
    return f"{ref.kind} {name} (uid {ref.uid})"


def _type_name(change: ObjectChange) -> str:
    return ObjectChange.Type.Name(change.type)


def _decode_objects(log: Log) -> tuple[list[Pod | Node | None], list[str]]:
    """Pods and Nodes of every change, parallel to log.changes (None for other kinds and undecodable ones)."""
    objects: list[Pod | Node | None] = []
    violations: list[str] = []
    for i, change in enumerate(log.changes):
        obj: Pod | Node | None = None
        if change.object.kind in (KIND_POD, KIND_NODE):
            try:
                decoded = decode_object(json.loads(change.object_json))
            except (ApiError, ValueError, TypeError) as exc:
                violations.append(f"{_where(log, i)}: {_ref_label(change)}: object_json does not decode: {exc}")
            else:
                if isinstance(decoded, Pod | Node):
                    obj = decoded
                else:
                    violations.append(f"{_where(log, i)}: {_ref_label(change)}: object_json holds a {decoded.kind}")
        objects.append(obj)
    return objects, violations


def _holds_resources(change: ObjectChange, pod: Pod) -> bool:
    """Bound (or terminating) and not yet gone: what the binder must count against the node."""
    return change.type != DELETED and bool(pod.spec.node_name) and pod.status.phase not in TERMINAL_PHASES


def _fmt(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value}m"
    return str(value)


def _overcommitted(pods: dict[str, tuple[str, Resource]], allocatable: Resource) -> dict[str, tuple[int, int]]:
    """{resource: (requested, allocatable)} for every resource the pods on a node exceed."""
    total = Resource()
    for _, request in pods.values():
        total.add(request)
    over: dict[str, tuple[int, int]] = {}
    if len(pods) > allocatable.allowed_pod_number:
        over["pods"] = (len(pods), allocatable.allowed_pod_number)
    for name, requested, offered in (
        ("cpu", total.milli_cpu, allocatable.milli_cpu),
        ("memory", total.memory, allocatable.memory),
        ("ephemeral-storage", total.ephemeral_storage, allocatable.ephemeral_storage),
        *((name, value, allocatable.scalar.get(name, 0)) for name, value in total.scalar.items()),
    ):
        if requested > offered:
            over[name] = (requested, offered)
    return over


# --- checks ------------------------------------------------------------------------------------------------


def check_resource_versions(log: Log) -> list[str]:
    """Invariant 1: resource versions strictly increase in offset order. A repeated or lower version means a
    write was applied twice (a replayed transaction) or written out of order. On a compacted log also: each
    change's predecessor is not older than a version already read (a writer that rebuilt from a compacted
    log and lost track of the newest version would name an older one, then reuse versions), and no
    ResourceVersionMark is below a change before it."""
    violations: list[str] = []
    previous: int | None = None
    marks = dict(log.marks)
    highest_mark = 0
    for i, change in enumerate(log.changes):
        if i in marks:
            highest_mark = max(highest_mark, marks[i])
        if previous is not None and change.resource_version <= previous:
            violations.append(
                f"{_where(log, i)}: {_ref_label(change)} {_type_name(change)} has resource_version "
                f"{change.resource_version}, not greater than the previous record's {previous}"
            )
        if change.resource_version <= highest_mark:
            violations.append(
                f"{_where(log, i)}: {_ref_label(change)} {_type_name(change)} has resource_version "
                f"{change.resource_version}, not greater than the ResourceVersionMark {highest_mark} before it"
            )
        if change.previous_resource_version and (  # 0: the first change, or written before the field existed
            change.previous_resource_version >= change.resource_version
            or (previous is not None and change.previous_resource_version < previous)
        ):
            violations.append(
                f"{_where(log, i)}: {_ref_label(change)} {_type_name(change)} at resource_version "
                f"{change.resource_version} names {change.previous_resource_version} as the change before it, "
                f"but {previous} was already recorded"
            )
        previous = change.resource_version if previous is None else max(previous, change.resource_version)
    for index, version in log.marks:
        newest = max((c.resource_version for c in log.changes[:index]), default=0)
        if version < newest:
            violations.append(f"ResourceVersionMark {version} after change {index} is below its version {newest}")
    return violations


def check_lifecycles(log: Log) -> list[str]:
    """Invariant 1 (nothing duplicated or lost): each uid is ADDED once, before any other change, and
    changes no more after DELETED; a name is held by one live uid at a time (a re-created object has a new
    uid, and re-applying an existing one is a MODIFIED, not a second ADDED). After a compaction gap a uid's
    first record may be a later one: its ADDED was compacted away (superseded by that record)."""
    violations: list[str] = []
    added: set[str] = set()
    deleted: set[str] = set()
    live_uid: dict[tuple[str, str, str], str] = {}
    for i, change in enumerate(log.changes):
        ref, where, label = change.object, _where(log, i), _ref_label(change)
        key = (ref.kind, ref.namespace, ref.name)
        if change.type == ADDED:
            if ref.uid in added:
                violations.append(f"{where}: {label} ADDED again (a uid is created once)")
            holder = live_uid.get(key)
            if holder is not None and holder != ref.uid:
                violations.append(f"{where}: {label} ADDED while uid {holder} of the same name is still live")
            added.add(ref.uid)
            live_uid[key] = ref.uid
        elif ref.uid not in added and i >= log.gap_index:
            added.add(ref.uid)  # its ADDED was superseded and compacted away
            live_uid.setdefault(key, ref.uid)
        elif ref.uid not in added:
            violations.append(f"{where}: {label} {_type_name(change)} before any ADDED record (lost create?)")
        if ref.uid in deleted:
            violations.append(f"{where}: {label} {_type_name(change)} after it was DELETED")
        if change.type == DELETED:
            deleted.add(ref.uid)
            if live_uid.get(key) == ref.uid:
                del live_uid[key]
    return violations


def check_bindings(log: Log, objects: list[Pod | Node | None] | None = None) -> list[str]:
    """Invariant 2: no pod is bound twice. Once a pod's spec.nodeName is set it never changes (neither to
    another node nor back to empty), and a pod gets at most one Scheduled event (count bumps aside)."""
    if objects is None:
        objects, _ = _decode_objects(log)
    violations: list[str] = []
    bound_to: dict[str, str] = {}
    for i, (change, obj) in enumerate(zip(log.changes, objects, strict=True)):
        if not isinstance(obj, Pod):
            continue
        uid, node = change.object.uid, obj.spec.node_name
        first = bound_to.get(uid)
        if first is None:
            if node:
                bound_to[uid] = node
        elif node != first:
            shown = f'"{node}"' if node else "no node"
            violations.append(
                f"{_where(log, i)}: Pod {change.object.namespace}/{change.object.name} (uid {uid}) was bound to "
                f'node "{first}", then {_type_name(change)} shows {shown}: bound twice'
            )
            bound_to[uid] = node or first
    scheduled: dict[str, set[int]] = defaultdict(set)
    names: dict[str, str] = {}
    for event in log.events:
        if event.reason == SCHEDULED:
            ref = event.involved_object
            scheduled[ref.uid].add(event.sequence)
            names[ref.uid] = f"{ref.namespace}/{ref.name}"
    for uid, sequences in scheduled.items():
        if len(sequences) > 1:
            violations.append(
                f"Pod {names[uid]} (uid {uid}) has {len(sequences)} Scheduled events "
                f"(sequences {sorted(sequences)}): bound twice"
            )
    return violations


def check_node_capacity(log: Log, objects: list[Pod | Node | None] | None = None) -> list[str]:
    """Invariant 2: no node is ever overcommitted. Replays the log in order, keeping per node the requests of
    pods that are bound or terminating (nodeName set, not DELETED, phase not Failed/Succeeded), and checks
    pod count, cpu, memory, ephemeral storage and extended resources against the node's allocatable as of
    that record. Reports each time a node starts exceeding a resource (not every record while it does)."""
    if objects is None:
        objects, _ = _decode_objects(log)
    violations: list[str] = []
    allocatable: dict[str, Resource] = {}
    on_node: dict[str, dict[str, tuple[str, Resource]]] = defaultdict(dict)
    node_of: dict[str, str] = {}
    reported: dict[str, set[str]] = defaultdict(set)

    def check(node: str, i: int, change: ObjectChange) -> None:
        if node not in allocatable:  # unknown or deleted node: its pods cannot run, nothing to compare with
            reported.pop(node, None)
            return
        pods = on_node[node]
        over = _overcommitted(pods, allocatable[node])
        for resource, (requested, offered) in over.items():
            if resource not in reported[node]:
                holders = ", ".join(sorted(label for label, _ in pods.values()))
                violations.append(
                    f'{_where(log, i)}: node "{node}" overcommitted on {resource} after {_ref_label(change)} '
                    f"{_type_name(change)}: requested {_fmt(resource, requested)} > allocatable "
                    f"{_fmt(resource, offered)} (pods {holders})"
                )
        reported[node] = set(over)

    for i, (change, obj) in enumerate(zip(log.changes, objects, strict=True)):
        if isinstance(obj, Node):
            name = change.object.name
            if change.type == DELETED:
                allocatable.pop(name, None)
            else:
                allocatable[name] = obj.status.allocatable
            check(name, i, change)
        elif isinstance(obj, Pod):
            uid = change.object.uid
            previous = node_of.pop(uid, None)
            if previous is not None:
                on_node[previous].pop(uid, None)
            if _holds_resources(change, obj):
                node = obj.spec.node_name
                on_node[node][uid] = (f"{obj.namespace}/{obj.name}", pod_requests(obj))
                node_of[uid] = node
                check(node, i, change)
            if previous is not None and previous != node_of.get(uid):
                check(previous, i, change)
    return violations


def check_preemptions(log: Log) -> list[str]:
    """Invariant 2: a victim always has lower priority than its preemptor. Priorities come from the pods'
    records (spec.priority is immutable, so every record of a uid must agree); a Preempted event naming a
    pod the log never recorded, or with no preemptor, is itself a violation, except on a compacted log, where
    a deleted pod's records are gone: the pair is then checked only if both pods are still recorded."""
    violations: list[str] = []
    priorities: dict[str, set[int]] = defaultdict(set)
    for change in log.changes:
        if change.object.kind == KIND_POD:
            priorities[change.object.uid].add(change.priority)
    for uid, values in priorities.items():
        if len(values) > 1:
            violations.append(f"Pod uid {uid} is recorded with different priorities {sorted(values)}")
    seen: set[tuple[int, str]] = set()
    for event in log.events:
        if event.reason != PREEMPTED or (event.sequence, event.involved_object.uid) in seen:
            continue
        seen.add((event.sequence, event.involved_object.uid))
        victim, preemptor = event.involved_object, event.related
        victim_label = f"victim {victim.namespace}/{victim.name} (uid {victim.uid})"
        if not event.HasField("related") or not preemptor.uid:
            violations.append(f"Preempted event #{event.sequence} on {victim_label} names no preemptor")
            continue
        preemptor_label = f"preemptor {preemptor.namespace}/{preemptor.name} (uid {preemptor.uid})"
        missing = [
            label for label, ref in ((victim_label, victim), (preemptor_label, preemptor)) if ref.uid not in priorities
        ]
        if missing:
            if not log.compacted:
                violations.append(f"Preempted event #{event.sequence}: no pod records for {' and '.join(missing)}")
            continue
        victim_priority, preemptor_priority = max(priorities[victim.uid]), min(priorities[preemptor.uid])
        if victim_priority >= preemptor_priority:
            violations.append(
                f"Preempted event #{event.sequence}: {victim_label} has priority {victim_priority}, not lower "
                f"than {preemptor_label} with priority {preemptor_priority}"
            )
    return violations


def check_event_sequences(log: Log) -> list[str]:
    """Events are numbered 0..max with no gap (a gap is a lost event); once retention has removed the oldest,
    from the first event still recorded for the first time (count 1). A sequence may appear more than once
    only as a count bump: same reason and involved object, with a strictly higher count each time."""
    violations: list[str] = []
    by_sequence: dict[int, list[Event]] = defaultdict(list)
    for event in log.events:
        by_sequence[event.sequence].append(event)
    originals = [sequence for sequence, events in by_sequence.items() if events[0].count == 1]
    first = min(originals, default=0) if log.events_trimmed else 0
    if by_sequence:
        missing = sorted(set(range(first, max(by_sequence) + 1)) - set(by_sequence))
        if missing:
            shown = ", ".join(map(str, missing[:20])) + (f" ... ({len(missing)} in all)" if len(missing) > 20 else "")
            violations.append(f"event sequence has gaps: missing {shown} of {first}..{max(by_sequence)}")
    for sequence, events in sorted(by_sequence.items()):
        first = events[0]
        label = f"{first.involved_object.namespace}/{first.involved_object.name} (uid {first.involved_object.uid})"
        counts = [first.count]
        for later in events[1:]:
            if (later.reason, later.involved_object.uid) != (first.reason, first.involved_object.uid):
                violations.append(
                    f"event sequence {sequence} used twice: {first.reason} on {label} and {later.reason} on "
                    f"{later.involved_object.namespace}/{later.involved_object.name} "
                    f"(uid {later.involved_object.uid})"
                )
            else:
                counts.append(later.count)
        if any(b <= a for a, b in pairwise(counts)):
            violations.append(
                f"event sequence {sequence} ({first.reason} on {label}) re-published without a count bump: "
                f"counts {counts}"
            )
    return violations


def check_acknowledged(log: Log, acknowledged: Iterable[tuple[str, str, str]]) -> list[str]:
    """Invariant 1: every write acknowledged to a client is in Kafka, i.e. has an ADDED record (on a compacted
    log, any record: its ADDED may have been superseded; an object deleted since may have no record left, so
    a test lists only objects it did not delete)."""
    added = {
        (c.object.kind, c.object.namespace, c.object.name)
        for i, c in enumerate(log.changes)
        if c.type == ADDED or (log.compacted and i >= log.gap_index)
    }
    violations: list[str] = []
    for kind, namespace, name in acknowledged:
        if (kind, namespace, name) not in added:
            shown = f"{namespace}/{name}" if namespace else name
            violations.append(f"acknowledged {kind} {shown} has no ADDED record (lost write)")
    return violations


def audit(log: Log, acknowledged: Iterable[tuple[str, str, str]] = ()) -> list[str]:
    """Every violation of the durability and safety invariants in `log`, worded to name the pod or node;
    an empty list means the log is clean. `acknowledged` is (kind, namespace, name) of each write the test
    got an acknowledgement for ("" namespace for cluster-scoped kinds)."""
    objects, violations = _decode_objects(log)
    violations = list(log.problems) + violations
    violations += check_resource_versions(log)
    violations += check_lifecycles(log)
    violations += check_bindings(log, objects)
    violations += check_node_capacity(log, objects)
    violations += check_preemptions(log)
    violations += check_event_sequences(log)
    violations += check_acknowledged(log, acknowledged)
    return violations


# --- final state -------------------------------------------------------------------------------------------


def final_pods(log: Log) -> dict[str, PodState]:
    """Each pod uid's last recorded state, deleted pods included (with deleted=True)."""
    pods: dict[str, PodState] = {}
    for change in log.changes:
        ref = change.object
        if ref.kind != KIND_POD:
            continue
        terminating = False
        try:
            metadata = json.loads(change.object_json).get("metadata") or {}
            terminating = bool(metadata.get("deletionTimestamp"))
        except (ValueError, AttributeError):
            pass  # audit() reports undecodable JSON; the summary fields still say where the pod is
        pods[ref.uid] = PodState(
            uid=ref.uid,
            namespace=ref.namespace,
            name=ref.name,
            node_name=change.node_name,
            phase=change.phase,
            priority=change.priority,
            nominated_node_name=change.nominated_node_name,
            deleted=change.type == DELETED,
            terminating=terminating and change.type != DELETED,
        )
    return pods


def pending_reasons(log: Log) -> dict[str, str]:
    """For each pod that ends unbound and not deleted: its latest FailedScheduling message ("" if it has
    none), so a test can assert that every pod is either bound or pending for a stated reason."""
    latest: dict[str, tuple[int, int, str]] = {}
    for event in log.events:
        if event.reason == FAILED_SCHEDULING:
            uid = event.involved_object.uid
            candidate = (event.sequence, event.count, event.message)
            if uid not in latest or candidate[:2] >= latest[uid][:2]:
                latest[uid] = candidate
    return {
        uid: latest[uid][2] if uid in latest else ""
        for uid, pod in final_pods(log).items()
        if not pod.deleted and not pod.node_name
    }


def timeline(log: Log, names: set[str], nodes: frozenset[str] = frozenset()) -> list[str]:
    """One line per record about the named pods (or naming them as the preemptor), and per pod change that
    binds or nominates a pod to one of `nodes`, in log order: what a failure message needs to say how a pod
    got where it is. Changes come first, then events, since the two topics have no common order (each change
    carries its resource version, each event its sequence)."""
    lines: list[str] = []
    for change in log.changes:
        if change.object.kind == KIND_POD and (
            change.object.name in names or change.node_name in nodes or change.nominated_node_name in nodes
        ):
            lines.append(
                f"rv {change.resource_version} {_type_name(change)} {change.object.name} by {change.writer}: "
                f"node={change.node_name or '-'} nominated={change.nominated_node_name or '-'} phase={change.phase}"
            )
    for event in log.events:
        if event.involved_object.name in names or (event.HasField("related") and event.related.name in names):
            related = f" (preemptor {event.related.name})" if event.HasField("related") and event.related.name else ""
            lines.append(
                f"event #{event.sequence} {event.reason} {event.involved_object.name}{related}: {event.message}"
            )
    return lines
