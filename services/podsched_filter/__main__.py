"""`python -m podsched_filter`: run the filter service (configured by PODSCHED_* variables)."""

from __future__ import annotations

import grpc

from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc
from podsched_service.server import Lifecycle, run_service

from .config import FilterConfig
from .service import FilterServicer


def build(config: FilterConfig, server: grpc.aio.Server) -> tuple[str, Lifecycle, Lifecycle]:
    servicer = FilterServicer(config)
    filter_pb2_grpc.add_FilterServicer_to_server(servicer, server)
    return filter_pb2.DESCRIPTOR.services_by_name["Filter"].full_name, servicer.start, servicer.stop


def main() -> None:
    run_service("podsched-filter", FilterConfig, build)


if __name__ == "__main__":
    main()
