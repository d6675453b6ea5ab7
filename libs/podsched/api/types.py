"""Typed Kubernetes objects: the subset of v1 Node/Pod/ResourceQuota, scheduling/v1 PriorityClass,
scheduling/v1beta1 PodGroup and policy/v1 PodDisruptionBudget that scheduling and admission read.

Objects are treated as values: a state change makes a new object with `dataclasses.replace`
(copy-on-write), so a scheduler snapshot holding the old object never sees a half-applied change.
Each object keeps the manifest it was decoded from (`source`) so that fields the scheduler does not
model are echoed back unchanged by `podsched get -o yaml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

# Well-known names, declared once.
KIND_NODE = "Node"
KIND_POD = "Pod"
KIND_PRIORITY_CLASS = "PriorityClass"
KIND_PDB = "PodDisruptionBudget"
KIND_RESOURCE_QUOTA = "ResourceQuota"
KIND_REPLICA_SET = "ReplicaSet"
KIND_DEPLOYMENT = "Deployment"
KIND_JOB = "Job"
KIND_POD_GROUP = "PodGroup"

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"

POD_PENDING = "Pending"
POD_RUNNING = "Running"
POD_SUCCEEDED = "Succeeded"
POD_FAILED = "Failed"

CONDITION_POD_SCHEDULED = "PodScheduled"
CONDITION_DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
REASON_UNSCHEDULABLE = "Unschedulable"

TAINT_NO_SCHEDULE = "NoSchedule"
TAINT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_NO_EXECUTE = "NoExecute"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_SCHEDULER_NAME = "default-scheduler"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
RESOURCE_EPHEMERAL_STORAGE = "ephemeral-storage"
RESOURCE_PODS = "pods"


@dataclass(slots=True)
class ObjectMeta:
    name: str
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: float | None = None  # seconds since the epoch (simulated or real clock)
    deletion_timestamp: float | None = None
    # The grace period a terminating pod was given (it may differ from the spec's when the delete
    # named one): with deletionTimestamp it says when the pod is gone, even after a restart.
    deletion_grace_period_seconds: int | None = None
    resource_version: int = 0
    # Set by the system on kinds whose spec changes it tracks (PodDisruptionBudget, the workloads): 1
    # on create, +1 on every spec change, as the API server does; 0 (omitted) elsewhere.
    generation: int = 0
    # A create without a name gets this prefix and a random suffix (names.SimpleNameGenerator).
    generate_name: str = ""
    # The workload that manages the object (a controller's pods), and what must happen before the
    # object may go (the Job controller's tracking finalizer).
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()

    def controller_ref(self) -> OwnerReference | None:
        """metav1.GetControllerOf: the owner reference with controller: true, if any."""
        return next((ref for ref in self.owner_references if ref.controller), None)


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """metadata.ownerReferences[]: the object that owns this one (apiVersion, kind, name, uid)."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False
    block_owner_deletion: bool = False


