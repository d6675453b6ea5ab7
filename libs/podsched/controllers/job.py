"""The Job controller (pkg/controller/job): run pods until `completions` succeed, count failures
against backoffLimit through podFailurePolicy, and finish the Job as Complete or Failed.

Pods are tracked with upstream's finalizer (`batch.kubernetes.io/job-tracking`): a finished pod is
kept, terminal, until this controller has counted it in the Job's status and removed the finalizer,
both written in the same batch of the binder's log, so a restart neither loses nor double-counts a
pod. A pod counts as failed when it is Failed, and, for a Job without a podFailurePolicy, as soon as
it is being deleted (podReplacementPolicy TerminatingOrFailed, the default then); with a
podFailurePolicy only once it is Failed (podReplacementPolicy Failed), and its first matching rule
decides: Ignore (not counted: e.g. preemption, which sets the DisruptionTarget condition), FailJob,
Count. Not modelled: the exponential delay before a failed pod is replaced, indexed Jobs,
suspend, successPolicy, backoffLimitPerIndex.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from podsched.api.codecs.workloads import JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL
from podsched.api.types import (
    POD_FAILED,
    POD_FAILURE_COUNT,
    POD_FAILURE_FAIL_JOB,
    POD_FAILURE_IGNORE,
    POD_SUCCEEDED,
    Job,
    JobCondition,
    JobStatus,
    Pod,
    PodFailurePolicyRule,
)
from podsched.cluster import events as ev
from podsched.cluster.node_agent import exit_code
from podsched.controllers.pod_control import PodControl, is_active, is_ready, is_terminal, pod_from_template

CONTROLLER = "job-controller"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"

# Condition types, reasons and messages (upstream's words).
COMPLETE = "Complete"
FAILED = "Failed"
FAILURE_TARGET = "FailureTarget"
SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
REASON_COMPLETIONS_REACHED = "CompletionsReached"
MESSAGE_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
MESSAGE_BACKOFF_LIMIT_EXCEEDED = "Job has reached the specified backoff limit"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
MESSAGE_DEADLINE_EXCEEDED = "Job was active longer than specified deadline"
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
EVENT_COMPLETED = "Completed"
MESSAGE_JOB_COMPLETED = "Job completed"


def is_finished(job: Job) -> bool:
    return job.status.condition(COMPLETE) is not None or job.status.condition(FAILED) is not None


def rule_matches(rule: PodFailurePolicyRule, pod: Pod) -> bool:
    """A podFailurePolicy rule against a failed pod: its exit code (simulated) or one of its conditions."""
    if rule.on_exit_codes is not None:
        operator, values = rule.on_exit_codes
        code = exit_code(pod)
        if code == 0:
            return False  # exit code 0 never matches (upstream ignores it)
        return (code in values) == (operator == "In")
    return any(
        c.type == condition_type and c.status == status
        for condition_type, status in rule.on_pod_conditions
        for c in pod.status.conditions
    )


def failure_action(job: Job, pod: Pod) -> str:
    """What a failed pod does to the Job: the first matching rule's action, else Count."""
    for rule in job.pod_failure_policy or ():
        if rule_matches(rule, pod):
            return rule.action
    return POD_FAILURE_COUNT


def counts_as_failed(job: Job, pod: Pod) -> bool:
    """isPodFailed: Failed, or (no podFailurePolicy) being deleted without having succeeded."""
    if pod.status.phase == POD_FAILED:
        return True
    return (
        job.pod_failure_policy is None
        and pod.metadata.deletion_timestamp is not None
        and pod.status.phase != POD_SUCCEEDED
    )


@dataclass(frozen=True, slots=True)
class Finished:
    """Pods newly finished since the last sync, and what they do to the Job."""

    succeeded: tuple[Pod, ...]
    failed: tuple[Pod, ...]  # counted against backoffLimit
    ignored: tuple[Pod, ...]  # failed, but a rule said Ignore
    fail_job: Pod | None  # a pod whose rule said FailJob


def newly_finished(job: Job, pods: Sequence[Pod]) -> Finished:
    """The tracked pods (finalizer still on) that finished: each is counted once."""
    succeeded, failed, ignored = [], [], []
    fail_job = None
    for pod in pods:
        if TRACKING_FINALIZER not in pod.metadata.finalizers:
            continue
        if pod.status.phase == POD_SUCCEEDED:
            succeeded.append(pod)
        elif counts_as_failed(job, pod):
            action = failure_action(job, pod)
            if action == POD_FAILURE_IGNORE:
                ignored.append(pod)
            else:
                failed.append(pod)
                if action == POD_FAILURE_FAIL_JOB and fail_job is None:
                    fail_job = pod
    return Finished(tuple(succeeded), tuple(failed), tuple(ignored), fail_job)


def pods_wanted(job: Job, succeeded: int) -> int:
    """How many pods should be active: parallelism, but no more than the completions still missing."""
    if job.completions is None:
        return 0 if succeeded > 0 else job.parallelism
    return max(0, min(job.parallelism, job.completions - succeeded))


