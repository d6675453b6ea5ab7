"""Authentication, authorization and the API audit log against the running system, with security
on: the development credentials of `python -m podsched_devstack certs` (made in a temporary
folder), every port on TLS, filter/preemption/binder on mutual TLS that serves only the services'
certificate, and the public API with bearer tokens, client certificates and the tenant policy.

Two stacks, because gRPC Python cannot make a client certificate optional: `token_stack`'s public
API is TLS without client certificates (a call without a token is anonymous and refused);
`mtls_stack`'s requires a certificate from the dev CA (anything else fails in the handshake)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from aiokafka import AIOKafkaConsumer

from manifest_dicts import COMMON, node, pdb, pod
from podsched.api.documents import load_documents
from podsched_cli.main import main as podsched
from podsched_devstack.certs import DevCredentials, generate, kubeconfig
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.audit.v1 import audit_pb2
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_service.api_audit import audit_topic
from podsched_service.codec import status_code_of
from podsched_service.tls import ClientTLS
from stacks import running

UNAUTHORIZED = "error: You must be logged in to the server (Unauthorized)"
TENANT_NS, OTHER_NS = "team-a", "team-b"


# --- the two stacks ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> DevCredentials:
    return generate(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> DevCredentials:
    """The same kind of files from another CA: nothing of them may be accepted."""
    return generate(tmp_path_factory.mktemp("foreign-certs"))


def secure_settings(kafka: KafkaBroker, run_dir: Path, creds: DevCredentials, *, public_mtls: bool) -> StackSettings:
    path = lambda name: str(creds.path(name))  # noqa: E731
    tls = {
        "PODSCHED_TLS_CERT_FILE": path("service.crt"),
        "PODSCHED_TLS_KEY_FILE": path("service.key"),
    }
    internal = {
        "PODSCHED_TLS_CLIENT_CA_FILE": path("ca.crt"),
        "PODSCHED_TLS_CLIENT_GROUPS": "system:podsched-services",
    }
    queue = {
        "PODSCHED_TOKEN_FILE": path("tokens.csv"),
        "PODSCHED_AUTHORIZATION_FILE": path("policy.yaml"),
        "PODSCHED_INTERNAL_TLS_CA_FILE": path("ca.crt"),
        "PODSCHED_INTERNAL_TLS_CERT_FILE": path("service.crt"),
        "PODSCHED_INTERNAL_TLS_KEY_FILE": path("service.key"),
    }
    if public_mtls:
        queue["PODSCHED_TLS_CLIENT_CA_FILE"] = path("ca.crt")
    prefix = f"auth{int(time.time() * 1000) % 10**9}{'m' if public_mtls else 't'}."
    # Both stacks run at once on one broker: each binder needs its own transactional id, or they fence each other.
    binder = {**internal, "PODSCHED_TRANSACTIONAL_ID": f"podsched-binder-{prefix}"}
    return StackSettings.on_free_ports(
        kafka.bootstrap_servers,
        run_dir,
        topic_prefix=prefix,
        workers=1,
        extra_env=tls,
        service_env={"binder": binder, "filter": internal, "preemption": internal, "queue": queue},
        health_tls=ClientTLS(path("ca.crt"), path("service.crt"), path("service.key")),
    )


@pytest.fixture(scope="module")
def token_stack(
    kafka: KafkaBroker, tmp_path_factory: pytest.TempPathFactory, creds: DevCredentials
) -> Iterator[ServiceStack]:
    yield from running(secure_settings(kafka, tmp_path_factory.mktemp("token-stack"), creds, public_mtls=False))


@pytest.fixture(scope="module")
def mtls_stack(
    kafka: KafkaBroker, tmp_path_factory: pytest.TempPathFactory, creds: DevCredentials
) -> Iterator[ServiceStack]:
    yield from running(secure_settings(kafka, tmp_path_factory.mktemp("mtls-stack"), creds, public_mtls=True))


# --- a client with explicit credentials ------------------------------------------------------------------


class Client:
    """The public API over TLS with a token and/or a client certificate; every call returns the
    response or the grpc error, so a test asserts on both alike."""

    def __init__(self, address: str, creds: DevCredentials, *, token: str = "", cert: str = "", ca: str = "") -> None:
        ca_path = ca or str(creds.path("ca.crt"))
        tls = ClientTLS(ca_path, f"{cert}.crt" if cert else "", f"{cert}.key" if cert else "")
        self.channel = grpc.secure_channel(address, tls.credentials())
        self.stub = api_pb2_grpc.PodSchedStub(self.channel)
        self.metadata = [("authorization", f"Bearer {token}")] if token else None

    def close(self) -> None:
        self.channel.close()

    def call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self.stub, method)(request, timeout=30, metadata=self.metadata)
        except grpc.RpcError as error:
            return error

    def apply(self, document: dict[str, Any], dry_run: bool = False) -> Any:
        return self.call("Apply", api_pb2.ApplyRequest(object_json=json.dumps(document).encode(), dry_run=dry_run))

    def get(self, resource: str, name: str = "", namespace: str = "", all_namespaces: bool = False) -> Any:
        request = api_pb2.GetRequest(resource=resource, name=name, namespace=namespace, all_namespaces=all_namespaces)
        return self.call("Get", request)

    def delete(self, resource: str, name: str, namespace: str = "") -> Any:
        request = api_pb2.DeleteRequest(resource=resource, name=name, namespace=namespace, grace_period_seconds=1)
        return self.call("Delete", request)

    def events(self, namespace: str = "", all_namespaces: bool = False) -> Any:
        return self.call("ListEvents", api_pb2.ListEventsRequest(namespace=namespace, all_namespaces=all_namespaces))

    def watch_refusal(self, request: api_pb2.WatchRequest) -> grpc.RpcError | None:
        """The error a Watch ends with at once, or None if it streams (it is cancelled then)."""
        stream = self.stub.Watch(request, metadata=self.metadata, timeout=30)
        try:
            next(iter(stream))
        except grpc.RpcError as error:
            return error
        stream.cancel()
        return None


def refusal(result: Any) -> tuple[grpc.StatusCode, str]:
    assert isinstance(result, grpc.RpcError), f"expected a refusal, got {result}"
    return result.code(), result.details()


def ok(result: Any) -> Any:
    assert not isinstance(result, grpc.RpcError), f"{result.code()}: {result.details()}"
    return result


def in_namespace(document: dict[str, Any], namespace: str) -> dict[str, Any]:
    document["metadata"]["namespace"] = namespace
    return document


def forbidden(subject: str, verb: str, resource: str, where: str, group: str = "") -> tuple[grpc.StatusCode, str]:
    scope = f'in the namespace "{where}"' if where else "at the cluster scope"
    return (
        grpc.StatusCode.PERMISSION_DENIED,
        f'Error from server (Forbidden): {subject} is forbidden: User "alice" cannot {verb} resource "{resource}" '
        f'in API group "{group}" {scope}',
    )


@pytest.fixture(scope="module")
def cluster(token_stack: ServiceStack, creds: DevCredentials) -> None:
    """Priority classes and a node, applied by the admin (token)."""
    admin = Client(token_stack.server, creds, token=creds.admin_token)
    for document in [*load_documents(COMMON.read_text(), "common"), node("n1", cpu="8")]:
        ok(admin.apply(document))
    admin.close()


# --- tests ------------------------------------------------------------------------------------------------


def test_a_call_without_a_valid_token_is_unauthenticated(token_stack: ServiceStack, creds: DevCredentials) -> None:
    for token in ("", "not-a-token", creds.admin_token + "x"):
        client = Client(token_stack.server, creds, token=token)
        assert refusal(client.get("pods")) == (grpc.StatusCode.UNAUTHENTICATED, UNAUTHORIZED), token
        assert refusal(client.apply(pod("anon", "low-priority", "1"))) == (
            grpc.StatusCode.UNAUTHENTICATED,
            UNAUTHORIZED,
        )
        assert refusal(client.delete("pods", "anon")) == (grpc.StatusCode.UNAUTHENTICATED, UNAUTHORIZED)
        client.close()
    malformed = Client(token_stack.server, creds)
    malformed.metadata = [("authorization", f"Basic {creds.admin_token}")]
    assert refusal(malformed.events()) == (grpc.StatusCode.UNAUTHENTICATED, UNAUTHORIZED)
    assert malformed.watch_refusal(api_pb2.WatchRequest()).code() == grpc.StatusCode.UNAUTHENTICATED
    malformed.close()


def test_a_tenant_works_in_its_namespace_only(token_stack: ServiceStack, creds: DevCredentials, cluster: None) -> None:
    admin = Client(token_stack.server, creds, token=creds.admin_token)
    alice = Client(token_stack.server, creds, token=creds.tenant_token)
    ok(admin.apply(in_namespace(pod("theirs", "low-priority", "1"), OTHER_NS)))

    # Its own namespace: create, get, list, delete pods and PodDisruptionBudgets; read events.
    mine = in_namespace(pod("mine", "low-priority", "1"), TENANT_NS)
    assert ok(alice.apply(mine)).action == "created"
    assert ok(alice.apply(mine)).action == "unchanged", "re-applying an unchanged pod needs only get"
    budget = in_namespace(pdb("mine-pdb", 1, app="mine"), TENANT_NS)
    assert ok(alice.apply(budget)).action == "created"
    assert [json.loads(o)["metadata"]["name"] for o in ok(alice.get("pods", namespace=TENANT_NS)).objects_json] == [
        "mine"
    ]
    ok(alice.get("pods", "mine", TENANT_NS))
    ok(alice.get("poddisruptionbudgets", "mine-pdb", TENANT_NS))
    ok(alice.events(TENANT_NS))
    assert ok(alice.apply(mine, dry_run=True)).action == "unchanged"

    # Changing its PodDisruptionBudget is a patch, which a tenant may not do.
    changed = in_namespace(pdb("mine-pdb", 0, app="mine"), TENANT_NS)
    assert refusal(alice.apply(changed)) == forbidden(
        'poddisruptionbudgets.policy "mine-pdb"', "patch", "poddisruptionbudgets", TENANT_NS, "policy"
    )

    # Another namespace, the cluster scope, cluster-scoped kinds: upstream's Forbidden, word for word.
    assert refusal(alice.apply(in_namespace(pod("p", "low-priority", "1"), OTHER_NS))) == forbidden(
        "pods", "create", "pods", OTHER_NS
    )
    assert refusal(alice.apply(in_namespace(pod("p", "low-priority", "1"), OTHER_NS), dry_run=True)) == forbidden(
        "pods", "create", "pods", OTHER_NS
    )
    # An object it may not read is "created", so the refusal does not reveal that "theirs" exists.
    assert refusal(alice.apply(in_namespace(pod("theirs", "low-priority", "1"), OTHER_NS))) == forbidden(
        "pods", "create", "pods", OTHER_NS
    )
    assert refusal(alice.delete("pods", "theirs", OTHER_NS)) == forbidden('pods "theirs"', "delete", "pods", OTHER_NS)
    assert refusal(alice.get("pods", "theirs", OTHER_NS)) == forbidden('pods "theirs"', "get", "pods", OTHER_NS)
    assert refusal(alice.get("pods", namespace=OTHER_NS)) == forbidden("pods", "list", "pods", OTHER_NS)
    assert refusal(alice.get("pods", all_namespaces=True)) == forbidden("pods", "list", "pods", "")
    assert refusal(alice.apply(in_namespace(pdb("x", 1, app="x"), OTHER_NS))) == forbidden(
        "poddisruptionbudgets.policy", "create", "poddisruptionbudgets", OTHER_NS, "policy"
    )
    high = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "mine-is-higher"},
        "value": 10**9,
    }
    assert refusal(alice.apply(high)) == forbidden(
        "priorityclasses.scheduling.k8s.io", "create", "priorityclasses", "", "scheduling.k8s.io"
    )
    assert refusal(alice.delete("priorityclasses", "low-priority")) == forbidden(
        'priorityclasses.scheduling.k8s.io "low-priority"', "delete", "priorityclasses", "", "scheduling.k8s.io"
    )
    assert refusal(alice.apply(node("mine", cpu="64"))) == forbidden("nodes", "create", "nodes", "")
    assert refusal(alice.get("nodes")) == forbidden("nodes", "list", "nodes", "")
    assert refusal(alice.events(all_namespaces=True)) == forbidden("events", "list", "events", "")
    assert refusal(alice.events(OTHER_NS)) == forbidden("events", "list", "events", OTHER_NS)
    watch = alice.watch_refusal(api_pb2.WatchRequest(namespace=OTHER_NS))
    assert watch is not None and (watch.code(), watch.details()) == forbidden("pods", "watch", "pods", OTHER_NS)
    watch = alice.watch_refusal(api_pb2.WatchRequest(kinds=["Node"], namespace=TENANT_NS))
    assert watch is not None and (watch.code(), watch.details()) == forbidden("nodes", "watch", "nodes", "")
    assert alice.watch_refusal(api_pb2.WatchRequest(namespace=TENANT_NS, include_events=True)) is None

    # ResourceQuotas are the admin's to set and the tenant's to read.
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": TENANT_NS},
        "spec": {"hard": {"pods": "10"}},
    }
    assert refusal(alice.apply(quota)) == forbidden("resourcequotas", "create", "resourcequotas", TENANT_NS)
    ok(admin.apply(quota))
    assert len(ok(alice.get("resourcequotas", "compute", TENANT_NS)).objects_json) == 1
    assert refusal(alice.delete("resourcequotas", "compute", TENANT_NS)) == forbidden(
        'resourcequotas "compute"', "delete", "resourcequotas", TENANT_NS
    )

    # Nothing of the refused requests happened; its own objects go when it deletes them.
    assert [json.loads(o)["metadata"]["name"] for o in ok(admin.get("pods", namespace=OTHER_NS)).objects_json] == [
        "theirs"
    ]
    assert "mine-is-higher" not in str(ok(admin.get("priorityclasses")).objects_json)
    ok(alice.delete("poddisruptionbudgets", "mine-pdb", TENANT_NS))
    ok(alice.delete("pods", "mine", TENANT_NS))
    admin.close()
    alice.close()


def test_client_certificates_identify_users_and_bad_ones_fail_the_handshake(
    mtls_stack: ServiceStack, creds: DevCredentials, foreign: DevCredentials
) -> None:
    admin = Client(mtls_stack.server, creds, cert=str(creds.path("admin")))
    for document in [*load_documents(COMMON.read_text(), "common"), node("n1", cpu="8")]:
        ok(admin.apply(document))
    alice = Client(mtls_stack.server, creds, cert=str(creds.path("alice")))
    assert ok(alice.apply(in_namespace(pod("by-cert", "low-priority", "1"), TENANT_NS))).action == "created"
    assert refusal(alice.get("nodes")) == forbidden("nodes", "list", "nodes", "")
    # A token, when sent, decides: the admin's token over alice's certificate is the admin...
    alice_as_admin = Client(mtls_stack.server, creds, cert=str(creds.path("alice")), token=creds.admin_token)
    ok(alice_as_admin.get("nodes"))
    # ...and a wrong token is refused even with a valid certificate.
    wrong = Client(mtls_stack.server, creds, cert=str(creds.path("admin")), token="wrong")
    assert refusal(wrong.get("nodes")) == (grpc.StatusCode.UNAUTHENTICATED, UNAUTHORIZED)

    # No certificate, or one from another CA: the handshake fails, no call is made.
    for client in (
        Client(mtls_stack.server, creds, token=creds.admin_token),
        Client(mtls_stack.server, creds, cert=str(foreign.path("admin"))),
    ):
        code, _ = refusal(client.get("pods"))
        assert code == grpc.StatusCode.UNAVAILABLE
        client.close()
    # A server certificate from another CA is refused by the client.
    code, details = refusal(
        Client(mtls_stack.server, creds, cert=str(creds.path("admin")), ca=str(foreign.path("ca.crt"))).get("pods")
    )
    assert code == grpc.StatusCode.UNAVAILABLE and "CERTIFICATE_VERIFY_FAILED" in details

    # The binder serves only the services' certificate: a user's certificate from the same CA is refused.
    binder_address = mtls_stack.settings.addresses["binder"]
    for user, expected in (("alice", grpc.StatusCode.PERMISSION_DENIED), ("service", None)):
        tls = ClientTLS(str(creds.path("ca.crt")), str(creds.path(f"{user}.crt")), str(creds.path(f"{user}.key")))
        with grpc.secure_channel(binder_address, tls.credentials()) as channel:
            stub = binder_pb2_grpc.BinderStub(channel)
            request = binder_pb2.DeleteRequest(kind="Pod", namespace=TENANT_NS, name="no-such-pod")
            try:
                stub.Delete(request, timeout=30)
                code = None
            except grpc.RpcError as error:
                code = error.code()
            assert code == expected or (expected is None and code == grpc.StatusCode.NOT_FOUND), (user, code)
    for client in (admin, alice, alice_as_admin, wrong):
        client.close()


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = podsched(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_with_a_token_and_with_a_kubeconfig(
    mtls_stack: ServiceStack,
    token_stack: ServiceStack,
    creds: DevCredentials,
    foreign: DevCredentials,
    cluster: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod("cli-pod", "low-priority", "1")))
    ca = str(creds.path("ca.crt"))
    as_alice = ["--server", token_stack.server, "--certificate-authority", ca, "--token", creds.tenant_token]
    assert cli(capsys, *as_alice, "apply", "-f", str(manifest), "-n", TENANT_NS) == (0, "pod/cli-pod created\n", "")
    code, out, _ = cli(capsys, *as_alice, "get", "pods", "-n", TENANT_NS)
    assert code == 0 and "cli-pod" in out
    code, _, err = cli(capsys, *as_alice, "get", "pods", "-n", OTHER_NS)
    assert (code, err.strip()) == (1, forbidden("pods", "list", "pods", OTHER_NS)[1])
    code, _, err = cli(capsys, "--server", token_stack.server, "--certificate-authority", ca, "get", "pods")
    assert (code, err.strip()) == (1, UNAUTHORIZED)

    # A kubeconfig in the credentials' folder (relative paths), for the mTLS stack: contexts admin and alice.
    config = creds.path("test-kubeconfig")
    config.write_text(yaml.safe_dump(kubeconfig(f"https://{mtls_stack.server}")))
    monkeypatch.setenv("PODSCHED_KUBECONFIG", str(config))
    assert cli(capsys, "apply", "-f", str(COMMON))[0] == 0  # the current context is the admin
    code, _, err = cli(capsys, "--context", "alice", "apply", "-f", str(manifest))  # namespace team-a from the context
    assert (code, err) == (0, "")
    code, out, _ = cli(capsys, "--context", "alice", "get", "pods")
    assert code == 0 and "cli-pod" in out
    code, out, _ = cli(capsys, "--context", "alice", "describe", "pod", "cli-pod")
    assert code == 0 and "cli-pod" in out
    code, _, err = cli(capsys, "--kubeconfig", str(config), "--context", "alice", "get", "nodes")
    assert (code, err.strip()) == (1, forbidden("nodes", "list", "nodes", "")[1])
    code, _, err = cli(capsys, "--context", "alice", "delete", "pod", "cli-pod", "-n", OTHER_NS)
    assert (code, err.strip()) == (1, forbidden('pods "cli-pod"', "delete", "pods", OTHER_NS)[1])
    assert cli(capsys, "--context", "alice", "delete", "pod", "cli-pod")[0] == 0
    # A certificate from another CA: the CLI says the handshake failed, not that the server is down.
    code, _, err = cli(
        capsys,
        "--client-certificate",
        str(foreign.path("admin.crt")),
        "--client-key",
        str(foreign.path("admin.key")),
        "get",
        "pods",
    )
    assert code == 1 and err.startswith(
        f"Unable to connect to the server {mtls_stack.server}: the TLS handshake failed"
    )
    code, _, err = cli(capsys, "--context", "nobody", "get", "pods")
    assert (code, err.strip()) == (1, "error: context was not found for specified context: nobody")


def audit_records(
    kafka: KafkaBroker, stack: ServiceStack, until: Any, timeout: float = 30.0
) -> list[audit_pb2.AuditEvent]:
    """Every record of the stack's audit topic, read until `until(records)` holds or the timeout."""

    async def read() -> list[audit_pb2.AuditEvent]:
        consumer = AIOKafkaConsumer(
            audit_topic(stack.settings.topic_prefix),
            bootstrap_servers=kafka.bootstrap_servers,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        records: list[audit_pb2.AuditEvent] = []
        try:
            deadline = time.monotonic() + timeout
            while not until(records) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=200)
                for batch in batches.values():
                    records += [audit_pb2.AuditEvent.FromString(record.value) for record in batch]
        finally:
            await consumer.stop()
        return records

    return asyncio.run(read())


