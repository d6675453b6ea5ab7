"""The dashboard's calls to the public API, and the Watch that keeps its mirror current.

The dashboard is a client like the CLI: the same connection settings (server, kubeconfig,
token, certificates; `podsched_cli.kubeconfig`), the same calls (Get, ListEvents, Watch, and
Apply with dry_run for the what-if), the same error lines (kubectl's, from the server).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import grpc

from podsched_cli.kubeconfig import ENV_SERVER, Connection, Flags, resolve
from podsched_cli.output import event_to_dict, rpc_error_message
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.events.v1 import events_pb2
from podsched_service.config import DEFAULT_QUEUE_ADDRESS

from .config import DashboardConfig
from .mirror import ClusterMirror

log = logging.getLogger(__name__)

_CHANGE_TYPES = {
    events_pb2.ObjectChange.ADDED: "ADDED",
    events_pb2.ObjectChange.MODIFIED: "MODIFIED",
    events_pb2.ObjectChange.DELETED: "DELETED",
}
RETRY_SECONDS = 1.0
# A large cluster's answers are big messages (every event of ListEvents; 30,000 pods listed by Get are
# about 18 MB); gRPC's default limit on what a client receives is 4 MB.
MAX_MESSAGE_BYTES = 1 << 30


class ApiFailure(Exception):
    """A call failed; `str()` is the line kubectl would print."""


def connection_of(config: DashboardConfig) -> Connection:
    """The CLI's resolution of server and credentials, from the dashboard's settings: PODSCHED_SERVER
    is the CLI's variable, so the kubeconfig's server wins over it exactly as for the CLI."""
    flags = Flags(
        kubeconfig=config.kubeconfig or None,
        context=config.context or None,
        token=config.token or None,
        certificate_authority=config.certificate_authority or None,
        client_certificate=config.client_certificate or None,
        client_key=config.client_key or None,
    )
    return resolve(flags, {ENV_SERVER: config.server}, DEFAULT_QUEUE_ADDRESS)


class ApiClient:
    """A grpc.aio channel to the public API. The connection's address may name several queue
    replicas, comma separated (`127.0.0.1:50051,127.0.0.1:50061`): every replica serves the API, so
    when the one in use stops answering the Watch moves to the next (`fail_over`)."""

    def __init__(self, connection: Connection, timeout: float) -> None:
        self.addresses = [address.strip() for address in connection.address.split(",") if address.strip()]
        self.timeout = timeout
        self._connection = connection
        self._metadata = (("authorization", f"Bearer {connection.token}"),) if connection.token else None
        self._index = 0
        self._open()

    @property
    def address(self) -> str:
        """The replica in use."""
        return self.addresses[self._index]

    def _open(self) -> None:
        connection = self._connection
        options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        if connection.tls:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=connection.ca,
                private_key=connection.client_key,
                certificate_chain=connection.client_certificate,
            )
            if connection.server_name:
                options.append(("grpc.ssl_target_name_override", connection.server_name))
            self._channel = grpc.aio.secure_channel(self.address, credentials, options=options)
        else:
            self._channel = grpc.aio.insecure_channel(self.address, options=options)
        self._stub = api_pb2_grpc.PodSchedStub(self._channel)

    async def fail_over(self) -> None:
        """Use the next replica (with one address: reconnect to it)."""
        old = self._channel
        self._index = (self._index + 1) % len(self.addresses)
        self._open()
        await old.close()

    async def close(self) -> None:
        await self._channel.close()

    def failure(self, error: grpc.aio.AioRpcError) -> ApiFailure:
        return ApiFailure(rpc_error_message(error.code().name, error.details() or "", self.address, self.timeout))

    async def get(self, resource: str, name: str = "", namespace: str = "") -> list[dict[str, Any]]:
        request = api_pb2.GetRequest(resource=resource, name=name, namespace=namespace, all_namespaces=not namespace)
        try:
            response = await self._stub.Get(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise self.failure(error) from None
        return [json.loads(raw) for raw in response.objects_json]

    async def events_of(self, uid: str) -> list[dict[str, Any]]:
        request = api_pb2.ListEventsRequest(all_namespaces=True, involved_uid=uid)
        try:
            response = await self._stub.ListEvents(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise self.failure(error) from None
        return [event_to_dict(event) for event in response.events]

    async def dry_run(self, document: dict[str, Any], source: str) -> api_pb2.ApplyResponse:
        """`apply --dry-run=server` of one object: nothing is stored."""
        request = api_pb2.ApplyRequest(object_json=json.dumps(document).encode(), dry_run=True, source=source)
        try:
            response: api_pb2.ApplyResponse = await self._stub.Apply(
                request, timeout=self.timeout, metadata=self._metadata
            )
        except grpc.aio.AioRpcError as error:
            raise self.failure(error) from None
        return response

    async def follow(
        self,
        mirror: ClusterMirror,
        changed: Callable[[], None],
        failed: Callable[[str], None] = lambda _: None,
    ) -> None:
        """Keep `mirror` current until cancelled: Watch from the mirror's resource version (from the
        start after a reset, the API then sends the current state), the recorded events listed once
        per (re)start so the timeline has the past preemptions. A version the log no longer holds
        (OUT_OF_RANGE, "too old resource version") resets the mirror and relists, as a Kubernetes
        informer does; a watch the API closed because the dashboard fell behind (ABORTED) is opened
        again from where it was; any other failure is reported to `failed` (kubectl's line: the page
        shows it) and retried after a pause, on the next replica if this one does not answer. The
        bookmark after the current state marks the mirror synced: it holds the whole cluster from then on."""
        while True:
            since = mirror.resource_version
            call = self._stub.Watch(
                api_pb2.WatchRequest(include_events=True, since_resource_version=since), metadata=self._metadata
            )
            if since == 0:
                mirror.reset()
            # Listed after the Watch has started, so nothing recorded in between is missed (the mirror
            # takes an event twice without harm), and beside it: a restarted queue answers ListEvents
            # only once it has loaded the events, and the objects must not wait for that.
            listing = asyncio.create_task(self._list_past_preemptions(mirror, changed))
            try:
                changed()
                async for item in call:
                    which = item.WhichOneof("item")
                    if which == "change":
                        change = item.change
                        mirror.apply_change(
                            _CHANGE_TYPES.get(change.type, "MODIFIED"),
                            change.object.kind,
                            json.loads(change.object_json),
                            change.resource_version,
                        )
                    elif which == "event":
                        mirror.apply_event(event_to_dict(item.event))
                    elif which == "bookmark_resource_version":
                        # The state just sent is complete as of this version: a watch resumes from it.
                        mirror.resource_version = max(mirror.resource_version, item.bookmark_resource_version)
                        mirror.synced = True
                    changed()
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.OUT_OF_RANGE:
                    log.info("watch from %d is too old; relisting", since)
                    mirror.resource_version = 0
                    continue
                if error.code() == grpc.StatusCode.ABORTED:
                    log.info("watch on %s closed (%s); resuming from %d", self.address, error.details(), since)
                    continue
                log.warning("watch on %s failed (%s); retrying: %s", self.address, error.code().name, error.details())
                failed(str(self.failure(error)))
                if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    await self.fail_over()
            finally:
                call.cancel()
                listing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listing
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.sleep(RETRY_SECONDS)

    async def _list_past_preemptions(self, mirror: ClusterMirror, changed: Callable[[], None]) -> None:
        """The recorded Preempted events into the mirror's timeline, retried until the API answers (the
        Watch goes on meanwhile; it reports failures itself)."""
        while True:
            try:
                listed = await self._stub.ListEvents(
                    api_pb2.ListEventsRequest(all_namespaces=True), timeout=self.timeout, metadata=self._metadata
                )
            except grpc.aio.AioRpcError as error:
                log.warning(
                    "listing events on %s failed (%s); retrying: %s", self.address, error.code().name, error.details()
                )
                await asyncio.sleep(RETRY_SECONDS)
                continue
            mirror.apply_listed_events([event_to_dict(e) for e in listed.events if e.reason == "Preempted"])
            changed()
            return
