"""The workload codecs: apps/v1 ReplicaSet and Deployment, batch/v1 Job.

The spec is decoded and validated as upstream's ValidateReplicaSet / ValidateDeployment / ValidateJob
do, the pod template as a pod (its errors named under `spec.template`). The status is the
controllers' to write: it is decoded here so that the binder's log carries it to every copy, and
admission drops what a client sends (`cluster.admission`), as the API server's status subresource
does.
"""

from __future__ import annotations

import copy
from typing import Any

from podsched.api.codecs.fields import (
    INT32,
    SchemaError,
    as_int,
    child,
    get_array,
    get_int32,
    get_int64,
    get_int_or_string,
    get_items,
    get_object,
    get_string,
    get_timestamp,
    put,
    timestamp_text,
)
from podsched.api.codecs.meta import decode_meta
from podsched.api.codecs.selectors import decode_label_selector, encode_label_selector
from podsched.api.errors import FieldError
from podsched.api.types import (
    RECREATE,
    ROLLING_UPDATE,
    Deployment,
    DeploymentStatus,
    Job,
    JobCondition,
    JobStatus,
    LabelSelector,
    PodFailurePolicyRule,
    PodTemplate,
    ReplicaSet,
    ReplicaSetStatus,
)
from podsched.api.validation import (
    _int_or_percent_errors,
    invalid,
    non_negative_errors,
    positive_errors,
    required,
    template_restart_policy_errors,
    validate_pod_failure_policy_rule,
    validate_selector_and_template,
)

# The labels the Job controller puts on its pods and selects them by (manualSelector unset).
JOB_CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
DEFAULT_BACKOFF_LIMIT = 6


# --- the pod template ---------------------------------------------------------------------------------


def decode_template(spec: dict[str, Any], namespace: str, errors: list[FieldError]) -> PodTemplate:
    """spec.template, validated as the pod it describes; errors are named under spec.template."""
    from podsched.api.codecs.pod import decode_pod  # the pod codec imports nothing of this module

    template = get_object(spec, "template", "spec")
    if template is None:
        errors.append(required("spec.template.spec.containers"))
        return PodTemplate()
    metadata = get_object(template, "metadata", "spec.template") or {}
    pod_doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        # A placeholder name: the template's pods get generated names.
        "metadata": {**copy.deepcopy(metadata), "name": "template", "namespace": namespace},
        "spec": copy.deepcopy(get_object(template, "spec", "spec.template") or {}),
    }
    pod_errors: list[FieldError] = []
    try:
        pod = decode_pod(pod_doc, pod_errors)
    except SchemaError as exc:
        raise _SchemaUnderTemplate(str(exc)) from None
    errors.extend(
        FieldError("spec.template." + e.path, e.detail, e.value, e.kind)
        for e in pod_errors
        if not e.path.startswith(("metadata.name", "metadata.namespace"))
    )
    return PodTemplate(dict(pod.metadata.labels), {"metadata": metadata, "spec": pod_doc["spec"]})


class _SchemaUnderTemplate(SchemaError):
    """A pod field of the wrong JSON type inside a template: the path named under spec.template."""

    def __init__(self, message: str) -> None:
        Exception.__init__(self, message.replace(" Go struct field spec.", " Go struct field spec.template.spec.", 1))


def template_restart_policy(template: PodTemplate) -> str:
    return str((template.manifest.get("spec") or {}).get("restartPolicy") or "")


def encode_template(template: PodTemplate) -> dict[str, Any]:
    return copy.deepcopy(template.manifest)


# --- ReplicaSet and Deployment --------------------------------------------------------------------------


def _replicas(spec: dict[str, Any], errors: list[FieldError]) -> int:
    replicas = get_int32(spec, "replicas", "spec")
    errors.extend(non_negative_errors(replicas, "spec.replicas"))
    return 1 if replicas is None else replicas


def _apps_spec(
    manifest: dict[str, Any], errors: list[FieldError]
) -> tuple[Any, dict[str, Any], int, LabelSelector | None, PodTemplate]:
    metadata = decode_meta(manifest, errors, namespaced=True)
    spec = get_object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    replicas = _replicas(spec, errors)
    selector = decode_label_selector(spec, "selector", "spec")
    template = decode_template(spec, metadata.namespace, errors)
    errors.extend(validate_selector_and_template(selector, template.labels))
    errors.extend(
        template_restart_policy_errors(
            template_restart_policy(template) or "Always", ("Always",), "spec.template.spec.restartPolicy"
        )
    )
    return metadata, spec, replicas, selector, template


def decode_replica_set(manifest: dict[str, Any], errors: list[FieldError]) -> ReplicaSet:
    metadata, _, replicas, selector, template = _apps_spec(manifest, errors)
    status = get_object(manifest, "status", "") or {}
    return ReplicaSet(
        metadata,
        replicas,
        selector,
        template,
        ReplicaSetStatus(
            replicas=get_int32(status, "replicas", "status") or 0,
            fully_labeled_replicas=get_int32(status, "fullyLabeledReplicas", "status") or 0,
            ready_replicas=get_int32(status, "readyReplicas", "status") or 0,
            available_replicas=get_int32(status, "availableReplicas", "status") or 0,
            observed_generation=get_int64(status, "observedGeneration", "status") or 0,
        ),
        source=manifest,
    )


