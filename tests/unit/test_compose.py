"""docker-compose.yml, deploy/Dockerfile, deploy/kubernetes/podsched.yaml and deploy/README.md agree with the
services' configuration dataclasses: every variable a service is given is one it reads, every address points
at a service that exists and listens there, health checks and start order hold, Kafka can run transactions.
No Docker or Kubernetes here: the files are parsed with PyYAML and checked statically."""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from typing import Any

import opentelemetry.environment_variables as otel_api_env
import opentelemetry.sdk.environment_variables as otel_sdk_env
import pytest
import yaml

from podsched.config.scheduler_config import parse_scheduler_config
from podsched_binder.config import BinderConfig
from podsched_dashboard.config import DashboardConfig
from podsched_filter.config import FilterConfig
from podsched_preemption.config import PreemptionConfig
from podsched_queue.config import QueueConfig
from podsched_service.config import ENV_PREFIX, CommonConfig, env_names

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
DOCKERIGNORE = ROOT / "deploy" / "Dockerfile.dockerignore"
KUBERNETES_FILE = ROOT / "deploy" / "kubernetes" / "podsched.yaml"
DEPLOY_README = ROOT / "deploy" / "README.md"
MAKEFILE = ROOT / "Makefile"

# The module each container runs (`python -m <module>`) and the dataclass that configures it.
CONFIGS: dict[str, type[CommonConfig]] = {
    "podsched_queue": QueueConfig,
    "podsched_filter": FilterConfig,
    "podsched_preemption": PreemptionConfig,
    "podsched_binder": BinderConfig,
}
PORTS = {"podsched_queue": 50051, "podsched_filter": 50052, "podsched_preemption": 50053, "podsched_binder": 50054}
# Prometheus /metrics ports (PODSCHED_METRICS_ADDRESS), the services' defaults.
METRICS_PORTS = {"podsched_queue": 9451, "podsched_filter": 9452, "podsched_preemption": 9453, "podsched_binder": 9454}
# PODSCHED_FILTER_ADDRESS must point at the service running podsched_filter, and so on.
ADDRESS_TARGETS = {
    "PODSCHED_FILTER_ADDRESS": "podsched_filter",
    "PODSCHED_PREEMPTION_ADDRESS": "podsched_preemption",
    "PODSCHED_BINDER_ADDRESS": "podsched_binder",
    "PODSCHED_QUEUE_ADDRESS": "podsched_queue",
}
# Every OTEL_* name the OpenTelemetry API and SDK read themselves.
OTEL_NAMES = {
    value
    for module in (otel_api_env, otel_sdk_env)
    for name, value in vars(module).items()
    if name.startswith("OTEL_") and isinstance(value, str)
}
KAFKA_BOOTSTRAP = "PODSCHED_KAFKA_BOOTSTRAP_SERVERS"
LISTEN = "PODSCHED_LISTEN_ADDRESS"
METRICS = "PODSCHED_METRICS_ADDRESS"
OTLP = "PODSCHED_OTLP_ENDPOINT"


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    assert host and port.isdigit(), f"{address!r} is not HOST:PORT"
    return host.strip("[]"), int(port)


def env_problems(module: str, env: dict[str, Any]) -> list[str]:
    """Names a container is given that its service does not read."""
    valid = set(env_names(CONFIGS[module]).values())
    problems = []
    for name in env:
        if name.startswith(ENV_PREFIX):
            if name not in valid:
                problems.append(f"{name}: not a field of {CONFIGS[module].__name__}")
        elif name not in OTEL_NAMES:
            problems.append(f"{name}: neither a PODSCHED_* field nor a standard OTEL_* variable")
    return problems


def required_env(module: str) -> set[str]:
    """Variables whose defaults (loopback addresses) are wrong in a container: they must be set."""
    fields = env_names(CONFIGS[module])
    return {name for field, name in fields.items() if field.endswith("_address")} | {KAFKA_BOOTSTRAP}


