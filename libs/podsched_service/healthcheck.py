"""`python -m podsched_service.healthcheck ADDRESS [SERVICE]`: exit 0 if the gRPC server at ADDRESS
reports SERVING (grpc.health.v1), 1 otherwise. Used by docker-compose health checks and `make up`."""

from __future__ import annotations

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check(address: str, service: str = "", timeout: float = 2.0) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m podsched_service.healthcheck ADDRESS [SERVICE]", file=sys.stderr)
        return 2
    return 0 if check(args[0], args[1] if len(args) > 1 else "") else 1


if __name__ == "__main__":
    sys.exit(main())
