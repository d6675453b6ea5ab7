"""PriorityClass validation and Priority admission, ported from upstream's tables:
pkg/apis/scheduling/validation (TestValidatePriorityClass, TestValidatePriorityClassUpdate) and
plugin/pkg/admission/priority (TestPriorityClassAdmission, TestDefaultPriority, TestPodAdmission)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import replace

import pytest

from podsched.admission import priority
from podsched.admission.priority import (
    DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
    HIGHEST_USER_DEFINABLE_PRIORITY,
    SYSTEM_CLUSTER_CRITICAL,
    SYSTEM_CRITICAL_PRIORITY,
    SYSTEM_NODE_CRITICAL,
    admit_pod,
    admit_pod_update,
    builtin_priority_classes,
    check_global_default,
    global_default_class,
    validate_priority_class,
    validate_priority_class_delete,
    validate_priority_class_update,
)
from podsched.api.errors import REASON_FORBIDDEN, REASON_INVALID, ApiError
from podsched.api.types import (
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    Container,
    ObjectMeta,
    Pod,
    PodSpec,
    PriorityClass,
)

# --- fixtures from upstream's admission_test.go, declared once -------------------------------------------

NAMESPACE = "namespace"
KUBE_SYSTEM = "kube-system"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
INT_PRIORITY = 1000
ZERO_PRIORITY = 0


def make_class(
    name: str,
    value: int,
    *,
    global_default: bool = False,
    policy: str = PREEMPT_LOWER_PRIORITY,
    description: str = "",
    namespace: str = "",
) -> PriorityClass:
    return PriorityClass(ObjectMeta(name=name, namespace=namespace), value, global_default, description, policy)


def make_pod(
    name: str,
    *,
    namespace: str = NAMESPACE,
    class_name: str = "",
    priority_value: int | None = None,
    policy: str | None = None,
    annotations: dict[str, str] | None = None,
) -> Pod:
    return Pod(
        ObjectMeta(name=name, namespace=namespace, annotations=dict(annotations or {})),
        PodSpec(
            containers=(Container("container"),),
            priority_class_name=class_name,
            priority=priority_value,
            preemption_policy=policy,
        ),
    )


def by_name(classes: Iterable[PriorityClass]) -> dict[str, PriorityClass]:
    return {c.name: c for c in classes}


DEFAULT_CLASS_1 = make_class("default1", 1000, global_default=True)
DEFAULT_CLASS_2 = make_class("default2", 2000, global_default=True)
NONDEFAULT_CLASS_1 = make_class("nondefault1", 2000, description="Just a test priority class")
# Upstream's fixture marks system-cluster-critical as a global default; kept for a faithful port.
SYSTEM_CLUSTER_CRITICAL_CLASS = make_class(SYSTEM_CLUSTER_CRITICAL, SYSTEM_CRITICAL_PRIORITY, global_default=True)
NEVER_POLICY_CLASS = make_class("nopreemptionpolicy", 2000, global_default=True, policy=PREEMPT_NEVER)
PREEMPTION_POLICY_CLASS = make_class("nopreemptionpolicy", 2000, global_default=True, policy=PREEMPT_LOWER_PRIORITY)

PODS = [
    make_pod("pod-w-priorityclass", class_name="default1"),
    make_pod("pod-wo-priorityclass"),
    make_pod("pod-w-non-existing-priorityclass", class_name="non-existing"),
    make_pod("pod-w-integer-priority", class_name="default1", priority_value=INT_PRIORITY),
    make_pod("pod-w-system-priority", namespace=KUBE_SYSTEM, class_name=SYSTEM_CLUSTER_CRITICAL),
    make_pod(
        "mirror-pod-w-system-priority",
        namespace=KUBE_SYSTEM,
        class_name=SYSTEM_CLUSTER_CRITICAL,
        annotations={MIRROR_POD_ANNOTATION: ""},
    ),
    make_pod(
        "mirror-pod-w-integer-priority",
        class_name="default1",
        priority_value=INT_PRIORITY,
        annotations={MIRROR_POD_ANNOTATION: ""},
    ),
    make_pod(
        "pod-w-system-priority-in-nonsystem-namespace",
        namespace="non-system-namespace",
        class_name=SYSTEM_CLUSTER_CRITICAL,
    ),
    make_pod(
        "pod-w-zero-priority-in-nonsystem-namespace", namespace="non-system-namespace", priority_value=ZERO_PRIORITY
    ),
    make_pod(
        "pod-w-priority-matching-default-priority",
        namespace="non-system-namespace",
        priority_value=DEFAULT_CLASS_2.value,
    ),
    make_pod(
        "pod-w-priority-matching-resolved-default-priority",
        namespace=KUBE_SYSTEM,
        class_name=SYSTEM_CLUSTER_CRITICAL,
        priority_value=SYSTEM_CRITICAL_PRIORITY,
    ),
    make_pod(
        "pod-never-preemption-policy-matching-resolved-preemption-policy",
        namespace=KUBE_SYSTEM,
        class_name=NEVER_POLICY_CLASS.name,
        priority_value=NEVER_POLICY_CLASS.value,
    ),
    make_pod(
        "pod-preemption-policy-matching-resolved-preemption-policy",
        namespace=KUBE_SYSTEM,
        class_name=PREEMPTION_POLICY_CLASS.name,
        priority_value=PREEMPTION_POLICY_CLASS.value,
        policy=PREEMPT_LOWER_PRIORITY,
    ),
    make_pod(
        "pod-preemption-policy-not-matching-resolved-preemption-policy",
        namespace=KUBE_SYSTEM,
        class_name=PREEMPTION_POLICY_CLASS.name,
        priority_value=PREEMPTION_POLICY_CLASS.value,
        policy=PREEMPT_NEVER,
    ),
]


# --- built-in classes -------------------------------------------------------------------------------------------


def test_the_built_in_classes_are_upstreams() -> None:
    assert [(c.name, c.value, c.global_default, c.preemption_policy) for c in builtin_priority_classes()] == [
        (SYSTEM_NODE_CRITICAL, 2_000_001_000, False, PREEMPT_LOWER_PRIORITY),
        (SYSTEM_CLUSTER_CRITICAL, 2_000_000_000, False, PREEMPT_LOWER_PRIORITY),
    ]
    descriptions = {c.name: c.description for c in builtin_priority_classes()}
    assert descriptions[SYSTEM_NODE_CRITICAL] == (
        "Used for system critical pods that must not be moved from their current node."
    )
    assert descriptions[SYSTEM_CLUSTER_CRITICAL] == (
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."
    )


def test_the_constants_match_upstream() -> None:
    assert HIGHEST_USER_DEFINABLE_PRIORITY == 1_000_000_000
    assert SYSTEM_CRITICAL_PRIORITY == 2_000_000_000
    assert priority.SYSTEM_PRIORITY_CLASS_PREFIX == "system-"
    assert DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS == 0


def test_the_built_in_classes_are_fresh_objects_that_pass_validation() -> None:
    first, second = builtin_priority_classes(), builtin_priority_classes()
    assert first == second and first[0] is not second[0]
    for builtin in first:
        validate_priority_class(builtin)


@pytest.mark.parametrize("name", [SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL])
def test_a_built_in_class_cannot_be_deleted(name: str) -> None:
    with pytest.raises(ApiError) as caught:
        validate_priority_class_delete(name)
    assert caught.value.kubectl_message() == (
        f"Error from server (Forbidden): priorityclasses.scheduling.k8s.io "
        f'"{name}" is forbidden: this is a system priority class and cannot be deleted'
    )


def test_a_user_class_may_be_deleted() -> None:
    validate_priority_class_delete("default1")


# --- TestValidatePriorityClass ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "priority_class",
    [
        pytest.param(make_class("tier1", 100), id="no description"),
        pytest.param(
            make_class("tier1", 200, description="Used for the highest priority pods."), id="with description"
        ),
        pytest.param(
            make_class(SYSTEM_NODE_CRITICAL, 2_000_001_000, description="system priority class 0"),
            id="system node critical",
        ),
        pytest.param(make_class("tier1", HIGHEST_USER_DEFINABLE_PRIORITY), id="the highest user definable value"),
        pytest.param(make_class("tier1", -(2**31)), id="the lowest int32 value"),
        pytest.param(make_class("tier1", 5, policy=PREEMPT_NEVER), id="a non-preempting class"),
    ],
)
def test_valid_priority_classes_pass(priority_class: PriorityClass) -> None:
    validate_priority_class(priority_class)


@pytest.mark.parametrize(
    ("priority_class", "message"),
    [
        pytest.param(
            make_class("tier1", 100, namespace="foo"),
            'PriorityClass "tier1" is invalid: metadata.namespace: Forbidden: not allowed on this type',
            id="with namespace",
        ),
        pytest.param(
            make_class("tier&1", 100),
            'PriorityClass "tier&1" is invalid: metadata.name: Invalid value: "tier&1": a lowercase RFC 1123 '
            "subdomain must consist of lower case alphanumeric characters",
            id="invalid name",
        ),
        pytest.param(
            make_class(SYSTEM_NODE_CRITICAL, 0),
            'PriorityClass "system-node-critical" is invalid: metadata.name: Forbidden: priority class names '
            "with 'system-' prefix are reserved for system use only. error: value of system-node-critical "
            "PriorityClass must be 2000001000",
            id="incorrect system class name",
        ),
        pytest.param(
            make_class("system-something", 2_000_001_000),
            'PriorityClass "system-something" is invalid: metadata.name: Forbidden: priority class names with '
            "'system-' prefix are reserved for system use only. error: system-something is not a known system "
            "priority class",
            id="incorrect system class value",
        ),
        pytest.param(
            make_class(SYSTEM_CLUSTER_CRITICAL, SYSTEM_CRITICAL_PRIORITY, global_default=True),
            "error: globalDefault of system-cluster-critical PriorityClass must be false",
            id="a system class cannot be the global default",
        ),
        pytest.param(
            make_class("tier1", HIGHEST_USER_DEFINABLE_PRIORITY + 1),
            'PriorityClass "tier1" is invalid: value: Forbidden: maximum allowed value of a user defined '
            "priority is 1000000000",
            id="a user class above one billion",
        ),
        pytest.param(
            make_class("tier1", 1, policy="Sometimes"),
            'preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
            id="an unknown preemption policy",
        ),
    ],
)
def test_invalid_priority_classes_are_rejected_with_upstreams_message(
    priority_class: PriorityClass, message: str
) -> None:
    with pytest.raises(ApiError) as caught:
        validate_priority_class(priority_class)
    assert caught.value.reason == REASON_INVALID
    assert message in caught.value.message, caught.value.message


# --- TestValidatePriorityClassUpdate ---------------------------------------------------------------------------

OLD_TIER1 = replace(make_class("tier1", 100), metadata=ObjectMeta("tier1", resource_version=1))


@pytest.mark.parametrize(
    "new",
    [
        pytest.param(replace(OLD_TIER1, description="Used for the highest priority pods."), id="no change"),
        pytest.param(replace(OLD_TIER1, description="A different description."), id="change description"),
        pytest.param(replace(OLD_TIER1, description=""), id="remove description"),
        pytest.param(replace(OLD_TIER1, global_default=True), id="change globalDefault"),
    ],
)
def test_a_priority_class_update_may_change_description_and_default(new: PriorityClass) -> None:
    validate_priority_class_update(OLD_TIER1, new)


@pytest.mark.parametrize(
    ("new", "field_error"),
    [
        pytest.param(
            replace(OLD_TIER1, metadata=ObjectMeta("tier1", "foo")),
            'metadata.namespace: Invalid value: "foo": field is immutable',
            id="add namespace",
        ),
        pytest.param(
            replace(OLD_TIER1, metadata=ObjectMeta("tier2")),
            'metadata.name: Invalid value: "tier2": field is immutable',
            id="change name",
        ),
        pytest.param(
            replace(OLD_TIER1, value=0), "value: Forbidden: may not be changed in an update.", id="remove value"
        ),
        pytest.param(
            replace(OLD_TIER1, value=101), "value: Forbidden: may not be changed in an update.", id="change value"
        ),
        pytest.param(
            replace(OLD_TIER1, preemption_policy=PREEMPT_NEVER),
            'preemptionPolicy: Invalid value: "Never": field is immutable',
            id="change preemptionPolicy",
        ),
    ],
)
def test_a_priority_class_update_may_not_change_identity_value_or_policy(new: PriorityClass, field_error: str) -> None:
    with pytest.raises(ApiError) as caught:
        validate_priority_class_update(OLD_TIER1, new)
    assert caught.value.reason == REASON_INVALID
    assert [str(e) for e in caught.value.field_errors] == [field_error]


# --- TestPriorityClassAdmission (one global default) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        pytest.param([], DEFAULT_CLASS_1, id="one default class"),
        pytest.param(
            [],
            make_class(
                "system-test", HIGHEST_USER_DEFINABLE_PRIORITY + 1, description="Name has system critical prefix"
            ),
            id="system name and value are allowed by admission controller",
        ),
        pytest.param(
            [DEFAULT_CLASS_1], replace(DEFAULT_CLASS_1, description="new"), id="updating the default class itself"
        ),
        pytest.param([DEFAULT_CLASS_1], NONDEFAULT_CLASS_1, id="a non-default class beside a default"),
        pytest.param(
            [DEFAULT_CLASS_1], replace(DEFAULT_CLASS_1, global_default=False), id="the default class gives up its role"
        ),
    ],
)
def test_a_global_default_is_accepted_when_no_other_class_holds_it(
    existing: list[PriorityClass], new: PriorityClass
) -> None:
    check_global_default(existing, new)


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        pytest.param([DEFAULT_CLASS_1], DEFAULT_CLASS_2, id="more than one default classes"),
        pytest.param(
            [DEFAULT_CLASS_1, NONDEFAULT_CLASS_1],
            replace(NONDEFAULT_CLASS_1, global_default=True),
            id="another class is flipped to default",
        ),
    ],
)
def test_a_second_global_default_is_forbidden(existing: list[PriorityClass], new: PriorityClass) -> None:
    with pytest.raises(ApiError) as caught:
        check_global_default(existing, new)
    assert caught.value.reason == REASON_FORBIDDEN
    assert caught.value.message == (
        f'priorityclasses.scheduling.k8s.io "{new.name}" is forbidden: '
        "PriorityClass default1 is already marked as default. Only one default can exist"
    )


# --- TestDefaultPriority ------------------------------------------------------------------------------------------

UPDATED_DEFAULT_CLASS_1 = replace(DEFAULT_CLASS_1, global_default=False)


@pytest.mark.parametrize(
    ("before", "after", "expected_before", "expected_after"),
    [
        pytest.param(
            [DEFAULT_CLASS_1],
            [DEFAULT_CLASS_1],
            DEFAULT_CLASS_1,
            DEFAULT_CLASS_1,
            id="simple resolution with a default class",
        ),
        pytest.param(
            [NONDEFAULT_CLASS_1], [NONDEFAULT_CLASS_1, DEFAULT_CLASS_1], None, DEFAULT_CLASS_1, id="add a default class"
        ),
        pytest.param(
            [DEFAULT_CLASS_1, DEFAULT_CLASS_2],
            [DEFAULT_CLASS_2],
            DEFAULT_CLASS_1,
            DEFAULT_CLASS_2,
            id="multiple default classes resolves to the minimum value among them",
        ),
        pytest.param([DEFAULT_CLASS_1], [], DEFAULT_CLASS_1, None, id="delete default priority class"),
        pytest.param(
            [DEFAULT_CLASS_1],
            [UPDATED_DEFAULT_CLASS_1],
            DEFAULT_CLASS_1,
            None,
            id="update default class and remove its global default",
        ),
    ],
)
def test_the_default_priority_follows_the_classes(
    before: list[PriorityClass],
    after: list[PriorityClass],
    expected_before: PriorityClass | None,
    expected_after: PriorityClass | None,
) -> None:
    for classes, expected in ((before, expected_before), (after, expected_after)):
        assert global_default_class(classes) == expected
        admitted = admit_pod(make_pod("p"), by_name(classes))
        want_value = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS if expected is None else expected.value
        want_name = "" if expected is None else expected.name
        assert (admitted.spec.priority_class_name, admitted.spec.priority) == (want_name, want_value)


def test_the_lowest_value_wins_whatever_the_order_of_the_defaults() -> None:
    assert global_default_class([DEFAULT_CLASS_2, DEFAULT_CLASS_1]) == DEFAULT_CLASS_1


# --- TestPodAdmission ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("classes", "pod", "expected_priority", "expected_policy"),
    [
        pytest.param(
            [DEFAULT_CLASS_1, NONDEFAULT_CLASS_1], PODS[0], 1000, PREEMPT_LOWER_PRIORITY, id="Pod with priority class"
        ),
        pytest.param([DEFAULT_CLASS_1], PODS[1], 1000, PREEMPT_LOWER_PRIORITY, id="Pod without priority class"),
        pytest.param(
            [], PODS[1], 0, PREEMPT_LOWER_PRIORITY, id="pod without priority class and no existing priority class"
        ),
        pytest.param(
            [NONDEFAULT_CLASS_1],
            PODS[1],
            0,
            PREEMPT_LOWER_PRIORITY,
            id="pod without priority class and no default class",
        ),
        pytest.param(
            [SYSTEM_CLUSTER_CRITICAL_CLASS],
            PODS[4],
            SYSTEM_CRITICAL_PRIORITY,
            PREEMPT_LOWER_PRIORITY,
            id="pod with a system priority class",
        ),
        pytest.param(
            [SYSTEM_CLUSTER_CRITICAL_CLASS],
            PODS[5],
            SYSTEM_CRITICAL_PRIORITY,
            PREEMPT_LOWER_PRIORITY,
            id="mirror pod with system priority class",
        ),
        pytest.param(
            [SYSTEM_CLUSTER_CRITICAL_CLASS],
            PODS[7],
            SYSTEM_CRITICAL_PRIORITY,
            PREEMPT_LOWER_PRIORITY,
            id="pod with system critical priority in non-system namespace",
        ),
        pytest.param(
            [NONDEFAULT_CLASS_1],
            PODS[8],
            0,
            PREEMPT_LOWER_PRIORITY,
            id="pod with priority that matches computed priority",
        ),
        pytest.param(
            [DEFAULT_CLASS_2],
            PODS[9],
            DEFAULT_CLASS_2.value,
            PREEMPT_LOWER_PRIORITY,
            id="pod with priority that matches default priority",
        ),
        pytest.param(
            [SYSTEM_CLUSTER_CRITICAL_CLASS],
            PODS[10],
            SYSTEM_CRITICAL_PRIORITY,
            PREEMPT_LOWER_PRIORITY,
            id="pod with priority that matches resolved priority",
        ),
        pytest.param(
            [PREEMPTION_POLICY_CLASS],
            PODS[11],
            PREEMPTION_POLICY_CLASS.value,
            PREEMPT_LOWER_PRIORITY,
            id="pod with nil preemption policy",
        ),
        pytest.param(
            [PREEMPTION_POLICY_CLASS],
            PODS[12],
            PREEMPTION_POLICY_CLASS.value,
            PREEMPT_LOWER_PRIORITY,
            id="pod with preemption policy that matches resolved preemption policy",
        ),
        pytest.param(
            [NEVER_POLICY_CLASS],
            PODS[11],
            NEVER_POLICY_CLASS.value,
            PREEMPT_NEVER,
            id="a never-preempting class makes the pod non-preempting",
        ),
        pytest.param(
            [NEVER_POLICY_CLASS],
            PODS[1],
            NEVER_POLICY_CLASS.value,
            PREEMPT_NEVER,
            id="a never-preempting default class applies to pods without a class",
        ),
        pytest.param(
            [],
            PODS[4],
            SYSTEM_CRITICAL_PRIORITY,
            PREEMPT_LOWER_PRIORITY,
            id="a built-in class resolves even when the store omits it",
        ),
    ],
)
def test_a_pod_is_admitted_with_the_priority_its_class_computes(
    classes: list[PriorityClass], pod: Pod, expected_priority: int, expected_policy: str
) -> None:
    admitted = admit_pod(pod, by_name(classes))
    assert admitted.spec.priority == expected_priority
    assert admitted.spec.preemption_policy == expected_policy
    assert admitted.priority == expected_priority


@pytest.mark.parametrize(
    ("classes", "pod", "message"),
    [
        pytest.param(
            [DEFAULT_CLASS_1, NONDEFAULT_CLASS_1],
            PODS[2],
            'pods "pod-w-non-existing-priorityclass" is forbidden: no PriorityClass with name non-existing was found',
            id="Pod with non-existing priority class",
        ),
        pytest.param([], PODS[3], "no PriorityClass with name default1 was found", id="pod with integer priority"),
        pytest.param(
            [], PODS[6], "no PriorityClass with name default1 was found", id="mirror pod with integer priority"
        ),
        pytest.param(
            [NONDEFAULT_CLASS_1],
            make_pod("p", class_name=NONDEFAULT_CLASS_1.name, priority_value=INT_PRIORITY),
            'pods "p" is forbidden: the integer value of priority (1000) must not be provided in pod spec; '
            "priority admission controller computed 2000 from the given PriorityClass name",
            id="pod with a priority that differs from its class",
        ),
        pytest.param(
            [DEFAULT_CLASS_1],
            make_pod("p", priority_value=5),
            "the integer value of priority (5) must not be provided in pod spec; priority admission controller "
            "computed 1000 from the given PriorityClass name",
            id="pod with a priority that differs from the global default",
        ),
        pytest.param(
            [PREEMPTION_POLICY_CLASS],
            PODS[13],
            'pods "pod-preemption-policy-not-matching-resolved-preemption-policy" is forbidden: the string value '
            "of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller "
            "computed PreemptLowerPriority from the given PriorityClass name",
            id="pod with preemption policy that doesn't match resolved preemption policy",
        ),
        pytest.param(
            [],
            make_pod("p", policy=PREEMPT_NEVER),
            "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission "
            "controller computed PreemptLowerPriority from the given PriorityClass name",
            id="a non-preempting pod when no default class exists",
        ),
    ],
)
def test_a_pod_is_forbidden_when_its_class_or_values_do_not_resolve(
    classes: list[PriorityClass], pod: Pod, message: str
) -> None:
    with pytest.raises(ApiError) as caught:
        admit_pod(pod, by_name(classes))
    assert caught.value.reason == REASON_FORBIDDEN
    assert (caught.value.kind, caught.value.name, caught.value.namespace) == ("Pod", pod.name, pod.namespace)
    assert message in caught.value.message, caught.value.message


def test_the_missing_class_error_reads_like_kubectl() -> None:
    with pytest.raises(ApiError) as caught:
        admit_pod(make_pod("p", class_name="foo"), {})
    assert caught.value.kubectl_message() == (
        'Error from server (Forbidden): pods "p" is forbidden: no PriorityClass with name foo was found'
    )


def test_admission_returns_a_new_pod_and_leaves_the_input_alone() -> None:
    pod = make_pod("p")
    before = copy.deepcopy(pod)
    admitted = admit_pod(pod, by_name([DEFAULT_CLASS_1]))
    assert pod == before
    assert admitted is not pod and admitted.spec is not pod.spec
    assert admitted.spec.priority_class_name == DEFAULT_CLASS_1.name
    assert replace(admitted, spec=pod.spec) == pod


# --- pod UPDATE ---------------------------------------------------------------------------------------------------

ADMITTED = admit_pod(make_pod("p", class_name=NONDEFAULT_CLASS_1.name), by_name([NONDEFAULT_CLASS_1]))


def test_an_update_that_omits_priority_keeps_the_stored_values() -> None:
    resubmitted = make_pod("p")  # the manifest as the user wrote it, before defaulting
    updated = admit_pod_update(ADMITTED, resubmitted)
    assert (updated.spec.priority_class_name, updated.spec.priority, updated.spec.preemption_policy) == (
        NONDEFAULT_CLASS_1.name,
        NONDEFAULT_CLASS_1.value,
        PREEMPT_LOWER_PRIORITY,
    )
    assert resubmitted.spec.priority is None  # not modified


def test_an_update_that_repeats_the_stored_values_is_accepted() -> None:
    assert admit_pod_update(ADMITTED, ADMITTED) == ADMITTED


@pytest.mark.parametrize(
    ("changes", "field_error"),
    [
        pytest.param({"priority": 1}, "spec.priority: Invalid value: 1: field is immutable", id="priority changes"),
        pytest.param(
            {"preemption_policy": PREEMPT_NEVER},
            'spec.preemptionPolicy: Invalid value: "Never": field is immutable',
            id="preemptionPolicy changes",
        ),
        pytest.param(
            {"priority_class_name": "default1"},
            'spec.priorityClassName: Invalid value: "default1": field is immutable',
            id="priorityClassName changes",
        ),
    ],
)
def test_an_update_may_not_change_priority(changes: dict[str, object], field_error: str) -> None:
    changed = replace(ADMITTED, spec=replace(ADMITTED.spec, **changes))  # type: ignore[arg-type]
    with pytest.raises(ApiError) as caught:
        admit_pod_update(ADMITTED, changed)
    assert caught.value.reason == REASON_INVALID
    assert [str(e) for e in caught.value.field_errors] == [field_error]
    assert caught.value.message.startswith('Pod "p" is invalid: ')


def test_deleting_a_class_leaves_admitted_pods_untouched() -> None:
    classes = by_name([DEFAULT_CLASS_1, NONDEFAULT_CLASS_1])
    pods = [admit_pod(make_pod(f"p{i}", class_name=name), classes) for i, name in enumerate(classes)]
    before = copy.deepcopy(pods)
    del classes[NONDEFAULT_CLASS_1.name]
    assert pods == before
    # Updates never consult the classes, so a pod of a deleted class can still be updated...
    assert admit_pod_update(pods[1], make_pod("p1")).spec.priority == NONDEFAULT_CLASS_1.value
    # ...while a new pod naming it is refused.
    with pytest.raises(ApiError, match="no PriorityClass with name nondefault1 was found"):
        admit_pod(make_pod("p2", class_name=NONDEFAULT_CLASS_1.name), classes)
