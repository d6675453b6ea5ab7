"""`python -m podsched_queue`: run the queue service (configured by PODSCHED_* variables)."""

from __future__ import annotations

import grpc

from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_service.server import Lifecycle, run_service

from .api import PodSchedServicer
from .config import QueueConfig
from .service import QueueService


def build(config: QueueConfig, server: grpc.aio.Server) -> tuple[str, Lifecycle, Lifecycle]:
    service = QueueService(config)
    api_pb2_grpc.add_PodSchedServicer_to_server(PodSchedServicer(service), server)
    return api_pb2.DESCRIPTOR.services_by_name["PodSched"].full_name, service.start, service.stop


def main() -> None:
    run_service("podsched-queue", QueueConfig, build)


if __name__ == "__main__":
    main()
