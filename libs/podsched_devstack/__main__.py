"""`python -m podsched_devstack up|down|status|run`: the whole system on this machine.

up      Kafka (installed from Maven Central on first use; --kafka-nodes 3: a replicated cluster),
        Jaeger (built from the Go module proxy on first use; loopback, in-memory), the four services
        and the dashboard (http://127.0.0.1:8080), in the background, the services exporting traces to
        Jaeger; state persists across `down`/`up` in .cache/devstack (the default topics).
down    stop the dashboard, the services (SIGTERM: drain, commit, flush), Kafka and Jaeger.
status  what is running.
run     up, then the High/Mid/Low example with a preemption on fresh topics, printed as the CLI
        prints it, then the preemptor's trace from Jaeger; serves until Ctrl-C, then down.
certs   DIR: development TLS certificates, tokens, an authorization policy and a kubeconfig
        (podsched_devstack.certs; docker-compose.yml mounts .cache/certs, written by `make certs`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from podsched_service.config import env_name
from podsched_service.leader_election import BINDER_ROLE, QUEUE_ROLE, current_leader

from . import jaeger as jaeger_api
from .dashboard import DashboardProcess
from .jaeger import Jaeger, cli_jaeger, ensure_jaeger_installed
from .kafka import CLI_DEFAULT_PORT, KafkaBroker, ensure_kafka_installed
from .kafka import default_data_dir as kafka_data_dir
from .kafka_cluster import KafkaCluster
from .kafka_cluster import default_data_dir as kafka_cluster_dir
from .process import DevstackError, devstack_dir, process_cmdline, repo_root, stop_pid
from .services import SERVICES, ServiceStack, StackSettings, service_of, standby_binder_names, standby_queue_names

EXAMPLE = Path("examples/high-mid-low")


def _run_dir() -> Path:
    return devstack_dir("services")


def _broker() -> KafkaBroker:
    return KafkaBroker(kafka_data_dir(), port=CLI_DEFAULT_PORT)


def _kafka(nodes: int) -> KafkaBroker | KafkaCluster:
    """One broker on the fixed ports, or a cluster of `nodes` (on ports it keeps across restarts)."""
    return _broker() if nodes == 1 else KafkaCluster(kafka_cluster_dir(), nodes)


def _kafka_cluster_if_any() -> KafkaCluster | None:
    nodes = len(list(kafka_cluster_dir().glob("node-*"))) if kafka_cluster_dir().is_dir() else 0
    return KafkaCluster(kafka_cluster_dir(), nodes) if nodes else None


def _jaeger() -> Jaeger:
    return cli_jaeger()  # .cache/devstack/jaeger, ports 4317 (OTLP gRPC) and 16686 (API/UI) and friends


# `up` runs two queue replicas (both serve the API, the elected one schedules) and two binders (the
# elected one writes, the other waits); make status says who leads.
UP_QUEUE_REPLICAS = 2
UP_BINDER_REPLICAS = 2


def _process_names() -> tuple[str, ...]:
    return SERVICES + standby_queue_names(UP_QUEUE_REPLICAS) + standby_binder_names(UP_BINDER_REPLICAS)


def _running_pids() -> dict[str, int]:
    pids = {}
    for name in _process_names():
        path = _run_dir() / f"{name}.pid"
        if path.is_file():
            pid = int(path.read_text())
            if process_cmdline(pid) is not None:
                pids[name] = pid
    return pids


def _dashboard_pid() -> int | None:
    path = _run_dir() / "dashboard.pid"
    if path.is_file():
        pid = int(path.read_text())
        if process_cmdline(pid) is not None:
            return pid
    return None


def up(workers: int, topic_prefix: str = "", kafka_nodes: int = 1) -> tuple[ServiceStack, DashboardProcess]:
    if _running_pids() or _dashboard_pid():
        raise DevstackError("podsched is already up (python -m podsched_devstack down first)")
    began = time.monotonic()
    ensure_kafka_installed()
    ensure_jaeger_installed()
    broker = _kafka(kafka_nodes)
    nodes = list(broker) if isinstance(broker, KafkaCluster) else [broker]
    if any(node.pid is None or not node.is_ready() for node in nodes):
        broker.start(timeout=120)
        for node in nodes:
            node.detach()
    tracing = _jaeger()
    if tracing.pid is None or not tracing.is_ready():
        tracing.start(timeout=60)
        tracing.detach()
    settings = StackSettings(
        broker.bootstrap_servers,
        _run_dir(),
        topic_prefix,
        workers=workers,
        otlp_endpoint=tracing.otlp_endpoint,
        queue_replicas=UP_QUEUE_REPLICAS,
        binder_replicas=UP_BINDER_REPLICAS,
    )
    stack = ServiceStack(settings)
    stack.start()
    # Every queue replica serves the API: the dashboard is given them all and moves on when one stops.
    replicas = ",".join(settings.addresses[name] for name in settings.names if service_of(name) == "queue")
    dashboard = DashboardProcess(_run_dir(), replicas, jaeger_url=tracing.query_url)
    try:
        dashboard.start()
    except DevstackError:
        stack.stop()
        raise
    addresses = stack.settings.addresses
    names = settings.names
    metrics = ", ".join(f"{name} {stack.metrics_url(name)}" for name in names if stack.metrics_url(name))
    standbys = ", ".join(addresses[name] for name in standby_queue_names(UP_QUEUE_REPLICAS))
    print(
        f"podsched up in {time.monotonic() - began:.1f} s: API {addresses['queue']} (queue; also {standbys}), "
        f"filter {addresses['filter']}, preemption {addresses['preemption']} ({workers} workers), "
        f"binder {addresses['binder']}; Kafka {broker.bootstrap_servers}, topics "
        f"{topic_prefix}podsched.objects.v1 and {topic_prefix}podsched.events.v1; logs in {_run_dir()}\n"
        f"Jaeger {tracing.query_url} (traces: {tracing.query_url}/api/traces?service=podsched-queue; "
        f"OTLP {tracing.otlp_endpoint})\n"
        f"Prometheus metrics: {metrics}\n"
        f"Dashboard: {dashboard.url}",
        flush=True,
    )
    return stack, dashboard


def down() -> None:
    dashboard = _dashboard_pid()
    if dashboard is not None:
        stop_pid(dashboard, timeout=10)
        print(f"stopped dashboard (pid {dashboard})")
    (_run_dir() / "dashboard.pid").unlink(missing_ok=True)
    pids = _running_pids()
    for name in reversed(_process_names()):  # readers first, the binder (the writer) last
        pid = pids.get(name)
        if pid is None:
            continue
        stop_pid(pid, timeout=30)
        (_run_dir() / f"{name}.pid").unlink(missing_ok=True)
        print(f"stopped {name} (pid {pid})")
    broker = KafkaBroker(kafka_data_dir())
    if broker.pid is not None:
        broker.stop()
        print("stopped Kafka")
    cluster = _kafka_cluster_if_any()
    if cluster is not None and any(node.pid is not None for node in cluster):
        cluster.stop()
        print("stopped the Kafka cluster")
    tracing = _jaeger()
    if tracing.pid is not None:
        tracing.stop()
        print("stopped Jaeger")


def status() -> int:
    pids = _running_pids()
    for name in _process_names():
        print(f"{name}: {'up, pid ' + str(pids[name]) if name in pids else 'down'}")
    broker = KafkaBroker(kafka_data_dir())
    bootstrap = ""
    if broker.pid is not None and broker.is_ready():
        bootstrap = broker.bootstrap_servers
    print(f"kafka: {'up ' + bootstrap if bootstrap else 'down'}")
    cluster = _kafka_cluster_if_any()
    for node in cluster or ():
        up_here = node.pid is not None and node.is_ready()
        bootstrap = bootstrap or (cluster.bootstrap_servers if up_here else "")
        print(f"kafka cluster node {node.node_id}: {'up' if up_here else 'down'} {node.bootstrap_servers}")
    if bootstrap:
        prefix = os.environ.get(env_name("topic_prefix"), "")
        for role, what in ((QUEUE_ROLE, "scheduling leader"), (BINDER_ROLE, "writing binder")):
            leader = asyncio.run(current_leader(bootstrap, prefix, role))
            print(f"{what}: {f'{leader[0]} (epoch {leader[1]})' if leader else 'none yet'}")
    tracing = _jaeger()
    tracing_up = tracing.pid is not None and tracing.is_ready()
    print(f"jaeger: {f'up {tracing.query_url} (OTLP {tracing.otlp_endpoint})' if tracing_up else 'down'}")
    dashboard = _dashboard_pid()
    print(f"dashboard: {'up http://127.0.0.1:8080, pid ' + str(dashboard) if dashboard else 'down'}")
    # `up`'s default metrics ports
    defaults = StackSettings("", _run_dir(), queue_replicas=UP_QUEUE_REPLICAS, binder_replicas=UP_BINDER_REPLICAS)
    for name in _process_names():
        if name in pids:
            print(f"{name} metrics: {defaults.metrics_url(name)}")
    return 0 if len(pids) == len(_process_names()) else 1


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
    step("describe", "pod", _preemptor_name())


def _preemptor_name() -> str:
    import yaml

    for document in yaml.safe_load_all((repo_root() / EXAMPLE / "preemptor.yaml").read_text()):
        if isinstance(document, dict) and document.get("kind") == "Pod":
            return str(document["metadata"]["name"])
    return "xyz-0"


def print_preemption_trace(query_url: str, since: float, timeout: float = 15.0) -> None:
    """Find the preemptor's trace (started after ``since``, epoch seconds) in Jaeger and print its links and
    a text tree of it.

    Spans are exported in batches, so the search is retried for ``timeout`` seconds. Never fails `run`: if
    no trace turns up (tracing broken or off), it says so and carries on.
    """
    pod = _preemptor_name()
    # `settle`: the last services' spans (the bind) reach Jaeger up to a second or two after the work.
    traces = jaeger_api.wait_for_traces(
        query_url, "podsched-queue", {"k8s.pod.name": pod}, timeout=timeout, since=since, settle=2.0
    )
    if not traces:
        print(
            f"\nno trace found in Jaeger ({query_url}) for pod {pod} after {timeout:.0f} s: are the services "
            f"exporting spans? (see {_run_dir()})",
            flush=True,
        )
        return
    # The dry-run apply is a trace of its own; the preemption's trace is the one with the most spans.
    trace = max(traces, key=lambda t: len(t.get("spans", [])))
    trace_id = str(trace["traceID"])
    print(f"\nTrace of the preemption: {jaeger_api.trace_ui_url(query_url, trace_id)}", flush=True)
    # The locally built Jaeger has no UI assets (its page is a placeholder); the API and the tree below have it all.
    print(f"  as JSON: {query_url}/api/traces/{trace_id}", flush=True)
    print(jaeger_api.render_trace_tree(trace), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m podsched_devstack", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("up", "run"):
        command = sub.add_parser(name)
        command.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="preemption worker processes")
        command.add_argument(
            "--kafka-nodes", type=int, default=1, help="Kafka nodes (3: replicated, min.insync.replicas=2)"
        )
    sub.add_parser("down")
    sub.add_parser("status")
    certs = sub.add_parser("certs", help="write development TLS certificates, tokens, policy and kubeconfig")
    certs.add_argument("directory", type=Path)
    certs.add_argument("--server", default="https://127.0.0.1:50051", help="the kubeconfig's server")
    certs.add_argument("--host", action="append", default=[], help="another name or IP for the service certificate")
    args = parser.parse_args(argv)
    if args.command == "certs":
        from .certs import generate

        generate(args.directory, server=args.server, extra_hosts=args.host)
        print(f"development credentials in {args.directory} (never for production; see podsched_devstack/certs.py)")
        return 0
    try:
        if args.command == "up":
            up(args.workers, os.environ.get(env_name("topic_prefix"), ""), args.kafka_nodes)
            return 0
        if args.command == "down":
            down()
            return 0
        if args.command == "status":
            return status()
        # run: fresh topics, so the example starts from an empty cluster every time
        began = time.time()
        stack, dashboard = up(args.workers, f"run-{int(began)}.", args.kafka_nodes)
        # The example's `podsched` calls trace themselves too, so each pod's trace starts at the client.
        os.environ[env_name("otlp_endpoint")] = stack.settings.otlp_endpoint
        try:
            print(f"\nThe dashboard shows it live: {dashboard.url}", flush=True)
            run_example(stack.server)
            print_preemption_trace(_jaeger().query_url, since=began)
            print(
                f"\npodsched is serving at {stack.server}, its dashboard at {dashboard.url}. Try "
                "`podsched get pods -o wide` or `podsched events --watch` in another terminal. "
                "Ctrl-C stops everything.",
                flush=True,
            )
            processes = [*stack.processes.values(), dashboard.process]
            while all(p is not None and p.poll() is None for p in processes):
                time.sleep(0.5)
            print("a service exited; see " + str(_run_dir()), file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("\nstopping...", flush=True)
            return 0
        finally:
            dashboard.stop()
            stack.stop()
            for name in _process_names():
                (_run_dir() / f"{name}.pid").unlink(missing_ok=True)
            _broker().stop()
            _jaeger().stop()
    except DevstackError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
