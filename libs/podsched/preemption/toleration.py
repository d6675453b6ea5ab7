"""Preemption toleration (kubernetes-sigs/scheduler-plugins KEP 205, pkg/preemptiontoleration): a
PriorityClass may say, in two annotations, that its pods tolerate preemption by some higher
priorities, forever or for a while after they were scheduled.

- `preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority`: only preemptors of at
  least this priority may evict the class's pods. Absent: the class's value + 1 (any higher priority,
  as without the plugin).
- `preemption-toleration.scheduling.x-k8s.io/toleration-seconds`: how long after the pod was
  scheduled (its PodScheduled=True condition's lastTransitionTime) that protection lasts. Absent or
  0: no protection at all, whatever the minimum; negative: forever.

A pod without PodScheduled=True is protected (the plugin reads the condition only), as is every pod
when the preemptor has preemptionPolicy Never. A pod without a priorityClassName never is. The
plugin treats an annotation that does not parse as no protection; podsched refuses such a class at
admission instead (`toleration_annotation_errors`), so a stored class always parses."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from podsched.api.errors import FieldError
from podsched.api.timestamps import format_timestamp
from podsched.api.types import CONDITION_POD_SCHEDULED, PREEMPT_NEVER, Pod, PriorityClass
from podsched.preemption.victims import VictimLookupError

ANNOTATION_PREFIX = "preemption-toleration.scheduling.x-k8s.io/"
MINIMUM_PREEMPTABLE_PRIORITY = ANNOTATION_PREFIX + "minimum-preemptable-priority"
TOLERATION_SECONDS = ANNOTATION_PREFIX + "toleration-seconds"

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
# strconv.ParseInt(s, 10, bits): an optional sign and decimal digits, nothing else.
_DECIMAL = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class TolerationPolicy:
    """A PriorityClass's policy with the defaults filled in (upstream's Policy)."""

    minimum_preemptable_priority: int
    toleration_seconds: int

    @property
    def is_explicit(self) -> bool:
        """Whether it can protect anything (an absent toleration-seconds, 0, protects nothing)."""
        return self.toleration_seconds != 0


def _parse_int(text: str, bounds: tuple[int, int]) -> int | None:
    if not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


def toleration_annotation_errors(priority_class: PriorityClass) -> list[FieldError]:
    """Admission: each toleration annotation that is present must be an integer in its Go type's range."""
    errors: list[FieldError] = []
    annotations = priority_class.metadata.annotations
    for key, bounds, kind in (
        (MINIMUM_PREEMPTABLE_PRIORITY, INT32, "a 32-bit integer"),
        (TOLERATION_SECONDS, INT64, "a 64-bit integer (negative: forever)"),
    ):
        text = annotations.get(key)
        if text is not None and _parse_int(text, bounds) is None:
            errors.append(FieldError(f"metadata.annotations[{key}]", f"must be {kind}", text))
    return errors


def toleration_policy(priority_class: PriorityClass) -> TolerationPolicy | None:
    """parsePreemptionTolerationPolicy; None when an annotation does not parse (the plugin then
    gives no protection)."""
    annotations = priority_class.metadata.annotations
    minimum = priority_class.value + 1
    if MINIMUM_PREEMPTABLE_PRIORITY in annotations:
        parsed = _parse_int(annotations[MINIMUM_PREEMPTABLE_PRIORITY], INT32)
        if parsed is None:
            return None
        minimum = parsed
    seconds = 0
    if TOLERATION_SECONDS in annotations:
        parsed = _parse_int(annotations[TOLERATION_SECONDS], INT64)
        if parsed is None:
            return None
        seconds = parsed
    return TolerationPolicy(minimum, seconds)


def scheduled_at(pod: Pod) -> tuple[bool, float | None]:
    """(whether PodScheduled is True, its lastTransitionTime). A condition without a time is Go's
    zero time: long ago."""
    condition = pod.condition(CONDITION_POD_SCHEDULED)
    if condition is None or condition.status != "True":
        return False, None
    return True, condition.last_transition_time


@dataclass(frozen=True, slots=True)
class TolerationVerdict:
    """Whether `victim` tolerates preemption by `preemptor` now, and why, in a sentence's words."""

    exempted: bool
    reason: str


