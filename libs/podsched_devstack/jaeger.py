"""Build and run a real Jaeger v2 locally, and read traces back from its query API.

The binary is Jaeger's own ``cmd/jaeger`` (the v2 all-in-one: an OpenTelemetry Collector distribution with
Jaeger's storage and query extensions), built from the Go module proxy into ``<cache>/jaeger-1.76.0/jaeger``
on first use: no Docker, no release tarball. Module ``github.com/jaegertracing/jaeger@v1.76.0`` is the same
commit as Jaeger v2.13.0. ``go install ...@v1.76.0`` refuses it (its go.mod has a ``replace`` directive), so
the build goes through a throw-away wrapper module in ``<cache>/jaeger-build`` whose go.mod and go.sum are
upstream's: every dependency is still pinned and checked by upstream's hashes, and the Jaeger module itself
by the checksum database.

It runs on loopback only, with in-memory storage (traces vanish when it stops), for the tests
(:class:`Jaeger` on free ports) and ``make up`` / ``make run`` (the CLI below, on the usual ports: OTLP gRPC
4317, OTLP HTTP 4318, query HTTP 16686, query gRPC 16685, health 13133). The built binary's UI is only a
placeholder page (the UI assets are not in the Go module); the HTTP query API (``/api/services``,
``/api/traces``, ``/api/traces/<id>``) is complete, and the helpers below read it.

CLI::

    python -m podsched_devstack.jaeger install                # build the binary into the cache
    python -m podsched_devstack.jaeger start [--data-dir D]   # prints the OTLP endpoint
    python -m podsched_devstack.jaeger status [--data-dir D]
    python -m podsched_devstack.jaeger stop [--data-dir D]

Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .cache import cache_root
from .gobuild import build_once, find_go, go_build, go_env, go_version, run_go, version_tuple
from .process import HOST, DevstackError, ManagedProcess, devstack_dir, free_ports, run_cli, tail

__all__ = [
    "JAEGER_MODULE_VERSION",
    "JAEGER_VERSION",
    "Jaeger",
    "ensure_jaeger_installed",
    "find_traces",
    "get_trace",
    "jaeger_binary",
    "render_trace_tree",
    "services",
    "trace_ui_url",
    "wait_for_trace",
    "wait_for_traces",
]

#: The Go module version that is built, and the Jaeger v2 release tagged on the same commit.
JAEGER_MODULE_VERSION = "1.76.0"
JAEGER_VERSION = "2.13.0"
_MODULE = "github.com/jaegertracing/jaeger"
_PACKAGE = f"{_MODULE}/cmd/jaeger"
# The release date of the module version (its .info "Time"): the binary's build date, so builds are repeatable.
_RELEASE_DATE = "2025-12-03T16:07:08Z"
_WRAPPER_MODULE = "podsched.local/jaeger-build"

#: Ports for the CLI (``make up`` / ``make run``), Jaeger's usual ones; tests pick free ports instead.
CLI_DEFAULT_PORTS = {
    "otlp_grpc": 4317,
    "otlp_http": 4318,
    "query_http": 16686,
    "query_grpc": 16685,
    "health": 13133,
}
PORT_NAMES = tuple(CLI_DEFAULT_PORTS)
DEFAULT_MAX_TRACES = 10_000
#: Where the CLI's Jaeger answers, for the query helpers' callers.
DEFAULT_QUERY_URL = f"http://{HOST}:{CLI_DEFAULT_PORTS['query_http']}"

INSTALL_HINT = "install Go 1.24 or newer (https://go.dev/dl/, or your distribution's golang package)"


# ----------------------------------------------------------------------------------------------------
# Install
# ----------------------------------------------------------------------------------------------------


def jaeger_binary() -> Path:
    """Where the built binary lives (whether or not it has been built yet)."""
    return cache_root() / f"jaeger-{JAEGER_MODULE_VERSION}" / "jaeger"


def _build_dir() -> Path:
    return cache_root() / "jaeger-build"


def _progress(message: str) -> None:
    print(f"[jaeger] {message}", file=sys.stderr, flush=True)


def ensure_jaeger_installed(progress: Callable[[str], None] = _progress) -> Path:
    """Build Jaeger into ``<cache>/jaeger-<version>/jaeger`` once and return the binary's path.

    Later calls only check that the file exists. The first build downloads a few hundred modules and
    compiles them: 3.5 minutes measured on 2 idle cores, allow 10 or more on a busy machine; with Go's
    module and build caches warm it only links (about 10 s). ``progress`` receives a line per step and one
    a minute while ``go build`` runs.
    """
    binary = jaeger_binary()
    return build_once(binary, lambda: _build(find_go("The local Jaeger", INSTALL_HINT), binary, progress))


def _build(go: str, binary: Path, progress: Callable[[str], None]) -> None:
    began = time.monotonic()
    progress(f"building Jaeger {JAEGER_MODULE_VERSION} from the Go module proxy (first time only, ~10 min)")
    version = go_version(go)

    # 1. The Jaeger module itself, checked against the checksum database like any `go get`. Run outside any
    #    module (an empty temporary directory) so no go.mod is read or written.
    progress(f"downloading {_MODULE}@v{JAEGER_MODULE_VERSION} (go mod download)")
    with tempfile.TemporaryDirectory(prefix="podsched-jaeger-") as scratch:
        out = run_go(
            [go, "mod", "download", "-json", f"{_MODULE}@v{JAEGER_MODULE_VERSION}"], Path(scratch), "go mod download"
        )
    info = json.loads(out)
    if info.get("Error"):
        raise DevstackError(f"go mod download {_MODULE}@v{JAEGER_MODULE_VERSION}: {info['Error']}")
    module_dir = Path(info["Dir"])
    upstream_mod = (module_dir / "go.mod").read_text()
    upstream_sum = (module_dir / "go.sum").read_text()

    required = re.search(r"^go\s+(\S+)", upstream_mod, re.MULTILINE)
    if required and version_tuple(version) < version_tuple(required.group(1)):
        raise DevstackError(
            f"Jaeger {JAEGER_MODULE_VERSION} needs Go {required.group(1)} or newer, but `{go}` is {version}: "
            + INSTALL_HINT
        )

    # 2. The wrapper module: upstream's go.mod (same requirements and replace directives) under another
    #    module path, requiring Jaeger; upstream's go.sum plus Jaeger's own hashes. `go mod tidy` is not an
    #    option: it would look up dependencies the checksum database does not serve through every proxy.
    build_dir = _build_dir()
    build_dir.mkdir(parents=True, exist_ok=True)
    mod = re.sub(r"^module\s+\S+", f"module {_WRAPPER_MODULE}", upstream_mod, count=1, flags=re.MULTILINE)
    mod = re.sub(r"^toolchain\s+\S+\n", "", mod, flags=re.MULTILINE)  # GOTOOLCHAIN=local: use the Go we have
    mod = re.sub(
        r"^(go\s+\S+\n)", rf"\1\nrequire {_MODULE} v{JAEGER_MODULE_VERSION}\n", mod, count=1, flags=re.MULTILINE
    )
    if re.search(r"=>\s*\.{1,2}/", mod):
        raise DevstackError(f"{_MODULE}@v{JAEGER_MODULE_VERSION}'s go.mod replaces a module with a local path")
    sums = upstream_sum.rstrip("\n") + "\n"
    sums += f"{_MODULE} v{JAEGER_MODULE_VERSION} {info['Sum']}\n"
    sums += f"{_MODULE} v{JAEGER_MODULE_VERSION}/go.mod {info['GoModSum']}\n"
    (build_dir / "go.mod").write_text(mod)
    (build_dir / "go.sum").write_text(sums)

    # 3. Compile. Output goes to a log file; a line a minute says it is still going.
    log_path = build_dir / "build.log"
    version_pkg = f"{_MODULE}/internal/version"
    ldflags = " ".join(
        [
            "-s -w",  # no symbol table or DWARF: about a third smaller
            f"-X {version_pkg}.latestVersion=v{JAEGER_VERSION}",
            f"-X {version_pkg}.date={_RELEASE_DATE}",
        ]
    )
    progress(f"compiling {_PACKAGE} with {version} (log: {log_path})")
    go_build(
        go,
        [f"-ldflags={ldflags}"],
        _PACKAGE,
        cwd=build_dir,
        binary=binary,
        log_path=log_path,
        env=go_env(),
        program="Jaeger",
        progress=progress,
    )
    progress(f"Jaeger {JAEGER_VERSION} built in {time.monotonic() - began:.0f} s: {binary}")


# ----------------------------------------------------------------------------------------------------
# Query API helpers (GET only, JSON)
# ----------------------------------------------------------------------------------------------------


def _get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def services(query_url: str = DEFAULT_QUERY_URL, timeout: float = 5.0) -> list[str]:
    """Names of the services Jaeger has spans from."""
    return sorted(_get_json(f"{query_url.rstrip('/')}/api/services", timeout).get("data") or [])


def find_traces(
    query_url: str,
    service: str,
    tags: Mapping[str, Any] | None = None,
    limit: int = 20,
    *,
    operation: str | None = None,
    since: float | None = None,
    timeout: float = 5.0,
) -> list[dict[str, Any]]:
    """Traces with a span of ``service`` carrying all ``tags`` (values compared as strings), newest first;
    only spans that started after ``since`` (seconds since the epoch) if given, else in the last hour.

    Each trace is Jaeger's JSON: ``{"traceID", "spans": [...], "processes": {...}}``, with every span of
    the trace, whatever its service.
    """
    params: dict[str, str] = {"service": service, "limit": str(limit)}
    if since is not None:
        params["start"] = str(int(since * 1_000_000))
        params["end"] = str(int((time.time() + 60) * 1_000_000))
    else:
        params["lookback"] = "1h"
    if tags:
        params["tags"] = json.dumps({key: str(value) for key, value in tags.items()})
    if operation:
        params["operation"] = operation
    url = f"{query_url.rstrip('/')}/api/traces?{urllib.parse.urlencode(params)}"
    traces: list[dict[str, Any]] = _get_json(url, timeout).get("data") or []
    traces.sort(key=lambda trace: min((span["startTime"] for span in trace.get("spans", [])), default=0), reverse=True)
    return traces


def get_trace(query_url: str, trace_id: str, timeout: float = 5.0) -> dict[str, Any]:
    """One trace's JSON. Raises :class:`LookupError` if Jaeger has no such trace."""
    url = f"{query_url.rstrip('/')}/api/traces/{urllib.parse.quote(trace_id)}"
    try:
        data = _get_json(url, timeout).get("data") or []
    except urllib.error.HTTPError as error:
        if error.code == 404:
            raise LookupError(f"trace {trace_id} not found in Jaeger at {query_url}") from None
        raise
    if not data:
        raise LookupError(f"trace {trace_id} not found in Jaeger at {query_url}")
    return dict(data[0])


