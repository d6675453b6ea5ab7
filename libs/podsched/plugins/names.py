"""Plugin names, declared once (upstream plugins/names/names.go)."""

PRIORITY_SORT = "PrioritySort"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
DEFAULT_PREEMPTION = "DefaultPreemption"
PREEMPTION_TOLERATION = "PreemptionToleration"  # kubernetes-sigs/scheduler-plugins
DEFAULT_BINDER = "DefaultBinder"
GANG_SCHEDULING = "GangScheduling"  # GenericWorkload: PreEnqueue and PlacementFeasible for gangs
POD_GROUP_PODS_COUNT = "PodGroupPodsCount"  # GenericWorkload: placement score
