"""Configuration of the dashboard (environment variables PODSCHED_<FIELD>).

The dashboard is a client of the public API like the `podsched` CLI, and reads the same settings
the same way: PODSCHED_SERVER, PODSCHED_KUBECONFIG (and its context), or a token and certificate
files given directly. Only the web side has settings of its own."""

from __future__ import annotations

import dataclasses

from podsched_service.config import DEFAULT_QUEUE_ADDRESS

DEFAULT_DASHBOARD_ADDRESS = "127.0.0.1:8080"


@dataclasses.dataclass(frozen=True, slots=True)
class DashboardConfig:
    # The public API (host:port, or https://host:port for TLS), as the CLI's --server.
    server: str = DEFAULT_QUEUE_ADDRESS
    # A kubeconfig-shaped file (the CLI's --kubeconfig): server, CA, client certificate, token.
    kubeconfig: str = ""
    # The kubeconfig context to use; empty: its current-context.
    context: str = ""
    # A bearer token (the CLI's --token); overrides the kubeconfig's user token.
    token: str = ""
    # PEM files (the CLI's --certificate-authority, --client-certificate, --client-key).
    certificate_authority: str = ""
    client_certificate: str = ""
    client_key: str = ""
    # Where the web UI listens (host:port).
    listen_address: str = DEFAULT_DASHBOARD_ADDRESS
    # Jaeger's query API, used to find a preemption's trace; empty: no trace links.
    jaeger_url: str = ""
    # Where links to a trace point (Jaeger's UI); empty: jaeger_url.
    jaeger_ui_url: str = ""
    # Seconds a gRPC call may take before the page says the server does not answer.
    request_timeout_seconds: float = 10.0
    # Items per page in the node and queue views.
    page_size: int = 50
    # At most this many preemptions are kept for the timeline (the newest).
    timeline_length: int = 200

    def validate(self) -> None:
        host, _, port = self.listen_address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"PODSCHED_LISTEN_ADDRESS: {self.listen_address!r} is not HOST:PORT")
        if self.page_size < 1:
            raise ValueError(f"PODSCHED_PAGE_SIZE: {self.page_size} must be at least 1")
        if self.timeline_length < 1:
            raise ValueError(f"PODSCHED_TIMELINE_LENGTH: {self.timeline_length} must be at least 1")
