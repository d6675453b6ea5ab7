"""ResourceQuota: decoding and validation (upstream's ValidateResourceQuota wording), scope matching
(pkg/quota/v1/evaluator/core/pods.go), admission on pod create (the ResourceQuota admission plugin's
CheckRequest: constraints, limitedResources, exceeded quota), the critical-class default, usage kept
as pods come, terminate and go, and the same rules in `podsched simulate`."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import make_pod
from clocks import FakeClock
from podsched.admission.resource_quota import (
    LimitedResource,
    QuotaAdmissionConfig,
    load_admission_config,
    parse_admission_config,
    pod_matches_scope,
    pod_usage,
)
from podsched.api.errors import REASON_FORBIDDEN, REASON_INVALID, REASON_UNKNOWN, ApiError
from podsched.api.manifests import decode_object, encode_object
from podsched.api.types import POD_FAILED, Pod, ResourceQuota, ScopedResourceSelectorRequirement
from podsched.cluster.admission import CONFIGURED, CREATED, UNCHANGED
from podsched.cluster.dry_run import admit_without_storing
from podsched.cluster.state import Cluster
from podsched.cluster.store import REMOVED
from podsched.simulator.engine import Simulator
from podsched_cli import output
from podsched_cli.main import main
from podsched_cli.resources import RESOURCE_QUOTA, resource_type

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
TENANT = "team-a"
HIGH = "high-priority"
LOW = "low-priority"
CRITICAL = "system-cluster-critical"
NODE_CRITICAL = "system-node-critical"
KUBE_SYSTEM = "kube-system"
PODS_HIGH_SCOPE = {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": [HIGH]}]}
HIGH_ONLY = QuotaAdmissionConfig(
    (LimitedResource("pods", match_scopes=(ScopedResourceSelectorRequirement("PriorityClass", "In", (HIGH,)),)),)
)


# --- manifests ------------------------------------------------------------------------------------------


def quota_doc(
    name: str = "q1",
    hard: dict[str, Any] | None = None,
    *,
    namespace: str = TENANT,
    selector: dict[str, Any] | None = None,
    scopes: list[str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"hard": hard if hard is not None else {"pods": "2"}}
    if selector is not None:
        spec["scopeSelector"] = selector
    if scopes is not None:
        spec["scopes"] = scopes
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def class_doc(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def pod_doc(
    name: str,
    priority_class: str = HIGH,
    cpu: str | None = "1",
    *,
    namespace: str = TENANT,
    memory: str | None = None,
    limits: dict[str, str] | None = None,
    node: str = "",
    grace: int = 30,
    phase: str = "",
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "pause", "resources": resources}],
        "terminationGracePeriodSeconds": grace,
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node:
        spec["nodeName"] = node
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if phase:
        doc["status"] = {"phase": phase}
    return doc


def node_doc(name: str, cpu: str = "8") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"capacity": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
    }


def cluster(config: QuotaAdmissionConfig | None = None, *docs: dict[str, Any]) -> tuple[Cluster, FakeClock]:
    clock = FakeClock(NOW)
    c = Cluster(clock, quota_admission=config)
    for doc in (class_doc(HIGH, 1000), class_doc(LOW, 10), *docs):
        c.apply(decode_object(doc))
    return c, clock


def refusal(c: Cluster, doc: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as caught:
        c.apply(decode_object(doc))
    return caught.value


def used(c: Cluster, name: str = "q1", namespace: str = TENANT) -> dict[str, str]:
    return dict(encode_object(c.resource_quotas[(namespace, name)])["status"]["used"])


# --- decoding and validation ------------------------------------------------------------------------------


def test_a_quota_decodes_with_exact_hard_values_and_canonical_json() -> None:
    quota = decode_object(
        quota_doc(hard={"pods": "2", "requests.cpu": "1500m", "memory": "1Gi", "requests.nvidia.com/gpu": 4})
    )
    assert isinstance(quota, ResourceQuota)
    assert quota.hard == {
        "pods": 2,
        "requests.cpu": Fraction(3, 2),
        "memory": 2**30,
        "requests.nvidia.com/gpu": 4,
    }
    assert quota.scope_selector is None and quota.namespace == TENANT
    encoded = encode_object(quota)
    assert encoded["spec"]["hard"] == {
        "pods": "2",
        "requests.cpu": "1500m",
        "memory": "1Gi",
        "requests.nvidia.com/gpu": "4",
    }
    assert decode_object(encoded) == quota


def test_a_quota_in_no_namespace_lands_in_default_and_its_status_is_dropped() -> None:
    doc = quota_doc()
    del doc["metadata"]["namespace"]
    doc["status"] = {"used": {"pods": "7"}}
    quota = decode_object(doc)
    assert isinstance(quota, ResourceQuota)
    assert quota.namespace == "default" and quota.status.used == {}


@pytest.mark.parametrize(
    ("case", "doc", "message"),
    [
        (
            "In without values",
            quota_doc(selector={"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In"}]}),
            'ResourceQuota "q1" is invalid: spec.scopeSelector.matchExpressions.values: Required value: must be at '
            "least one value when `operator` is 'In' or 'NotIn' for scope selector",
        ),
        (
            "NotIn without values",
            quota_doc(
                selector={"matchExpressions": [{"scopeName": "PriorityClass", "operator": "NotIn", "values": []}]}
            ),
            'ResourceQuota "q1" is invalid: spec.scopeSelector.matchExpressions.values: Required value: must be at '
            "least one value when `operator` is 'In' or 'NotIn' for scope selector",
        ),
        (
            "Exists with values",
            quota_doc(
                selector={"matchExpressions": [{"scopeName": "PriorityClass", "operator": "Exists", "values": [HIGH]}]}
            ),
            'ResourceQuota "q1" is invalid: spec.scopeSelector.matchExpressions.values: Invalid value: '
            "[\"high-priority\"]: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
        ),
        (
            "DoesNotExist with values",
            quota_doc(
                selector={
                    "matchExpressions": [{"scopeName": "PriorityClass", "operator": "DoesNotExist", "values": ["x"]}]
                }
            ),
            'ResourceQuota "q1" is invalid: spec.scopeSelector.matchExpressions.values: Invalid value: ["x"]: '
            "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
        ),
        (
            "an unknown operator",
            quota_doc(
                selector={"matchExpressions": [{"scopeName": "PriorityClass", "operator": "Equals", "values": ["x"]}]}
            ),
            'ResourceQuota "q1" is invalid: spec.scopeSelector.matchExpressions.operator: Invalid value: "Equals": '
            "not a valid selector operator",
        ),
        (
            "an unknown scope in the selector",
            quota_doc(selector={"matchExpressions": [{"scopeName": "Team", "operator": "Exists"}]}),
            'ResourceQuota "q1" is invalid: spec.scopeSelector.matchExpressions.scopeName: Invalid value: "Team": '
            "unsupported scope",
        ),
        (
            "a scope that only takes Exists",
            quota_doc(selector={"matchExpressions": [{"scopeName": "BestEffort", "operator": "In", "values": ["x"]}]}),
            'ResourceQuota "q1" is invalid: spec.scopeSelector.matchExpressions.operator: Invalid value: "In": must be '
            "'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
            "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
            "ResourceQuotaScopeCrossNamespacePodAffinity",
        ),
        (
            "an unknown scope in spec.scopes",
            quota_doc(scopes=["Team"]),
            'ResourceQuota "q1" is invalid: spec.scopes: Invalid value: ["Team"]: unsupported scope',
        ),
        (
            "conflicting scopes",
            quota_doc(scopes=["BestEffort", "NotBestEffort"]),
            'ResourceQuota "q1" is invalid: spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: '
            "conflicting scopes",
        ),
        (
            "a scope that cannot apply to a resource",
            quota_doc(hard={"requests.ephemeral-storage": "1Gi"}, selector=PODS_HIGH_SCOPE),
            'ResourceQuota "q1" is invalid: spec.scopeSelector.matchExpressions: Invalid value: {"MatchExpressions":'
            '[{"ScopeName":"PriorityClass","Operator":"In","Values":["high-priority"]}]}: unsupported scope applied '
            "to resource",
        ),
        (
            "an unknown resource",
            quota_doc(hard={"gpus": "1"}),
            'ResourceQuota "q1" is invalid: [spec.hard[gpus]: Invalid value: "gpus": must be a standard resource type '
            'or fully qualified, spec.hard[gpus]: Invalid value: "gpus": must be a standard resource for quota]',
        ),
        (
            "a known resource quota does not track",
            quota_doc(hard={"storage": "1Gi"}),
            'ResourceQuota "q1" is invalid: spec.hard[storage]: Invalid value: "storage": must be a standard '
            "resource for quota",
        ),
        (
            "a fractional pod count",
            quota_doc(hard={"pods": "1.5"}),
            'ResourceQuota "q1" is invalid: spec.hard[pods]: Invalid value: "1500m": must be an integer',
        ),
        (
            "a negative cpu",
            quota_doc(hard={"requests.cpu": "-1"}),
            'ResourceQuota "q1" is invalid: spec.hard[requests.cpu]: Invalid value: "-1": must be greater than or '
            "equal to 0",
        ),
        (
            "a value that is no quantity",
            quota_doc(hard={"requests.cpu": "lots"}),
            'ResourceQuota "q1" is invalid: spec.hard[requests.cpu]: Invalid value: "lots": quantities must match '
            "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            "no name",
            {**quota_doc(), "metadata": {"namespace": TENANT}},
            'ResourceQuota "" is invalid: metadata.name: Required value: name or generateName is required',
        ),
    ],
)
def test_bad_quotas_are_invalid_with_upstreams_field_errors(case: str, doc: dict[str, Any], message: str) -> None:
    c, _ = cluster()
    with pytest.raises(ApiError) as caught:
        c.apply(decode_object(doc))
    assert caught.value.reason == REASON_INVALID
    assert caught.value.message == message
    assert c.resource_quotas == {}, "a refused quota changes nothing"


def test_a_wrong_json_type_cannot_be_decoded() -> None:
    doc = quota_doc()
    doc["spec"]["scopes"] = "PriorityClass"
    with pytest.raises(ApiError, match=r"cannot unmarshal string into Go struct field spec\.scopes of type array"):
        decode_object(doc)


def test_scopes_are_immutable_but_hard_limits_may_change() -> None:
    c, _ = cluster(None, quota_doc(scopes=["NotBestEffort"]))
    error = refusal(c, quota_doc(scopes=["BestEffort"]))
    assert (
        error.message == 'ResourceQuota "q1" is invalid: spec.scopes: Invalid value: ["BestEffort"]: field is immutable'
    )
    assert c.apply(decode_object(quota_doc(scopes=["NotBestEffort"])))[0] == UNCHANGED
    assert c.apply(decode_object(quota_doc(hard={"pods": "5"}, scopes=["NotBestEffort"])))[0] == CONFIGURED


# --- scopes ------------------------------------------------------------------------------------------------

WITH_CLASS = make_pod("with-class").priority_class(HIGH).obj()
OTHER_CLASS = make_pod("other-class").priority_class(LOW).obj()
NO_CLASS = make_pod("no-class").obj()


def scope(operator: str, *values: str) -> ScopedResourceSelectorRequirement:
    return ScopedResourceSelectorRequirement("PriorityClass", operator, values)


@pytest.mark.parametrize(
    ("case", "requirement", "pod", "matches"),
    [
        ("In matches a pod of a listed class", scope("In", HIGH, "x"), WITH_CLASS, True),
        ("In does not match a pod of another class", scope("In", HIGH), OTHER_CLASS, False),
        ("In does not match a pod without a class", scope("In", HIGH), NO_CLASS, False),
        ("NotIn does not match a pod of a listed class", scope("NotIn", HIGH), WITH_CLASS, False),
        ("NotIn matches a pod of another class", scope("NotIn", HIGH), OTHER_CLASS, True),
        ("NotIn matches a pod without a class (no key is not in the set)", scope("NotIn", HIGH), NO_CLASS, True),
        ("Exists matches a pod with a class", scope("Exists"), WITH_CLASS, True),
        ("Exists does not match a pod without a class", scope("Exists"), NO_CLASS, False),
        ("DoesNotExist matches a pod without a class", scope("DoesNotExist"), NO_CLASS, True),
        ("DoesNotExist does not match a pod with a class", scope("DoesNotExist"), WITH_CLASS, False),
    ],
)
def test_priority_class_scope_matches_as_upstream(
    case: str, requirement: ScopedResourceSelectorRequirement, pod: Pod, matches: bool
) -> None:
    assert pod_matches_scope(requirement, pod) is matches


def test_best_effort_scopes_look_at_cpu_and_memory_requests_and_limits() -> None:
    best_effort = ScopedResourceSelectorRequirement("BestEffort", "Exists")
    not_best_effort = ScopedResourceSelectorRequirement("NotBestEffort", "Exists")
    empty = make_pod("empty").obj()
    limited = decode_object(pod_doc("limited", cpu=None, limits={"memory": "1Gi"}))
    gpu_only = make_pod("gpu").req(**{"example.com/gpu": 1}).obj()
    assert isinstance(limited, Pod)
    assert pod_matches_scope(best_effort, empty) and pod_matches_scope(best_effort, gpu_only)
    assert not pod_matches_scope(best_effort, limited) and pod_matches_scope(not_best_effort, limited)


def test_a_quota_counts_only_the_pods_its_scope_selects() -> None:
    c, _ = cluster(None, quota_doc(hard={"pods": "10"}, selector=PODS_HIGH_SCOPE))
    for name, pc in (("a", HIGH), ("b", LOW), ("c", "")):
        c.apply(decode_object(pod_doc(name, pc)))
    assert used(c) == {"pods": "1"}


# --- admission: exceeded quota, constraints ----------------------------------------------------------------


def test_the_third_high_priority_pod_exceeds_a_quota_of_two() -> None:
    c, _ = cluster(None, quota_doc(hard={"pods": "2", "requests.cpu": "8"}, selector=PODS_HIGH_SCOPE))
    for name in ("p1", "p2"):
        assert c.apply(decode_object(pod_doc(name, cpu="3")))[0] == CREATED
    error = refusal(c, pod_doc("p", cpu="3"))
    assert error.reason == REASON_FORBIDDEN and (error.kind, error.namespace) == ("Pod", TENANT)
    assert error.kubectl_message() == (
        'Error from server (Forbidden): pods "p" is forbidden: exceeded quota: q1, requested: pods=1,requests.cpu=3, '
        "used: pods=2,requests.cpu=6, limited: pods=2,requests.cpu=8"
    )
    assert (TENANT, "p") not in c.pods
    assert used(c) == {"pods": "2", "requests.cpu": "6"}
    assert c.apply(decode_object(pod_doc("low", LOW, cpu="3")))[0] == CREATED, "a low-priority pod is not counted"


def test_only_the_exceeded_resources_are_named_with_kubernetes_quantities() -> None:
    hard = {"pods": "10", "requests.memory": "1Gi", "requests.cpu": "2500m"}
    c, _ = cluster(None, quota_doc(hard=hard))
    c.apply(decode_object(pod_doc("a", cpu="1500m", memory="768Mi")))
    error = refusal(c, pod_doc("b", cpu="500m", memory="512Mi"))
    assert error.message == (
        'pods "b" is forbidden: exceeded quota: q1, requested: requests.memory=512Mi, used: requests.memory=768Mi, '
        "limited: requests.memory=1Gi"
    )
    error = refusal(c, pod_doc("c", cpu="1100m", memory="1Mi"))
    assert error.message.endswith(
        "requested: requests.cpu=1100m, used: requests.cpu=1500m, limited: requests.cpu=2500m"
    )


def test_every_quota_must_have_room_and_the_first_full_one_is_named() -> None:
    c, _ = cluster(
        None,
        quota_doc("a-all", hard={"pods": "10"}),
        quota_doc("b-high", hard={"count/pods": "1"}, selector=PODS_HIGH_SCOPE),
    )
    c.apply(decode_object(pod_doc("p1")))
    error = refusal(c, pod_doc("p2"))
    assert error.message == (
        'pods "p2" is forbidden: exceeded quota: b-high, requested: count/pods=1, used: count/pods=1, '
        "limited: count/pods=1"
    )


def test_a_quota_on_cpu_or_memory_makes_every_container_state_it() -> None:
    c, _ = cluster(None, quota_doc(hard={"requests.cpu": "10", "limits.memory": "10Gi", "pods": "10"}))
    doc = pod_doc("p", cpu=None, memory="1Gi")
    doc["spec"]["initContainers"] = [{"name": "init", "resources": {"limits": {"memory": "1Gi", "cpu": "1"}}}]
    error = refusal(c, doc)
    assert error.reason == REASON_FORBIDDEN
    assert error.message == (
        'pods "p" is forbidden: failed quota: q1: must specify limits.memory for: main; requests.cpu for: main'
    )
    assert c.apply(decode_object(pod_doc("ok", cpu="1", limits={"memory": "1Gi"})))[0] == CREATED


def test_extended_resources_are_quota_ed_as_requests_names() -> None:
    c, _ = cluster(None, quota_doc(hard={"requests.nvidia.com/gpu": "2"}))
    doc = pod_doc("g1", cpu=None, limits={"nvidia.com/gpu": "2"})
    assert c.apply(decode_object(doc))[0] == CREATED
    error = refusal(c, {**pod_doc("g2", cpu=None, limits={"nvidia.com/gpu": "1"})})
    assert error.message == (
        'pods "g2" is forbidden: exceeded quota: q1, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2"
    )


def test_updates_of_existing_pods_are_not_checked_against_quota() -> None:
    c, _ = cluster(None, quota_doc(hard={"pods": "1"}))
    doc = pod_doc("p")
    c.apply(decode_object(doc))
    c.apply(decode_object(quota_doc(hard={"pods": "0"})))  # now over quota
    doc["metadata"]["labels"] = {"app": "web"}
    assert c.apply(decode_object(doc))[0] == CONFIGURED
    assert used(c) == {"pods": "1"}


def test_a_dry_run_gives_the_answer_the_real_create_gives() -> None:
    c, _ = cluster(None, quota_doc(hard={"pods": "1"}))
    assert admit_without_storing(c, decode_object(pod_doc("a")))[0] == CREATED
    c.apply(decode_object(pod_doc("a")))
    with pytest.raises(ApiError) as dry:
        admit_without_storing(c, decode_object(pod_doc("b")))
    assert dry.value.message == refusal(c, pod_doc("b")).message
    assert admit_without_storing(c, decode_object(quota_doc(hard={"pods": "1"})))[0] == UNCHANGED


# --- limitedResources and the critical classes -------------------------------------------------------------


def test_a_limited_scope_needs_a_covering_quota_in_the_namespace() -> None:
    c, _ = cluster(HIGH_ONLY)
    error = refusal(c, pod_doc("p"))
    assert error.reason == REASON_UNKNOWN
    assert error.kubectl_message() == (
        "Error from server: insufficient quota to match these scopes: [{PriorityClass In [high-priority]}]"
    )
    assert c.apply(decode_object(pod_doc("low", LOW)))[0] == CREATED, "pods outside the limited scope are free"


def test_a_quota_on_the_same_scope_that_matches_the_pod_covers_it() -> None:
    not_low = {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "NotIn", "values": [LOW]}]}
    c, _ = cluster(HIGH_ONLY, quota_doc(hard={"pods": "5"}, selector=not_low))
    assert c.apply(decode_object(pod_doc("p")))[0] == CREATED


def test_a_quota_elsewhere_or_on_another_class_does_not_cover() -> None:
    low_scope = {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": [LOW]}]}
    c, _ = cluster(
        HIGH_ONLY,
        quota_doc("other-namespace", selector=PODS_HIGH_SCOPE, namespace="team-b"),
        quota_doc("unscoped", hard={"pods": "5"}),
        quota_doc("low-only", selector=low_scope),
    )
    assert "insufficient quota to match these scopes" in refusal(c, pod_doc("p")).message


def test_match_contains_limits_the_resources_a_pod_may_use_without_a_quota() -> None:
    config = parse_admission_config(
        yaml.safe_dump(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "ResourceQuotaConfiguration",
                "limitedResources": [{"resource": "pods", "matchContains": ["requests.cpu"]}],
            }
        )
    )
    c, _ = cluster(config)
    assert refusal(c, pod_doc("p")).message == 'pods "p" is forbidden: insufficient quota to consume: requests.cpu'
    c.apply(decode_object(quota_doc(hard={"requests.cpu": "4"})))
    assert c.apply(decode_object(pod_doc("p")))[0] == CREATED


@pytest.mark.parametrize("critical", [CRITICAL, NODE_CRITICAL])
def test_critical_classes_are_admitted_in_kube_system_only_by_default(critical: str) -> None:
    c, _ = cluster()
    assert c.apply(decode_object(pod_doc("sys", critical, namespace=KUBE_SYSTEM)))[0] == CREATED
    error = refusal(c, pod_doc("tenant", critical))
    assert error.kubectl_message() == (
        "Error from server: insufficient quota to match these scopes: "
        "[{PriorityClass In [system-node-critical system-cluster-critical]}]"
    )
    assert c.apply(decode_object(pod_doc("high", HIGH)))[0] == CREATED, "other classes need no quota"


def test_a_covering_quota_admits_critical_pods_outside_kube_system_within_its_limit() -> None:
    critical_scope = {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": [CRITICAL]}]}
    c, _ = cluster(None, quota_doc("critical-pods", hard={"pods": "1"}, selector=critical_scope))
    assert c.apply(decode_object(pod_doc("agent", CRITICAL)))[0] == CREATED
    assert "exceeded quota: critical-pods" in refusal(c, pod_doc("agent-2", CRITICAL)).message


def test_the_critical_default_can_be_switched_off() -> None:
    c, _ = cluster(QuotaAdmissionConfig(protect_critical_classes=False))
    assert c.apply(decode_object(pod_doc("agent", CRITICAL)))[0] == CREATED


# --- the admission configuration file ----------------------------------------------------------------------

ADMISSION_CONFIG = """
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration: {apiVersion: pod-security.admission.config.k8s.io/v1, kind: PodSecurityConfiguration}
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - scopeName: PriorityClass
        operator: In
        values: ["high-priority"]
