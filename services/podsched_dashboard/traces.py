"""Links from a preemption to its trace in Jaeger.

The public API carries no trace ids, so the dashboard asks Jaeger's query API for the preemptor's
traces (the services tag every span of a pod's journey with `k8s.pod.name`) and picks the one
with the scheduling attempt that nominated a node: a what-if's dry run is a trace of its own and
has no such attempt. `choose_trace` is pure; `find_preemption_trace` does the HTTP.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

QUEUE_SERVICE = "podsched-queue"


def _tags(span: Mapping[str, Any]) -> dict[str, Any]:
    return {tag.get("key"): tag.get("value") for tag in span.get("tags") or []}


def choose_trace(traces: Sequence[Mapping[str, Any]], namespace: str, name: str) -> str | None:
    """The id of the trace in which pod `namespace/name` was nominated after preempting: the one
    with a `scheduling attempt` span for the pod carrying `podsched.nominated_node`. None if no
    trace has it yet (spans are exported in batches)."""
    for trace in traces:
        for span in trace.get("spans") or []:
            tags = _tags(span)
            if (
                span.get("operationName") == "scheduling attempt"
                and tags.get("k8s.pod.name") == name
                and tags.get("k8s.namespace.name", namespace) == namespace
                and tags.get("podsched.nominated_node")
            ):
                return str(trace.get("traceID"))
    return None


def find_preemption_trace(query_url: str, namespace: str, name: str, since: float, timeout: float = 5.0) -> str | None:
    """Ask Jaeger for the pod's traces that started after `since` (seconds since the epoch, less a
    minute for clock skew) and choose the preemption's. Raises OSError if Jaeger does not answer."""
    params = {
        "service": QUEUE_SERVICE,
        "tags": json.dumps({"k8s.pod.name": name}),
        "start": str(int((since - 60) * 1_000_000)),
        "limit": "20",
    }
    url = f"{query_url.rstrip('/')}/api/traces?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=timeout) as response:
        traces = json.load(response).get("data") or []
    return choose_trace(traces, namespace, name)


def trace_url(ui_url: str, trace_id: str) -> str:
    return f"{ui_url.rstrip('/')}/trace/{urllib.parse.quote(trace_id)}"