@dataclass(slots=True)
class Resource:
    """framework.Resource: what a pod requests or a node offers, in canonical integer units
    (CPU in millicores, memory and storage in bytes, everything else as a count)."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def from_map(values: Mapping[str, int], keep_zero_scalars: bool = False) -> Resource:
        """Build from {resource name: canonical value}. Extended resources of 0 are dropped unless
        asked for (a node's status echoes them back; a pod's request does not need them)."""
        resource = Resource()
        for name, value in values.items():
            if name == RESOURCE_CPU:
                resource.milli_cpu = value
            elif name == RESOURCE_MEMORY:
                resource.memory = value
            elif name == RESOURCE_EPHEMERAL_STORAGE:
                resource.ephemeral_storage = value
            elif name == RESOURCE_PODS:
                resource.allowed_pod_number = value
            elif value or keep_zero_scalars:
                resource.scalar[name] = value
        return resource

    def copy(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar))

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + value

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - value

    def get(self, name: str) -> int:
        if name == RESOURCE_CPU:
            return self.milli_cpu
        if name == RESOURCE_MEMORY:
            return self.memory
        if name == RESOURCE_EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == RESOURCE_PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)


# --- selectors -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelSelectorRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    required: tuple[NodeSelectorTerm, ...] | None = None  # None: no requirement; () matches nothing
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    topology_key: str
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class Affinity:
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal or Exists
    value: str = ""
    effect: str = ""  # empty matches every effect
    toleration_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str
    value: str = ""


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    requests: tuple[tuple[str, int], ...] = ()  # canonical units, see Resource
    ports: tuple[ContainerPort, ...] = ()
    restart_policy: str = ""  # "Always" marks a sidecar init container
    # resources.limits, canonical units like requests. Scheduling never reads them; ResourceQuota
    # does (limits.* resources, the BestEffort scope, "must specify limits.cpu").
    limits: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class PodCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None


class ObjectIdentity:
    """Identity accessors shared by every API object (all carry `metadata`)."""

    __slots__ = ()
    metadata: ObjectMeta

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def uid(self) -> str:
        return self.metadata.uid

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels

    @property
    def key(self) -> tuple[str, str]:
        """(namespace, name); the namespace is "" for cluster-scoped objects."""
        return (self.metadata.namespace, self.metadata.name)


# --- objects -------------------------------------------------------------------------------------


@dataclass(slots=True)
class PodSpec:
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: tuple[tuple[str, int], ...] = ()
    node_name: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    termination_grace_period_seconds: int = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # spec.schedulingGroup.podGroupName: the PodGroup (same namespace) the pod belongs to; None when
    # the pod has no schedulingGroup. The group need not exist when the pod is created.
    pod_group_name: str | None = None


@dataclass(slots=True)
class PodStatus:
    phase: str = POD_PENDING
    nominated_node_name: str = ""
    start_time: float | None = None
    conditions: tuple[PodCondition, ...] = ()
    # Why the pod is in its phase, as the kubelet says it (`Evicted` and its message).
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class Pod(ObjectIdentity):
    metadata: ObjectMeta
    spec: PodSpec = field(default_factory=PodSpec)
    status: PodStatus = field(default_factory=PodStatus)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # Derived once from the spec (see framework.resource.compute_pod_requests).
    _requests: Resource | None = field(default=None, compare=False, repr=False)

    kind = KIND_POD

    @property
    def priority(self) -> int:
        """corev1helpers.PodPriority: an unset priority counts as 0."""
        return self.spec.priority if self.spec.priority is not None else 0

    def condition(self, condition_type: str) -> PodCondition | None:
        for condition in self.status.conditions:
            if condition.type == condition_type:
                return condition
        return None


@dataclass(slots=True)
class NodeSpec:
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()


@dataclass(slots=True)
class NodeStatus:
    capacity: Resource = field(default_factory=Resource)
    allocatable: Resource = field(default_factory=Resource)


@dataclass(slots=True)
class Node(ObjectIdentity):
    metadata: ObjectMeta
    spec: NodeSpec = field(default_factory=NodeSpec)
    status: NodeStatus = field(default_factory=NodeStatus)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    kind = KIND_NODE


@dataclass(slots=True)
class PriorityClass(ObjectIdentity):
    metadata: ObjectMeta
    value: int
    global_default: bool = False
    description: str = ""
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    kind = KIND_PRIORITY_CLASS


@dataclass(slots=True)
class PodDisruptionBudgetStatus:
    current_healthy: int = 0
    desired_healthy: int = 0
    disruptions_allowed: int = 0
    expected_pods: int = 0
    disrupted_pods: dict[str, float] = field(default_factory=dict)  # pod name -> eviction time
    observed_generation: int = 0  # the PDB's metadata.generation this status was computed for


@dataclass(slots=True)
class PodDisruptionBudget(ObjectIdentity):
    metadata: ObjectMeta
    selector: LabelSelector | None = None
    min_available: int | str | None = None  # int or "NN%"
    max_unavailable: int | str | None = None
    status: PodDisruptionBudgetStatus = field(default_factory=PodDisruptionBudgetStatus)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    kind = KIND_PDB


@dataclass(frozen=True, slots=True)
class ScopedResourceSelectorRequirement:
    """One entry of a ResourceQuota's spec.scopeSelector.matchExpressions (or of an admission
    configuration's limitedResources[].matchScopes)."""

    scope_name: str  # PriorityClass, BestEffort, NotBestEffort, Terminating, NotTerminating, ...
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        """Go's %v of the struct, as upstream prints it in `insufficient quota to match these
        scopes: [{PriorityClass In [high]}]`."""
        return f"{{{self.scope_name} {self.operator} [{' '.join(self.values)}]}}"


