"""ResourceQuota: what a pod uses, which quotas cover it, and the admission check on pod CREATE,
as upstream has them.

Upstream splits this between the pod evaluator (pkg/quota/v1/evaluator/core/pods.go: usage,
scopes, the "must specify" constraints), the generic quota helpers (Matches, Mask, LessThanOrEqual)
and the ResourceQuota admission plugin (staging/src/k8s.io/apiserver/pkg/admission/plugin/
resourcequota/controller.go, CheckRequest, with its ResourceQuotaConfiguration of limitedResources).
Here they are pure functions over typed objects; the caller (`Cluster`) owns the quotas and keeps
each quota's status.used current as pods come and go (see `quota_usage`).

Quantities are exact (`Fraction`) in base units: CPU in cores, memory in bytes, counts as counts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import yaml

from podsched.admission.priority import SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL
from podsched.api.errors import REASON_UNKNOWN, ApiError, FieldError
from podsched.api.manifests import render_quota_quantity
from podsched.api.types import (
    KIND_POD,
    POD_FAILED,
    POD_SUCCEEDED,
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    Container,
    Pod,
    ResourceQuota,
    ScopedResourceSelectorRequirement,
)
from podsched.api.validation import (
    COMPUTE_QUOTA_RESOURCES,
    SCOPE_BEST_EFFORT,
    SCOPE_CROSS_NAMESPACE_POD_AFFINITY,
    SCOPE_NOT_BEST_EFFORT,
    SCOPE_NOT_TERMINATING,
    SCOPE_PRIORITY_CLASS,
    SCOPE_TERMINATING,
    is_extended_resource,
    is_hugepages_resource,
    required,
    scope_requirement_errors,
)
from podsched.framework.resource import pod_limit_map, pod_request_map

POD_OBJECT_COUNT = "count/pods"
NAMESPACE_SYSTEM = "kube-system"
_REQUESTS_PREFIX = "requests."

# podResources and podResourcePrefixes: what a quota can constrain about pods.
POD_QUOTA_RESOURCES = frozenset({POD_OBJECT_COUNT, RESOURCE_PODS, *COMPUTE_QUOTA_RESOURCES})
_POD_QUOTA_PREFIXES = ("hugepages-", "requests.hugepages-")
# The backward-compatibility mistake upstream keeps: quota on these makes every container state them.
_VALIDATION_SET = frozenset(
    {RESOURCE_CPU, RESOURCE_MEMORY, "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
_CPU_RESOURCES = frozenset({RESOURCE_CPU, "requests.cpu", "limits.cpu"})

# --- the admission configuration --------------------------------------------------------------------

ADMISSION_CONFIGURATION = "AdmissionConfiguration"
RESOURCE_QUOTA_CONFIGURATION = "ResourceQuotaConfiguration"
PLUGIN_NAME = "ResourceQuota"
_ADMISSION_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1", "apiserver.k8s.io/v1alpha1")
# (apiVersion, kind) of the plugin's own configuration, the current one first.
_QUOTA_CONFIG_TYPES = (
    ("apiserver.config.k8s.io/v1", RESOURCE_QUOTA_CONFIGURATION),
    ("apiserver.config.k8s.io/v1beta1", RESOURCE_QUOTA_CONFIGURATION),
    ("apiserver.config.k8s.io/v1alpha1", RESOURCE_QUOTA_CONFIGURATION),
    ("resourcequota.admission.k8s.io/v1beta1", "Configuration"),
    ("resourcequota.admission.k8s.io/v1alpha1", "Configuration"),
)


@dataclass(frozen=True, slots=True)
class LimitedResource:
    """One limitedResources entry: objects of `resource` that consume a resource whose name contains
    one of `match_contains`, or that match one of `match_scopes`, are admitted only in a namespace
    with a quota covering them."""

    resource: str
    api_group: str = ""
    match_contains: tuple[str, ...] = ()
    match_scopes: tuple[ScopedResourceSelectorRequirement, ...] = ()


# Kubernetes' documented way to keep the critical classes to kube-system ("Limit Priority Class
# consumption by default"), which podsched applies even without a configuration file: pods of these
# classes need a covering quota outside kube-system; inside it they are always admitted (as if the
# namespace had the unlimited quota GKE and kube-up install there).
CRITICAL_CLASSES_LIMITED = LimitedResource(
    RESOURCE_PODS,
    match_scopes=(
        ScopedResourceSelectorRequirement(SCOPE_PRIORITY_CLASS, "In", (SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL)),
    ),
)


@dataclass(frozen=True, slots=True)
class QuotaAdmissionConfig:
    """The ResourceQuota plugin's configuration. `protect_critical_classes` adds
    CRITICAL_CLASSES_LIMITED outside kube-system."""

    limited_resources: tuple[LimitedResource, ...] = ()
    protect_critical_classes: bool = True

    def limited_for(self, namespace: str) -> tuple[LimitedResource, ...]:
        """The limitedResources that apply in `namespace`."""
        if (
            not self.protect_critical_classes
            or namespace == NAMESPACE_SYSTEM
            or CRITICAL_CLASSES_LIMITED in self.limited_resources
        ):
            return self.limited_resources
        return (*self.limited_resources, CRITICAL_CLASSES_LIMITED)


def _config_error(kind: str, source: str, errors: list[FieldError]) -> ApiError:
    return ApiError.invalid(kind, source, errors)


def _limited_resources(doc: Mapping[str, Any], source: str) -> tuple[LimitedResource, ...]:
    """A ResourceQuotaConfiguration's limitedResources, validated (upstream requires `resource`;
    podsched also checks each matchScopes entry, which upstream would only trip over at admission)."""
    errors: list[FieldError] = []
    entries = doc.get("limitedResources") or []
    if not isinstance(entries, list):
        raise _config_error(RESOURCE_QUOTA_CONFIGURATION, source, [FieldError("limitedResources", "must be a list")])
    limited: list[LimitedResource] = []
    for index, entry in enumerate(entries):
        path = f"limitedResources[{index}]"
        if not isinstance(entry, dict):
            errors.append(FieldError(path, "must be an object", entry))
            continue
        resource = entry.get("resource")
        if not resource or not isinstance(resource, str):
            errors.append(required(f"{path}.resource"))
            resource = ""
        contains = entry.get("matchContains") or []
        if not isinstance(contains, list) or not all(isinstance(c, str) for c in contains):
            errors.append(FieldError(f"{path}.matchContains", "must be a list of strings"))
            contains = []
        scopes: list[ScopedResourceSelectorRequirement] = []
        raw_scopes = entry.get("matchScopes") or []
        if not isinstance(raw_scopes, list):
            errors.append(FieldError(f"{path}.matchScopes", "must be a list"))
            raw_scopes = []
        for scope_index, raw in enumerate(raw_scopes):
            scope_path = f"{path}.matchScopes[{scope_index}]"
            values = raw.get("values") if isinstance(raw, dict) else None
            if (
                not isinstance(raw, dict)
                or not isinstance(raw.get("scopeName"), str)
                or not isinstance(raw.get("operator"), str)
                or not (values is None or (isinstance(values, list) and all(isinstance(v, str) for v in values)))
            ):
                errors.append(FieldError(scope_path, "must have a scopeName, an operator and string values"))
                continue
            requirement = ScopedResourceSelectorRequirement(raw["scopeName"], raw["operator"], tuple(values or ()))
            errors.extend(scope_requirement_errors(requirement, scope_path))
            scopes.append(requirement)
        api_group = entry.get("apiGroup") or ""
        limited.append(LimitedResource(resource, str(api_group), tuple(contains), tuple(scopes)))
    if errors:
        raise _config_error(RESOURCE_QUOTA_CONFIGURATION, source, errors)
    return tuple(limited)


def parse_admission_config(
    text: str, source: str = "admission-config", read_file: Callable[[str], str] | None = None
) -> QuotaAdmissionConfig:
    """An `apiserver.config.k8s.io/v1` AdmissionConfiguration (what kube-apiserver's
    --admission-control-config-file takes), or the ResourceQuota plugin's own
    ResourceQuotaConfiguration. Only the ResourceQuota plugin is read; its configuration is inline
    (`configuration:`) or in a file (`path:`, read with `read_file`, relative paths resolved by the
    caller). Raises ApiError naming the field."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ApiError.bad_request(ADMISSION_CONFIGURATION, source, f"error parsing {source}: {error}") from error
    if not isinstance(doc, dict):
        raise _config_error(ADMISSION_CONFIGURATION, source, [FieldError("<root>", "must be an object")])
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if (api_version, kind) in _QUOTA_CONFIG_TYPES:
        return QuotaAdmissionConfig(_limited_resources(doc, source))
    if kind != ADMISSION_CONFIGURATION or api_version not in _ADMISSION_VERSIONS:
        detail = f'no kind "{kind}" is registered for version "{api_version}"; expected {_ADMISSION_VERSIONS[0]} '
        raise ApiError.bad_request(
            str(kind or ADMISSION_CONFIGURATION),
            source,
            detail + f"{ADMISSION_CONFIGURATION} or {_QUOTA_CONFIG_TYPES[0][0]} {RESOURCE_QUOTA_CONFIGURATION}",
        )
    plugins = doc.get("plugins") or []
    if not isinstance(plugins, list):
        raise _config_error(ADMISSION_CONFIGURATION, source, [FieldError("plugins", "must be a list")])
    for index, plugin in enumerate(plugins):
        if not isinstance(plugin, dict) or plugin.get("name") != PLUGIN_NAME:
            continue
        configuration = plugin.get("configuration")
        if configuration is None and plugin.get("path"):
            if read_file is None:
                raise _config_error(
                    ADMISSION_CONFIGURATION, source, [FieldError(f"plugins[{index}].path", "cannot be read here")]
                )
            return parse_admission_config(read_file(str(plugin["path"])), str(plugin["path"]), read_file)
        if not isinstance(configuration, dict):
            raise _config_error(
                ADMISSION_CONFIGURATION,
                source,
                [required(f"plugins[{index}].configuration", "or path, for the ResourceQuota plugin")],
            )
        if (configuration.get("apiVersion"), configuration.get("kind")) not in _QUOTA_CONFIG_TYPES:
            detail = f"must be {_QUOTA_CONFIG_TYPES[0][0]} {RESOURCE_QUOTA_CONFIGURATION}"
            raise _config_error(
                ADMISSION_CONFIGURATION, source, [FieldError(f"plugins[{index}].configuration", detail)]
            )
        return QuotaAdmissionConfig(_limited_resources(configuration, source))
    return QuotaAdmissionConfig()


