"""PostFilter as an extension point (upstream RunPostFilterPlugins): the plugins run in order until
one succeeds, one says UnschedulableAndUnresolvable or one fails; otherwise their reasons add up."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from builders import make_node, make_pod
from podsched.config.scheduler_config import SchedulerConfig
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView, NodeToStatus, PostFilterResult
from podsched.framework.node_info import NodeInfo, Snapshot
from podsched.framework.runtime import Framework
from podsched.framework.status import Code, Status
from podsched.plugins import names
from podsched.plugins.default_preemption import DefaultPreemption
from podsched.plugins.registry import build_framework

POD = make_pod("p").obj()
CLUSTER = ClusterView(Snapshot([]), [], None, 0.0)


@dataclass
class FixedPostFilter:
    name: str
    status: Status
    result: PostFilterResult | None = None
    calls: list[str] = field(default_factory=list)

    def post_filter(
        self, state: CycleState, pod: object, node_to_status: NodeToStatus, cluster: ClusterView
    ) -> tuple[PostFilterResult | None, Status]:
        self.calls.append(self.name)
        return self.result, Status(self.status.code, list(self.status.reasons))


def run(*plugins: FixedPostFilter) -> tuple[PostFilterResult | None, Status]:
    framework = Framework([], [], [], [], post_filter=plugins)
    return framework.run_post_filter_plugins(CycleState(), POD, NodeToStatus(), CLUSTER)


def test_the_first_plugin_that_succeeds_decides_and_later_ones_do_not_run() -> None:
    nominated = PostFilterResult("n1")
    first = FixedPostFilter("First", Status(Code.UNSCHEDULABLE, ["first cannot help"]))
    second = FixedPostFilter("Second", Status(Code.SUCCESS), nominated)
    third = FixedPostFilter("Third", Status(Code.SUCCESS), PostFilterResult("n2"))
    result, status = run(first, second, third)
    assert (result, status.code) == (nominated, Code.SUCCESS)
    assert third.calls == []


def test_when_no_plugin_helps_their_reasons_add_up_and_the_first_rejector_is_named() -> None:
    cleared = PostFilterResult("")
    result, status = run(
        FixedPostFilter("First", Status(Code.UNSCHEDULABLE, ["first cannot help"]), cleared),
        FixedPostFilter("Second", Status(Code.UNSCHEDULABLE, ["second cannot help"])),
    )
    assert result is cleared, "a plugin's result (here: clear the nomination) stands when a later one gives none"
    assert (status.code, status.reasons, status.plugin) == (
        Code.UNSCHEDULABLE,
        ["first cannot help", "second cannot help"],
        "First",
    )


@pytest.mark.parametrize("code", [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.ERROR])
def test_an_unresolvable_answer_or_an_error_stops_the_plugins(code: Code) -> None:
    second = FixedPostFilter("Second", Status(Code.SUCCESS), PostFilterResult("n1"))
    _, status = run(FixedPostFilter("First", Status(code, ["no"])), second)
    assert status.code == code and status.plugin == "First"
    assert second.calls == []


def test_without_postfilter_plugins_the_pod_is_unschedulable_with_no_message() -> None:
    result, status = run()
    assert result is None and status.code == Code.UNSCHEDULABLE and status.message == ""


def test_default_preemption_is_the_default_profiles_postfilter_plugin_and_can_be_disabled() -> None:
    plugins = build_framework(SchedulerConfig(), None).post_filter_plugins
    assert [type(plugin) for plugin in plugins] == [DefaultPreemption]
    assert plugins[0].name == names.DEFAULT_PREEMPTION
    assert build_framework(SchedulerConfig(preemption_enabled=False), None).post_filter_plugins == []


def test_default_preemption_says_preemption_in_front_of_its_message() -> None:
    framework = build_framework(SchedulerConfig(), None)
    node = make_node("n1").capacity(cpu="1", memory="1Gi").obj()
    snapshot = Snapshot([NodeInfo(node)])
    diagnosis = NodeToStatus()
    diagnosis.set("n1", Status(Code.UNSCHEDULABLE, ["Insufficient cpu"]))
    pod = make_pod("p").priority(10).req(cpu="2").obj()
    result, status = framework.run_post_filter_plugins(
        CycleState(), pod, diagnosis, ClusterView(snapshot, [], None, 0.0)
    )
    assert result is not None and result.nominated_node_name == ""
    assert status.code == Code.UNSCHEDULABLE and status.plugin == names.DEFAULT_PREEMPTION
    assert status.message == ("preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
