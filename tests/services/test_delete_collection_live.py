"""DeleteCollection against the running system (a real Kafka broker and the four services): what a
namespace and selectors pick is deleted, each object as its own Delete would be (graceful termination,
events), in a few binder transactions; bad input is refused naming the field and deletes nothing;
pods created meanwhile are not lost; a dry run names what would be deleted and deletes nothing; and
the CLI's `delete --all` / `-l`, with `--dry-run=server` and `-o name`.

One stack for the module, each test in namespaces of its own."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from conftest import new_settings

from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_cli.main import main
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, scrape, value
from podsched_proto.api.v1 import api_pb2
from stacks import running

TRANSACTIONS = "podsched_kafka_transactions_total"


@pytest.fixture(scope="module")
def stack(kafka: KafkaBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceStack]:
    yield from running(new_settings(kafka, tmp_path_factory.mktemp("delete-collection"), workers=1))


@pytest.fixture(scope="module")
def api(stack: ServiceStack) -> Iterator[Api]:
    client = Api(stack.server)
    client.apply_text(COMMON.read_text())
    for document in (node("n1", cpu="64"), node("n2", cpu="64")):
        client.stub.Apply(api_pb2.ApplyRequest(object_json=json.dumps(document).encode()), timeout=30)
    yield client
    client.close()


# Pods not created on a node name a scheduler no profile has, so they stay unbound: no scheduling
# cycle races a test's deletes (a bound pod would terminate gracefully instead of going at once).
LEFT_ALONE = {"schedulerName": "left-alone"}


def manifest(name: str, namespace: str, labels: dict[str, str], **options: Any) -> dict[str, Any]:
    spec = {} if options.get("node_name") else LEFT_ALONE
    document = pod(name, "low-priority", "10m", labels=labels, spec=spec, **options)
    document["metadata"]["namespace"] = namespace
    return document


def create(api: Api, *documents: dict[str, Any]) -> None:
    """ApplyBatch in calls of 500; every object must be accepted."""
    for start in range(0, len(documents), 500):
        requests = [api_pb2.ApplyRequest(object_json=json.dumps(d).encode()) for d in documents[start : start + 500]]
        reply = api.stub.ApplyBatch(api_pb2.ApplyBatchRequest(requests=requests), timeout=120)
        assert [r.message for r in reply.results if r.code] == []


def delete_collection(api: Api, **fields: Any) -> api_pb2.DeleteCollectionResponse:
    reply: api_pb2.DeleteCollectionResponse = api.stub.DeleteCollection(
        api_pb2.DeleteCollectionRequest(**fields), timeout=120
    )
    return reply


def pod_names(api: Api, namespace: str) -> list[str]:
    return sorted(api.pods(namespace))


def test_a_label_selector_deletes_the_matching_pods_of_the_namespace_only(api: Api) -> None:
    create(
        api,
        manifest("web-0", "sel-a", {"app": "web", "t": "sel"}),
        manifest("web-1", "sel-a", {"app": "web", "t": "sel", "tier": "front"}),
        manifest("db-0", "sel-a", {"app": "db", "t": "sel"}),
        manifest("web-0", "sel-b", {"app": "web", "t": "sel"}),
    )
    reply = delete_collection(api, resource="po", namespace="sel-a", label_selector="app=web")
    assert [(d.namespace, d.name) for d in reply.deleted] == [("sel-a", "web-0"), ("sel-a", "web-1")]
    assert all(d.uid and d.resource_version > 0 and not d.terminating for d in reply.deleted)
    assert reply.resource_version >= max(d.resource_version for d in reply.deleted)
    assert pod_names(api, "sel-a") == ["db-0"] and pod_names(api, "sel-b") == ["web-0"]
    deleted_events = {
        (e.involved_object.namespace, e.involved_object.name)
        for e in api.events()
        if e.reason == "Deleted" and e.involved_object.namespace.startswith("sel-")
    }
    assert deleted_events == {("sel-a", "web-0"), ("sel-a", "web-1")}

    # Set-based and field selectors, and every namespace at once.
    create(api, manifest("web-2", "sel-a", {"app": "web", "t": "sel", "env": "dev"}))
    reply = delete_collection(
        api,
        resource="pods",
        all_namespaces=True,
        label_selector="t=sel,env notin (prod),app",
        field_selector="spec.nodeName=",
    )
    assert [(d.namespace, d.name) for d in reply.deleted] == [
        ("sel-a", "db-0"),
        ("sel-a", "web-2"),
        ("sel-b", "web-0"),
    ]
    assert pod_names(api, "sel-a") == [] and pod_names(api, "sel-b") == []


def test_no_selector_deletes_every_pod_of_the_namespace_and_nothing_matching_is_no_error(api: Api) -> None:
    create(api, *(manifest(f"p-{i}", "all-a", {"app": "x"}) for i in range(3)), manifest("q", "all-b", {"app": "x"}))
    reply = delete_collection(api, resource="pods", namespace="all-a")
    assert [d.name for d in reply.deleted] == ["p-0", "p-1", "p-2"]
    assert pod_names(api, "all-a") == [] and pod_names(api, "all-b") == ["q"]
    again = delete_collection(api, resource="pods", namespace="all-a")
    assert list(again.deleted) == [] and again.resource_version == 0


def test_a_bound_pod_terminates_for_its_grace_period_unless_it_is_zero(api: Api) -> None:
    create(
        api,
        manifest("slow", "grace", {"app": "slow"}, node_name="n1", grace=300),
        manifest("now", "grace", {"app": "now"}, node_name="n1", grace=300),
    )
    api.wait(lambda: all(p["status"].get("phase") == "Running" for p in api.pods("grace").values()), what="running")
    (slow,) = delete_collection(api, resource="pods", namespace="grace", label_selector="app=slow").deleted
    assert slow.terminating
    terminating = api.pods("grace")["slow"]
    assert terminating["metadata"].get("deletionTimestamp") and terminating["metadata"]["uid"] == slow.uid
    assert int(terminating["metadata"]["resourceVersion"]) == slow.resource_version
    (now,) = delete_collection(
        api, resource="pods", namespace="grace", label_selector="app=now", grace_period_seconds=0
    ).deleted
    assert not now.terminating and pod_names(api, "grace") == ["slow"]
    reasons = {(e.involved_object.name, e.reason) for e in api.events() if e.involved_object.namespace == "grace"}
    assert ("slow", "Killing") in reasons and ("now", "Deleted") in reasons and ("slow", "Deleted") not in reasons
    # Deleting the terminating pod again changes nothing: it keeps its first grace period.
    (again,) = delete_collection(api, resource="pods", namespace="grace").deleted
    assert again.terminating and again.resource_version == slow.resource_version
    delete_collection(api, resource="pods", namespace="grace", grace_period_seconds=0)
    assert pod_names(api, "grace") == []


BAD_INPUT = [
    ({"resource": "pods", "label_selector": "app in"}, 'label_selector: Invalid value: "app in": unable to parse'),
    ({"resource": "pods", "label_selector": "-x=y"}, 'label_selector: Invalid value: "-x=y"'),
    ({"resource": "pods", "field_selector": "spec.nodeName"}, 'field_selector: Invalid value: "spec.nodeName"'),
    ({"resource": "pods", "field_selector": "spec.hostname=x"}, "field label not supported: spec.hostname"),
    ({"resource": "pods", "grace_period_seconds": -1}, "grace_period_seconds: Invalid value: -1: must be >= 0"),
    ({"resource": "widgets"}, 'the server doesn\'t have a resource type "widgets"'),
]


@pytest.mark.parametrize(("fields", "words"), BAD_INPUT, ids=[w for _, w in BAD_INPUT])
def test_bad_input_is_refused_naming_the_field_and_deletes_nothing(
    api: Api, fields: dict[str, Any], words: str
) -> None:
    create(api, manifest("keep", "bad-input", {"app": "keep"}))
    with pytest.raises(grpc.RpcError) as refused:
        delete_collection(api, namespace="bad-input", **fields)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in (refused.value.details() or "")
    assert pod_names(api, "bad-input") == ["keep"]


def test_a_dry_run_names_what_would_be_deleted_and_deletes_nothing(api: Api) -> None:
    create(
        api,
        manifest("web-0", "dry", {"app": "web"}, node_name="n1", grace=300),
        manifest("web-1", "dry", {"app": "web"}),
        manifest("db-0", "dry", {"app": "db"}),
    )
    api.wait(lambda: api.pods("dry")["web-0"]["status"].get("phase") == "Running", what="web-0 running")
    before = api.pods("dry")
    predicted = delete_collection(api, resource="pods", namespace="dry", label_selector="app=web", dry_run=True)
    assert [(d.name, d.terminating) for d in predicted.deleted] == [("web-0", True), ("web-1", False)]
    assert [(d.uid, d.resource_version) for d in predicted.deleted] == [
        (before[n]["metadata"]["uid"], int(before[n]["metadata"]["resourceVersion"])) for n in ("web-0", "web-1")
    ]
    assert predicted.resource_version >= max(d.resource_version for d in predicted.deleted)
    assert api.pods("dry") == before
    assert not [e for e in api.events() if e.involved_object.namespace == "dry" and e.reason in ("Killing", "Deleted")]
    # Bad input is refused as without dry_run.
    with pytest.raises(grpc.RpcError) as refused:
        delete_collection(api, resource="pods", namespace="dry", label_selector="app in", dry_run=True)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # The call without dry_run deletes what the dry run named, as it said.
    deleted = delete_collection(api, resource="pods", namespace="dry", label_selector="app=web")
    assert [(d.name, d.uid, d.terminating) for d in deleted.deleted] == [
        (d.name, d.uid, d.terminating) for d in predicted.deleted
    ]
    assert set(api.pods("dry")) == {"web-0", "db-0"} and api.pods("dry")["web-0"]["metadata"].get("deletionTimestamp")
    delete_collection(api, resource="pods", namespace="dry", grace_period_seconds=0)


def test_a_dry_run_refuses_the_system_priority_classes_as_their_deletes_would(api: Api) -> None:
    def classes() -> list[str]:
        reply = api.stub.Get(api_pb2.GetRequest(resource="priorityclasses"), timeout=30)
        return sorted(json.loads(o)["metadata"]["name"] for o in reply.objects_json)

    before = classes()
    predicted = delete_collection(api, resource="pc", dry_run=True)
    assert sorted(d.name for d in predicted.deleted) == [n for n in before if not n.startswith("system-")]
    assert sorted(predicted.refused) == [
        f'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "{n}" is forbidden: '
        "this is a system priority class and cannot be deleted"
        for n in ("system-cluster-critical", "system-node-critical")
    ]
    assert classes() == before


def test_a_dry_run_delete_of_one_object_checks_it_and_deletes_nothing(api: Api) -> None:
    create(api, manifest("kept", "dry-one", {"app": "kept"}))
    reply = api.stub.Delete(api_pb2.DeleteRequest(resource="po", name="kept", namespace="dry-one", dry_run=True))
    assert json.loads(reply.object_json)["metadata"]["name"] == "kept" and pod_names(api, "dry-one") == ["kept"]
    with pytest.raises(grpc.RpcError) as missing:
        api.stub.Delete(api_pb2.DeleteRequest(resource="pods", name="gone", namespace="dry-one", dry_run=True))
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    assert missing.value.details() == 'Error from server (NotFound): pods "gone" not found'
    with pytest.raises(grpc.RpcError) as system:
        api.stub.Delete(api_pb2.DeleteRequest(resource="pc", name="system-node-critical", dry_run=True))
    assert "this is a system priority class and cannot be deleted" in (system.value.details() or "")


def test_pods_created_while_a_collection_is_deleted_are_not_lost(api: Api, stack: ServiceStack) -> None:
    """1,500 pods of round 1 deleted by selector (two DeleteMany calls) while round 2 and more of
    round 1 are created: every round-2 pod survives, every round-1 pod the answer names is gone, and
    one that was created too late to be listed is still there, never half-deleted."""
    create(api, *(manifest(f"r1-{i}", "churn", {"round": "1"}) for i in range(1500)))
    transactions_before = value(scrape(stack.metrics_url("binder")), TRANSACTIONS, result="committed")
    created: list[str] = []

    def create_meanwhile() -> None:
        for batch in range(4):
            documents = [manifest(f"r2-{batch}-{i}", "churn", {"round": "2"}) for i in range(100)]
            documents += [manifest(f"r1-late-{batch}-{i}", "churn", {"round": "1"}) for i in range(25)]
            create(api, *documents)
            created.extend(d["metadata"]["name"] for d in documents)

    creator = threading.Thread(target=create_meanwhile)
    creator.start()
    reply = delete_collection(api, resource="pods", namespace="churn", label_selector="round=1", grace_period_seconds=0)
    creator.join()
    transactions = value(scrape(stack.metrics_url("binder")), TRANSACTIONS, result="committed") - transactions_before

    deleted = {d.name for d in reply.deleted}
    assert {f"r1-{i}" for i in range(1500)} <= deleted
    left = set(api.pods("churn"))
    assert not deleted & left, "a pod the answer names as deleted is still there"
    assert {name for name in created if name.startswith("r2-")} <= left, "a round-2 pod was lost"
    for name in created:
        if name.startswith("r1-late-"):
            assert (name in deleted) != (name in left), f"{name} is neither reported deleted nor still there"
    # The 1,500 deletes and the 500 creates meanwhile: a few dozen transactions at most, not one per write.
    assert transactions < 50, f"{transactions} transactions"


def run(stack: ServiceStack, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--server", stack.server, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_deletes_all_pods_of_a_namespace_or_those_a_selector_picks(
    api: Api, stack: ServiceStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    create(
        api,
        manifest("web-0", "cli-a", {"app": "web"}),
        manifest("db-0", "cli-a", {"app": "db"}),
        manifest("web-0", "cli-b", {"app": "web"}),
        manifest("other", "cli-b", {"app": "other"}),
    )
    assert run(stack, capsys, "delete", "pods", "-l", "app=web", "-A") == (
        0,
        'pod "web-0" deleted\npod "web-0" deleted\n',
        "",
    )
    assert run(stack, capsys, "delete", "po", "--all", "-n", "cli-a") == (0, 'pod "db-0" deleted\n', "")
    assert run(stack, capsys, "delete", "pods", "--all", "-n", "cli-a") == (0, "No resources found\n", "")
    code, out, err = run(stack, capsys, "delete", "pods", "-l", "app in", "-n", "cli-b")
    assert code == 1 and out == ""
    assert err.startswith('Error from server (BadRequest): label_selector: Invalid value: "app in": ')
    assert run(stack, capsys, "delete", "pods", "other", "-l", "app=other", "-n", "cli-b")[2] == (
        "error: name cannot be provided when a selector is specified\n"
    )
    assert run(stack, capsys, "delete", "pods", "--all", "-l", "app=other", "-n", "cli-b")[2] == (
        "error: cannot set --all and --selector at the same time\n"
    )
    assert pod_names(api, "cli-b") == ["other"]
    manifest_file = tmp_path / "p.yaml"
    manifest_file.write_text(json.dumps(manifest("other", "cli-b", {"app": "other"})))
    assert run(stack, capsys, "delete", "-f", str(manifest_file), "--all")[0] != 0
    assert pod_names(api, "cli-b") == ["other"]


def test_the_cli_dry_run_says_what_it_would_delete_and_o_name_prints_kind_slash_name(
    api: Api, stack: ServiceStack, capsys: pytest.CaptureFixture[str]
) -> None:
    create(api, manifest("web-0", "cli-dry", {"app": "web"}), manifest("web-1", "cli-dry", {"app": "web"}))
    dry_lines = 'pod "web-0" deleted (server dry run)\npod "web-1" deleted (server dry run)\n'
    assert run(stack, capsys, "delete", "pods", "-l", "app=web", "-n", "cli-dry", "--dry-run=server") == (
        0,
        dry_lines,
        "",
    )
    assert run(stack, capsys, "delete", "po", "--all", "-n", "cli-dry", "--dry-run=server", "-o", "name") == (
        0,
        "pod/web-0\npod/web-1\n",
        "",
    )
    assert run(stack, capsys, "delete", "pod", "web-0", "-n", "cli-dry", "--dry-run=server") == (
        0,
        'pod "web-0" deleted (server dry run)\n',
        "",
    )
    assert run(stack, capsys, "delete", "pod", "gone", "-n", "cli-dry", "--dry-run=server") == (
        1,
        "",
        'Error from server (NotFound): pods "gone" not found\n',
    )
    assert pod_names(api, "cli-dry") == ["web-0", "web-1"]
    assert run(stack, capsys, "delete", "pods", "-l", "app=web", "-n", "cli-dry", "-o", "name") == (
        0,
        "pod/web-0\npod/web-1\n",
        "",
    )
    assert pod_names(api, "cli-dry") == []