def judge(victim: Pod, preemptor: Pod, priority_classes: Mapping[str, PriorityClass], now: float) -> TolerationVerdict:
    """ExemptedFromPreemption with its reason. Raises VictimLookupError when the victim's
    PriorityClass is gone (the plugin fails that node's dry run)."""
    class_name = victim.spec.priority_class_name
    if not class_name:
        return TolerationVerdict(False, "it has no PriorityClass")
    priority_class = priority_classes.get(class_name)
    if priority_class is None:
        raise VictimLookupError(f'priorityclass.scheduling.k8s.io "{class_name}" not found')
    if preemptor.spec.preemption_policy == PREEMPT_NEVER:
        return TolerationVerdict(True, "the preemptor has preemptionPolicy Never")
    policy = toleration_policy(priority_class)
    if policy is None:
        return TolerationVerdict(False, f"PriorityClass {class_name}'s toleration annotations do not parse")
    minimum = policy.minimum_preemptable_priority
    if preemptor.priority >= minimum:
        return TolerationVerdict(
            False,
            f"the preemptor's priority {preemptor.priority} is at or above the minimum preemptable priority "
            f"{minimum} of PriorityClass {class_name}",
        )
    below = (
        f"PriorityClass {class_name} protects it from priorities below {minimum} "
        f"(the preemptor has {preemptor.priority})"
    )
    if policy.toleration_seconds < 0:
        return TolerationVerdict(True, f"{below}, with no time limit")
    scheduled, at = scheduled_at(victim)
    if not scheduled:
        return TolerationVerdict(True, f"{below}, and it is not scheduled yet")
    until = (at if at is not None else float("-inf")) + policy.toleration_seconds
    if until > now:
        return TolerationVerdict(
            True, f"{below} for {policy.toleration_seconds}s after it was scheduled, until {format_timestamp(until)}"
        )
    if policy.toleration_seconds == 0:
        return TolerationVerdict(
            False, f"PriorityClass {class_name}'s toleration-seconds is 0 or absent: it protects for no time"
        )
    ended = format_timestamp(until) if at is not None else "long ago"
    return TolerationVerdict(
        False,
        f"its toleration of {policy.toleration_seconds}s after being scheduled (PriorityClass {class_name}) "
        f"ended at {ended}",
    )


def exempted_from_preemption(
    victim: Pod, preemptor: Pod, priority_classes: Mapping[str, PriorityClass], now: float
) -> bool:
    """Whether `victim` stays out of `preemptor`'s victims (upstream's ExemptedFromPreemption)."""
    return ExemptionCheck(priority_classes, now)(victim, preemptor)


class ExemptionCheck:
    """ExemptedFromPreemption at one instant, as SelectVictimsOnNode asks it for every lower-priority
    pod of every candidate node: each class's policy is parsed once. Same answers as `judge`
    (tests/unit/test_preemption_toleration.py checks both on every case)."""

    def __init__(self, priority_classes: Mapping[str, PriorityClass], now: float) -> None:
        self.priority_classes = priority_classes
        self.now = now
        self._policies: dict[str, TolerationPolicy | None] = {}

    def __call__(self, victim: Pod, preemptor: Pod) -> bool:
        class_name = victim.spec.priority_class_name
        if not class_name:
            return False
        policy = self._policies.get(class_name, _UNSET)
        if policy is _UNSET:
            priority_class = self.priority_classes.get(class_name)
            if priority_class is None:
                raise VictimLookupError(f'priorityclass.scheduling.k8s.io "{class_name}" not found')
            policy = self._policies[class_name] = toleration_policy(priority_class)
        if preemptor.spec.preemption_policy == PREEMPT_NEVER:
            return True
        if not isinstance(policy, TolerationPolicy) or preemptor.priority >= policy.minimum_preemptable_priority:
            return False
        if policy.toleration_seconds < 0:
            return True
        scheduled, at = scheduled_at(victim)
        if not scheduled:
            return True
        return at is not None and at + policy.toleration_seconds > self.now


_UNSET = TolerationPolicy(0, 0)  # a cache miss (no parsed policy is this very object)
