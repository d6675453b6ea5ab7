"""The PodDisruptionBudget codec: the spec decoded and validated; the status, the system's to compute,
dropped on input and rendered on output."""

from __future__ import annotations

from typing import Any

from podsched.api.codecs.fields import child, get_int_or_string, get_object, get_string, put
from podsched.api.codecs.meta import decode_meta
from podsched.api.codecs.selectors import decode_label_selector, encode_label_selector
from podsched.api.errors import FieldError
from podsched.api.timestamps import format_timestamp
from podsched.api.types import PodDisruptionBudget
from podsched.api.validation import validate_pod_disruption_budget_spec


def decode_pdb(manifest: dict[str, Any], errors: list[FieldError]) -> PodDisruptionBudget:
    """ValidatePodDisruptionBudgetSpec. Status is the system's to compute: input status is dropped,
    as the API server does on create."""
    metadata = decode_meta(manifest, errors, namespaced=True)
    manifest.pop("status", None)
    spec = get_object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    min_available = get_int_or_string(spec, "minAvailable", "spec")
    max_unavailable = get_int_or_string(spec, "maxUnavailable", "spec")
    selector = decode_label_selector(spec, "selector", "spec")
    eviction_policy = get_string(spec, "unhealthyPodEvictionPolicy", "spec")
    errors.extend(validate_pod_disruption_budget_spec(min_available, max_unavailable, selector, eviction_policy))
    return PodDisruptionBudget(metadata, selector, min_available, max_unavailable, source=manifest)


def overlay_pdb(pdb: PodDisruptionBudget, body: dict[str, Any]) -> None:
    spec = child(body, "spec")
    put(spec, "minAvailable", pdb.min_available)
    put(spec, "maxUnavailable", pdb.max_unavailable)
    if "selector" not in spec and pdb.selector is not None:
        spec["selector"] = encode_label_selector(pdb.selector)
    status = pdb.status
    rendered: dict[str, Any] = {}
    put(rendered, "observedGeneration", status.observed_generation or None)
    rendered.update(
        currentHealthy=status.current_healthy,
        desiredHealthy=status.desired_healthy,
        disruptionsAllowed=status.disruptions_allowed,
        expectedPods=status.expected_pods,
    )
    put(rendered, "disruptedPods", {name: format_timestamp(t) for name, t in sorted(status.disrupted_pods.items())})
    body["status"] = rendered