def wait_for_traces(
    query_url: str,
    service: str,
    tags: Mapping[str, Any] | None = None,
    *,
    minimum: int = 1,
    timeout: float = 15.0,
    interval: float = 0.5,
    limit: int = 20,
    since: float | None = None,
    settle: float = 0.0,
) -> list[dict[str, Any]]:
    """:func:`find_traces` until it returns at least ``minimum`` traces (spans are exported in batches, so
    they show up a moment after the work); with ``settle`` > 0, then on until the answer (which traces, how
    many spans each) has not changed for ``settle`` seconds. Returns what it last found, possibly fewer than
    ``minimum`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    found: list[dict[str, Any]] = []
    while True:
        with contextlib.suppress(OSError, ValueError):  # not up yet / a half-written answer
            found = find_traces(query_url, service, tags, limit, since=since)
        if len(found) >= minimum or time.monotonic() >= deadline:
            break
        time.sleep(interval)
    if settle <= 0 or len(found) < minimum:
        return found

    # Then until nothing changes (no new trace, no new span) for `settle` seconds, still within `timeout`.
    def shape(traces: list[dict[str, Any]]) -> list[tuple[str, int]]:
        return sorted((str(t.get("traceID")), len(t.get("spans", []))) for t in traces)

    unchanged_since = time.monotonic()
    while time.monotonic() - unchanged_since < settle and time.monotonic() < deadline:
        time.sleep(interval)
        with contextlib.suppress(OSError, ValueError):
            latest = find_traces(query_url, service, tags, limit, since=since)
            if shape(latest) != shape(found):
                found, unchanged_since = latest, time.monotonic()
    return found


def wait_for_trace(
    query_url: str,
    trace_id: str,
    predicate: Callable[[dict[str, Any]], bool] | None = None,
    *,
    timeout: float = 15.0,
    interval: float = 0.5,
) -> dict[str, Any]:
    """:func:`get_trace` until the trace exists and ``predicate(trace)`` holds (e.g. "the last service's
    span has arrived"). Raises :class:`LookupError` after ``timeout``, saying what was there."""
    deadline = time.monotonic() + timeout
    last: dict[str, Any] | None = None
    while True:
        with contextlib.suppress(OSError, ValueError, LookupError):
            last = get_trace(query_url, trace_id)
            if predicate is None or predicate(last):
                return last
        if time.monotonic() >= deadline:
            if last is None:
                raise LookupError(f"trace {trace_id} not found in Jaeger at {query_url} after {timeout:.0f} s")
            raise LookupError(
                f"trace {trace_id} did not reach the expected shape within {timeout:.0f} s; it has:\n"
                + render_trace_tree(last)
            )
        time.sleep(interval)


def trace_ui_url(query_url: str, trace_id: str) -> str:
    return f"{query_url.rstrip('/')}/trace/{trace_id}"


#: Span attributes :func:`render_trace_tree` shows (plus every ``podsched.*`` one), in this order.
_SHOWN_TAGS = (
    "k8s.pod.name",
    "k8s.namespace.name",
    "k8s.node.name",
    "rpc.method",
    "messaging.destination.name",
)
_PARENT_REFS = ("CHILD_OF", "FOLLOWS_FROM")


def _format_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return text if text and not re.search(r"\s", text) else json.dumps(text)


def render_trace_tree(trace: Mapping[str, Any]) -> str:
    """An indented text tree of a trace's spans (Jaeger JSON): one line per span with its service,
    operation, start offset and duration in ms, and the attributes worth reading (``k8s.pod.name``,
    ``podsched.*``, ``messaging.destination.name``, ``rpc.method``, ...). Children are ordered by start time;
    a span whose parent is not in the trace is shown as a root. Sibling leaves that would print the same
    (say, every replica consuming the records of one Kafka write) share one line: ``[6 spans, +a..+b ms, max
    d ms]``."""
    spans = {span["spanID"]: span for span in trace.get("spans", [])}
    processes = trace.get("processes", {})
    children: dict[str | None, list[dict[str, Any]]] = {}
    for span in spans.values():
        parent = None
        for ref_type in _PARENT_REFS:
            parent = next(
                (
                    r["spanID"]
                    for r in span.get("references", [])
                    if r.get("refType") == ref_type and r["spanID"] in spans
                ),
                None,
            )
            if parent is not None:
                break
        children.setdefault(parent, []).append(span)
    for group in children.values():
        group.sort(key=lambda s: (s["startTime"], s["operationName"]))
    t0 = min((span["startTime"] for span in spans.values()), default=0)

    lines = [f"trace {trace.get('traceID', '?')}: {len(spans)} spans"]

    def identity(span: dict[str, Any]) -> tuple[str, str, str, str]:
        """(service, operation, error marker, attributes): what a line says apart from times."""
        service = processes.get(span.get("processID"), {}).get("serviceName", "?")
        tags = {tag["key"]: tag.get("value") for tag in span.get("tags", [])}
        shown = [key for key in _SHOWN_TAGS if key in tags]
        shown += sorted(key for key in tags if key.startswith("podsched.") and key not in shown)
        attributes = " ".join(f"{key}={_format_value(tags[key])}" for key in shown)
        error = " ERROR" if tags.get("error") in (True, "true") or tags.get("otel.status_code") == "ERROR" else ""
        return service, span["operationName"], error, attributes

    def line(same: list[dict[str, Any]]) -> str:
        service, operation, error, attributes = identity(same[0])
        first, last = ((same[i]["startTime"] - t0) / 1000 for i in (0, -1))
        if len(same) == 1:
            times = f"+{first:.1f} ms, {same[0]['duration'] / 1000:.1f} ms"
        else:
            longest = max(span["duration"] for span in same) / 1000
            times = f"{len(same)} spans, +{first:.1f}..+{last:.1f} ms, max {longest:.1f} ms"
        text = f"{service} {operation} [{times}]{error}"
        return f"{text} {attributes}" if attributes else text

    def walk(parent: str | None, depth: int) -> None:
        groups: dict[object, list[dict[str, Any]]] = {}  # insertion order: by each group's first start time
        for span in children.get(parent, []):
            key: object = identity(span) if span["spanID"] not in children else span["spanID"]
            groups.setdefault(key, []).append(span)
        for same in groups.values():
            lines.append("  " * depth + ("- " if depth else "") + line(same))
            if len(same) == 1:
                walk(same[0]["spanID"], depth + 1)

    walk(None, 0)
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------
# Process
# ----------------------------------------------------------------------------------------------------


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As Go's listeners do: a connection of the last run lingering in TIME_WAIT does not make the port busy.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return True
    return False


class Jaeger(ManagedProcess):
    """One Jaeger v2 process on loopback with in-memory storage, owning ``data_dir``.

    ``data_dir`` holds ``config.yaml`` (rewritten on every start), ``ports.json``, ``jaeger.log`` and, while
    it runs, ``jaeger.pid``. Every listener is on 127.0.0.1: OTLP gRPC and HTTP (the receivers), the query
    HTTP API/UI and query gRPC API, and the health check (``GET /status``). Jaeger's own metrics and its
    self-tracing are off.

    Ports not given are the ones recorded in ``data_dir`` by an earlier start when none is given at all,
    else free ones.
    """

    _NAME = "Jaeger"
    _CLI_MODULE = "podsched_devstack.jaeger"
    _POLL_SECONDS = 0.1
    _STOP_SECONDS = 15.0  # Jaeger shuts down cleanly in well under a second

    def __init__(
        self,
        data_dir: Path,
        ports: Mapping[str, int] | None = None,
        max_traces: int = DEFAULT_MAX_TRACES,
    ) -> None:
        super().__init__(data_dir)
        chosen = dict(ports or {})
        unknown = set(chosen) - set(PORT_NAMES)
        if unknown:
            raise ValueError(f"unknown Jaeger ports {sorted(unknown)}; known: {', '.join(PORT_NAMES)}")
        if not chosen:
            chosen = self._recorded_ports() or {}
        missing = [name for name in PORT_NAMES if name not in chosen]
        if missing:
            free = iter(p for p in free_ports(len(PORT_NAMES) * 2) if p not in chosen.values())
            chosen.update({name: next(free) for name in missing})
        if len(set(chosen.values())) != len(chosen):
            raise ValueError(f"Jaeger ports must differ: {chosen}")
        self._ports = {name: chosen[name] for name in PORT_NAMES}
        self._max_traces = max_traces

    # -- paths and properties --------------------------------------------------------------------------

    @property
    def ports(self) -> dict[str, int]:
        return dict(self._ports)

    @property
    def otlp_endpoint(self) -> str:
        """What PODSCHED_OTLP_ENDPOINT (OTLP gRPC, no TLS) takes: ``http://127.0.0.1:<port>``."""
        return f"http://{HOST}:{self._ports['otlp_grpc']}"

    @property
    def otlp_http_endpoint(self) -> str:
        return f"http://{HOST}:{self._ports['otlp_http']}"

    @property
    def query_url(self) -> str:
        """Base URL of the query HTTP API (``/api/...``) and the UI (``/trace/<id>``)."""
        return f"http://{HOST}:{self._ports['query_http']}"

    @property
    def health_url(self) -> str:
        return f"http://{HOST}:{self._ports['health']}/status"

    @property
    def config_file(self) -> Path:
        return self._data_dir / "config.yaml"

    @property
    def ports_file(self) -> Path:
        return self._data_dir / "ports.json"

    @property
    def log_file(self) -> Path:
        return self._data_dir / "jaeger.log"

    @property
    def pid_file(self) -> Path:
        return self._data_dir / "jaeger.pid"

    @property
    def endpoint(self) -> str:
        return self.otlp_endpoint

    @property
    def logs(self) -> Path:
        return self.log_file

    def summary(self) -> str:
        return f"OTLP {self.otlp_endpoint}, UI/API {self.query_url}"

    def release(self) -> str:
        return f"Jaeger {JAEGER_VERSION}"

    def is_ready(self) -> bool:
        """True when the query API answers ``GET /api/services`` and the OTLP gRPC port accepts connections
        (Jaeger starts its extensions, the query API among them, before the receivers)."""
        try:
            services(self.query_url, timeout=1.0)
        except (OSError, ValueError):
            return False
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            return sock.connect_ex((HOST, self._ports["otlp_grpc"])) == 0

    # -- query helpers bound to this instance ------------------------------------------------------------

    def services(self) -> list[str]:
        return services(self.query_url)

    def find_traces(self, service: str, tags: Mapping[str, Any] | None = None, limit: int = 20) -> list[dict[str, Any]]:
        return find_traces(self.query_url, service, tags, limit)

    def get_trace(self, trace_id: str) -> dict[str, Any]:
        return get_trace(self.query_url, trace_id)

    def wait_for_traces(
        self, service: str, tags: Mapping[str, Any] | None = None, *, minimum: int = 1, timeout: float = 15.0
    ) -> list[dict[str, Any]]:
        return wait_for_traces(self.query_url, service, tags, minimum=minimum, timeout=timeout)

    def wait_for_trace(
        self, trace_id: str, predicate: Callable[[dict[str, Any]], bool] | None = None, *, timeout: float = 15.0
    ) -> dict[str, Any]:
        return wait_for_trace(self.query_url, trace_id, predicate, timeout=timeout)

    def trace_ui_url(self, trace_id: str) -> str:
        return trace_ui_url(self.query_url, trace_id)

    # -- lifecycle -------------------------------------------------------------------------------------

    def render_config(self) -> str:
        p = self._ports
        return "\n".join(
            [
                "# Written by podsched_devstack.jaeger on every start; edits are overwritten.",
                "# Jaeger v2 on loopback only, in-memory storage (traces are lost when it stops).",
                "service:",
                "  extensions: [jaeger_storage, jaeger_query, healthcheckv2]",
                "  pipelines:",
                "    traces:",
                "      receivers: [otlp]",
                "      processors: [batch]",
                "      exporters: [jaeger_storage_exporter]",
                "  telemetry:",
                "    # Jaeger's own Prometheus endpoint would listen on 0.0.0.0:8888: off.",
                "    metrics: {level: none}",
                "    logs: {level: info}",
                "extensions:",
                "  healthcheckv2:",
                "    use_v2: true",
                f'    http: {{endpoint: "{HOST}:{p["health"]}"}}',
                "  jaeger_storage:",
                "    backends:",
                f"      memory_store: {{memory: {{max_traces: {self._max_traces}}}}}",
                "  jaeger_query:",
                "    storage: {traces: memory_store}",
                "    # On by default: the query service traces itself to localhost:4317, i.e. into this very",
                "    # Jaeger (or, on free test ports, into nothing, logging connection errors).",
                "    enable_tracing: false",
                f'    http: {{endpoint: "{HOST}:{p["query_http"]}"}}',
                f'    grpc: {{endpoint: "{HOST}:{p["query_grpc"]}"}}',
                "receivers:",
                "  otlp:",
                "    protocols:",
                f'      grpc: {{endpoint: "{HOST}:{p["otlp_grpc"]}"}}',
                f'      http: {{endpoint: "{HOST}:{p["otlp_http"]}"}}',
                "processors:",
                "  # Spans are searchable within about 200 ms of arriving.",
                "  batch: {timeout: 200ms}",
                "exporters:",
                "  jaeger_storage_exporter: {trace_storage: memory_store}",
                "",
            ]
        )

    def start(self, timeout: float = 60.0) -> None:
        """Start Jaeger (building it first if needed) and return once its query API answers."""
        if self._already_started():
            return
        binary = ensure_jaeger_installed()
        busy = {name: port for name, port in self._ports.items() if _port_in_use(port)}
        if busy:
            raise DevstackError(
                f"cannot start Jaeger: {', '.join(f'{HOST}:{port} ({name})' for name, port in busy.items())} "
                "already in use (another Jaeger or OpenTelemetry collector?)"
            )
        began = time.monotonic()
        self._data_dir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(self.render_config())
        self.ports_file.write_text(json.dumps(self._ports, indent=2) + "\n")
        cmd = [str(binary), f"--config=file:{self.config_file}"]
        self._launch(cmd, self.log_file, began, timeout)
        self.last_startup_seconds = time.monotonic() - began

    def __repr__(self) -> str:
        return f"Jaeger(otlp {self.otlp_endpoint}, query {self.query_url}, data_dir={self._data_dir}, pid={self.pid})"

    # -- internals -------------------------------------------------------------------------------------

    def _owns(self, cmdline: str) -> bool:
        return str(self.config_file) in cmdline

    def readiness_subject(self) -> str:
        return f"Jaeger's query API on {self.query_url}"

    def _log_tails(self) -> str:
        return f"--- {self.log_file} (tail) ---\n{tail(self.log_file)}"

    def _recorded_ports(self) -> dict[str, int] | None:
        try:
            recorded = json.loads(self.ports_file.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(recorded, dict) or set(recorded) != set(PORT_NAMES):
            return None
        return {name: int(recorded[name]) for name in PORT_NAMES}


# ----------------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------------


def default_data_dir() -> Path:
    """Where ``make up`` and the CLI keep Jaeger: ``<checkout>/.cache/devstack/jaeger``."""
    return devstack_dir("jaeger")


def cli_jaeger(data_dir: Path | None = None) -> Jaeger:
    """The Jaeger ``make up`` runs: the default data dir, Jaeger's usual ports."""
    return Jaeger(data_dir or default_data_dir(), ports=CLI_DEFAULT_PORTS)


def _install() -> str:
    return f"Jaeger {JAEGER_VERSION} (module v{JAEGER_MODULE_VERSION}): {ensure_jaeger_installed()}"


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(
        argv,
        module="podsched_devstack.jaeger",
        description="Build and run a local Jaeger v2 (loopback, in-memory storage) for podsched.",
        install=("build the Jaeger binary from the Go module proxy into the cache", _install),
        default_data_dir=default_data_dir,
        make=lambda args: cli_jaeger(args.data_dir),
        timeout=60.0,
    )


if __name__ == "__main__":
    sys.exit(main())
