"""`podsched get` and `describe` for Deployments, ReplicaSets and Jobs: kubectl's columns and layout.

Pure functions of the objects' Kubernetes JSON and `now`, like the rest of the CLI's output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from podsched_cli.output import (
    DEFAULT_NAMESPACE,
    NONE,
    _event_lines,
    _meta,
    _name,
    _namespace,
    _render,
    _seconds,
    _section,
    _selector_text,
    age,
    human_duration,
    rfc1123,
)


def _containers_cells(obj: Mapping[str, Any]) -> list[str]:
    """The wide columns: CONTAINERS, IMAGES, SELECTOR of a workload's template."""
    spec = _section(obj, "spec")
    containers = _section(_section(spec, "template"), "spec").get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers if isinstance(c, dict))
    images = ",".join(str(c.get("image", "")) for c in containers if isinstance(c, dict))
    return [names, images, _selector_text(_section(spec, "selector"))]


def deployment_header(*, wide: bool = False) -> list[str]:
    header = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    return [*header, "CONTAINERS", "IMAGES", "SELECTOR"] if wide else header


def deployment_row(deployment: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    spec, status = _section(deployment, "spec"), _section(deployment, "status")
    row = [
        _name(deployment),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        str(status.get("updatedReplicas", 0)),
        str(status.get("availableReplicas", 0)),
        age(_meta(deployment).get("creationTimestamp"), now),
    ]
    return [*row, *_containers_cells(deployment)] if wide else row


def replica_set_header(*, wide: bool = False) -> list[str]:
    header = ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    return [*header, "CONTAINERS", "IMAGES", "SELECTOR"] if wide else header


def replica_set_row(rs: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    spec, status = _section(rs, "spec"), _section(rs, "status")
    row = [
        _name(rs),
        str(spec.get("replicas", 1)),
        str(status.get("replicas", 0)),
        str(status.get("readyReplicas", 0)),
        age(_meta(rs).get("creationTimestamp"), now),
    ]
    return [*row, *_containers_cells(rs)] if wide else row


def job_status_word(job: Mapping[str, Any]) -> str:
    """kubectl's STATUS column for a Job: Complete, Failed, Suspended, else Running."""
    for condition in _section(job, "status").get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed", "Suspended"):
            return str(condition["type"])
    return "Running"


def job_completions(job: Mapping[str, Any]) -> str:
    """COMPLETIONS: succeeded/completions, or `n/1 of p` for a Job without completions."""
    spec, status = _section(job, "spec"), _section(job, "status")
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism", 1)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def job_duration(job: Mapping[str, Any], now: float) -> str:
    status = _section(job, "status")
    start = _seconds(status.get("startTime"))
    if start is None:
        return ""
    end = _seconds(status.get("completionTime"))
    return human_duration((end if end is not None else now) - start)


def job_header(*, wide: bool = False) -> list[str]:
    header = ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    return [*header, "CONTAINERS", "IMAGES", "SELECTOR"] if wide else header


def job_row(job: Mapping[str, Any], now: float, *, wide: bool = False) -> list[str]:
    row = [
        _name(job),
        job_status_word(job),
        job_completions(job),
        job_duration(job, now),
        age(_meta(job).get("creationTimestamp"), now),
    ]
    return [*row, *_containers_cells(job)] if wide else row


def _map_text(values: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(values.items())) or NONE


def _template_lines(obj: Mapping[str, Any]) -> list[str]:
    template = _section(_section(obj, "spec"), "template")
    spec = _section(template, "spec")
    lines = ["Pod Template:", f"  Labels:\t{_map_text(_section(_section(template, 'metadata'), 'labels'))}"]
    annotations = _section(_section(template, "metadata"), "annotations")
    if annotations:
        lines.append(f"  Annotations:\t{_map_text(annotations)}")
    if spec.get("priorityClassName"):
        lines.append(f"  Priority Class Name:\t{spec['priorityClassName']}")
    lines.append("  Containers:")
    for container in spec.get("containers") or []:
        if not isinstance(container, dict):
            continue
        lines += [f"   {container.get('name', '')}:", f"    Image:\t{container.get('image', '')}"]
        requests = _section(_section(container, "resources"), "requests")
        if requests:
            lines.append("    Requests:")
            lines += [f"      {name}:\t{value}" for name, value in sorted(requests.items())]
    return lines


def _head(obj: Mapping[str, Any]) -> list[str]:
    meta = _meta(obj)
    lines = [
        f"Name:\t{_name(obj)}",
        f"Namespace:\t{_namespace(obj) or DEFAULT_NAMESPACE}",
        f"Selector:\t{_selector_text(_section(_section(obj, 'spec'), 'selector'))}",
        f"Labels:\t{_map_text(_section(meta, 'labels'))}",
        f"Annotations:\t{_map_text(_section(meta, 'annotations'))}",
    ]
    owners = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict) and r.get("controller")]
    if owners:
        lines.append(f"Controlled By:\t{owners[0].get('kind', '')}/{owners[0].get('name', '')}")
    return lines