# ------------------------------------------------------------------------------------------------ compose


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(document, dict) and isinstance(document.get("services"), dict)
    return document


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(compose["services"])


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):  # the `- NAME=value` form
        raw = dict(item.split("=", 1) if "=" in item else (item, None) for item in raw)
    return {str(name): ("" if value is None else str(value)) for name, value in raw.items()}


def compose_module(service: dict[str, Any]) -> str | None:
    command = service.get("command")
    if command is None:
        return None
    words = shlex.split(command) if isinstance(command, str) else [str(word) for word in command]
    return words[0] if words and words[0] in CONFIGS else None


def app_services(services: dict[str, dict[str, Any]]) -> dict[str, str]:
    """compose service name -> module, for the podsched services."""
    return {name: module for name, service in services.items() if (module := compose_module(service))}


def test_compose_has_the_whole_system(services: dict[str, dict[str, Any]]) -> None:
    assert {"kafka", "jaeger", "queue", "filter", "preemption", "binder"} <= set(services)
    assert app_services(services) == {
        "queue": "podsched_queue",
        "filter": "podsched_filter",
        "preemption": "podsched_preemption",
        "binder": "podsched_binder",
    }


def test_app_services_are_built_from_the_one_dockerfile(services: dict[str, dict[str, Any]]) -> None:
    for name in app_services(services):
        build = services[name].get("build")
        assert isinstance(build, dict), f"{name}: build must name the context and deploy/Dockerfile"
        context = (COMPOSE_FILE.parent / build.get("context", ".")).resolve()
        assert context == ROOT, f"{name}: the build context must be the repository root"
        assert (context / build["dockerfile"]).resolve() == DOCKERFILE, name


@pytest.mark.parametrize("name", ["queue", "filter", "preemption", "binder"])
def test_app_environment_names_are_config_fields(services: dict[str, dict[str, Any]], name: str) -> None:
    module = app_services(services)[name]
    env = compose_env(services[name])
    assert env_problems(module, env) == []
    assert required_env(module) | {LISTEN} <= set(env), f"{name}: unset {required_env(module) - set(env)}"
    assert env.get("OTEL_SERVICE_NAME") == f"podsched-{name}"
    assert env.get(OTLP) == "http://jaeger:4317"
    assert depends_on(services[name]).get("jaeger") in ("service_started", "service_healthy"), name


@pytest.mark.parametrize("name", ["queue", "filter", "preemption", "binder"])
def test_app_services_listen_on_all_interfaces_at_their_port(services: dict[str, dict[str, Any]], name: str) -> None:
    module = app_services(services)[name]
    host, port = split_address(compose_env(services[name])[LISTEN])
    assert host in ("0.0.0.0", "::"), f"{name}: {LISTEN} must not be loopback inside a container"
    assert port == PORTS[module]
    host, port = split_address(compose_env(services[name])[METRICS])
    assert host in ("0.0.0.0", "::"), f"{name}: {METRICS} must not be loopback inside a container"
    assert port == METRICS_PORTS[module]


def test_addresses_point_at_services_that_listen_there(services: dict[str, dict[str, Any]]) -> None:
    modules = app_services(services)
    listen_ports = {name: split_address(compose_env(services[name])[LISTEN])[1] for name in modules}
    checked = 0
    for name in modules:
        for variable, value in compose_env(services[name]).items():
            if not variable.endswith("_ADDRESS") or variable in (LISTEN, METRICS):
                continue
            host, port = split_address(value)
            assert host in services, f"{name}: {variable}={value}: no compose service {host!r}"
            assert modules.get(host) == ADDRESS_TARGETS[variable], f"{name}: {variable} points at {host}"
            assert port == listen_ports[host], f"{name}: {variable}={value} but {host} listens on {listen_ports[host]}"
            checked += 1
    assert checked == 3  # the queue's filter, preemption and binder addresses


