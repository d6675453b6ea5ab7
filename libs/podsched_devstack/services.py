"""Run the four podsched services as local processes: for `make up` / `make run` and for the tests.

Each service is `python -m podsched_<name>` configured by PODSCHED_* variables (the same ones
docker-compose.yml sets). `ServiceStack` starts them in dependency order (binder, then filter and
preemption, then the queue), waits for gRPC health to say SERVING, and can stop, kill -9 and
restart any of them: the crash-safety tests drive it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from podsched_service.config import (
    DEFAULT_BINDER_ADDRESS,
    DEFAULT_BINDER_METRICS,
    DEFAULT_FILTER_ADDRESS,
    DEFAULT_FILTER_METRICS,
    DEFAULT_PREEMPTION_ADDRESS,
    DEFAULT_PREEMPTION_METRICS,
    DEFAULT_QUEUE_ADDRESS,
    DEFAULT_QUEUE_METRICS,
    env_name,
)
from podsched_service.healthcheck import check
from podsched_service.tls import ClientTLS

from .process import (
    free_ports,
    group_pids,
    process_cpu_seconds,
    rss_bytes,
    spawn,
    stop_child,
    tail,
    wait_ready,
)

SERVICES = ("binder", "filter", "preemption", "queue")  # start order: writers before readers


def standby_queue_names(replicas: int) -> tuple[str, ...]:
    """The process names of queue replicas beyond the first: queue-2, queue-3, ..."""
    return tuple(f"queue-{n}" for n in range(2, replicas + 1))


def standby_binder_names(replicas: int) -> tuple[str, ...]:
    """The process names of binders beyond the first: binder-2, ... (standbys until elected)."""
    return tuple(f"binder-{n}" for n in range(2, replicas + 1))


def service_of(name: str) -> str:
    """The service a process name runs (queue-2 is a queue)."""
    return name.split("-", 1)[0]


@dataclass
class StackSettings:
    bootstrap: str
    run_dir: Path
    topic_prefix: str = ""
    addresses: dict[str, str] = field(
        default_factory=lambda: {
            "queue": DEFAULT_QUEUE_ADDRESS,
            "filter": DEFAULT_FILTER_ADDRESS,
            "preemption": DEFAULT_PREEMPTION_ADDRESS,
            "binder": DEFAULT_BINDER_ADDRESS,
        }
    )
    workers: int = 2
    scheduler_config: str = ""
    # OTLP/gRPC endpoint the services export traces to (a Jaeger's `otlp_endpoint`); empty: tracing off.
    otlp_endpoint: str = ""
    # Prometheus endpoints (host:port, GET /metrics), one per service; empty turns a service's off.
    metrics_addresses: dict[str, str] = field(
        default_factory=lambda: {
            "queue": DEFAULT_QUEUE_METRICS,
            "filter": DEFAULT_FILTER_METRICS,
            "preemption": DEFAULT_PREEMPTION_METRICS,
            "binder": DEFAULT_BINDER_METRICS,
        }
    )
    extra_env: dict[str, str] = field(default_factory=dict)
    # More variables for one service (name -> variables), after extra_env: e.g. the queue's tokens.
    service_env: dict[str, dict[str, str]] = field(default_factory=dict)
    # How health checks reach services whose ports speak TLS (PODSCHED_TLS_CERT_FILE); None: plaintext.
    health_tls: ClientTLS | None = None
    # Queue replicas: all serve the public API (the first on addresses["queue"]), one leads the
    # scheduling loop; the others are queue-2, queue-3, ... with addresses and metrics of their own.
    queue_replicas: int = 1
    # Binders: the first leads, binder-2, ... wait as standbys with their ports closed; the queue
    # lists every binder's address and reaches the one that leads.
    binder_replicas: int = 1

    def __post_init__(self) -> None:
        # Replicas not given addresses: their service's default ports plus 10 per replica.
        for service, standbys in (
            ("queue", standby_queue_names(self.queue_replicas)),
            ("binder", standby_binder_names(self.binder_replicas)),
        ):
            for n, name in enumerate(standbys, start=1):
                if name not in self.addresses:
                    host, port = self.addresses[service].rsplit(":", 1)
                    self.addresses[name] = f"{host}:{int(port) + 10 * n}"
                if name not in self.metrics_addresses and self.metrics_addresses.get(service):
                    host, port = self.metrics_addresses[service].rsplit(":", 1)
                    self.metrics_addresses[name] = f"{host}:{int(port) + 10 * n}"

    @property
    def standbys(self) -> tuple[str, ...]:
        """The replicas beyond the first of each service, started after the rest."""
        return standby_queue_names(self.queue_replicas) + standby_binder_names(self.binder_replicas)

    @property
    def names(self) -> tuple[str, ...]:
        """Every process of the stack, in start order."""
        return SERVICES + self.standbys

    @property
    def binder_addresses(self) -> str:
        """Every binder's address, comma-separated (the queue's PODSCHED_BINDER_ADDRESS)."""
        return ",".join(self.addresses[name] for name in ("binder", *standby_binder_names(self.binder_replicas)))

    @staticmethod
    def on_free_ports(
        bootstrap: str, run_dir: Path, *, queue_replicas: int = 1, binder_replicas: int = 1, **kwargs: object
    ) -> StackSettings:
        """Settings whose gRPC and metrics ports are all free loopback ports (tests run stacks side by side)."""
        names = SERVICES + standby_queue_names(queue_replicas) + standby_binder_names(binder_replicas)
        ports = free_ports(2 * len(names))
        grpc_ports, metrics_ports = ports[: len(names)], ports[len(names) :]
        addresses = {name: f"127.0.0.1:{port}" for name, port in zip(names, grpc_ports, strict=True)}
        metrics = {name: f"127.0.0.1:{port}" for name, port in zip(names, metrics_ports, strict=True)}
        kwargs.setdefault("metrics_addresses", metrics)
        return StackSettings(
            bootstrap,
            run_dir,
            addresses=addresses,
            queue_replicas=queue_replicas,
            binder_replicas=binder_replicas,
            **kwargs,  # type: ignore[arg-type]
        )

    def metrics_url(self, name: str) -> str:
        """``http://<host:port>/metrics`` of one service, or "" if its metrics endpoint is off."""
        address = self.metrics_addresses.get(name, "")
        return f"http://{address}/metrics" if address else ""


