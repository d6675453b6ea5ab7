"""The framework runtime: runs a profile's plugins at each extension point
(upstream framework/runtime/framework.go)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from podsched.api.types import Pod
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import (
    ClusterView,
    FilterPlugin,
    NodeToStatus,
    PodNominator,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from podsched.framework.node_info import NodeInfo, PodInfo
from podsched.framework.pod_groups import PodGroupLister
from podsched.framework.status import Code, Status


@dataclass(slots=True)
class WeightedScorePlugin:
    plugin: ScorePlugin
    weight: int


@dataclass(slots=True)
class PreFilterOutcome:
    result: PreFilterResult | None
    status: Status | None
    rejector_plugins: set[str] = field(default_factory=set)
    narrowing_plugins: list[str] = field(default_factory=list)  # plugins whose result limited the nodes


class Framework:
    """A scheduling profile's plugins, run in registration order.

    `nominator` supplies the pods nominated to each node; Filter counts those of equal or higher
    priority as if they were already running there (RunFilterPluginsWithNominatedPods). `pod_groups`
    is the PodGroup lister with GenericWorkload on (None: off); its owner sets it, as the nominator."""

    def __init__(
        self,
        pre_filter: Sequence[PreFilterPlugin],
        filters: Sequence[FilterPlugin],
        pre_score: Sequence[PreScorePlugin],
        score: Sequence[WeightedScorePlugin],
        nominator: PodNominator | None = None,
        post_filter: Sequence[PostFilterPlugin] = (),
    ) -> None:
        self.pre_filter_plugins = list(pre_filter)
        self.filter_plugins = list(filters)
        self.post_filter_plugins = list(post_filter)
        self.pre_score_plugins = list(pre_score)
        self.score_plugins = list(score)
        self.nominator = nominator
        self.pod_groups: PodGroupLister | None = None
        self._extensions: list[tuple[str, PreFilterExtensions]] = []
        for plugin in self.pre_filter_plugins:
            extensions = plugin.pre_filter_extensions()
            if extensions is not None:
                self._extensions.append((plugin.name, extensions))

    # --- PreFilter -----------------------------------------------------------------------------

    def run_pre_filter_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> PreFilterOutcome:
        result: PreFilterResult | None = None
        satisfying: list[str] = []
        for plugin in self.pre_filter_plugins:
            plugin_result, status = plugin.pre_filter(state, pod, nodes)
            if status is not None and status.code == Code.SKIP:
                state.skip_filter_plugins.add(plugin.name)
                continue
            if status is not None and not status.is_success:
                status.plugin = plugin.name
                if status.is_rejected:
                    return PreFilterOutcome(None, status, {plugin.name})
                return PreFilterOutcome(
                    None, Status.error(plugin.name, f'running PreFilter plugin "{plugin.name}": {status.message}')
                )
            if plugin_result is not None and plugin_result.node_names is not None:
                satisfying.append(plugin.name)
            result = plugin_result if result is None else result.merge(plugin_result)
            if result is not None and result.node_names is not None and not result.node_names:
                if len(satisfying) > 1:
                    message = f"node(s) didn't satisfy plugin(s) [{' '.join(satisfying)}] simultaneously"
                else:
                    message = f"node(s) didn't satisfy plugin {satisfying[0]}"
                return PreFilterOutcome(result, Status.unresolvable(plugin.name, message), set(satisfying))
        return PreFilterOutcome(result, None, narrowing_plugins=satisfying)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_info: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Tell every PreFilter plugin that `pod_info` was added to `node_info` (a what-if)."""
        return self._run_extensions("AddPod", state, pod_to_schedule, pod_info, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_info: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Tell every PreFilter plugin that `pod_info` was removed from `node_info` (a what-if)."""
        return self._run_extensions("RemovePod", state, pod_to_schedule, pod_info, node_info)

    def _run_extensions(
        self, operation: str, state: CycleState, pod_to_schedule: Pod, pod_info: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        for name, extensions in self._extensions:
            if name in state.skip_filter_plugins:
                continue
            method = extensions.add_pod if operation == "AddPod" else extensions.remove_pod
            status = method(state, pod_to_schedule, pod_info, node_info)
            if status is not None and not status.is_success:
                return Status.error(name, f"running {operation} on PreFilter plugin {name}: {status.message}")
        return None

    # --- Filter --------------------------------------------------------------------------------

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Run filters in order; the first rejection wins (upstream stops there too)."""
        skip = state.skip_filter_plugins
        for plugin in self.filter_plugins:
            if skip and plugin.name in skip:
                continue
            status = plugin.filter(state, pod, node_info)
            if status is not None and status.code != Code.SUCCESS:
                if not status.is_rejected:
                    return Status.error(plugin.name, f'running "{plugin.name}" filter plugin: {status.message}')
                status.plugin = plugin.name
                return status
        return None

    def _add_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo]:
        """addGENominatedPods: nominated pods of >= priority (other than the pod) on this node."""
        if self.nominator is None:
            return False, state, node_info
        nominated = self.nominator.nominated_pods_for_node(node_info.name)
        if not nominated:
            return False, state, node_info
        priority = pod.priority
        added = False
        state_out, node_out = state, node_info
        for pod_info in nominated:
            other = pod_info.pod
            if other.priority >= priority and other.uid != pod.uid:
                if not added:
                    state_out, node_out = state.clone(), node_info.clone()
                    added = True
                node_out.add_pod(pod_info)
                status = self.run_pre_filter_extension_add_pod(state_out, pod, pod_info, node_out)
                if status is not None:
                    raise RuntimeError(status.message)
        return added, state_out, node_out

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filter as if equal-or-higher-priority nominated pods already ran on the node, then (if that
        passed and such pods exist) again without them: a pod may need a nominated pod for affinity,
        and the nominated pod may never arrive."""
        added, state_with, node_with = self._add_nominated_pods(state, pod, node_info)
        status = self.run_filter_plugins(state_with, pod, node_with)
        if not added or status is not None:
            return status
        return self.run_filter_plugins(state, pod, node_info)

    # --- PostFilter ----------------------------------------------------------------------------

    def add_post_filter_plugin(self, plugin: PostFilterPlugin) -> None:
        """Register a PostFilter plugin (after the others). PostFilter plugins get the framework
        itself (their dry runs filter with its plugins), so they are added once it exists."""
        self.post_filter_plugins.append(plugin)

    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus, cluster: ClusterView
    ) -> tuple[PostFilterResult | None, Status]:
        """RunPostFilterPlugins over this profile's PostFilter plugins (`run_post_filter`)."""
        return run_post_filter(self.post_filter_plugins, state, pod, node_to_status, cluster)

    # --- Score ---------------------------------------------------------------------------------

    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        for plugin in self.pre_score_plugins:
            status = plugin.pre_score(state, pod, nodes)
            if status is not None and status.code == Code.SKIP:
                state.skip_score_plugins.add(plugin.name)
                continue
            if status is not None and not status.is_success:
                return Status.error(plugin.name, f'running PreScore plugin "{plugin.name}": {status.message}')
        return None

    def run_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """Weighted sum of normalized plugin scores, aligned with `nodes`."""
        totals = [0] * len(nodes)
        for entry in self.score_plugins:
            plugin = entry.plugin
            if plugin.name in state.skip_score_plugins:
                continue
            scores = [plugin.score(state, pod, node) for node in nodes]
            plugin.normalize_score(state, pod, scores)
            weight = entry.weight
            for i, score in enumerate(scores):
                totals[i] += score * weight
        return totals


def run_post_filter(
    plugins: Sequence[PostFilterPlugin], state: CycleState, pod: Pod, node_to_status: NodeToStatus, cluster: ClusterView
) -> tuple[PostFilterResult | None, Status]:
    """RunPostFilterPlugins: the plugins in order until one succeeds (its result nominates) or one
    says UnschedulableAndUnresolvable or fails; otherwise Unschedulable with every plugin's reasons,
    and the last result a plugin gave (it may clear the pod's nomination). The preemption service
    runs it over the same plugins built with its own dry-run executor."""
    result: PostFilterResult | None = None
    reasons: list[str] = []
    rejector = ""
    for plugin in plugins:
        plugin_result, status = plugin.post_filter(state, pod, node_to_status, cluster)
        if status.is_success:
            return plugin_result, status
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            status.plugin = plugin.name
            return plugin_result, status
        if not status.is_rejected:
            return None, Status.error(plugin.name, status.message)
        if plugin_result is not None:
            result = plugin_result
        reasons += status.reasons
        rejector = rejector or plugin.name
    return result, Status(Code.UNSCHEDULABLE, reasons, rejector)