def load_admission_config(path: str) -> QuotaAdmissionConfig:
    """The file PODSCHED_ADMISSION_CONFIG or `simulate --admission-config` names (a plugin's `path:`
    is relative to it, as kube-apiserver resolves it); empty for the defaults. Raises ApiError or
    OSError."""
    if not path:
        return QuotaAdmissionConfig()
    base = os.path.dirname(os.path.abspath(path))

    def read(name: str) -> str:
        with open(os.path.join(base, name), encoding="utf-8") as handle:
            return handle.read()

    with open(path, encoding="utf-8") as handle:
        return parse_admission_config(handle.read(), path, read)


# --- what a pod uses ----------------------------------------------------------------------------------


def _base_units(name: str, canonical: int) -> Fraction:
    """A pod's canonical amount (CPU in millicores) in a quota's base units (CPU in cores)."""
    return Fraction(canonical, 1000) if name == RESOURCE_CPU else Fraction(canonical)


def compute_usage(requests: Mapping[str, int], limits: Mapping[str, int]) -> dict[str, Fraction]:
    """podComputeUsageHelper: `pods` 1, each stated request under its bare and `requests.` names,
    each stated limit under `limits.`, hugepages and extended resources under `requests.`."""
    usage: dict[str, Fraction] = {RESOURCE_PODS: Fraction(1)}
    for name in (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE):
        if name in requests:
            usage[name] = usage[_REQUESTS_PREFIX + name] = _base_units(name, requests[name])
        if name in limits:
            usage["limits." + name] = _base_units(name, limits[name])
    for name, value in requests.items():
        if is_hugepages_resource(name):
            usage[name] = usage[_REQUESTS_PREFIX + name] = Fraction(value)
        elif is_extended_resource(name):
            usage[_REQUESTS_PREFIX + name] = Fraction(value)
    return usage