def test_every_write_is_on_the_audit_topic_with_who_asked(
    kafka: KafkaBroker, token_stack: ServiceStack, creds: DevCredentials, cluster: None
) -> None:
    alice = Client(token_stack.server, creds, token=creds.tenant_token)
    nobody = Client(token_stack.server, creds, token="wrong")
    admin = Client(token_stack.server, creds, token=creds.admin_token)
    accepted = ok(alice.apply(in_namespace(pod("audited", "low-priority", "1"), TENANT_NS)))
    uid = json.loads(accepted.object_json)["metadata"]["uid"]
    refusal(alice.apply(in_namespace(pod("audited", "low-priority", "1"), OTHER_NS)))
    refusal(nobody.apply(in_namespace(pod("audited", "low-priority", "1"), TENANT_NS)))
    refusal(alice.apply(in_namespace(pod("audited-bad-class", "no-such-class", "1"), TENANT_NS)))  # admission
    ok(alice.apply(in_namespace(pod("audited-dry", "low-priority", "1"), TENANT_NS), dry_run=True))  # not recorded
    ok(alice.get("pods", namespace=TENANT_NS))  # reads are not recorded
    refusal(alice.delete("nodes", "n1"))
    refusal(nobody.delete("pods", "audited", TENANT_NS))
    ok(alice.delete("pods", "audited", TENANT_NS))
    refusal(admin.delete("pods", "audited-never-was", TENANT_NS))  # allowed, not found

    mine = lambda records: [r for r in records if r.object_ref.name.startswith("audited")]  # noqa: E731
    # The last write's record comes last (one partition, each answer waits for its record): read up to it.
    everything = audit_records(kafka, token_stack, lambda rs: any(r.object_ref.name == "audited-never-was" for r in rs))
    records = mine(everything)
    summary = [
        (
            r.verb,
            r.user.username,
            r.object_ref.resource,
            r.object_ref.namespace,
            r.object_ref.name,
            r.response_status.code,
            r.response_status.reason,
            audit_pb2.AuditEvent.Decision.Name(r.decision),
        )
        for r in records
    ]
    assert summary == [
        ("create", "alice", "pods", TENANT_NS, "audited", 201, "", "ALLOW"),
        ("create", "alice", "pods", OTHER_NS, "audited", 403, "Forbidden", "FORBID"),
        ("create", "", "pods", TENANT_NS, "audited", 401, "Unauthorized", "FORBID"),
        ("create", "alice", "pods", TENANT_NS, "audited-bad-class", 403, "Forbidden", "ALLOW"),  # admission said no
        ("delete", "", "pods", TENANT_NS, "audited", 401, "Unauthorized", "FORBID"),
        ("delete", "alice", "pods", TENANT_NS, "audited", 200, "", "ALLOW"),
        ("delete", "admin", "pods", TENANT_NS, "audited-never-was", 404, "NotFound", "ALLOW"),
    ], "the refused delete of a node is not about an 'audited' object"
    created, denied, unauthenticated, admission = records[:4]
    assert created.object_ref.uid == uid and created.resource_version > 0
    assert created.user.groups == ["team-a", "system:authenticated"] and created.user.uid == "uid-alice"
    assert created.user.authentication_method == "token"
    assert created.reason == 'tenant of namespace "team-a" (group "team-a")'
    assert created.source_ips == ["127.0.0.1"] and created.request_uri == "/podsched.api.v1.PodSched/Apply"
    assert created.stage == audit_pb2.AuditEvent.RESPONSE_COMPLETE and created.audit_id
    assert created.stage_timestamp.ToNanoseconds() >= created.request_received_timestamp.ToNanoseconds()
    assert denied.response_status.message == forbidden("pods", "create", "pods", OTHER_NS)[1]
    assert denied.response_status.grpc_code == "PERMISSION_DENIED" and denied.resource_version == 0
    assert unauthenticated.response_status.message == UNAUTHORIZED and not unauthenticated.user.groups
    assert unauthenticated.reason == "authentication failed: invalid bearer token"
    assert admission.response_status.grpc_code == "FAILED_PRECONDITION"
    assert "no PriorityClass with name no-such-class was found" in admission.response_status.message
    node_delete = [r for r in everything if r.object_ref.resource == "nodes" and r.verb == "delete"]
    assert [(r.user.username, r.object_ref.name, r.response_status.code) for r in node_delete] == [("alice", "n1", 403)]
    for client in (alice, nobody, admin):
        client.close()


