"""Install and run a real, single-node Apache Kafka broker (KRaft, combined broker+controller) locally.

The broker is the genuine Apache Kafka server, resolved from Maven Central by ``deploy/local/kafka/pom.xml``
and started with ``java -cp <libs>/* kafka.Kafka``: no Docker, no tarball download, no ZooKeeper. It serves
the tests (:class:`KafkaBroker`, one per test module or session, on free loopback ports) and ``make run``
(the CLI below, on the fixed port 19092).

CLI::

    python -m podsched_devstack.kafka install                 # resolve the jars into the cache
    python -m podsched_devstack.kafka start [--data-dir D] [--port P]   # prints the bootstrap address
    python -m podsched_devstack.kafka status [--data-dir D]
    python -m podsched_devstack.kafka stop [--data-dir D]

Standard library only: the readiness check speaks the Kafka wire protocol itself (one Metadata request) so
this module works before aiokafka is installed and from inside a running event loop.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from .cache import cache_root, install_lock
from .process import HOST, DevstackError, ManagedProcess, devstack_dir, free_ports, repo_root, run_cli, tail

__all__ = [
    "DEFAULT_HEAP",
    "DevstackError",
    "KafkaBroker",
    "ensure_kafka_installed",
    "kafka_version",
]

#: Heap for the test/dev broker. A single node with a few small topics runs in well under 512 MB of heap;
#: the stock start script's 1 GB is sized for real load.
DEFAULT_HEAP = "-Xms256m -Xmx768m"

#: Ports for the CLI (``make run``); tests pick free ports instead.
CLI_DEFAULT_PORT = 19092

INSTALL_HINT = "install them with: apt-get install openjdk-17-jre-headless maven"

_POM_RELPATH = Path("deploy/local/kafka/pom.xml")
_LOG4J_RELPATH = Path("deploy/local/kafka/log4j.properties")
_MAVEN_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
# Pinned: an unpinned plugin makes Maven 3.8 resolve "latest" and print a warning on every run.
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


# ----------------------------------------------------------------------------------------------------
# Install
# ----------------------------------------------------------------------------------------------------


def kafka_version(pom: Path | None = None) -> str:
    """The Kafka version pinned in the pom, so the version is written down in exactly one place."""
    pom = pom or repo_root() / _POM_RELPATH
    root = ET.parse(pom).getroot()
    for dep in root.iterfind("m:dependencies/m:dependency", _MAVEN_NS):
        if dep.findtext("m:groupId", namespaces=_MAVEN_NS) == "org.apache.kafka" and (
            dep.findtext("m:artifactId", namespaces=_MAVEN_NS) or ""
        ).startswith("kafka_"):
            version = dep.findtext("m:version", namespaces=_MAVEN_NS)
            if version:
                return version.strip()
    raise DevstackError(f"{pom} has no org.apache.kafka:kafka_<scala> dependency with a version")


def _find_tool(name: str) -> str:
    if name == "java":
        # Honour JAVA_HOME like Kafka's own scripts, so a machine with several JDKs picks the intended one.
        java_home = os.environ.get("JAVA_HOME")
        if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
            return str(Path(java_home) / "bin" / "java")
    found = shutil.which(name)
    if found is None:
        raise DevstackError(
            f"`{name}` is not on PATH. The local Kafka broker needs a Java 17+ runtime and Maven: " + INSTALL_HINT
        )
    return found


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def ensure_kafka_installed() -> Path:
    """Resolve the Kafka jars into ``<cache>/kafka-<version>/libs`` once and return that directory.

    The first call runs Maven (about 6 s from an empty ``~/.m2``: 73 MB downloaded, 57 jars / 46 MB
    copied); later calls only read a marker file. The marker holds a hash of the pom, so editing the pom
    (e.g. another logging jar) triggers a fresh copy instead of silently reusing a stale classpath.
    """
    pom = repo_root() / _POM_RELPATH
    version = kafka_version(pom)
    home = cache_root() / f"kafka-{version}"
    libs = home / "libs"
    marker = home / ".installed"
    stamp = hashlib.sha256(pom.read_bytes()).hexdigest()

    def installed() -> bool:
        return libs.is_dir() and marker.is_file() and marker.read_text().strip() == stamp

    if installed():
        return libs
    # Checked before Maven runs so the error names the missing tool, not a later "java: not found".
    _find_tool("java")
    mvn = _find_tool("mvn")
    with install_lock(home / ".install.lock"):
        if installed():  # another process finished the install while we waited for the lock
            return libs
        # Copy into a private directory and rename at the end: an interrupted install never looks complete.
        staging = home / f"libs.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        cmd = [
            mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(pom),
            f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
            "-DincludeScope=runtime", f"-DoutputDirectory={staging}",
        ]  # fmt: skip
        result = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            output = _ANSI.sub("", result.stdout + result.stderr).strip().splitlines()
            raise DevstackError(
                f"Maven could not resolve Kafka {version} (exit {result.returncode}); command: "
                f"{shlex.join(cmd)}\n" + "\n".join(output[-40:])
            )
        if not (staging / f"kafka_2.13-{version}.jar").is_file():
            raise DevstackError(f"Maven finished but {staging} has no kafka_2.13-{version}.jar")
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        marker.write_text(stamp + "\n")
    return libs


# ----------------------------------------------------------------------------------------------------
# Wire-protocol readiness probe
# ----------------------------------------------------------------------------------------------------


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("broker closed the connection mid-response")
        chunks += chunk
    return bytes(chunks)


def probe_metadata(host: str, port: int, timeout: float = 2.0) -> list[tuple[int, str, int]]:
    """Send one Metadata v1 request (for no topics) and return the live brokers as (node id, host, port).

    A KRaft broker lists itself only once it has caught up with the metadata log and been unfenced, i.e.
    when produce and consume work. A TCP connect alone succeeds earlier than that. Metadata v1 is served by
    every broker from 0.10 to 4.x (4.0 dropped v0-v3 and restored them for older clients, KAFKA-18648).
    """
    client_id = b"podsched-devstack"
    correlation_id = 0x5EED
    # Request header v1 (api_key=3 Metadata, api_version=1, correlation id, int16-length client id), then the
    # v1 body: a topics array of length 0, which in v1 means "no topics" (-1 would mean all of them).
    request = struct.pack(">hhih", 3, 1, correlation_id, len(client_id)) + client_id + struct.pack(">i", 0)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        body = _recv_exact(sock, size)

    offset = 0

    def take(fmt: str) -> int:
        nonlocal offset
        (value,) = struct.unpack_from(fmt, body, offset)
        offset += struct.calcsize(fmt)
        return int(value)

    def take_string() -> str | None:
        nonlocal offset
        length = take(">h")
        if length < 0:
            return None
        text = body[offset : offset + length].decode()
        offset += length
        return text

    if take(">i") != correlation_id:
        raise ConnectionError("metadata response does not match the request")
    brokers = []
    for _ in range(take(">i")):
        node_id = take(">i")
        broker_host = take_string() or ""
        broker_port = take(">i")
        take_string()  # rack
        brokers.append((node_id, broker_host, broker_port))
    return brokers


# ----------------------------------------------------------------------------------------------------
# Broker
# ----------------------------------------------------------------------------------------------------


class KafkaBroker(ManagedProcess):
    """One Kafka broker (combined KRaft broker+controller) on loopback, owning ``data_dir``: a cluster
    of its own by default, or node ``node_id`` of a cluster whose controllers are ``voters``
    ((node id, controller port) each; podsched_devstack.kafka_cluster starts such a cluster).

    ``data_dir`` holds everything: ``server.properties``, the topic data (``kraft-logs/``), the logs
    (``logs/server.log``, ``logs/broker.out``), ``broker.pid`` and ``bootstrap.servers``. Starting again on
    the same directory reuses it, so topics, records and committed offsets survive a restart.

    With ``port=None`` the ports recorded in an existing ``data_dir`` are reused (clients keep one address
    across restarts); a fresh directory gets free ports.
    """

    _NAME = "Kafka broker"
    _CLI_MODULE = "podsched_devstack.kafka"
    _POLL_SECONDS = 0.25
    _STOP_SECONDS = 30.0  # a controlled shutdown

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        controller_port: int | None = None,
        heap: str = DEFAULT_HEAP,
        jvm_opts: Sequence[str] = (),
        *,
        node_id: int = 1,
        voters: Sequence[tuple[int, int]] = (),
        cluster_id: str | None = None,
    ) -> None:
        super().__init__(data_dir)
        recorded = recorded_ports(self._data_dir)
        if port is None and controller_port is None and recorded is not None:
            port, controller_port = recorded
        if port is None or controller_port is None:
            free = iter(p for p in free_ports(3) if p not in (port, controller_port))
            port = port if port is not None else next(free)
            controller_port = controller_port if controller_port is not None else next(free)
        if port == controller_port:
            raise ValueError(f"port and controller_port must differ (both {port})")
        self._port = port
        self._controller_port = controller_port
        self._heap = heap
        self._jvm_opts = tuple(jvm_opts)
        self.node_id = node_id
        self._voters = tuple(voters) or ((node_id, controller_port),)
        if (node_id, controller_port) not in self._voters:
            raise ValueError(f"node {node_id} (controller port {controller_port}) is not among the voters {voters}")
        self._cluster_id = cluster_id

    # -- paths and properties --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def controller_port(self) -> int:
        return self._controller_port

    @property
    def bootstrap_servers(self) -> str:
        return f"{HOST}:{self._port}"

    @property
    def server_properties(self) -> Path:
        return self._data_dir / "server.properties"

    @property
    def log_dir(self) -> Path:
        """Kafka's ``log.dirs``: the topic data and the KRaft metadata log."""
        return self._data_dir / "kraft-logs"

    @property
    def logs_dir(self) -> Path:
        """Human-readable logs: ``server.log`` (log4j) and ``broker.out`` (JVM stdout/stderr)."""
        return self._data_dir / "logs"

    @property
    def pid_file(self) -> Path:
        return self._data_dir / "broker.pid"

    @property
    def bootstrap_file(self) -> Path:
        """The bootstrap address while the broker runs, for scripts: ``$(cat .../bootstrap.servers)``."""
        return self._data_dir / "bootstrap.servers"

    @property
    def endpoint(self) -> str:
        return self.bootstrap_servers

    @property
    def logs(self) -> Path:
        return self.logs_dir

    def release(self) -> str:
        return f"Kafka {kafka_version()}"

    def is_ready(self) -> bool:
        """True when the broker answers a Metadata request and lists itself."""
        try:
            brokers = probe_metadata(HOST, self._port)
        except (OSError, ValueError, struct.error):  # not listening yet, closed mid-response, garbage
            return False
        return any(port == self._port for _, _, port in brokers)

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> None:
        """Start the broker (formatting ``data_dir`` on first use) and return once it serves metadata."""
        if self._already_started():
            return
        began = time.monotonic()
        libs = ensure_kafka_installed()
        java = _find_tool("java")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.server_properties.write_text(self._render_properties())
        self._format_storage(java, libs)

        cmd = [
            java, *shlex.split(self._heap), *self._broker_jvm_flags(), *self._common_jvm_flags(libs),
            "kafka.Kafka", str(self.server_properties),
        ]  # fmt: skip
        self._launch(cmd, self.logs_dir / "broker.out", began, timeout)
        self.bootstrap_file.write_text(self.bootstrap_servers + "\n")
        self.last_startup_seconds = time.monotonic() - began

    def kill9(self) -> None:
        """Crash the broker (SIGKILL, no shutdown hooks) for crash-recovery tests.

        The pid and bootstrap files are deliberately left behind, as after a real crash; :meth:`start` ignores
        a stale pid file.
        """
        pid = self.pid
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._release()
        elif pid is not None:
            os.kill(pid, signal.SIGKILL)

    def __repr__(self) -> str:
        return f"KafkaBroker({self.bootstrap_servers}, data_dir={self._data_dir}, pid={self.pid})"

    # -- internals -------------------------------------------------------------------------------------

    def _broker_jvm_flags(self) -> list[str]:
        # ExitOnOutOfMemoryError so a broken broker dies loudly instead of limping on and timing tests out.
        #
        # UseSerialGC, not kafka-run-class.sh's G1 (MaxGCPauseMillis=20, InitiatingHeapOccupancyPercent=35):
        # about 150 MiB of the heap stays live, above G1's threshold, so G1 ran concurrent marking cycles
        # through the runs, and in two PreemptionBasic/1000Nodes bursts of three they took 200-300 ms of
        # the two cores (the broker's CPU per preemptor 0.37 -> 0.70 ms, the slowest preemptor 2.08 ->
        # 2.18 s). The serial collector collected four times in a whole run (pauses of 14-33 ms).
        #
        # TieredStopAtLevel=1: compile with C1 only. This broker lives for minutes (a test run, a
        # benchmark) on cores it shares with the services, and C2 spends them compiling: during
        # PreemptionBasic/1000Nodes the C2 compiler thread used half of the broker's CPU, even after a
        # 20 s warm-up. With C1 alone the broker's CPU per pod halves (SchedulingBasic 0.45 -> 0.22 ms,
        # PreemptionBasic/1000Nodes 9-11 -> 4-5.5 ms per preemptor). A long-lived production broker
        # amortizes C2 and should keep Kafka's own defaults.
        return [
            "-server",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            *self._jvm_opts,
        ]

    def _common_jvm_flags(self, libs: Path) -> list[str]:
        """Logging and classpath, shared by the broker and the storage tool."""
        return [
            f"-Dkafka.logs.dir={self.logs_dir}",
            f"-Dlog4j.configuration=file:{repo_root() / _LOG4J_RELPATH}",
            "-cp",
            f"{libs}/*",
        ]

    @property
    def replication_factor(self) -> int:
        """Every topic's, internal ones included: one replica per node of the cluster."""
        return len(self._voters)

    def _render_properties(self) -> str:
        p, c = self._port, self._controller_port
        replicas = self.replication_factor
        # A write is acknowledged once two replicas have it (one when alone): a cluster of three
        # loses no acknowledged write to one crash and keeps taking writes with a node down.
        min_insync = min(2, replicas)
        voters = ",".join(f"{node}@{HOST}:{port}" for node, port in self._voters)
        return "\n".join(
            [
                "# Written by podsched_devstack.kafka on every start; edits are overwritten.",
                "# Combined broker+controller, static quorum (the same on Kafka 3.9 and 4.x).",
                "process.roles=broker,controller",
                f"node.id={self.node_id}",
                f"controller.quorum.voters={voters}",
                f"listeners=PLAINTEXT://{HOST}:{p},CONTROLLER://{HOST}:{c}",
                f"advertised.listeners=PLAINTEXT://{HOST}:{p}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                f"log.dirs={self.log_dir}",
                "num.partitions=1",
                "# One replica per node (a replication factor above the node count and the internal",
                "# topics are never created); topics created with replication factor -1 take this one.",
                f"default.replication.factor={replicas}",
                f"offsets.topic.replication.factor={replicas}",
                f"transaction.state.log.replication.factor={replicas}",
                f"transaction.state.log.min.isr={min_insync}",
                f"min.insync.replicas={min_insync}",
                "# The defaults (50 each) create 50 partitions, each with mmapped index files, on the first",
                "# consumer group / transaction: slow on 2 cores and pointless for a test-sized cluster.",
                "offsets.topic.num.partitions=5",
                "transaction.state.log.num.partitions=5",
                "# Default 3000 ms: every first consumer-group join would wait 3 s.",
                "group.initial.rebalance.delay.ms=0",
                "# After a kill -9 the restarted controller keeps the dead incarnation's session alive for",
                "# broker.session.timeout.ms and rejects the new registration until then (default 9 s, which",
                "# made every crash restart take 12 s). 5 s still tolerates 4 missed 1 s heartbeats, and the",
                "# heartbeats only travel over loopback inside one JVM.",
                "broker.session.timeout.ms=5000",
                "broker.heartbeat.interval.ms=1000",
                "# The log cleaner looks for compactable logs every 15 s by default; podsched.objects.v1 is",
                "# compacted, and 1 s lets a test see compaction without waiting. The check is cheap.",
                "log.cleaner.backoff.ms=1000",
                "# Defaults 3 and 8, sized for many cores and disks. Here one broker shares 2 cores with",
                "# the services, each request is a hand-off from a network thread to a handler and back,",
                "# and fewer threads keep those hand-offs on fewer, warmer threads.",
                "num.network.threads=1",
                "num.io.threads=2",
                "",
            ]
        )

    def _format_storage(self, java: str, libs: Path) -> None:
        # meta.properties is written by the format step; its presence means "formatted, reuse the data".
        if (self.log_dir / "meta.properties").is_file():
            return
        cluster_id = self._cluster_id or new_cluster_id()
        cmd = [
            java, "-Xmx256m", *self._common_jvm_flags(libs),
            "kafka.tools.StorageTool", "format",
            # One argument: a urlsafe base64 id may start with "-", which argparse takes for an option
            # (a formatting failure one broker start in 64).
            f"--cluster-id={cluster_id}", "-c", str(self.server_properties), "--ignore-formatted",
        ]  # fmt: skip
        result = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise DevstackError(
                f"kafka-storage format failed (exit {result.returncode}): {shlex.join(cmd)}\n"
                f"{result.stdout}{result.stderr}"
            )

    def _owns(self, cmdline: str) -> bool:
        return "kafka.Kafka" in cmdline and str(self.server_properties) in cmdline

    def readiness_subject(self) -> str:
        return f"Kafka broker on {self.bootstrap_servers}"

    def _run_files(self) -> list[Path]:
        return [self.pid_file, self.bootstrap_file]

    def _log_tails(self) -> str:
        return (
            f"--- {self.logs_dir / 'broker.out'} (tail) ---\n{tail(self.logs_dir / 'broker.out')}\n"
            f"--- {self.logs_dir / 'server.log'} (tail) ---\n{tail(self.logs_dir / 'server.log')}"
        )


