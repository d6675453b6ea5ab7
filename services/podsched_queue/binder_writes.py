"""Calls to the binder made in the same turn of the event loop, sent together.

A gRPC unary call costs about 360-540 us of CPU over client and server, more than most of the
writes it carries, and the binder commits concurrent writes in one transaction anyway. So calls that
arrive in the same turn of the event loop leave in one RPC that carries them all, and each caller
gets its own outcome back: its response, or the AioRpcError its own call would have raised. A lone
call waits for nothing (the flush is scheduled for the very next loop turn).

- `BinderWrites`: every Apply ends in one Write; concurrent ones (an ApplyBatch, many clients) leave
  in one WriteMany.
- `BinderClient` (peers.py): the failures of a PostFilterRun and the pod-group results of a
  SchedulePodGroups batch leave in one RecordFailures and one RecordPodGroupResults.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import grpc
from opentelemetry import trace

from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service import telemetry
from podsched_service.codec import status_code_of

MAX_CALLS_PER_RPC = 256  # the binder's default transaction size (PODSCHED_MAX_BATCH)

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")


class Outcome(Protocol):
    """One call's outcome in a batched answer (WriteOutcome, RecordFailureOutcome, ...)."""

    @property
    def response(self) -> Any: ...
    @property
    def code(self) -> int: ...
    @property
    def message(self) -> str: ...


class SentTogether(Generic[RequestT, ResponseT]):
    """Calls made in one turn of the event loop, sent by `send` (one RPC for up to
    MAX_CALLS_PER_RPC of them, answering one outcome per request, in order)."""

    def __init__(self, send: Callable[[list[RequestT]], Awaitable[Sequence[Outcome]]]) -> None:
        self.send = send
        self._pending: list[tuple[RequestT, asyncio.Future[ResponseT]]] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def call(self, request: RequestT) -> ResponseT:
        """The response to `request`; raises grpc.aio.AioRpcError as its own call would."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[ResponseT] = loop.create_future()
        self._pending.append((request, done))
        if len(self._pending) == 1:
            loop.call_soon(self._flush)
        return await done

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for start in range(0, len(pending), MAX_CALLS_PER_RPC):
            task = asyncio.ensure_future(self._send(pending[start : start + MAX_CALLS_PER_RPC]))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, calls: list[tuple[RequestT, asyncio.Future[ResponseT]]]) -> None:
        try:
            outcomes = await self.send([request for request, _ in calls])
        except grpc.aio.AioRpcError as error:
            for _, done in calls:
                if not done.done():
                    done.set_exception(error)
            return
        for (_, done), outcome in zip(calls, outcomes, strict=True):
            if done.done():  # the caller went away
                continue
            if outcome.code:
                code = status_code_of(outcome.code)
                done.set_exception(
                    grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), outcome.message)
                )
            else:
                done.set_result(outcome.response)


class BinderWrites:
    def __init__(self, binder: binder_pb2_grpc.BinderStub, timeout: float) -> None:
        self.binder = binder
        self.timeout = timeout
        self._writes: SentTogether[binder_pb2.WriteRequest, binder_pb2.WriteResponse] = SentTogether(self._write_many)

    async def write(self, object_json: bytes) -> binder_pb2.WriteResponse:
        """Store one admitted object; raises grpc.aio.AioRpcError as Write would."""
        request = binder_pb2.WriteRequest(
            object_json=object_json, trace_context=telemetry.carrier_of(trace.get_current_span())
        )
        return await self._writes.call(request)

    async def _write_many(self, writes: list[binder_pb2.WriteRequest]) -> Sequence[Outcome]:
        reply = await self.binder.WriteMany(binder_pb2.WriteManyRequest(writes=writes), timeout=self.timeout)
        return reply.outcomes