class ServiceStack:
    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        settings.run_dir.mkdir(parents=True, exist_ok=True)

    @property
    def server(self) -> str:
        """The public API address (what `podsched --server` takes)."""
        return self.settings.addresses["queue"]

    def environment(self, name: str) -> dict[str, str]:
        s = self.settings
        env = dict(os.environ)
        env.update(
            {
                env_name("kafka_bootstrap_servers"): s.bootstrap,
                env_name("topic_prefix"): s.topic_prefix,
                env_name("listen_address"): s.addresses[name],
                env_name("scheduler_config"): s.scheduler_config,
                env_name("otlp_endpoint"): s.otlp_endpoint,
                env_name("metrics_address"): s.metrics_addresses.get(name, ""),
            }
        )
        if service_of(name) == "queue":
            for peer in ("filter", "preemption"):
                env[env_name(f"{peer}_address")] = s.addresses[peer]
            env[env_name("binder_address")] = s.binder_addresses
        if service_of(name) in ("queue", "binder"):
            env[env_name("replica_id")] = name
        if name == "preemption":
            env[env_name("workers")] = str(s.workers)
        env.update(s.extra_env)
        env.update(s.service_env.get(name, {}))
        return env

    def metrics_url(self, name: str) -> str:
        """``http://<host:port>/metrics`` of one service (Prometheus text format)."""
        return self.settings.metrics_url(name)

    def log_path(self, name: str) -> Path:
        return self.settings.run_dir / f"{name}.log"

    def pid_path(self, name: str) -> Path:
        return self.settings.run_dir / f"{name}.pid"

    def start(self, names: tuple[str, ...] | None = None, timeout: float = 120.0) -> None:
        """Start the services and wait until each serves; the standbys after the first replicas
        serve (so the first binder leads), and a standby binder is not waited for (it listens only
        once it leads)."""
        names = self.settings.names if names is None else names
        for group in (
            [n for n in names if n not in self.settings.standbys],
            [n for n in names if n in self.settings.standbys],
        ):
            for name in group:
                self.start_one(name, wait=False)
            for name in group:
                if not name.startswith("binder-"):
                    self.wait_healthy(name, timeout)

    def start_one(self, name: str, wait: bool = True, timeout: float = 120.0) -> None:
        with open(self.log_path(name), "ab") as log:  # appended across restarts: one story per service
            process = spawn([sys.executable, "-m", f"podsched_{service_of(name)}"], log, env=self.environment(name))
        self.processes[name] = process
        self.pid_path(name).write_text(str(process.pid))
        if wait:
            self.wait_healthy(name, timeout)

    def wait_healthy(self, name: str, timeout: float = 120.0) -> None:
        address = self.settings.addresses[name]
        wait_ready(
            self.processes.get(name),
            lambda: check(address, timeout=1.0, tls=self.settings.health_tls),
            timeout=timeout,
            poll_seconds=0.1,
            what=name,
            subject=f"{name} (gRPC health SERVING on {address})",
            log_tails=lambda: self.tail(name),
        )

    def tail(self, name: str, lines: int = 30) -> str:
        return tail(self.log_path(name), lines)

    def kill9(self, name: str) -> None:
        """SIGKILL the service's whole process group (the preemption service's workers too)."""
        process = self.processes.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop_one(self, name: str, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait: the service drains and exits. Returns the exit code."""
        process = self.processes.pop(name, None)
        if process is None:
            return None
        return stop_child(process, timeout)

    def restart(self, name: str, kill: bool = True, timeout: float = 120.0) -> None:
        if kill:
            self.kill9(name)
        else:
            self.stop_one(name)
        self.start_one(name, wait=True, timeout=timeout)

    def stop(self) -> None:
        for name in reversed(self.settings.names):
            self.stop_one(name)

    def rss_bytes(self) -> dict[str, int]:
        """Resident memory of each service's process group (the preemption workers included)."""
        return {
            name: sum(rss_bytes(pid) or 0 for pid in group_pids(process.pid))
            for name, process in self.processes.items()
        }

    def cpu_seconds(self) -> dict[str, float]:
        """User + system CPU time so far of each service's process group (the preemption workers included)."""
        return {
            name: sum(process_cpu_seconds(pid) or 0.0 for pid in group_pids(process.pid))
            for name, process in self.processes.items()
        }


# --- Prometheus metrics -----------------------------------------------------------------------------

MetricSamples = dict[tuple[str, frozenset[tuple[str, str]]], float]

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")


def scrape(url: str) -> MetricSamples:
    """Prometheus text format -> {(name, labels): value}."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        name, labels, value = match.groups()
        pairs = frozenset(re.findall(r'(\w+)="([^"]*)"', labels or ""))
        samples[(name, pairs)] = float(value)
    return samples


def value(samples: MetricSamples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)
