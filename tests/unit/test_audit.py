"""The log auditor's logic (tests/audit.py) over hand-built logs.

The crash-safety tests trust `audit()` to say "no invariant was ever broken"; an auditor that misses a
violation would make them pass vacuously. So each check is shown to pass a clean preemption story and to
catch its violation with a message that names the pod or node. The records are the real ObjectChange and
Event protos, built in memory the way the binder writes them (Kafka itself is in tests/test_audit_kafka.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition

from audit import (
    ADDED,
    DELETED,
    EVENTS_TOPIC,
    MARK_KEY,
    MODIFIED,
    OBJECTS_TOPIC,
    Log,
    PodState,
    _decode,
    audit,
    final_pods,
    pending_reasons,
)
from podsched_proto.events.v1.events_pb2 import Event, ObjectChange, ObjectReference, ResourceVersionMark

NS = "default"


@dataclass
class LogBuilder:
    """Writes a log as the binder would: every change gets the next resource version, every event the next
    sequence number. Pods are kept as Kubernetes JSON so each change carries the whole object."""

    log: Log = field(default_factory=Log)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    resource_version: int = 0
    sequence: int = 0

    def _append(self, kind: str, doc: dict[str, Any], change_type: int, rv: int | None = None) -> None:
        if rv is None:
            self.resource_version += 1
            rv = self.resource_version
        meta = doc["metadata"]
        change = ObjectChange(
            type=change_type,  # type: ignore[arg-type]
            object=ObjectReference(kind=kind, namespace=meta.get("namespace", ""), name=meta["name"], uid=meta["uid"]),
            resource_version=rv,
            object_json=json.dumps(doc).encode(),
            writer="podsched-binder",
        )
        if kind == "Pod":
            change.node_name = doc["spec"].get("nodeName", "")
            change.phase = doc["status"]["phase"]
            change.priority = doc["spec"]["priority"]
            change.nominated_node_name = doc["status"].get("nominatedNodeName", "")
        self.log.changes.append(change)

    def node(self, name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110", change: int = ADDED) -> None:
        doc = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": f"node-{name}"},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
        }
        self._append("Node", doc, change)

    def pod(self, name: str, priority: int, cpu: str = "1", memory: str = "1Gi", node: str = "", uid: str = "") -> str:
        """Create a pod (ADDED); returns its uid (the name, unless given)."""
        uid = uid or name
        doc: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": uid},
            "spec": {
                "priority": priority,
                "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            },
            "status": {"phase": "Running" if node else "Pending"},
        }
        if node:
            doc["spec"]["nodeName"] = node
        self.pods[uid] = doc
        self._append("Pod", doc, ADDED)
        return uid

    def update(self, uid: str, change: int = MODIFIED, rv: int | None = None, **fields: Any) -> None:
        """Change a pod: node, phase, nominated, terminating (sets metadata.deletionTimestamp)."""
        doc = self.pods[uid]
        if "node" in fields:
            doc["spec"]["nodeName"] = fields["node"]
            doc["status"]["phase"] = "Running"
        if "phase" in fields:
            doc["status"]["phase"] = fields["phase"]
        if "nominated" in fields:
            doc["status"]["nominatedNodeName"] = fields["nominated"]
        if fields.get("terminating"):
            doc["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        self._append("Pod", doc, change, rv)

    def bind(self, uid: str, node: str) -> None:
        self.update(uid, node=node, nominated="")
        self.event(uid, "Scheduled", f"Successfully assigned {NS}/{uid} to {node}")

    def delete(self, uid: str) -> None:
        self.update(uid, change=DELETED)

    def event(
        self,
        uid: str,
        reason: str,
        message: str = "",
        related: str = "",
        sequence: int | None = None,
        count: int = 1,
    ) -> None:
        if sequence is None:
            sequence = self.sequence
            self.sequence += 1
        name = self.pods[uid]["metadata"]["name"] if uid in self.pods else uid
        event = Event(
            type="Warning" if reason == "FailedScheduling" else "Normal",
            reason=reason,
            message=message,
            involved_object=ObjectReference(kind="Pod", namespace=NS, name=name, uid=uid),
            reporting_controller="default-scheduler",
            count=count,
            sequence=sequence,
        )
        if related:
            related_name = self.pods[related]["metadata"]["name"] if related in self.pods else related
            event.related.CopyFrom(ObjectReference(kind="Pod", namespace=NS, name=related_name, uid=related))
        self.log.events.append(event)


def preemption_story() -> LogBuilder:
    """A clean log: two low-priority pods fill n1; a high-priority pod preempts one of them, which
    terminates (still holding its cpu) and goes; the preemptor is bound; a huge pod stays pending."""
    b = LogBuilder()
    b.node("n1", cpu="4")
    for name in ("low-a", "low-b"):
        b.pod(name, priority=10, cpu="2")
        b.bind(name, "n1")
    b.pod("high", priority=1000, cpu="2")
    b.event("high", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
    b.event("low-a", "Preempted", "Preempted by pod high on node n1", related="high")
    b.update("high", nominated="n1")
    b.event("high", "Nominated", "Nominated to node n1 after preempting 1 pod(s)")
    b.update("low-a", terminating=True)
    b.delete("low-a")
    b.bind("high", "n1")
    b.pod("huge", priority=0, cpu="64")
    message = "0/1 nodes are available: 1 Insufficient cpu."
    b.event("huge", "FailedScheduling", message)
    b.event("huge", "FailedScheduling", message, sequence=b.sequence - 1, count=2)  # a count bump
    return b


def only(violations: list[str], *needles: str) -> str:
    """The single violation, after checking it names every needle."""
    assert len(violations) == 1, violations
    for needle in needles:
        assert needle in violations[0], (needle, violations[0])
    return violations[0]


def test_clean_preemption_story_passes() -> None:
    b = preemption_story()
    acknowledged = [("Node", "", "n1"), *(("Pod", NS, name) for name in ("low-a", "low-b", "high", "huge"))]
    assert audit(b.log, acknowledged) == []


def test_final_pods_and_pending_reasons_summarize_the_end_state() -> None:
    b = preemption_story()
    pods = final_pods(b.log)
    assert pods["low-a"] == PodState("low-a", NS, "low-a", "n1", "Running", 10, "", deleted=True, terminating=False)
    assert pods["high"] == PodState("high", NS, "high", "n1", "Running", 1000, "", deleted=False)
    assert pods["low-b"].node_name == "n1" and not pods["low-b"].deleted
    assert pods["huge"].node_name == "" and pods["huge"].phase == "Pending"
    assert pending_reasons(b.log) == {"huge": "0/1 nodes are available: 1 Insufficient cpu."}


def test_pending_pod_without_failed_scheduling_event_has_empty_reason() -> None:
    b = preemption_story()
    b.pod("quiet", priority=0)
    b.update("low-b", terminating=True)
    assert pending_reasons(b.log) == {"huge": "0/1 nodes are available: 1 Insufficient cpu.", "quiet": ""}
    assert final_pods(b.log)["low-b"].terminating


def test_pod_rebound_to_another_node_is_a_double_bind() -> None:
    b = preemption_story()
    b.node("n2")
    b.update("high", node="n2")
    only(audit(b.log), "default/high", '"n1"', '"n2"', "bound twice")


def test_pod_losing_its_node_is_a_double_bind() -> None:
    b = preemption_story()
    b.update("low-b", node="")
    only(audit(b.log), "default/low-b", "bound twice")


def test_two_scheduled_events_for_one_pod_are_a_double_bind() -> None:
    b = preemption_story()
    b.event("high", "Scheduled", "Successfully assigned default/high to n1")
    only(audit(b.log), "default/high", "2 Scheduled events", "bound twice")


def test_overcommit_counts_terminating_pods_still_on_the_node() -> None:
    b = LogBuilder()
    b.node("n1", cpu="4")
    for name in ("low-a", "low-b"):
        b.pod(name, priority=10, cpu="2")
        b.bind(name, "n1")
    b.pod("high", priority=1000, cpu="2")
    b.event("low-a", "Preempted", related="high")
    b.update("low-a", terminating=True)
    b.bind("high", "n1")  # too early: low-a still holds its 2 cpu during its grace period
    b.delete("low-a")
    only(audit(b.log), 'node "n1"', "cpu", "6000m > allocatable 4000m", "default/low-a", "default/high")


def test_overcommit_of_memory_and_pod_count_are_reported_per_resource() -> None:
    b = LogBuilder()
    b.node("n1", cpu="8", memory="2Gi", pods="1")
    b.pod("a", priority=0, memory="1Gi", node="n1")
    b.pod("b", priority=0, memory="2Gi", node="n1")
    violations = audit(b.log)
    assert len(violations) == 2, violations
    assert any('node "n1" overcommitted on pods' in v and "2 > allocatable 1" in v for v in violations)
    assert any('node "n1" overcommitted on memory' in v and "default/b" in v for v in violations)


def test_failed_and_deleted_pods_release_the_node() -> None:
    b = LogBuilder()
    b.node("n1", cpu="2")
    b.pod("a", priority=0, cpu="2", node="n1")
    b.update("a", phase="Failed")
    b.pod("b", priority=0, cpu="2", node="n1")
    b.delete("b")
    b.pod("c", priority=0, cpu="2", node="n1")
    assert audit(b.log) == []


def test_node_shrinking_below_its_pods_is_an_overcommit() -> None:
    b = LogBuilder()
    b.node("n1", cpu="4")
    b.pod("a", priority=0, cpu="3", node="n1")
    b.node("n1", cpu="2", change=MODIFIED)
    only(audit(b.log), 'node "n1"', "cpu", "3000m > allocatable 2000m", "default/a")


def test_victim_with_equal_priority_is_reported() -> None:
    b = preemption_story()
    b.pod("peer", priority=1000, cpu="1")
    b.event("low-b", "Preempted", related="peer")  # fine: 10 < 1000
    b.pod("equal", priority=10)
    b.event("low-b", "Preempted", related="equal")
    only(audit(b.log), "default/low-b", "priority 10", "not lower", "default/equal")


def test_preempted_event_for_unknown_pods_or_without_preemptor_is_reported() -> None:
    b = preemption_story()
    b.event("ghost", "Preempted", related="high")
    b.event("low-b", "Preempted")
    violations = audit(b.log)
    assert len(violations) == 2, violations
    assert any("no pod records" in v and "ghost" in v for v in violations)
    assert any("default/low-b" in v and "names no preemptor" in v for v in violations)


def test_sequence_gap_is_reported() -> None:
    b = preemption_story()
    lost = b.sequence
    b.sequence += 2  # two events lost
    b.event("huge", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
    only(audit(b.log), "gaps", f"missing {lost}, {lost + 1} of 0..{lost + 2}")


def test_sequence_reused_by_another_event_is_reported() -> None:
    b = preemption_story()
    b.event("low-b", "Killing", sequence=0)
    only(audit(b.log), "sequence 0 used twice", "default/low-b", "Killing")


def test_sequence_republished_without_count_bump_is_a_duplicate() -> None:
    b = preemption_story()
    [preempted] = [e.sequence for e in b.log.events if e.reason == "Preempted"]
    b.event("low-a", "Preempted", "Preempted by pod high on node n1", related="high", sequence=preempted)
    only(audit(b.log), f"sequence {preempted}", "default/low-a", "without a count bump", "counts [1, 1]")


def test_missing_acknowledged_write_is_reported() -> None:
    b = preemption_story()
    only(audit(b.log, [("Pod", NS, "high"), ("Pod", NS, "lost"), ("Node", "", "n1")]), "Pod default/lost", "lost")


def test_non_increasing_resource_version_is_reported() -> None:
    b = preemption_story()
    b.update("low-b", nominated="", rv=b.resource_version)  # the last write applied again
    only(audit(b.log), "default/low-b", f"resource_version {b.resource_version}", "not greater")


def test_offsets_name_the_record_when_known() -> None:
    b = preemption_story()
    b.update("low-b", rv=1)
    b.log.change_offsets = [10 * i for i in range(len(b.log.changes))]
    only(audit(b.log), f"offset {10 * (len(b.log.changes) - 1)}:", "default/low-b")


def test_duplicate_creates_and_changes_after_delete_are_reported() -> None:
    b = preemption_story()
    b.update("low-a", phase="Failed")  # a change of a deleted pod
    b._append("Pod", b.pods["low-b"], ADDED)  # the same uid created again
    b.pod("high", priority=0, uid="high-2")  # a second live pod named high
    violations = audit(b.log)
    assert len(violations) == 3, violations
    assert any("default/low-a" in v and "after it was DELETED" in v for v in violations)
    assert any("default/low-b" in v and "ADDED again" in v for v in violations)
    assert any(
        "default/high (uid high-2)" in v and "while uid high of the same name is still live" in v for v in violations
    )


def test_recreated_pod_with_new_uid_is_clean() -> None:
    b = preemption_story()
    b.pod("low-a", priority=10, cpu="0", uid="low-a-2")
    b.bind("low-a-2", "n1")
    assert audit(b.log) == []
    assert final_pods(b.log)["low-a-2"].node_name == "n1"


def test_undecodable_object_and_read_problems_are_reported() -> None:
    b = preemption_story()
    b.log.changes[-1].object_json = b"{not json"
    b.log.problems.append("podsched.events.v1[0]@7: cannot decode record")
    violations = audit(b.log)
    assert len(violations) == 2, violations
    assert any("default/huge" in v and "does not decode" in v for v in violations)
    assert "podsched.events.v1[0]@7: cannot decode record" in violations


# --- a compacted objects topic and an events topic with retention ------------------------------------------


def kafka_records(
    b: LogBuilder, compact: bool, marks: bool = True
) -> dict[TopicPartition, list[tuple[int, bytes | None, bytes | None]]]:
    """The builder's log as the binder writes it to Kafka (each change naming its predecessor, a mark after
    each change, a tombstone after each DELETED), then, with `compact`, what Kafka's compaction keeps: the
    newest record of each key, tombstones gone."""
    objects, events = TopicPartition(OBJECTS_TOPIC, 0), TopicPartition(EVENTS_TOPIC, 0)
    written: list[tuple[int, bytes | None, bytes | None]] = []
    previous = 0
    for change in b.log.changes:
        change.previous_resource_version = previous
        previous = change.resource_version
        key = f"{change.object.kind}/{change.object.namespace}/{change.object.name}".encode()
        written.append((len(written), key, change.SerializeToString()))
        if change.type == DELETED:
            written.append((len(written), key, None))
        if marks:
            written.append((len(written), MARK_KEY, ResourceVersionMark(resource_version=previous).SerializeToString()))
    if compact:
        newest = {key: offset for offset, key, _ in written}
        written = [r for r in written if newest[r[1]] == r[0] and r[2] is not None]
    return {
        objects: written,
        events: [(i, e.involved_object.uid.encode(), e.SerializeToString()) for i, e in enumerate(b.log.events)],
    }


def compacted_story() -> LogBuilder:
    """The preemption story, then more changes of the surviving pods (superseding their early records)."""
    b = preemption_story()
    b.update("low-b", nominated="")
    b.update("high", nominated="")
    return b


def test_a_compacted_log_is_clean_and_its_gap_is_found() -> None:
    b = compacted_story()
    full = _decode(kafka_records(b, compact=False), OBJECTS_TOPIC, EVENTS_TOPIC)
    assert not full.compacted and full.tombstones == 1 and audit(full) == []
    log = _decode(kafka_records(b, compact=True), OBJECTS_TOPIC, EVENTS_TOPIC)
    assert log.compacted and log.tombstones == 0
    assert {c.type for c in log.changes} == {MODIFIED, ADDED}  # low-b's and high's ADDED were superseded
    assert audit(log, [("Pod", NS, "high"), ("Pod", NS, "low-b"), ("Node", "", "n1")]) == []


def test_a_record_missing_from_the_log_is_seen_as_a_gap_where_it_was() -> None:
    b = compacted_story()
    records = kafka_records(b, compact=False)
    objects = next(tp for tp in records if tp.topic == OBJECTS_TOPIC)
    changes = [r for r in records[objects] if r[1] != MARK_KEY and r[2] is not None]
    lost = changes[3]
    records[objects].remove(lost)
    log = _decode(records, OBJECTS_TOPIC, EVENTS_TOPIC)
    assert log.first_gap == 3, log.first_gap


def test_a_writer_that_reuses_versions_after_compaction_is_reported() -> None:
    """A binder rebuilt from a compacted log that forgot the mark would continue from the newest change still
    recorded, naming it as its predecessor and handing out versions a client has already seen."""
    b = compacted_story()
    records = kafka_records(b, compact=True)
    objects = next(tp for tp in records if tp.topic == OBJECTS_TOPIC)
    reused = ObjectChange.FromString(records[objects][-2][2])  # the last change before the last mark
    reused.resource_version = reused.resource_version - 1  # below the deletion's version, which was seen
    reused.previous_resource_version = reused.resource_version - 1
    records[objects].append((10_000, b"Pod/default/again", reused.SerializeToString()))
    violations = audit(_decode(records, OBJECTS_TOPIC, EVENTS_TOPIC))
    assert any("not greater than the ResourceVersionMark" in v for v in violations), violations
    assert any("names" in v and "as the change before it" in v for v in violations), violations


def test_events_removed_by_retention_are_no_gap_but_a_later_loss_is() -> None:
    b = preemption_story()
    expired = 3
    b.log.events = [e for e in b.log.events if e.sequence >= expired]
    b.log.events_trimmed = True
    assert audit(b.log) == []
    b.log.events_trimmed = False
    only(audit(b.log), "gaps", "missing 0, 1, 2 of 0..")
    b.log.events_trimmed = True
    b.log.events = [e for e in b.log.events if e.sequence != expired + 1]
    only(audit(b.log), "gaps", f"missing {expired + 1} of {expired}..")