def test_kafka_bootstrap_matches_the_advertised_listener(services: dict[str, dict[str, Any]]) -> None:
    advertised = compose_env(services["kafka"])["KAFKA_ADVERTISED_LISTENERS"].split(",")
    advertised_hostports = {listener.split("://", 1)[1] for listener in advertised}
    for name in app_services(services):
        for server in compose_env(services[name])[KAFKA_BOOTSTRAP].split(","):
            host, _ = split_address(server)
            assert host in services, f"{name}: no compose service {host!r}"
            assert server in advertised_hostports, f"{name}: {server} is not an advertised listener"


def test_every_service_has_a_health_check(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        healthcheck = service.get("healthcheck")
        assert isinstance(healthcheck, dict) and healthcheck.get("test"), f"{name}: no healthcheck"
        assert not healthcheck.get("disable"), name


@pytest.mark.parametrize("name", ["queue", "filter", "preemption", "binder"])
def test_app_health_checks_probe_the_grpc_health_service(services: dict[str, dict[str, Any]], name: str) -> None:
    test = services[name]["healthcheck"]["test"]
    words = shlex.split(test) if isinstance(test, str) else [str(word) for word in test]
    assert words[0] in ("CMD", "CMD-SHELL"), name
    command = words[1:] if words[0] == "CMD" else shlex.split(" ".join(words[1:]))
    assert command[:3] == ["python", "-m", "podsched_service.healthcheck"], name
    _, port = split_address(command[3])
    assert port == split_address(compose_env(services[name])[LISTEN])[1], f"{name}: health check on another port"


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    raw = service.get("depends_on") or {}
    if isinstance(raw, list):
        return {str(name): "service_started" for name in raw}
    return {str(name): str((spec or {}).get("condition", "service_started")) for name, spec in raw.items()}


def test_depends_on_refers_to_existing_services_without_cycles(services: dict[str, dict[str, Any]]) -> None:
    graph = {name: set(depends_on(service)) for name, service in services.items()}
    for name, needs in graph.items():
        assert needs <= set(services), f"{name}: depends on unknown {needs - set(services)}"
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(name: str) -> None:
        assert name not in visiting, f"dependency cycle through {name}"
        if name in done:
            return
        visiting.add(name)
        for needed in graph[name]:
            visit(needed)
        visiting.discard(name)
        done.add(name)

    for name in graph:
        visit(name)


def test_start_order_is_kafka_binder_filter_and_preemption_queue(services: dict[str, dict[str, Any]]) -> None:
    healthy = "service_healthy"
    for name in app_services(services):
        assert depends_on(services[name]).get("kafka") == healthy, f"{name}: must wait for a healthy Kafka"
    for name in ("filter", "preemption"):
        assert depends_on(services[name]).get("binder") == healthy, name
    queue_needs = depends_on(services["queue"])
    assert all(queue_needs.get(name) == healthy for name in ("binder", "filter", "preemption")), queue_needs


def published_ports(service: dict[str, Any]) -> list[int]:
    """Container ports published to the host."""
    ports = []
    for entry in service.get("ports") or []:
        if isinstance(entry, dict):
            ports.append(int(entry["target"]))
        else:
            ports.append(int(str(entry).split("/")[0].rsplit(":", 1)[-1]))
    return ports


def test_only_the_public_api_is_published(services: dict[str, dict[str, Any]]) -> None:
    published = {name: published_ports(services[name]) for name in app_services(services)}
    assert published == {"queue": [50051], "filter": [], "preemption": [], "binder": []}


def test_preemption_scales_by_replicas_and_workers(services: dict[str, dict[str, Any]]) -> None:
    preemption = services["preemption"]
    assert preemption.get("deploy", {}).get("replicas") == 1
    assert "container_name" not in preemption  # a fixed name would forbid --scale
    assert int(compose_env(preemption)["PODSCHED_WORKERS"]) >= 1


def test_binder_has_a_transactional_id(services: dict[str, dict[str, Any]]) -> None:
    assert compose_env(services["binder"]).get("PODSCHED_TRANSACTIONAL_ID")


def test_kafka_runs_kraft_with_transactions_on_one_broker(services: dict[str, dict[str, Any]]) -> None:
    kafka = services["kafka"]
    assert kafka["image"] == "apache/kafka:3.9.1"
    env = compose_env(kafka)
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    node_id = env["KAFKA_NODE_ID"]
    listeners = dict(
        (listener.split("://", 1)[0], listener.split("://", 1)[1]) for listener in env["KAFKA_LISTENERS"].split(",")
    )
    protocols = dict(item.split(":", 1) for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(listeners) <= set(protocols)
    controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert controller in listeners
    controller_port = int(listeners[controller].rpartition(":")[2])  # `CONTROLLER://:9093`: any interface
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{node_id}@kafka:{controller_port}"
    assert "PLAINTEXT://kafka:9092" in env["KAFKA_ADVERTISED_LISTENERS"].split(",")
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] in listeners
    # One broker: internal topics with replication factor 1, else transactions (the binder) and consumer
    # groups never start.
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "1"
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", env["CLUSTER_ID"])


def test_jaeger_v2_with_ui_and_otlp(services: dict[str, dict[str, Any]]) -> None:
    jaeger = services["jaeger"]
    assert re.fullmatch(r"jaegertracing/jaeger:2(\.\d+)*", jaeger["image"])
    assert {16686, 4317} <= set(published_ports(jaeger))


def test_the_dashboard_reads_the_api_over_mutual_tls_as_its_own_user(services: dict[str, dict[str, Any]]) -> None:
    dashboard = services["dashboard"]
    assert dashboard["command"] == ["podsched_dashboard"] and dashboard["build"] == services["queue"]["build"]
    env = compose_env(dashboard)
    fields = set(env_names(DashboardConfig).values())
    assert set(env) <= fields, f"not DashboardConfig fields: {set(env) - fields}"
    host, port = split_address(env["PODSCHED_SERVER"].removeprefix("https://"))
    assert env["PODSCHED_SERVER"].startswith("https://") and (host, port) == ("queue", PORTS["podsched_queue"])
    assert env["PODSCHED_CLIENT_CERTIFICATE"].endswith("/dashboard.crt")
    assert split_address(env["PODSCHED_LISTEN_ADDRESS"]) == ("0.0.0.0", 8080) and published_ports(dashboard) == [8080]
    assert depends_on(dashboard).get("queue") == "service_healthy"


def test_prometheus_scrapes_every_service_and_grafana_shows_the_dashboard(services: dict[str, dict[str, Any]]) -> None:
    config = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text(encoding="utf-8"))
    scraped = {}
    for job in config["scrape_configs"]:
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                scraped[job["job_name"]] = split_address(target)
        for dns in job.get("dns_sd_configs", []):
            scraped[job["job_name"]] = (dns["names"][0], dns["port"])
    modules = app_services(services)
    assert scraped == {name: (name, split_address(compose_env(services[name])[METRICS])[1]) for name in modules}, (
        "every service's metrics port, by its compose name"
    )
    mounts = " ".join(services["grafana"]["volumes"])
    assert "./deploy/grafana/provisioning:" in mounts and "./deploy/grafana/podsched.json:" in mounts
    datasource = yaml.safe_load(
        (ROOT / "deploy" / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text(encoding="utf-8")
    )["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090" and "prometheus" in services


def test_the_grafana_dashboard_queries_only_metrics_the_services_export() -> None:
    import json

    dashboard = json.loads((ROOT / "deploy" / "grafana" / "podsched.json").read_text(encoding="utf-8"))
    declared = set()
    sources = [*ROOT.joinpath("services").rglob("*.py"), *ROOT.joinpath("libs", "podsched_service").rglob("*.py")]
    for source in sources:
        names = re.findall(r"(?:Counter|Gauge|Histogram)\(\s*\"([a-z_:]+)\"", source.read_text(encoding="utf-8"))
        declared |= {name.removesuffix("_total") for name in names}
    queried = set()
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "prometheus"
            expression = re.sub(r"by \([^)]*\)", "", target["expr"])  # label names are not metrics
            for name in re.findall(r"\b((?:scheduler|podsched|grpc)_[a-z_]+)", expression):
                queried.add(re.sub(r"_(total|bucket|sum|count)$", "", name))
    assert queried and queried <= declared, f"not exported by any service: {queried - declared}"
    titles = " ".join(panel["title"].lower() for panel in dashboard["panels"])
    for subject in ("scheduling rate", "by result", "victims", "pending pods", "latency"):
        assert subject in titles


# ------------------------------------------------------------------------------------------------ Dockerfile


def dockerfile_text() -> str:
    """The Dockerfile with line continuations joined and comments dropped."""
    lines = [line for line in DOCKERFILE.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")]
    return re.sub(r"\\\n\s*", " ", "\n".join(lines))


def test_dockerfile_generates_protos_like_the_makefile() -> None:
    text = dockerfile_text()
    make_line = re.search(r"-m grpc_tools\.protoc ([^$]*)\$\(PROTO_FILES\)", MAKEFILE.read_text(encoding="utf-8"))
    assert make_line is not None
    assert f"python -m grpc_tools.protoc {make_line.group(1).strip()}" in re.sub(r" +", " ", text)
    assert "find libs/podsched_proto -type d -exec touch {}/__init__.py" in text
    protoc = text.index("grpc_tools.protoc")
    assert protoc < text.index("pip wheel"), "generate the protos before building the wheel"


def test_dockerfile_is_multi_stage_non_root_with_python_m_entrypoint() -> None:
    text = dockerfile_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim$", text, re.MULTILINE)
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\w+))?", text, re.MULTILINE | re.IGNORECASE)
    assert len(stages) >= 2 and all(image in ("${PYTHON_IMAGE}", "python:3.11-slim") for image, _ in stages)
    runtime = text[text.rindex("\nFROM ") :]
    users = re.findall(r"^USER\s+(\S+)", runtime, re.MULTILINE)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert re.search(r'^ENTRYPOINT \["python", "-m"\]$', runtime, re.MULTILINE)
    assert "pip install" in runtime and "grpc_tools.protoc" not in runtime


def test_build_context_keeps_what_the_image_needs() -> None:
    ignore = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    for needed in ("!pyproject.toml", "!protos/", "!libs/", "!services/"):
        assert needed in ignore
    assert "libs/podsched_proto/" in ignore  # generated in the image, never copied from the host


# ------------------------------------------------------------------------------------------------ Kubernetes


@pytest.fixture(scope="module")
def manifests() -> list[dict[str, Any]]:
    documents = [doc for doc in yaml.safe_load_all(KUBERNETES_FILE.read_text(encoding="utf-8")) if doc is not None]
    for doc in documents:
        assert {"apiVersion", "kind", "metadata"} <= set(doc), doc
        assert doc["metadata"].get("name"), doc
    return documents


def of_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in manifests if doc["kind"] == kind}


