"""Authentication, authorization and the API audit record, one piece at a time: the token file,
who a token or a client certificate is, what the policy allows (admin, tenant, every verb and scope
that matters), kube-apiserver's Forbidden wording, the CLI's kubeconfig, and how an answer is
recorded. End to end, with TLS and real Kafka: tests/services/test_auth_end_to_end.py."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest
import yaml

from podsched.api.resources import NODE, PDB, POD, PRIORITY_CLASS, ResourceType
from podsched_cli.errors import UsageError
from podsched_cli.kubeconfig import Flags, resolve
from podsched_devstack.certs import DevCredentials, generate, kubeconfig
from podsched_queue.access import Target, events_target
from podsched_service.api_audit import response_status, source_ips
from podsched_service.authentication import (
    AUTHENTICATED_GROUP,
    NO_AUTHENTICATION_IDENTITY,
    AuthenticationError,
    Authenticator,
    Identity,
    TokenFileError,
    bearer_token,
    load_token_file,
    parse_token_file,
)
from podsched_service.authorization import (
    Attributes,
    Policy,
    PolicyError,
    forbidden_message,
    parse_policy,
)
from podsched_service.tls import ServerTLS, certificate_identity

ALICE = Identity("alice", ("team-a", AUTHENTICATED_GROUP))
BOB = Identity("bob", ("team-b-devs", AUTHENTICATED_GROUP))
ADMIN = Identity("admin", (AUTHENTICATED_GROUP,))
PLATFORM = Identity("carol", ("platform", AUTHENTICATED_GROUP))
MASTER = Identity("root", ("system:masters", AUTHENTICATED_GROUP))
NOBODY = Identity("mallory", (AUTHENTICATED_GROUP,))
VIEWER = Identity("dashboard", ("viewers", AUTHENTICATED_GROUP))

POLICY_TEXT = """
apiVersion: podsched.io/v1
kind: AuthorizationPolicy
clusterAdmins:
  users: [admin]
  groups: [platform]
clusterViewers:
  groups: [viewers]
tenants:
- name: team-a
  namespaces: [team-a, team-a-ci]
  groups: [team-a]
- namespaces: [team-b]
  users: [bob]