"""


def test_an_admission_configuration_is_read_inline_or_through_a_path(tmp_path: Path) -> None:
    assert parse_admission_config(ADMISSION_CONFIG) == HIGH_ONLY
    plugin_file = tmp_path / "quota.yaml"
    plugin_file.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources:\n"
        "- resource: pods\n  matchScopes: [{scopeName: PriorityClass, operator: In, values: [high-priority]}]\n"
    )
    admission_file = tmp_path / "admission.yaml"
    admission_file.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
        "plugins: [{name: ResourceQuota, path: quota.yaml}]\n"
    )
    assert load_admission_config(str(admission_file)) == HIGH_ONLY
    assert load_admission_config("") == QuotaAdmissionConfig()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\n"
            "limitedResources: [{matchContains: [cpu]}]\n",
            'ResourceQuotaConfiguration "cfg" is invalid: limitedResources[0].resource: Required value',
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources:\n"
            "- {resource: pods, matchScopes: [{scopeName: PriorityClass, operator: In}]}\n",
            'ResourceQuotaConfiguration "cfg" is invalid: limitedResources[0].matchScopes[0].values: Required value: '
            "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
        ),
        (
            "apiVersion: v1\nkind: Pod\n",
            'no kind "Pod" is registered for version "v1"; expected apiserver.config.k8s.io/v1 AdmissionConfiguration '
            "or apiserver.config.k8s.io/v1 ResourceQuotaConfiguration",
        ),
    ],
)
def test_a_bad_admission_configuration_is_refused_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_admission_config(text, "cfg")
    assert caught.value.message == message


# --- usage ---------------------------------------------------------------------------------------------------


def test_usage_is_released_when_a_pod_goes_and_not_counted_when_it_is_terminal() -> None:
    c, _ = cluster(None, quota_doc(hard={"pods": "5", "count/pods": "5", "requests.cpu": "10"}), node_doc("n1", "4"))
    c.apply(decode_object(pod_doc("pending", cpu="2")))
    c.apply(decode_object(pod_doc("failed", cpu="1", phase=POD_FAILED)))
    # Too big for its node: the node agent refuses it (Failed), which releases its compute quota.
    c.apply(decode_object(pod_doc("refused", cpu="6", node="n1")))
    assert c.pods[(TENANT, "refused")].status.phase == POD_FAILED
    assert used(c) == {"count/pods": "3", "pods": "1", "requests.cpu": "2"}
    c.delete("Pod", TENANT, "pending")
    assert used(c) == {"count/pods": "2", "pods": "0", "requests.cpu": "0"}


def test_a_terminating_pod_keeps_its_quota_until_its_grace_period_ends() -> None:
    c, clock = cluster(None, quota_doc(hard={"pods": "1"}), node_doc("n1"))
    c.apply(decode_object(pod_doc("victim", cpu="1", node="n1", grace=30)))
    c.delete("Pod", TENANT, "victim")
    assert c.pods[(TENANT, "victim")].metadata.deletion_timestamp == NOW
    assert "exceeded quota" in refusal(c, pod_doc("next")).message, "still counted while it terminates"
    clock.now = NOW + 29
    c.complete_terminations()
    assert used(c) == {"pods": "1"}
    clock.now = NOW + 30
    c.complete_terminations()
    assert used(c) == {"pods": "0"}
    assert c.apply(decode_object(pod_doc("next")))[0] == CREATED


def test_a_quota_created_after_its_pods_counts_them_and_replicas_derive_the_same_usage() -> None:
    c, _ = cluster(None, node_doc("n1"))
    changes: list[tuple[str, Any]] = []
    c.listeners.append(lambda change: changes.append((change.type, change.new or change.old)))
    for name in ("a", "b"):
        c.apply(decode_object(pod_doc(name, cpu="2", node="n1")))
    c.apply(decode_object(quota_doc(hard={"pods": "5", "requests.cpu": "10"})))
    c.apply(decode_object(pod_doc("c", cpu="1")))
    c.delete("Pod", TENANT, "a", grace_period=0)
    expected = {"pods": "2", "requests.cpu": "3"}
    assert used(c) == expected
    replica = Cluster(FakeClock(NOW), authoritative=False)
    for change_type, obj in changes:  # as the log carries them: JSON, the quota's status dropped
        decoded = decode_object(json.loads(json.dumps(encode_object(obj))))
        decoded.metadata.resource_version = obj.metadata.resource_version
        replica.restore(change_type, decoded)
    assert used(replica) == expected
    quota_removed = c.delete("ResourceQuota", TENANT, "q1")
    assert isinstance(quota_removed, ResourceQuota) and c.resource_quotas == {}
    assert changes[-1][0] == REMOVED


def test_pod_usage_follows_upstreams_pod_evaluator() -> None:
    pod = decode_object(pod_doc("p", cpu="250m", memory="1Gi", limits={"cpu": "1", "example.com/gpu": "2"}))
    assert isinstance(pod, Pod)
    assert pod_usage(pod) == {
        "count/pods": 1,
        "pods": 1,
        "cpu": Fraction(1, 4),
        "requests.cpu": Fraction(1, 4),
        "limits.cpu": 1,
        "memory": 2**30,
        "requests.memory": 2**30,
        "requests.example.com/gpu": 2,
    }


# --- the CLI's words ---------------------------------------------------------------------------------------


def test_get_quota_prints_kubectls_columns_and_json_carries_hard_and_used() -> None:
    c, _ = cluster(None, quota_doc(hard={"pods": "2", "requests.cpu": "8", "limits.memory": "4Gi"}))
    c.apply(decode_object(pod_doc("p1", cpu="3", limits={"memory": "1Gi"})))
    encoded = encode_object(c.resource_quotas[(TENANT, "q1")])
    assert encoded["status"] == {
        "hard": {"limits.memory": "4Gi", "pods": "2", "requests.cpu": "8"},
        "used": {"limits.memory": "1Gi", "pods": "1", "requests.cpu": "3"},
    }
    assert resource_type("quota") is RESOURCE_QUOTA and resource_type("resourcequotas") is RESOURCE_QUOTA
    table = output.format_table(RESOURCE_QUOTA, [encoded], NOW + 120)
    assert table.splitlines() == [
        "NAME   AGE   REQUEST                        LIMIT",
        "q1     2m    pods: 1/2, requests.cpu: 3/8   limits.memory: 1Gi/4Gi",
    ]
    assert output.apply_line("ResourceQuota", "q1", "created") == "resourcequota/q1 created"
    assert output.delete_line(RESOURCE_QUOTA, "q1") == 'resourcequota "q1" deleted'
    description = output.describe_resource_quota(encoded)
    assert description.splitlines()[:4] == [
        "Name:       q1",
        "Namespace:  team-a",
        "Resource       Used  Hard",
        "--------       ----  ----",
    ]
    assert "requests.cpu   3     8" in description


# --- simulate ------------------------------------------------------------------------------------------------

CLUSTER_FILE = f"""
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {HIGH}}}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: urgent}}
value: 100000
---
apiVersion: v1
kind: Node
metadata: {{name: n1}}
status: {{capacity: {{cpu: "2", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {{name: high-pods, namespace: {TENANT}}}
spec:
  hard: {{pods: "2"}}
  scopeSelector:
    matchExpressions: [{{scopeName: PriorityClass, operator: In, values: [{HIGH}]}}]
"""


def simulated_pod(name: str, priority_class: str, namespace: str = TENANT) -> str:
    return yaml.safe_dump(pod_doc(name, priority_class, cpu="1", namespace=namespace, grace=30))


def test_simulate_rejects_the_third_pod_and_admits_one_once_a_victim_is_gone() -> None:
    simulator = Simulator()
    simulator.apply_text(CLUSTER_FILE, "cluster.yaml")
    tenant = "---\n".join(simulated_pod(name, HIGH) for name in ("h1", "h2", "h3"))
    rejected = simulator.apply_text(tenant, "tenant.yaml")
    simulator.run_until_quiescent()
    assert [(r.kind, r.namespace, r.name, r.reason) for r in rejected] == [("Pod", TENANT, "h3", REASON_FORBIDDEN)]
    assert rejected[0].message == (
        'Error from server (Forbidden): pods "h3" is forbidden: exceeded quota: high-pods, requested: pods=1, '
        "used: pods=2, limited: pods=2"
    )
    # An urgent pod elsewhere preempts one of the tenant's pods; while the victim terminates its
    # quota is still used, so the tenant's next pod is refused ...
    rejected = simulator.apply_text(
        simulated_pod("urgent-0", "urgent", "ops") + "---\n" + simulated_pod("h4", HIGH), "urgent.yaml"
    )
    assert [r.name for r in rejected] == ["h4"]
    start = simulator.now
    simulator.run_until_quiescent()
    victims = [p for p in simulator.cluster.history.values() if p.metadata.deletion_timestamp is not None]
    assert len(victims) == 1 and victims[0].namespace == TENANT
    assert simulator.now >= start + 30, "the victim was removed when its grace period ended"
    # ... and once it is gone, the quota has room again.
    assert simulator.apply_text(simulated_pod("h5", HIGH), "later.yaml") == []
    result = simulator.result()
    assert [r["name"] for r in result["rejected"]] == ["h3", "h4"]
    assert {p["metadata"]["name"] for p in result["pods"]} >= {"h1", "h2", "h5", "urgent-0"}


def test_simulate_cli_reads_the_admission_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    admission = tmp_path / "admission.yaml"
    admission.write_text(ADMISSION_CONFIG)
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(CLUSTER_FILE.replace("team-a", "quota-ns"))
    workload = tmp_path / "workload.yaml"
    workload.write_text(simulated_pod("p", HIGH) + "---\n" + simulated_pod("agent", CRITICAL, "monitoring"))
    code = main(
        ["simulate", "-f", str(cluster_file), "-f", str(workload), "--admission-config", str(admission), "-o", "json"]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [(r["name"], r["reason"], r["message"]) for r in result["rejected"]] == [
        ("p", "", "Error from server: insufficient quota to match these scopes: [{PriorityClass In [high-priority]}]"),
        (
            "agent",
            "",
            "Error from server: insufficient quota to match these scopes: "
            "[{PriorityClass In [system-node-critical system-cluster-critical]}]",
        ),
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: [{}]\n")
    assert main(["simulate", "-f", str(cluster_file), "--admission-config", str(bad)]) == 1
    assert "invalid --admission-config" in capsys.readouterr().err
