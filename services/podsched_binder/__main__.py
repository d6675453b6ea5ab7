"""`python -m podsched_binder`: run the binder service (configured by PODSCHED_* variables)."""

from __future__ import annotations

import grpc

from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service.server import Lifecycle, run_service

from .config import BinderConfig
from .service import Binder, BinderServicer


def build(config: BinderConfig, server: grpc.aio.Server) -> tuple[str, Lifecycle, Lifecycle]:
    binder = Binder(config)
    binder_pb2_grpc.add_BinderServicer_to_server(BinderServicer(binder), server)
    return binder_pb2.DESCRIPTOR.services_by_name["Binder"].full_name, binder.start, binder.stop


def main() -> None:
    run_service("podsched-binder", BinderConfig, build)


if __name__ == "__main__":
    main()