@dataclass(slots=True)
class ResourceQuotaStatus:
    """status.hard (a copy of spec.hard) and status.used, exact, in base units (CPU in cores,
    memory in bytes). Both are the system's to compute: see `podsched.admission.resource_quota`."""

    hard: dict[str, Fraction] = field(default_factory=dict)
    used: dict[str, Fraction] = field(default_factory=dict)


@dataclass(slots=True)
class ResourceQuota(ObjectIdentity):
    metadata: ObjectMeta
    # spec.hard: resource name -> exact quantity in base units (cores, bytes, counts).
    hard: dict[str, Fraction] = field(default_factory=dict)
    # spec.hard entries written with a binary suffix (Ki, Mi, ...): printed back that way.
    binary_hard: frozenset[str] = frozenset()
    scopes: tuple[str, ...] = ()
    # spec.scopeSelector.matchExpressions; None when the quota has no scopeSelector.
    scope_selector: tuple[ScopedResourceSelectorRequirement, ...] | None = None
    status: ResourceQuotaStatus = field(default_factory=ResourceQuotaStatus)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    kind = KIND_RESOURCE_QUOTA

    @property
    def scope_requirements(self) -> tuple[ScopedResourceSelectorRequirement, ...]:
        """getScopeSelectorsFromQuota: each of spec.scopes as `<scope> Exists`, then the selector's
        expressions; a pod matches the quota's scopes when it matches every one."""
        from_scopes = tuple(ScopedResourceSelectorRequirement(scope, "Exists") for scope in self.scopes)
        return from_scopes + (self.scope_selector or ())


# --- workloads (apps/v1 ReplicaSet and Deployment, batch/v1 Job) -----------------------------------


@dataclass(slots=True)
class PodTemplate:
    """spec.template: the pod a controller creates, as the manifest gave it (already validated as a
    pod's metadata and spec when the workload was decoded)."""

    labels: dict[str, str] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)  # {"metadata": {...}, "spec": {...}}


@dataclass(slots=True)
class ReplicaSetStatus:
    replicas: int = 0
    fully_labeled_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    observed_generation: int = 0


@dataclass(slots=True)
class ReplicaSet(ObjectIdentity):
    metadata: ObjectMeta
    replicas: int = 1
    selector: LabelSelector | None = None
    template: PodTemplate = field(default_factory=PodTemplate)
    status: ReplicaSetStatus = field(default_factory=ReplicaSetStatus)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    kind = KIND_REPLICA_SET


ROLLING_UPDATE = "RollingUpdate"
RECREATE = "Recreate"


@dataclass(slots=True)
class DeploymentStatus:
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0
    observed_generation: int = 0


@dataclass(slots=True)
class Deployment(ObjectIdentity):
    metadata: ObjectMeta
    replicas: int = 1
    selector: LabelSelector | None = None
    template: PodTemplate = field(default_factory=PodTemplate)
    strategy: str = ROLLING_UPDATE
    max_surge: int | str = "25%"
    max_unavailable: int | str = "25%"
    status: DeploymentStatus = field(default_factory=DeploymentStatus)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    kind = KIND_DEPLOYMENT


# podFailurePolicy rule actions.
POD_FAILURE_FAIL_JOB = "FailJob"
POD_FAILURE_IGNORE = "Ignore"
POD_FAILURE_COUNT = "Count"
POD_FAILURE_FAIL_INDEX = "FailIndex"


