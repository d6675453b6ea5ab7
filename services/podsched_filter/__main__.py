"""`python -m podsched_filter`: run the filter service (configured by PODSCHED_* variables)."""

from __future__ import annotations

import asyncio

from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc
from podsched_service.config import load_config
from podsched_service.server import ServiceHost, configure_logging

from .config import FilterConfig
from .service import FilterServicer


async def serve(config: FilterConfig) -> None:
    servicer = FilterServicer(config)
    host = ServiceHost(
        "podsched-filter",
        config.listen_address,
        [filter_pb2.DESCRIPTOR.services_by_name["Filter"].full_name],
        config.shutdown_grace_seconds,
    )
    filter_pb2_grpc.add_FilterServicer_to_server(servicer, host.server)
    await host.run(servicer.start, servicer.stop)


def main() -> None:
    configure_logging("podsched-filter")
    asyncio.run(serve(load_config(FilterConfig)))


if __name__ == "__main__":
    main()
