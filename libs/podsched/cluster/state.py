"""The cluster: one copy of the cluster's state with the parts that write it, composed.

  * `store`: objects, indexes (NodeInfo, ResourceQuota usage, history), watch notifications and
    `restore` from the binder's log;
  * `admission`: whether a write is accepted, shared with `--dry-run=server`;
  * `binder`: bind, evict preemption victims, nominate, record a failed attempt;
  * `node_agent`: bound pods become Running, terminating pods go away when their grace period ends,
    pods created on a node that cannot hold them fail;
  * `disruption`: the disruption controller keeping PodDisruptionBudget status current;
  * `eviction`: the kubelet's node-pressure eviction (`node_pressure`);
  * `controllers`: the ReplicaSet, Deployment and Job controllers (`podsched.controllers`), run
    after each batch of writes by the single writer;
  * `recorder`: Kubernetes Events.

`Cluster` is the single writer of placement decisions in the binder service, and the whole cluster
in `podsched simulate`; replicas (authoritative=False) follow the binder's log with `restore`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from podsched.admission.priority import builtin_priority_classes
from podsched.admission.resource_quota import QuotaAdmissionConfig
from podsched.api.types import (
    KIND_POD,
    ApiObject,
    Deployment,
    Job,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    ReplicaSet,
    ResourceQuota,
    Workload,
)
from podsched.cluster import events as ev
from podsched.cluster.admission import UNCHANGED, admit, admit_delete, admit_new_pod, workload_spec
from podsched.cluster.binder import Binder
from podsched.cluster.disruption import DisruptionController
from podsched.cluster.node_agent import NodeAgent
from podsched.cluster.node_pressure import EvictionManager
from podsched.cluster.store import Store
from podsched.controllers.manager import Controllers
from podsched.framework.node_info import Snapshot


class Cluster:
    """The parts above over one store. Its objects and operations keep the names callers use: the
    store's dicts are shared, not copied, and each operation is the part's own bound method."""

    def __init__(
        self,
        clock: Callable[[], float],
        uid_factory: Callable[[], str] | None = None,
        authoritative: bool = True,
        quota_admission: QuotaAdmissionConfig | None = None,
        keep_history: bool = False,
    ) -> None:
        """`keep_history`: keep the last state of every pod ever created in `history` (`simulate`
        reports it); a service's copy does not, so it stays the size of the live cluster."""
        self.clock = clock
        # A replica (authoritative=False) follows the binder's log with `restore`: it never computes
        # PDB status itself but keeps the status the binder published.
        self.authoritative = authoritative
        counter = itertools.count(1)
        self.new_uid = uid_factory or (lambda: f"{next(counter):08x}-0000-4000-8000-000000000000")
        self.quota_admission = quota_admission or QuotaAdmissionConfig()
        self.store = Store(clock, self.new_uid, authoritative, keep_history)
        self.recorder = ev.EventRecorder(clock)
        self.node_agent = NodeAgent(self.store, self.recorder, clock)
        self.binder = Binder(self.store, self.recorder, self.node_agent, clock)
        self.disruption = DisruptionController(self.store, clock)
        self.eviction = EvictionManager(self.store, self.recorder, clock)
        self.controllers = Controllers(
            self.store,
            self.recorder,
            clock,
            create_pod=self._create_owned_pod,
            delete_pod=self._delete_owned_pod,
            save=self.write_workload,
            release=self.node_agent.release,
        )

        # The store's objects and indexes, and the event log, read directly by the scheduler, the
        # services and `simulate`.
        store = self.store
        self.nodes = store.nodes
        self.node_infos = store.node_infos
        self.pods = store.pods
        self.pods_by_uid = store.pods_by_uid
        self.history = store.history
        self.priority_classes = store.priority_classes
        self.pdbs = store.pdbs
        self.resource_quotas = store.resource_quotas
        self.workloads = store.workloads
        self.pod_groups = store.pod_groups
        self.listeners = store.listeners
        self.events = self.recorder.events
        self.event_listeners = self.recorder.listeners

        # Each part's operations, called on the part itself (no extra call on the binder's hot path).
        self.bind = self.binder.bind
        self.bind_group = self.binder.bind_group
        self.mark_unschedulable = self.binder.mark_unschedulable
        self.nominate = self.binder.nominate
        self.clear_nomination = self.binder.clear_nomination
        self.preempt_victim = self.binder.preempt_victim
        self.preempt_pod_group_victim = self.binder.preempt_pod_group_victim
        self.complete_terminations = self.node_agent.complete_terminations

        self.refresh_pdb_status = self.disruption.refresh
        self.record = self.recorder.record
        self.restore_event = self.recorder.restore
        self.restore_resource_version = store.restore_resource_version
        self.quotas_in = store.quotas_in

        for priority_class in builtin_priority_classes():
            store.new_meta(priority_class, None)
            store.store_priority_class(None, priority_class, notify=False)

    def reconcile(self) -> None:
        """What runs after each batch of writes (the binder's, simulate's step): the node agent's
        eviction manager relieves nodes under pressure, then the workload controllers react to
        everything that changed, evictions included (an evicted replica is replaced at once)."""
        self.eviction.relieve()
        self.controllers.run()

    def next_termination_time(self) -> float | None:
        """When something happens next on its own: a grace period or a simulated run ends, a
        Job's active deadline passes, or a node's pressure condition is due to go."""
        next_times = (
            self.node_agent.next_termination_time(),
            self.controllers.next_deadline(),
            self.eviction.next_lift_time(),
        )
        times = [t for t in next_times if t is not None]
        return min(times) if times else None

    @property
    def resource_version(self) -> int:
        """The last resource version assigned (or restored)."""
        return self.store.resource_version

    # --- reads --------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return Snapshot.from_map(self.node_infos)

    def pdb_list(self) -> list[PodDisruptionBudget]:
        self.refresh_pdb_status()
        return list(self.pdbs.values())

    # --- the API server's writes ----------------------------------------------------------------

    def admit_new_pod(self, pod: Pod) -> Pod:
        """Admission of a pod CREATE (`admission.admit_new_pod`) against this copy's state."""
        return admit_new_pod(self.store, pod, self.quota_admission)

    def apply(self, obj: ApiObject) -> tuple[str, ApiObject]:
        """Create or update one decoded, validated object. Returns (action, stored object).
        Raises ApiError and changes nothing if the object is not admitted."""
        admitted = admit(self.store, obj, self.quota_admission)
        if admitted.action == UNCHANGED:
            assert admitted.old is not None
            return UNCHANGED, admitted.old
        return admitted.action, self._write(admitted.obj)

    def _write(self, obj: ApiObject) -> ApiObject:
        """Store an admitted create or update, with the server-set metadata and the status the node
        agent and the disruption controller give it on the way in."""
        store = self.store
        if isinstance(obj, Pod):
            old_pod = store.pods.get(obj.key)
            if old_pod is not None:  # an admitted update carries the stored metadata (labels aside)
                store.stamp(obj)
                store.store_pod(old_pod, obj)
                return obj
            store.new_meta(obj, None)
            if obj.spec.node_name:
                obj = self.node_agent.admit_placed_pod(obj)
            store.store_pod(None, obj)
        elif isinstance(obj, PriorityClass):
            old_class = store.priority_classes.get(obj.name)
            store.new_meta(obj, old_class)
            store.store_priority_class(old_class, obj)
        elif isinstance(obj, Node):
            old_node = store.nodes.get(obj.name)
            store.new_meta(obj, old_node)
            store.store_node(old_node, obj)
        elif isinstance(obj, PodDisruptionBudget):
            old_pdb = store.pdbs.get(obj.key)
            store.new_meta(obj, old_pdb)
            # The API server's PDB strategy: generation 1 on create, +1 on every spec change.
            obj.metadata.generation = old_pdb.metadata.generation + 1 if old_pdb is not None else 1
            self.disruption.sync_on_write(obj, old_pdb)
            store.store_pdb(old_pdb, obj)
        elif isinstance(obj, ReplicaSet | Deployment | Job):
            return self.write_workload(obj, store.workloads[obj.kind].get(obj.key))
        elif isinstance(obj, PodGroup):
            old_group = store.pod_groups.get(obj.key)
            store.new_meta(obj, old_group)
            store.store_pod_group(old_group, obj)
        else:
            assert isinstance(obj, ResourceQuota)
            old_quota = store.resource_quotas.get(obj.key)
            store.new_meta(obj, old_quota)
            return store.store_resource_quota(old_quota, obj)
        return obj

    def write_workload(self, obj: Workload, old: Workload | None) -> Workload:
        """Store a ReplicaSet, Deployment or Job (a user's or a controller's write): generation 1 on
        create and +1 on each spec change, as the API server's strategies keep it."""
        store = self.store
        generation = old.metadata.generation if old is not None else 0
        spec_changed = old is None or workload_spec(obj) != workload_spec(old)
        store.new_meta(obj, old)
        obj.metadata.generation = generation + 1 if spec_changed else generation
        store.store_workload(old, obj)
        return obj

    def _create_owned_pod(self, pod: Pod) -> Pod:
        """A controller's pod create: the API server's path (generateName, Priority and quota admission)."""
        _, stored = self.apply(pod)
        assert isinstance(stored, Pod)
        return stored

    def _delete_owned_pod(self, pod: Pod) -> None:
        self.node_agent.delete(pod, None)

    def delete(self, kind: str, namespace: str, name: str, grace_period: int | None = None) -> ApiObject:
        """Delete an object. A bound pod terminates gracefully (it keeps its resources until its grace
        period ends); an unbound pod goes at once. Deleting a PriorityClass leaves pods untouched."""
        admit_delete(self.store, kind, namespace, name, grace_period)
        if kind == KIND_POD:
            return self.node_agent.delete(self.pods[(namespace, name)], grace_period)
        removed = self.store.remove(kind, namespace, name)
        assert removed is not None
        return removed

    # --- following the binder's log -------------------------------------------------------------

    def restore(self, change_type: str, obj: ApiObject) -> None:
        """Apply one change exactly as the binder recorded it: no admission, no events, the recorded
        resource version. Replicas follow the log with this; a restarting binder rebuilds with it.
        Listeners hear the change as if it had happened here."""
        self.store.restore(change_type, obj)
        if isinstance(obj, Pod):
            self.node_agent.follow(change_type, obj)

    def restore_pod_removal(self, uid: str, namespace: str, name: str, version: int) -> None:
        """`restore` of a pod's removal from what identifies it, without the pod's last state (which
        only `keep_history` keeps: such a copy decodes the record and calls `restore`)."""
        assert not self.store.keep_history, "the history keeps the removed pod's recorded last state"
        self.store.restore_pod_removal(uid, namespace, name, version)
        self.node_agent.forget(uid)
