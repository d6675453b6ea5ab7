"""ResourceQuota against the running system: the binder enforces quota in its write path, the queue
answers dry runs and Get with the usage its own copy derives from the log, and victims give their
quota back once the binder removes them. One stack for the module (every test in its own
namespaces), started with an admission configuration that limits `high-priority` to namespaces
with a covering quota, through PODSCHED_ADMISSION_CONFIG as an operator would set it."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import yaml

from live_api import Api, node_of
from manifest_dicts import COMMON
from podsched_cli.main import main
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings
from podsched_proto.api.v1 import api_pb2
from stacks import running

HIGH = "high-priority"
URGENT = "urgent"
ADMISSION_CONFIG = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - {scopeName: PriorityClass, operator: In, values: [high-priority]}
"""


@pytest.fixture(scope="module")
def quota_stack(kafka: KafkaBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceStack]:
    run_dir = tmp_path_factory.mktemp("quota-stack")
    config = run_dir / "admission.yaml"
    config.write_text(ADMISSION_CONFIG)
    prefix = f"q{uuid.uuid4().hex[:10]}."
    settings = StackSettings.on_free_ports(
        kafka.bootstrap_servers,
        run_dir / "services",
        topic_prefix=prefix,
        workers=1,
        # Its own transactional id: a binder of another stack on the broker must never fence this one.
        extra_env={"PODSCHED_ADMISSION_CONFIG": str(config), "PODSCHED_TRANSACTIONAL_ID": f"podsched-binder-{prefix}"},
    )
    yield from running(settings)


@pytest.fixture(scope="module")
def quota_api(quota_stack: ServiceStack) -> Iterator[Api]:
    client = Api(quota_stack.server)
    client.apply_text(COMMON.read_text())
    client.apply_text(
        yaml.safe_dump(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": URGENT},
                "value": 10_000_000,
            }
        )
    )
    yield client
    client.close()


def pod(name: str, namespace: str, priority_class: str = HIGH, cpu: str = "1", grace: int = 30) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "priorityClassName": priority_class,
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def high_pods_quota(namespace: str, pods: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "high-pods", "namespace": namespace},
        "spec": {
            "hard": {"pods": str(pods)},
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": [HIGH]}]},
        },
    }


DEDICATED = {"key": "dedicated", "operator": "Equal", "value": "quota-victims", "effect": "NoSchedule"}


