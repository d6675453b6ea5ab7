"""PriorityQueue: activeQ (PrioritySort order), backoffQ and the unschedulable pool.

The clock is injected so `simulate` runs in simulated time. Cluster events move unschedulable pods
only when a plugin that rejected them registered for that event and its queueing hint, if it has
one, says Queue (the plugins' EventsToRegister, podsched.framework.events); pods that failed with
an error, or were hit by a relevant event while in flight, back off instead of waiting."""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from podsched.api.types import Pod

# The cluster events are the framework's; the queue's callers name them through this module too.
from podsched.framework.events import ASSIGNED_POD_ADD as ASSIGNED_POD_ADD
from podsched.framework.events import ASSIGNED_POD_DELETE as ASSIGNED_POD_DELETE
from podsched.framework.events import ASSIGNED_POD_UPDATE as ASSIGNED_POD_UPDATE
from podsched.framework.events import FORCE_ACTIVATE, RETRY_ALWAYS, Event, QueueingHintMap, plugin_cares
from podsched.framework.events import NODE_ADD as NODE_ADD
from podsched.framework.events import NODE_UPDATE as NODE_UPDATE
from podsched.framework.events import UNSCHEDULABLE_TIMEOUT as UNSCHEDULABLE_TIMEOUT
from podsched.framework.events import WILDCARD as WILDCARD
from podsched.framework.events import PodEvent as PodEvent
from podsched.framework.node_info import PodInfo
from podsched.framework.status import Status
from podsched.plugins.gang_scheduling import waiting_for_pod_group
from podsched.plugins.names import DEFAULT_PREEMPTION, GANG_SCHEDULING
from podsched.plugins.registry import default_queueing_hints
from podsched.queue.nominator import Nominator

DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1.0
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0  # 5 minutes
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0
BACKOFF_FLUSH_INTERVAL = 1.0


@dataclass(slots=True)
class QueuedPodInfo:
    pod_info: PodInfo
    timestamp: float  # when the pod was last (re-)added to the queue: the PrioritySort tie-break
    # The order in which `timestamp` was set, across pods: on a moving clock (a real cluster; the
    # oracle steps its fake clock per object and per cycle) a pod re-added later has a later
    # Timestamp, so PrioritySort's Less takes it after its equals even where the simulated clock
    # has not moved.
    stamp: int = 0
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    # upstream's QueueingParams counts, which decide the backoff (getBackoffTime): attempts that
    # ended rejected by a plugin, and attempts in a row that ended in an error (reset by a rejection).
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    unschedulable_since: float = 0.0
    last_failure_message: str = ""
    # Set while the pod waits with its rejected pod group: the group's backoff expiry, which it
    # waits out in the error backoffQ (see `add_attempted_pod_group`); None otherwise.
    group_backoff_expiry: float | None = None

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod

    @property
    def priority(self) -> int:
        return self.pod_info.pod.priority


def pod_group_member_pods_order(info: QueuedPodInfo) -> tuple[int, int, float, int, str]:
    """upstream's PodGroupMemberPodsOrderingFunc as a sort key: the order in which a pod group's
    pods are tried in its cycle. Higher priority first; then more attempts first (a pod's
    Timestamp is refreshed after every cycle, so the attempts, not the queue time, say which pods
    the group has tried longest); then the earlier queue time (`stamp` as in PrioritySort: the
    later of two pods re-added at one simulated instant has the later Timestamp on a moving
    clock); then the pod's name, upstream's tie-break for equal timestamps."""
    return (-info.priority, -info.attempts, info.timestamp, info.stamp, info.pod.name)


@dataclass(slots=True)
class PodGroupQueueingParams:
    """The QueueingParams of upstream's QueuedPodGroupInfo that decide a rejected group's backoff:
    they belong to the group entity, not to its pods, and live while any pod of it is queued."""

    unschedulable_count: int = 0
    consecutive_errors: int = 0


ACTIVE = "activeQ"
BACKOFF = "backoffQ"
UNSCHEDULABLE = "unschedulablePods"
IN_FLIGHT = "inFlight"
# Pods PreEnqueue holds back (scheduler_pending_pods{queue="gated"}); they wait in the pool.
GATED = "gated"
# upstream's incompletePodGroupPods (scheduler_pending_pods{queue="incomplete"}): pods whose PodGroup
# has not been observed; here PreEnqueue holds them back in the pool like other gated pods, and
# only the count tells them apart.
INCOMPLETE = "incompletePodGroupPods"
# upstream's pendingPodGroupPods (scheduler_pending_pods{queue="pending"}): pods that arrived while
# their pod group was in flight; they join the group when its attempt ends.
PENDING = "pendingPodGroupPods"

# PreEnqueueCheck: which pods an event may move (None: every pod).
PreCheck = Callable[[Pod], bool]
# DefaultPreemption's EventsToRegister with asynchronous preemption: the events that may move a
# pod group its PreEnqueue gated (wildcard events move every pod).
AWAITING_PREEMPTION_EVENTS = frozenset({ASSIGNED_POD_DELETE, *RETRY_ALWAYS})


class InFlightEvents:
    """The cluster events each in-flight pod has missed, as upstream's inFlightEvents: one shared log
    and each pod's position in it, so recording an event costs one append however many pods are in
    flight (a batch keeps up to its size in flight, and every change is an event)."""

    TRIM_AT = 4096  # log entries before the ones no in-flight pod needs are dropped

    def __init__(self) -> None:
        self._log: list[Event] = []
        self._base = 0  # the absolute position of _log[0]
        self._start: dict[str, int] = {}  # uid -> absolute position of its first missed event
        self._own: dict[str, list[Event]] = {}  # events for one pod only (a forced activation)
        # The preCheck an event came with (absolute position -> check): a pod group that is parked
        # after its attempt hears its missed events as if they came then, preCheck included.
        self._checks: dict[int, PreCheck] = {}

    def begin(self, uid: str) -> None:
        self._start[uid] = self._base + len(self._log)
        self._own.pop(uid, None)

    def record(self, event: Event, pre_check: PreCheck | None = None) -> None:
        if self._start:
            if pre_check is not None:
                self._checks[self._base + len(self._log)] = pre_check
            self._log.append(event)

    def record_for(self, uid: str, event: str) -> None:
        if uid in self._start:
            self._own.setdefault(uid, []).append(event)

    def end_if_missed(self, uid: str, matters: Callable[[Event], bool]) -> bool:
        """Whether the pod missed, since `begin`, an event that `matters` (looked at in order, up to
        the first that does: a failed pod's rejectors usually care about one of the first, and a
        batch's pods each missed every change of the batches settled meanwhile); it is no longer
        in flight."""
        start = self._start.get(uid)
        if start is None:
            return False
        missed = itertools.chain(itertools.islice(self._log, start - self._base, None), self._own.get(uid, ()))
        found = any(matters(event) for event in missed)
        self.forget(uid)
        return found

    def end_with_checks(self, uid: str) -> list[tuple[Event, PreCheck | None]]:
        """The events the pod missed since `begin` (empty if it was not in flight), each with the
        preCheck it came with (None: every pod); it is no longer in flight."""
        start = self._start.get(uid)
        if start is None:
            return []
        events = [
            (event, self._checks.get(position)) for position, event in enumerate(self._log[start - self._base :], start)
        ]
        events += [(event, None) for event in self._own.get(uid, [])]
        self.forget(uid)
        return events

    def forget(self, uid: str) -> None:
        """The pod is no longer in flight, and what it missed is not asked for (it was bound, deleted,
        or put back as if never popped): `end` without listing the events, which, for each pod of a
        batch bound, was every event since the batch began (a sixth of the queue's following of the
        log)."""
        if self._start.pop(uid, None) is None:
            return
        self._own.pop(uid, None)
        if not self._start:
            self._base += len(self._log)
            self._log.clear()
            self._checks.clear()
        elif len(self._log) >= self.TRIM_AT:
            oldest = min(self._start.values())
            del self._log[: oldest - self._base]
            self._base = oldest
            self._checks = {position: check for position, check in self._checks.items() if position >= oldest}


