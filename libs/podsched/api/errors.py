"""API errors with Kubernetes' reasons and kubectl's wording.

Every rejection names the object and the field. The gRPC layer maps `reason` to a status code
(Invalid/BadRequest -> INVALID_ARGUMENT, Forbidden -> PERMISSION_DENIED or FAILED_PRECONDITION,
AlreadyExists -> ALREADY_EXISTS, NotFound -> NOT_FOUND); the CLI prints `kubectl_message()`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

REASON_INVALID = "Invalid"
REASON_BAD_REQUEST = "BadRequest"
REASON_FORBIDDEN = "Forbidden"
REASON_ALREADY_EXISTS = "AlreadyExists"
REASON_NOT_FOUND = "NotFound"
REASON_CONFLICT = "Conflict"
# An admission plugin's plain (not APIStatus) error: the API server answers 500 with no reason and
# kubectl prints `Error from server: <message>` (upstream's ResourceQuota plugin does this for
# `insufficient quota to match these scopes`).
REASON_UNKNOWN = ""

# A message travels as the grpc-message header, percent-encoded (a non-ASCII byte takes three), and
# clients refuse headers past 8 KiB: a status they cannot read is no clear error. Upstream quotes a
# rejected value whole; here a long one is cut (`SHOWN_VALUE` characters) and the line is capped.
SHOWN_VALUE = 256
MAX_MESSAGE_BYTES = 4096

# Resource (plural) names as the API server prints them, per kind.
RESOURCE_NAMES = {
    "Node": "nodes",
    "Pod": "pods",
    "PriorityClass": "priorityclasses.scheduling.k8s.io",
    "PodDisruptionBudget": "poddisruptionbudgets.policy",
    "ResourceQuota": "resourcequotas",
    "ReplicaSet": "replicasets.apps",
    "Deployment": "deployments.apps",
    "Job": "jobs.batch",
    "PodGroup": "podgroups.scheduling.k8s.io",
}


@dataclass(frozen=True, slots=True)
class FieldError:
    """One invalid field: `path` like `spec.containers[0].resources.requests[cpu]`."""

    path: str
    detail: str
    value: object = None
    kind: str = "Invalid value"  # also "Required value", "Unsupported value", "Forbidden", ...

    def __str__(self) -> str:
        if self.kind == "Required value":
            return f"{self.path}: Required value" + (f": {self.detail}" if self.detail else "")
        if self.kind == "Forbidden":
            return f"{self.path}: Forbidden" + (f": {self.detail}" if self.detail else "")
        if self.value is None:
            return f"{self.path}: {self.kind}: {self.detail}"
        # Only the bad value is quoted (Go's %q); details such as upstream's regex hints keep their
        # own single quotes: "... '-' or '.', and must start and end with an alphanumeric character".
        body = f"{self.path}: {self.kind}: {format_bad_value(self.value)}"
        return body + (f": {self.detail}" if self.detail else "")


def format_bad_value(value: object) -> str:
    """Render a rejected value as apimachinery's field.Error does: strings quoted like Go's %q,
    numbers bare, booleans as `true`/`false`. A string longer than SHOWN_VALUE is cut:
    `"aaaa..." (300 characters)`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if len(value) > SHOWN_VALUE:
            return json.dumps(value[:SHOWN_VALUE] + "...", ensure_ascii=False) + f" ({len(value)} characters)"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int) and value.bit_length() > 256:  # Python refuses str() past 4300 digits
        return f"{'-' if value < 0 else ''}<{value.bit_length()}-bit integer>"
    return str(value)


