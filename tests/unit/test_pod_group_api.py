"""scheduling.k8s.io/v1beta1 PodGroup and a pod's spec.schedulingGroup: decoding with upstream's
defaults and declarative validation wording, Priority admission of the group's class, update
immutability, the store (apply, delete, replay from the log's JSON), and the CLI's table and
describe."""

from __future__ import annotations

from typing import Any

import pytest

from podsched.api.errors import REASON_BAD_REQUEST, REASON_FORBIDDEN, REASON_INVALID, REASON_NOT_FOUND, ApiError
from podsched.api.manifests import decode_object, encode_object
from podsched.api.types import (
    CONDITION_POD_GROUP_INITIALLY_SCHEDULED,
    DISRUPTION_MODE_ALL,
    DISRUPTION_MODE_SINGLE,
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    SCHEDULING_POLICY_BASIC,
    SCHEDULING_POLICY_GANG,
    Condition,
    PodGroup,
    PodGroupStatus,
)
from podsched.cluster.admission import CONFIGURED, CREATED, UNCHANGED
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED, REMOVED
from podsched_cli import output
from podsched_cli.resources import POD_GROUP, resource_type

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
GROUP = "trainers"


def pod_group_doc(spec: dict[str, Any] | None = None, name: str = GROUP, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, **meta},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}} if spec is None else spec,
    }


def pod_doc(name: str, group: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main"}]}
    if group is not None:
        spec["schedulingGroup"] = group
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def priority_class_doc(name: str, value: int, policy: str | None = None, default: bool = False) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if policy:
        doc["preemptionPolicy"] = policy
    if default:
        doc["globalDefault"] = True
    return doc


def rejection(doc: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as caught:
        decode_object(doc)
    return caught.value


def new_cluster() -> Cluster:
    return Cluster(clock=lambda: NOW)


# --- decoding -----------------------------------------------------------------------------------------


def test_a_gang_group_decodes_with_upstreams_defaults() -> None:
    group = decode_object(pod_group_doc())
    assert isinstance(group, PodGroup)
    assert (group.namespace, group.scheduling_policy, group.min_count) == ("default", SCHEDULING_POLICY_GANG, 3)
    assert group.disruption_mode == DISRUPTION_MODE_SINGLE
    assert group.preemption_policy == PREEMPT_LOWER_PRIORITY
    spec = encode_object(group)["spec"]
    assert spec["disruptionMode"] == {"single": {}}
    assert spec["schedulingPolicy"] == {"gang": {"minCount": 3}}


def test_a_basic_group_with_disruption_mode_all_round_trips() -> None:
    group = decode_object(pod_group_doc({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}))
    assert isinstance(group, PodGroup)
    assert (group.scheduling_policy, group.min_count, group.disruption_mode) == (
        SCHEDULING_POLICY_BASIC,
        0,
        DISRUPTION_MODE_ALL,
    )
    assert decode_object(encode_object(group)) == group


def test_gated_fields_are_dropped_as_upstreams_strategy_drops_them() -> None:
    doc = pod_group_doc(
        {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
            "parentCompositePodGroupName": "parent",
        }
    )
    spec = encode_object(decode_object(doc))["spec"]
    assert "schedulingConstraints" not in spec and "parentCompositePodGroupName" not in spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {},
            'PodGroup "trainers" is invalid: spec.schedulingPolicy: Invalid value: "": '
            "must specify one of: basic, gang",
        ),
        (
            {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}},
            'PodGroup "trainers" is invalid: spec.schedulingPolicy: Invalid value: "{basic, gang}": '
            "must specify exactly one of: basic, gang",
        ),
        (
            {"schedulingPolicy": {"gang": {}}},
            'PodGroup "trainers" is invalid: spec.schedulingPolicy.gang.minCount: Required value',
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": -2}}},
            'PodGroup "trainers" is invalid: spec.schedulingPolicy.gang.minCount: Invalid value: -2: '
            "must be greater than or equal to 1",
        ),
        (
            {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}, "all": {}}},
            'PodGroup "trainers" is invalid: spec.disruptionMode: Invalid value: "{single, all}": '
            "must specify exactly one of: single, all",
        ),
        (
            {"schedulingPolicy": {"basic": {}}, "priority": 1_000_000_001},
            'PodGroup "trainers" is invalid: spec.priority: Invalid value: 1000000001: '
            "must be less than or equal to 1000000000",
        ),
        (
            {"schedulingPolicy": {"basic": {}}, "preemptionPolicy": "Sometimes"},
            'PodGroup "trainers" is invalid: spec.preemptionPolicy: Unsupported value: "Sometimes": '
            'supported values: "Never", "PreemptLowerPriority"',
        ),
    ],
    ids=[
        "a group without a scheduling policy",
        "a group with both policies",
        "a gang without minCount",
        "a gang with a negative minCount",
        "a group with both disruption modes",
        "a priority above the user-definable ceiling",
        "an unknown preemption policy",
    ],
)
def test_an_invalid_group_is_refused_with_upstreams_words(spec: dict[str, Any], message: str) -> None:
    error = rejection(pod_group_doc(spec))
    assert error.reason == REASON_INVALID
    assert error.message == message