def pod_counts_for_compute(pod: Pod) -> bool:
    """QuotaV1Pod: a terminal pod (Succeeded, Failed) no longer uses compute quota. Upstream also
    stops charging a pod once its deletion grace period has passed; podsched's node agent removes a
    terminating pod exactly then (deletionTimestamp + grace), so the pod's removal releases it and
    usage stays a function of the stored pods alone (every replica computes the same)."""
    return pod.status.phase not in (POD_SUCCEEDED, POD_FAILED)


def pod_usage(pod: Pod) -> dict[str, Fraction]:
    """PodUsageFunc: `count/pods` while the pod is stored, plus its compute usage while it counts."""
    usage = {POD_OBJECT_COUNT: Fraction(1)}
    if pod_counts_for_compute(pod):
        usage.update(compute_usage(pod_request_map(pod), pod_limit_map(pod)))
    return usage


def matching_resources(names: Iterable[str]) -> list[str]:
    """MatchingResources: the names of `names` a pod can use."""
    return [
        name
        for name in names
        if name in POD_QUOTA_RESOURCES
        or name.startswith(_POD_QUOTA_PREFIXES)
        or (name.startswith(_REQUESTS_PREFIX) and "/" in name and "kubernetes.io/" not in name)
    ]


# --- scopes -------------------------------------------------------------------------------------------