def describe_job(job: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: float) -> str:
    """`podsched describe job`: kubectl's layout (parallelism, completions, backoff limit, times, pod
    statuses), the pod failure policy, the conditions, the pod template and the events."""
    spec, status = _section(job, "spec"), _section(job, "status")
    lines = _head(job)
    lines += [
        f"Parallelism:\t{spec.get('parallelism', 1)}",
        f"Completions:\t{spec.get('completions', NONE)}",
        "Completion Mode:\tNonIndexed",
        "Suspend:\tfalse",
        f"Backoff Limit:\t{spec.get('backoffLimit', 6)}",
    ]
    if spec.get("activeDeadlineSeconds") is not None:
        lines.append(f"Active Deadline Seconds:\t{spec['activeDeadlineSeconds']}s")
    if status.get("startTime"):
        lines.append(f"Start Time:\t{rfc1123(status['startTime'])}")
    if status.get("completionTime"):
        lines.append(f"Completed At:\t{rfc1123(status['completionTime'])}")
    if status.get("startTime"):
        lines.append(f"Duration:\t{job_duration(job, now)}")
    ready = status.get("ready", 0)
    lines.append(
        f"Pods Statuses:\t{status.get('active', 0)} Active ({ready} Ready) / {status.get('succeeded', 0)} Succeeded / "
        f"{status.get('failed', 0)} Failed"
    )
    rules = _section(spec, "podFailurePolicy").get("rules") or []
    if rules:
        lines.append("Pod Failure Policy:")
        for rule in rules:
            on = rule.get("onPodConditions") or []
            what = (
                "on pod conditions " + ", ".join(f"{c.get('type')}={c.get('status', 'True')}" for c in on)
                if on
                else "on exit codes {operator} {values}".format(**_section(rule, "onExitCodes"))
            )
            lines.append(f"  {rule.get('action', '')}\t{what}")
    conditions = status.get("conditions") or []
    if conditions:
        lines += ["Conditions:", "  Type\tStatus\tReason\tMessage", "  ----\t------\t------\t-------"]
        lines += [
            f"  {c.get('type', '')}\t{c.get('status', '')}\t{c.get('reason', '')}\t{c.get('message', '')}"
            for c in conditions
        ]
    lines += _template_lines(job)
    lines += _event_lines(events, now)
    return _render(lines)


def describe_replicas(obj: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: float) -> str:
    """`podsched describe deployment|replicaset`: replicas (desired, updated, total, available), the
    strategy, the pod template and the events."""
    spec, status = _section(obj, "spec"), _section(obj, "status")
    lines = _head(obj)
    lines.append(f"CreationTimestamp:\t{rfc1123(_meta(obj).get('creationTimestamp'))}")
    if obj.get("kind") == "Deployment":
        lines.append(
            f"Replicas:\t{spec.get('replicas', 1)} desired | {status.get('updatedReplicas', 0)} updated | "
            f"{status.get('replicas', 0)} total | {status.get('availableReplicas', 0)} available | "
            f"{status.get('unavailableReplicas', 0)} unavailable"
        )
        strategy = _section(spec, "strategy")
        lines.append(f"StrategyType:\t{strategy.get('type', 'RollingUpdate')}")
        rolling = _section(strategy, "rollingUpdate")
        if rolling:
            lines.append(
                f"RollingUpdateStrategy:\t{rolling.get('maxUnavailable')} max unavailable, "
                f"{rolling.get('maxSurge')} max surge"
            )
    else:
        lines.append(f"Replicas:\t{status.get('replicas', 0)} current / {spec.get('replicas', 1)} desired")
        ready = status.get("readyReplicas", 0)
        lines.append(f"Pods Status:\t{ready} Running / {status.get('replicas', 0) - ready} Waiting")
    lines += _template_lines(obj)
    lines += _event_lines(events, now)
    return _render(lines)