def dedicated_node(name: str, cpu: str) -> dict[str, Any]:
    """A node only the victims test's pods tolerate: the other tests' pods stay pending off it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": [{k: v for k, v in DEDICATED.items() if k != "operator"}]},
        "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def on_dedicated_node(document: dict[str, Any]) -> dict[str, Any]:
    document["spec"]["tolerations"] = [DEDICATED]
    return document


def apply(api: Api, document: dict[str, Any], dry_run: bool = False) -> api_pb2.ApplyResponse:
    return api.apply_text(yaml.safe_dump(document), dry_run=dry_run)[0]


def refused(api: Api, document: dict[str, Any], dry_run: bool = False) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        apply(api, document, dry_run)
    return caught.value


def quota(api: Api, namespace: str, name: str = "high-pods") -> dict[str, Any]:
    reply = api.stub.Get(api_pb2.GetRequest(resource="quota", namespace=namespace, name=name), timeout=30)
    return dict(json.loads(reply.objects_json[0]))


def used_pods(api: Api, namespace: str) -> str:
    return str(quota(api, namespace)["status"]["used"]["pods"])


def test_a_limited_class_needs_a_covering_quota_and_the_third_pod_exceeds_a_quota_of_two(quota_api: Api) -> None:
    error = refused(quota_api, pod("p", "no-quota"))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error.details() == (
        "Error from server: insufficient quota to match these scopes: [{PriorityClass In [high-priority]}]"
    )

    assert apply(quota_api, high_pods_quota("tenant-a", 2)).action == "created"
    for name in ("p1", "p2"):
        assert apply(quota_api, pod(name, "tenant-a")).action == "created"
    expected = (
        'Error from server (Forbidden): pods "p3" is forbidden: exceeded quota: high-pods, requested: pods=1, '
        "used: pods=2, limited: pods=2"
    )
    dry = refused(quota_api, pod("p3", "tenant-a"), dry_run=True)
    assert (dry.code(), dry.details()) == (grpc.StatusCode.FAILED_PRECONDITION, expected), "the queue's dry run"
    real = refused(quota_api, pod("p3", "tenant-a"))
    assert (real.code(), real.details()) == (grpc.StatusCode.FAILED_PRECONDITION, expected), "the binder's answer"
    assert "p3" not in quota_api.pods("tenant-a")

    status = quota(quota_api, "tenant-a")["status"]
    assert status == {"hard": {"pods": "2"}, "used": {"pods": "2"}}
    assert apply(quota_api, pod("low", "tenant-a", "low-priority")).action == "created", "not in the quota's scope"


def test_get_and_delete_quota_through_the_cli(
    quota_stack: ServiceStack, quota_api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    apply(quota_api, high_pods_quota("tenant-cli", 3))
    apply(quota_api, pod("web", "tenant-cli"))
    server = ["--server", quota_stack.server]
    capsys.readouterr()
    assert main([*server, "get", "quota", "-n", "tenant-cli"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert lines[1].split()[0] == "high-pods" and lines[1].endswith("pods: 1/3")
    assert main([*server, "get", "resourcequota", "high-pods", "-n", "tenant-cli", "-o", "json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["kind"] == "ResourceQuota" and manifest["status"] == {"hard": {"pods": "3"}, "used": {"pods": "1"}}
    assert main([*server, "describe", "quota", "high-pods", "-n", "tenant-cli"]) == 0
    described = capsys.readouterr().out.splitlines()
    assert described[0].split() == ["Name:", "high-pods"] and described[1].split() == ["Namespace:", "tenant-cli"]
    assert described[-1].split() == ["pods", "1", "3"]
    assert main([*server, "delete", "quota", "high-pods", "-n", "tenant-cli"]) == 0
    assert capsys.readouterr().out == 'resourcequota "high-pods" deleted\n'
    error = refused(quota_api, pod("web-2", "tenant-cli"))
    assert "insufficient quota to match these scopes" in error.details(), "without its quota the class is limited"


def test_preemption_victims_give_their_quota_back_once_gone(quota_api: Api) -> None:
    apply(quota_api, dedicated_node("quota-n1", "2"))
    apply(quota_api, high_pods_quota("tenant-v", 2))
    for name in ("v1", "v2"):
        apply(quota_api, on_dedicated_node(pod(name, "tenant-v", grace=6)))
    quota_api.wait(
        lambda: len(quota_api.pods("tenant-v")) == 2 and all(node_of(p) for p in quota_api.pods("tenant-v").values()),
        what="both victims bound",
    )
    apply(quota_api, on_dedicated_node(pod("urgent-0", "ops", URGENT, cpu="2")))
    quota_api.wait(
        lambda: all(p["metadata"].get("deletionTimestamp") for p in quota_api.pods("tenant-v").values()),
        what="both victims terminating",
    )
    # While they terminate (6 s), the victims still hold the tenant's quota ...
    assert "exceeded quota: high-pods" in refused(quota_api, pod("next", "tenant-v")).details()
    assert used_pods(quota_api, "tenant-v") == "2"
    # ... and give it back when the binder removes them at the end of their grace period.
    quota_api.wait(lambda: not quota_api.pods("tenant-v"), timeout=30, what="the victims removed after 6 s")
    assert used_pods(quota_api, "tenant-v") == "0"
    assert apply(quota_api, pod("next", "tenant-v")).action == "created"
    assert used_pods(quota_api, "tenant-v") == "1"
    quota_api.wait(lambda: node_of(quota_api.pods("ops").get("urgent-0", {})), what="the preemptor bound")


def test_critical_classes_are_refused_outside_kube_system_and_admitted_in_it(quota_api: Api) -> None:
    error = refused(quota_api, pod("agent", "monitoring", "system-cluster-critical"))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error.details() == (
        "Error from server: insufficient quota to match these scopes: "
        "[{PriorityClass In [system-node-critical system-cluster-critical]}]"
    )
    assert apply(quota_api, pod("agent", "kube-system", "system-cluster-critical")).action == "created"
    assert "agent" in quota_api.pods("kube-system")


def test_creates_racing_for_the_last_slot_get_one_acceptance(quota_api: Api) -> None:
    """The binder checks quota in its serialized write path: however the calls interleave (the
    queue's own check may pass them all on a copy that has not seen the others yet), one wins."""
    apply(quota_api, high_pods_quota("tenant-race", 1))
    outcomes: list[str] = []

    def create(name: str) -> None:
        try:
            apply(quota_api, pod(name, "tenant-race"))
            outcomes.append("created")
        except grpc.RpcError as error:
            outcomes.append(error.details() or "")

    threads = [threading.Thread(target=create, args=(f"racer-{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert outcomes.count("created") == 1, outcomes
    assert all("exceeded quota: high-pods" in outcome for outcome in outcomes if outcome != "created")
    assert len(quota_api.pods("tenant-race")) == 1
    assert used_pods(quota_api, "tenant-race") == "1"
