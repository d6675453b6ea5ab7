"""The resource types the client knows, and how kubectl's words for them map to the API.

kubectl resolves `po`, `pod`, `pods` and `pods/web` on the client side (its RESTMapper) and sends
the canonical plural; so does `podsched`, so the server only ever sees one spelling.
"""

from __future__ import annotations

from podsched.api.errors import ApiError
from podsched.api.manifests import ACCEPTED_TYPES
from podsched.api.resources import (  # noqa: F401 (re-exported for the CLI's modules)
    DEPLOYMENT,
    JOB,
    NODE,
    PDB,
    POD,
    POD_GROUP,
    PRIORITY_CLASS,
    REPLICA_SET,
    RESOURCE_QUOTA,
    RESOURCE_TYPES,
    ResourceType,
    find_resource_type,
    resource_type_of_kind,
)
from podsched_cli.errors import UsageError


class UnknownResourceError(UsageError):
    """A resource word the client cannot map; `str()` is kubectl's error text (without `error: `)."""


def resource_type(word: str) -> ResourceType:
    """`po`, `pod`, `pods`, `Pods`, `pdb`, `priorityclass.scheduling.k8s.io`... -> the resource type."""
    found = find_resource_type(word)
    if found is None:
        raise UnknownResourceError(f'the server doesn\'t have a resource type "{word}"')
    return found


def is_served(api_version: str, kind: str) -> bool:
    """Whether the API serves this apiVersion/kind pair (kubectl's RESTMapper lookup)."""
    return api_version in ACCEPTED_TYPES.get(kind, ())


def parse_targets(words: list[str]) -> list[tuple[ResourceType, str | None]]:
    """kubectl's resource arguments: `KIND [NAME...]` or `KIND/NAME...`.

    Returns (type, name) pairs; a lone `KIND` gives one pair with name None (every object).
    Raises UsageError (UnknownResourceError for an unknown kind)."""
    if not words:
        raise UsageError("you must specify the type of resource to get")
    if "/" not in words[0]:
        kind = resource_type(words[0])
        if any("/" in word for word in words[1:]):
            raise UsageError(
                "there is no need to specify a resource type as a separate argument when passing arguments "
                "in resource/name form (e.g. 'podsched get resource/<resource_name>' instead of "
                "'podsched get resource resource/<resource_name>'"
            )
        return [(kind, name) for name in words[1:]] or [(kind, None)]
    targets: list[tuple[ResourceType, str | None]] = []
    for word in words:
        kind_word, separator, name = word.partition("/")
        if not separator or not name:
            raise UsageError(f'arguments in resource/name form must have a single resource and name: "{word}"')
        targets.append((resource_type(kind_word), name))
    return targets


def client_side_error(document: dict[str, object], source: str, namespace: str = "") -> str | None:
    """What kubectl rejects before sending a document, as the line it prints; None if it may go.

    An unserved kind or apiVersion is kubectl's `resource mapping not found` (from the API
    library's own wording), and a namespaced object whose namespace contradicts `-n` is refused.
    With `-n`, a namespaced object without a namespace gets it (the document is filled in place)."""
    metadata = document.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    kind, api_version = str(document.get("kind", "")), str(document.get("apiVersion", ""))
    if not is_served(api_version, kind):
        name, object_namespace = metadata.get("name"), metadata.get("namespace")
        error = ApiError.bad_request(
            kind,
            name if isinstance(name, str) else "",
            f'no matches for kind "{kind}" in version "{api_version}"',
            object_namespace if isinstance(object_namespace, str) else "",
        )
        return error.as_client_side(source).kubectl_message()
    resource = resource_type_of_kind(kind)
    if namespace and resource is not None and resource.namespaced:
        current = metadata.get("namespace")
        if current and current != namespace:
            return (
                f'error: the namespace from the provided object "{current}" does not match the namespace '
                f"\"{namespace}\". You must pass '--namespace={current}' to perform this operation."
            )
        if not current:
            metadata["namespace"] = namespace
            document["metadata"] = metadata
    return None
