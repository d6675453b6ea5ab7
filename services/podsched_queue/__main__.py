"""`python -m podsched_queue`: run the queue service (configured by PODSCHED_* variables)."""

from __future__ import annotations

import asyncio

from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_service.config import load_config
from podsched_service.server import ServiceHost, configure_logging

from .config import QueueConfig
from .service import PodSchedServicer, QueueService


async def serve(config: QueueConfig) -> None:
    service = QueueService(config)
    host = ServiceHost(
        "podsched-queue",
        config.listen_address,
        [api_pb2.DESCRIPTOR.services_by_name["PodSched"].full_name],
        config.shutdown_grace_seconds,
    )
    api_pb2_grpc.add_PodSchedServicer_to_server(PodSchedServicer(service), host.server)
    await host.run(service.start, service.stop)


def main() -> None:
    configure_logging("podsched-queue")
    asyncio.run(serve(load_config(QueueConfig)))


if __name__ == "__main__":
    main()