def decode_deployment(manifest: dict[str, Any], errors: list[FieldError]) -> Deployment:
    metadata, spec, replicas, selector, template = _apps_spec(manifest, errors)
    strategy = get_object(spec, "strategy", "spec") or {}
    strategy_type = get_string(strategy, "type", "spec.strategy") or ROLLING_UPDATE
    rolling = get_object(strategy, "rollingUpdate", "spec.strategy") or {}
    max_surge = get_int_or_string(rolling, "maxSurge", "spec.strategy.rollingUpdate")
    max_unavailable = get_int_or_string(rolling, "maxUnavailable", "spec.strategy.rollingUpdate")
    if strategy_type not in (ROLLING_UPDATE, RECREATE):
        errors.append(
            FieldError(
                "spec.strategy.type",
                'supported values: "Recreate", "RollingUpdate"',
                strategy_type,
                "Unsupported value",
            )
        )
    surge = "25%" if max_surge is None else max_surge
    unavailable = "25%" if max_unavailable is None else max_unavailable
    if strategy_type == ROLLING_UPDATE:
        errors.extend(_int_or_percent_errors(surge, "spec.strategy.rollingUpdate.maxSurge"))
        errors.extend(_int_or_percent_errors(unavailable, "spec.strategy.rollingUpdate.maxUnavailable"))
        if surge in (0, "0%") and unavailable in (0, "0%"):
            errors.append(
                invalid("spec.strategy.rollingUpdate.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0")
            )
    status = get_object(manifest, "status", "") or {}
    return Deployment(
        metadata,
        replicas,
        selector,
        template,
        strategy_type,
        surge,
        unavailable,
        DeploymentStatus(
            replicas=get_int32(status, "replicas", "status") or 0,
            updated_replicas=get_int32(status, "updatedReplicas", "status") or 0,
            ready_replicas=get_int32(status, "readyReplicas", "status") or 0,
            available_replicas=get_int32(status, "availableReplicas", "status") or 0,
            unavailable_replicas=get_int32(status, "unavailableReplicas", "status") or 0,
            observed_generation=get_int64(status, "observedGeneration", "status") or 0,
        ),
        source=manifest,
    )


def overlay_replica_set(rs: ReplicaSet, body: dict[str, Any]) -> None:
    spec = child(body, "spec")
    spec["replicas"] = rs.replicas
    if rs.selector is not None:
        spec["selector"] = encode_label_selector(rs.selector)
    spec["template"] = encode_template(rs.template)
    status: dict[str, Any] = {"replicas": rs.status.replicas}
    put(status, "fullyLabeledReplicas", rs.status.fully_labeled_replicas or None)
    put(status, "readyReplicas", rs.status.ready_replicas or None)
    put(status, "availableReplicas", rs.status.available_replicas or None)
    put(status, "observedGeneration", rs.status.observed_generation or None)
    body["status"] = status


def overlay_deployment(deployment: Deployment, body: dict[str, Any]) -> None:
    spec = child(body, "spec")
    spec["replicas"] = deployment.replicas
    if deployment.selector is not None:
        spec["selector"] = encode_label_selector(deployment.selector)
    spec["template"] = encode_template(deployment.template)
    strategy: dict[str, Any] = {"type": deployment.strategy}
    if deployment.strategy == ROLLING_UPDATE:
        strategy["rollingUpdate"] = {"maxSurge": deployment.max_surge, "maxUnavailable": deployment.max_unavailable}
    spec["strategy"] = strategy
    status: dict[str, Any] = {}
    s = deployment.status
    put(status, "observedGeneration", s.observed_generation or None)
    put(status, "replicas", s.replicas or None)
    put(status, "updatedReplicas", s.updated_replicas or None)
    put(status, "readyReplicas", s.ready_replicas or None)
    put(status, "availableReplicas", s.available_replicas or None)
    put(status, "unavailableReplicas", s.unavailable_replicas or None)
    body["status"] = status


# --- Job ------------------------------------------------------------------------------------------------


def _pod_failure_policy(spec: dict[str, Any], errors: list[FieldError]) -> tuple[PodFailurePolicyRule, ...] | None:
    policy = get_object(spec, "podFailurePolicy", "spec")
    if policy is None:
        return None
    rules = []
    for path, item in get_items(policy, "rules", "spec.podFailurePolicy"):
        action = get_string(item, "action", path)
        codes = get_object(item, "onExitCodes", path)
        on_exit_codes = None
        if codes is not None:
            values_path = f"{path}.onExitCodes.values"
            values = tuple(
                as_int(v, f"{values_path}[{i}]", INT32, "int32")
                for i, v in enumerate(get_array(codes, "values", f"{path}.onExitCodes"))
            )
            on_exit_codes = (get_string(codes, "operator", f"{path}.onExitCodes"), values)
        conditions = tuple(
            (get_string(c, "type", c_path), get_string(c, "status", c_path) or "True")
            for c_path, c in get_items(item, "onPodConditions", path)
        )
        errors.extend(validate_pod_failure_policy_rule(action, on_exit_codes, conditions, path))
        rules.append(PodFailurePolicyRule(action, on_exit_codes, conditions))
    return tuple(rules)


