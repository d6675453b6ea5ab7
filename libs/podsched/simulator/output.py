"""Render a simulation result as JSON, YAML or a kubectl-like table."""

from __future__ import annotations

import json
from typing import Any

import yaml

from podsched.api.manifests import parse_timestamp


def render(result: dict[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(result, indent=2, sort_keys=False) + "\n"
    if output == "yaml":
        return str(yaml.safe_dump(result, sort_keys=False, default_flow_style=False))
    return render_table(result)


def _row(columns: list[str], widths: list[int]) -> str:
    return "   ".join(value.ljust(width) for value, width in zip(columns, widths, strict=True)).rstrip()


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(len(header))]
    return [_row(header, widths)] + [_row(r, widths) for r in rows]


def pod_status_word(pod: dict[str, Any]) -> str:
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return "Terminated" if pod.get("status", {}).get("phase") != "Running" else "Terminating"
    return str(pod.get("status", {}).get("phase", "Pending"))


def _group_of(pod: dict[str, Any]) -> str:
    return str((pod.get("spec", {}).get("schedulingGroup") or {}).get("podGroupName") or "")


def _pod_group_rows(result: dict[str, Any]) -> list[list[str]]:
    """One row per PodGroup: its policy and minCount, how many of its pods are bound, and the
    PodGroupInitiallyScheduled condition's status and message."""
    rows = []
    for group in result.get("podGroups", []):
        meta, spec = group.get("metadata", {}), group.get("spec", {})
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        gang = (spec.get("schedulingPolicy") or {}).get("gang")
        members = [
            p
            for p in result["pods"]
            if _group_of(p) == name
            and p.get("metadata", {}).get("namespace") == namespace
            and not p.get("metadata", {}).get("deletionTimestamp")
        ]
        bound = sum(1 for p in members if p.get("spec", {}).get("nodeName"))
        conditions = {c.get("type"): c for c in (group.get("status") or {}).get("conditions") or []}
        scheduled = conditions.get("PodGroupInitiallyScheduled")
        state = "Pending"
        if scheduled is not None:
            state = "Scheduled" if scheduled.get("status") == "True" else str(scheduled.get("reason", ""))
        rows.append(
            [
                namespace,
                name,
                "Gang" if gang is not None else "Basic",
                str(gang.get("minCount", "")) if gang is not None else "<none>",
                f"{bound}/{len(members)}",
                state,
                str(scheduled.get("message", ""))
                if scheduled is not None and scheduled.get("status") != "True"
                else "",
            ]
        )
    return rows


def render_table(result: dict[str, Any]) -> str:
    lines: list[str] = []
    rows = []
    grouped = any(_group_of(pod) for pod in result["pods"])
    for pod in result["pods"]:
        meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
        row = [
            meta.get("namespace", ""),
            meta.get("name", ""),
            str(spec.get("priority", 0)),
            pod_status_word(pod),
            spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>",
        ]
        rows.append([*row, _group_of(pod) or "<none>"] if grouped else row)
    header = ["NAMESPACE", "NAME", "PRIORITY", "STATUS", "NODE", "NOMINATED NODE"]
    lines += _table([*header, "POD GROUP"] if grouped else header, rows)
    group_rows = _pod_group_rows(result)
    if group_rows:
        lines.append("")
        lines += _table(["NAMESPACE", "POD GROUP", "POLICY", "MIN COUNT", "BOUND", "STATUS", "MESSAGE"], group_rows)
    if result["events"]:
        lines.append("")
        start = parse_timestamp(result["events"][0]["eventTime"])
        event_rows = [
            [
                f"+{parse_timestamp(e['eventTime']) - start:g}s",
                e["type"],
                e["reason"],
                f"{e['involvedObject']['kind'].lower()}/{e['involvedObject']['name']}",
                e["message"] + (f" (x{e['count']})" if e.get("count", 1) > 1 else ""),
            ]
            for e in result["events"]
        ]
        lines += _table(["AT", "TYPE", "REASON", "OBJECT", "MESSAGE"], event_rows)
    if result["rejected"]:
        lines.append("")
        lines += [r["message"] for r in result["rejected"]]
    return "\n".join(lines) + "\n"
