"""Everything the `podsched` client prints, as pure functions: objects (Kubernetes JSON dicts),
events and API responses in, kubectl's text out.

Nothing here talks to the server or reads the clock: `now` (seconds since the epoch) is passed in,
so every AGE column and every description is reproducible in tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object, render_quantity
from podsched.api.quantity import to_int, to_milli
from podsched.api.timestamps import format_timestamp, parse_timestamp
from podsched.api.types import DISRUPTION_MODE_ALL, Pod, PodDisruptionBudget, PodGroup, PriorityClass
from podsched.cluster.events import Event, ObjectReference
from podsched.framework.resource import pod_request_map
from podsched.preemption.explain import has_toleration_policy, toleration_reason
from podsched.preemption.pdb import pdb_matches_pod
from podsched.preemption.toleration import scheduled_at, toleration_policy
from podsched_cli.resources import (
    NODE,
    PDB,
    POD,
    POD_GROUP,
    PRIORITY_CLASS,
    RESOURCE_QUOTA,
    ResourceType,
    resource_type_of_kind,
)
from podsched_proto.api.v1 import api_pb2
from podsched_proto.events.v1 import events_pb2

NONE = "<none>"
UNKNOWN = "<unknown>"
DEFAULT_NAMESPACE = "default"
# How a refused connection is explained; the hint names the command that starts the local stack.
START_HINT = "make up"

# --- tabwriter ---------------------------------------------------------------------------------------

# kubectl's printers: `get` uses tabwriter(minwidth 6, padding 3), `describe` tabwriter(minwidth 0,
# padding 2). Cells are tab-terminated; the last cell of a line is never padded.
GET_MIN_WIDTH, GET_PADDING = 6, 3
DESCRIBE_MIN_WIDTH, DESCRIBE_PADDING = 0, 2


def tabwrite(lines: Sequence[str], min_width: int, padding: int) -> list[str]:
    """Align tab-separated cells as Go's text/tabwriter does: a column is aligned over a block of
    consecutive lines that all have a (tab-terminated) cell in it, so a line without tabs ends every
    block. Trailing blanks are dropped."""
    cells = [line.split("\t") for line in lines]
    widths: list[list[int]] = [[] for _ in lines]

    def align(first: int, last: int, column: int) -> None:
        index = first
        while index < last:
            if column >= len(cells[index]) - 1:
                index += 1
                continue
            end = index
            width = min_width
            while end < last and column < len(cells[end]) - 1:
                width = max(width, len(cells[end][column]) + padding)
                end += 1
            for line in range(index, end):
                widths[line].append(width)
            align(index, end, column + 1)
            index = end

    align(0, len(lines), 0)
    out = []
    for line_cells, line_widths in zip(cells, widths, strict=True):
        padded = [cell.ljust(width) for cell, width in zip(line_cells, line_widths, strict=False)]
        out.append(("".join(padded) + line_cells[-1]).rstrip())
    return out


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A `get`-style table: header and rows aligned together."""
    return tabwrite(["\t".join(row) for row in [header, *rows]], GET_MIN_WIDTH, GET_PADDING)


def padded_row(row: Sequence[str], widths: list[int]) -> str:
    """One row aligned to the widths of a table printed earlier (kubectl's RememberWidths for
    `--watch`); `widths` grows in place when a cell is wider, so later rows stay aligned."""
    for index, cell in enumerate(row[:-1]):
        needed = max(GET_MIN_WIDTH, len(cell) + GET_PADDING)
        if index >= len(widths):
            widths.append(needed)
        elif needed > widths[index]:
            widths[index] = needed
    return ("".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])) + row[-1]).rstrip()