def container_of(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


DASHBOARD = "podsched_dashboard"


def k8s_module(deployment: dict[str, Any]) -> str:
    args = container_of(deployment).get("args") or []
    assert args and (args[0] in CONFIGS or args[0] == DASHBOARD), deployment["metadata"]["name"]
    return str(args[0])


def k8s_env(container: dict[str, Any]) -> dict[str, str]:
    env = {}
    for item in container.get("env") or []:
        assert ("value" in item) != ("valueFrom" in item), item
        env[item["name"]] = str(item.get("value", ""))
    assert len(env) == len(container.get("env") or []), "duplicate env names"
    return env


def test_kubernetes_has_a_deployment_and_service_per_component(manifests: list[dict[str, Any]]) -> None:
    deployments = of_kind(manifests, "Deployment")
    assert sorted(k8s_module(d) for d in deployments.values()) == sorted([*CONFIGS, DASHBOARD])
    assert len(of_kind(manifests, "Service")) >= 5


def test_kubernetes_dashboard_reads_the_public_api_and_is_ready_when_synced(manifests: list[dict[str, Any]]) -> None:
    (deployment,) = [d for d in of_kind(manifests, "Deployment").values() if k8s_module(d) == DASHBOARD]
    container = container_of(deployment)
    env = k8s_env(container)
    assert set(env) <= set(env_names(DashboardConfig).values())
    host, port = split_address(env["PODSCHED_SERVER"])
    queue = of_kind(manifests, "Service")[host]
    assert [p["port"] for p in queue["spec"]["ports"]] == [PORTS["podsched_queue"]]
    assert queue["spec"]["selector"]["app.kubernetes.io/component"] == "queue" and port == PORTS["podsched_queue"]
    assert split_address(env["PODSCHED_LISTEN_ADDRESS"]) == ("0.0.0.0", 8080)
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    (service,) = [
        s
        for s in of_kind(manifests, "Service").values()
        if s["spec"]["selector"].get("app.kubernetes.io/component") == "dashboard"
    ]
    assert service["spec"]["ports"][0]["targetPort"] == "http"


@pytest.mark.parametrize("module", sorted(CONFIGS))
def test_kubernetes_env_and_ports(manifests: list[dict[str, Any]], module: str) -> None:
    (deployment,) = [d for d in of_kind(manifests, "Deployment").values() if k8s_module(d) == module]
    spec = deployment["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    container = container_of(deployment)
    env = k8s_env(container)
    assert env_problems(module, env) == []
    assert required_env(module) | {LISTEN} <= set(env)
    assert env[OTLP] == "http://jaeger:4317"
    assert env["OTEL_SERVICE_NAME"] == f"{module.replace('_', '-')}"
    assert env[KAFKA_BOOTSTRAP] == "kafka:9092"
    host, port = split_address(env[LISTEN])
    assert host in ("0.0.0.0", "::") and port == PORTS[module]
    metrics_host, metrics_port = split_address(env[METRICS])
    assert metrics_host in ("0.0.0.0", "::") and metrics_port == METRICS_PORTS[module]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"grpc": port, "metrics": metrics_port}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == port, f"{module}: {probe}"


def test_kubernetes_addresses_reach_the_right_pods(manifests: list[dict[str, Any]]) -> None:
    deployments = {k8s_module(d): d for d in of_kind(manifests, "Deployment").values()}
    services = of_kind(manifests, "Service")
    checked = 0
    for deployment in deployments.values():
        for variable, value in k8s_env(container_of(deployment)).items():
            if not variable.endswith("_ADDRESS") or variable in (LISTEN, METRICS):
                continue
            host, port = split_address(value)
            assert host in services, f"{variable}={value}: no Service {host!r}"
            (service_port,) = [p for p in services[host]["spec"]["ports"] if p["port"] == port]
            target = deployments[ADDRESS_TARGETS[variable]]
            labels = target["spec"]["template"]["metadata"]["labels"]
            assert services[host]["spec"]["selector"].items() <= labels.items(), f"{host} selects other pods"
            (container_port,) = [
                p
                for p in container_of(target)["ports"]
                if service_port.get("targetPort", port) in (p["containerPort"], p.get("name"))
            ]
            assert container_port["containerPort"] == split_address(k8s_env(container_of(target))[LISTEN])[1]
            checked += 1
    assert checked == 3


def test_kubernetes_single_writers(manifests: list[dict[str, Any]]) -> None:
    deployments = {k8s_module(d): d for d in of_kind(manifests, "Deployment").values()}
    binder = deployments["podsched_binder"]["spec"]
    assert binder["replicas"] == 1 and binder["strategy"]["type"] == "Recreate"
    # The queue replicas elect one scheduling leader, each under its own pod's name.
    for module in ("podsched_queue", "podsched_binder"):
        env = container_of(deployments[module])["env"]
        assert {"name": "PODSCHED_LEADER_ELECTION", "value": "true"} in env, module
        assert {"name": "PODSCHED_REPLICA_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in env
    assert deployments["podsched_queue"]["spec"]["replicas"] >= 2
    preemption = container_of(deployments["podsched_preemption"])
    workers = int(k8s_env(preemption)["PODSCHED_WORKERS"])
    assert workers == int(preemption["resources"]["requests"]["cpu"]), "one worker process per requested CPU"


def test_kubernetes_scheduler_config_is_mounted_and_valid(manifests: list[dict[str, Any]]) -> None:
    config_maps = of_kind(manifests, "ConfigMap")
    for deployment in of_kind(manifests, "Deployment").values():
        container = container_of(deployment)
        path = k8s_env(container).get("PODSCHED_SCHEDULER_CONFIG")
        if not path:
            continue
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"].get("volumes", [])}
        (mount,) = [m for m in container.get("volumeMounts", []) if path.startswith(m["mountPath"].rstrip("/") + "/")]
        config_map = config_maps[volumes[mount["name"]]["configMap"]["name"]]
        key = path[len(mount["mountPath"].rstrip("/")) + 1 :]
        parse_scheduler_config(config_map["data"][key], source=key)


def test_kubernetes_pods_run_as_non_root(manifests: list[dict[str, Any]]) -> None:
    for name, deployment in of_kind(manifests, "Deployment").items():
        assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True, name
        assert container_of(deployment)["securityContext"]["allowPrivilegeEscalation"] is False, name


# ------------------------------------------------------------------------------------------------ README


def readme_rows(header: str) -> list[list[str]]:
    """The rows of the deploy/README.md table whose header line starts with `header`, as cells."""
    rows: list[list[str]] = []
    inside = False
    for line in DEPLOY_README.read_text(encoding="utf-8").splitlines():
        if line.startswith(header):
            inside = True
        elif inside and not line.startswith("|"):
            break
        elif inside and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    assert rows, f"no table {header!r} in {DEPLOY_README}"
    return rows


def readme_table() -> dict[str, set[str]]:
    """`| `PODSCHED_X` | services | ...` rows of deploy/README.md: variable -> services it applies to."""
    rows = {}
    for cells in readme_rows("| variable | services |"):
        match = re.fullmatch(r"`(PODSCHED_\w+)`", cells[0])
        if match:
            cell = cells[1]
            names = set(CONFIGS) if cell == "all" else {f"podsched_{word}" for word in re.findall(r"\w+", cell)}
            rows[match.group(1)] = names
    return rows


def test_readme_documents_the_dashboards_variables_with_their_defaults() -> None:
    rows = {cells[0].strip("`"): cells[1] for cells in readme_rows("| dashboard variable |")}
    fields = {env_names(DashboardConfig)[f.name]: f.default for f in dataclasses.fields(DashboardConfig)}
    assert set(rows) == set(fields)
    for name, default in fields.items():
        assert rows[name] == ('`""`' if default == "" else f"`{default}`"), name


def test_readme_documents_every_variable_for_the_right_services() -> None:
    expected: dict[str, set[str]] = {}
    for module, config in CONFIGS.items():
        for name in env_names(config).values():
            expected.setdefault(name, set()).add(module)
    assert readme_table() == expected


def test_readme_defaults_match_the_dataclasses() -> None:
    """The default column holds the default in backticks (`""` for the empty string); a variable whose
    default differs between services lists each one."""
    text = DEPLOY_README.read_text(encoding="utf-8")
    for config in CONFIGS.values():
        for field in dataclasses.fields(config):
            if field.name == "workers":  # os.cpu_count(): machine-dependent
                continue
            name = env_names(config)[field.name]
            row = re.search(rf"^\|\s*`{name}`\s*\|(?:all|[a-z, ]+)\|([^|]*)\|", text, re.MULTILINE)
            assert row is not None, name
            defaults = ["" if value == '""' else value for value in re.findall(r"`([^`]*)`", row.group(1))]
            assert str(field.default) in defaults, f"{name}: default {field.default!r} not in {defaults}"
