"""The `podsched` client's calls to the public API, `podsched.api.v1.PodSched`.

A blocking gRPC channel is enough for a command-line client: one call at a time, and Ctrl-C still
interrupts a blocked call (grpc's waits wake up to let Python handle signals). Every failure is
raised as `RequestFailedError` carrying the line to print, so callers never see grpc types.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import grpc

from podsched_cli import tracing
from podsched_cli.errors import RequestFailedError
from podsched_cli.kubeconfig import Connection
from podsched_cli.output import rpc_error_message
from podsched_cli.watching import ResumingWatch, WatchPoint
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.events.v1 import events_pb2


class PodSchedClient:
    """One channel to the server at `address` (a Connection: TLS, client certificate and bearer
    token as it says); unary calls give up after `timeout` seconds."""

    def __init__(self, address: str | Connection, timeout: float) -> None:
        connection = address if isinstance(address, Connection) else Connection(address)
        self.address = connection.address
        self.timeout = timeout
        self.tls = connection.tls
        # Sent as plain metadata, not call credentials, so a token also works over plaintext (tests).
        self._metadata = [("authorization", f"Bearer {connection.token}")] if connection.token else None
        if connection.tls:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=connection.ca,
                private_key=connection.client_key,
                certificate_chain=connection.client_certificate,
            )
            options = [("grpc.ssl_target_name_override", connection.server_name)] if connection.server_name else []
            self._channel = grpc.secure_channel(connection.address, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(connection.address)
        if tracing.enabled():
            # A CLIENT span per call, its W3C context in the metadata: the pod's trace starts here.
            from opentelemetry.instrumentation.grpc import client_interceptor
            from opentelemetry.instrumentation.grpc.grpcext import intercept_channel

            self._channel = intercept_channel(self._channel, client_interceptor())
        self._stub = api_pb2_grpc.PodSchedStub(self._channel)

    def __enter__(self) -> PodSchedClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def failure(self, error: grpc.RpcError) -> RequestFailedError:
        code = error.code()
        details = error.details() if hasattr(error, "details") else ""
        name = code.name if code else "UNKNOWN"
        if self.tls and name == "UNAVAILABLE" and _tls_failure(details or ""):
            # The server refused our certificate (it closes the connection), or we refused its.
            line = (
                f"Unable to connect to the server {self.address}: the TLS handshake failed ({details}); "
                "check --certificate-authority, --client-certificate and --client-key"
            )
            return RequestFailedError(line, unreachable=True)
        line = rpc_error_message(name, details, self.address, self.timeout)
        return RequestFailedError(line, unreachable=name in ("UNAVAILABLE", "DEADLINE_EXCEEDED"))

    def _call(self, method: Any, request: Any) -> Any:
        try:
            return method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise self.failure(error) from None

    def apply(self, document: dict[str, Any], *, dry_run: bool, source: str) -> api_pb2.ApplyResponse:
        request = api_pb2.ApplyRequest(object_json=json.dumps(document).encode("utf-8"), dry_run=dry_run, source=source)
        response: api_pb2.ApplyResponse = self._call(self._stub.Apply, request)
        return response

    def get(
        self, resource: str, name: str = "", namespace: str = "", *, all_namespaces: bool = False
    ) -> list[dict[str, Any]]:
        request = api_pb2.GetRequest(resource=resource, name=name, namespace=namespace, all_namespaces=all_namespaces)
        response: api_pb2.GetResponse = self._call(self._stub.Get, request)
        return [json.loads(raw) for raw in response.objects_json]

    def delete(
        self,
        resource: str,
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        request = api_pb2.DeleteRequest(resource=resource, name=name, namespace=namespace, dry_run=dry_run)
        if grace_period_seconds is not None:
            request.grace_period_seconds = grace_period_seconds
        response: api_pb2.DeleteResponse = self._call(self._stub.Delete, request)
        stored = json.loads(response.object_json) if response.object_json else {}
        return stored if isinstance(stored, dict) else {}

    def delete_collection(
        self,
        resource: str,
        namespace: str = "",
        *,
        all_namespaces: bool = False,
        label_selector: str = "",
        field_selector: str = "",
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> api_pb2.DeleteCollectionResponse:
        request = api_pb2.DeleteCollectionRequest(
            resource=resource,
            namespace=namespace,
            all_namespaces=all_namespaces,
            label_selector=label_selector,
            field_selector=field_selector,
            dry_run=dry_run,
        )
        if grace_period_seconds is not None:
            request.grace_period_seconds = grace_period_seconds
        response: api_pb2.DeleteCollectionResponse = self._call(self._stub.DeleteCollection, request)
        return response

    def list_events(
        self, namespace: str = "", *, all_namespaces: bool = False, involved_uid: str = ""
    ) -> list[events_pb2.Event]:
        request = api_pb2.ListEventsRequest(
            namespace=namespace, all_namespaces=all_namespaces, involved_uid=involved_uid
        )
        response: api_pb2.ListEventsResponse = self._call(self._stub.ListEvents, request)
        return list(response.events)

    def watch(
        self,
        template: api_pb2.WatchRequest,
        point: WatchPoint,
        on_open: Callable[[api_pb2.WatchRequest], None] | None = None,
    ) -> ResumingWatch:
        """Follow the cluster from `point` on, across dropped connections and server restarts (the watch
        resumes where it broke off). No deadline: it runs until cancelled. Each call starts at once, so
        events recorded while a list is read are not missed."""
        return ResumingWatch(
            lambda request: self._stub.Watch(request, metadata=self._metadata),
            template,
            point,
            self.failure,
            on_open=on_open,
        )

    def watch_events(self, namespace: str) -> ResumingWatch:
        """Follow the events of `namespace` ("" for every namespace) from now on."""
        template = api_pb2.WatchRequest(include_events=True, events_only=True, namespace=namespace)
        return self.watch(template, WatchPoint())


def _tls_failure(details: str) -> bool:
    if details.startswith("Error from server"):  # the server answered: something behind it is unavailable
        return False
    lowered = details.lower()
    return any(sign in lowered for sign in ("handshake", "ssl", "socket closed", "certificate"))