def _is_best_effort(pod: Pod) -> bool:
    """QoS BestEffort: no container states a non-zero cpu or memory request or limit."""
    for container in (*pod.spec.containers, *pod.spec.init_containers):
        for name, value in (*container.requests, *container.limits):
            if name in (RESOURCE_CPU, RESOURCE_MEMORY) and value:
                return False
    return True


def _is_terminating(pod: Pod) -> bool:
    """spec.activeDeadlineSeconds >= 0 (podsched does not model the field; it reads the manifest)."""
    spec = pod.source.get("spec") if isinstance(pod.source, dict) else None
    deadline = spec.get("activeDeadlineSeconds") if isinstance(spec, dict) else None
    return isinstance(deadline, int) and not isinstance(deadline, bool) and deadline >= 0


def _uses_cross_namespace_pod_affinity(pod: Pod) -> bool:
    affinity = pod.spec.affinity
    if affinity is None:
        return False
    for group in (affinity.pod_affinity, affinity.pod_anti_affinity):
        if group is None:
            continue
        terms = (*group.required, *(weighted.term for weighted in group.preferred))
        if any(term.namespaces or term.namespace_selector is not None for term in terms):
            return True
    return False


def pod_matches_scope(requirement: ScopedResourceSelectorRequirement, pod: Pod) -> bool:
    """podMatchesScopeFunc. PriorityClass matches as a label selector over {PriorityClass: <name>},
    the map empty for a pod without a class: so `NotIn` and `DoesNotExist` match such a pod, `In`
    and `Exists` do not."""
    scope = requirement.scope_name
    if scope == SCOPE_TERMINATING:
        return _is_terminating(pod)
    if scope == SCOPE_NOT_TERMINATING:
        return not _is_terminating(pod)
    if scope == SCOPE_BEST_EFFORT:
        return _is_best_effort(pod)
    if scope == SCOPE_NOT_BEST_EFFORT:
        return not _is_best_effort(pod)
    if scope == SCOPE_CROSS_NAMESPACE_POD_AFFINITY:
        return _uses_cross_namespace_pod_affinity(pod)
    if scope != SCOPE_PRIORITY_CLASS:
        return False
    name = pod.spec.priority_class_name
    operator = requirement.operator
    if operator == "Exists":
        return bool(name)
    if operator == "DoesNotExist":
        return not name
    if operator == "In":
        return bool(name) and name in requirement.values
    if operator == "NotIn":
        return not name or name not in requirement.values
    return False


