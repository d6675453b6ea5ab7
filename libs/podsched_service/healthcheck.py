"""`python -m podsched_service.healthcheck ADDRESS [SERVICE] [--ca FILE] [--cert FILE --key FILE]`:
exit 0 if the gRPC server at ADDRESS reports SERVING (grpc.health.v1), 1 otherwise. Used by
docker-compose health checks and `make up`. With --ca the port is spoken to over TLS (verified
against that CA bundle), with --cert/--key presenting a client certificate (mutual TLS)."""

from __future__ import annotations

import argparse
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from podsched_service.tls import ClientTLS


def check(address: str, service: str = "", timeout: float = 2.0, tls: ClientTLS | None = None) -> bool:
    channel = grpc.insecure_channel(address) if tls is None else grpc.secure_channel(address, tls.credentials())
    with channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m podsched_service.healthcheck", description=__doc__.split("\n")[0])
    parser.add_argument("address", help="HOST:PORT")
    parser.add_argument("service", nargs="?", default="", help="the service to ask about (default: the server)")
    parser.add_argument("--ca", default="", help="PEM CA bundle that verifies the server: speak TLS")
    parser.add_argument("--cert", default="", help="PEM client certificate (mutual TLS)")
    parser.add_argument("--key", default="", help="PEM key of --cert")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    tls = ClientTLS(args.ca, args.cert, args.key) if args.ca or args.cert else None
    try:
        return 0 if check(args.address, args.service, tls=tls) else 1
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
