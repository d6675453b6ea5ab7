"""The feature gates a cluster runs with, on both sides of the differential test.

A cluster with a PodGroup, or a pod naming one, runs with GenericWorkload and PodGroupPreemptionPolicy
on: `podsched simulate` through its configuration's `featureGates`, the oracle through its own
(`-feature-gates`, or a batch line's `featureGates`). Read from the files themselves, so a saved
cluster says it without another file. Any other cluster runs with v1.37's defaults (both off)."""

from __future__ import annotations

from collections.abc import Sequence

WORKLOAD_GATES = {"GenericWorkload": True, "PodGroupPreemptionPolicy": True}


def feature_gates(texts: Sequence[str]) -> dict[str, bool]:
    if any("kind: PodGroup" in text or "schedulingGroup:" in text for text in texts):
        return dict(WORKLOAD_GATES)
    return {}


def gates_flag(gates: dict[str, bool]) -> str:
    """kube-scheduler's --feature-gates wording: Name=true,Other=false."""
    return ",".join(f"{name}={str(value).lower()}" for name, value in sorted(gates.items()))


def scheduler_config_text(gates: dict[str, bool]) -> str:
    """A KubeSchedulerConfiguration turning these gates on for `podsched simulate --config`."""
    lines = ["apiVersion: kubescheduler.config.k8s.io/v1", "kind: KubeSchedulerConfiguration", "featureGates:"]
    lines += [f"  {name}: {str(value).lower()}" for name, value in sorted(gates.items())]
    return "\n".join(lines) + "\n"
