"""`python -m podsched_devstack up|down|status|run`: the whole system on this machine.

up      Kafka (installed from Maven Central on first use) and the four services, in the background;
        state persists across `down`/`up` in .cache/devstack (the default topics).
down    stop the services (SIGTERM: drain, commit, flush) and Kafka.
status  what is running.
run     up, then the High/Mid/Low example with a preemption on fresh topics, printed as the CLI
        prints it; serves until Ctrl-C, then down.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from podsched_service.config import env_name

from .kafka import CLI_DEFAULT_PORT, DevstackError, KafkaBroker, ensure_kafka_installed, repo_root
from .services import SERVICES, ServiceStack, StackSettings

EXAMPLE = Path("examples/high-mid-low")


def _run_dir() -> Path:
    return repo_root() / ".cache" / "devstack" / "services"


def _broker() -> KafkaBroker:
    return KafkaBroker(repo_root() / ".cache" / "devstack" / "kafka", port=CLI_DEFAULT_PORT)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _running_pids() -> dict[str, int]:
    pids = {}
    for name in SERVICES:
        path = _run_dir() / f"{name}.pid"
        if path.is_file():
            pid = int(path.read_text())
            if _pid_alive(pid):
                pids[name] = pid
    return pids


def up(workers: int, topic_prefix: str = "") -> ServiceStack:
    if _running_pids():
        raise DevstackError("podsched is already up (python -m podsched_devstack down first)")
    began = time.monotonic()
    ensure_kafka_installed()
    broker = _broker()
    if broker.pid is None or not broker.is_ready():
        broker.start(timeout=120)
        broker.detach()
    stack = ServiceStack(StackSettings(broker.bootstrap_servers, _run_dir(), topic_prefix, workers=workers))
    stack.start()
    addresses = stack.settings.addresses
    print(
        f"podsched up in {time.monotonic() - began:.1f} s: API {addresses['queue']} (queue), "
        f"filter {addresses['filter']}, preemption {addresses['preemption']} ({workers} workers), "
        f"binder {addresses['binder']}; Kafka {broker.bootstrap_servers}, topics "
        f"{topic_prefix}podsched.objects.v1 and {topic_prefix}podsched.events.v1; logs in {_run_dir()}",
        flush=True,
    )
    return stack


def down() -> None:
    pids = _running_pids()
    for name in reversed(SERVICES):  # readers first, the binder (the writer) last
        pid = pids.get(name)
        if pid is None:
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
        (_run_dir() / f"{name}.pid").unlink(missing_ok=True)
        print(f"stopped {name} (pid {pid})")
    broker = KafkaBroker(repo_root() / ".cache" / "devstack" / "kafka")
    if broker.pid is not None:
        broker.stop()
        print("stopped Kafka")


def status() -> int:
    pids = _running_pids()
    for name in SERVICES:
        print(f"{name}: {'up, pid ' + str(pids[name]) if name in pids else 'down'}")
    broker = KafkaBroker(repo_root() / ".cache" / "devstack" / "kafka")
    print(f"kafka: {'up ' + broker.bootstrap_servers if broker.pid is not None and broker.is_ready() else 'down'}")
    return 0 if len(pids) == len(SERVICES) else 1


def run_example(server: str) -> None:
    from podsched_cli.main import main as podsched

    def step(*args: str) -> None:
        print(f"\n$ podsched {' '.join(args)}", flush=True)
        podsched(["--server", server, *args])

    def wait_until_all_bound(timeout: float) -> None:
        import grpc

        from podsched_proto.api.v1 import api_pb2, api_pb2_grpc

        with grpc.insecure_channel(server) as channel:
            stub = api_pb2_grpc.PodSchedStub(channel)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                pods = stub.Get(api_pb2.GetRequest(resource="pods")).objects_json
                if pods and all(b'"nodeName"' in p for p in pods):
                    return
                time.sleep(0.2)

    step("apply", "-f", str(EXAMPLE / "cluster.yaml"))
    step("apply", "-f", str(EXAMPLE / "workload.yaml"))
    wait_until_all_bound(30)
    step("get", "pods", "-o", "wide")
    step("apply", "--dry-run=server", "-f", str(EXAMPLE / "preemptor.yaml"))
    step("apply", "-f", str(EXAMPLE / "preemptor.yaml"))
    time.sleep(1.0)
    step("get", "pods", "-o", "wide")
    print("\n(xyz-0 is nominated to its node while the victims terminate: 30 s grace period)", flush=True)
    wait_until_all_bound(60)
    step("get", "pods", "-o", "wide")
    step("events")
    step("describe", "pod", "xyz-0")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m podsched_devstack", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("up", "run"):
        command = sub.add_parser(name)
        command.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="preemption worker processes")
    sub.add_parser("down")
    sub.add_parser("status")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            up(args.workers, os.environ.get(env_name("topic_prefix"), ""))
            return 0
        if args.command == "down":
            down()
            return 0
        if args.command == "status":
            return status()
        # run: fresh topics, so the example starts from an empty cluster every time
        stack = up(args.workers, f"run-{int(time.time())}.")
        try:
            run_example(stack.server)
            print(
                f"\npodsched is serving at {stack.server}. Try `podsched get pods -o wide` or "
                "`podsched events --watch` in another terminal. Ctrl-C stops everything.",
                flush=True,
            )
            while all(p.poll() is None for p in stack.processes.values()):
                time.sleep(0.5)
            print("a service exited; see " + str(_run_dir()), file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("\nstopping...", flush=True)
            return 0
        finally:
            stack.stop()
            for name in SERVICES:
                (_run_dir() / f"{name}.pid").unlink(missing_ok=True)
            _broker().stop()
    except DevstackError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
