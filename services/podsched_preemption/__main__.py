"""`python -m podsched_preemption`: run the preemption service (configured by PODSCHED_* variables)."""

from __future__ import annotations

import grpc

from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from podsched_service.server import Lifecycle, run_service

from .config import PreemptionConfig
from .service import PreemptionServicer


def build(config: PreemptionConfig, server: grpc.aio.Server) -> tuple[str, Lifecycle, Lifecycle]:
    servicer = PreemptionServicer(config)
    preemption_pb2_grpc.add_PreemptionServicer_to_server(servicer, server)
    return preemption_pb2.DESCRIPTOR.services_by_name["Preemption"].full_name, servicer.start, servicer.stop


def main() -> None:
    run_service("podsched-preemption", PreemptionConfig, build)


if __name__ == "__main__":
    main()