def test_a_min_count_of_the_wrong_type_is_a_bad_request() -> None:
    error = rejection(pod_group_doc({"schedulingPolicy": {"gang": {"minCount": "three"}}}))
    assert error.reason == REASON_BAD_REQUEST
    assert "cannot unmarshal string" in error.message and "minCount" in error.message


def test_a_pod_names_its_group_in_spec_scheduling_group() -> None:
    pod = decode_object(pod_doc("p", {"podGroupName": GROUP}))
    assert pod.spec.pod_group_name == GROUP  # type: ignore[union-attr]
    assert encode_object(pod)["spec"]["schedulingGroup"] == {"podGroupName": GROUP}
    plain = decode_object(pod_doc("q", None))
    assert plain.spec.pod_group_name is None  # type: ignore[union-attr]
    assert "schedulingGroup" not in encode_object(plain)["spec"]


@pytest.mark.parametrize(
    ("group", "message"),
    [
        (
            {},
            'Pod "p" is invalid: spec.schedulingGroup.podGroupName: Invalid value: null: '
            "must specify one of: `podGroupName`",
        ),
        (
            {"podGroupName": "Not_A_Name"},
            'Pod "p" is invalid: spec.schedulingGroup.podGroupName: Invalid value: "Not_A_Name": a lowercase RFC 1123 '
            "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    ],
    ids=["an empty scheduling group", "a group name that is no DNS subdomain"],
)
def test_a_bad_scheduling_group_is_refused_naming_the_field(group: dict[str, Any], message: str) -> None:
    error = rejection(pod_doc("p", group))
    assert error.reason == REASON_INVALID
    assert error.message == message


# --- admission and the store --------------------------------------------------------------------------


def test_a_group_gets_its_priority_from_its_class() -> None:
    cluster = new_cluster()
    cluster.apply(decode_object(priority_class_doc("high", 1000)))
    action, stored = cluster.apply(
        decode_object(pod_group_doc({"schedulingPolicy": {"gang": {"minCount": 2}}, "priorityClassName": "high"}))
    )
    assert action == CREATED
    assert isinstance(stored, PodGroup)
    assert (stored.priority, stored.preemption_policy) == (1000, PREEMPT_LOWER_PRIORITY)
    assert stored.uid and stored.metadata.resource_version > 0
    assert cluster.pod_groups[("default", GROUP)] is stored


def test_a_group_without_a_class_takes_the_global_default() -> None:
    cluster = new_cluster()
    cluster.apply(decode_object(priority_class_doc("everyday", 7, default=True)))
    _, stored = cluster.apply(decode_object(pod_group_doc()))
    assert isinstance(stored, PodGroup)
    assert (stored.priority_class_name, stored.priority) == ("everyday", 7)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"schedulingPolicy": {"basic": {}}, "priorityClassName": "missing"},
            'podgroups.scheduling.k8s.io "trainers" is forbidden: no PriorityClass with name missing was found',
        ),
        (
            {"schedulingPolicy": {"basic": {}}, "priorityClassName": "high", "priority": 5},
            'podgroups.scheduling.k8s.io "trainers" is forbidden: priority set in the pod group (5) must match the '
            "priority computed (1000) based on the priority class set in the spec",
        ),
        (
            {"schedulingPolicy": {"basic": {}}, "priorityClassName": "never"},
            'podgroups.scheduling.k8s.io "trainers" is forbidden: the string value of PreemptionPolicy '
            "(PreemptLowerPriority) must not be provided in pod group spec; priority admission controller computed "
            "Never from the given PriorityClass name",
        ),
    ],
    ids=[
        "a missing class",
        "a priority that is not the class's",
        "a defaulted preemption policy that is not the class's (upstream defaults before it admits)",
    ],
)
def test_priority_admission_refuses_a_group_and_stores_nothing(spec: dict[str, Any], message: str) -> None:
    cluster = new_cluster()
    cluster.apply(decode_object(priority_class_doc("high", 1000)))
    cluster.apply(decode_object(priority_class_doc("never", 10, PREEMPT_NEVER)))
    with pytest.raises(ApiError) as caught:
        cluster.apply(decode_object(pod_group_doc(spec)))
    assert caught.value.reason == REASON_FORBIDDEN
    assert caught.value.message == message
    assert not cluster.pod_groups


