"""Admission: what the API server checks and fills in before an object is stored.

`priority` is upstream's PriorityClass validation and Priority admission plugin; `resource_quota` its
ResourceQuota admission plugin and pod quota evaluator (usage, scopes, limitedResources).
"""

from podsched.admission.priority import (
    DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
    HIGHEST_USER_DEFINABLE_PRIORITY,
    SYSTEM_CLUSTER_CRITICAL,
    SYSTEM_CRITICAL_PRIORITY,
    SYSTEM_NODE_CRITICAL,
    SYSTEM_PRIORITY_CLASS_PREFIX,
    admit_pod,
    admit_pod_update,
    builtin_priority_classes,
    check_global_default,
    global_default_class,
    validate_priority_class,
    validate_priority_class_delete,
    validate_priority_class_update,
)

__all__ = [
    "DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_CLUSTER_CRITICAL",
    "SYSTEM_CRITICAL_PRIORITY",
    "SYSTEM_NODE_CRITICAL",
    "SYSTEM_PRIORITY_CLASS_PREFIX",
    "admit_pod",
    "admit_pod_update",
    "builtin_priority_classes",
    "check_global_default",
    "global_default_class",
    "validate_priority_class",
    "validate_priority_class_delete",
    "validate_priority_class_update",
]
