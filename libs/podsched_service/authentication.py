"""Who is calling the public API: bearer tokens from a static token file and client certificates,
mapped to an identity (user name, uid, groups) as kube-apiserver maps them.

Token file: kube-apiserver's `--token-auth-file` CSV, one user per line,
`token,user,uid,"group1,group2"` (at least the first three columns; the groups column is
optional). Blank lines and lines starting with `#` are skipped (upstream has no comments).

Precedence: a bearer token, when the token file is configured and the call carries one
(`authorization: Bearer <token>` metadata), decides alone: an unknown token is refused even if
the connection has a valid client certificate. Otherwise the verified client certificate is the
identity (CommonName = user, Organizations = groups). Upstream tries certificates first; here a
port with a client CA requires a certificate from every caller (gRPC Python cannot make it
optional), so the token must be what tells users of one certificate apart.

Every authenticated identity is also in `system:authenticated`, as upstream adds it. With
authentication off (no token file and no client CA) every caller is `system:admin` in
`system:masters`, a cluster admin: what `make run` and a local kubectl with the admin
kubeconfig are used to. There is no anonymous access when authentication is on."""

from __future__ import annotations

import csv
import dataclasses
import hmac
import io
from collections.abc import Iterable, Mapping

from podsched_service.tls import certificate_identity

AUTHENTICATED_GROUP = "system:authenticated"
MASTERS_GROUP = "system:masters"
# kubectl's line for a 401 (it prints no server message for Unauthorized).
UNAUTHORIZED_MESSAGE = "error: You must be logged in to the server (Unauthorized)"

METHOD_TOKEN = "token"
METHOD_X509 = "x509"
METHOD_NONE = "none"


@dataclasses.dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller (authentication.k8s.io/v1 UserInfo), and how it was authenticated."""

    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    method: str = METHOD_TOKEN


# The caller when authentication is off: a cluster admin, named as a local admin kubeconfig names it.
NO_AUTHENTICATION_IDENTITY = Identity("system:admin", (MASTERS_GROUP, AUTHENTICATED_GROUP), "", METHOD_NONE)


class AuthenticationError(Exception):
    """A call whose credentials do not identify anyone. `str()` says why, for the server's log and
    the audit record; the caller only ever sees UNAUTHORIZED_MESSAGE (as kube-apiserver answers 401)."""


class TokenFileError(ValueError):
    """A token file that cannot be used; `str()` names the file and the line."""


def parse_token_file(text: str, source: str) -> dict[str, Identity]:
    """token -> identity. Raises TokenFileError naming `source` and the line for a record with fewer
    than three columns (upstream's check), an empty user name, or a token given twice (upstream
    warns and keeps the last one; an ambiguous file is refused here)."""
    tokens: dict[str, Identity] = {}
    lines = io.StringIO(text)
    reader = csv.reader(lines, skipinitialspace=True)
    for record in reader:
        line = reader.line_num
        if not record or not "".join(record).strip() or record[0].lstrip().startswith("#"):
            continue
        if len(record) < 3:
            raise TokenFileError(
                f"token file '{source}' must have at least 3 columns (token, user name, user uid), "
                f"found {len(record)} on line {line}"
            )
        token, user, uid = (value.strip() for value in record[:3])
        if not token:
            raise TokenFileError(f"token file '{source}': empty token on line {line}")
        if not user:
            raise TokenFileError(f"token file '{source}': empty user name on line {line}")
        if token in tokens:
            raise TokenFileError(f"token file '{source}': duplicate token on line {line}")
        groups = [group.strip() for group in record[3].split(",") if group.strip()] if len(record) > 3 else []
        tokens[token] = Identity(user, _with_authenticated(groups), uid, METHOD_TOKEN)
    return tokens


def load_token_file(path: str) -> dict[str, Identity]:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except OSError as error:
        raise TokenFileError(f"cannot read token file '{path}': {error.strerror}") from None
    return parse_token_file(text, path)


def _with_authenticated(groups: Iterable[str]) -> tuple[str, ...]:
    unique = list(dict.fromkeys(groups))
    if AUTHENTICATED_GROUP not in unique:
        unique.append(AUTHENTICATED_GROUP)
    return tuple(unique)


def bearer_token(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    """The token of an `authorization: Bearer <token>` metadata entry; "" for a malformed header
    (present but not a bearer token), None if there is none."""
    for key, value in metadata:
        if key.lower() != "authorization":
            continue
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        scheme, _, token = text.strip().partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""
    return None


class Authenticator:
    """Maps a call's credentials to an Identity. `tokens` None: bearer tokens are not accepted
    (the header is ignored, as upstream ignores it without a token authenticator); `certificates`:
    the port verifies client certificates, so a certificate identifies its holder."""

    def __init__(self, tokens: Mapping[str, Identity] | None, certificates: bool) -> None:
        self.tokens = dict(tokens) if tokens is not None else None
        self.certificates = certificates

    @property
    def enabled(self) -> bool:
        return self.tokens is not None or self.certificates

    def authenticate(self, token: str | None, peer_certificate: bytes | None) -> Identity:
        """The caller's identity; AuthenticationError if the credentials identify no one."""
        if not self.enabled:
            return NO_AUTHENTICATION_IDENTITY
        if self.tokens is not None and token is not None:
            return self._token_identity(token)
        if self.certificates and peer_certificate is not None:
            identity = certificate_identity(peer_certificate)
            if identity is None:
                raise AuthenticationError("client certificate without a subject CommonName")
            user, groups = identity
            return Identity(user, _with_authenticated(groups), "", METHOD_X509)
        raise AuthenticationError("no credentials: neither a bearer token nor a client certificate")

    def _token_identity(self, token: str) -> Identity:
        assert self.tokens is not None
        if not token:
            raise AuthenticationError("malformed authorization metadata (expected `Bearer <token>`)")
        # Compare every token in constant time, so the answer's timing does not reveal a prefix.
        found = None
        for known, identity in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = identity
        if found is None:
            raise AuthenticationError("invalid bearer token")
        return found
