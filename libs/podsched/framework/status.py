"""One Status type with upstream's codes: the code tells the queue and preemption what to do next."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    # Preemption may help: removing pods from the node could make the pod fit.
    UNSCHEDULABLE = 2
    # Preemption cannot help on this node (wrong labels, taints, pod too big for the node...).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(slots=True)
class Status:
    """A plugin's verdict. Plugins return None for Success on hot paths (Filter); everything else is
    a Status carrying the reasons upstream prints in FitError messages."""

    code: Code
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""

    @staticmethod
    def unschedulable(plugin: str, *reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE, list(reasons), plugin)

    @staticmethod
    def unresolvable(plugin: str, *reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons), plugin)

    @staticmethod
    def error(plugin: str, message: str) -> Status:
        return Status(Code.ERROR, [message], plugin)

    @property
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod cannot go there now."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)


SUCCESS = Status(Code.SUCCESS)


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS
