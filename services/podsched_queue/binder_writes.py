"""Writes to the binder from concurrent Apply calls, sent together.

Every Apply ends in one binder write. When many are in flight (an ApplyBatch, or many clients), one
RPC per write is most of what each costs; the binder commits concurrent writes in one transaction
anyway. So writes that arrive in the same turn of the event loop leave in one WriteMany, and each
caller gets its own outcome back: the WriteResponse, or the AioRpcError its own Write would have
raised. A lone write waits for nothing (the flush is scheduled for the very next loop turn)."""

from __future__ import annotations

import asyncio

import grpc
from opentelemetry import trace

from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service import telemetry
from podsched_service.codec import status_code_of

MAX_WRITES_PER_CALL = 256  # the binder's default transaction size (PODSCHED_MAX_BATCH)


class BinderWrites:
    def __init__(self, binder: binder_pb2_grpc.BinderStub, timeout: float) -> None:
        self.binder = binder
        self.timeout = timeout
        self._pending: list[tuple[binder_pb2.WriteRequest, asyncio.Future[binder_pb2.WriteResponse]]] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def write(self, object_json: bytes) -> binder_pb2.WriteResponse:
        """Store one admitted object; raises grpc.aio.AioRpcError as Write would."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[binder_pb2.WriteResponse] = loop.create_future()
        request = binder_pb2.WriteRequest(
            object_json=object_json, trace_context=telemetry.carrier_of(trace.get_current_span())
        )
        self._pending.append((request, done))
        if len(self._pending) == 1:
            loop.call_soon(self._flush)
        return await done

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for start in range(0, len(pending), MAX_WRITES_PER_CALL):
            task = asyncio.ensure_future(self._send(pending[start : start + MAX_WRITES_PER_CALL]))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(
        self, writes: list[tuple[binder_pb2.WriteRequest, asyncio.Future[binder_pb2.WriteResponse]]]
    ) -> None:
        try:
            reply = await self.binder.WriteMany(
                binder_pb2.WriteManyRequest(writes=[request for request, _ in writes]), timeout=self.timeout
            )
        except grpc.aio.AioRpcError as error:
            for _, done in writes:
                if not done.done():
                    done.set_exception(error)
            return
        for (_, done), outcome in zip(writes, reply.outcomes, strict=True):
            if done.done():  # the caller went away
                continue
            if outcome.code:
                code = status_code_of(outcome.code)
                done.set_exception(
                    grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), outcome.message)
                )
            else:
                done.set_result(outcome.response)
