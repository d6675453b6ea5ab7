"""The dashboard honours the API's authentication and authorization as the CLI does: against a stack with
security on (mutual TLS on the public API, the development policy of `python -m podsched_devstack certs`),
a dashboard whose kubeconfig names the `dashboard` certificate (a cluster viewer) follows the cluster,
and its what-if is authorized as the create it simulates; a dashboard with a tenant's certificate may not
watch the cluster, and the page says so with the server's Forbidden line. The dashboard's HTTP answers are
read directly here (the page that draws them is tested in test_dashboard.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_auth_end_to_end import secure_settings

from manifest_dicts import node
from podsched_cli.main import main as podsched
from podsched_devstack.certs import DevCredentials, generate
from podsched_devstack.dashboard import DashboardProcess
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.process import free_ports
from podsched_devstack.services import ServiceStack
from stacks import running


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> DevCredentials:
    return generate(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def stack(
    kafka: KafkaBroker, tmp_path_factory: pytest.TempPathFactory, creds: DevCredentials
) -> Iterator[ServiceStack]:
    yield from running(secure_settings(kafka, tmp_path_factory.mktemp("secure-stack"), creds, public_mtls=True))


def kubeconfig_for(creds: DevCredentials, server: str, user: str, path: Path) -> Path:
    """A kubeconfig as a user writes one: the stack's server over TLS, the user's certificate."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"https://{server}", "certificate-authority": "ca.crt"}}],
        "users": [{"name": user, "user": {"client-certificate": f"{user}.crt", "client-key": f"{user}.key"}}],
        "contexts": [{"name": user, "context": {"cluster": "c", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def started(run_dir: Path, kubeconfig: Path, *, until_synced: bool = True) -> DashboardProcess:
    dashboard = DashboardProcess(
        run_dir,
        "127.0.0.1:1",  # never reached: the kubeconfig's server wins over PODSCHED_SERVER, as for the CLI
        listen_address=f"127.0.0.1:{free_ports(1)[0]}",
        extra_env={"PODSCHED_KUBECONFIG": str(kubeconfig)},
    )
    dashboard.start(until_synced=until_synced)
    return dashboard


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        body = error.read()
        try:
            return error.code, json.loads(body)
        except ValueError:
            return error.code, body.decode()


def post(url: str, text: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=text.encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def pod_manifest(namespace: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: probe, namespace: {namespace}}}\n"
        "spec:\n  containers: [{name: main, image: pause, resources: {requests: {cpu: 100m}}}]\n"
    )


def test_a_viewer_dashboard_follows_the_cluster_and_its_what_if_needs_create(
    stack: ServiceStack, creds: DevCredentials, tmp_path: Path
) -> None:
    admin = kubeconfig_for(creds, stack.server, "admin", creds.path("admin.kubeconfig"))
    manifest = tmp_path / "node.yaml"
    manifest.write_text(yaml.safe_dump(node("node-1")))
    assert podsched(["--kubeconfig", str(admin), "apply", "-f", str(manifest)]) == 0

    viewer = kubeconfig_for(creds, stack.server, "dashboard", creds.path("dashboard.kubeconfig"))
    dashboard = started(tmp_path, viewer)
    try:
        status, page = get(f"{dashboard.url}/api/nodes")
        assert status == 200 and [n["name"] for n in page["nodes"]] == ["node-1"]
        assert get(f"{dashboard.url}/api/summary")[1]["problem"] == ""

        # Its what-ifs: allowed where it may create pods (default), refused with kube-apiserver's words elsewhere.
        status, answer = post(f"{dashboard.url}/api/whatif", pod_manifest("default"))
        assert status == 200 and answer["results"][0]["nodeName"] == "node-1", answer
        status, answer = post(f"{dashboard.url}/api/whatif", pod_manifest("team-a"))
        assert (status, answer["error"]) == (
            422,
            'Error from server (Forbidden): pods is forbidden: User "dashboard" cannot create resource "pods" '
            'in API group "" in the namespace "team-a"',
        )
        status, pods = get(f"{dashboard.url}/api/queue")
        assert status == 200 and pods["total"] == 0, "a what-if stored a pod"
    finally:
        dashboard.stop()


def test_a_tenant_may_not_watch_the_cluster_and_the_page_says_why(
    stack: ServiceStack, creds: DevCredentials, tmp_path: Path
) -> None:
    tenant = kubeconfig_for(creds, stack.server, "alice", creds.path("alice.kubeconfig"))
    dashboard = started(tmp_path, tenant, until_synced=False)
    try:
        dashboard.wait_until(lambda: bool(get(f"{dashboard.url}/api/summary")[1]["problem"]), 60, "a problem shown")
        problem = get(f"{dashboard.url}/api/summary")[1]["problem"]
        assert problem.startswith("Error from server (Forbidden):") and 'User "alice"' in problem, problem
        status, text = get(f"{dashboard.url}/healthz")
        assert status == 503 and text == problem
        assert get(f"{dashboard.url}/api/nodes")[1]["nodes"] == []
    finally:
        dashboard.stop()
