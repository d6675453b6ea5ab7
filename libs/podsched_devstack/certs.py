"""`python -m podsched_devstack certs DIR`: development credentials for a podsched with TLS,
client certificates, bearer tokens and roles (docker-compose.yml uses them; `make certs` writes
them to .cache/certs, which git ignores). Never use them for anything but development: the CA key
is in the same folder, and the other keys are world-readable so that a container's user can read
a bind mount of them.

DIR receives:
    ca.crt, ca.key            the development CA (EC P-256, 10 years)
    service.crt, service.key  what every service serves and presents to its peers: CN podsched-service,
                              O system:podsched-services; SANs localhost, 127.0.0.1, ::1, the compose
                              service names and the Kubernetes Service names
    admin.crt, admin.key      a cluster admin's client certificate: CN admin, O system:masters
    alice.crt, alice.key      a tenant's client certificate: CN alice, O team-a
    dashboard.crt, .key       the dashboard's client certificate: CN dashboard, a cluster viewer
    tokens.csv                bearer tokens (kube-apiserver's --token-auth-file format) for admin and alice
    policy.yaml               the authorization policy: admin is a cluster admin, group team-a owns namespace
                              team-a, dashboard is a cluster viewer and may create pods in default (the
                              what-if's dry runs are authorized as the create they simulate, as upstream)
    kubeconfig                contexts "admin" (current) and "alice" (namespace team-a) for the CLI
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE_GROUP = "system:podsched-services"
ADMIN_USER, ADMIN_GROUP = "admin", "system:masters"
TENANT_USER, TENANT_GROUP, TENANT_NAMESPACE = "alice", "team-a", "team-a"
# The dashboard's identity (docker-compose.yml mounts its certificate): it reads everything.
DASHBOARD_USER, DASHBOARD_WHATIF_NAMESPACE = "dashboard", "default"
DEFAULT_SERVER = "https://127.0.0.1:50051"
SERVICE_HOSTS = (
    "localhost",
    "127.0.0.1",
    "::1",
    # docker-compose.yml's service names
    "queue",
    "filter",
    "preemption",
    "binder",
    # deploy/kubernetes/podsched.yaml's Services
    "podsched-queue",
    "podsched-filter",
    "podsched-preemption",
    "podsched-binder",
)
CA_DAYS, LEAF_DAYS = 3650, 365


@dataclasses.dataclass(frozen=True, slots=True)
class DevCredentials:
    """Where `generate` wrote everything, and the tokens it made up."""

    directory: Path
    admin_token: str
    tenant_token: str

    def path(self, name: str) -> Path:
        return self.directory / name


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(path: Path, data: bytes, mode: int) -> None:
    path.write_bytes(data)
    os.chmod(path, mode)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _certificate(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    days: int,
    ca: bool = False,
    usages: Sequence[x509.ObjectIdentifier] = (),
    hosts: Sequence[str] = (),
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    else:
        builder = builder.add_extension(
            x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True
        ).add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
    if hosts:
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def generate(directory: Path, *, server: str = DEFAULT_SERVER, extra_hosts: Sequence[str] = ()) -> DevCredentials:
    """Write a fresh set into `directory` (created if needed; existing files are replaced)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("podsched-dev-ca", ["podsched development"])
    ca = _certificate(ca_name, ca_key, ca_name, ca_key, days=CA_DAYS, ca=True)
    _write(directory / "ca.crt", ca.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(directory / "ca.key", _key_pem(ca_key), 0o600)

    leaves = {
        "service": (
            _name("podsched-service", [SERVICE_GROUP]),
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
            [*SERVICE_HOSTS, *extra_hosts],
        ),
        ADMIN_USER: (_name(ADMIN_USER, [ADMIN_GROUP]), [ExtendedKeyUsageOID.CLIENT_AUTH], []),
        TENANT_USER: (_name(TENANT_USER, [TENANT_GROUP]), [ExtendedKeyUsageOID.CLIENT_AUTH], []),
        DASHBOARD_USER: (_name(DASHBOARD_USER, []), [ExtendedKeyUsageOID.CLIENT_AUTH], []),
    }
    for file_name, (subject, usages, hosts) in leaves.items():
        key = _key()
        certificate = _certificate(subject, key, ca_name, ca_key, days=LEAF_DAYS, usages=usages, hosts=hosts)
        _write(directory / f"{file_name}.crt", certificate.public_bytes(serialization.Encoding.PEM), 0o644)
        # Readable by a container's own user through a bind mount: development only.
        _write(directory / f"{file_name}.key", _key_pem(key), 0o644)

    credentials = DevCredentials(directory, secrets.token_hex(16), secrets.token_hex(16))
    _write(
        directory / "tokens.csv",
        (
            "# token,user,uid,groups (kube-apiserver --token-auth-file format)\n"
            f'{credentials.admin_token},{ADMIN_USER},uid-admin,"platform"\n'
            f'{credentials.tenant_token},{TENANT_USER},uid-alice,"{TENANT_GROUP}"\n'
        ).encode(),
        0o644,
    )
    policy = {
        "apiVersion": "podsched.io/v1",
        "kind": "AuthorizationPolicy",
        "clusterAdmins": {"users": [ADMIN_USER], "groups": [ADMIN_GROUP]},
        "clusterViewers": {"users": [DASHBOARD_USER]},
        "tenants": [
            {"name": TENANT_GROUP, "namespaces": [TENANT_NAMESPACE], "groups": [TENANT_GROUP]},
            {"name": "dashboard-what-if", "namespaces": [DASHBOARD_WHATIF_NAMESPACE], "users": [DASHBOARD_USER]},
        ],
    }
    _write(directory / "policy.yaml", yaml.safe_dump(policy, sort_keys=False).encode(), 0o644)
    _write(directory / "kubeconfig", yaml.safe_dump(kubeconfig(server), sort_keys=False).encode(), 0o644)
    return credentials


def kubeconfig(server: str) -> dict[str, object]:
    """A kubeconfig for the files `generate` writes, with paths relative to its own folder (as
    kubectl resolves them): contexts admin (current) and alice (namespace team-a), each user
    identified by its client certificate."""

    def user(name: str) -> dict[str, object]:
        return {"name": name, "user": {"client-certificate": f"{name}.crt", "client-key": f"{name}.key"}}

    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "podsched", "cluster": {"server": server, "certificate-authority": "ca.crt"}}],
        "users": [user(ADMIN_USER), user(TENANT_USER)],
        "contexts": [
            {"name": ADMIN_USER, "context": {"cluster": "podsched", "user": ADMIN_USER}},
            {
                "name": TENANT_USER,
                "context": {"cluster": "podsched", "user": TENANT_USER, "namespace": TENANT_NAMESPACE},
            },
        ],
        "current-context": ADMIN_USER,
    }
