"""Scheduling profiles on the running system (four service processes, a real Kafka): every service
reads the same KubeSchedulerConfiguration (PODSCHED_SCHEDULER_CONFIG); the queue only queues pods
some profile schedules, the filter and preemption services decide each pod with its own profile's
plugins and PostFilter. Also a preemptor nominated to one node that binds to another when room frees
there during its victims' grace period (tests/scenarios has the same stories for simulate)."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from live_api import Api, node_of, nominated
from manifest_dicts import COMMON, node, pod
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings
from podsched_proto.api.v1 import api_pb2
from stacks import running

TWO_PROFILES = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: batch-scheduler
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
"""


def settings(kafka: KafkaBroker, tmp_path: Path, config: str) -> StackSettings:
    path = tmp_path / "scheduler-config.yaml"
    path.write_text(config)
    prefix = f"t{uuid.uuid4().hex[:10]}."
    return StackSettings.on_free_ports(
        kafka.bootstrap_servers, tmp_path / "services", topic_prefix=prefix, workers=1, scheduler_config=str(path)
    )


@pytest.fixture
def profiles_api(kafka: KafkaBroker, tmp_path: Path) -> Iterator[Api]:
    started = running(settings(kafka, tmp_path, TWO_PROFILES))
    stack = next(started)
    client = Api(stack.server)
    try:
        yield client
    finally:
        client.close()
        started.close()


def apply(api: Api, *documents: dict[str, Any]) -> None:
    api.apply_text(yaml.safe_dump_all(documents))


def of_scheduler(manifest: dict[str, Any], scheduler_name: str) -> dict[str, Any]:
    manifest["spec"]["schedulerName"] = scheduler_name
    return manifest


def events_of(api: Api, name: str, reason: str | None = None) -> list[Any]:
    return [e for e in api.events() if e.involved_object.name == name and (reason is None or e.reason == reason)]


def test_each_profile_schedules_its_own_pods_and_other_schedulers_pods_are_left_alone(profiles_api: Api) -> None:
    api = profiles_api
    api.apply_text(COMMON.read_text())
    apply(
        api,
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        node("n3", cpu="1"),
        pod("low-1", "low-priority", "2", node_name="n1", grace=0),
        pod("low-2", "low-priority", "2", node_name="n2", grace=0),
    )
    # Another scheduler's pod, first in line and with room on n3: left alone, and the nomination to
    # n3 it carries (another scheduler's) holds no room. The default scheduler's pod takes that room.
    apply(api, of_scheduler(pod("theirs", "high-priority", "1", status={"nominatedNodeName": "n3"}), "my-scheduler"))
    apply(api, pod("ours", "low-priority", "1"))
    api.wait(lambda: node_of(api.pods()["ours"]) == "n3", what="ours bound to n3")
    # Each profile's PostFilter: the default scheduler's pod preempts on n1, the batch scheduler's
    # (higher priority, only n2 fits its selector) waits with the Filter diagnosis alone.
    apply(
        api,
        of_scheduler(
            pod("waits", "high-priority", "2", spec={"nodeSelector": {"kubernetes.io/hostname": "n2"}}),
            "batch-scheduler",
        ),
        pod("preempts", "mid-priority", "2", spec={"nodeSelector": {"kubernetes.io/hostname": "n1"}}),
    )
    api.wait(lambda: node_of(api.pods()["preempts"]) == "n1", what="preempts bound to n1")
    api.wait(lambda: events_of(api, "waits", "FailedScheduling"), what="a failed attempt of waits")
    pods = api.pods()
    assert "low-1" not in pods and events_of(api, "low-1", "Preempted")
    assert node_of(pods["low-2"]) == "n2" and not pods["low-2"]["metadata"].get("deletionTimestamp")
    assert not node_of(pods["waits"]) and not nominated(pods["waits"])
    assert not events_of(api, "waits", "Nominated")
    assert events_of(api, "waits", "FailedScheduling")[-1].message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector."
    )
    theirs = pods["theirs"]
    assert not node_of(theirs) and nominated(theirs) == "n3" and theirs["status"].get("phase") == "Pending"
    assert events_of(api, "theirs") == [], "never queued: no attempt, no event"


def test_a_preemptor_nominated_to_one_node_binds_to_another_that_frees_during_the_grace_period(api: Api) -> None:
    """n1 holds two low-priority pods with a 10 s grace period, n2 one pod the preemptor cannot
    preempt (same priority). The preemptor is nominated to n1; the n2 pod is then deleted, and the
    preemptor binds to n2 at once (its nominated node is only tried first) while the n1 victims are
    still terminating; they terminate all the same, and the nomination is cleared by the bind."""
    api.apply_text(COMMON.read_text())
    apply(
        api,
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        pod("low-1", "low-priority", "1", node_name="n1", grace=10),
        pod("low-2", "low-priority", "1", node_name="n1", grace=10),
        pod("peer", "high-priority", "2", node_name="n2", grace=0),
    )
    apply(api, pod("preemptor", "high-priority", "2"))
    api.wait(lambda: nominated(api.pods()["preemptor"]) == "n1", what="preemptor nominated to n1")
    nominated_at = time.monotonic()
    api.stub.Delete(api_pb2.DeleteRequest(resource="pods", name="peer"), timeout=30)
    api.wait(lambda: node_of(api.pods()["preemptor"]) == "n2", timeout=20, what="preemptor bound to n2")
    assert time.monotonic() - nominated_at < 10, "bound while the n1 victims were still terminating"
    pods = api.pods()
    assert not nominated(pods["preemptor"]), "the bind clears the nomination"
    for victim in ("low-1", "low-2"):
        assert pods[victim]["metadata"].get("deletionTimestamp"), "a preemption is not undone"
        assert events_of(api, victim, "Preempted")
    api.wait(lambda: not {"low-1", "low-2"} & set(api.pods()), timeout=30, what="the n1 victims gone after their grace")
    assert [e.message for e in events_of(api, "preemptor", "Scheduled")] == [
        "Successfully assigned default/preemptor to n2"
    ]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (
            TWO_PROFILES.replace("batch-scheduler", "default-scheduler"),
            'profiles[1].schedulerName: Duplicate value: "default-scheduler"',
        ),
        (TWO_PROFILES.replace("postFilter:", "postFiltr:"), "profiles[1].plugins.postFiltr"),
        (
            TWO_PROFILES + "  pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesAbsolute: -1}\n",
            "profiles[1].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: -1",
        ),
    ],
    ids=["duplicate scheduler name", "unknown extension point", "bad preemption args in profile 2"],
)
def test_every_service_refuses_a_bad_configuration_naming_the_field(tmp_path: Path, config: str, field: str) -> None:
    path = tmp_path / "scheduler-config.yaml"
    path.write_text(config)
    stack = ServiceStack(StackSettings.on_free_ports("127.0.0.1:1", tmp_path, scheduler_config=str(path)))
    for name in ("queue", "filter", "preemption"):
        env = stack.environment(name)
        done = subprocess.run(
            [sys.executable, "-m", f"podsched_{name}"], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode != 0
        assert f"PODSCHED_SCHEDULER_CONFIG: invalid {path}: " in done.stderr, done.stderr
        assert field in done.stderr, done.stderr
