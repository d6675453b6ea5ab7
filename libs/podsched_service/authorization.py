"""What an identity may do: cluster admins and namespace tenants, from a policy file, and the
Forbidden message kube-apiserver's authorizer words.

Policy file (YAML):

    apiVersion: podsched.io/v1
    kind: AuthorizationPolicy
    clusterAdmins:            # may do anything: nodes, priorityclasses, every namespace
      users: [admin]
      groups: [platform-team]
    clusterViewers:           # may get, list and watch everything (the dashboard, on-call)
      users: [dashboard]
    tenants:                  # may work in their namespaces only
    - namespaces: [team-a]
      users: [alice]
      groups: [team-a-devs]

The group `system:masters` is always a cluster admin (as upstream, where it bypasses RBAC). A
tenant may create, get, list, watch and delete (one or a collection) pods and poddisruptionbudgets, and get, list and
watch resourcequotas and events, in its namespaces; nothing at the cluster scope (no nodes, no
priorityclasses, no list or watch across all namespaces). A cluster viewer may get, list and watch
every kind and the events, in every namespace and at the cluster scope, and change nothing (as
Kubernetes' `view` role, over all of podsched's kinds). Everything else is denied.

Attributes follow kube-apiserver's: a verb (get, list, watch, create, patch, delete, deletecollection), a resource
(lower-case plural) and its API group, a namespace ("" at the cluster scope) and a name ("" for
create, list and watch)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from podsched.api.errors import fit_status_message, shorten
from podsched_service.authentication import MASTERS_GROUP, Identity

POLICY_API_VERSION = "podsched.io/v1"
POLICY_KIND = "AuthorizationPolicy"

READ_VERBS = frozenset({"get", "list", "watch"})
# (API group, resource) -> the verbs a tenant has on it in its own namespaces.
TENANT_RULES: Mapping[tuple[str, str], frozenset[str]] = {
    ("", "pods"): READ_VERBS | {"create", "delete", "deletecollection"},
    ("policy", "poddisruptionbudgets"): READ_VERBS | {"create", "delete", "deletecollection"},
    ("", "resourcequotas"): READ_VERBS,
    ("", "events"): READ_VERBS,
    ("apps", "deployments"): READ_VERBS | {"create", "delete", "deletecollection"},
    ("apps", "replicasets"): READ_VERBS | {"create", "delete", "deletecollection"},
    ("batch", "jobs"): READ_VERBS | {"create", "delete", "deletecollection"},
    ("scheduling.k8s.io", "podgroups"): READ_VERBS | {"create", "delete", "deletecollection"},
}


@dataclasses.dataclass(frozen=True, slots=True)
class Attributes:
    """One request as the authorizer sees it (k8s.io/apiserver authorizer.Attributes)."""

    user: Identity
    verb: str
    resource: str
    api_group: str = ""
    namespace: str = ""
    name: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """allowed, and why (upstream's `authorization.k8s.io/reason`; "" when no rule allows it)."""

    allowed: bool
    reason: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Subjects:
    """Users and groups a rule applies to."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def match(self, user: Identity) -> str:
        """How `user` matches ("user \"alice\"", "group \"g\""), or "" if it does not."""
        if user.username in self.users:
            return f'user "{user.username}"'
        for group in user.groups:
            if group in self.groups:
                return f'group "{group}"'
        return ""


@dataclasses.dataclass(frozen=True, slots=True)
class Tenant:
    """Subjects confined to namespaces."""

    namespaces: frozenset[str]
    subjects: Subjects


@dataclasses.dataclass(frozen=True, slots=True)
class Policy:
    """Cluster admins and tenants. `Policy.allow_all()` is the policy without a file: every
    authenticated caller may do anything (kube-apiserver's AlwaysAllow)."""

    admins: Subjects = Subjects()
    tenants: tuple[Tenant, ...] = ()
    always_allow: bool = False
    viewers: Subjects = Subjects()

    @staticmethod
    def allow_all() -> Policy:
        return Policy(always_allow=True)

    def authorize(self, attributes: Attributes) -> Decision:
        """Whether the request may proceed. Pure: the same attributes always get the same answer."""
        user = attributes.user
        if self.always_allow:
            return Decision(True, "no authorization policy: every authenticated user may do anything")
        if MASTERS_GROUP in user.groups:
            return Decision(True, f'cluster admin (group "{MASTERS_GROUP}")')
        matched = self.admins.match(user)
        if matched:
            return Decision(True, f"cluster admin ({matched})")
        if attributes.verb in READ_VERBS:
            matched = self.viewers.match(user)
            if matched:
                return Decision(True, f"cluster viewer ({matched})")
        verbs = TENANT_RULES.get((attributes.api_group, attributes.resource), frozenset())
        if attributes.namespace and attributes.verb in verbs:
            for tenant in self.tenants:
                matched = tenant.subjects.match(user)
                if matched and attributes.namespace in tenant.namespaces:
                    return Decision(True, f'tenant of namespace "{attributes.namespace}" ({matched})')
        return Decision(False)

    def namespaces_of(self, user: Identity) -> frozenset[str]:
        """The namespaces `user` is a tenant of (for messages and filtering)."""
        return frozenset(ns for tenant in self.tenants if tenant.subjects.match(user) for ns in tenant.namespaces)


class PolicyError(ValueError):
    """A policy file that cannot be used; `str()` names the file and the field."""


def parse_policy(text: str, source: str) -> Policy:
    """Raises PolicyError naming `source` and the field for anything it does not understand (an
    unknown key is an error, so a typo cannot silently grant or drop access)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise PolicyError(f"policy file '{source}': not YAML: {error}") from None
    if not isinstance(document, dict):
        raise PolicyError(f"policy file '{source}': expected a mapping with clusterAdmins and tenants")
    _no_unknown_keys(document, {"apiVersion", "kind", "clusterAdmins", "clusterViewers", "tenants"}, source, "")
    if document.get("apiVersion", POLICY_API_VERSION) != POLICY_API_VERSION:
        raise PolicyError(f"policy file '{source}': apiVersion must be {POLICY_API_VERSION}")
    if document.get("kind", POLICY_KIND) != POLICY_KIND:
        raise PolicyError(f"policy file '{source}': kind must be {POLICY_KIND}")
    admins = _subjects(document.get("clusterAdmins") or {}, source, "clusterAdmins")
    viewers = _subjects(document.get("clusterViewers") or {}, source, "clusterViewers")
    raw_tenants = document.get("tenants") or []
    if not isinstance(raw_tenants, list):
        raise PolicyError(f"policy file '{source}': tenants must be a list")
    tenants = []
    for index, raw in enumerate(raw_tenants):
        path = f"tenants[{index}]"
        if not isinstance(raw, dict):
            raise PolicyError(f"policy file '{source}': {path} must be a mapping")
        _no_unknown_keys(raw, {"name", "namespaces", "users", "groups"}, source, path)
        namespaces = _strings(raw.get("namespaces"), source, f"{path}.namespaces")
        if not namespaces:
            raise PolicyError(f"policy file '{source}': {path}.namespaces: Required value")
        subjects = _subjects({k: v for k, v in raw.items() if k in ("users", "groups")}, source, path)
        if not subjects.users and not subjects.groups:
            raise PolicyError(f"policy file '{source}': {path}: needs users or groups")
        tenants.append(Tenant(frozenset(namespaces), subjects))
    return Policy(admins, tuple(tenants), viewers=viewers)


def load_policy(path: str) -> Policy:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise PolicyError(f"cannot read policy file '{path}': {error.strerror}") from None
    return parse_policy(text, path)


def _no_unknown_keys(mapping: dict[Any, Any], known: set[str], source: str, path: str) -> None:
    unknown = sorted(str(key) for key in mapping if key not in known)
    if unknown:
        where = f"{path}." if path else ""
        raise PolicyError(f"policy file '{source}': unknown field {where}{unknown[0]}")


def _strings(value: Any, source: str, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise PolicyError(f"policy file '{source}': {path} must be a list of non-empty strings")
    return list(value)


def _subjects(raw: Any, source: str, path: str) -> Subjects:
    if not isinstance(raw, dict):
        raise PolicyError(f"policy file '{source}': {path} must be a mapping with users and groups")
    _no_unknown_keys(raw, {"users", "groups"}, source, path)
    return Subjects(
        frozenset(_strings(raw.get("users"), source, f"{path}.users")),
        frozenset(_strings(raw.get("groups"), source, f"{path}.groups")),
    )


# --- kube-apiserver's wording -------------------------------------------------------------------------


def forbidden_detail(attributes: Attributes) -> str:
    """k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage."""
    user = attributes.user.username
    if attributes.namespace:
        return (
            f'User "{user}" cannot {attributes.verb} resource "{attributes.resource}" in API group '
            f'"{attributes.api_group}" in the namespace "{shorten(attributes.namespace)}"'
        )
    return (
        f'User "{user}" cannot {attributes.verb} resource "{attributes.resource}" in API group '
        f'"{attributes.api_group}" at the cluster scope'
    )


def forbidden_message(attributes: Attributes, reason: str = "") -> str:
    """kubectl's line for the 403 (apimachinery's NewForbidden over forbiddenMessage), e.g.
    `Error from server (Forbidden): pods "p" is forbidden: User "alice" cannot delete resource "pods"
    in API group "" in the namespace "team-b"`; `pods is forbidden: ...` without a name (create,
    list, watch)."""
    group_resource = attributes.resource + (f".{attributes.api_group}" if attributes.api_group else "")
    detail = forbidden_detail(attributes) + (f": {reason}" if reason else "")
    # The name and namespace come from the request: quoted short, and the line kept within what a gRPC
    # status can carry (a hostile 100 KB name must get this refusal, not RESOURCE_EXHAUSTED).
    subject = f'{group_resource} "{shorten(attributes.name)}"' if attributes.name else group_resource
    return fit_status_message(f"Error from server (Forbidden): {subject} is forbidden: {detail}")
