"""The queue's connections to the filter, preemption and binder services."""

from __future__ import annotations

import grpc

from podsched_service import telemetry
from podsched_service.server import CHANNEL_OPTIONS
from podsched_service.tls import ClientTLS

from .config import QueueConfig

RPC_TIMEOUT = 60.0


def peer_channel(config: QueueConfig, address: str) -> grpc.aio.Channel:
    """A channel to the filter, preemption or binder service: TLS when PODSCHED_INTERNAL_TLS_CA_FILE
    is set (with the queue's client certificate, if configured, for services that require mutual TLS)."""
    interceptors = telemetry.client_interceptors()
    if not config.internal_tls_ca_file:
        return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS, interceptors=interceptors)
    tls = ClientTLS(config.internal_tls_ca_file, config.internal_tls_cert_file, config.internal_tls_key_file)
    try:
        credentials = tls.credentials()
    except ValueError as error:
        raise ValueError(f"PODSCHED_INTERNAL_TLS_CA_FILE/CERT_FILE/KEY_FILE: {error}") from None
    return grpc.aio.secure_channel(address, credentials, options=CHANNEL_OPTIONS, interceptors=interceptors)