def test_a_client_status_is_dropped_on_create() -> None:
    cluster = new_cluster()
    doc = pod_group_doc()
    doc["status"] = {"conditions": [{"type": CONDITION_POD_GROUP_INITIALLY_SCHEDULED, "status": "True"}]}
    _, stored = cluster.apply(decode_object(doc))
    assert isinstance(stored, PodGroup)
    assert stored.status.conditions == ()


def test_min_count_may_change_and_the_rest_may_not() -> None:
    cluster = new_cluster()
    cluster.apply(decode_object(priority_class_doc("high", 1000)))
    spec = {"schedulingPolicy": {"gang": {"minCount": 3}}, "priorityClassName": "high"}
    cluster.apply(decode_object(pod_group_doc(spec)))
    assert cluster.apply(decode_object(pod_group_doc(spec)))[0] == UNCHANGED
    action, stored = cluster.apply(
        decode_object(pod_group_doc({**spec, "schedulingPolicy": {"gang": {"minCount": 5}}}))
    )
    assert action == CONFIGURED and isinstance(stored, PodGroup)
    assert (stored.min_count, stored.priority) == (5, 1000)
    with pytest.raises(ApiError) as caught:
        cluster.apply(decode_object(pod_group_doc({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})))
    assert caught.value.reason == REASON_INVALID
    assert caught.value.message == (
        'PodGroup "trainers" is invalid: [spec.schedulingPolicy.gang: Invalid value: null: field cannot be cleared '
        "once set, spec.disruptionMode: Invalid value: null: field is immutable]"
    )
    assert cluster.pod_groups[("default", GROUP)].min_count == 5


def test_a_group_is_deleted_and_a_missing_one_is_not_found() -> None:
    cluster = new_cluster()
    heard: list[str] = []
    cluster.listeners.append(lambda change: heard.append(f"{change.type} {change.kind}"))
    cluster.apply(decode_object(pod_group_doc()))
    cluster.delete("PodGroup", "default", GROUP)
    assert not cluster.pod_groups
    assert heard == [f"{ADDED} PodGroup", f"{REMOVED} PodGroup"]
    with pytest.raises(ApiError) as caught:
        cluster.delete("PodGroup", "default", GROUP)
    assert caught.value.reason == REASON_NOT_FOUND
    assert caught.value.message == 'podgroups.scheduling.k8s.io "trainers" not found'