"""
POLICY = parse_policy(POLICY_TEXT, "policy.yaml")


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> DevCredentials:
    return generate(tmp_path_factory.mktemp("certs"), server="https://127.0.0.1:50051")


# --- the token file ------------------------------------------------------------------------------------


def test_a_token_file_maps_tokens_to_users_uids_and_groups() -> None:
    tokens = parse_token_file(
        '# comment\n\nt1,alice,uid-1,"team-a,ops"\nt2, bob ,uid-2\n t3,carol,uid-3,""\n', "tokens.csv"
    )
    assert tokens == {
        "t1": Identity("alice", ("team-a", "ops", AUTHENTICATED_GROUP), "uid-1", "token"),
        "t2": Identity("bob", (AUTHENTICATED_GROUP,), "uid-2", "token"),
        "t3": Identity("carol", (AUTHENTICATED_GROUP,), "uid-3", "token"),
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "t1,alice\n",
            "token file 'tokens.csv' must have at least 3 columns (token, user name, user uid), found 2 on line 1",
        ),
        ("t1,alice,u1\nlonely\n", "found 1 on line 2"),
        ("t1,,u1\n", "token file 'tokens.csv': empty user name on line 1"),
        (",alice,u1\n", "token file 'tokens.csv': empty token on line 1"),
        ("t1,alice,u1\nt1,bob,u2\n", "token file 'tokens.csv': duplicate token on line 2"),
    ],
    ids=["too few columns", "too few columns later", "no user", "no token", "a token twice"],
)
def test_a_bad_token_file_is_refused_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(TokenFileError) as error:
        parse_token_file(text, "tokens.csv")
    assert message in str(error.value)


def test_an_unreadable_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "missing.csv"
    with pytest.raises(TokenFileError) as error:
        load_token_file(str(path))
    assert str(error.value) == f"cannot read token file '{path}': No such file or directory"


@pytest.mark.parametrize(
    ("metadata", "token"),
    [
        ([("authorization", "Bearer abc")], "abc"),
        ([("Authorization", "bearer  abc ")], "abc"),
        ([("authorization", b"Bearer abc")], "abc"),
        ([("authorization", "Basic abc")], ""),
        ([("authorization", "Bearer")], ""),
        ([("user-agent", "x")], None),
    ],
)
def test_the_bearer_token_of_the_metadata(metadata: list[tuple[str, str | bytes]], token: str | None) -> None:
    assert bearer_token(metadata) == token


# --- authentication -------------------------------------------------------------------------------------


def test_without_tokens_or_client_certificates_every_caller_is_the_admin() -> None:
    authenticator = Authenticator(None, certificates=False)
    assert not authenticator.enabled
    assert authenticator.authenticate(None, None) == NO_AUTHENTICATION_IDENTITY
    assert authenticator.authenticate("anything", None).username == "system:admin"
    assert POLICY.authorize(Attributes(NO_AUTHENTICATION_IDENTITY, "create", "nodes")).allowed


def test_a_token_identifies_its_user_and_a_wrong_or_missing_one_nobody() -> None:
    authenticator = Authenticator(parse_token_file("t1,alice,u1,team-a\n", "f"), certificates=False)
    assert authenticator.authenticate("t1", None) == Identity("alice", ("team-a", AUTHENTICATED_GROUP), "u1")
    for token, reason in ((None, "no credentials"), ("t2", "invalid bearer token"), ("", "malformed")):
        with pytest.raises(AuthenticationError, match=reason):
            authenticator.authenticate(token, None)


def test_a_client_certificate_is_its_common_name_and_organizations(creds: DevCredentials) -> None:
    authenticator = Authenticator(parse_token_file("t1,alice,u1,team-a\n", "f"), certificates=True)
    admin_pem = creds.path("admin.crt").read_bytes()
    assert certificate_identity(admin_pem) == ("admin", ("system:masters",))
    assert authenticator.authenticate(None, admin_pem) == Identity(
        "admin", ("system:masters", AUTHENTICATED_GROUP), "", "x509"
    )
    # A token, when sent, decides alone: the right one wins over the certificate, a wrong one is refused.
    assert authenticator.authenticate("t1", admin_pem).username == "alice"
    with pytest.raises(AuthenticationError, match="invalid bearer token"):
        authenticator.authenticate("wrong", admin_pem)
    # Without a token file the header is not looked at, as upstream ignores it without a token authenticator.
    assert Authenticator(None, certificates=True).authenticate("wrong", admin_pem).username == "admin"


# --- the policy file --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("clusterAdmins: {users: [a]}\nadmins: []\n", "unknown field admins"),
        ("tenants:\n- namespaces: [a]\n  user: [x]\n", "unknown field tenants[0].user"),
        ("tenants:\n- users: [x]\n", "tenants[0].namespaces: Required value"),
        ("tenants:\n- namespaces: [a]\n", "tenants[0]: needs users or groups"),
        ("tenants: {a: b}\n", "tenants must be a list"),
        ("clusterAdmins: {users: admin}\n", "clusterAdmins.users must be a list of non-empty strings"),
        ("apiVersion: rbac.authorization.k8s.io/v1\n", "apiVersion must be podsched.io/v1"),
        ("- a\n", "expected a mapping"),
        ("a: [\n", "not YAML"),
    ],
)
def test_a_bad_policy_is_refused_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as error:
        parse_policy(text, "policy.yaml")
    assert message in str(error.value) and "policy file 'policy.yaml'" in str(error.value)


def attrs(user: Identity, verb: str, resource: ResourceType | str, namespace: str = "", name: str = "") -> Attributes:
    """The attributes the queue service builds: `resource` is a served type, or "events"."""
    target = Target.of(resource, namespace, name) if isinstance(resource, ResourceType) else events_target(namespace)
    return target.attributes(user, verb)


TENANT_VERBS = ["create", "get", "list", "watch", "delete"]


@pytest.mark.parametrize(
    ("case", "attributes", "allowed"),
    [
        # Cluster admins, by user, by group, and system:masters, may do anything anywhere.
        ("an admin user creates a node", attrs(ADMIN, "create", NODE), True),
        ("an admin group deletes a PriorityClass", attrs(PLATFORM, "delete", PRIORITY_CLASS, name="high"), True),
        ("system:masters patches a pod anywhere", attrs(MASTER, "patch", POD, "team-b", "p"), True),
        ("an admin lists pods across namespaces", attrs(ADMIN, "list", POD, ""), True),
        ("an admin watches events everywhere", attrs(PLATFORM, "watch", "events", ""), True),
        # A tenant: pods and PDBs in its namespaces (a group's tenant, a user's tenant).
        *[
            (f"a tenant may {verb} pods in its namespace", attrs(ALICE, verb, POD, "team-a", "p"), True)
            for verb in TENANT_VERBS
        ],
        *[
            (f"a tenant may {verb} PDBs in its namespace", attrs(ALICE, verb, PDB, "team-a-ci", "b"), True)
            for verb in TENANT_VERBS
        ],
        ("a user's tenancy counts", attrs(BOB, "create", POD, "team-b"), True),
        ("a tenant reads events in its namespace", attrs(ALICE, "list", "events", "team-a"), True),
        ("a tenant watches events in its namespace", attrs(ALICE, "watch", "events", "team-a"), True),
        # ...and nothing else.
        ("a tenant may not patch a pod", attrs(ALICE, "patch", POD, "team-a", "p"), False),
        ("a tenant may not update a PDB", attrs(ALICE, "update", PDB, "team-a", "b"), False),
        ("a tenant may not create events", attrs(ALICE, "create", "events", "team-a"), False),
        ("a tenant may not create pods in another namespace", attrs(ALICE, "create", POD, "team-b"), False),
        ("a tenant may not delete another namespace's pod", attrs(BOB, "delete", POD, "team-a", "p"), False),
        ("a tenant may not list pods across namespaces", attrs(ALICE, "list", POD, ""), False),
        ("a tenant may not watch events across namespaces", attrs(ALICE, "watch", "events", ""), False),
        ("a tenant may not create PriorityClasses", attrs(ALICE, "create", PRIORITY_CLASS), False),
        ("a tenant may not read nodes", attrs(ALICE, "get", NODE, name="n1"), False),
        ("a tenant may not list nodes", attrs(ALICE, "list", NODE), False),
        # A cluster viewer (the dashboard): every read, everywhere; no write, not even where a tenant may.
        *[
            (f"a viewer may {verb} {kind.plural} at the cluster scope", attrs(VIEWER, verb, kind, ""), True)
            for verb in ("get", "list", "watch")
            for kind in (POD, NODE, PRIORITY_CLASS, PDB)
        ],
        ("a viewer may watch events everywhere", attrs(VIEWER, "watch", "events", ""), True),
        ("a viewer may list events of a namespace", attrs(VIEWER, "list", "events", "team-a"), True),
        *[
            (f"a viewer may not {verb} pods", attrs(VIEWER, verb, POD, "team-a", "p"), False)
            for verb in ("create", "patch", "delete")
        ],
        ("a viewer may not create a node", attrs(VIEWER, "create", NODE), False),
        ("someone in no rule may do nothing", attrs(NOBODY, "get", POD, "default", "p"), False),
        ("being authenticated is not a tenancy", attrs(NOBODY, "list", POD, "team-a"), False),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_what_the_policy_allows(case: str, attributes: Attributes, allowed: bool) -> None:
    assert POLICY.authorize(attributes).allowed is allowed, case


def test_resource_quotas_are_read_only_for_tenants() -> None:
    quota = lambda verb: Attributes(ALICE, verb, "resourcequotas", "", "team-a", "q")  # noqa: E731
    assert [POLICY.authorize(quota(v)).allowed for v in ("get", "list", "watch", "create", "delete")] == [
        True,
        True,
        True,
        False,
        False,
    ]


def test_the_reason_names_the_rule() -> None:
    assert POLICY.authorize(attrs(ALICE, "create", POD, "team-a")).reason == (
        'tenant of namespace "team-a" (group "team-a")'
    )
    assert POLICY.authorize(attrs(ADMIN, "create", NODE)).reason == 'cluster admin (user "admin")'
    assert POLICY.authorize(attrs(MASTER, "create", NODE)).reason == 'cluster admin (group "system:masters")'
    assert POLICY.authorize(attrs(ALICE, "create", NODE)).reason == ""
    assert POLICY.authorize(attrs(VIEWER, "list", NODE)).reason == 'cluster viewer (group "viewers")'


def test_without_a_policy_every_authenticated_caller_may_do_anything() -> None:
    assert Policy.allow_all().authorize(attrs(NOBODY, "delete", NODE, name="n1")).allowed


# --- kube-apiserver's wording ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (
            attrs(ALICE, "create", POD, "team-b"),
            'pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "team-b"',
        ),
        (
            attrs(ALICE, "delete", POD, "team-b", "p"),
            'pods "p" is forbidden: User "alice" cannot delete resource "pods" in API group "" '
            'in the namespace "team-b"',
        ),
        (
            attrs(ALICE, "list", POD, ""),
            'pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope',
        ),
        (
            attrs(ALICE, "create", PRIORITY_CLASS),
            'priorityclasses.scheduling.k8s.io is forbidden: User "alice" cannot create resource "priorityclasses" '
            'in API group "scheduling.k8s.io" at the cluster scope',
        ),
        (
            attrs(ALICE, "get", NODE, name="n1"),
            'nodes "n1" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope',
        ),
        (
            attrs(ALICE, "patch", PDB, "team-a", "b"),
            'poddisruptionbudgets.policy "b" is forbidden: User "alice" cannot patch resource "poddisruptionbudgets" '
            'in API group "policy" in the namespace "team-a"',
        ),
        (
            attrs(ALICE, "list", "events", ""),
            'events is forbidden: User "alice" cannot list resource "events" in API group "" at the cluster scope',
        ),
    ],
)
def test_forbidden_messages_are_upstreams(attributes: Attributes, message: str) -> None:
    assert forbidden_message(attributes) == "Error from server (Forbidden): " + message


def test_what_an_apply_body_is_about() -> None:
    pod_json = b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}'
    assert Target.of_document(pod_json) == Target("pods", "", "v1", "default", "p", POD)
    pc_json = (
        b'{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "x", "namespace": "a"}}'
    )
    assert Target.of_document(pc_json) == Target("priorityclasses", "scheduling.k8s.io", "v1", "", "x", PRIORITY_CLASS)
    # A kind the API does not serve is authorized as its URL would be; no kind or no JSON: nothing to authorize.
    assert Target.of_document(b'{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "d"}}') == (
        Target("statefulsets", "apps", "v1", "", "d")
    )
    assert Target.of_document(b'{"metadata": {"name": "d"}}').resource == ""
    assert Target.of_document(b"not json") == Target()


# --- the audit record ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "message", "created", "expected"),
    [
        (grpc.StatusCode.OK, "", True, (201, "", "OK")),
        (grpc.StatusCode.OK, "", False, (200, "", "OK")),
        (
            grpc.StatusCode.UNAUTHENTICATED,
            "error: You must be logged in to the server (Unauthorized)",
            False,
            (401, "Unauthorized", "UNAUTHENTICATED"),
        ),
        (
            grpc.StatusCode.PERMISSION_DENIED,
            "Error from server (Forbidden): pods is forbidden: ...",
            False,
            (403, "Forbidden", "PERMISSION_DENIED"),
        ),
        (
            grpc.StatusCode.INVALID_ARGUMENT,
            'Error from server (Invalid): Pod "p" is invalid: ...',
            False,
            (422, "Invalid", "INVALID_ARGUMENT"),
        ),
        (
            grpc.StatusCode.INVALID_ARGUMENT,
            "error: error parsing x: ...",
            False,
            (400, "BadRequest", "INVALID_ARGUMENT"),
        ),
        (
            grpc.StatusCode.NOT_FOUND,
            'Error from server (NotFound): pods "p" not found',
            False,
            (404, "NotFound", "NOT_FOUND"),
        ),
        (
            grpc.StatusCode.UNAVAILABLE,
            "Error from server (ServiceUnavailable): x",
            False,
            (503, "ServiceUnavailable", "UNAVAILABLE"),
        ),
    ],
)
def test_an_answer_as_an_audit_response_status(
    code: grpc.StatusCode, message: str, created: bool, expected: tuple[int, str, str]
) -> None:
    status = response_status(code, message, created=created)
    assert (status.code, status.reason, status.grpc_code) == expected
    assert status.message == message


def test_source_ips_from_the_grpc_peer() -> None:
    assert source_ips("ipv4:127.0.0.1:5000") == ["127.0.0.1"]
    assert source_ips("ipv6:[::1]:5000") == ["::1"]
    assert source_ips("") == []


# --- TLS settings ----------------------------------------------------------------------------------------


def tls_config(**values: str) -> SimpleNamespace:
    fields = {"tls_cert_file": "", "tls_key_file": "", "tls_client_ca_file": "", "tls_client_groups": ""}
    return SimpleNamespace(**{**fields, **values})


def test_tls_settings_must_be_complete() -> None:
    assert ServerTLS.from_config(tls_config()) is None
    with pytest.raises(ValueError, match="must be set together"):
        ServerTLS.from_config(tls_config(tls_cert_file="c"))
    with pytest.raises(ValueError, match="client certificates exist only over TLS"):
        ServerTLS.from_config(tls_config(tls_client_ca_file="ca"))
    with pytest.raises(ValueError, match="needs PODSCHED_TLS_CLIENT_CA_FILE"):
        ServerTLS.from_config(tls_config(tls_cert_file="c", tls_key_file="k", tls_client_groups="g"))
    tls = ServerTLS.from_config(
        tls_config(tls_cert_file="c", tls_key_file="k", tls_client_ca_file="ca", tls_client_groups="a, b,")
    )
    assert tls == ServerTLS("c", "k", "ca", ("a", "b")) and tls.mutual
    with pytest.raises(ValueError, match="PODSCHED_TLS_CERT_FILE: cannot read c"):
        tls.credentials()


# --- the CLI's kubeconfig ---------------------------------------------------------------------------------


def test_the_generated_kubeconfig_resolves_relative_to_its_folder(creds: DevCredentials) -> None:
    config = str(creds.path("kubeconfig"))
    admin = resolve(Flags(kubeconfig=config), {}, "127.0.0.1:50051")
    assert (admin.address, admin.tls, admin.namespace) == ("127.0.0.1:50051", True, "")
    assert admin.ca == creds.path("ca.crt").read_bytes()
    assert admin.client_certificate == creds.path("admin.crt").read_bytes()
    alice = resolve(Flags(context="alice"), {"PODSCHED_KUBECONFIG": config}, "x:1")
    assert alice.client_key == creds.path("alice.key").read_bytes() and alice.namespace == "team-a"


def test_flags_override_the_kubeconfig_and_the_kubeconfig_the_environment(
    creds: DevCredentials, tmp_path: Path
) -> None:
    config = tmp_path / "config"  # not beside the credentials: absolute paths and inline data
    document = kubeconfig("https://queue:50051")
    document["clusters"] = [  # type: ignore[index]
        {
            "name": "podsched",
            "cluster": {"server": "https://queue:50051", "certificate-authority": str(creds.path("ca.crt"))},
        }
    ]
    document["users"] = [  # type: ignore[index]
        {
            "name": "admin",
            "user": {
                "token": "from-file",
                "client-certificate-data": base64.b64encode(b"PEM").decode(),
                "client-key": str(creds.path("admin.key")),
            },
        }
    ]
    config.write_text(yaml.safe_dump(document))
    environment = {"PODSCHED_KUBECONFIG": str(config), "PODSCHED_SERVER": "env:1"}
    connection = resolve(Flags(), environment, "default:1")
    assert (connection.address, connection.token, connection.client_certificate) == ("queue:50051", "from-file", b"PEM")
    connection = resolve(Flags(server="flag:2", token="from-flag"), environment, "default:1")
    assert (connection.address, connection.token) == ("flag:2", "from-flag")
    assert resolve(Flags(), {"PODSCHED_SERVER": "env:1"}, "default:1") == resolve(Flags(server="env:1"), {}, "x")
    plain = resolve(Flags(), {}, "default:1")
    assert (plain.address, plain.tls, plain.token) == ("default:1", False, "")
    assert resolve(Flags(server="https://h:1"), {}, "x").tls


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (Flags(kubeconfig="/no/such/file"), "stat /no/such/file: no such file or directory"),
        (Flags(context="nope"), "context was not found for specified context: nope"),
        (Flags(client_certificate="KUBECONFIG_DIR/admin.crt"), "a client certificate needs its key"),
        (Flags(server="ftp://h:1"), 'unsupported server scheme "ftp"'),
        (Flags(certificate_authority="/no/ca.crt"), "unable to read certificate-authority /no/ca.crt"),
    ],
)
def test_unusable_connection_settings_are_usage_errors(flags: Flags, message: str, creds: DevCredentials) -> None:
    if flags.client_certificate:
        flags = Flags(client_certificate=flags.client_certificate.replace("KUBECONFIG_DIR", str(creds.directory)))
    with pytest.raises(UsageError) as error:
        resolve(flags, {}, "x:1")
    assert message in str(error.value)


def test_a_hostile_name_is_quoted_short_and_the_refusal_fits_a_grpc_status() -> None:
    from podsched.api.errors import MAX_MESSAGE_BYTES
    from podsched_service.authentication import Identity
    from podsched_service.authorization import Attributes, forbidden_message

    alice = Identity("alice", ("team-a",))
    message = forbidden_message(Attributes(alice, "delete", "pods", "", "team-b", "p" * 100_000))
    assert message.startswith('Error from server (Forbidden): pods "ppp')
    assert len(message.encode()) <= MAX_MESSAGE_BYTES
    assert "p" * 300 not in message