def _condition(type_: str, reason: str, message: str, now: float) -> JobCondition:
    return JobCondition(type_, "True", reason, message, now)


class JobController:
    def __init__(self, pods: PodControl, release: Callable[[Pod, str], Pod | None]) -> None:
        self.pods = pods
        self.release = release  # the node agent's: remove a finalizer (the pod goes if it was deleted)

    def sync(self, job: Job, owned: Sequence[Pod], now: float) -> JobStatus:
        """syncJob: count newly finished pods, decide whether the Job is finished, create or delete
        pods. Returns the status to write (the caller writes it if it changed)."""
        status = job.status
        if is_finished(job):
            # Nothing more to count: pods stopped by the finish only lose their finalizer.
            for pod in owned:
                if TRACKING_FINALIZER in pod.metadata.finalizers and (is_terminal(pod) or counts_as_failed(job, pod)):
                    self.release(pod, TRACKING_FINALIZER)
            active = [p for p in owned if is_active(p)]
            return replace(status, active=len(active), ready=sum(1 for p in active if is_ready(p)))
        finished = newly_finished(job, owned)
        succeeded = status.succeeded + len(finished.succeeded)
        failed = status.failed + len(finished.failed)
        start_time = status.start_time if status.start_time is not None else now
        active = [p for p in owned if is_active(p)]
        failure = self._failure(job, finished, failed, start_time, now)
        conditions = status.conditions
        completion_time = status.completion_time
        if failure is not None:
            reason, message = failure
            conditions += (_condition(FAILURE_TARGET, reason, message, now), _condition(FAILED, reason, message, now))
            self._stop(job, active)
            active = []
            self.pods.recorder.record(job, ev.WARNING, reason, message, CONTROLLER)
        elif (job.completions is not None and succeeded >= job.completions) or (
            job.completions is None and succeeded > 0 and not active
        ):
            conditions += (
                _condition(SUCCESS_CRITERIA_MET, REASON_COMPLETIONS_REACHED, MESSAGE_COMPLETIONS_REACHED, now),
                _condition(COMPLETE, REASON_COMPLETIONS_REACHED, MESSAGE_COMPLETIONS_REACHED, now),
            )
            completion_time = now
            self._stop(job, active)
            active = []
            self.pods.recorder.record(job, ev.NORMAL, EVENT_COMPLETED, MESSAGE_JOB_COMPLETED, CONTROLLER)
        else:
            active += self._start(job, owned, len(active), succeeded)
        # Counted in the status written with this batch: the tracking finalizer goes.
        for pod in (*finished.succeeded, *finished.failed, *finished.ignored):
            self.release(pod, TRACKING_FINALIZER)
        return replace(
            status,
            active=len(active),
            ready=sum(1 for p in active if is_ready(p)),
            succeeded=succeeded,
            failed=failed,
            start_time=start_time,
            completion_time=completion_time,
            conditions=conditions,
        )

    @staticmethod
    def _failure(job: Job, finished: Finished, failed: int, start_time: float, now: float) -> tuple[str, str] | None:
        """Why the Job fails now (reason, message), if it does: a FailJob rule, the backoff limit,
        or the active deadline, in upstream's order."""
        if finished.fail_job is not None:
            pod = finished.fail_job
            return (
                REASON_POD_FAILURE_POLICY,
                f"Pod {pod.namespace}/{pod.name} failed and the podFailurePolicy says FailJob",
            )
        if failed > job.backoff_limit:
            return REASON_BACKOFF_LIMIT_EXCEEDED, MESSAGE_BACKOFF_LIMIT_EXCEEDED
        if job.active_deadline_seconds is not None and now >= start_time + job.active_deadline_seconds:
            return REASON_DEADLINE_EXCEEDED, MESSAGE_DEADLINE_EXCEEDED
        return None

    def _stop(self, job: Job, active: Sequence[Pod]) -> None:
        for pod in active:
            self.pods.delete(job, pod, CONTROLLER)

    def _start(self, job: Job, owned: Sequence[Pod], active: int, succeeded: int) -> list[Pod]:
        """Create the pods still wanted. With a podFailurePolicy a terminating pod is replaced only
        once it has failed (podReplacementPolicy Failed)."""
        terminating = 0
        if job.pod_failure_policy is not None:
            terminating = sum(1 for p in owned if not is_terminal(p) and p.metadata.deletion_timestamp is not None)
        labels = {
            JOB_CONTROLLER_UID_LABEL: job.uid,
            JOB_NAME_LABEL: job.name,
            "controller-uid": job.uid,
            "job-name": job.name,
        }
        created = []
        for _ in range(pods_wanted(job, succeeded) - active - terminating):
            pod = self.pods.create(
                job, pod_from_template(job.template, job, f"{job.name}-", labels, (TRACKING_FINALIZER,)), CONTROLLER
            )
            if pod is None:
                break
            created.append(pod)
        return created

    def next_deadline(self, job: Job) -> float | None:
        """When the Job's activeDeadlineSeconds runs out, if it is running and has one."""
        if job.active_deadline_seconds is None or job.status.start_time is None or is_finished(job):
            return None
        return job.status.start_time + job.active_deadline_seconds
