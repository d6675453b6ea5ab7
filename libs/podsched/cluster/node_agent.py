"""The node agent (the kubelet's part that podsched plays): pods start, stop and leave their nodes.

* A bound pod starts at once (Running), so Running is ready wherever readiness matters.
* A pod created with spec.nodeName skips the scheduler: like the kubelet's admission, the agent
  refuses it (phase Failed, OutOf<resource>) if it does not fit, so a node is never overcommitted.
* A deleted pod on a node terminates gracefully: it keeps its resources until its grace period
  ends, then goes, its last state a terminal phase. A pod with finalizers (the Job controller's
  tracking finalizer) stays in that terminal phase until they are removed (`release`).
* A pod annotated with a simulated run time (`RUN_SECONDS_ANNOTATION`, see docs/controllers.md)
  ends that many seconds after it started, as its containers would: Succeeded, or Failed when its
  simulated exit code (`EXIT_CODE_ANNOTATION`) is not 0. Without the annotation a pod runs until
  deleted, as a server does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from podsched.api.pod_copy import copy_status
from podsched.api.types import KIND_POD, POD_FAILED, POD_RUNNING, POD_SUCCEEDED, Pod, PodCondition, PodStatus
from podsched.cluster import events as ev
from podsched.cluster.store import REMOVED, Change, Store
from podsched.framework.resource import pod_requests
from podsched.plugins.node_resources import fits_request

# The pod's simulated run: seconds from its start until its containers exit, and their exit code.
RUN_SECONDS_ANNOTATION = "sim.podsched.io/run-seconds"
EXIT_CODE_ANNOTATION = "sim.podsched.io/exit-code"


def run_seconds(pod: Pod) -> float | None:
    """The pod's simulated run time, None when it runs until deleted (or the annotation is not a
    non-negative number)."""
    text = pod.metadata.annotations.get(RUN_SECONDS_ANNOTATION)
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def exit_code(pod: Pod) -> int:
    try:
        return int(pod.metadata.annotations.get(EXIT_CODE_ANNOTATION, "0"))
    except ValueError:
        return 1


def start(status: PodStatus, start_time: float) -> None:
    """Make `status`, a fresh copy of a pod's, the status of a pod the agent has started."""
    status.phase = POD_RUNNING
    status.start_time = start_time


def started(status: PodStatus, start_time: float) -> PodStatus:
    """The status of a pod the agent has started."""
    new = copy_status(status)
    start(new, start_time)
    return new


