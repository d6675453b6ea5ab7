"""Cluster events and queueing hints (upstream framework/types.go: ClusterEvent, ClusterEventWithHint,
QueueingHintFn; framework/interface.go: EnqueueExtensions).

Each plugin says which cluster events may make a pod it rejected schedulable (`events_to_register`),
optionally with a hint that looks at the event and the pod and says whether to retry it. The queue
moves an unschedulable pod on an event only if one of the plugins that rejected it registered for
that event and its hint (if any) says Queue."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from podsched.api.types import Pod
from podsched.framework.node_info import PodInfo

# Cluster events (framework.ClusterEvent), declared once.
NODE_ADD = "NodeAdd"
NODE_UPDATE = "NodeUpdate"
ASSIGNED_POD_ADD = "AssignedPodAdd"
ASSIGNED_POD_UPDATE = "AssignedPodUpdate"  # AssignedPod/UpdatePodLabel: the labels of a bound pod changed
ASSIGNED_POD_DELETE = "AssignedPodDelete"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
FORCE_ACTIVATE = "ForceActivate"
WILDCARD = "*"
# Events every rejected pod is retried on, whoever rejected it.
RETRY_ALWAYS = frozenset({WILDCARD, UNSCHEDULABLE_TIMEOUT, FORCE_ACTIVATE})


class PodEvent(NamedTuple):
    """An assigned pod's add, label update or delete, with the pod before and after (None when
    absent): what a plugin's queueing hint looks at."""

    name: str
    old: Pod | None
    new: Pod | None


Event = str | PodEvent

# QueueingHintFn: True is Queue (the event may make the rejected pod schedulable), False is QueueSkip.
QueueingHintFn = Callable[[PodInfo, PodEvent], bool]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: str
    hint: QueueingHintFn | None = None  # None: every such event may help


class EnqueueExtensions(Protocol):
    name: str

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


# Per plugin name, the events it registered for, each with its hint.
QueueingHintMap = Mapping[str, Mapping[str, QueueingHintFn | None]]


def queueing_hint_map(plugins: Iterable[object]) -> dict[str, dict[str, QueueingHintFn | None]]:
    """The registrations of every plugin that has EnqueueExtensions, by plugin name."""
    hints: dict[str, dict[str, QueueingHintFn | None]] = {}
    for plugin in plugins:
        register = getattr(plugin, "events_to_register", None)
        if register is None:
            continue
        name: str = plugin.name  # type: ignore[attr-defined]
        hints[name] = {registration.event: registration.hint for registration in register()}
    return hints


def plugin_cares(hints: QueueingHintMap, plugin: str, event: Event, pod_info: PodInfo | None = None) -> bool:
    """Whether `event` may make a pod `plugin` rejected schedulable: the plugin registered for it
    and, where the registration carries a queueing hint, the hint says Queue."""
    name = event.name if isinstance(event, PodEvent) else event
    if name in RETRY_ALWAYS:
        return True
    registered = hints.get(plugin)
    if registered is None or name not in registered:
        return False
    hint = registered[name]
    if hint is not None and isinstance(event, PodEvent) and pod_info is not None:
        return hint(pod_info, event)
    return True
