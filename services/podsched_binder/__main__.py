"""`python -m podsched_binder`: run the binder service (configured by PODSCHED_* variables)."""

from __future__ import annotations

import asyncio

from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service.config import load_config
from podsched_service.server import ServiceHost, configure_logging

from .config import BinderConfig
from .service import Binder, BinderServicer


async def serve(config: BinderConfig) -> None:
    binder = Binder(config)
    host = ServiceHost(
        "podsched-binder",
        config.listen_address,
        [binder_pb2.DESCRIPTOR.services_by_name["Binder"].full_name],
        config.shutdown_grace_seconds,
    )
    binder_pb2_grpc.add_BinderServicer_to_server(BinderServicer(binder), host.server)
    await host.run(binder.start, binder.stop)


def main() -> None:
    configure_logging("podsched-binder")
    asyncio.run(serve(load_config(BinderConfig)))


if __name__ == "__main__":
    main()