class NodeAgent:
    """Owns the grace periods of terminating pods (`next_termination_time`, `complete_terminations`
    let the caller's clock drive them)."""

    def __init__(self, store: Store, recorder: ev.EventRecorder, clock: Callable[[], float]) -> None:
        self.store = store
        self.recorder = recorder
        self.clock = clock
        self._terminations: dict[str, float] = {}  # uid -> time the pod is removed
        self._runs: dict[str, float] = {}  # uid -> time a pod with a simulated run time ends
        store.listeners.append(self._track_run)

    def _track_run(self, change: Change) -> None:
        """Every copy follows when each running pod with a run time ends (live writes and the log alike)."""
        if change.kind != KIND_POD:
            return
        pod = change.new
        if not isinstance(pod, Pod):
            if change.old is not None:
                self._runs.pop(change.old.uid, None)
            return
        seconds = run_seconds(pod)
        if (
            seconds is None
            or pod.status.phase != POD_RUNNING
            or pod.status.start_time is None
            or pod.metadata.deletion_timestamp is not None
        ):
            self._runs.pop(pod.uid, None)
        else:
            self._runs[pod.uid] = pod.status.start_time + seconds

    def admit_placed_pod(self, pod: Pod) -> Pod:
        """A pod created with spec.nodeName: Running if it fits its node, else Failed with an
        OutOfResources event. A pod whose node does not exist yet is left as it is."""
        info = self.store.node_infos.get(pod.spec.node_name)
        if info is None:
            return pod
        insufficient = fits_request(pod_requests(pod), info)
        if not insufficient:
            start = pod.status.start_time if pod.status.start_time is not None else self.clock()
            return replace(pod, status=started(pod.status, start))
        first = insufficient[0]
        message = (
            f"Pod was rejected: Node didn't have enough resource: {first.resource}, requested: "
            f"{first.requested}, used: {first.used}, capacity: {first.capacity}"
        )
        self.recorder.record(pod, ev.WARNING, ev.OUT_OF_RESOURCES, message, ev.NODE_AGENT_CONTROLLER)
        return replace(pod, status=replace(pod.status, phase=POD_FAILED))

    def delete(self, pod: Pod, grace_period: int | None) -> Pod:
        """Delete a pod: one running on a node terminates gracefully (`grace_period`, else the pod's
        terminationGracePeriodSeconds); an unbound or failed pod, or a grace of 0, goes at once."""
        grace = pod.spec.termination_grace_period_seconds if grace_period is None else grace_period
        if self._goes_at_once(pod, grace):
            self.remove(pod)
            return pod
        return self.start_termination(pod, grace)

    def keeps_on_delete(self, pod: Pod, grace_period: int | None) -> bool:
        """Whether `delete(pod, grace_period)` would leave the pod stored, terminating gracefully or
        kept by its finalizers, rather than gone. Changes nothing (a server dry run asks this)."""
        grace = pod.spec.termination_grace_period_seconds if grace_period is None else grace_period
        return not self._goes_at_once(pod, grace) or bool(pod.metadata.finalizers)

    def _goes_at_once(self, pod: Pod, grace: int) -> bool:
        return not self.store.occupies_node(pod) or grace == 0 or pod.status.phase == POD_FAILED

    def start_termination(self, pod: Pod, grace: int, conditions: tuple[PodCondition, ...] | None = None) -> Pod:
        """A graceful delete: deletionTimestamp now and a Killing event (with `conditions` written in
        the same update when given); the pod is removed when `grace` seconds have passed. A pod
        already terminating is left alone."""
        now = self.clock()
        if pod.metadata.deletion_timestamp is not None:
            return pod
        self.recorder.record(
            pod,
            ev.NORMAL,
            ev.KILLING,
            f"Stopping container {pod.spec.containers[0].name if pod.spec.containers else pod.name}",
            ev.NODE_AGENT_CONTROLLER,
        )
        new = replace(
            pod,
            metadata=replace(pod.metadata, deletion_timestamp=now, deletion_grace_period_seconds=grace),
            status=replace(pod.status, conditions=conditions if conditions is not None else pod.status.conditions),
        )
        self.store.stamp(new)
        self._terminations[new.uid] = now + grace
        self.store.store_pod(pod, new)
        if grace == 0:
            self.remove(new)
        return new

    def remove(self, pod: Pod) -> None:
        self._terminations.pop(pod.uid, None)
        if pod.metadata.finalizers:
            # Kept, stopped, until its finalizers go (the Job controller counts it first). A pod
            # that never ran is marked Failed as the pod garbage collector marks it.
            if pod.status.phase in (POD_FAILED, POD_SUCCEEDED) and pod.metadata.deletion_timestamp is not None:
                return
            deletion = pod.metadata.deletion_timestamp
            new = replace(
                pod,
                metadata=replace(pod.metadata, deletion_timestamp=self.clock() if deletion is None else deletion),
                status=replace(pod.status, phase=pod.status.phase if pod.status.phase == POD_SUCCEEDED else POD_FAILED),
            )
            self.store.stamp(new)
            self.store.store_pod(pod, new)
            return
        self.recorder.record(
            pod, ev.NORMAL, ev.DELETED, f"Pod {pod.namespace}/{pod.name} deleted", ev.BINDER_CONTROLLER
        )
        self.store.store_pod(pod, None)
        if pod.status.phase == POD_RUNNING and self.store.keep_history:
            # The node agent moves a pod stopped by deletion to a terminal phase (KEP-3329), which
            # is the last state anyone sees of it.
            self.store.history[pod.uid] = replace(pod, status=replace(pod.status, phase=POD_FAILED))

    def follow(self, change_type: str, pod: Pod) -> None:
        """Track the grace period of a pod restored from the binder's log (after the store has it)."""
        deletion = pod.metadata.deletion_timestamp
        if change_type != REMOVED and deletion is not None and self.store.occupies_node(pod):
            grace = pod.metadata.deletion_grace_period_seconds
            grace = pod.spec.termination_grace_period_seconds if grace is None else grace
            self._terminations[pod.uid] = deletion + grace
        else:
            self.forget(pod.uid)

    def forget(self, uid: str) -> None:
        """No grace period to track for this pod any more (restored as removed, or not terminating)."""
        self._terminations.pop(uid, None)

    def release(self, pod: Pod, finalizer: str) -> Pod | None:
        """Remove one finalizer; a pod being deleted whose grace period is over (terminal, no longer
        tracked) goes once its last finalizer does. Returns the pod as stored, None if it went."""
        kept = tuple(f for f in pod.metadata.finalizers if f != finalizer)
        new = replace(pod, metadata=replace(pod.metadata, finalizers=kept))
        self.store.stamp(new)
        self.store.store_pod(pod, new)
        if not kept and new.metadata.deletion_timestamp is not None and new.uid not in self._terminations:
            self.remove(new)
            return None
        return new

    def next_termination_time(self) -> float | None:
        """When the next terminating pod goes or the next simulated run ends."""
        times = [*self._terminations.values(), *self._runs.values()]
        return min(times) if times else None

    def complete_runs(self) -> int:
        """End every pod whose simulated run time has passed: Succeeded, or Failed for a non-zero
        exit code. The pod stays (a Job's pods are kept) and frees its node's resources."""
        now = self.clock()
        due = sorted((t, uid) for uid, t in self._runs.items() if t <= now)
        for _, uid in due:
            self._runs.pop(uid, None)
            pod = self.store.pods_by_uid.get(uid)
            if pod is not None and pod.status.phase == POD_RUNNING:
                self.store.update_pod_status(pod, phase=POD_SUCCEEDED if exit_code(pod) == 0 else POD_FAILED)
        return len(due)

    def complete_terminations(self) -> int:
        """Remove every terminating pod whose grace period has ended, and end every simulated run
        that is over."""
        completed = self.complete_runs()
        now = self.clock()
        due = sorted((t, uid) for uid, t in self._terminations.items() if t <= now)
        for _, uid in due:
            pod = self.store.pods_by_uid.get(uid)
            if pod is not None:
                self.remove(pod)
            else:
                self._terminations.pop(uid, None)
        return len(due) + completed