@dataclass(frozen=True, slots=True)
class PodFailurePolicyRule:
    """spec.podFailurePolicy.rules[]: `action` when the pod's exit code matches `on_exit_codes`
    (operator In/NotIn over values) or one of `on_pod_conditions` (type, status) holds."""

    action: str
    on_exit_codes: tuple[str, tuple[int, ...]] | None = None
    on_pod_conditions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class JobCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None


@dataclass(slots=True)
class JobStatus:
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    ready: int = 0
    start_time: float | None = None
    completion_time: float | None = None
    conditions: tuple[JobCondition, ...] = ()

    def condition(self, condition_type: str) -> JobCondition | None:
        return next((c for c in self.conditions if c.type == condition_type and c.status == "True"), None)


@dataclass(slots=True)
class Job(ObjectIdentity):
    metadata: ObjectMeta
    parallelism: int = 1
    completions: int | None = 1
    backoff_limit: int = 6
    active_deadline_seconds: int | None = None
    pod_failure_policy: tuple[PodFailurePolicyRule, ...] | None = None
    selector: LabelSelector | None = None
    template: PodTemplate = field(default_factory=PodTemplate)
    status: JobStatus = field(default_factory=JobStatus)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    kind = KIND_JOB


Workload = ReplicaSet | Deployment | Job
WORKLOAD_KINDS = (KIND_REPLICA_SET, KIND_DEPLOYMENT, KIND_JOB)


# --- scheduling.k8s.io/v1beta1 PodGroup ----------------------------------------------------------------

# spec.schedulingPolicy: exactly one of `basic` and `gang` (a union).
SCHEDULING_POLICY_BASIC = "Basic"
SCHEDULING_POLICY_GANG = "Gang"
# spec.disruptionMode: exactly one of `single` (the default) and `all`.
DISRUPTION_MODE_SINGLE = "Single"
DISRUPTION_MODE_ALL = "All"
# status.conditions types and reasons (schedulingv1beta1).
CONDITION_POD_GROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
POD_GROUP_REASON_UNSCHEDULABLE = "Unschedulable"
POD_GROUP_REASON_SCHEDULER_ERROR = "SchedulerError"


@dataclass(frozen=True, slots=True)
class Condition:
    """metav1.Condition, as a PodGroup's status carries it."""

    type: str
    status: str  # True, False, Unknown
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None
    observed_generation: int = 0


@dataclass(slots=True)
class PodGroupStatus:
    conditions: tuple[Condition, ...] = ()

    def condition(self, condition_type: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == condition_type), None)


@dataclass(slots=True)
class PodGroup(ObjectIdentity):
    """A runtime group of pods scheduled together (pods join it by spec.schedulingGroup.podGroupName).

    `gang` groups are placed all or nothing: at least `min_count` of their pods must fit at once, or
    none binds. `basic` groups are scheduled pod by pod, as ordinary pods. Priority comes from the
    group's PriorityClass, resolved at admission as for pods (`podsched.admission.priority`)."""

    metadata: ObjectMeta
    scheduling_policy: str = SCHEDULING_POLICY_BASIC
    min_count: int = 0  # spec.schedulingPolicy.gang.minCount; 0 for a basic group
    disruption_mode: str = DISRUPTION_MODE_SINGLE
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    status: PodGroupStatus = field(default_factory=PodGroupStatus)
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    kind = KIND_POD_GROUP

    @property
    def is_gang(self) -> bool:
        return self.scheduling_policy == SCHEDULING_POLICY_GANG

    @property
    def group_priority(self) -> int:
        """The group's priority, 0 when unset (as corev1helpers.PodPriority counts a pod's)."""
        return self.priority if self.priority is not None else 0


ApiObject = Node | Pod | PriorityClass | PodDisruptionBudget | ResourceQuota | ReplicaSet | Deployment | Job | PodGroup