def matching_scopes(
    pod: Pod, requirements: Iterable[ScopedResourceSelectorRequirement]
) -> list[ScopedResourceSelectorRequirement]:
    """MatchingScopes: the requirements the pod matches."""
    return [requirement for requirement in requirements if pod_matches_scope(requirement, pod)]


def quota_matches_pod(quota: ResourceQuota, pod: Pod) -> bool:
    """generic.Matches: the quota constrains a resource pods use, and the pod matches every scope
    (a quota without scopes matches every pod)."""
    return bool(matching_resources(quota.hard)) and all(
        pod_matches_scope(requirement, pod) for requirement in quota.scope_requirements
    )


def quota_usage(quota: ResourceQuota, pods: Iterable[Pod]) -> dict[str, Fraction]:
    """status.used as the quota controller computes it: every hard resource, 0 unless the pods
    matching the quota's scopes use it (podsched stores no other kinds quota counts)."""
    used = dict.fromkeys(quota.hard, Fraction(0))
    tracked = matching_resources(quota.hard)
    for pod in pods:
        if pod.namespace == quota.namespace and quota_matches_pod(quota, pod):
            add_usage(used, pod_usage(pod), tracked, 1)
    return used


def add_usage(used: dict[str, Fraction], usage: Mapping[str, Fraction], names: Iterable[str], sign: int) -> None:
    """used[name] += sign * usage[name] for each of `names` the usage has (quota.Add of a Mask)."""
    for name in names:
        amount = usage.get(name)
        if amount:
            used[name] = used.get(name, Fraction(0)) + sign * amount


# --- admission ----------------------------------------------------------------------------------------


def _constraint_error(required_names: Iterable[str], pod: Pod) -> str | None:
    """podEvaluator.Constraints: when a quota constrains cpu or memory, every container must state
    the request (or limit) it constrains: `must specify limits.cpu for: app; requests.cpu for: app,init`."""
    required_set = set(required_names) & _VALIDATION_SET
    if not required_set:
        return None
    missing: dict[str, set[str]] = {}

    def check(container: Container) -> None:
        stated = compute_usage(dict(container.requests), dict(container.limits))
        for name in required_set - stated.keys():
            missing.setdefault(name, set()).add(container.name)

    for container in (*pod.spec.containers, *pod.spec.init_containers):
        check(container)
    if not missing:
        return None
    return "must specify " + "; ".join(f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing))


def _pretty(usage: Mapping[str, Fraction], names: Iterable[str], quota: ResourceQuota | None = None) -> str:
    """prettyPrint of a masked ResourceList: `pods=1,requests.cpu=3`, names sorted."""
    binary = quota.binary_hard if quota is not None else frozenset()
    return ",".join(
        f"{name}={render_quota_quantity(name, usage.get(name, Fraction(0)), (name in binary) if quota else None)}"
        for name in sorted(names)
    )


def _forbidden(pod: Pod, detail: str) -> ApiError:
    return ApiError.forbidden(KIND_POD, pod.name, detail, pod.namespace)