def recorded_ports(data_dir: Path) -> tuple[int, int] | None:
    """(broker port, controller port) a broker on `data_dir` last started with, if any."""
    try:
        text = (Path(data_dir) / "server.properties").read_text()
    except OSError:
        return None
    broker = re.search(r"^listeners=.*PLAINTEXT://[^:,]+:(\d+)", text, re.MULTILINE)
    controller = re.search(r"^listeners=.*CONTROLLER://[^:,]+:(\d+)", text, re.MULTILINE)
    if broker is None or controller is None:
        return None
    return int(broker.group(1)), int(controller.group(1))


# ----------------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------------


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def default_data_dir() -> Path:
    """Where ``make up`` and the CLI keep the broker: ``<checkout>/.cache/devstack/kafka``."""
    return devstack_dir("kafka")


def _cli_broker(args: argparse.Namespace) -> KafkaBroker:
    """The broker the CLI arguments name.

    ``start`` defaults to the fixed ports 19092/19093 so `make run` has a stable address; ``stop`` and
    ``status`` without --port use whatever ports the data dir was last started with.
    """
    port, controller_port = args.port, args.controller_port
    if port is None and args.command == "start":
        port = CLI_DEFAULT_PORT
    if port is not None and controller_port is None:
        controller_port = port + 1
    return KafkaBroker(args.data_dir, port=port, controller_port=controller_port, heap=args.heap)


def _cli_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--port", type=int, default=None, help=f"default: {CLI_DEFAULT_PORT}")
    command.add_argument("--controller-port", type=int, default=None, help="default: port + 1")
    command.add_argument("--heap", default=DEFAULT_HEAP, help=f"JVM heap flags (default: {DEFAULT_HEAP!r})")


def _install() -> str:
    libs = ensure_kafka_installed()
    return f"Kafka {kafka_version()}: {len(list(libs.glob('*.jar')))} jars in {libs}"


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(
        argv,
        module="podsched_devstack.kafka",
        description="Install and run a local single-node Apache Kafka broker (KRaft) for podsched.",
        install=("resolve the Kafka jars from Maven Central into the cache", _install),
        default_data_dir=default_data_dir,
        make=_cli_broker,
        options=_cli_options,
        timeout=90.0,
    )


if __name__ == "__main__":
    sys.exit(main())
