"""The queue service: the host of the scheduling queue and of the scheduling loop (scheduler.py), and
the state the public API (api.py) answers from.

It follows the binder's log into a replica of the cluster, which feeds the scheduling queue exactly
as `simulate` feeds it (podsched.queue.cluster_feed). Every downstream request names the resource
version of the last write this service saw acknowledged, so the other services answer on copies at
least that new. Reads (Get, ListEvents) wait the same way, so a client reads its own writes.

It serves once the objects are replayed; the events (an hour of them, however many pods churned in
that hour) load behind it. Nothing but the Events API reads them: ListEvents waits for the load,
and a Watch of events gets only events applied after it (the replica's `event_listeners`), reading
what it resumes from in the log itself."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket

from podsched.cluster.state import Cluster
from podsched.queue import scheduling_queue as sq
from podsched.queue.cluster_feed import queue_feed
from podsched.scheduler.pod_group_scheduler import PodGroupScheduling
from podsched.scheduler.profile import only_responsible
from podsched_proto.binder.v1 import binder_pb2_grpc
from podsched_proto.filter.v1 import filter_pb2_grpc
from podsched_proto.preemption.v1 import preemption_pb2_grpc
from podsched_service import telemetry
from podsched_service.leader_election import QUEUE_ROLE, LeaderElection
from podsched_service.replica import Replica
from podsched_service.scheduling import load_admission_config, load_scheduler_config

from .access import ApiAccess
from .binder_writes import BinderWrites
from .clock import Clock, SystemClock
from .config import QueueConfig
from .instrumentation import AttemptTelemetry, report_pending_pods
from .peers import RPC_TIMEOUT, BinderClient, FilterClient, PreemptionClient, peer_channel
from .scheduler import Scheduler
from .watch import WatchFanOut

log = logging.getLogger(__name__)

# How long an Events list waits for the events to load after a start (a full hour of a busy
# cluster's events takes seconds on an idle machine, tens on a loaded one) before UNAVAILABLE.
EVENTS_LOAD_WAIT_SECONDS = 60.0


class QueueService:
    def __init__(self, config: QueueConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.scheduler_config = load_scheduler_config(config.scheduler_config)
        # The binder enforces ResourceQuota; this copy answers dry runs with the same configuration.
        self.cluster = Cluster(
            self.clock.time, authoritative=False, quota_admission=load_admission_config(config.admission_config)
        )
        # GenericWorkload: GangScheduling's PreEnqueue holds a gang until minCount pods exist.
        self.pod_groups = (
            PodGroupScheduling(self.cluster, self.scheduler_config) if self.scheduler_config.generic_workload else None
        )
        self.queue = sq.SchedulingQueue(
            self.clock.time,
            self.scheduler_config.pod_initial_backoff_seconds,
            self.scheduler_config.pod_max_backoff_seconds,
            pre_enqueue=self.pod_groups.pre_enqueue if self.pod_groups is not None else None,
        )
        # Only pods some profile schedules are queued; the others are another scheduler's.
        self.cluster.listeners.append(only_responsible(self.scheduler_config, queue_feed(self.queue)))
        self.replica = Replica(
            self.cluster,
            config.kafka_bootstrap_servers,
            config.topic_prefix,
            follow_events=True,
            events_retention_seconds=config.events_retention_ms / 1000,
        )
        # The newest write this service saw acknowledged by the binder.
        self.known_version = 0
        self.known_event_sequence = -1
        self.access = ApiAccess.from_config(config, self.clock)
        self.channels = [
            peer_channel(config, address)
            for address in (config.filter_address, config.preemption_address, config.binder_address)
        ]
        self.filter = filter_pb2_grpc.FilterStub(self.channels[0])
        self.preemption = preemption_pb2_grpc.PreemptionStub(self.channels[1])
        self.binder = binder_pb2_grpc.BinderStub(self.channels[2])
        self.writes = BinderWrites(self.binder, RPC_TIMEOUT)
        self.watch = WatchFanOut(self.clock, config.watch_buffer_size)
        self.cluster.listeners.append(self.watch.on_change)
        # Events the replica loads at start are history: a Watch reads those from the log.
        self.replica.event_listeners.append(self.watch.on_event)
        self.telemetry = AttemptTelemetry(self.clock)
        if telemetry.tracing_enabled():
            self.cluster.listeners.append(self.telemetry.remember_pod_context)
        report_pending_pods(self.queue)
        self.scheduler = Scheduler(
            queue=self.queue,
            pods_by_uid=self.cluster.pods_by_uid.get,
            scheduler_config=self.scheduler_config,
            batch_size=config.batch_size,
            pod_group_batch_size=config.pod_group_batch_size,
            filter=FilterClient(self.filter),
            preemption=PreemptionClient(self.preemption),
            binder=BinderClient(self.binder, lambda: self.election.epoch if self.election is not None else 0),
            written=self,
            clock=self.clock,
            observer=self.telemetry,
            pod_group_of=self.pod_groups.group_of if self.pod_groups is not None else None,
        )
        self.replica.on_applied.append(self.scheduler.wake.set)
        self._loop_task: asyncio.Task[None] | None = None
        self._joining: asyncio.Task[None] | None = None
        self.election: LeaderElection | None = None
        if config.leader_election:
            identity = config.replica_id or f"{socket.gethostname()}-{config.listen_address.rsplit(':', 1)[-1]}"
            self.election = LeaderElection(
                config.kafka_bootstrap_servers,
                config.topic_prefix,
                QUEUE_ROLE,
                identity,
                on_elected=lambda epoch: self._start_scheduling(),
                on_deposed=self._deposed,
                clock=self.clock,
            )

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        # The audit log must be ready before a write is served; it gets ready while the objects replay.
        # The events load behind (the replica's `events_loaded`).
        await asyncio.gather(self.access.start(), self.replica.start())
        self.known_version = self.replica.version
        if self.election is None:
            self._start_scheduling()
        else:  # every replica serves the API at once; it schedules once elected
            self._joining = asyncio.create_task(self.election.start(), name="leader-election-join")
            self._joining.add_done_callback(_join_ended)

    def _start_scheduling(self) -> None:
        if self._loop_task is None:
            self._loop_task = asyncio.create_task(self.scheduler.run(), name="scheduling-loop")

    def _deposed(self) -> None:
        """Another replica leads now: stop scheduling at once and exit (as kube-scheduler does when it
        loses its lease); the supervisor starts this replica again, as a standby. Whatever it still
        sends, the binder refuses (an older epoch)."""
        if self._loop_task is not None:
            self._loop_task.cancel()
        log.error("deposed as the scheduling leader: stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    @property
    def leading(self) -> bool:
        """Whether this replica runs the scheduling loop."""
        return self.election.leading if self.election is not None else self._loop_task is not None

    async def stop(self) -> None:
        if self._joining is not None and not self._joining.done():
            self._joining.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._joining
        if self.election is not None:
            await self.election.stop()
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._loop_task
        await self.scheduler.stop()
        self.watch.close()
        await self.replica.stop()
        for channel in self.channels:
            await channel.close()
        await self.access.stop()

    # --- read-your-writes (scheduler.WrittenLog) ---------------------------------------------------

    @property
    def view_version(self) -> int:
        """The version downstream services must have applied before answering: every write this
        service saw acknowledged, and every change its own replica has applied (a retry triggered
        by, say, a victim's deletion must not be filtered on a copy without that deletion)."""
        return max(self.known_version, self.replica.version)

    def saw(self, version: int, event_sequence: int) -> None:
        self.known_version = max(self.known_version, version)
        self.known_event_sequence = max(self.known_event_sequence, event_sequence)

    async def caught_up(self, timeout: float = 20.0) -> None:
        """Until the replica holds every change this service saw acknowledged. Not the events: the
        scheduling loop and the object reads do not read them (`events_caught_up` does)."""
        await self.replica.wait_for(self.known_version, timeout=timeout)

    async def events_caught_up(self, timeout: float = EVENTS_LOAD_WAIT_SECONDS) -> None:
        """Until the replica has loaded the events the log held at start and holds every change and
        event this service saw acknowledged."""
        async with asyncio.timeout(timeout):
            await self.replica.wait_for(self.known_version, timeout=timeout)
            await self.replica.wait_for_events(self.known_event_sequence, timeout)


def _join_ended(task: asyncio.Task[None]) -> None:
    """A replica that could not join the election would never lead: crash, as a failed start would
    (the supervisor starts it again)."""
    if task.cancelled() or task.exception() is None:
        return
    log.critical("joining the leader election failed; exiting so the service restarts", exc_info=task.exception())
    os._exit(3)
