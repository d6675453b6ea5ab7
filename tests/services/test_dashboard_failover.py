"""The dashboard fails over between queue replicas, as the API's clients may: given both
replicas' addresses, it follows the cluster through the first; when that one is killed with SIGKILL it
watches through the other, resuming from the last version it saw, and shows what changed meanwhile
without a restart."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import new_settings

from manifest_dicts import node
from podsched_cli.main import main as podsched
from podsched_devstack.dashboard import DashboardProcess
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.process import free_ports
from podsched_devstack.services import ServiceStack
from stacks import running


@pytest.fixture
def two_queues(kafka: KafkaBroker, tmp_path: Path) -> Iterator[ServiceStack]:
    yield from running(new_settings(kafka, tmp_path / "services", queue_replicas=2))


def summary(dashboard: DashboardProcess) -> dict[str, Any]:
    with urllib.request.urlopen(f"{dashboard.url}/api/summary", timeout=10) as response:
        return dict(json.load(response))


def node_names(dashboard: DashboardProcess) -> list[str]:
    with urllib.request.urlopen(f"{dashboard.url}/api/nodes", timeout=10) as response:
        return [card["name"] for card in json.load(response)["nodes"]]


def apply_node(server: str, name: str, folder: Path) -> None:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(node(name)))
    assert podsched(["--server", server, "apply", "-f", str(path)]) == 0


def test_the_dashboard_follows_the_cluster_through_the_other_replica_when_one_dies(
    two_queues: ServiceStack, tmp_path: Path
) -> None:
    first, second = two_queues.settings.addresses["queue"], two_queues.settings.addresses["queue-2"]
    dashboard = DashboardProcess(tmp_path, f"{first},{second}", listen_address=f"127.0.0.1:{free_ports(1)[0]}")
    dashboard.start()
    try:
        apply_node(first, "node-1", tmp_path)
        dashboard.wait_until(lambda: node_names(dashboard) == ["node-1"], 30, "node-1 on the dashboard")
        assert summary(dashboard)["server"] == first

        two_queues.kill9("queue")
        apply_node(second, "node-2", tmp_path)
        dashboard.wait_until(lambda: node_names(dashboard) == ["node-1", "node-2"], 60, "node-2 on the dashboard")
        status = summary(dashboard)
        assert status["server"] == second and status["problem"] == ""
    finally:
        dashboard.stop()