def decode_job(manifest: dict[str, Any], errors: list[FieldError]) -> Job:
    metadata = decode_meta(manifest, errors, namespaced=True)
    spec = get_object(manifest, "spec", "") or {}
    manifest["spec"] = spec
    parallelism = get_int32(spec, "parallelism", "spec")
    completions = get_int32(spec, "completions", "spec")
    backoff_limit = get_int32(spec, "backoffLimit", "spec")
    deadline = get_int64(spec, "activeDeadlineSeconds", "spec")
    errors.extend(non_negative_errors(parallelism, "spec.parallelism"))
    errors.extend(non_negative_errors(completions, "spec.completions"))
    errors.extend(non_negative_errors(backoff_limit, "spec.backoffLimit"))
    errors.extend(positive_errors(deadline, "spec.activeDeadlineSeconds"))
    policy = _pod_failure_policy(spec, errors)
    template = decode_template(spec, metadata.namespace, errors)
    restart_policy = template_restart_policy(template)
    errors.extend(
        template_restart_policy_errors(restart_policy, ("OnFailure", "Never"), "spec.template.spec.restartPolicy")
    )
    if policy is not None and restart_policy == "OnFailure":
        errors.append(
            invalid(
                "spec.template.spec.restartPolicy",
                restart_policy,
                'only "Never" is supported when podFailurePolicy is specified',
            )
        )
    # Defaulting (SetDefaults_Job): both unset -> 1 and 1; parallelism alone defaults to 1.
    if completions is None and parallelism is None:
        completions = 1
    status = get_object(manifest, "status", "") or {}
    conditions = tuple(
        JobCondition(
            get_string(c, "type", path),
            get_string(c, "status", path),
            get_string(c, "reason", path),
            get_string(c, "message", path),
            get_timestamp(c, "lastTransitionTime", path, errors),
        )
        for path, c in get_items(status, "conditions", "status")
    )
    return Job(
        metadata,
        1 if parallelism is None else parallelism,
        completions,
        DEFAULT_BACKOFF_LIMIT if backoff_limit is None else backoff_limit,
        deadline,
        policy,
        None,
        template,
        JobStatus(
            active=get_int32(status, "active", "status") or 0,
            succeeded=get_int32(status, "succeeded", "status") or 0,
            failed=get_int32(status, "failed", "status") or 0,
            ready=get_int32(status, "ready", "status") or 0,
            start_time=get_timestamp(status, "startTime", "status", errors),
            completion_time=get_timestamp(status, "completionTime", "status", errors),
            conditions=conditions,
        ),
        source=manifest,
    )


def _encode_rule(rule: PodFailurePolicyRule) -> dict[str, Any]:
    out: dict[str, Any] = {"action": rule.action}
    if rule.on_exit_codes is not None:
        out["onExitCodes"] = {"operator": rule.on_exit_codes[0], "values": list(rule.on_exit_codes[1])}
    if rule.on_pod_conditions:
        out["onPodConditions"] = [{"type": t, "status": s} for t, s in rule.on_pod_conditions]
    return out


def overlay_job(job: Job, body: dict[str, Any]) -> None:
    spec = child(body, "spec")
    spec["parallelism"] = job.parallelism
    put(spec, "completions", job.completions)
    spec["backoffLimit"] = job.backoff_limit
    put(spec, "activeDeadlineSeconds", job.active_deadline_seconds)
    if job.pod_failure_policy is not None:
        spec["podFailurePolicy"] = {"rules": [_encode_rule(rule) for rule in job.pod_failure_policy]}
    if job.metadata.uid:
        spec["selector"] = {"matchLabels": {JOB_CONTROLLER_UID_LABEL: job.metadata.uid}}
    template = encode_template(job.template)
    if job.metadata.uid:
        labels = child(child(template, "metadata"), "labels")
        labels.update({JOB_CONTROLLER_UID_LABEL: job.metadata.uid, JOB_NAME_LABEL: job.metadata.name})
    spec["template"] = template
    s = job.status
    status: dict[str, Any] = {}
    put(
        status,
        "conditions",
        [
            {
                "type": c.type,
                "status": c.status,
                **({"reason": c.reason} if c.reason else {}),
                **({"message": c.message} if c.message else {}),
                **({"lastTransitionTime": timestamp_text(c.last_transition_time)} if c.last_transition_time else {}),
            }
            for c in s.conditions
        ],
    )
    put(status, "startTime", timestamp_text(s.start_time))
    put(status, "completionTime", timestamp_text(s.completion_time))
    put(status, "active", s.active or None)
    put(status, "succeeded", s.succeeded or None)
    put(status, "failed", s.failed or None)
    if s.start_time is not None:
        status["ready"] = s.ready
    body["status"] = status
