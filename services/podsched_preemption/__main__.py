"""`python -m podsched_preemption`: run the preemption service (configured by PODSCHED_* variables)."""

from __future__ import annotations

import asyncio

from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from podsched_service.config import load_config
from podsched_service.server import ServiceHost, configure_logging

from .config import PreemptionConfig
from .service import PreemptionServicer


async def serve(config: PreemptionConfig) -> None:
    servicer = PreemptionServicer(config)
    host = ServiceHost(
        "podsched-preemption",
        config.listen_address,
        [preemption_pb2.DESCRIPTOR.services_by_name["Preemption"].full_name],
        config.shutdown_grace_seconds,
    )
    preemption_pb2_grpc.add_PreemptionServicer_to_server(servicer, host.server)
    await host.run(servicer.start, servicer.stop)


def main() -> None:
    configure_logging("podsched-preemption")
    asyncio.run(serve(load_config(PreemptionConfig)))


if __name__ == "__main__":
    main()