def column_widths(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[int]:
    """The widths `table` gives each column but the last."""
    widths = [max(GET_MIN_WIDTH, len(cell) + GET_PADDING) for cell in header[:-1]]
    for row in rows:
        for index, cell in enumerate(row[:-1]):
            widths[index] = max(widths[index], len(cell) + GET_PADDING)
    return widths


# --- time ---------------------------------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: `45s`, `2m5s`, `12m`, `3h10m`, `20h`, `3d4h`, `30d`, `2y3d`."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 60 * 2:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _seconds(timestamp: Any) -> float | None:
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        return parse_timestamp(timestamp)
    except ValueError:
        return None


def age(timestamp: Any, now: float) -> str:
    """Time since an RFC3339 timestamp as kubectl prints it; `<unknown>` when there is none."""
    moment = _seconds(timestamp)
    return UNKNOWN if moment is None else human_duration(now - moment)


def rfc1123(timestamp: Any) -> str:
    """`describe`'s absolute times (Go's time.RFC1123Z, in UTC): `Mon, 02 Jan 2006 15:04:05 +0000`."""
    moment = _seconds(timestamp)
    if moment is None:
        return NONE
    return datetime.fromtimestamp(moment, tz=UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


# --- object accessors ---------------------------------------------------------------------------------


def _section(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return _section(obj, "metadata")


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _namespace(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("namespace", "") or "")


def _text(value: Any, empty: str = NONE) -> str:
    if value is None or value == "":
        return empty
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _conditions(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    conditions = _section(obj, "status").get("conditions")
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def _containers(pod: Mapping[str, Any], key: str = "containers") -> list[dict[str, Any]]:
    containers = _section(pod, "spec").get(key)
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def _requests(container: Mapping[str, Any]) -> dict[str, Any]:
    requests = _section(_section(container, "resources"), "requests")
    return {str(name): value for name, value in requests.items()}


def pod_status_word(pod: Mapping[str, Any]) -> str:
    """kubectl's STATUS column: Terminating once deletionTimestamp is set, else the phase."""
    if _meta(pod).get("deletionTimestamp"):
        return "Terminating"
    return str(_section(pod, "status").get("phase") or "Pending")


def pod_ready(pod: Mapping[str, Any]) -> str:
    """READY: every container is ready once the simulated node agent runs the pod."""
    total = max(len(_containers(pod)), 1)
    running = _section(pod, "status").get("phase") == "Running"
    return f"{total if running else 0}/{total}"


def _amount(name: str, value: Any) -> int:
    return to_milli(value) if name == "cpu" else to_int(value)


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's effective requests in canonical units (CPU in millicores), computed by the same
    code as the scheduler (init containers, sidecars, overhead) when the pod decodes."""
    try:
        decoded = decode_object(pod)
    except (ApiError, ValueError, TypeError, KeyError):
        decoded = None
    if isinstance(decoded, Pod):
        return pod_request_map(decoded)
    # An object the client cannot decode still gets the plain sum of its containers.
    total: dict[str, int] = {}
    for container in _containers(pod):
        for name, value in _requests(container).items():
            try:
                total[name] = total.get(name, 0) + _amount(name, value)
            except ValueError:
                continue
    return total


def _quantity_map(values: Mapping[str, Any]) -> dict[str, int]:
    out = {}
    for name, value in values.items():
        try:
            out[str(name)] = _amount(str(name), value)
        except ValueError:
            continue
    return out


# --- get: tables -------------------------------------------------------------------------------------


def pod_row(pod: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    spec, status = _section(pod, "spec"), _section(pod, "status")
    row = [_name(pod), pod_ready(pod), pod_status_word(pod), "0", age(_meta(pod).get("creationTimestamp"), now)]
    if wide:
        row += [
            _text(status.get("podIP")),
            _text(spec.get("nodeName")),
            _text(status.get("nominatedNodeName")),
            NONE,
            str(spec.get("priority", 0)),
        ]
    return row


def pod_header(*, wide: bool = False) -> list[str]:
    header = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    if wide:
        header += ["IP", "NODE", "NOMINATED NODE", "READINESS GATES", "PRIORITY"]
    return header


def node_status_word(node: Mapping[str, Any]) -> str:
    return "Ready,SchedulingDisabled" if _section(node, "spec").get("unschedulable") else "Ready"


def node_row(node: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    row = [_name(node), node_status_word(node), NONE, age(_meta(node).get("creationTimestamp"), now), "podsched"]
    if wide:
        allocatable = _section(_section(node, "status"), "allocatable")
        row += [_text(allocatable.get(name)) for name in ("cpu", "memory", "pods")]
    return row


def node_header(*, wide: bool = False) -> list[str]:
    header = ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    return [*header, "CPU", "MEMORY", "PODS"] if wide else header


def priority_class_row(priority_class: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    return [
        _name(priority_class),
        str(priority_class.get("value", 0)),
        _text(bool(priority_class.get("globalDefault", False))),
        age(_meta(priority_class).get("creationTimestamp"), now),
        str(priority_class.get("preemptionPolicy") or "PreemptLowerPriority"),
    ]


def priority_class_header(*, wide: bool = False) -> list[str]:
    return ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]


def pdb_row(pdb: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    spec = _section(pdb, "spec")
    return [
        _name(pdb),
        _text(spec.get("minAvailable"), "N/A"),
        _text(spec.get("maxUnavailable"), "N/A"),
        str(_section(pdb, "status").get("disruptionsAllowed", 0)),
        age(_meta(pdb).get("creationTimestamp"), now),
    ]


def pdb_header(*, wide: bool = False) -> list[str]:
    return ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]


def _quota_usage_cells(quota: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """`name: used/hard` for every status.hard resource in name order, split as kubectl splits them:
    `limits.*` to the LIMIT column, everything else to REQUEST. A resource with no usage yet is 0."""
    status = _section(quota, "status")
    hard, used = _section(status, "hard"), _section(status, "used")
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        pieces = name.split(".")
        target = limits if len(pieces) > 1 and pieces[0] == "limits" else requests
        target.append(f"{name}: {used.get(name, '0')}/{hard[name]}")
    return requests, limits


def resource_quota_row(quota: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    requests, limits = _quota_usage_cells(quota)
    return [_name(quota), age(_meta(quota).get("creationTimestamp"), now), ", ".join(requests), ", ".join(limits)]


def resource_quota_header(*, wide: bool = False) -> list[str]:
    return ["NAME", "AGE", "REQUEST", "LIMIT"]


def pod_group_status(group: Mapping[str, Any]) -> str:
    """printPodGroup's STATUS: Pending until the scheduler sets PodGroupInitiallyScheduled, then
    Scheduled or Unschedulable; a DisruptionTarget condition's reason wins."""
    status = "Pending"
    conditions = {c.get("type"): c for c in _section(group, "status").get("conditions") or [] if isinstance(c, dict)}
    scheduled = conditions.get("PodGroupInitiallyScheduled")
    if scheduled is not None:
        status = "Scheduled" if scheduled.get("status") == "True" else "Unschedulable"
    disruption = conditions.get("DisruptionTarget")
    if disruption is not None:
        status = str(disruption.get("reason", ""))
    return status


def pod_group_policy(group: Mapping[str, Any]) -> str:
    return "Gang" if "gang" in _section(_section(group, "spec"), "schedulingPolicy") else "Basic"


def pod_group_row(group: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    workload = _section(_section(group, "spec"), "workloadRef").get("workloadName") or NONE
    return [
        _name(group),
        pod_group_policy(group),
        str(workload),
        pod_group_status(group),
        age(_meta(group).get("creationTimestamp"), now),
    ]


def pod_group_header(*, wide: bool = False) -> list[str]:
    return ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]


def describe_pod_group(
    group: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]], now: float
) -> str:
    """`podsched describe podgroup`: the policy, priority and disruption mode, the member pods and
    where they stand, and the PodGroupInitiallyScheduled condition (why the group waits)."""
    spec = _section(group, "spec")
    policy = _section(spec, "schedulingPolicy")
    lines = [f"Name:\t{_name(group)}", f"Namespace:\t{_namespace(group) or DEFAULT_NAMESPACE}"]
    lines += _labels_lines("Labels", _section(_meta(group), "labels"))
    if "gang" in policy:
        lines.append(f"Scheduling Policy:\tGang (minCount {_section(policy, 'gang').get('minCount', 0)})")
    else:
        lines.append("Scheduling Policy:\tBasic")
    mode = _section(spec, "disruptionMode")
    lines.append(f"Disruption Mode:\t{'All' if 'all' in mode else 'Single'}")
    lines.append(f"Priority:\t{spec.get('priority', 0)}")
    if spec.get("priorityClassName"):
        lines.append(f"Priority Class Name:\t{spec['priorityClassName']}")
    lines.append(f"Preemption Policy:\t{spec.get('preemptionPolicy') or 'PreemptLowerPriority'}")
    lines.append(f"Status:\t{pod_group_status(group)}")
    members = [
        pod
        for pod in pods
        if _section(_section(pod, "spec"), "schedulingGroup").get("podGroupName") == _name(group)
        and (_namespace(pod) or DEFAULT_NAMESPACE) == (_namespace(group) or DEFAULT_NAMESPACE)
    ]
    bound = sum(1 for pod in members if _section(pod, "spec").get("nodeName"))
    lines.append(f"Pods:\t{len(members)} ({bound} bound, {len(members) - bound} pending)")
    for pod in sorted(members, key=_name):
        lines.append(f"  {_name(pod)}:\t{_section(pod, 'spec').get('nodeName') or '<pending>'}")
    conditions = [c for c in _section(group, "status").get("conditions") or [] if isinstance(c, dict)]
    if conditions:
        lines += ["Conditions:", "  Type\tStatus\tReason\tMessage", "  ----\t------\t------\t-------"]
        for condition in conditions:
            cells = [str(condition.get(key, "")) for key in ("type", "status", "reason", "message")]
            lines.append("  " + "\t".join(cells))
    lines += _event_lines(events, now)
    return _render(lines)


_COLUMNS = {
    POD.plural: (pod_header, pod_row),
    POD_GROUP.plural: (pod_group_header, pod_group_row),
    NODE.plural: (node_header, node_row),
    PRIORITY_CLASS.plural: (priority_class_header, priority_class_row),
    PDB.plural: (pdb_header, pdb_row),
    RESOURCE_QUOTA.plural: (resource_quota_header, resource_quota_row),
}


def _workload_columns(plural: str) -> tuple[Any, Any]:
    from podsched_cli import workload_output as w

    return {
        "deployments": (w.deployment_header, w.deployment_row),
        "replicasets": (w.replica_set_header, w.replica_set_row),
        "jobs": (w.job_header, w.job_row),
    }[plural]


def table_header_and_rows(
    resource: ResourceType,
    objects: Sequence[Mapping[str, Any]],
    now: float,
    *,
    wide: bool = False,
    all_namespaces: bool = False,
) -> tuple[list[str], list[list[str]]]:
    """The cells of `format_table` (`get --watch` prints later rows on their own)."""
    header_of, row_of = _COLUMNS.get(resource.plural) or _workload_columns(resource.plural)
    header = header_of(wide=wide)
    rows = [row_of(obj, now, wide=wide) for obj in objects]
    if all_namespaces and resource.namespaced:
        header = ["NAMESPACE", *header]
        rows = [[_namespace(obj), *row] for obj, row in zip(objects, rows, strict=True)]
    return header, rows


def format_table(
    resource: ResourceType,
    objects: Sequence[Mapping[str, Any]],
    now: float,
    *,
    wide: bool = False,
    all_namespaces: bool = False,
) -> str:
    """`podsched get` without -o json/yaml/name; with -A, namespaced kinds get a NAMESPACE column."""
    header, rows = table_header_and_rows(resource, objects, now, wide=wide, all_namespaces=all_namespaces)
    return "\n".join(table(header, rows)) + "\n"


def no_resources_message(resource: ResourceType, namespace: str, all_namespaces: bool) -> str:
    """kubectl's line (on stderr) when a list is empty."""
    if all_namespaces or not resource.namespaced:
        return "No resources found"
    return f"No resources found in {namespace or DEFAULT_NAMESPACE} namespace."


# --- get: json, yaml, name ----------------------------------------------------------------------------


def as_list(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """kubectl's wrapper for several objects."""
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {"resourceVersion": ""}}


def format_json(document: Any) -> str:
    return json.dumps(document, indent=4, ensure_ascii=False) + "\n"


class _KubectlYamlDumper(yaml.SafeDumper):
    """Strings that would read back as another type (`"2"`, `"31"`, timestamps) get double quotes,
    as kubectl writes them, instead of PyYAML's single quotes."""


def _represent_string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    plain_type = dumper.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    style = '"' if plain_type != "tag:yaml.org,2002:str" else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_KubectlYamlDumper.add_representer(str, _represent_string)


def format_yaml(document: Any) -> str:
    return str(
        yaml.dump(document, Dumper=_KubectlYamlDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)
    )


def format_objects(objects: Sequence[Mapping[str, Any]], output: str, *, single: bool) -> str:
    """-o json / -o yaml: the object itself when one was asked for by name, otherwise a List."""
    document: Any = dict(objects[0]) if single and len(objects) == 1 else as_list(objects)
    return format_json(document) if output == "json" else format_yaml(document)


def qualified_name(obj: Mapping[str, Any]) -> str:
    """`pod/web`, `priorityclass.scheduling.k8s.io/high`: how kubectl names an object in output lines."""
    kind = str(obj.get("kind", ""))
    resource = resource_type_of_kind(kind)
    return f"{resource.qualified if resource else kind.lower()}/{_name(obj)}"


def format_names(objects: Iterable[Mapping[str, Any]]) -> str:
    """-o name."""
    return "".join(qualified_name(obj) + "\n" for obj in objects)


# --- apply and delete ---------------------------------------------------------------------------------


def apply_line(kind: str, name: str, action: str, *, dry_run: bool = False) -> str:
    """`pod/web created`, `node/n1 configured (server dry run)`."""
    resource = resource_type_of_kind(kind)
    prefix = resource.qualified if resource else kind.lower()
    return f"{prefix}/{name} {action}" + (" (server dry run)" if dry_run else "")


def _reference_name(reference: events_pb2.ObjectReference) -> str:
    return f"{reference.namespace}/{reference.name}" if reference.namespace else reference.name


def dry_run_lines(outcome: api_pb2.DryRunOutcome) -> list[str]:
    """What a server dry run predicts for a pod, one indented line under the apply line, then why
    protected or PDB-covered pods would or would not be preempted."""
    because = [f"    {line}" for line in outcome.explanations]
    if outcome.node_name:
        return [f"  would bind to node {outcome.node_name}", *because]
    if outcome.nominated_node_name:
        victims = ", ".join(_reference_name(victim) for victim in outcome.victims)
        after = f" after preempting {victims}" if victims else ""
        return [f"  would be nominated to node {outcome.nominated_node_name}{after}", *because]
    if outcome.message:
        return [f"  would stay pending: {outcome.message}", *because]
    return []


def format_apply_response(
    response: api_pb2.ApplyResponse, sent: Mapping[str, Any], *, dry_run: bool = False
) -> list[str]:
    """The lines kubectl prints for one applied object; the stored object names it, falling back
    to the document sent when the server returned none."""
    stored: Any = {}
    if response.object_json:
        try:
            stored = json.loads(response.object_json)
        except ValueError:
            stored = {}
    obj = stored if isinstance(stored, dict) and stored.get("kind") else sent
    lines = [apply_line(str(obj.get("kind", "")), _name(obj) or _name(sent), response.action, dry_run=dry_run)]
    if dry_run and response.HasField("dry_run") and obj.get("kind") == POD.kind:
        lines += dry_run_lines(response.dry_run)
    return lines


def delete_line(
    resource: ResourceType, name: str, *, force: bool = False, dry_run: bool = False, output: str = ""
) -> str:
    """`pod "web" deleted`, `priorityclass.scheduling.k8s.io "high" deleted`, `pod "web" deleted
    (server dry run)`; with -o name only `pod/web`, dry run or not (kubectl delete's PrintObj)."""
    if output == "name":
        return f"{resource.qualified}/{name}"
    return (
        f'{resource.qualified} "{name}" '
        + ("force deleted" if force else "deleted")
        + (" (server dry run)" if dry_run else "")
    )


# --- errors -------------------------------------------------------------------------------------------

# gRPC status -> the reason kubectl shows when the server's message is not already a full line.
_REASONS = {
    "INVALID_ARGUMENT": "BadRequest",
    "FAILED_PRECONDITION": "Forbidden",
    "PERMISSION_DENIED": "Forbidden",
    "ALREADY_EXISTS": "AlreadyExists",
    "NOT_FOUND": "NotFound",
    "ABORTED": "Conflict",
    "INTERNAL": "InternalError",
    "UNKNOWN": "InternalError",
    "RESOURCE_EXHAUSTED": "TooManyRequests",
}


def rpc_error_message(code: str, details: str, server: str, timeout: float) -> str:
    """The line printed for a failed call. `code` is the gRPC status name (`NOT_FOUND`); the
    server's details are already kubectl's line (`Error from server (NotFound): ...`) and print as is."""
    details = (details or "").strip()
    if code == "UNAVAILABLE":
        return f"The connection to the server {server} was refused - is podsched running? ({START_HINT})"
    if code == "DEADLINE_EXCEEDED":
        return f"Unable to connect to the server {server}: no answer within {timeout:g}s (--timeout)"
    if code == "UNIMPLEMENTED":
        return f"error: the server {server} does not support this request: {details or 'unimplemented'}"
    if details.startswith(("Error from server", "error:")):
        return details
    return f"Error from server ({_REASONS.get(code, 'InternalError')}): {details or code}"


# --- events -------------------------------------------------------------------------------------------


def _timestamp_seconds(message: Any, field: str) -> float:
    if not message.HasField(field):
        return 0.0
    stamp = getattr(message, field)
    return float(stamp.seconds) + float(stamp.nanos) / 1_000_000_000


def _reference(reference: events_pb2.ObjectReference) -> ObjectReference:
    return ObjectReference(reference.kind, reference.namespace, reference.name, reference.uid)


def event_to_dict(event: events_pb2.Event) -> dict[str, Any]:
    """A podsched.events.v1.Event as the Kubernetes Event JSON `simulate` prints (Event.to_dict)."""
    related = None
    if event.HasField("related") and (event.related.name or event.related.uid):
        related = _reference(event.related)
    return Event(
        type=event.type,
        reason=event.reason,
        message=event.message,
        involved_object=_reference(event.involved_object),
        event_time=_timestamp_seconds(event, "event_time"),
        reporting_controller=event.reporting_controller,
        action=event.action,
        related=related,
        count=event.count or 1,
        last_time=_timestamp_seconds(event, "last_time"),
        sequence=event.sequence,
    ).to_dict(format_timestamp)


def _involved(event: Mapping[str, Any]) -> dict[str, Any]:
    return _section(event, "involvedObject")


def event_namespace(event: Mapping[str, Any]) -> str:
    """Events about cluster-scoped objects (nodes) live in the default namespace, as in Kubernetes."""
    return str(_involved(event).get("namespace") or DEFAULT_NAMESPACE)


def event_interval(event: Mapping[str, Any], now: float) -> str:
    """kubectl's LAST SEEN / Age: `5s`, or `10s (x3 over 2m)` for an event that repeated."""
    first = age(event.get("eventTime"), now)
    count = event.get("count", 1)
    if isinstance(count, int) and count > 1:
        return f"{age(event.get('lastTimestamp') or event.get('eventTime'), now)} (x{count} over {first})"
    return first


def event_object(event: Mapping[str, Any]) -> str:
    involved = _involved(event)
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def event_header(*, all_namespaces: bool = False) -> list[str]:
    header = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    return ["NAMESPACE", *header] if all_namespaces else header


def event_row(event: Mapping[str, Any], now: float, *, all_namespaces: bool = False) -> list[str]:
    row = [
        event_interval(event, now),
        str(event.get("type", "")),
        str(event.get("reason", "")),
        event_object(event),
        str(event.get("message", "")).strip(),
    ]
    return [event_namespace(event), *row] if all_namespaces else row


def format_events(events: Sequence[Mapping[str, Any]], now: float, *, all_namespaces: bool = False) -> str:
    """`podsched events`: LAST SEEN TYPE REASON OBJECT MESSAGE, oldest first."""
    rows = [event_row(event, now, all_namespaces=all_namespaces) for event in events]
    return "\n".join(table(event_header(all_namespaces=all_namespaces), rows)) + "\n"


def no_events_message(namespace: str, all_namespaces: bool) -> str:
    return "No events found." if all_namespaces else f"No events found in {namespace or DEFAULT_NAMESPACE} namespace."


def format_event_json_line(event: Mapping[str, Any]) -> str:
    """`events --watch -o json`: one compact event per line, so the stream can be piped to jq."""
    return json.dumps(event, ensure_ascii=False) + "\n"


class EventDeduplicator:
    """Watch streams repeat events: the list and the stream overlap, and an event whose count was
    bumped comes again with the same sequence. Show each (sequence, count) once, newest count only."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}

    def is_new(self, sequence: int, count: int) -> bool:
        if sequence == 0:  # not numbered by the server: nothing to compare, always show
            return True
        if self._counts.get(sequence, 0) >= count:
            return False
        self._counts[sequence] = count
        return True


# --- describe -----------------------------------------------------------------------------------------


def _render(*sections: list[str]) -> str:
    """Describe output: each section aligned on its own, like kubectl flushing its tabwriter."""
    return "".join(line + "\n" for lines in sections for line in tabwrite(lines, DESCRIBE_MIN_WIDTH, DESCRIBE_PADDING))


def _labels_lines(key: str, labels: Mapping[str, Any]) -> list[str]:
    """kubectl prints the first label beside the key and each further one on its own aligned line."""
    if not labels:
        return [f"{key}:\t{NONE}"]
    pairs = [f"{name}={value}" for name, value in sorted(labels.items())]
    return [f"{key}:\t{pairs[0]}"] + [f"\t{pair}" for pair in pairs[1:]]


def _event_lines(events: Sequence[Mapping[str, Any]], now: float) -> list[str]:
    if not events:
        return [f"Events:\t{NONE}"]
    lines = ["Events:", "  Type\tReason\tAge\tFrom\tMessage", "  ----\t------\t----\t----\t-------"]
    for event in events:
        lines.append(
            "  "
            + "\t".join(
                [
                    str(event.get("type", "")),
                    str(event.get("reason", "")),
                    event_interval(event, now),
                    str(event.get("reportingController", "")),
                    str(event.get("message", "")).strip(),
                ]
            )
        )
    return lines


def _latest(events: Sequence[Mapping[str, Any]], reasons: tuple[str, ...]) -> Mapping[str, Any] | None:
    """The most recent event with one of `reasons` (a repeated event counts at its last time)."""
    best: tuple[float, int] | None = None
    found = None
    for index, event in enumerate(events):
        if event.get("reason") not in reasons:
            continue
        when = _seconds(event.get("lastTimestamp")) or _seconds(event.get("eventTime")) or 0.0
        if best is None or (when, index) >= best:
            best, found = (when, index), event
    return found


_ON_NODE_RE = re.compile(r"on node (\S+)")
# A node's reason under DefaultPreemption's `pdbPolicy: Strict` (podsched.preemption.pdb_policy).
_STRICT_PDB_RE = re.compile(r"Preemption would violate PodDisruptionBudgets? (.+?) \(pdbPolicy: Strict\)")
_BY_POD_RE = re.compile(r"Preempted by pod (\S+)")


def scheduling_summary(pod: Mapping[str, Any], events: Sequence[Mapping[str, Any]], waiting: str = "") -> str:
    """One sentence on where the pod stands and why, from its state and its events (`waiting`: why
    PreEnqueue holds it back, for a pod never attempted)."""
    meta, spec, status = _meta(pod), _section(pod, "spec"), _section(pod, "status")
    preempted = _latest(events, ("Preempted",))
    if preempted is not None:
        message = str(preempted.get("message", ""))
        related = _section(preempted, "related")
        by_match = _BY_POD_RE.search(message)
        if related.get("name"):
            preemptor = f"{related['namespace']}/{related['name']}" if related.get("namespace") else related["name"]
        else:
            preemptor = by_match.group(1) if by_match else "<unknown>"
        node_match = _ON_NODE_RE.search(message)
        node = node_match.group(1) if node_match else spec.get("nodeName") or NONE
        return f"Preempted by pod {preemptor} on node {node}"
    if any(
        c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler" for c in _conditions(pod)
    ):
        return f"Preempted by the scheduler on node {spec.get('nodeName') or NONE}"
    if meta.get("deletionTimestamp"):
        return f"Terminating on node {spec.get('nodeName') or NONE}"
    if spec.get("nodeName"):
        return f"Bound to node {spec['nodeName']}"
    if status.get("nominatedNodeName"):
        return f"Nominated to node {status['nominatedNodeName']} (waiting for victims to terminate)"
    latest = _latest(events, ("FailedScheduling", "NominationCleared"))
    if latest is None:
        return f"Pending: {waiting}" if waiting else "Pending: no scheduling attempt recorded yet"
    if latest.get("reason") == "NominationCleared":
        return str(latest.get("message", "")).strip()
    return f"Pending: {str(latest.get('message', '')).strip()}"


def scheduling_lines(pod: Mapping[str, Any], events: Sequence[Mapping[str, Any]], waiting: str = "") -> list[str]:
    """The Scheduling section: where the pod stands, and, for a pending pod that lost its nomination,
    why it was cleared (its later attempts' FailedScheduling would otherwise hide that)."""
    lines = [scheduling_summary(pod, events, waiting)]
    if _section(pod, "spec").get("nodeName") or _section(pod, "status").get("nominatedNodeName"):
        return lines
    lines += strict_pdb_lines(_latest(events, ("FailedScheduling",)))
    cleared = _latest(events, ("NominationCleared",))
    if cleared is not None and _latest(events, ("NominationCleared", "Nominated")) is cleared:
        message = str(cleared.get("message", "")).strip()
        if message and message not in lines:
            lines.append(message)
    return lines


def strict_pdb_lines(failed: Mapping[str, Any] | None) -> list[str]:
    """Which PodDisruptionBudgets kept preemption from helping, read from the nodes' reasons in the
    FailedScheduling message (each names the PDBs its node's victims would violate)."""
    if failed is None:
        return []
    names: list[str] = []
    for match in _STRICT_PDB_RE.finditer(str(failed.get("message", ""))):
        for name in match.group(1).split(", "):
            if " and " in name:  # "default/c and 2 more": the reason names only the first few
                name = name.split(" and ")[0]
            if name not in names:
                names.append(name)
    if not names:
        return []
    return [f"Preemption blocked by PodDisruptionBudget: {name} (pdbPolicy: Strict)" for name in names]


def _requests_lines(container: Mapping[str, Any]) -> list[str]:
    requests = _requests(container)
    if not requests:
        return []
    return ["    Requests:"] + [f"      {name}:\t{value}" for name, value in requests.items()]


@dataclass(frozen=True, slots=True)
class Protection:
    """What `describe pod` reads besides the pod and its events to say whether preemption may take it:
    its PriorityClass, the PodDisruptionBudgets of its namespace and, for a victim, its preemptor
    (each as the API returned it; missing when it is gone or may not be read)."""

    priority_class: Mapping[str, Any] | None = None
    pdbs: Sequence[Mapping[str, Any]] = ()
    preemptor: Mapping[str, Any] | None = None  # a Pod, or a PodGroup (pod-group preemption)
    pod_group: Mapping[str, Any] | None = None  # the PodGroup the pod belongs to (GenericWorkload)
    # For a pod naming a PodGroup: whether the group was read (`pod_group` None then means it does
    # not exist) and how many pods of its namespace name it (what GangScheduling's PreEnqueue counts).
    pod_group_read: bool = False
    pod_group_pods: int = 0


def pod_group_wait(pod: Mapping[str, Any], protection: Protection | None) -> str:
    """Why GangScheduling's PreEnqueue holds a pod of a PodGroup back (GenericWorkload), in its
    words, with the count it compares; "" when it would not (or nothing was read to tell)."""
    name = _section(_section(pod, "spec"), "schedulingGroup").get("podGroupName")
    if not name or protection is None or not protection.pod_group_read:
        return ""
    group = protection.pod_group
    if group is None:
        return f"waiting for pods's pod group {json.dumps(name)} to appear in scheduling queue"
    gang = _section(_section(group, "spec"), "schedulingPolicy").get("gang")
    if isinstance(gang, dict) and protection.pod_group_pods < int(gang.get("minCount", 0)):
        return (
            "waiting for minCount pods from a gang to appear in scheduling queue "
            f"({protection.pod_group_pods} of minCount {gang.get('minCount')} pods exist)"
        )
    return ""


def _decoded(document: Mapping[str, Any] | None, kind: type[Any]) -> Any:
    if document is None:
        return None
    try:
        obj = decode_object(document)
    except ApiError:
        return None
    return obj if isinstance(obj, kind) else None


def protection_lines(
    pod_document: Mapping[str, Any], events: Sequence[Mapping[str, Any]], protection: Protection, now: float
) -> list[str]:
    """Why preemption may or may not take this pod: its PriorityClass's preemption toleration
    (honoured where the profile runs PreemptionToleration), the PDBs that select it, and, for a
    victim, why its preemptor was allowed to."""
    pod = _decoded(pod_document, Pod)
    if pod is None:
        return []
    lines: list[str] = []
    priority_class = _decoded(protection.priority_class, PriorityClass)
    if has_toleration_policy(priority_class):
        lines.append(_toleration_line(pod, priority_class, now))
        preempted = _latest(events, ("Preempted",))
        preemptor = _decoded(protection.preemptor, Pod)
        if preempted is not None and preemptor is not None:
            when = _seconds(preempted.get("lastTimestamp")) or _seconds(preempted.get("eventTime")) or now
            verdict = toleration_reason(pod, preemptor, {priority_class.name: priority_class}, when)
            if verdict is not None:
                lines.append(f"Preempted by {preemptor.namespace}/{preemptor.name}: {verdict[1]}")
    lines += pod_group_protection_lines(pod, events, protection)
    for document in protection.pdbs:
        pdb = _decoded(document, PodDisruptionBudget)
        if pdb is not None and pdb_matches_pod(pdb, pod):
            # The status is the system's (decoding a manifest leaves it out): read it as served.
            allowed = _section(document, "status").get("disruptionsAllowed", 0)
            lines.append(
                f"PodDisruptionBudget {pdb.namespace}/{pdb.name} covers it (disruptionsAllowed {allowed}): "
                "preemption reprieves it first, and under pdbPolicy Strict never takes it past that allowance"
            )
    return lines


def pod_group_protection_lines(pod: Pod, events: Sequence[Mapping[str, Any]], protection: Protection) -> list[str]:
    """What the pod's PodGroup changes for preemption (GenericWorkload): the priority it is weighed
    at, and whether it goes alone or with its whole group; and, for a victim of a PodGroup, that the
    group preempted across the cluster."""
    lines: list[str] = []
    group = _decoded(protection.pod_group, PodGroup)
    if group is not None:
        name = f"{group.namespace}/{group.name}"
        weighed = f"weighed at the group's priority {group.group_priority}"
        if pod.priority != group.group_priority:
            weighed += f", not its own {pod.priority}"
        if group.disruption_mode == DISRUPTION_MODE_ALL:
            lines.append(
                f"PodGroup {name} has disruptionMode All: preemption takes all of its running pods together "
                f"or none of them, {weighed}"
            )
        else:
            lines.append(f"PodGroup {name} has disruptionMode Single: preemption takes its pods one by one, {weighed}")
    preempted = _latest(events, ("Preempted",))
    preemptor = _decoded(protection.preemptor, PodGroup)
    if preempted is not None and preemptor is not None:
        lines.append(
            f"Preempted by PodGroup {preemptor.namespace}/{preemptor.name} (priority {preemptor.group_priority}): "
            "a pod group looks for room across the whole cluster at once, and this pod was in the way"
        )
    return lines


def _toleration_line(pod: Pod, priority_class: PriorityClass, now: float) -> str:
    policy = toleration_policy(priority_class)
    where = f"(PriorityClass {priority_class.name}, where the profile runs PreemptionToleration)"
    if policy is None:
        return f"Preemption toleration: none, its annotations do not parse {where}"
    below = f"priorities below {policy.minimum_preemptable_priority} may not preempt it"
    if policy.toleration_seconds < 0:
        return f"Preemption toleration: {below}, ever {where}"
    if policy.toleration_seconds == 0:
        return f"Preemption toleration: none, toleration-seconds is 0 or absent {where}"
    scheduled, at = scheduled_at(pod)
    if not scheduled:
        return f"Preemption toleration: {below} until {policy.toleration_seconds}s after it is scheduled {where}"
    until = (at or 0.0) + policy.toleration_seconds
    tense = "ended at" if until <= now else "until"
    return (
        f"Preemption toleration: {below} for {policy.toleration_seconds}s after it was scheduled, "
        f"{tense} {format_timestamp(until)} {where}"
    )


def describe_pod(
    pod: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: float, protection: Protection | None = None
) -> str:
    """`podsched describe pod`: kubectl's layout, plus a Scheduling section explaining the pod's state
    and, given `protection`, what keeps preemption from taking it or why it could."""
    meta, spec, status = _meta(pod), _section(pod, "spec"), _section(pod, "status")
    lines = [
        f"Name:\t{_name(pod)}",
        f"Namespace:\t{_namespace(pod) or DEFAULT_NAMESPACE}",
        f"Priority:\t{spec.get('priority', 0)}",
    ]
    if spec.get("priorityClassName"):
        lines.append(f"Priority Class Name:\t{spec['priorityClassName']}")
    lines.append(f"Preemption Policy:\t{spec.get('preemptionPolicy') or 'PreemptLowerPriority'}")
    lines.append(f"Node:\t{_text(spec.get('nodeName'))}")
    if status.get("startTime"):
        lines.append(f"Start Time:\t{rfc1123(status['startTime'])}")
    lines += _labels_lines("Labels", _section(meta, "labels"))
    grace = spec.get("terminationGracePeriodSeconds", 30)
    if meta.get("deletionTimestamp") and status.get("phase") not in ("Failed", "Succeeded"):
        lines.append(f"Status:\tTerminating (lasts {age(meta['deletionTimestamp'], now)})")
        grace = meta.get("deletionGracePeriodSeconds", grace)
    else:
        lines.append(f"Status:\t{status.get('phase') or 'Pending'}")
    if status.get("nominatedNodeName"):
        lines.append(f"NominatedNodeName:\t{status['nominatedNodeName']}")
    lines.append(f"Termination Grace Period:\t{grace}s")
    group = _section(spec, "schedulingGroup")
    if group.get("podGroupName"):
        # kubectl's describeSchedulingGroup.
        lines += ["SchedulingGroup:", f"  PodGroupName:\t{group['podGroupName']}"]
    for key, title in (("initContainers", "Init Containers"), ("containers", "Containers")):
        containers = _containers(pod, key)
        if key == "initContainers" and not containers:
            continue
        lines.append(f"{title}:")
        for container in containers:
            lines.append(f"  {container.get('name', '')}:")
            lines += _requests_lines(container)
    conditions = _conditions(pod)
    if conditions:
        lines.append("Conditions:")
        detailed = any(c.get("reason") or c.get("message") for c in conditions)
        lines.append("  Type\tStatus" + ("\tReason\tMessage" if detailed else ""))
        for condition in conditions:
            cells = [str(condition.get("type", "")), str(condition.get("status", ""))]
            if detailed:
                cells += [str(condition.get("reason", "")), str(condition.get("message", ""))]
            lines.append("  " + "\t".join(cells))
    waiting = pod_group_wait(pod, protection)
    lines += ["Scheduling:", *(f"  {line}" for line in scheduling_lines(pod, events, waiting))]
    if protection is not None:
        lines += [f"  {line}" for line in protection_lines(pod, events, protection, now)]
    lines += _event_lines(events, now)
    return _render(lines)


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key', '')}{value}:{taint.get('effect', '')}"


def _resource_names(allocatable: Mapping[str, int], used: Iterable[str]) -> list[str]:
    """cpu, memory and ephemeral-storage first (kubectl's order), then extended resources; pod
    count is not a request."""
    names = ["cpu", "memory", "ephemeral-storage"]
    extra = sorted({*allocatable, *used} - {*names, "pods"})
    return names + extra


def _percent(value: int, total: int) -> str:
    # kubectl truncates: int64(float64(req) / float64(allocatable) * 100).
    return f"{int(value / total * 100)}%" if total else "0%"


def describe_node(
    node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]], now: float
) -> str:
    """`podsched describe node`: labels, taints, capacity, the pods placed on it (terminating ones
    included: they still hold their resources) and the allocated totals."""
    meta, spec, status = _meta(node), _section(node, "spec"), _section(node, "status")
    lines = [f"Name:\t{_name(node)}", f"Roles:\t{NONE}"]
    lines += _labels_lines("Labels", _section(meta, "labels"))
    if meta.get("creationTimestamp"):
        lines.append(f"CreationTimestamp:\t{rfc1123(meta['creationTimestamp'])}")
    taints = spec.get("taints")
    taint_texts = [_taint_text(t) for t in taints if isinstance(t, dict)] if isinstance(taints, list) else []
    lines.append(f"Taints:\t{taint_texts[0] if taint_texts else NONE}")
    lines += [f"\t{text}" for text in taint_texts[1:]]
    lines.append(f"Unschedulable:\t{_text(bool(spec.get('unschedulable', False)))}")
    for title in ("Capacity", "Allocatable"):
        values = _section(status, title.lower())
        lines.append(f"{title}:")
        lines += [f"  {name}:\t{value}" for name, value in values.items()]
    head, lines = lines, []
    allocatable = _quantity_map(_section(status, "allocatable"))
    placed = [
        pod
        for pod in pods
        if _section(pod, "spec").get("nodeName") == _name(node)
        and _section(pod, "status").get("phase") not in ("Succeeded", "Failed")
    ]
    lines.append(f"Non-terminated Pods:\t({len(placed)} in total)")
    lines.append("  Namespace\tName\tPriority\tCPU Requests\tMemory Requests\tAge")
    lines.append("  ---------\t----\t--------\t------------\t---------------\t---")
    totals: dict[str, int] = {}
    for pod in placed:
        requests = pod_requests(pod)
        for name, value in requests.items():
            totals[name] = totals.get(name, 0) + value
        cpu, memory = requests.get("cpu", 0), requests.get("memory", 0)
        cells = [
            _namespace(pod),
            _name(pod) + (" (Terminating)" if _meta(pod).get("deletionTimestamp") else ""),
            str(_section(pod, "spec").get("priority", 0)),
            f"{render_quantity('cpu', cpu)} ({_percent(cpu, allocatable.get('cpu', 0))})",
            f"{render_quantity('memory', memory)} ({_percent(memory, allocatable.get('memory', 0))})",
            age(_meta(pod).get("creationTimestamp"), now),
        ]
        lines.append("  " + "\t".join(cells))
    lines.append("Allocated resources:")
    lines.append("  Resource\tRequests")
    lines.append("  --------\t--------")
    for name in _resource_names(allocatable, totals):
        value = totals.get(name, 0)
        lines.append(f"  {name}\t{render_quantity(name, value)} ({_percent(value, allocatable.get(name, 0))})")
    lines += _event_lines(events, now)
    return _render(head, lines)


def describe_priority_class(priority_class: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: float) -> str:
    lines = [
        f"Name:\t{_name(priority_class)}",
        f"Value:\t{priority_class.get('value', 0)}",
        f"GlobalDefault:\t{_text(bool(priority_class.get('globalDefault', False)))}",
        f"PreemptionPolicy:\t{priority_class.get('preemptionPolicy') or 'PreemptLowerPriority'}",
        f"Description:\t{priority_class.get('description', '')}",
    ]
    lines += _event_lines(events, now)
    return _render(lines)


def _selector_text(selector: Mapping[str, Any]) -> str:
    parts = [f"{key}={value}" for key, value in sorted(_section(selector, "matchLabels").items())]
    for requirement in selector.get("matchExpressions") or []:
        if not isinstance(requirement, dict):
            continue
        key, operator = requirement.get("key", ""), requirement.get("operator", "")
        values = ",".join(str(v) for v in requirement.get("values") or [])
        if operator == "Exists":
            parts.append(str(key))
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            parts.append(f"{key} {str(operator).lower()} ({values})")
    return ",".join(parts) or NONE


def describe_pdb(pdb: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: float) -> str:
    spec, status = _section(pdb, "spec"), _section(pdb, "status")
    lines = [f"Name:\t{_name(pdb)}", f"Namespace:\t{_namespace(pdb) or DEFAULT_NAMESPACE}"]
    if "minAvailable" in spec:
        lines.append(f"Min available:\t{spec['minAvailable']}")
    if "maxUnavailable" in spec:
        lines.append(f"Max unavailable:\t{spec['maxUnavailable']}")
    lines.append(f"Selector:\t{_selector_text(_section(spec, 'selector'))}")
    lines += [
        "Status:",
        f"    Allowed disruptions:\t{status.get('disruptionsAllowed', 0)}",
        f"    Current:\t{status.get('currentHealthy', 0)}",
        f"    Desired:\t{status.get('desiredHealthy', 0)}",
        f"    Total:\t{status.get('expectedPods', 0)}",
    ]
    lines += _event_lines(events, now)
    return _render(lines)


_SCOPE_HELP = {
    "Terminating": "Matches all pods that have an active deadline. These pods have a limited lifespan on a node "
    "before being actively terminated by the system.",
    "NotTerminating": "Matches all pods that do not have an active deadline. These pods usually include long running "
    "pods whose container command is not expected to terminate.",
    "BestEffort": "Matches all pods that do not have resource requirements set. These pods have a best effort "
    "quality of service.",
    "NotBestEffort": "Matches all pods that have at least one resource requirement set. These pods have a burstable "
    "or guaranteed quality of service.",
}


def describe_resource_quota(quota: Mapping[str, Any]) -> str:
    """`podsched describe quota`: kubectl's layout (name, namespace, scopes, then Used and Hard per
    resource), plus the scope selector, which decides which pods the quota counts."""
    spec, status = _section(quota, "spec"), _section(quota, "status")
    head = [f"Name:\t{_name(quota)}", f"Namespace:\t{_namespace(quota) or DEFAULT_NAMESPACE}"]
    scopes = sorted(str(scope) for scope in spec.get("scopes") or [])
    if scopes:
        head.append(f"Scopes:\t{', '.join(scopes)}")
        head += [f" * {_SCOPE_HELP[scope]}" for scope in scopes if scope in _SCOPE_HELP]
    selector = _section(spec, "scopeSelector")
    if selector:
        head.append(f"Scope Selector:\t{_scope_selector_text(selector)}")
    hard, used = _section(status, "hard"), _section(status, "used")
    table_lines = ["Resource\tUsed\tHard", "--------\t----\t----"]
    table_lines += [f"{name}\t{used.get(name, '0')}\t{hard[name]}" for name in sorted(hard)]
    return _render(head, table_lines)


def _scope_selector_text(selector: Mapping[str, Any]) -> str:
    parts = []
    for requirement in selector.get("matchExpressions") or []:
        if not isinstance(requirement, dict):
            continue
        values = ",".join(str(v) for v in requirement.get("values") or [])
        text = f"{requirement.get('scopeName', '')} {requirement.get('operator', '')}"
        parts.append(f"{text} ({values})" if values else text)
    return "; ".join(parts) or NONE
