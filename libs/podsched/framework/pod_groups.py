"""What the framework handle offers about PodGroups (GenericWorkload): upstream's fwk.PodGroupLister
over the scheduler's snapshot and its PodGroupStates, reduced to what plugins read.

The owner of a framework (the simulator, the queue and preemption services) sets
`Framework.pod_groups` when the gate is on; None means the gate is off, and every pod is on its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from podsched.api.types import Pod

DISRUPTION_MODE_ALL = "All"


class PodGroupPolicy(Protocol):
    """What scheduling reads of a PodGroup (scheduling.k8s.io/v1beta1): its admitted priority (0 when
    unset, util.PodGroupPriority), its disruptionMode (`Single` or `All`) and its preemptionPolicy
    (None when unset)."""

    @property
    def group_priority(self) -> int: ...

    @property
    def disruption_mode(self) -> str: ...

    @property
    def preemption_policy(self) -> str | None: ...


class PodGroupLister(Protocol):
    """The PodGroups (MutableSnapshotSharedLister().PodGroups()) and each group's scheduled pods
    (PodGroupStates().ScheduledPods(): bound or assumed, in no particular order)."""

    def pod_group(self, namespace: str, name: str) -> PodGroupPolicy | None: ...

    def pod_group_name(self, pod: Pod) -> str | None:
        """spec.schedulingGroup.podGroupName, None for a pod outside any group."""
        ...

    def scheduled_pods(self, namespace: str, name: str) -> Sequence[Pod]: ...
