"""NodeResourcesFit's statuses for many nodes at once: nodes grouped by which checks failed, one
Status per group, worded as the plugin words it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from podsched.fastpath.columns import I64, Bool
from podsched.framework.interface import ResourceCheck
from podsched.framework.status import Code, Status
from podsched.plugins import names
from podsched.plugins.node_resources import REASON_TOO_MANY_PODS

_UNRESOLVABLE_BIT = 62  # in a failure pattern; bits 0.. are the failing checks


def fit_status(pattern: int, checks: Sequence[ResourceCheck]) -> Status:
    """The status of a node whose failing checks are the bits of `pattern` (bit 0: too many pods)."""
    reasons = [REASON_TOO_MANY_PODS] if pattern & 1 else []
    reasons += [check.reason for k, check in enumerate(checks) if pattern >> (k + 1) & 1]
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if pattern >> _UNRESOLVABLE_BIT & 1 else Code.UNSCHEDULABLE
    return Status(code, reasons, names.NODE_RESOURCES_FIT)


def fit_statuses(
    fails: Sequence[Bool], unresolvable: Bool, checks: Sequence[ResourceCheck]
) -> tuple[I64, list[Status]]:
    """Group the nodes (all failing) by which checks failed (`fails`: the pods check, then one per
    ResourceCheck): (status index per node, statuses)."""
    # Each node's pattern packed into the bits just above its checks' (a few bits: a table of every
    # pattern counts the nodes instead of sorting them), in fit_status's order of patterns.
    top = len(fails)
    packed = unresolvable.astype(np.int64) << top
    for k, fail in enumerate(fails):
        packed |= fail.astype(np.int64) << k
    present = np.bincount(packed, minlength=1 << (top + 1)) > 0
    used = np.flatnonzero(present)
    index_of = np.cumsum(present) - 1
    checks_mask = (1 << top) - 1
    statuses = [fit_status(p & checks_mask | (p >> top) << _UNRESOLVABLE_BIT, checks) for p in used.tolist()]
    return index_of[packed], statuses
