"""The public API stamps a request with the queue service's injected clock, so the audit record's
requestReceivedTimestamp is the service's time, not a wall-clock read buried in a dataclass default."""

from __future__ import annotations

from podsched_queue.access import ApiAccess, Target
from podsched_service.api_audit import ApiAuditLog
from podsched_service.authentication import Authenticator
from podsched_service.authorization import Policy


class SteppingClock:
    def __init__(self, start: float) -> None:
        self.now = start

    def time(self) -> float:
        self.now += 1.0
        return self.now

    def monotonic(self) -> float:
        return self.now


def test_a_call_is_stamped_with_the_service_clock() -> None:
    clock = SteppingClock(1_767_225_600.0)
    access = ApiAccess(
        Authenticator(None, certificates=False),
        Policy.allow_all(),
        ApiAuditLog("127.0.0.1:1", "t-", enabled=False),
        clock,
    )
    target = Target("pods", "", "v1", "default", "p")
    first = access.call("/podsched.api.v1.PodSched/Apply", write=True, verb="create", target=target)
    second = access.call("/podsched.api.v1.PodSched/Get", write=False)
    assert (first.received, second.received) == (1_767_225_601.0, 1_767_225_602.0)
    assert first.write and first.verb == "create" and first.target == target
    assert not second.write and second.target == Target()
