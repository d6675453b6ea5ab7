"""Each plugin's EventsToRegister: the cluster events that may make a pod it rejected schedulable,
as upstream's plugins register them (the queue looks only these up)."""

from __future__ import annotations

import pytest

from builders import make_pod
from podsched.framework import events as ev
from podsched.framework.node_info import PodInfo
from podsched.plugins import names
from podsched.plugins.interpod_affinity import is_schedulable_after_assigned_pod_change
from podsched.plugins.registry import default_queueing_hints

NODE_EVENTS = {ev.NODE_ADD, ev.NODE_UPDATE}
ASSIGNED_POD_EVENTS = {ev.ASSIGNED_POD_ADD, ev.ASSIGNED_POD_UPDATE, ev.ASSIGNED_POD_DELETE}

EXPECTED_REGISTRATIONS = {
    names.NODE_RESOURCES_FIT: NODE_EVENTS | {ev.ASSIGNED_POD_DELETE},
    names.NODE_AFFINITY: NODE_EVENTS,
    names.TAINT_TOLERATION: NODE_EVENTS,
    names.NODE_UNSCHEDULABLE: NODE_EVENTS,
    names.NODE_NAME: {ev.NODE_ADD},
    names.NODE_PORTS: {ev.NODE_ADD, ev.ASSIGNED_POD_DELETE},
    names.INTER_POD_AFFINITY: NODE_EVENTS | ASSIGNED_POD_EVENTS,
    names.POD_TOPOLOGY_SPREAD: NODE_EVENTS | ASSIGNED_POD_EVENTS,
}


def test_every_default_plugin_registers_upstreams_events() -> None:
    hints = default_queueing_hints()
    assert {plugin: set(registered) for plugin, registered in hints.items()} == EXPECTED_REGISTRATIONS


def test_only_inter_pod_affinity_carries_a_hint_and_only_for_assigned_pod_changes() -> None:
    hints = default_queueing_hints()
    with_hint = {(plugin, event) for plugin, registered in hints.items() for event, hint in registered.items() if hint}
    assert with_hint == {(names.INTER_POD_AFFINITY, event) for event in ASSIGNED_POD_EVENTS}
    assert hints[names.INTER_POD_AFFINITY][ev.ASSIGNED_POD_ADD] is is_schedulable_after_assigned_pod_change


@pytest.mark.parametrize("event", sorted(ev.RETRY_ALWAYS))
def test_a_timeout_a_forced_activation_or_a_wildcard_retries_whatever_rejected_the_pod(event: str) -> None:
    assert ev.plugin_cares({}, "SomeUnknownPlugin", event)


def test_an_event_a_plugin_did_not_register_for_does_not_move_its_pods() -> None:
    assert not ev.plugin_cares(default_queueing_hints(), names.NODE_NAME, ev.NODE_UPDATE)
    assert not ev.plugin_cares(default_queueing_hints(), "SomeUnknownPlugin", ev.NODE_ADD)


def test_the_hint_decides_for_an_assigned_pod_event_it_registered() -> None:
    hints = default_queueing_hints()
    pending = PodInfo(make_pod("p").pod_affinity("zone", app="web").obj())
    unrelated = ev.PodEvent(ev.ASSIGNED_POD_ADD, None, make_pod("q").node("n1").label("app", "db").obj())
    matching = ev.PodEvent(ev.ASSIGNED_POD_ADD, None, make_pod("r").node("n1").label("app", "web").obj())
    assert not ev.plugin_cares(hints, names.INTER_POD_AFFINITY, unrelated, pending)
    assert ev.plugin_cares(hints, names.INTER_POD_AFFINITY, matching, pending)
