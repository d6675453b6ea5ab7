"""The scheduler's view of PodGroups and their pods over the store (upstream's podGroupState in the
scheduler cache, backend/cache/podgroupstate.go): a group by key, a pod's group, the group's pods
counted as the gang plugin counts them, and its scheduled (bound) pods. Also the
`podsched.preemption.domain.PodGroupLister` pod-group preemption reads."""

from __future__ import annotations

from podsched.api.types import POD_FAILED, POD_SUCCEEDED, Pod, PodGroup
from podsched.cluster.store import Store


class StorePodGroups:
    def __init__(self, store: Store) -> None:
        self.store = store

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        return self.store.pod_groups.get((namespace, name))

    def pod_group_name(self, pod: Pod) -> str | None:
        return pod.spec.pod_group_name

    def live_members(self, namespace: str, name: str) -> list[Pod]:
        """The group's pods the scheduler cache holds: not ended (a terminal pod leaves the cache)."""
        return [
            pod
            for pod in self.store.pod_group_members(namespace, name)
            if pod.status.phase not in (POD_SUCCEEDED, POD_FAILED)
        ]

    def all_pods_count(self, namespace: str, name: str) -> int:
        """AllPodsCount: every pod of the group, scheduled or not."""
        return len(self.live_members(namespace, name))

    def scheduled_pods(self, namespace: str, name: str) -> list[Pod]:
        """ScheduledPods: the group's pods bound to a node."""
        return [pod for pod in self.live_members(namespace, name) if pod.spec.node_name]
