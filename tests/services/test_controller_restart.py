"""The controllers survive kill -9 of the binder that runs them (docs/controllers.md): a Job's pods end
and are counted while the binder is killed again and again, and a Deployment is scaled meanwhile.
Afterwards the Job counted every pod exactly once (its status against the pods left in the log),
the Deployment has exactly its replicas, and the Kafka log auditor finds no invariant broken."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import yaml

from audit import audit, read_log
from live_api import Api
from manifest_dicts import COMMON, node
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack
from podsched_proto.api.v1 import api_pb2

COMPLETIONS = 12
REPLICAS = 5


def template(run_seconds: str | None, restart_policy: str | None) -> dict[str, object]:
    spec: dict[str, object] = {
        "priorityClassName": "low-priority",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
    }
    metadata: dict[str, object] = {"labels": {"app": "work"}}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    if run_seconds:
        metadata["annotations"] = {"sim.podsched.io/run-seconds": run_seconds}
    return {"metadata": metadata, "spec": spec}


def job() -> dict[str, object]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch"},
        "spec": {
            "completions": COMPLETIONS,
            "parallelism": 3,
            "backoffLimit": 0,
            "template": template("1", "Never"),
        },
    }


def deployment(replicas: int) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {**template(None, None), "metadata": {"labels": {"app": "web"}}},
        },
    }


def get(api: Api, resource: str, name: str) -> dict[str, object]:
    reply = api.stub.Get(api_pb2.GetRequest(resource=resource, name=name, namespace="default"), timeout=30)
    result: dict[str, object] = json.loads(reply.objects_json[0])
    return result


def apply(api: Api, document: dict[str, object]) -> None:
    api.stub.Apply(api_pb2.ApplyRequest(object_json=json.dumps(document).encode()), timeout=30)


@pytest.mark.timeout(600)
def test_kill_9_of_the_binder_while_controllers_work_counts_every_pod_once(
    kafka: KafkaBroker, stack: ServiceStack
) -> None:
    api = Api(stack.server)
    try:
        api.apply_text(COMMON.read_text())
        api.apply_text(yaml.safe_dump_all([node("n1", cpu="4"), node("n2", cpu="8")]))
        apply(api, job())
        apply(api, deployment(2))
        for round_ in range(4):
            time.sleep(0.7)
            stack.kill9("binder")
            stack.start_one("binder", wait=True)
            if round_ == 1:
                apply(api, deployment(REPLICAS))  # scaled while its controller restarts

        def finished() -> dict[str, object] | None:
            status = get(api, "jobs", "batch").get("status") or {}
            assert isinstance(status, dict)
            done = any(c.get("type") in ("Complete", "Failed") for c in status.get("conditions", []))
            return status if done else None

        status = api.wait(finished, timeout=120, what="the Job finished")
        assert status["succeeded"] == COMPLETIONS and not status.get("failed"), status
        web = [
            p
            for name, p in api.pods().items()
            if name.startswith("web-") and not p["metadata"].get("deletionTimestamp")
        ]
        assert len(web) == REPLICAS, sorted(p["metadata"]["name"] for p in web)

        log = asyncio.run(read_log(kafka.bootstrap_servers, stack.settings.topic_prefix, timeout=60))
        violations = audit(log)
        assert violations == [], "\n".join(violations[:30])
        # The log holds every Job pod ever created: exactly COMPLETIONS of them (none created twice).
        job_pods = {c.object.name for c in log.changes if c.object.kind == "Pod" and c.object.name.startswith("batch-")}
        assert len(job_pods) == COMPLETIONS, sorted(job_pods)
    finally:
        api.close()
