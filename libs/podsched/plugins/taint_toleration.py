"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; PreferNoSchedule taints lower the
score."""

from __future__ import annotations

from collections.abc import Sequence

from podsched.api.types import (
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    TAINT_PREFER_NO_SCHEDULE,
    Pod,
    Taint,
    Toleration,
)
from podsched.framework.cycle_state import CycleState
from podsched.framework.events import NODE_ADD, NODE_UPDATE, ClusterEventWithHint
from podsched.framework.interface import MAX_NODE_SCORE, NodeSignature, default_normalize_score
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Status
from podsched.plugins import names

_PREFER_STATE_KEY = "PreScore" + names.TAINT_TOLERATION


def toleration_tolerates_taint(toleration: Toleration, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in ("Equal", ""):
        return toleration.value == taint.value
    return False


def tolerations_tolerate_taint(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(toleration_tolerates_taint(t, taint) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: tuple[str, ...]
) -> Taint | None:
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


class TaintToleration:
    name = names.TAINT_TOLERATION

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable."""
        return [ClusterEventWithHint(NODE_ADD), ClusterEventWithHint(NODE_UPDATE)]

    def sign_pod(self, pod: Pod) -> NodeSignature:
        """Filter and Score read the pod's tolerations and the node's taints."""
        return NodeSignature(pod.spec.tolerations, ())

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        taints = node_info.node.spec.taints
        if not taints:
            return None
        taint = find_untolerated_taint(taints, pod.spec.tolerations, (TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE))
        if taint is None:
            return None
        return Status.unresolvable(self.name, f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        # Only tolerations with an empty or PreferNoSchedule effect count when scoring.
        state.write(
            _PREFER_STATE_KEY,
            tuple(t for t in pod.spec.tolerations if t.effect in ("", TAINT_PREFER_NO_SCHEDULE)),
        )
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        tolerations = state.get(_PREFER_STATE_KEY) or ()
        return sum(
            1
            for taint in node_info.node.spec.taints
            if taint.effect == TAINT_PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(tolerations, taint)
        )

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
