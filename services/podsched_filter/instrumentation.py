"""What the filter service reports: each pod's Filter/Score outcome on a span of the pod's own trace.
The servicer calls `placed` (`FilterObserver` in service.py); this is the one place that knows what is
recorded about a placement."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace

from podsched.api.types import Pod
from podsched_proto.filter.v1 import filter_pb2
from podsched_service import telemetry


class FilterTelemetry:
    """The "filter pod" spans of the placements (a FilterObserver)."""

    def placed(self, pod: Pod, found: filter_pb2.Placement, carrier: Mapping[str, str], single: bool) -> None:
        """A pod's outcome: a "filter pod" span under the context the queue sent with the pod
        (`carrier`), or, for a lone pod sent without one, on the RPC's span."""
        parent = telemetry.context_from_carrier(carrier)
        if parent is not None:
            span = telemetry.tracer().start_span("filter pod", context=parent)
            _describe_on_span(span, pod, found)
            span.end()
        elif single:
            _describe_on_span(trace.get_current_span(), pod, found)


def _describe_on_span(span: trace.Span, pod: Pod, found: filter_pb2.Placement) -> None:
    if not span.is_recording():
        return
    span.set_attributes(telemetry.pod_attributes(pod))
    span.set_attributes(
        {
            "podsched.feasible_nodes": found.feasible_nodes,
            "podsched.evaluated_nodes": found.evaluated_nodes,
            "podsched.all_nodes": found.num_all_nodes,
        }
    )
    if found.node_name:
        span.set_attribute("k8s.node.name", found.node_name)
    else:
        span.set_attribute("podsched.message", found.message or found.error)
