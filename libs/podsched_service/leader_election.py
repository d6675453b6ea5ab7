"""Leader election over Kafka's group coordination: of the replicas of one role (the queue), exactly one
leads at a time, and every leader holds a fencing epoch higher than any before it.

Each replica joins the consumer group `<prefix>podsched-<role>-leader` on the one-partition topic
`<prefix>podsched.leader.<role>.v1`; the group coordinator assigns that partition to one member, which
leads. On assignment it claims the lease: it appends a record naming itself to the topic, and the
record's offset + 1 is its epoch. Epochs only grow (the topic is append-only), so a writer that
receives each leader's epoch (the binder) refuses a deposed leader's writes once its successor has
written, as Kubernetes fences with a lease's resource version.

A member that stops heartbeating (a crash, a partition) leaves the group after the session timeout and
the partition moves to another member; a member joining does not move it (sticky assignment). A
member that loses the partition while alive is deposed:
`on_deposed` is called and it must stop acting as leader (the queue exits, as kube-scheduler does when
it loses its lease, and starts again as a standby). Static membership (`identity` is the group
instance id) lets a replica restarted under the same identity take its place at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from podsched_service.clock import Clock, SystemClock
from podsched_service.kafka_log import ensure_topic_names

log = logging.getLogger(__name__)

SESSION_TIMEOUT_MS = 6_000  # the brokers' group.min.session.timeout.ms default: the fastest failover
HEARTBEAT_INTERVAL_MS = 1_000
LEADER_TOPIC_CONFIG = {"retention.ms": "-1"}  # epochs are offsets: the claims must stay
QUEUE_ROLE = "queue"  # the scheduling loop: one leader among the queue replicas
BINDER_ROLE = "binder"  # the single writer: one leader among the binders


def leader_topic(prefix: str, role: str) -> str:
    return f"{prefix}podsched.leader.{role}.v1"


class LeaderElection:
    """One replica's membership in its role's election; `epoch` is 0 until it leads."""

    def __init__(
        self,
        bootstrap: str,
        prefix: str,
        role: str,
        identity: str,
        on_elected: Callable[[int], None],
        on_deposed: Callable[[], None],
        clock: Clock | None = None,
    ) -> None:
        self.clock = clock or SystemClock()  # the time a claim record says it was made
        self.bootstrap = bootstrap
        self.topic = leader_topic(prefix, role)
        self.group = f"{prefix}podsched-{role}-leader"
        self.identity = identity
        self.on_elected = on_elected
        self.on_deposed = on_deposed
        self.epoch = 0
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._poll: asyncio.Task[None] | None = None

    @property
    def leading(self) -> bool:
        return self.epoch > 0

    async def start(self) -> None:
        await ensure_topic_names(self.bootstrap, [self.topic], LEADER_TOPIC_CONFIG)
        self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True)
        await self._producer.start()
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            group_instance_id=self.identity,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            enable_auto_commit=False,
            auto_offset_reset="latest",
            # Sticky: a replica joining (a standby starting) leaves the partition, and so the lead,
            # where it is; only a member leaving the group moves it.
            partition_assignment_strategy=(StickyPartitionAssignor,),
        )
        await self._consumer.start()
        # Join the group only once this consumer's metadata has the topic: a member that joins
        # before (a topic just created on a cluster of several nodes) is assigned nothing, and the
        # group is not rebalanced again until the metadata's next refresh, minutes later.
        deadline = asyncio.get_running_loop().time() + 60.0
        while not self._consumer.partitions_for_topic(self.topic):
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"topic {self.topic} not in the cluster's metadata after 60 s")
            await self._consumer._client.force_metadata_update()
            await asyncio.sleep(0.1)
        self._consumer.subscribe([self.topic], listener=_Listener(self))
        # The group's membership is kept by polling (max.poll.interval): nothing to read here.
        self._poll = asyncio.create_task(self._keep_polling(), name=f"leader-election-{self.topic}")

    async def _keep_polling(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        while True:
            await consumer.getmany(timeout_ms=1000)

    async def _claim(self) -> None:
        """Append this replica's claim; its offset + 1 is the epoch."""
        assert self._producer is not None
        claim = json.dumps({"holder": self.identity, "time": self.clock.time()}).encode()
        metadata = await self._producer.send_and_wait(self.topic, claim, partition=0)
        self.epoch = metadata.offset + 1
        log.info("%s leads (epoch %d)", self.identity, self.epoch)
        self.on_elected(self.epoch)

    async def _assigned(self, leads: bool) -> None:
        """After each rebalance: claim the lease when this replica got the partition, stay leader
        when it kept it, and step down when it lost it."""
        if leads and not self.leading:
            await self._claim()
        elif not leads and self.leading:
            log.warning("%s is no longer the leader (epoch %d)", self.identity, self.epoch)
            self.epoch = 0
            self.on_deposed()

    async def stop(self) -> None:
        if self._poll is not None:
            self._poll.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._poll
        if self._consumer is not None:
            await self._consumer.stop()
        if self._producer is not None:
            await self._producer.stop()


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, election: LeaderElection) -> None:
        self.election = election

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        # Every rebalance revokes everything first (the eager protocol); whether the lead moved is
        # known only from the assignment that follows.
        pass

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await self.election._assigned(bool(assigned))


class EpochFence:
    """A writer's side of the election: it remembers the highest leader epoch it has seen and refuses
    a write from an older one (a deposed leader). Epoch 0 is a scheduler that takes part in no
    election; it is refused once any leader has been seen, so it cannot write beside one."""

    def __init__(self, floor: int = 0) -> None:
        self.highest = floor

    def admit(self, epoch: int) -> str | None:
        """None if a write from `epoch` may go ahead (raising the floor to it), else why not."""
        if epoch < self.highest:
            return (
                f"leader epoch {epoch} is older than {self.highest}: this scheduler was deposed "
                "and another leads (it must stop scheduling)"
            )
        self.highest = epoch
        return None


async def current_leader(bootstrap: str, prefix: str, role: str, timeout: float = 10.0) -> tuple[str, int] | None:
    """(holder, epoch) of the latest claim on the role's topic, or None if nobody ever led: what
    `make status` shows. The holder may have died since; the group moves the lease within the
    session timeout."""
    topic = leader_topic(prefix, role)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        if topic not in await consumer.topics():
            return None
        consumer.assign([partition])
        end = (await consumer.end_offsets([partition]))[partition]
        if end == 0:
            return None
        consumer.seek(partition, end - 1)
        records = await consumer.getmany(partition, timeout_ms=int(timeout * 1000))
        for record in records.get(partition, []):
            return str(json.loads(record.value)["holder"]), record.offset + 1
        return None
    finally:
        await consumer.stop()


async def latest_epoch(bootstrap: str, prefix: str, role: str) -> int:
    """The newest leader's epoch (0: none yet): the fencing floor of a writer that starts."""
    topic = leader_topic(prefix, role)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    await consumer.start()
    try:
        if topic not in await consumer.topics():
            return 0
        partition = TopicPartition(topic, 0)
        return int((await consumer.end_offsets([partition]))[partition])
    finally:
        await consumer.stop()
