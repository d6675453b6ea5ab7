"""Where the CLI connects and as whom: flags, a kubeconfig-shaped file, environment, defaults.

The kubeconfig (`--kubeconfig FILE` or $PODSCHED_KUBECONFIG) is the subset of kubectl's that a
gRPC client needs:

    apiVersion: v1
    kind: Config
    clusters:
    - name: podsched
      cluster:
        server: https://127.0.0.1:50051           # https:// = TLS; host:port or http:// = plaintext
        certificate-authority: ca.crt             # or certificate-authority-data (base64 PEM)
        tls-server-name: queue                    # optional: the name to verify instead of the host
    users:
    - name: alice
      user:
        token: 0123abcd                           # or tokenFile: PATH
        client-certificate: alice.crt             # or client-certificate-data
        client-key: alice.key                     # or client-key-data
    contexts:
    - name: alice
      context: {cluster: podsched, user: alice, namespace: team-a}
    current-context: alice

Relative paths are relative to the kubeconfig's folder (as kubectl reads them). Precedence, each
setting on its own: a flag (--server, --token, --certificate-authority, --client-certificate,
--client-key), then the kubeconfig's context (--context, else current-context), then
$PODSCHED_SERVER for the server, then the local stack's 127.0.0.1:50051. The context's namespace
is the default for -n."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from podsched_cli.errors import UsageError

ENV_SERVER = "PODSCHED_SERVER"
ENV_KUBECONFIG = "PODSCHED_KUBECONFIG"


@dataclasses.dataclass(frozen=True, slots=True)
class Connection:
    """Everything a client needs: the address (host:port), whether to speak TLS and with which
    files' contents, the bearer token, and the context's default namespace."""

    address: str
    tls: bool = False
    ca: bytes | None = None
    client_certificate: bytes | None = None
    client_key: bytes | None = None
    token: str = ""
    server_name: str = ""
    namespace: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Flags:
    """The connection flags as given (None or "" = not given)."""

    server: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    token: str | None = None
    certificate_authority: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None


def resolve(flags: Flags, environ: Mapping[str, str], default_server: str) -> Connection:
    """The connection the flags, the kubeconfig and the environment describe. Raises UsageError
    with kubectl's kind of wording for a missing or unusable file."""
    path = flags.kubeconfig or environ.get(ENV_KUBECONFIG) or ""
    entry = _context_entries(path, flags.context) if path else _Entries(Path.cwd(), {}, {}, {})
    if flags.context and not path:
        raise UsageError(f"context was not found for specified context: {flags.context}")
    cluster, user = entry.cluster, entry.user

    server = flags.server or str(cluster.get("server") or "") or environ.get(ENV_SERVER) or default_server
    scheme, separator, rest = server.partition("://")
    address = rest if separator else server
    address = address.rstrip("/")
    ca = (
        _read(flags.certificate_authority, "certificate-authority")
        if flags.certificate_authority
        else entry.data_or_file(cluster, "certificate-authority")
    )
    certificate = (
        _read(flags.client_certificate, "client-certificate")
        if flags.client_certificate
        else entry.data_or_file(user, "client-certificate")
    )
    key = _read(flags.client_key, "client-key") if flags.client_key else entry.data_or_file(user, "client-key")
    if (certificate is None) != (key is None):
        raise UsageError("a client certificate needs its key (--client-key), and a key its certificate")
    token = flags.token or str(user.get("token") or "")
    if not token and user.get("tokenFile"):
        token_bytes = _read(str(entry.resolve(str(user["tokenFile"]))), "tokenFile") or b""
        token = token_bytes.decode().strip()
    tls = (separator and scheme == "https") or ca is not None or certificate is not None
    if separator and scheme not in ("https", "http"):
        raise UsageError(f'unsupported server scheme "{scheme}" (use https://HOST:PORT or HOST:PORT)')
    if scheme == "http" and separator and (ca is not None or certificate is not None):
        raise UsageError(f"{server}: TLS settings for an http:// server (use https://)")
    return Connection(
        address,
        bool(tls),
        ca,
        certificate,
        key,
        token,
        str(cluster.get("tls-server-name") or ""),
        str(entry.context.get("namespace") or ""),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Entries:
    """The chosen context and the cluster and user it names."""

    base: Path
    context: dict[str, Any]
    cluster: dict[str, Any]
    user: dict[str, Any]

    def resolve(self, path: str) -> Path:
        candidate = Path(os.path.expanduser(path))
        return candidate if candidate.is_absolute() else self.base / candidate

    def data_or_file(self, section: dict[str, Any], field: str) -> bytes | None:
        data = section.get(f"{field}-data")
        if data:
            try:
                return base64.b64decode(str(data), validate=True)
            except (binascii.Error, ValueError):
                raise UsageError(f"{field}-data is not valid base64") from None
        value = section.get(field)
        return _read(str(self.resolve(str(value))), field) if value else None


def _read(path: str, what: str) -> bytes:
    try:
        return Path(os.path.expanduser(path)).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"unable to read {what} {path}: no such file or directory") from None
    except OSError as error:
        raise UsageError(f"unable to read {what} {path}: {error.strerror}") from None


def _named(document: dict[str, Any], section: str, name: str, path: str) -> dict[str, Any]:
    for item in document.get(section) or []:
        if isinstance(item, dict) and item.get("name") == name:
            body = item.get(section[:-1])
            return body if isinstance(body, dict) else {}
    raise UsageError(f'{section[:-1]} "{name}" not found in kubeconfig {path}')


def _context_entries(path: str, context_name: str | None) -> _Entries:
    try:
        text = Path(os.path.expanduser(path)).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"stat {path}: no such file or directory") from None
    except OSError as error:
        raise UsageError(f'error loading config file "{path}": {error.strerror}') from None
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise UsageError(f'error loading config file "{path}": {error}') from None
    if not isinstance(document, dict):
        raise UsageError(f'error loading config file "{path}": not a kubeconfig (a mapping)')
    base = Path(os.path.expanduser(path)).resolve().parent
    name = context_name or str(document.get("current-context") or "")
    if not name:
        # kubectl without a context uses no cluster or user from the file.
        return _Entries(base, {}, {}, {})
    contexts = {
        item.get("name"): item.get("context") for item in document.get("contexts") or [] if isinstance(item, dict)
    }
    if name not in contexts:
        raise UsageError(f"context was not found for specified context: {name}")
    found = contexts[name]
    context: dict[str, Any] = found if isinstance(found, dict) else {}
    cluster = _named(document, "clusters", str(context["cluster"]), path) if context.get("cluster") else {}
    user = _named(document, "users", str(context["user"]), path) if context.get("user") else {}
    return _Entries(base, context, cluster, user)