def test_apply_batch_decides_each_object_as_its_own_apply(
    kafka: KafkaBroker, token_stack: ServiceStack, creds: DevCredentials, cluster: None
) -> None:
    """ApplyBatch: one result per object, in order, each authorized, admitted and audited on its own;
    a refused object changes nothing and does not stop the others."""
    alice = Client(token_stack.server, creds, token=creds.tenant_token)
    items = [
        in_namespace(pod("batched-0", "low-priority", "1"), TENANT_NS),
        in_namespace(pod("batched-1", "low-priority", "1"), OTHER_NS),  # not alice's namespace
        in_namespace(pod("batched-2", "no-such-class", "1"), TENANT_NS),  # admission says no
        in_namespace(pod("batched-3", "low-priority", "1"), TENANT_NS),
    ]
    requests = [api_pb2.ApplyRequest(object_json=json.dumps(item).encode()) for item in items]
    requests.append(api_pb2.ApplyRequest(object_json=b"{not json", source="batched-4.yaml"))
    reply = ok(alice.call("ApplyBatch", api_pb2.ApplyBatchRequest(requests=requests)))
    codes = [status_code_of(r.code) for r in reply.results]
    assert codes == [
        grpc.StatusCode.OK,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
    ]
    assert [r.response.action for r in reply.results] == ["created", "", "", "created", ""]
    assert reply.results[1].message == forbidden("pods", "create", "pods", OTHER_NS)[1]
    assert "no PriorityClass with name no-such-class was found" in reply.results[2].message
    assert reply.results[4].message.startswith("error: error parsing batched-4.yaml:")
    stored = ok(alice.get("pods", namespace=TENANT_NS))
    names = {json.loads(obj)["metadata"]["name"] for obj in stored.objects_json}
    assert {"batched-0", "batched-3"} <= names and "batched-2" not in names
    records = audit_records(
        kafka, token_stack, lambda rs: len([r for r in rs if r.object_ref.name.startswith("batched-")]) >= 4
    )
    batched = sorted(
        (
            r.object_ref.name,
            r.object_ref.namespace,
            r.response_status.code,
            audit_pb2.AuditEvent.Decision.Name(r.decision),
        )
        for r in records
        if r.object_ref.name.startswith("batched-")
    )
    assert batched == [
        ("batched-0", TENANT_NS, 201, "ALLOW"),
        ("batched-1", OTHER_NS, 403, "FORBID"),
        ("batched-2", TENANT_NS, 403, "ALLOW"),
        ("batched-3", TENANT_NS, 201, "ALLOW"),
    ], "each object has its audit record (the unparsable one names no object)"
    too_many = alice.call("ApplyBatch", api_pb2.ApplyBatchRequest(requests=[requests[0]] * 1001))
    assert refusal(too_many) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "error: 1001 objects in one ApplyBatch; at most 1000",
    )
    alice.close()


