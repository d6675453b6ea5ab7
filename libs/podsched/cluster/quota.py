"""The ResourceQuota controller's part: each quota's status.used kept current as pods come and go.

Usage is derived state, computed from the pods by every copy of the cluster (the binder's log
carries only the quota objects): the store charges a pod when it is stored and releases it when it
is replaced or removed. How much a pod uses and which quotas match it is
`podsched.admission.resource_quota`, shared with quota admission.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from podsched.admission.resource_quota import (
    add_usage,
    matching_resources,
    pod_counts_for_compute,
    pod_usage,
    quota_matches_pod,
    quota_usage,
)
from podsched.api.types import Pod, ResourceQuota, ResourceQuotaStatus


def with_usage(quota: ResourceQuota, pods: Iterable[Pod]) -> ResourceQuota:
    """The quota with its status computed from `pods` (its hard limits, and what the pods use)."""
    return replace(quota, status=ResourceQuotaStatus(dict(quota.hard), quota_usage(quota, pods)))


def charged_alike(old: Pod, new: Pod) -> bool:
    """Whether quota sees no difference between two versions of a pod: same spec and manifest
    (pods are values: a status-only update keeps both objects), and both counted or both terminal."""
    return (
        old.spec is new.spec and old.source is new.source and pod_counts_for_compute(old) == pod_counts_for_compute(new)
    )


def charge(
    quotas: dict[tuple[str, str], ResourceQuota], keys: Iterable[tuple[str, str]] | None, pod: Pod, sign: int
) -> None:
    """Add (1) or release (-1) the pod's usage in every quota among `keys` (its namespace's) that
    matches it. Quotas are values: the charged quota replaces the stored one in `quotas`. Not a
    change listeners hear of (no record, no resource version): usage follows the pods, which are
    recorded."""
    if not keys:
        return
    usage = pod_usage(pod)
    for key in keys:
        quota = quotas[key]
        if not quota_matches_pod(quota, pod):
            continue
        used = dict(quota.status.used)
        add_usage(used, usage, matching_resources(quota.hard), sign)
        quotas[key] = replace(quota, status=ResourceQuotaStatus(quota.status.hard, used))