def test_a_replica_rebuilds_a_group_and_its_condition_from_the_logged_json() -> None:
    binder = new_cluster()
    _, stored = binder.apply(decode_object(pod_group_doc()))
    assert isinstance(stored, PodGroup)
    stored.status = PodGroupStatus(
        (Condition(CONDITION_POD_GROUP_INITIALLY_SCHEDULED, "False", "Unschedulable", "waiting", NOW),)
    )
    replica = Cluster(clock=lambda: NOW, authoritative=False)
    replayed = decode_object(encode_object(stored), owned=True)
    replica.restore(ADDED, replayed)
    copy = replica.pod_groups[("default", GROUP)]
    assert copy == stored
    assert copy.status.condition(CONDITION_POD_GROUP_INITIALLY_SCHEDULED) == stored.status.conditions[0]


# --- the CLI ------------------------------------------------------------------------------------------


def test_kubectls_words_name_pod_groups() -> None:
    assert resource_type("pg") is POD_GROUP
    assert resource_type("podgroups.scheduling.k8s.io") is POD_GROUP


def test_get_and_describe_show_the_policy_the_members_and_why_the_group_waits() -> None:
    group = pod_group_doc(name=GROUP, creationTimestamp="2026-01-01T00:00:00Z", namespace="default")
    group["status"] = {
        "conditions": [
            {
                "type": CONDITION_POD_GROUP_INITIALLY_SCHEDULED,
                "status": "False",
                "reason": "Unschedulable",
                "message": "waiting for minCount",
            }
        ]
    }
    assert output.pod_group_header() == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert output.pod_group_row(group, NOW + 60) == [GROUP, "Gang", "<none>", "Unschedulable", "60s"]
    pods = [
        {**pod_doc("a", {"podGroupName": GROUP}), "metadata": {"name": "a", "namespace": "default"}},
        {**pod_doc("b", {"podGroupName": "other"}), "metadata": {"name": "b", "namespace": "default"}},
    ]
    text = output.describe_pod_group(group, pods, [], NOW)
    assert "Gang (minCount 3)" in text
    assert "1 (0 bound, 1 pending)" in text
    assert "waiting for minCount" in text
    pod_text = output.describe_pod(pods[0], [], NOW)
    assert "SchedulingGroup:" in pod_text and f"PodGroupName:  {GROUP}" in pod_text


def test_describe_says_why_preenqueue_holds_a_gang_pod_back() -> None:
    pod = {**pod_doc("a", {"podGroupName": GROUP}), "metadata": {"name": "a", "namespace": "default"}}
    missing = output.Protection(pod_group_read=True)
    assert 'Pending: waiting for pods\'s pod group "trainers" to appear in scheduling queue' in output.describe_pod(
        pod, [], NOW, missing
    )
    short = output.Protection(pod_group_read=True, pod_group=pod_group_doc(), pod_group_pods=2)
    assert (
        "Pending: waiting for minCount pods from a gang to appear in scheduling queue (2 of minCount 3 pods exist)"
        in output.describe_pod(pod, [], NOW, short)
    )
    complete = output.Protection(pod_group_read=True, pod_group=pod_group_doc(), pod_group_pods=3)
    assert "Pending: no scheduling attempt recorded yet" in output.describe_pod(pod, [], NOW, complete)


def test_simulate_table_shows_groups_and_leaves_groupless_output_as_it_was() -> None:
    from podsched.simulator.output import render_table

    group = pod_group_doc(namespace="default")
    group["status"] = {
        "conditions": [
            {
                "type": CONDITION_POD_GROUP_INITIALLY_SCHEDULED,
                "status": "False",
                "reason": "Unschedulable",
                "message": "m",
            }
        ]
    }
    member = {**pod_doc("a", {"podGroupName": GROUP}), "metadata": {"name": "a", "namespace": "default"}}
    text = render_table({"pods": [member], "events": [], "rejected": [], "podGroups": [group]})
    assert "POD GROUP" in text.splitlines()[0]
    assert text.splitlines()[-1].split() == ["default", GROUP, "Gang", "3", "0/1", "Unschedulable", "m"]
    plain = {**pod_doc("b", None), "metadata": {"name": "b", "namespace": "default"}}
    assert "POD GROUP" not in render_table({"pods": [plain], "events": [], "rejected": []})
