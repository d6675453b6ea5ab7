"""What the filter and preemption services share: a replica of the cluster with its nominator, the
scheduler configuration, and pods named by a request (stored, by UID, or not stored, for a dry run)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager

import grpc

from podsched.admission.resource_quota import load_admission_config  # noqa: F401 (the services load both here)
from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object
from podsched.api.types import Pod
from podsched.cluster.state import Cluster
from podsched.config.scheduler_config import SchedulerConfig, parse_scheduler_config
from podsched.queue.cluster_feed import nominator_feed
from podsched.queue.nominator import Nominator, assumed_nominations
from podsched.scheduler.assumed import AssumedPods
from podsched.scheduler.profile import only_responsible
from podsched.scheduler.room import RoomTracker
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2
from podsched_service.replica import Replica

DRY_RUN_UID = "dry-run"


def load_scheduler_config(path: str) -> SchedulerConfig:
    """The KubeSchedulerConfiguration PODSCHED_SCHEDULER_CONFIG names (every profile), or the
    default scheduler's when empty. A file that cannot be read or is invalid raises ValueError
    naming the file and the field (`profiles[1].schedulerName: Duplicate value: ...`): the service
    exits with that line instead of starting with a configuration other than the one given."""
    if not path:
        return SchedulerConfig()
    try:
        with open(path, encoding="utf-8") as handle:
            return parse_scheduler_config(handle.read(), path)
    except OSError as error:
        raise ValueError(f"PODSCHED_SCHEDULER_CONFIG: cannot read {path}: {error.strerror}") from error
    except ApiError as error:
        raise ValueError(f"PODSCHED_SCHEDULER_CONFIG: invalid {path}: {error.message}") from error


class ClusterCopy:
    """A replica Cluster, following the log, with the nominations it implies: those of pods some
    profile of `scheduler_config` schedules (the queue's nominator holds no other, as upstream's
    holds only the pods its queue has seen)."""

    def __init__(
        self,
        bootstrap: str,
        prefix: str,
        follow_events: bool = False,
        scheduler_config: SchedulerConfig | None = None,
        defer_pending_pods: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`defer_pending_pods`: the replica decodes a pending pod's records only when a request
        comes (`catch_up`), see `Replica`. `clock`: the service's wall clock, the copy's `now`."""
        self.cluster = Cluster(clock, authoritative=False)
        self.nominator = Nominator()
        self.cluster.listeners.append(
            only_responsible(scheduler_config or SchedulerConfig(), nominator_feed(self.nominator))
        )
        self.room = RoomTracker(lambda: self.cluster.resource_version)
        self.cluster.listeners.append(self.room.on_change)
        # Requests read the copy between fetches, and its listeners (the nominator, RoomTracker) end
        # a fetch as they would have without a bound pod's update that its deletion follows.
        self.replica = Replica(
            self.cluster,
            bootstrap,
            prefix,
            follow_events,
            defer_pending_pods=defer_pending_pods,
            skip_updates_of_deleted_pods=True,
        )

    async def catch_up(
        self, min_resource_version: int, context: grpc.aio.ServicerContext, pods: Iterable[str] | None = None
    ) -> None:
        """Until the copy has applied the caller's view, deferred pod records included (only those of
        the `pods` uids, for a request that reads no other pending, not nominated pod); UNAVAILABLE
        if it cannot in time (the caller retries rather than get an answer computed on an older
        cluster)."""
        try:
            await self.replica.wait_for(min_resource_version)
        except TimeoutError:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"cache at resource version {self.replica.version}, behind {min_resource_version}",
            )
        self.replica.apply_deferred(pods)

    def assumed_nominations(self, nominations: Iterable[filter_pb2.Nomination]) -> AbstractContextManager[None]:
        """The nominator as if these nominations (or clearings) were in the log, for one request."""
        return assumed_nominations(
            self.nominator, self.cluster.pods_by_uid, [(n.pod_uid, n.node_name) for n in nominations]
        )


def decision_nominations(pod_uid: str, decision: preemption_pb2.PostFilterResponse) -> list[filter_pb2.Nomination]:
    """The nominations a PostFilter decision's RecordFailure writes (an empty node clears): the pod
    to its node and the lower-priority pods nominated there cleared, or, when preemption found no
    candidate, the pod's own nomination cleared. The cycles after it assume them until the write is
    in the log (the queue for its later FindNodes, the preemption service within a run)."""
    if decision.nominated_node_name:
        return [filter_pb2.Nomination(pod_uid=pod_uid, node_name=decision.nominated_node_name)] + [
            filter_pb2.Nomination(pod_uid=p.uid) for p in decision.nominations_to_clear
        ]
    return [filter_pb2.Nomination(pod_uid=pod_uid)] if decision.clear_own_nomination else []


def assume_binds(assumed: AssumedPods, cluster: Cluster, binds: Iterable[filter_pb2.AssumedBind]) -> None:
    """The caller's placements whose binds are still being committed, assumed on their nodes for one
    request. A pod this copy already has bound (the bind reached the log), does not know, or whose
    node it does not know is skipped."""
    for bind in binds:
        pod = cluster.pods_by_uid.get(bind.pod_uid)
        if pod is not None and not pod.spec.node_name and bind.node_name in cluster.node_infos:
            assumed.assume(pod, bind.node_name)


class PodLookupError(Exception):
    """The request names a pod this service cannot use (gone, already bound, malformed)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def pod_to_place(cluster: Cluster, ref: filter_pb2.PodToPlace) -> Pod:
    if ref.pod_json:
        try:
            obj = decode_object(json.loads(ref.pod_json), owned=True)
        except (ApiError, ValueError) as error:
            raise PodLookupError(grpc.StatusCode.INVALID_ARGUMENT, f"pod_json: {error}") from error
        if not isinstance(obj, Pod):
            raise PodLookupError(grpc.StatusCode.INVALID_ARGUMENT, f"pod_json: a {obj.kind}, not a Pod")
        obj.metadata.uid = obj.metadata.uid or DRY_RUN_UID
        return obj
    pod = cluster.pods_by_uid.get(ref.uid)
    if pod is None:
        raise PodLookupError(grpc.StatusCode.NOT_FOUND, f"pod with uid {ref.uid} not found")
    return pod
