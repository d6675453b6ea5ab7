"""`python -m podsched_dashboard`: serve the dashboard (configured by PODSCHED_* variables)."""

from __future__ import annotations

import logging
import sys

import uvicorn

from podsched_cli.errors import UsageError
from podsched_service.config import load_config

from .api_client import connection_of
from .app import Dashboard, build_app
from .config import DashboardConfig


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        config = load_config(DashboardConfig)
        config.validate()
        connection = connection_of(config)
    except (ValueError, UsageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    host, _, port = config.listen_address.rpartition(":")
    dashboard = Dashboard(config, connection)
    logging.getLogger(__name__).info(
        "dashboard on http://%s for the API at %s%s",
        config.listen_address,
        connection.address,
        " (TLS)" if connection.tls else "",
    )
    # uvicorn handles SIGTERM and SIGINT: it stops accepting, closes the streams, runs the lifespan's
    # shutdown (the Watch is cancelled, the channel closed).
    uvicorn.run(
        build_app(dashboard), host=host.strip("[]"), port=int(port), log_level="warning", timeout_graceful_shutdown=3
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
