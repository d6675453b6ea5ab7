"""Applying the binder's records (ObjectChange) to a copy of the cluster, decoding no more of a
record than the change needs. Every replica applies every record it follows, so what is not decoded
here is saved once per record in each of them."""

from __future__ import annotations

from podsched.api.types import KIND_POD
from podsched.cluster.state import Cluster
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import decode_change_message


def restore_change(cluster: Cluster, record: events_pb2.ObjectChange) -> None:
    """`cluster.restore` of the change `record` says, as decoding the whole record would apply it.

    A pod's removal is applied from the record's reference (uid, namespace, name) and resource
    version: the pod removed is the one the copy holds, and its recorded last state, the JSON, is
    read by nothing but the history of a copy that keeps one (`simulate`'s). A later record of a
    pod a replica holds (failed attempt, nomination, binding, termination) decodes only what
    changed of it, usually the status (`decode_change_message`'s `held`)."""
    reference = record.object
    held = None
    if reference.kind == KIND_POD:
        if record.type == events_pb2.ObjectChange.DELETED and not cluster.store.keep_history:
            cluster.restore_pod_removal(reference.uid, reference.namespace, reference.name, record.resource_version)
            return
        if not cluster.authoritative:
            # Only the log changes a replica's pods, so the one held is what its last record said.
            held = cluster.pods_by_uid.get(reference.uid)
    change_type, obj, _ = decode_change_message(record, held)
    cluster.restore(change_type, obj)
