"""Running a scenario file (tests/scenarios/*.yaml) on a live stack, and telling when the live system
is quiescent: used by test_live_parity.py (every scenario) and test_scenarios.py (a dry run predicting
a scenario's steps)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

import grpc
import yaml
from scenarios.scenario import COMMON, Delete, Observed, Scenario, SeenEvent, disrupted_by_scheduler

from live_api import Api
from podsched.queue.scheduling_queue import SchedulingQueue
from podsched_devstack.services import ServiceStack, scrape, value
from podsched_proto.api.v1 import api_pb2

QUIESCENCE_TIMEOUT = 60.0
POLL_SECONDS = 0.2
DEFAULT_INITIAL_BACKOFF = 1.0
DEFAULT_MAX_BACKOFF = 10.0
DEFAULT_SCHEDULER = "default-scheduler"
POD_GROUP_BACKOFF_PODS = "podsched_pod_group_backoff_pods"
RESOURCES = {
    "Pod": "pods",
    "Node": "nodes",
    "PriorityClass": "priorityclasses",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "Job": "jobs",
}
NAMESPACED = ("Pod", "PodDisruptionBudget", "ResourceQuota", "ReplicaSet", "Deployment", "Job")
RUN_SECONDS_ANNOTATION = "sim.podsched.io/run-seconds"
# The queue's backoff flush period (upstream's 1 s): a group whose backoff ended waits up to this long
# for its retry (simulate's run_until_quiescent adds it too).
BACKOFF_FLUSH_INTERVAL = 1.0


# --- running a scenario -------------------------------------------------------------------------------


class LiveRun:
    """One scenario on a running stack, step by step: common.yaml first, then each step followed by a
    wait until the system is quiescent (and, before a next step, until pending pods' backoff ran out)."""

    def __init__(self, scenario: Scenario, api: Api, stack: ServiceStack) -> None:
        self.scenario, self.api, self.stack = scenario, api, stack
        self.scheduling = Scheduling.of(scenario.config)
        self.rejected: list[dict[str, str]] = []
        self.disrupted: set[str] = set()
        api.apply_text(COMMON.read_text())

    def step(self, index: int) -> None:
        step = self.scenario.steps[index]
        if isinstance(step, Delete):
            request = api_pb2.DeleteRequest(resource=RESOURCES[step.kind], name=step.name, namespace=step.namespace)
            self.api.stub.Delete(request, timeout=30)
        else:
            self.rejected += apply_step(self.api, step, self.scenario.path.name)
        last = index == len(self.scenario.steps) - 1
        self.disrupted |= wait_until_quiescent(self.api, self.stack, self.scheduling, wait_out_backoff=not last)

    def observe(self) -> Observed:
        pods = self.api.pods()
        disrupted = self.disrupted | {name for name, pod in pods.items() if disrupted_by_scheduler(pod)}
        reply = self.api.stub.Get(api_pb2.GetRequest(resource="jobs", namespace="default"), timeout=30)
        jobs = {job["metadata"]["name"]: job for job in map(json.loads, reply.objects_json)}
        return Observed(pods, seen_events(self.api), list(self.rejected), disrupted, jobs, pod_groups(self.api))


def run_live(scenario: Scenario, api: Api, stack: ServiceStack) -> Observed:
    run = LiveRun(scenario, api, stack)
    for index in range(len(scenario.steps)):
        run.step(index)
    return run.observe()


def apply_step(api: Api, documents: list[dict[str, Any]], source: str) -> list[dict[str, str]]:
    """One Apply per object, in file order, as `podsched apply -f` does; refusals are collected as the
    simulate output lists them."""
    rejected = []
    for document in documents:
        request = api_pb2.ApplyRequest(object_json=json.dumps(document).encode(), source=source)
        try:
            api.stub.Apply(request, timeout=30)
        except grpc.RpcError as error:
            if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise
            metadata = document.get("metadata") or {}
            kind = str(document.get("kind", ""))
            namespaced = kind in NAMESPACED
            rejected.append(
                {
                    "kind": kind,
                    "namespace": str(metadata.get("namespace") or ("default" if namespaced else "")),
                    "name": str(metadata.get("name", "")),
                    "message": str(error.details()),
                }
            )
    return rejected


def pod_groups(api: Api) -> dict[str, dict[str, Any]]:
    reply = api.stub.Get(api_pb2.GetRequest(resource="podgroups", namespace="default"), timeout=30)
    return {group["metadata"]["name"]: group for group in map(json.loads, reply.objects_json)}


def seen_events(api: Api) -> list[SeenEvent]:
    events = sorted(api.events(), key=lambda e: e.sequence)
    return [
        SeenEvent(
            e.reason, e.involved_object.name, e.message, e.related.name, _seconds(e.event_time), e.involved_object.kind
        )
        for e in events
    ]


def _seconds(stamp: Any) -> float:
    return float(stamp.seconds) + float(stamp.nanos) / 1e9


# --- quiescence ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scheduling:
    """What of the scenario's KubeSchedulerConfiguration quiescence depends on."""

    initial_backoff: float = DEFAULT_INITIAL_BACKOFF
    max_backoff: float = DEFAULT_MAX_BACKOFF
    # The profiles' schedulerNames: a pod naming another scheduler is never queued, never fails.
    scheduler_names: frozenset[str] = frozenset({DEFAULT_SCHEDULER})

    @staticmethod
    def of(config: str) -> Scheduling:
        parsed = yaml.safe_load(config) if config else None
        parsed = parsed if isinstance(parsed, dict) else {}
        profiles = parsed.get("profiles") or [{}]
        return Scheduling(
            float(parsed.get("podInitialBackoffSeconds", DEFAULT_INITIAL_BACKOFF)),
            float(parsed.get("podMaxBackoffSeconds", DEFAULT_MAX_BACKOFF)),
            frozenset(str(p.get("schedulerName") or DEFAULT_SCHEDULER) for p in profiles),
        )

    def longest_pod_group_backoff(self, pods: dict[str, dict[str, Any]]) -> float:
        """The longest backoff a rejected pod group can get: podMaxBackoffSeconds times the square root
        of its size (the queue's pod_group_backoff_duration), taken over the largest group of pending
        pods (no fewer than the group waits with)."""
        sizes: dict[str, int] = {}
        for pod in pods.values():
            spec = pod.get("spec", {})
            group = (spec.get("schedulingGroup") or {}).get("podGroupName")
            if group and not spec.get("nodeName"):
                sizes[group] = sizes.get(group, 0) + 1
        return self.max_backoff * math.sqrt(max(sizes.values(), default=1))


def busy_reason(
    pods: dict[str, dict[str, Any]],
    events: list[Any],
    samples: dict[Any, float],
    scheduling: Scheduling,
    wait_out_backoff: bool,
) -> str:
    """Why the system may still change on its own ("" if nothing would): a pod terminating, a pod in
    activeQ or backoffQ (beyond the pods of rejected pod groups, which `wait_until_quiescent` judges
    apart), a pending pod that has not failed an attempt since it was stored (beyond those PreEnqueue
    holds back, scheduler_pending_pods{queue="gated"}, or {queue="incomplete"} when their PodGroup
    is missing: a gang waiting for its pods is never attempted), or one whose backoff has not run
    out (then a later step would find it in backoffQ instead of where simulate finds it: in
    simulate no time passes between a failure and the next file). A pod of a group while rejected
    groups back off has no backoff of its own to wait out: it waits with its group, which no event
    moves, and is retried with it."""
    if value(samples, "scheduler_pending_pods", queue="active"):
        return "activeQ is not empty"
    groups_back_off = value(samples, POD_GROUP_BACKOFF_PODS) > 0
    if value(samples, "scheduler_pending_pods", queue="backoff") > value(samples, POD_GROUP_BACKOFF_PODS):
        return "backoffQ is not empty"
    gated = int(value(samples, "scheduler_pending_pods", queue="gated") or 0)
    gated += int(value(samples, "scheduler_pending_pods", queue="incomplete") or 0)
    never_attempted: list[str] = []
    failures: dict[str, list[Any]] = {}
    for event in events:
        if event.reason == "FailedScheduling":
            failures.setdefault(event.involved_object.uid, []).append(event)
    now = time.time()
    for name, pod in pods.items():
        metadata, spec = pod["metadata"], pod.get("spec", {})
        if metadata.get("deletionTimestamp"):
            return f"pod {name} is terminating"
        running = pod.get("status", {}).get("phase") == "Running"
        if running and RUN_SECONDS_ANNOTATION in (metadata.get("annotations") or {}):
            return f"pod {name} is running its simulated run time"
        if spec.get("nodeName") or spec.get("schedulerName", DEFAULT_SCHEDULER) not in scheduling.scheduler_names:
            continue
        failed = failures.get(metadata.get("uid", ""), [])
        if not failed:
            never_attempted.append(name)
            if len(never_attempted) > gated:
                return f"pod {name} is pending and has not failed an attempt yet"
            continue
        if not wait_out_backoff or (groups_back_off and (spec.get("schedulingGroup") or {}).get("podGroupName")):
            continue
        attempts = sum(max(e.count, 1) for e in failed)
        last = max(max(_seconds(e.event_time), _seconds(e.last_time)) for e in failed)
        waits = min(scheduling.initial_backoff * 2 ** (attempts - 1), scheduling.max_backoff)
        # The queue counts a backoff in whole windows: it ends where the window after its expiry
        # starts, up to a second after `last + waits`. Pods let go before that are still backing off
        # in the queue, and a node added then finds some in backoffQ and some not (their order is
        # then the windows', not activeQ's as in simulate).
        if now < SchedulingQueue.backoff_window_end(last + waits):
            return f"pod {name} is backing off"
    return ""


def wait_until_quiescent(api: Api, stack: ServiceStack, scheduling: Scheduling, wait_out_backoff: bool) -> set[str]:
    """Poll until nothing would change on its own, and the pods, the events and the queue's attempt
    count are the same on two polls in a row (a cycle in flight shows in none of the gauges).
    `wait_out_backoff`: also until every pending pod's backoff has run out (before a next step).

    Rejected pod groups are retried after each backoff whatever happens, as upstream's, so while one
    waits in backoffQ the events and attempts never stop changing. Then the rule is simulate's
    (run_until_quiescent): settled once the longest pod-group backoff plus the backoff flush interval
    has passed with no write to the pods or the pod groups, while nothing else is busy; every group
    then had a retry that changed nothing. Returns the pods seen carrying the scheduler's
    DisruptionTarget condition on the way."""
    deadline = time.monotonic() + QUIESCENCE_TIMEOUT
    previous: Any = None
    written: str | None = None
    written_at = time.monotonic()
    disrupted: set[str] = set()
    reason = "not polled yet"
    while time.monotonic() < deadline:
        samples = scrape(stack.metrics_url("queue"))
        pods = api.pods()
        groups = pod_groups(api)
        events = api.events()
        now = time.monotonic()
        disrupted |= {name for name, pod in pods.items() if disrupted_by_scheduler(pod)}
        state = json.dumps([pods, groups], sort_keys=True)
        if state != written:
            written, written_at = state, now
        reason = busy_reason(pods, events, samples, scheduling, wait_out_backoff)
        waiting_in_groups = int(value(samples, POD_GROUP_BACKOFF_PODS))
        if not reason and waiting_in_groups:
            settle_after = scheduling.longest_pod_group_backoff(pods) + BACKOFF_FLUSH_INTERVAL
            if now - written_at > settle_after:
                return disrupted
            previous = None
            reason = (
                f"{waiting_in_groups} pod(s) of rejected pod groups back off, and {settle_after:.1f}s "
                f"without a write have not passed (the last {now - written_at:.1f}s ago)"
            )
        else:
            attempts = sum(v for (name, _), v in samples.items() if name == "scheduler_schedule_attempts_total")
            fingerprint = (state, [(e.sequence, e.count) for e in events], attempts)
            if not reason and fingerprint == previous:
                return disrupted
            previous = None if reason else fingerprint
        time.sleep(POLL_SECONDS)
    raise AssertionError(f"the system did not become quiescent within {QUIESCENCE_TIMEOUT}s: {reason}")
