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
import os
import re
from typing import Any, NamedTuple

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
# How long a call may wait for its audit record before the record is logged instead, the wait for
# the send in flight ahead of it included.
RECORD_TIMEOUT_SECONDS = 10.0
# The most record bytes in one record batch, as the binder's producer (a broker takes up to 1 MiB).
MAX_BATCH_BYTES = 512 * 1024
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
    """A random (version 4) UUID, as `str(uuid.uuid4())` writes it, in 1.2 instead of 2.6 us (every
    call gets one): the bytes are formatted directly, without a UUID object."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


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


class _Pending(NamedTuple):
    """A record waiting for its send."""

    key: bytes
    value: bytes
    written: asyncio.Future[None]  # resolved once the broker acknowledged the record, or failed
    deadline: float  # the event loop's time at which its caller stops waiting


class ApiAuditLog:
    """Sends AuditEvents to `<prefix>podsched.audit.v1`. `enabled` False: `record` does nothing.

    `record` waits for the broker's acknowledgement; if the record cannot be written the event is
    logged in full (JSON, level ERROR) instead, and the request's answer stands: the write it is
    about is already durable, and failing the call would make a client retry a done write.

    Records leave in group commits, as the binder sends its transactions: one send (a record batch
    per partition, one delivery future) is in flight at a time, and the records that arrive
    meanwhile (an ApplyBatch's, other calls') leave together once it is acknowledged, or at the next
    turn of the event loop when nothing is in flight. The producer itself has one produce request
    in flight per broker, so a send per turn of the loop only queued the batches up behind each
    other, one request and one round trip each. A caller awaits only its record's future, and no
    longer than `record_timeout` in all: each record's deadline is `record_timeout` after its call,
    and a send gives up at the earliest deadline of its records (one timer per send instead of a
    timer and a shield per record). A record that waited behind a slow send keeps only what is left
    of its time; a send that fails or times out fails each of its records."""

    def __init__(
        self, bootstrap: str, prefix: str, enabled: bool = True, record_timeout: float = RECORD_TIMEOUT_SECONDS
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = audit_topic(prefix)
        self.enabled = enabled
        self.record_timeout = record_timeout
        self.producer: AIOKafkaProducer | None = None
        # Records waiting for the next send, in the order of their calls (so the first has the
        # earliest deadline).
        self._pending: list[_Pending] = []
        self._sending: asyncio.Task[None] | None = None  # the send in flight
        self.sends = 0  # sends started, each one produce request per partition (or more when full)

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
            # A group commit of an ApplyBatch or more (a few hundred bytes a record) in one batch:
            # aiokafka's default of 16 KiB split one into several requests, one after the other.
            max_batch_size=MAX_BATCH_BYTES,
        )
        await self.producer.start()

    async def stop(self) -> None:
        while self._sending is not None:  # the send in flight, then the one it started, if any
            await asyncio.gather(self._sending, return_exceptions=True)
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
            # Resolved (or failed, or timed out) by the send that carries it; a caller cancelled
            # meanwhile cancels it, and the send skips its outcome. The record is sent all the same.
            written: asyncio.Future[None] = loop.create_future()
            self._pending.append(_Pending(key, event.SerializeToString(), written, loop.time() + self.record_timeout))
            if self._sending is None and len(self._pending) == 1:
                loop.call_soon(self._flush)
            await written
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
        """Send what is pending, unless a send is in flight: its end sends it (`_sent`)."""
        if self._sending is not None or not self._pending:
            return
        pending, self._pending = self._pending, []
        self.sends += 1
        self._sending = asyncio.ensure_future(self._send(pending))
        self._sending.add_done_callback(self._sent)

    def _sent(self, _: asyncio.Task[None]) -> None:
        self._sending = None
        self._flush()

    async def _send(self, records: list[_Pending]) -> None:
        """One record batch per partition (another when one is full), then each record's outcome:
        acknowledged, or the send's error (TimeoutError at the first record's deadline)."""
        try:
            async with asyncio.timeout_at(records[0].deadline):
                await self._send_batches(records)
        except Exception as error:
            for record in records:
                if not record.written.done():
                    record.written.set_exception(error)
            return
        for record in records:
            if not record.written.done():
                record.written.set_result(None)

    async def _send_batches(self, records: list[_Pending]) -> None:
        producer = self.producer
        if producer is None:
            raise RuntimeError("the audit producer is not running")
        partitions = sorted(await producer.partitions_for(self.topic))
        filling: dict[int, BatchBuilder] = {}
        delivered: list[asyncio.Future[Any]] = []
        for key, value, _, _ in records:
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