class SchedulingQueue:
    def __init__(
        self,
        clock: Callable[[], float],
        initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
        max_backoff: float = DEFAULT_POD_MAX_BACKOFF_SECONDS,
        max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        pop_from_backoff_q: bool = True,
        queueing_hints: QueueingHintMap | None = None,
        pre_enqueue: Callable[[Pod], Status | None] | None = None,
    ) -> None:
        self.clock = clock
        # PreEnqueue (GenericWorkload's GangScheduling): None when the gate is off, and then the
        # queue never looks at pod groups. A pod it refuses waits in the unschedulable pool,
        # "gated", until its group changes (`group_changed`).
        self.pre_enqueue = pre_enqueue
        self._gated: dict[str, Status] = {}  # uid -> the PreEnqueue status holding it back
        self._incomplete: set[str] = set()  # the gated pods whose PodGroup has not been observed
        self._group_members: dict[tuple[str, str], set[str]] = {}  # (namespace, group) -> queued uids
        self._group_params: dict[tuple[str, str], PodGroupQueueingParams] = {}
        # Pods of groups DefaultPreemption's PreEnqueue parked in the pool while their group's
        # asynchronous preemption ran (`add_attempted_pod_group`): only the events that plugin
        # registers (or a wildcard) move them, and then the whole group moves.
        self._awaiting_preemption: set[str] = set()
        # upstream's lastPoppedEntityKey, for every pod group popped whose attempt has not ended (a
        # batch pops several groups in a row), with the uids of the pods the attempt popped: a pod
        # of one that arrives meanwhile waits in pendingPodGroupPods (uids in arrival order)
        # instead of making an entity of its own.
        self._in_flight_pod_groups: dict[tuple[str, str], set[str]] = {}
        self._last_popped_uid = ""
        self._pending_pod_group_pods: dict[tuple[str, str], list[str]] = {}
        # In-flight groups whose PodGroup was deleted meanwhile: their pods come back incomplete.
        self._pod_groups_deleted_in_flight: set[tuple[str, str]] = set()
        # The plugins' EventsToRegister: which events may make a pod a plugin rejected schedulable.
        self.queueing_hints = queueing_hints if queueing_hints is not None else default_queueing_hints()
        self._plugins_registered_for: dict[str, frozenset[str]] = {}  # event name -> plugins registered for it
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        # SchedulerPopFromBackoffQ (KEP-5142, on by default upstream): an idle scheduler does not
        # wait for backoff to expire before retrying.
        self.pop_from_backoff_q = pop_from_backoff_q
        self.nominator = Nominator()
        self._seq = itertools.count()
        self._stamps = itertools.count(1)
        self._active: list[tuple[int, float, int, int, str]] = []
        self._backoff: list[tuple[float, int, float, int, int, str]] = []
        # entityErrorBackoffQ: entities with no rejector plugins, ordered by backoff expiry alone and
        # never popped before it (PopFromBackoffQ pops entityBackoffQ only): pods whose attempt
        # failed with an error, and rejected pod groups (upstream's group entity carries no
        # unschedulable plugins).
        self._error_backoff: list[tuple[float, int, str]] = []
        self._where: dict[str, str] = {}  # uid -> ACTIVE / BACKOFF / UNSCHEDULABLE / IN_FLIGHT
        # The pods in unschedulablePods, each with the order it first entered `_where`: events scan
        # only these (not every pending pod), in the order a scan of `_where` would visit them.
        self._unschedulable: dict[str, int] = {}
        self._first_seen: dict[str, int] = {}
        self._entry_seq: dict[str, int] = {}  # uid -> seq of its live heap entry (lazy deletion)
        self._infos: dict[str, QueuedPodInfo] = {}
        self._in_flight = InFlightEvents()

    # --- bookkeeping --------------------------------------------------------------------------

    def _place(self, uid: str, where: str) -> None:
        if uid not in self._where:
            self._first_seen[uid] = next(self._seq)
        self._where[uid] = where
        if where == UNSCHEDULABLE:
            self._unschedulable[uid] = self._first_seen[uid]
        else:
            self._unschedulable.pop(uid, None)

    def _forget(self, uid: str) -> None:
        self._where.pop(uid, None)
        self._first_seen.pop(uid, None)
        self._unschedulable.pop(uid, None)

    def _unschedulable_in_order(self, uids: Iterable[str] | None = None) -> list[str]:
        """`uids` (default: every unschedulable pod), in pool order."""
        return sorted(self._unschedulable if uids is None else uids, key=self._unschedulable.__getitem__)

    def _push_active(self, info: QueuedPodInfo) -> None:
        seq = next(self._seq)
        uid = info.pod.uid
        self._entry_seq[uid] = seq
        self._place(uid, ACTIVE)
        heapq.heappush(self._active, (-info.priority, info.timestamp, info.stamp, seq, uid))

    def _push_backoff(self, info: QueuedPodInfo) -> None:
        seq = next(self._seq)
        uid = info.pod.uid
        self._entry_seq[uid] = seq
        self._place(uid, BACKOFF)
        if self._in_error_backoff_q(info):
            heapq.heappush(self._error_backoff, (self.backoff_expiry(info), seq, uid))
            return
        heapq.heappush(self._backoff, (self.backoff_expiry(info), -info.priority, info.timestamp, info.stamp, seq, uid))

    @staticmethod
    def _in_error_backoff_q(info: QueuedPodInfo) -> bool:
        """upstream's backoffQueue.add: an entity with no unschedulable (or pending) plugins failed
        with an error and backs off in entityErrorBackoffQ; so does a rejected pod group."""
        return info.group_backoff_expiry is not None or not info.unschedulable_plugins

    def backoff_count(self, info: QueuedPodInfo) -> int:
        """The attempts the backoff doubles over (getBackoffTime): the consecutive errors after an
        error, else the unschedulable attempts; 0 before the first failure."""
        return info.consecutive_errors or info.unschedulable_count

    def backoff_duration(self, info: QueuedPodInfo) -> float:
        """initial * 2^(count-1), capped at max; 0 before the first failure (`backoff_count`)."""
        return self.pod_group_backoff_duration(self.backoff_count(info), 1)

    def backoff_expiry(self, info: QueuedPodInfo) -> float:
        if info.group_backoff_expiry is not None:
            return info.group_backoff_expiry
        duration = self.backoff_duration(info)
        if duration and self.pop_from_backoff_q:
            # Both backoff queues count in whole windows (`backoff_window_end`), so that pods whose
            # backoffs end in one window leave together, in activeQ's order.
            return self.backoff_window_end(info.timestamp + duration)
        return info.timestamp + duration

    def pod_group_backoff_duration(self, count: int, size: int) -> float:
        """upstream's calculateBackoffDuration for an entity of `size` pods after `count` attempts:
        initial * 2^(count-1), capped at max times the square root of the size (for more than one
        pod), in whole nanoseconds as upstream's time.Duration arithmetic."""
        if count == 0 or self.max_backoff == 0:
            return 0.0
        initial = round(self.initial_backoff * 1e9)
        max_backoff = round(self.max_backoff * 1e9)
        if size > 1:
            max_backoff = int(float(max_backoff) * math.sqrt(size))
        shift = count - 1
        if initial > max_backoff >> shift:
            return max_backoff / 1e9
        return (initial << shift) / 1e9

    @staticmethod
    def backoff_window_end(expiration: float) -> float:
        """When an entity whose backoff runs until `expiration` leaves backoffQ. With
        SchedulerPopFromBackoffQ upstream aligns BackoffExpiration down to backoffQ's 1 s ordering
        window (alignToWindow) and counts the entity as backing off while that window has not
        passed (isEntityBackingoff compares windows), so it ends where the next window starts; the
        flush that moves it runs at every window's start."""
        window = BACKOFF_FLUSH_INTERVAL
        return (math.floor(expiration / window) + 1) * window

    def is_backing_off(self, info: QueuedPodInfo) -> bool:
        return self.backoff_expiry(info) > self.clock()

    def _requeue(self, info: QueuedPodInfo) -> None:
        """To backoffQ while backing off, else activeQ."""
        if self.is_backing_off(info):
            self._push_backoff(info)
        else:
            self._push_active(info)

    # --- pod lifecycle ------------------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A new pending pod enters activeQ (unless PreEnqueue holds it back)."""
        pod_info = PodInfo(pod)
        info = QueuedPodInfo(pod_info, timestamp=self.clock(), stamp=next(self._stamps))
        self._infos[pod.uid] = info
        if self.pre_enqueue is not None and pod.spec.pod_group_name is not None:
            key = (pod.namespace, pod.spec.pod_group_name)
            self._group_members.setdefault(key, set()).add(pod.uid)
            status = self.pre_enqueue(pod)
            self.nominator.add(pod_info)
            if key in self._in_flight_pod_groups and not self._is_incomplete(pod, status):
                # addPodGroupMember: its group is the last popped entity, so the pod waits in
                # pendingPodGroupPods and joins the group when the attempt ends
                # (AddAttemptedPodGroupIfNeeded); PreEnqueue runs for it then.
                self._pending_pod_group_pods.setdefault(key, []).append(pod.uid)
                self._place(pod.uid, PENDING)
                return
            self._gate_or_activate(info, status)
            self.group_changed(*key)  # this pod may complete its gang's minCount
            return
        self._push_active(info)
        self.nominator.add(pod_info)

    # --- pod groups (GenericWorkload) ----------------------------------------------------------

    def _gate_or_activate(self, info: QueuedPodInfo, status: Status | None) -> bool:
        """Act on PreEnqueue's `status` for the pod: refused, it waits gated in the pool; admitted
        (None), it goes to activeQ. Returns whether it was admitted."""
        uid = info.pod.uid
        if status is None:
            self._gated.pop(uid, None)
            self._incomplete.discard(uid)
            parked = self._awaiting_group(info.pod)
            if parked:
                # The group entity waits in the pool, gated by DefaultPreemption: the pod joins it
                # there (addToPodGroupIfExists requeues the entity with queueSkip).
                info.unschedulable_plugins = set(parked[0].unschedulable_plugins)
                info.group_backoff_expiry = parked[0].group_backoff_expiry
                info.unschedulable_since = self.clock()
                self._awaiting_preemption.add(uid)
                self._place(uid, UNSCHEDULABLE)
                return True
            expiry = self._group_backoff_expiry(info.pod)
            if expiry is None:
                expiry = info.group_backoff_expiry  # its group was gated when it came back rejected
            if expiry is not None and expiry > self.clock():
                # The group entity is in backoffQ, or backs off still: a pod added to it waits
                # there with it (requeueEntityWithQueueingStrategy, queueAfterBackoff).
                info.group_backoff_expiry = expiry
                self._push_backoff(info)
            else:
                info.group_backoff_expiry = None
                self._push_active(info)
            return True
        self._gated[uid] = status
        if self._is_incomplete(info.pod, status):
            self._incomplete.add(uid)
        else:
            self._incomplete.discard(uid)
        info.unschedulable_plugins = {status.plugin}
        info.last_failure_message = status.message
        info.unschedulable_since = self.clock()
        self._place(uid, UNSCHEDULABLE)
        return False

    def _group_backoff_expiry(self, pod: Pod) -> float | None:
        """The backoff expiry of the pod's group while another pod of it waits in backoffQ, or
        gated in the pool after the group came back rejected (`add_attempted_pod_group`)."""
        if pod.spec.pod_group_name is None:
            return None
        for uid in self._group_members.get((pod.namespace, pod.spec.pod_group_name), ()):
            other = self._infos.get(uid)
            if uid == pod.uid or other is None:
                continue
            if self._where.get(uid) == BACKOFF or (uid in self._gated and other.group_backoff_expiry is not None):
                return other.group_backoff_expiry
        return None

    @staticmethod
    def _is_incomplete(pod: Pod, status: Status | None) -> bool:
        """Whether PreEnqueue holds the pod back because its PodGroup has not been observed
        (upstream's incompletePodGroupPods, which it checks before the in-flight group)."""
        name = pod.spec.pod_group_name
        return status is not None and name is not None and status.message == waiting_for_pod_group(name)

    def _end_pod_group_attempt(
        self, namespace: str, name: str, attempted: Collection[str] | None = None
    ) -> list[QueuedPodInfo]:
        """The group's attempt that popped `attempted` (None: whichever is in flight) ended
        (clearPoppedEntity): the pods that arrived meanwhile leave pendingPodGroupPods, in arrival
        order, for the caller to add to the group. An attempt ended already (at its decision, see
        `add_pending_pod_group_pods_after_success`) ends nothing, not even a later attempt of the
        same group."""
        key = (namespace, name)
        popped = self._in_flight_pod_groups.get(key)
        if popped is None or (attempted is not None and popped.isdisjoint(attempted)):
            return []
        del self._in_flight_pod_groups[key]
        self._pod_groups_deleted_in_flight.discard(key)
        uids = self._pending_pod_group_pods.pop(key, [])
        return [self._infos[uid] for uid in uids if self._where.get(uid) == PENDING]

    def gated_status(self, uid: str) -> Status | None:
        """The PreEnqueue status holding the pod out of the active queue, if one does."""
        return self._gated.get(uid)

    def pod_group_deleted(self, namespace: str, name: str) -> int:
        """DeletePodGroup: the group's queued pods (in activeQ, backoffQ or the pool) and those
        waiting for it in flight (pendingPodGroupPods) leave the queue for incompletePodGroupPods,
        where nothing schedules them until a PodGroup of that name is observed (`group_changed`);
        its pods in flight follow when they come back. Returns how many pods became incomplete."""
        if self.pre_enqueue is None:
            return 0
        key = (namespace, name)
        if key in self._in_flight_pod_groups:
            self._pod_groups_deleted_in_flight.add(key)
        self._pending_pod_group_pods.pop(key, None)
        moved = 0
        for uid in sorted(self._group_members.get(key, ()), key=self._first_seen.__getitem__):
            if self._where.get(uid) in (ACTIVE, BACKOFF, UNSCHEDULABLE, PENDING):
                self._make_incomplete(self._infos[uid])
                moved += 1
        return moved

    def _make_incomplete(self, info: QueuedPodInfo) -> None:
        """Into incompletePodGroupPods: here, held in the pool by GangScheduling's PreEnqueue status
        for a missing PodGroup, out of any queue's order."""
        uid = info.pod.uid
        name = info.pod.spec.pod_group_name
        assert name is not None
        self._entry_seq.pop(uid, None)
        self._awaiting_preemption.discard(uid)
        info.group_backoff_expiry = None
        self._gate_or_activate(info, Status.unresolvable(GANG_SCHEDULING, waiting_for_pod_group(name)))

    def _back_into_deleted_pod_group(self, info: QueuedPodInfo) -> bool:
        """A pod of an in-flight group whose PodGroup was deleted meanwhile comes back: as upstream's
        addPodGroupMember finds no root for it, it becomes incomplete. Returns whether it did."""
        name = info.pod.spec.pod_group_name
        if name is None or (info.pod.namespace, name) not in self._pod_groups_deleted_in_flight:
            return False
        self._make_incomplete(info)
        return True

    def group_changed(self, namespace: str, name: str) -> int:
        """The group or its set of pods changed (a pod of it added, the PodGroup added or its
        minCount changed): PreEnqueue runs again for its gated pods. Returns how many it admitted."""
        if self.pre_enqueue is None:
            return 0
        self._pod_groups_deleted_in_flight.discard((namespace, name))
        admitted = 0
        pre_enqueue = self.pre_enqueue
        verdict: tuple[Status | None] | None = None  # PreEnqueue's answer depends on the group only
        for uid in sorted(self._group_members.get((namespace, name), ()), key=self._first_seen.__getitem__):
            if self._where.get(uid) != UNSCHEDULABLE or uid in self._awaiting_preemption:
                continue  # a group DefaultPreemption gates moves on an assigned pod's deletion only
            info = self._infos[uid]
            if uid in self._gated:
                if verdict is None:
                    verdict = (pre_enqueue(info.pod),)
                admitted += self._gate_or_activate(info, verdict[0])
            elif GANG_SCHEDULING in info.unschedulable_plugins:
                # A gang rejected as a whole: a new pod of it, or a changed minCount, may let it fit.
                self._requeue(info)
                admitted += 1
        return admitted

    def take_group_members(self, namespace: str, name: str) -> list[QueuedPodInfo]:
        """Pop the group's other queued pods (active, backing off or unschedulable, not gated) to
        schedule them with the one just popped: upstream pops a pod group as one entity. Each is in
        flight with one more attempt; returned in the group's order (`pod_group_member_pods_order`).
        The group is in flight until its attempt ends (`add_attempted_pod_group`,
        `add_pending_pod_group_pods_after_success`, or its last pod leaving flight otherwise)."""
        taken: list[QueuedPodInfo] = []
        members = self._group_members.get((namespace, name), set())
        for uid in members:
            if self._where.get(uid) not in (ACTIVE, BACKOFF, UNSCHEDULABLE) or uid in self._gated:
                continue
            info = self._infos[uid]
            self._start_attempt(info)
            taken.append(info)
        popped = {info.pod.uid for info in taken}
        if self._last_popped_uid in members and self._where.get(self._last_popped_uid) == IN_FLIGHT:
            popped.add(self._last_popped_uid)
        self._in_flight_pod_groups[(namespace, name)] = popped
        taken.sort(key=pod_group_member_pods_order)
        return taken

    def update(self, old: Pod, new: Pod) -> None:
        """Update a pending pod in place; an unschedulable pod whose spec changed is retried."""
        info = self._infos.get(new.uid)
        pod_info = PodInfo(new)
        if info is None:
            self.add(new)
            return
        info.pod_info = pod_info
        self.nominator.update(old, pod_info)
        where = self._where.get(new.uid)
        # A changed spec may fit now. A status-only change (a nomination set or cleared) is the
        # general Pod/Update no plugin registers for: the pod stays where it is, and a nomination
        # that left its node moves it below only if its rejectors care (as upstream's Update).
        if where == UNSCHEDULABLE and old.spec != new.spec:
            if new.uid in self._awaiting_preemption:
                self._release_awaiting_group(new)
            else:
                self._requeue(info)
        elif where == ACTIVE:
            self._push_active(info)
        elif where == BACKOFF:
            self._push_backoff(info)
        if old.status.nominated_node_name and old.status.nominated_node_name != new.status.nominated_node_name:
            self._nomination_released(old)

    def _nomination_released(self, pod: Pod) -> None:
        """A nominated pod left its node (nomination changed, or the pod is gone): pods of lower or
        equal priority counted it as if it were assigned there, so it counts as an assigned pod's
        delete for them (upstream's updatePodInSchedulingQueue and deletePodFromSchedulingQueue:
        MoveAllToActiveOrBackoffQueue(AssignedPodDelete) with getLEPriorityPreCheck)."""
        priority = pod.priority
        self.on_event(PodEvent(ASSIGNED_POD_DELETE, pod, None), pre_check=lambda other: other.priority <= priority)

    def delete(self, pod: Pod) -> None:
        where = self._where.get(pod.uid)
        if self.pre_enqueue is not None and pod.spec.pod_group_name is not None:
            self._gated.pop(pod.uid, None)
            self._incomplete.discard(pod.uid)
            self._discard_group_member(pod.namespace, pod.spec.pod_group_name, pod.uid)
            if where == PENDING:  # pendingPodGroupPods.delete
                pending = self._pending_pod_group_pods.get((pod.namespace, pod.spec.pod_group_name), [])
                if pod.uid in pending:
                    pending.remove(pod.uid)
        known = self._infos.pop(pod.uid, None) is not None
        self._forget(pod.uid)
        self._awaiting_preemption.discard(pod.uid)
        self._entry_seq.pop(pod.uid, None)
        self._in_flight.forget(pod.uid)
        self.nominator.remove(pod)
        if known and pod.status.nominated_node_name and not pod.spec.node_name:
            self._nomination_released(pod)
        if where == IN_FLIGHT:
            self._pod_group_landed(pod, requeued_now=True)  # as `done`: the group had no pod left
        if len(self._active) > 2 * len(self._infos) + 64:
            self._drop_stale_active_entries()

    def _drop_stale_active_entries(self) -> None:
        """Deleting leaves the pod's activeQ entry behind, to be skipped when popped (lazy deletion). A
        queue that never pops, a standby queue replica's, which takes every pending pod from the log,
        would keep one for every pod it ever saw: rebuilt once most entries are stale, the heap stays
        the size of the queued pods."""
        self._active = [
            entry
            for entry in self._active
            if self._entry_seq.get(entry[4]) == entry[3] and self._where.get(entry[4]) == ACTIVE
        ]
        heapq.heapify(self._active)

    def contains(self, uid: str) -> bool:
        return uid in self._infos

    def info(self, uid: str) -> QueuedPodInfo | None:
        return self._infos.get(uid)

    def location(self, uid: str) -> str:
        return self._where.get(uid, "")

    # --- popping ------------------------------------------------------------------------------

    def _pop_heap_active(self) -> QueuedPodInfo | None:
        while self._active:
            _, _, _, seq, uid = heapq.heappop(self._active)
            if self._entry_seq.get(uid) == seq and self._where.get(uid) == ACTIVE:
                return self._infos[uid]
        return None

    def _pop_heap_backoff(self, only_expired: bool) -> QueuedPodInfo | None:
        now = self.clock()
        while self._backoff:
            expiry, _, _, _, seq, uid = self._backoff[0]
            if self._entry_seq.get(uid) != seq or self._where.get(uid) != BACKOFF:
                heapq.heappop(self._backoff)
                continue
            if only_expired and expiry > now:
                return None
            heapq.heappop(self._backoff)
            return self._infos[uid]
        return None

    def _pop_error_backoff_expired(self) -> QueuedPodInfo | None:
        now = self.clock()
        while self._error_backoff:
            expiry, seq, uid = self._error_backoff[0]
            if self._entry_seq.get(uid) != seq or self._where.get(uid) != BACKOFF:
                heapq.heappop(self._error_backoff)
                continue
            if expiry > now:
                return None
            heapq.heappop(self._error_backoff)
            return self._infos[uid]
        return None

    def flush_backoff_completed(self) -> int:
        """Move every pod whose backoff has expired to activeQ, from both backoff heaps
        (popAllBackoffCompleted)."""
        moved = 0
        while (info := self._pop_heap_backoff(only_expired=True)) is not None:
            self._push_active(info)
            moved += 1
        while (info := self._pop_error_backoff_expired()) is not None:
            self._push_active(info)
            moved += 1
        return moved

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None. Increments attempts and marks it in flight."""
        self.flush_backoff_completed()
        info = self._pop_heap_active()
        if info is None and self.pop_from_backoff_q:
            info = self._pop_heap_backoff(only_expired=False)
        if info is None:
            return None
        self._start_attempt(info)
        self._last_popped_uid = info.pod.uid
        return info

    def _start_attempt(self, info: QueuedPodInfo) -> None:
        """A popped pod: in flight, with one more attempt (the first one's time kept)."""
        uid = info.pod.uid
        self._place(uid, IN_FLIGHT)
        self._entry_seq.pop(uid, None)
        self._awaiting_preemption.discard(uid)
        info.group_backoff_expiry = None
        info.attempts += 1
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self.clock()
        self._in_flight.begin(uid)

    def unpop(self, info: QueuedPodInfo) -> None:
        """Return a popped pod that was not attempted (a batch stopped before it) to activeQ, as if
        it had never been popped: same attempt count, same place in the order."""
        uid = info.pod.uid
        if self._where.get(uid) != IN_FLIGHT:
            return
        self._in_flight.forget(uid)
        info.attempts -= 1
        if info.attempts == 0:
            info.initial_attempt_timestamp = None
        if not self._back_into_deleted_pod_group(info):
            self._push_active(info)
        self._pod_group_landed(info.pod, requeued_now=False)

    def done(self, uid: str) -> None:
        """The pod left the scheduling cycle bound (or deleted): forget it."""
        self._in_flight.forget(uid)
        if self._where.get(uid) == IN_FLIGHT:
            info = self._infos.pop(uid, None)
            self._forget(uid)
            if self.pre_enqueue is not None and info is not None and info.pod.spec.pod_group_name is not None:
                self._discard_group_member(info.pod.namespace, info.pod.spec.pod_group_name, uid)
                # The last of its group bound or gone before the group's attempt ended: the
                # attempt succeeded (or had no pod left to try), and the group's late pods queue
                # from now (AddAttemptedPodGroupIfNeeded with a success).
                self._pod_group_landed(info.pod, requeued_now=True)

    def _discard_group_member(self, namespace: str, name: str, uid: str) -> None:
        """The pod left the queue; a group with no queued pod left is no entity any more, and one
        queued later starts with fresh QueueingParams."""
        members = self._group_members.get((namespace, name))
        if members is not None:
            members.discard(uid)
            if not members:
                self._group_params.pop((namespace, name), None)

    def add_unschedulable_if_not_present(
        self,
        info: QueuedPodInfo,
        rejector_plugins: set[str],
        error: bool = False,
        message: str = "",
        failed_at: float | None = None,
    ) -> str:
        """Return the pod to the queue after a failed attempt; returns where it went.

        The queue time is refreshed (so it queues behind its equals) to `failed_at`, when the
        attempt failed (default: now); its backoff counts from then. An error backs off; otherwise
        events that arrived while the pod was in flight and that one of its rejectors cares about
        send it to backoff/active at once, and without such an event it waits in the pool."""
        uid = info.pod.uid
        if uid not in self._infos:
            return ""  # deleted while in flight
        now = self.clock() if failed_at is None else failed_at
        info.timestamp = now
        info.stamp = next(self._stamps)
        info.last_failure_message = message
        if error or not rejector_plugins:
            # upstream's AddUnschedulablePodIfNotPresent: no rejector plugin means the attempt
            # failed with an error (the scheduling framework clears a failed pod's plugins). It backs
            # off over its consecutive errors in entityErrorBackoffQ, which no event moves and an
            # idle queue never pops early (queueAfterBackoff: activeQ if its backoff has ended).
            self._in_flight.forget(uid)
            info.consecutive_errors += 1
            info.unschedulable_plugins = set()
            self._requeue(info)
        else:
            info.unschedulable_count += 1
            info.consecutive_errors = 0
            info.unschedulable_plugins = set(rejector_plugins)
            hints = self.queueing_hints
            if self._in_flight.end_if_missed(
                uid, lambda event: any(plugin_cares(hints, p, event, info.pod_info) for p in rejector_plugins)
            ):
                self._requeue(info)
            else:
                info.unschedulable_since = now
                self._place(uid, UNSCHEDULABLE)
        # A pod of a group backed off alone (its group's write failed): the last one ends the
        # group's attempt.
        self._back_into_deleted_pod_group(info)
        self._pod_group_landed(info.pod, requeued_now=True)
        return self._where[uid]

    def add_attempted_pod_group(
        self,
        namespace: str,
        name: str,
        failed: list[tuple[QueuedPodInfo, set[str], str]],
        error: bool,
        preempting: bool = False,
    ) -> str:
        """AddAttemptedPodGroupIfNeeded after a pod-group cycle that did not succeed: the group's pods
        (`failed`: each with its rejectors and message) go back as one entity, to backoffQ while the
        group backs off, else to activeQ: the group entity carries no unschedulable plugins, so no
        cluster event moves it; it is retried when its backoff ends. A rejected group counts one
        more unschedulable attempt and clears its error count; an `error` counts one more
        consecutive error. The backoff runs from now (the group's Timestamp): initial * 2^(count-1),
        at most max * sqrt(group size).

        `preempting`: the cycle started an asynchronous pod-group preemption (it sent evictions).
        Moving the group to either queue runs the PreEnqueue plugins, and DefaultPreemption's
        refuses a group whose preemption is still running, which it is while the cycle that
        started it ends: the group waits in the unschedulable pool, gated by DefaultPreemption,
        until an assigned pod's deletion (the one event that plugin registers) that a rejector of
        one of its pods cares about, or a wildcard event; the events its pods missed in flight (its
        own victims' evictions) count as arriving now.

        The pods of the group that arrived while it was in flight (pendingPodGroupPods) join it
        after the failed ones, as upstream adds them to the requeued entity: they share its
        Timestamp, backoff and rejectors (their attempts are their own), and count in its size.
        Returns where the pods went ("" if none is queued any more)."""
        now = self.clock()
        live = [entry for entry in failed if entry[0].pod.uid in self._infos]
        missed: list[tuple[Event, PreCheck | None]] = []
        for info, _, _ in failed:
            events = self._in_flight.end_with_checks(info.pod.uid)
            if len(events) > len(missed):  # every pod of the group was popped together
                missed = events
        together: set[str] = set().union(*(rejectors for _, rejectors, _ in live))
        if (namespace, name) in self._pod_groups_deleted_in_flight:
            for info, _, _ in live:
                self._make_incomplete(info)
            self._end_pod_group_attempt(namespace, name, [info.pod.uid for info, _, _ in failed])
            return UNSCHEDULABLE if live else ""
        pending = self._end_pod_group_attempt(namespace, name, [info.pod.uid for info, _, _ in failed])
        live += [(info, together, info.last_failure_message) for info in pending]
        if not live:
            return ""
        params = self._group_params.setdefault((namespace, name), PodGroupQueueingParams())
        if error:
            params.consecutive_errors += 1
        else:
            params.unschedulable_count += 1
            params.consecutive_errors = 0
        count = params.consecutive_errors or params.unschedulable_count
        duration = self.pod_group_backoff_duration(count, len(live))
        expiry = self.backoff_window_end(now + duration) if duration else now
        backing_off = expiry > now
        if preempting:
            return self._park_awaiting_preemption(live, expiry if backing_off else None, missed)
        # moveToBackoffQ and moveToActiveQ run PreEnqueue on the group (SchedulerPopFromBackoffQ):
        # a gang short of minCount (its pods deleted meanwhile) waits gated in the pool until
        # GangScheduling's events let it in (`group_changed`), to backoffQ while it backs off.
        gate = self.pre_enqueue(live[0][0].pod) if self.pre_enqueue is not None else None
        for info, rejector_plugins, message in live:
            # Each pod's own Timestamp, refreshed in the order the failure handler saw them (the
            # group's next cycle takes its pods in that order).
            info.timestamp = now
            info.stamp = next(self._stamps)
            info.last_failure_message = message
            info.unschedulable_plugins = set(rejector_plugins)
            info.consecutive_errors = params.consecutive_errors
            info.group_backoff_expiry = expiry if backing_off else None
            if gate is not None:
                self._gate_or_activate(info, gate)
            elif backing_off:
                self._push_backoff(info)
            else:
                self._push_active(info)
        if gate is not None:
            return UNSCHEDULABLE
        return BACKOFF if backing_off else ACTIVE

    def _park_awaiting_preemption(
        self,
        live: list[tuple[QueuedPodInfo, set[str], str]],
        expiry: float | None,
        missed: list[tuple[Event, PreCheck | None]],
    ) -> str:
        """The group's pods into the pool, gated by DefaultPreemption (runPreEnqueuePlugins adds
        the gating plugin to each pod's unschedulable plugins), then the events they missed."""
        now = self.clock()
        for info, rejector_plugins, message in live:
            uid = info.pod.uid
            info.timestamp = now
            info.stamp = next(self._stamps)
            info.last_failure_message = message
            info.unschedulable_plugins = {*rejector_plugins, DEFAULT_PREEMPTION}
            info.group_backoff_expiry = expiry
            info.unschedulable_since = now
            self._awaiting_preemption.add(uid)
            self._place(uid, UNSCHEDULABLE)
        first = live[0][0].pod
        hints = self.queueing_hints
        for event, pre_check in missed:
            name = event.name if isinstance(event, PodEvent) else event
            if name not in AWAITING_PREEMPTION_EVENTS:
                continue
            if any(
                (pre_check is None or pre_check(info.pod))
                and any(plugin_cares(hints, plugin, event, info.pod_info) for plugin in info.unschedulable_plugins)
                for info in self._awaiting_group(first)
            ):
                self._release_awaiting_group(first)
                break
        return self._where[first.uid]

    def _awaiting_group(self, pod: Pod) -> list[QueuedPodInfo]:
        """The queued pods of `pod`'s group parked with it, awaiting their preemption, in the order
        they entered the queue."""
        name = pod.spec.pod_group_name
        members = self._group_members.get((pod.namespace, name), set()) if name is not None else set()
        uids = [uid for uid in members | {pod.uid} if uid in self._awaiting_preemption]
        return [self._infos[uid] for uid in sorted(uids, key=self._first_seen.__getitem__)]

    def _release_awaiting_group(self, pod: Pod) -> int:
        """Move a parked group out of the pool as one entity (requeueEntityWithQueueingStrategy with
        queueAfterBackoff: backoffQ while the group backs off, else activeQ). moveToActiveQ and
        moveToBackoffQ run every PreEnqueue plugin on the way: DefaultPreemption's passes now that
        the preemption has finished, and GangScheduling's holds back a gang short of minCount (a
        pod of it deleted meanwhile), which then waits gated in the pool until its group changes
        (`group_changed`). Returns how many pods moved (none when PreEnqueue held them back)."""
        group = self._awaiting_group(pod)
        for info in group:
            self._awaiting_preemption.discard(info.pod.uid)
        gate = self._pre_enqueue_status(group[0].pod) if group else None
        if gate is not None:
            for info in group:
                self._gate_or_activate(info, gate)
            return 0
        for info in group:
            self._requeue(info)
        return len(group)

    def requeue_after_group_success(self, info: QueuedPodInfo, rejector_plugins: set[str], message: str) -> None:
        """AddAttemptedPodGroupIfNeeded after a successful pod-group cycle: the group's pods that were
        not placed go straight back to activeQ and keep their queue time (upstream preserves the
        group's timestamp when some of its pods failed), so they are tried again, in a cycle of
        their own, before pods queued after them."""
        uid = info.pod.uid
        if uid not in self._infos:
            return  # deleted while in flight
        self._in_flight.forget(uid)
        if self._back_into_deleted_pod_group(info):
            return
        info.last_failure_message = message
        info.unschedulable_plugins = set(rejector_plugins)
        info.consecutive_errors = 0
        info.group_backoff_expiry = None
        name = info.pod.spec.pod_group_name
        if name is not None:
            # The group was scheduled: its attempt counts start over.
            self._group_params.pop((info.pod.namespace, name), None)
        self._push_active(info)

    def add_pending_pod_group_pods_after_success(
        self, namespace: str, name: str, attempted: Collection[str], leftover: QueuedPodInfo | None = None
    ) -> int:
        """AddAttemptedPodGroupIfNeeded after a scheduled pod-group cycle (after
        `requeue_after_group_success` for its pods that were not placed, `leftover` the first of
        them; None when every pod was placed or the cycle had no pod left to try): the pods that
        arrived while the group was in flight go to activeQ with it (requeueWithoutBackoff),
        PreEnqueue deciding on the way (moveToActiveQ). They take the group's queue time when it
        keeps it (preserveTimestamp: some of its pods were not placed), else now, after the
        group's pods; the group's attempt counts start over. Returns how many PreEnqueue admitted.

        `attempted`: the uids of the pods the attempt popped. A group whose every pod was placed
        ends its attempt when that is decided, as upstream's scheduling cycle does before the
        binds: a pod of it arriving while they are written makes a new entity of its own."""
        pending = self._end_pod_group_attempt(namespace, name, attempted)
        if not pending:
            return 0
        self._group_params.pop((namespace, name), None)
        timestamp = leftover.timestamp if leftover is not None else self.clock()
        admitted = 0
        for info in pending:
            info.timestamp = timestamp
            info.stamp = next(self._stamps)
            info.consecutive_errors = 0
            admitted += self._gate_or_activate(info, self._pre_enqueue_status(info.pod))
        return admitted

    def _pre_enqueue_status(self, pod: Pod) -> Status | None:
        return self.pre_enqueue(pod) if self.pre_enqueue is not None else None

    def _pod_group_landed(self, pod: Pod, requeued_now: bool) -> None:
        """A pod of an in-flight group left flight other than through the group's end of attempt (it
        was bound, deleted, put back unattempted, or backed off after a failed write): once none of
        the group is in flight, the attempt is over, and the pods that arrived meanwhile join the
        group where it is now, as `_gate_or_activate` places a new pod. `requeued_now`: they queue
        from now, as upstream's requeued group (its attempt ran); otherwise they keep their own
        queue time (the group was put back as if never popped)."""
        name = pod.spec.pod_group_name
        popped = self._in_flight_pod_groups.get((pod.namespace, name)) if name is not None else None
        if name is None or popped is None or any(self._where.get(uid) == IN_FLIGHT for uid in popped):
            return
        now = self.clock()
        for info in self._end_pod_group_attempt(pod.namespace, name):
            if requeued_now:
                info.timestamp = now
                info.stamp = next(self._stamps)
            self._gate_or_activate(info, self._pre_enqueue_status(info.pod))

    # --- events -------------------------------------------------------------------------------

    def on_event(self, event: Event, pre_check: PreCheck | None = None) -> int:
        """A cluster event: record it for pods in flight, and move the unschedulable pods (those
        `pre_check` accepts, if given) whose rejector plugins care about it. Returns how many moved."""
        self._in_flight.record(event, pre_check)
        if not self._unschedulable:
            return 0
        moved = 0
        hints = self.queueing_hints
        gated = self._gated
        awaiting = self._awaiting_preemption
        name = event.name if isinstance(event, PodEvent) else event
        for uid in self._unschedulable_interested_in(name):
            if uid not in self._unschedulable:  # moved with its group earlier in this loop
                continue
            info = self._infos[uid]
            if pre_check is not None and not pre_check(info.pod):
                continue
            if gated and uid in gated:  # PreEnqueue would refuse it again; its group's changes move it
                continue
            if awaiting and uid in awaiting and name not in AWAITING_PREEMPTION_EVENTS:
                continue  # not an event DefaultPreemption, which gates it, registered
            if any(plugin_cares(hints, plugin, event, info.pod_info) for plugin in info.unschedulable_plugins):
                if uid in awaiting:
                    moved += self._release_awaiting_group(info.pod)
                else:
                    self._requeue(info)
                    moved += 1
        return moved

    def _unschedulable_interested_in(self, name: str) -> list[str]:
        """The unschedulable pods, in pool order, rejected by a plugin registered for the event
        `name` (every one for a RETRY_ALWAYS event): the only ones `plugin_cares` can move. A bound
        pod is an AssignedPodAdd event, which NodeResourcesFit does not register, so a pool of pods
        that fit nowhere is not sorted and hint-checked pod by pod on every bind."""
        if name in RETRY_ALWAYS:
            return self._unschedulable_in_order()
        registered = self._plugins_registered_for.get(name)
        if registered is None:
            registered = frozenset(plugin for plugin, events in self.queueing_hints.items() if name in events)
            self._plugins_registered_for[name] = registered
        if not registered:
            return []
        infos = self._infos
        return self._unschedulable_in_order(
            uid for uid in self._unschedulable if not registered.isdisjoint(infos[uid].unschedulable_plugins)
        )

    def flush_unschedulable_leftover(self) -> int:
        """Pods that waited longer than podMaxInUnschedulablePodsDuration are retried."""
        now = self.clock()
        moved = 0
        for uid in self._unschedulable_in_order():
            info = self._infos[uid]
            if uid in self._gated:
                continue
            if uid not in self._unschedulable:  # moved with its group earlier in this loop
                continue
            if now - info.unschedulable_since > self.max_in_unschedulable:
                if uid in self._awaiting_preemption:
                    moved += self._release_awaiting_group(info.pod)
                else:
                    self._requeue(info)
                    moved += 1
        return moved

    def activate(self, uid: str) -> None:
        """upstream's Activate for one pod (used when an asynchronous preemption's actuation fails):
        the pod's entity, the pod or, for a pod group's pod, every queued pod of its group, leaves
        the pool or backoffQ for activeQ through moveToActiveQ. From the pool it meets PreEnqueue
        first (a group parked for its preemption passes DefaultPreemption's now that the
        preemption is over, but GangScheduling's may still hold it back, and a gated entity stays
        gated); from backoffQ it passed PreEnqueue on the way in (SchedulerPopFromBackoffQ). A pod
        whose PodGroup has not been observed has no entity to activate (getRootLookupInfoForPod
        finds no root). A pod in flight hears ForceActivate when it comes back."""
        where = self._where.get(uid)
        if where == IN_FLIGHT:
            self._in_flight.record_for(uid, FORCE_ACTIVATE)
            return
        if where not in (UNSCHEDULABLE, BACKOFF) or uid in self._incomplete:
            return
        info = self._infos[uid]
        entity = self._queued_entity(info)
        from_backoff = where == BACKOFF and self.pop_from_backoff_q
        gate = None if from_backoff else self._pre_enqueue_status(info.pod)
        for member in entity:
            self._awaiting_preemption.discard(member.pod.uid)
            if gate is not None:
                self._gate_or_activate(member, gate)
            else:
                self._gated.pop(member.pod.uid, None)
                self._push_active(member)

    def _queued_entity(self, info: QueuedPodInfo) -> list[QueuedPodInfo]:
        """The queued entity the pod belongs to: the pod alone, or, for a pod group's pod, its
        group's pods in the pool or backoffQ (not those in flight or pending), in the order they
        entered the queue."""
        name = info.pod.spec.pod_group_name
        if self.pre_enqueue is None or name is None:
            return [info]
        members = self._group_members.get((info.pod.namespace, name), set()) | {info.pod.uid}
        uids = [uid for uid in members if self._where.get(uid) in (UNSCHEDULABLE, BACKOFF)]
        return [self._infos[uid] for uid in sorted(uids, key=self._first_seen.__getitem__)]

    # --- introspection ------------------------------------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        """How many pods are where, as scheduler_pending_pods counts them by its queue label: a gated
        pod whose PodGroup has not been observed counts as incomplete, not gated."""
        counts = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, IN_FLIGHT: 0, GATED: 0, INCOMPLETE: 0, PENDING: 0}
        # A copy first: a metrics scrape reads this from another thread while the loop changes it.
        for where in list(self._where.values()):
            counts[where] += 1
        if self._gated:
            places = self._where
            gated = sum(1 for uid in list(self._gated) if places.get(uid) == UNSCHEDULABLE)
            incomplete = sum(1 for uid in list(self._incomplete) if places.get(uid) == UNSCHEDULABLE)
            counts[INCOMPLETE] = incomplete
            counts[GATED] = gated - incomplete
            counts[UNSCHEDULABLE] -= gated
        return counts

    def can_pop(self) -> bool:
        """Whether `pop` would return a pod now: one is in activeQ, its backoff has ended, or
        PopFromBackoffQ may take it from entityBackoffQ early (never from entityErrorBackoffQ)."""
        now = self.clock()
        if any(self._entry_seq.get(e[4]) == e[3] and self._where.get(e[4]) == ACTIVE for e in self._active):
            return True
        if any(
            self._entry_seq.get(e[5]) == e[4]
            and self._where.get(e[5]) == BACKOFF
            and (self.pop_from_backoff_q or e[0] <= now)
            for e in self._backoff
        ):
            return True
        return any(
            self._entry_seq.get(e[2]) == e[1] and self._where.get(e[2]) == BACKOFF and e[0] <= now
            for e in self._error_backoff
        )

    def pod_group_backoff_count(self) -> int:
        """How many of backoffQ's pods wait with their rejected pod group (the error backoffQ): no
        cluster event moves them, and each group is retried when its backoff ends."""
        infos = self._infos
        return sum(
            1
            for _, seq, uid in list(self._error_backoff)  # a copy: a metrics scrape reads this from another thread
            if self._entry_seq.get(uid) == seq
            and self._where.get(uid) == BACKOFF
            and (info := infos.get(uid)) is not None
            and info.group_backoff_expiry is not None
        )

    def longest_error_backoff(self) -> float:
        """The longest backoff an entity in the error backoffQ can get: max_backoff times the square
        root of the largest group waiting there (a pod that failed with an error is an entity of one)."""
        sizes: dict[tuple[str, str], int] = {}
        for _, seq, uid in self._error_backoff:
            info = self._infos.get(uid)
            if info is not None and self._entry_seq.get(uid) == seq and self._where.get(uid) == BACKOFF:
                group = info.pod.spec.pod_group_name if info.group_backoff_expiry is not None else None
                key = (info.pod.namespace, group) if group is not None else ("", uid)
                sizes[key] = sizes.get(key, 0) + 1
        return self.max_backoff * math.sqrt(max(sizes.values(), default=1))

    def next_backoff_expiry(self) -> float | None:
        live = [e[0] for e in self._backoff if self._entry_seq.get(e[5]) == e[4] and self._where.get(e[5]) == BACKOFF]
        live += [
            e[0] for e in self._error_backoff if self._entry_seq.get(e[2]) == e[1] and self._where.get(e[2]) == BACKOFF
        ]
        return min(live, default=None)
