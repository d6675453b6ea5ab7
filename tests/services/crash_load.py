"""Load and supervision for the crash tests: a submitter that keeps applying pods through restarts
and records every write the API acknowledged, a supervisor's restart of dead services, and the
wait until the cluster has settled."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import yaml

from live_api import Api
from podsched_devstack.services import SERVICES, ServiceStack


class Submitter(threading.Thread):
    """Applies pods one by one, retrying while the public API is down, and records every write
    the API acknowledged."""

    def __init__(self, server: str, manifests: list[dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.manifests = manifests
        self.acknowledged: list[tuple[str, str, str]] = []
        self.retries = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        api = Api(self.server)
        try:
            for manifest in self.manifests:
                deadline = time.monotonic() + 120
                while True:
                    try:
                        api.apply_text(yaml.safe_dump(manifest))
                        break
                    except grpc.RpcError as error:
                        if error.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                            raise
                        if time.monotonic() > deadline:
                            raise
                        self.retries += 1
                        time.sleep(0.2)
                self.acknowledged.append(("Pod", "default", manifest["metadata"]["name"]))
        except BaseException as error:
            self.error = error
        finally:
            api.close()


def supervise(stack: ServiceStack) -> None:
    """What a process supervisor does: start any service that is not running."""
    for name in SERVICES:
        process = stack.processes.get(name)
        if process is None or process.poll() is not None:
            stack.processes.pop(name, None)
            stack.start_one(name, wait=True)


def wait_for_acks(submitter: Submitter, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(submitter.acknowledged) < count and submitter.is_alive():
        assert time.monotonic() < deadline, f"only {len(submitter.acknowledged)} of {count} pods acknowledged"
        time.sleep(0.05)


def settle(api: Api, expected_pods: int, timeout: float = 300, quiet: float = 3.0) -> None:
    """Until nothing has changed for `quiet` seconds: no pod terminating, every pod bound or marked
    unschedulable, and the same placements at every look."""
    deadline = time.monotonic() + timeout
    last: Any = None
    since = time.monotonic()
    while time.monotonic() < deadline:
        pods = api.pods()
        view = sorted(
            (name, p["spec"].get("nodeName", ""), p["status"].get("nominatedNodeName", "")) for name, p in pods.items()
        )
        busy = len(pods) < expected_pods or any(
            p["metadata"].get("deletionTimestamp")
            or (
                not p["spec"].get("nodeName")
                and not any(
                    c["type"] == "PodScheduled" and c["status"] == "False" for c in p["status"].get("conditions", [])
                )
            )
            for p in pods.values()
        )
        if busy or view != last:
            last, since = view, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.2)
    pending = [
        name
        for name, p in api.pods().items()
        if p["metadata"].get("deletionTimestamp") or not p["spec"].get("nodeName")
    ]
    victims_by_preemptor: dict[str, list[str]] = {}
    for event in api.events():
        if event.reason == "Preempted":
            victims_by_preemptor.setdefault(event.related.name, []).append(event.involved_object.name)
    several = {name: victims for name, victims in victims_by_preemptor.items() if len(victims) > 1}
    raise AssertionError(
        f"the cluster did not settle in {timeout}s: {len(api.pods())} pods (expected {expected_pods}), "
        f"not settled: {sorted(pending)[:20]}, preemptors with several victims: {several}"
    )
