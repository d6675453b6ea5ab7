"""TLS for the gRPC ports: server credentials from PEM files, channel credentials for callers, and
the identity a verified client certificate carries.

gRPC Python can either not ask for a client certificate or require one (there is no "request but
do not require" mode in its API), so a port with a client CA is mutual TLS for every caller: a
connection without a certificate signed by that CA fails in the TLS handshake, before any RPC.

A client certificate identifies a user as Kubernetes' x509 authenticator does: the subject's
CommonName is the user name, its Organizations are the groups."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
from cryptography import x509
from cryptography.x509.oid import NameOID

# The auth-context property gRPC fills with the peer's verified leaf certificate (PEM).
PEER_CERTIFICATE_PROPERTY = "x509_pem_cert"
HEALTH_SERVICE_PREFIX = "/grpc.health.v1.Health/"


def read_pem(path: str, what: str) -> bytes:
    """The file's bytes; ValueError naming `what` (the setting) if it cannot be read or is not PEM."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ValueError(f"{what}: cannot read {path}: {error.strerror}") from None
    if b"-----BEGIN " not in data:
        raise ValueError(f"{what}: {path} is not a PEM file")
    return data


@dataclasses.dataclass(frozen=True, slots=True)
class ServerTLS:
    """What a service's gRPC port serves: its certificate chain and key, and, for mutual TLS, the CA
    bundle client certificates must chain to. `client_groups` further restricts which verified
    clients may call anything but the health service (a certificate must carry one of the groups)."""

    cert_file: str
    key_file: str
    client_ca_file: str = ""
    client_groups: tuple[str, ...] = ()

    @staticmethod
    def from_config(config: Any) -> ServerTLS | None:
        """From a service config's tls_* fields; None when the port is plaintext (no certificate).
        Raises ValueError naming the variable for an incomplete setting."""
        cert, key, client_ca = config.tls_cert_file, config.tls_key_file, config.tls_client_ca_file
        groups = tuple(group.strip() for group in config.tls_client_groups.split(",") if group.strip())
        if not cert and not key:
            if client_ca or groups:
                raise ValueError(
                    "PODSCHED_TLS_CLIENT_CA_FILE and PODSCHED_TLS_CLIENT_GROUPS need PODSCHED_TLS_CERT_FILE "
                    "and PODSCHED_TLS_KEY_FILE (client certificates exist only over TLS)"
                )
            return None
        if not cert or not key:
            raise ValueError("PODSCHED_TLS_CERT_FILE and PODSCHED_TLS_KEY_FILE must be set together")
        if groups and not client_ca:
            raise ValueError("PODSCHED_TLS_CLIENT_GROUPS needs PODSCHED_TLS_CLIENT_CA_FILE (mutual TLS)")
        return ServerTLS(cert, key, client_ca, groups)

    @property
    def mutual(self) -> bool:
        return bool(self.client_ca_file)

    def credentials(self) -> grpc.ServerCredentials:
        """Read the files now (a service fails at start, naming the variable, if one is unusable)."""
        chain = read_pem(self.cert_file, "PODSCHED_TLS_CERT_FILE")
        key = read_pem(self.key_file, "PODSCHED_TLS_KEY_FILE")
        roots = read_pem(self.client_ca_file, "PODSCHED_TLS_CLIENT_CA_FILE") if self.client_ca_file else None
        return grpc.ssl_server_credentials(
            [(key, chain)], root_certificates=roots, require_client_auth=roots is not None
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ClientTLS:
    """What a caller needs for a TLS port: the CA bundle that verifies the server (empty: the system's
    roots) and, for mutual TLS, its own certificate and key."""

    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""

    def credentials(self) -> grpc.ChannelCredentials:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("a client certificate needs its key, and a key its certificate")
        return channel_credentials(
            read_pem(self.ca_file, "certificate authority") if self.ca_file else None,
            read_pem(self.cert_file, "client certificate") if self.cert_file else None,
            read_pem(self.key_file, "client key") if self.key_file else None,
        )


def channel_credentials(ca: bytes | None, cert: bytes | None, key: bytes | None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)


@functools.lru_cache(maxsize=256)  # every call on a connection brings the same certificate
def certificate_identity(pem: bytes) -> tuple[str, tuple[str, ...]] | None:
    """(user, groups) of a client certificate: subject CommonName and Organizations, as Kubernetes'
    x509 authenticator maps them; None if the subject has no CommonName (no user to speak of)."""
    certificate = x509.load_pem_x509_certificate(pem)
    names = [str(attribute.value) for attribute in certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    if not names or not names[0]:
        return None
    groups = tuple(
        str(attribute.value) for attribute in certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    )
    return names[0], groups


def peer_certificate(auth_context: Mapping[str, Iterable[bytes]]) -> bytes | None:
    """The verified client certificate of a call (PEM), from its auth context; None without TLS or
    without a client certificate."""
    values = list(auth_context.get(PEER_CERTIFICATE_PROPERTY, ()))
    return values[0] if values else None


class ClientGroupGate(grpc.aio.ServerInterceptor):
    """Refuses every RPC but health checks (PERMISSION_DENIED) unless the caller's client certificate
    carries one of `groups` (subject O). Internal services use it so that a certificate the same CA
    issued to a user cannot call the binder directly."""

    def __init__(self, groups: Sequence[str]) -> None:
        self.groups = frozenset(groups)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(HEALTH_SERVICE_PREFIX):
            return handler
        return _guarded(handler, self._check)

    async def _check(self, context: grpc.aio.ServicerContext) -> None:
        pem = peer_certificate(context.auth_context())
        identity = certificate_identity(pem) if pem is not None else None
        if identity is None or not self.groups.intersection(identity[1]):
            user = identity[0] if identity else ""
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f'Error from server (Forbidden): client certificate "{user}" is not in a group this service '
                f"serves ({', '.join(sorted(self.groups))})",
            )


def _guarded(
    handler: grpc.RpcMethodHandler, check: Callable[[grpc.aio.ServicerContext], Awaitable[None]]
) -> grpc.RpcMethodHandler:
    """The same handler with `check(context)` run before its behaviour."""
    if handler.unary_unary is not None:
        inner_unary = handler.unary_unary

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await check(context)
            return await inner_unary(request, context)

        return grpc.unary_unary_rpc_method_handler(
            unary_unary, handler.request_deserializer, handler.response_serializer
        )
    if handler.unary_stream is not None:
        inner_stream = handler.unary_stream

        async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await check(context)
            async for item in inner_stream(request, context):
                yield item

        return grpc.unary_stream_rpc_method_handler(
            unary_stream, handler.request_deserializer, handler.response_serializer
        )
    if handler.stream_stream is not None:  # server reflection
        inner_bidi = handler.stream_stream

        async def stream_stream(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            await check(context)
            async for item in inner_bidi(requests, context):
                yield item

        return grpc.stream_stream_rpc_method_handler(
            stream_stream, handler.request_deserializer, handler.response_serializer
        )
    return handler
