"""DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption): the PostFilter plugin that
preempts lower-priority pods, through the generic Evaluator (podsched.preemption.evaluator)."""

from __future__ import annotations

from collections.abc import Callable

from podsched.api.types import Pod
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView, NodeToStatus, PostFilterResult
from podsched.framework.runtime import Framework
from podsched.framework.status import Status
from podsched.plugins import names
from podsched.preemption.evaluator import DefaultPreemptionArgs, DryRunExecutor, Evaluator, PreemptionOutcome
from podsched.preemption.victims import VictimPolicy

MESSAGE_PREFIX = "preemption: "


class DefaultPreemption:
    name = names.DEFAULT_PREEMPTION

    def __init__(
        self,
        framework: Framework,
        args: DefaultPreemptionArgs | None = None,
        offset: Callable[[int], int] | None = None,
        executor: DryRunExecutor | None = None,
    ) -> None:
        self.evaluator = Evaluator(framework, args, offset=offset, executor=executor)
        self._victim_policy = self.evaluator.args.victim_policy

    def victim_policy_at(self, now: float) -> VictimPolicy:
        """How this plugin selects victims on a node (its `pdbPolicy`); preemption workers that run
        SelectVictimsOnNode in their own process ask their own copy of the plugin."""
        return self._victim_policy

    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus, cluster: ClusterView
    ) -> tuple[PostFilterResult | None, Status]:
        outcome = self.evaluator.preempt(
            state,
            pod,
            node_to_status,
            cluster.snapshot,
            cluster.pdbs,
            cluster.nominator,
            cluster.now,
            self._victim_policy,
            self.evaluator.framework.pod_groups,
        )
        return post_filter_answer(outcome)


def post_filter_answer(
    outcome: PreemptionOutcome, plugin: str = names.DEFAULT_PREEMPTION
) -> tuple[PostFilterResult | None, Status]:
    """The Evaluator's outcome as a preemption plugin's PostFilter answer: the result carries the
    candidates, and a status with a message says "preemption: ..." (the FitError's last sentence)."""
    result = outcome.result
    if result is not None:
        result.candidates = list(outcome.candidates)
    status = outcome.status
    if status.message:
        status = Status(status.code, [MESSAGE_PREFIX + status.message], plugin)
    return result, status
