"""The default profile: which plugins run, in upstream's order, with upstream's score weights
(pkg/scheduler/apis/config/v1 getDefaultPlugins)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from podsched.api.types import PriorityClass
from podsched.config.scheduler_config import SchedulerConfig
from podsched.fastpath import ColumnStrategy, VectorizedDryRun
from podsched.framework.events import QueueingHintMap, queueing_hint_map
from podsched.framework.interface import PodNominator, PostFilterPlugin
from podsched.framework.runtime import Framework, WeightedScorePlugin
from podsched.plugins import names
from podsched.plugins.default_preemption import DefaultPreemption
from podsched.plugins.interpod_affinity import InterPodAffinity
from podsched.plugins.node_affinity import NodeAffinity
from podsched.plugins.node_name import NodeName
from podsched.plugins.node_ports import NodePorts
from podsched.plugins.node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit
from podsched.plugins.node_unschedulable import NodeUnschedulable
from podsched.plugins.pod_topology_spread import PodTopologySpread
from podsched.plugins.preemption_toleration import PreemptionToleration
from podsched.plugins.taint_toleration import TaintToleration
from podsched.preemption.evaluator import DryRunExecutor, sequential_dry_run
from podsched.preemption.victims import DEFAULT_VICTIM_POLICY, VictimPolicy
from podsched.scheduler.schedule_one import SchedulingAlgorithm

# (factory, default score weight or 0 if the plugin does not score), in upstream's MultiPoint order.
DEFAULT_PLUGINS: tuple[tuple[str, Callable[[], Any], int], ...] = (
    (names.NODE_UNSCHEDULABLE, NodeUnschedulable, 0),
    (names.NODE_NAME, NodeName, 0),
    (names.TAINT_TOLERATION, TaintToleration, 3),
    (names.NODE_AFFINITY, NodeAffinity, 2),
    (names.NODE_PORTS, NodePorts, 0),
    (names.NODE_RESOURCES_FIT, NodeResourcesFit, 1),
    (names.POD_TOPOLOGY_SPREAD, PodTopologySpread, 2),
    (names.INTER_POD_AFFINITY, InterPodAffinity, 2),
    (names.NODE_RESOURCES_BALANCED_ALLOCATION, NodeResourcesBalancedAllocation, 1),
)


def build_framework(
    config: SchedulerConfig,
    nominator: PodNominator | None,
    offset: Callable[[int], int] | None = None,
    executor: DryRunExecutor | None = None,
    priority_classes: Mapping[str, PriorityClass] | None = None,
) -> Framework:
    """Instantiate the enabled plugins and sort them into extension points. The PostFilter plugins
    (`post_filter_plugins`) take the candidate offset and the dry-run executor (None: their
    defaults); PreemptionToleration reads the cluster's `priority_classes`."""
    weights = dict(config.score_weights)
    pre_filter, filters, pre_score, score = [], [], [], []
    for name, factory, default_weight in DEFAULT_PLUGINS:
        plugin = factory()
        if hasattr(plugin, "pre_filter") and config.plugin_enabled("preFilter", name):
            pre_filter.append(plugin)
        if hasattr(plugin, "filter") and config.plugin_enabled("filter", name):
            filters.append(plugin)
        if default_weight and config.plugin_enabled("score", name):
            if hasattr(plugin, "pre_score") and config.plugin_enabled("preScore", name):
                pre_score.append(plugin)
            score.append(WeightedScorePlugin(plugin, weights.get(name, default_weight)))
    framework = Framework(pre_filter, filters, pre_score, score, nominator)
    for plugin in post_filter_plugins(config, framework, offset, executor, priority_classes):
        framework.add_post_filter_plugin(plugin)
    return framework


def post_filter_plugins(
    config: SchedulerConfig,
    framework: Framework,
    offset: Callable[[int], int] | None = None,
    executor: DryRunExecutor | None = None,
    priority_classes: Mapping[str, PriorityClass] | None = None,
) -> list[PostFilterPlugin]:
    """The profile's PostFilter plugins on `framework`, in order (none when preemption is off)."""
    if not config.preemption_enabled:
        return []
    plugins: list[PostFilterPlugin] = []
    for name in config.post_filter_plugins:
        if name == names.DEFAULT_PREEMPTION:
            plugins.append(DefaultPreemption(framework, config.preemption_args, offset=offset, executor=executor))
        elif name == names.PREEMPTION_TOLERATION:
            classes = priority_classes if priority_classes is not None else {}
            plugins.append(
                PreemptionToleration(framework, classes, config.toleration_args, offset=offset, executor=executor)
            )
    return plugins


def victim_policy_of(framework: Framework, now: float) -> VictimPolicy:
    """How the profile's preemption plugin selects victims on a node at `now`: what a preemption
    worker process, which runs SelectVictimsOnNode without the plugin's PostFilter, applies."""
    for plugin in framework.post_filter_plugins:
        if isinstance(plugin, DefaultPreemption | PreemptionToleration):
            return plugin.victim_policy_at(now)
    return DEFAULT_VICTIM_POLICY


def default_queueing_hints() -> QueueingHintMap:
    """Every default plugin's EventsToRegister. A plugin's registrations do not depend on the profile,
    and a disabled plugin rejects no pod, so one map serves every profile."""
    return queueing_hint_map(factory() for _, factory, _ in DEFAULT_PLUGINS)


def build_algorithm(
    config: SchedulerConfig,
    nominator: PodNominator | None,
    offset: Callable[[int], int] | None = None,
    rng: random.Random | None = None,
    executor: DryRunExecutor | None = None,
    columns: bool = True,
    priority_classes: Mapping[str, PriorityClass] | None = None,
) -> SchedulingAlgorithm:
    """A profile's scheduling algorithm. With `columns` (the default) the runtime evaluates a cycle,
    and DefaultPreemption's dry run, on node columns wherever every plugin that runs allows it, and
    node by node otherwise; without, always node by node. Same decisions either way."""
    if not columns:
        framework = build_framework(config, nominator, offset, executor, priority_classes)
        return SchedulingAlgorithm(framework, config.percentage_of_nodes_to_score, rng)
    strategy = ColumnStrategy()
    dry_run = VectorizedDryRun(strategy, fallback=executor or sequential_dry_run)
    framework = build_framework(config, nominator, offset, dry_run, priority_classes)
    strategy.attach(framework)
    return SchedulingAlgorithm(framework, config.percentage_of_nodes_to_score, rng, columns=strategy)