def test_a_tenant_deletes_a_collection_in_its_namespace_only_and_each_deleted_pod_is_audited(
    kafka: KafkaBroker, token_stack: ServiceStack, creds: DevCredentials, cluster: None
) -> None:
    """DeleteCollection is authorized as upstream's (verb deletecollection at the collection's scope)
    and audited as the call plus, for each deleted pod, the record its own Delete would have. Its dry
    run and a single Delete's are authorized the same and not audited."""
    alice = Client(token_stack.server, creds, token=creds.tenant_token)
    admin = Client(token_stack.server, creds, token=creds.admin_token)
    for name in ("swept-0", "swept-1"):
        ok(alice.apply(in_namespace(pod(name, "low-priority", "1", labels={"sweep": "yes"}), TENANT_NS)))
    ok(admin.apply(in_namespace(pod("swept-theirs", "low-priority", "1", labels={"sweep": "yes"}), OTHER_NS)))

    def sweep(**where: Any) -> Any:
        request = api_pb2.DeleteCollectionRequest(resource="pods", label_selector="sweep=yes", **where)
        request.grace_period_seconds = 0
        return alice.call("DeleteCollection", request)

    assert refusal(sweep(namespace=OTHER_NS)) == forbidden("pods", "deletecollection", "pods", OTHER_NS)
    assert refusal(sweep(all_namespaces=True)) == forbidden("pods", "deletecollection", "pods", "")
    # Dry runs: refused or answered as the call would be, never recorded.
    assert refusal(sweep(namespace=OTHER_NS, dry_run=True)) == forbidden("pods", "deletecollection", "pods", OTHER_NS)
    assert [d.name for d in ok(sweep(namespace=TENANT_NS, dry_run=True)).deleted] == ["swept-0", "swept-1"]
    ok(alice.call("Delete", api_pb2.DeleteRequest(resource="pods", name="swept-0", namespace=TENANT_NS, dry_run=True)))
    reply = ok(sweep(namespace=TENANT_NS))
    assert [(d.namespace, d.name) for d in reply.deleted] == [(TENANT_NS, "swept-0"), (TENANT_NS, "swept-1")]
    theirs = {json.loads(o)["metadata"]["name"] for o in ok(admin.get("pods", namespace=OTHER_NS)).objects_json}
    assert "swept-theirs" in theirs

    swept = lambda records: [  # noqa: E731
        r
        for r in records
        if r.request_uri.endswith("/DeleteCollection") or (r.verb == "delete" and r.object_ref.name.startswith("swept"))
    ]
    records = swept(audit_records(kafka, token_stack, lambda rs: len(swept(rs)) >= 5))
    assert [
        (r.verb, r.object_ref.namespace, r.object_ref.name, r.response_status.code, r.user.username) for r in records
    ] == [
        ("deletecollection", OTHER_NS, "", 403, "alice"),
        ("deletecollection", "", "", 403, "alice"),
        ("delete", TENANT_NS, "swept-0", 200, "alice"),
        ("delete", TENANT_NS, "swept-1", 200, "alice"),
        ("deletecollection", TENANT_NS, "", 200, "alice"),
    ]
    by_name = {d.name: d for d in reply.deleted}
    for record in records[2:4]:
        assert record.object_ref.uid == by_name[record.object_ref.name].uid
        assert record.resource_version == by_name[record.object_ref.name].resource_version
    assert records[4].resource_version == reply.resource_version and len({r.audit_id for r in records}) == 5
    alice.close()
    admin.close()
