"""PreemptionToleration (kubernetes-sigs/scheduler-plugins pkg/preemptiontoleration, KEP 205): a
PostFilter plugin that preempts as DefaultPreemption does, through the same Evaluator, except that
SelectVictimsOnNode leaves alone the lower-priority pods whose PriorityClass tolerates this
preemptor (podsched.preemption.toleration). A profile enables it in place of DefaultPreemption:

    plugins:
      postFilter:
        enabled: [{name: PreemptionToleration}]
        disabled: [{name: DefaultPreemption}]

Its args are DefaultPreemption's candidate minimums (PreemptionTolerationArgs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from podsched.api.types import Pod, PriorityClass
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView, NodeToStatus, PostFilterResult
from podsched.framework.runtime import Framework
from podsched.framework.status import Status
from podsched.plugins import names
from podsched.plugins.default_preemption import post_filter_answer
from podsched.preemption.evaluator import DefaultPreemptionArgs, DryRunExecutor, Evaluator
from podsched.preemption.toleration import ExemptionCheck
from podsched.preemption.victims import VictimPolicy


class PreemptionToleration:
    name = names.PREEMPTION_TOLERATION

    def __init__(
        self,
        framework: Framework,
        priority_classes: Mapping[str, PriorityClass],
        args: DefaultPreemptionArgs | None = None,
        offset: Callable[[int], int] | None = None,
        executor: DryRunExecutor | None = None,
    ) -> None:
        # `priority_classes`: the cluster's classes as they change (upstream's PriorityClass lister).
        self.priority_classes = priority_classes
        self.evaluator = Evaluator(framework, args, offset=offset, executor=executor)

    def victim_policy_at(self, now: float) -> VictimPolicy:
        """SelectVictimsOnNode without the pods that tolerate the preemptor at `now` (the plugin's
        curTime: one instant for the whole PostFilter)."""
        return VictimPolicy(exempted=ExemptionCheck(self.priority_classes, now))

    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus, cluster: ClusterView
    ) -> tuple[PostFilterResult | None, Status]:
        view = cluster
        policy = self.victim_policy_at(view.now)
        outcome = self.evaluator.preempt(
            state,
            pod,
            node_to_status,
            view.snapshot,
            view.pdbs,
            view.nominator,
            view.now,
            policy,
            self.evaluator.framework.pod_groups,
        )
        return post_filter_answer(outcome, self.name)
