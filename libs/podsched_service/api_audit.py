"""The API audit log: every write request to the public API, accepted or refused, with who asked,
as an AuditEvent (protos/podsched_proto/audit/v1/audit.proto) on the topic podsched.audit.v1.

Not to be confused with tests/audit.py, the test suite's invariant checker over the object log.

The queue service serves the public API, so it produces these records itself, with an idempotent
producer (acks=all) of its own: the binder stays the single (transactional) writer of the cluster's
state, and an audit record is not part of that state. A write's record is sent after the binder
acknowledged the write and awaited before the client gets its answer, so every acknowledged write
has its record (a crash in between loses the record of a write the client never heard about;
upstream's buffered audit backends lose more). A refused write's record is awaited before the refusal."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from typing import Any

import grpc
from aiokafka import AIOKafkaProducer
from aiokafka.producer.message_accumulator import BatchBuilder
from google.protobuf.json_format import MessageToJson

from podsched_proto.audit.v1 import audit_pb2
from podsched_service.authentication import Identity
from podsched_service.codec import record_partition
from podsched_service.kafka_log import ensure_topic_names

log = logging.getLogger(__name__)

AUDIT_TOPIC = "podsched.audit.v1"
# How long an answer waits for its audit record before the record is logged instead.
RECORD_TIMEOUT_SECONDS = 10.0
# Audit records are the operator's to expire: the broker's default retention applies.
AUDIT_TOPIC_CONFIG: dict[str, str] = {}

# Kubernetes' reason -> HTTP status code, for response_status.code.
HTTP_CODES = {
    "": 200,
    "Created": 201,
    "BadRequest": 400,
    "Unauthorized": 401,
    "Forbidden": 403,
    "NotFound": 404,
    "AlreadyExists": 409,
    "Conflict": 409,
    "Invalid": 422,
    "InternalError": 500,
    "ServiceUnavailable": 503,
}
# When the message does not say the reason (client-side style `error: ...` lines).
REASONS_BY_GRPC_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: "BadRequest",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthorized",
    grpc.StatusCode.PERMISSION_DENIED: "Forbidden",
    grpc.StatusCode.FAILED_PRECONDITION: "Forbidden",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.ALREADY_EXISTS: "AlreadyExists",
    grpc.StatusCode.ABORTED: "Conflict",
    grpc.StatusCode.UNAVAILABLE: "ServiceUnavailable",
    grpc.StatusCode.DEADLINE_EXCEEDED: "ServiceUnavailable",
}
_KUBECTL_REASON = re.compile(r"^Error from server \((\w+)\)")


def audit_topic(prefix: str) -> str:
    return prefix + AUDIT_TOPIC


def new_audit_id() -> str:
    return str(uuid.uuid4())


def user_info(identity: Identity | None) -> audit_pb2.UserInfo:
    if identity is None:
        return audit_pb2.UserInfo()
    return audit_pb2.UserInfo(
        username=identity.username,
        uid=identity.uid,
        groups=list(identity.groups),
        authentication_method=identity.method,
    )


def response_status(code: grpc.StatusCode, message: str, *, created: bool = False) -> audit_pb2.ResponseStatus:
    """The HTTP-style status of an answer: the reason kubectl's line names (`Error from server
    (Invalid): ...`), else the one the gRPC code implies."""
    if code == grpc.StatusCode.OK:
        return audit_pb2.ResponseStatus(code=201 if created else 200, grpc_code="OK")
    matched = _KUBECTL_REASON.match(message)
    reason = matched.group(1) if matched else REASONS_BY_GRPC_CODE.get(code, "InternalError")
    return audit_pb2.ResponseStatus(
        code=HTTP_CODES.get(reason, 500), reason=reason, message=message, grpc_code=code.name
    )


def source_ips(peer: str) -> list[str]:
    """gRPC's peer string (`ipv4:127.0.0.1:5000`, `ipv6:[::1]:5000`, `unix:...`) -> its address."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return [rest.rpartition(":")[0]]
    if kind == "ipv6":
        return [rest.rpartition(":")[0].strip("[]")]
    return [peer] if peer else []


class ApiAuditLog:
    """Sends AuditEvents to `<prefix>podsched.audit.v1`. `enabled` False: `record` does nothing.

    `record` waits for the broker's acknowledgement; if the record cannot be written the event is
    logged in full (JSON, level ERROR) instead, and the request's answer stands: the write it is
    about is already durable, and failing the call would make a client retry a done write.

    The records of writes answered in the same turn of the event loop (an ApplyBatch's, or many
    clients') leave together, as one record batch per partition with one delivery future, as the
    binder sends its transactions: a `send_and_wait` per record gave each two coroutines and a
    future of its own."""

    def __init__(self, bootstrap: str, prefix: str, enabled: bool = True) -> None:
        self.bootstrap = bootstrap
        self.topic = audit_topic(prefix)
        self.enabled = enabled
        self.producer: AIOKafkaProducer | None = None
        # (key, value, resolved once the broker acknowledged the record) waiting for the next flush.
        self._pending: list[tuple[bytes, bytes, asyncio.Future[None]]] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        if not self.enabled:
            return
        await ensure_topic_names(self.bootstrap, [self.topic], AUDIT_TOPIC_CONFIG)
        self.producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            enable_idempotence=True,
            acks="all",
            linger_ms=0,
            client_id="podsched-queue-audit",
            partitioner=record_partition,
        )
        await self.producer.start()

    async def stop(self) -> None:
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
        if self.producer is not None:
            producer, self.producer = self.producer, None
            await producer.stop()  # flushes what is still in flight

    async def record(self, event: audit_pb2.AuditEvent) -> None:
        if not self.enabled:
            return
        ref = event.object_ref
        key = f"{ref.resource}/{ref.namespace}/{ref.name}".encode()
        try:
            if self.producer is None:
                raise RuntimeError("the audit producer is not running")
            loop = asyncio.get_running_loop()
            written: asyncio.Future[None] = loop.create_future()
            # A caller that stops waiting (cancelled, timed out) leaves the outcome unread.
            written.add_done_callback(_read_outcome)
            self._pending.append((key, event.SerializeToString(), written))
            if len(self._pending) == 1:
                loop.call_soon(self._flush)
            async with asyncio.timeout(RECORD_TIMEOUT_SECONDS):
                await asyncio.shield(written)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the broker is unreachable: keep the record in the log at least
            log.error(
                "audit record not written to %s (%s): %s",
                self.topic,
                error,
                MessageToJson(event, indent=None),
                extra={"decision": "AuditRecordLost"},
            )

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        task = asyncio.ensure_future(self._send(pending))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, records: list[tuple[bytes, bytes, asyncio.Future[None]]]) -> None:
        """One record batch per partition (another when one is full), then each record's outcome."""
        try:
            producer = self.producer
            if producer is None:
                raise RuntimeError("the audit producer is not running")
            partitions = sorted(await producer.partitions_for(self.topic))
            filling: dict[int, BatchBuilder] = {}
            delivered: list[asyncio.Future[Any]] = []
            for key, value, _ in records:
                partition = record_partition(key, partitions, partitions)
                batch = filling.get(partition)
                if batch is None:
                    batch = filling[partition] = producer.create_batch()
                if batch.append(key=key, value=value, timestamp=None) is None:
                    # Full: send it, and start the next (an empty batch takes any one record).
                    delivered.append(await producer.send_batch(batch, self.topic, partition=partition))
                    batch = filling[partition] = producer.create_batch()
                    batch.append(key=key, value=value, timestamp=None)
            for partition, batch in filling.items():
                delivered.append(await producer.send_batch(batch, self.topic, partition=partition))
            await asyncio.gather(*delivered)
        except Exception as error:
            for _, _, written in records:
                if not written.done():
                    written.set_exception(error)
            return
        for _, _, written in records:
            if not written.done():
                written.set_result(None)


def _read_outcome(written: asyncio.Future[None]) -> None:
    if not written.cancelled():
        written.exception()