@dataclass(eq=False)
class ApiError(Exception):
    """A rejected request. `kind`/`namespace`/`name` identify the object, `reason` the class of error."""

    reason: str
    kind: str
    name: str
    message: str
    namespace: str = ""
    field_errors: list[FieldError] = field(default_factory=list)
    # kubectl reports some failures itself, before any request (unparsable files, unknown kinds):
    # those print as `error: ...` rather than `Error from server (...)`.
    client_side: bool = False

    def __post_init__(self) -> None:
        Exception.__init__(self, self.kubectl_message())

    @property
    def resource(self) -> str:
        return RESOURCE_NAMES.get(self.kind, self.kind.lower() + "s" if self.kind else "objects")

    def kubectl_message(self) -> str:
        """The line kubectl prints, e.g.
        `Error from server (Forbidden): pods "p" is forbidden: no PriorityClass with name foo was found`,
        at most MAX_MESSAGE_BYTES once percent-encoded (`fit_status_message`)."""
        if self.client_side:
            return fit_status_message(f"error: {self.message}")
        if self.reason == REASON_UNKNOWN:
            return fit_status_message(f"Error from server: {self.message}")
        return fit_status_message(f"Error from server ({self.reason}): {self.message}")

    @staticmethod
    def invalid(kind: str, name: str, errors: list[FieldError], namespace: str = "") -> ApiError:
        shown_kind = kind or "Object"
        details = ", ".join(str(error) for error in errors)
        message = f'{shown_kind} "{shorten(name)}" is invalid: ' + (f"[{details}]" if len(errors) > 1 else details)
        return ApiError(REASON_INVALID, kind, name, message, namespace, list(errors))

    @staticmethod
    def forbidden(kind: str, name: str, detail: str, namespace: str = "") -> ApiError:
        resource = RESOURCE_NAMES.get(kind, kind.lower() + "s")
        message = f'{shorten(resource)} "{shorten(name)}" is forbidden: {detail}'
        return ApiError(REASON_FORBIDDEN, kind, name, message, namespace)

    @staticmethod
    def already_exists(kind: str, name: str, namespace: str = "") -> ApiError:
        resource = RESOURCE_NAMES.get(kind, kind.lower() + "s")
        message = f'{shorten(resource)} "{shorten(name)}" already exists'
        return ApiError(REASON_ALREADY_EXISTS, kind, name, message, namespace)

    @staticmethod
    def not_found(kind: str, name: str, namespace: str = "") -> ApiError:
        resource = RESOURCE_NAMES.get(kind, kind.lower() + "s")
        return ApiError(REASON_NOT_FOUND, kind, name, f'{shorten(resource)} "{shorten(name)}" not found', namespace)

    @staticmethod
    def bad_request(kind: str, name: str, detail: str, namespace: str = "") -> ApiError:
        return ApiError(REASON_BAD_REQUEST, kind, name, detail, namespace)

    def as_client_side(self, source: str) -> ApiError:
        """The same failure as kubectl words it when it finds it while reading `source`."""
        message = self.message
        if message.startswith("no matches for kind"):
            message = (
                f'resource mapping not found for name: "{self.name}" namespace: "{self.namespace}" '
                f'from "{source}": {message}\nensure CRDs are installed first'
            )
        return ApiError(self.reason, self.kind, self.name, message, self.namespace, self.field_errors, True)


def shorten(text: str) -> str:
    """`text`, or its first SHOWN_VALUE characters and `...` when longer: a name or word from a
    request quoted in a message."""
    return text if len(text) <= SHOWN_VALUE else text[:SHOWN_VALUE] + "..."


def _encoded_size(char: str) -> int:
    """Bytes `char` takes in a grpc-message header: printable ASCII as is (`%` escaped), every
    other UTF-8 byte as %XX."""
    if " " <= char <= "~":
        return 3 if char == "%" else 1
    return 3 * len(char.encode("utf-8", "replace"))


def fit_status_message(message: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """`message` cut to `limit` bytes as a gRPC status message (percent-encoded), ending in
    `... (message truncated)` when cut."""
    if len(message) * 12 <= limit or sum(map(_encoded_size, message)) <= limit:  # at most 12 bytes a character
        return message
    suffix = " ... (message truncated)"
    budget = limit - len(suffix)
    used = 0
    for index, char in enumerate(message):
        used += _encoded_size(char)
        if used > budget:
            return message[:index] + suffix
    return message
