"""The column strategy keeps a pod's shape (what it asks of the columns: priority, resource checks,
filter and score keys) per spec value (`ColumnStrategy.shape`): pods of one template share one, and
a pod whose spec differs in any field, or was changed in place, is shaped anew. A stale shape would
be a wrong decision, so every shape it gives is compared with one computed afresh."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_pod
from podsched.api.codecs.pod import clear_pod_spec_cache
from podsched.api.manifests import decode_object
from podsched.api.types import Pod, PodSpec, Toleration
from podsched.config.scheduler_config import SchedulerConfig
from podsched.fastpath import ColumnStrategy
from podsched.fastpath.strategy import MAX_POD_SHAPES, _pod_shape
from podsched.plugins.registry import build_algorithm
from podsched.queue.nominator import Nominator

CONFIGS = {
    "default": SchedulerConfig(),
    "no BalancedAllocation": SchedulerConfig(
        disabled_plugins=frozenset({("score", "NodeResourcesBalancedAllocation")})
    ),
    "NodeAffinity PreFilter off": SchedulerConfig(disabled_plugins=frozenset({("preFilter", "NodeAffinity")})),
}


def strategy_for(config: SchedulerConfig) -> ColumnStrategy:
    columns = build_algorithm(config, Nominator()).columns
    assert isinstance(columns, ColumnStrategy)
    assert columns.profile is not None
    return columns


def fresh_shape(strategy: ColumnStrategy, pod: Pod) -> Any:
    assert strategy.profile is not None
    return _pod_shape(pod, strategy.profile)


def template_pod(name: str, node_name: str = "") -> Pod:
    """A pod-default pod decoded as a replica decodes it: its spec from the spec cache's template."""
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "priority": 0,
            "containers": [{"name": "pause", "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}],
        },
    }
    if node_name:
        manifest["spec"]["nodeName"] = node_name
    pod = decode_object(manifest)
    assert isinstance(pod, Pod)
    return pod


def test_pods_of_one_template_share_one_shape_and_it_is_the_one_computed_afresh() -> None:
    clear_pod_spec_cache()
    strategy = strategy_for(SchedulerConfig())
    first, second = template_pod("a"), template_pod("b")
    assert first.spec is not second.spec and first.spec.containers is second.spec.containers
    shape = strategy.shape(first)
    assert shape is not None
    assert strategy.shape(second) is shape
    assert shape == fresh_shape(strategy, second)


def test_a_spec_changed_in_place_is_shaped_anew() -> None:
    strategy = strategy_for(SchedulerConfig())
    pod = template_pod("a")
    before = strategy.shape(pod)
    pod.spec.node_selector["zone"] = "a"
    after_selector = strategy.shape(pod)
    assert after_selector != before and after_selector == fresh_shape(strategy, pod)
    pod.spec.priority = 1000
    assert strategy.shape(pod) == fresh_shape(strategy, pod)
    assert strategy.shape(pod).priority == 1000  # type: ignore[union-attr]
    pod.spec.tolerations = (Toleration("dedicated", "Equal", "a", "NoSchedule"),)
    assert strategy.shape(pod) == fresh_shape(strategy, pod)
    pod.spec.node_name = "node-1"
    assert strategy.shape(pod) == fresh_shape(strategy, pod)


def test_every_spec_field_is_part_of_the_key() -> None:
    """A pod differing from a shaped one in any single spec field misses the kept shape."""
    strategy = strategy_for(SchedulerConfig())
    pod = make_pod("a").priority(5).req(cpu="100m").obj()
    strategy.shape(pod)
    changed_values: dict[str, Any] = {
        "containers": (),
        "init_containers": pod.spec.containers,
        "overhead": (("cpu", 1),),
        "node_name": "node-1",
        "node_selector": {"zone": "a"},
        "affinity": make_pod("b").node_affinity_in("disk", "s").obj().spec.affinity,
        "tolerations": (Toleration("k"),),
        "topology_spread_constraints": make_pod("c").spread(1, "zone").obj().spec.topology_spread_constraints,
        "priority_class_name": "high",
        "priority": 6,
        "preemption_policy": "Never",
        "termination_grace_period_seconds": 1,
        "scheduler_name": "other",
        "pod_group_name": "group",
    }
    assert set(changed_values) == {f.name for f in fields(PodSpec)}, "a PodSpec field without a case here"
    for name, value in changed_values.items():
        kept = len(strategy._shapes)
        strategy.shape(replace(pod, spec=replace(pod.spec, **{name: value}), _requests=None))
        assert len(strategy._shapes) == kept + 1, f"a pod differing in spec.{name} found the kept shape"


def test_the_kept_shapes_are_bounded() -> None:
    strategy = strategy_for(SchedulerConfig())
    for priority in range(MAX_POD_SHAPES + 10):
        pod = make_pod(f"p{priority}").priority(priority).req(cpu="100m").obj()
        assert strategy.shape(pod) == fresh_shape(strategy, pod)
    assert len(strategy._shapes) == MAX_POD_SHAPES


# A small menu, so that drawn pods often share a spec, and changes in place that a kept shape must see.
CPU = ("0", "100m", "2")
changes = st.sampled_from(["selector", "priority", "tolerations", "node_name", "requests", "anti_affinity", "none"])


def drawn_pod(draw: st.DrawFn, name: str) -> Pod:
    builder = make_pod(name).priority(draw(st.sampled_from([0, 10]))).req(cpu=draw(st.sampled_from(CPU)))
    if draw(st.booleans()):
        builder = builder.toleration("dedicated", "a", draw(st.sampled_from(["", "NoSchedule"])))
    if draw(st.booleans()):
        builder = builder.node_selector(zone=draw(st.sampled_from("ab")))
    if draw(st.integers(0, 5)) == 0:
        builder = builder.node_affinity_in("disk", "s")
    if draw(st.integers(0, 7)) == 0:
        builder = builder.host_port(8080)
    return builder.obj()


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, list[tuple[Pod, str]]]:
    config = draw(st.sampled_from(sorted(CONFIGS)))
    steps = [(drawn_pod(draw, f"p{i}"), draw(changes)) for i in range(draw(st.integers(1, 25)))]
    return config, steps


def change_in_place(pod: Pod, change: str) -> None:
    spec = pod.spec
    if change == "selector":
        spec.node_selector["zone"] = "b" if spec.node_selector.get("zone") == "a" else "a"
    elif change == "priority":
        spec.priority = (spec.priority or 0) + 10
    elif change == "tolerations":
        spec.tolerations = () if spec.tolerations else (Toleration("", "Exists"),)
    elif change == "node_name":
        spec.node_name = "" if spec.node_name else "node-1"
    elif change == "requests":
        spec.containers = make_pod("x").req(cpu="700m", memory="1Gi").obj().spec.containers
        pod._requests = None  # the derived request is cached on the pod (pods are values)
    elif change == "anti_affinity":
        spec.affinity = make_pod("x").pod_anti_affinity("zone", app="x").obj().spec.affinity


@settings(max_examples=300, deadline=None)
@given(histories())
def test_a_kept_shape_is_always_the_one_computed_afresh(history: tuple[str, list[tuple[Pod, str]]]) -> None:
    config, steps = history
    strategy = strategy_for(CONFIGS[config])
    seen: list[Pod] = []
    for pod, change in steps:
        assert strategy.shape(pod) == fresh_shape(strategy, pod)
        seen.append(pod)
        change_in_place(pod, change)
        for earlier in seen:  # every pod, changed or not, as it is now
            assert strategy.shape(earlier) == fresh_shape(strategy, earlier)