def _limits_by_name(entry: LimitedResource) -> bool:
    """Whether a limitedResources entry limits pods' resources by name (matchContains)."""
    return not entry.api_group and entry.resource == RESOURCE_PODS and bool(entry.match_contains)


def _limited_names(usage: Mapping[str, Fraction], limited: Sequence[LimitedResource]) -> set[str]:
    """limitedByDefault: used resources whose name contains a limitedResources matchContains."""
    names: set[str] = set()
    for entry in limited:
        if not _limits_by_name(entry):
            continue
        for name, amount in usage.items():
            if amount > 0 and any(fragment in name for fragment in entry.match_contains):
                names.add(name)
    return names


def check_pod_create(pod: Pod, quotas: Sequence[ResourceQuota], config: QuotaAdmissionConfig) -> None:
    """CheckRequest for a pod CREATE against the quotas of its namespace (in name order, each with
    its current status.used). Upstream only charges creates: updates never come here.

    1. Configured limitedResources: the scopes the pod matches must each be covered, and every
       resource it uses whose name contains a matchContains fragment must be constrained, by a
       quota of the namespace.
    2. Every quota matching the pod (scopes, and a resource pods use) is pertinent: the pod must
       state what the quota's cpu/memory resources require (`failed quota: q: must specify ...`).
    3. Limited resources without a covering quota: `insufficient quota to consume: requests.cpu`;
       limited scopes without one: `insufficient quota to match these scopes: [{PriorityClass In
       [high]}]` (upstream returns this one as a plain error: no reason, HTTP 500).
    4. Each pertinent quota must have room for the pod on every resource it constrains, else
       `exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2` naming the exceeded
       resources only.

    Raises ApiError; returns None when the pod is admitted."""
    limited = config.limited_for(pod.namespace)
    limited_scopes = [scope for entry in limited for scope in matching_scopes(pod, entry.match_scopes)]
    if not quotas and not limited_scopes and not any(_limits_by_name(entry) for entry in limited):
        return  # no quota to charge, nothing limited that would need one: the common case, kept cheap
    input_usage = pod_usage(pod)
    limited_names = _limited_names(input_usage, limited)

    pertinent: list[ResourceQuota] = []
    restricted_names: set[str] = set()
    restricted_scopes: list[ScopedResourceSelectorRequirement] = []
    for quota in quotas:
        restricted_scopes.extend(matching_scopes(pod, quota.scope_requirements))
        if not quota_matches_pod(quota, pod):
            continue
        restricted = matching_resources(quota.hard)
        problem = _constraint_error(restricted, pod)
        if problem is not None:
            raise _forbidden(pod, f"failed quota: {quota.name}: {problem}")
        pertinent.append(quota)
        restricted_names.update(restricted)

    delta = {name: amount for name, amount in input_usage.items() if amount}
    if not delta:
        return
    uncovered_names = limited_names - restricted_names
    if uncovered_names:
        raise _forbidden(pod, f"insufficient quota to consume: {','.join(sorted(uncovered_names))}")
    covered = {scope.scope_name for scope in restricted_scopes}
    uncovered = [scope for scope in limited_scopes if scope.scope_name not in covered]
    if uncovered:
        detail = f"insufficient quota to match these scopes: [{' '.join(str(scope) for scope in uncovered)}]"
        raise ApiError(REASON_UNKNOWN, KIND_POD, pod.name, detail, pod.namespace)

    for quota in pertinent:
        hard = quota.status.hard or quota.hard
        used = quota.status.used
        requested = {name: amount for name, amount in delta.items() if name in hard}
        exceeded = [name for name, amount in requested.items() if used.get(name, Fraction(0)) + amount > hard[name]]
        if exceeded:
            raise _forbidden(
                pod,
                f"exceeded quota: {quota.name}, requested: {_pretty(requested, exceeded)}, "
                f"used: {_pretty(used, exceeded)}, limited: {_pretty(hard, exceeded, quota)}",
            )
