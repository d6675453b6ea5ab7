"""`podsched get` and `describe` for Deployments, ReplicaSets and Jobs: kubectl's columns, from the
objects' JSON and a fixed `now`."""

from __future__ import annotations

from typing import Any

from podsched.api.resources import DEPLOYMENT, JOB, REPLICA_SET
from podsched_cli.output import format_table
from podsched_cli.workload_output import describe_job, job_completions, job_status_word

NOW = 1767225600.0 + 3600  # an hour after 2026-01-01T00:00:00Z
CREATED = "2026-01-01T00:00:00Z"


def job(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "creationTimestamp": CREATED},
        "spec": {
            "parallelism": 2,
            "completions": 3,
            "backoffLimit": 0,
            "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "template": {"spec": {"containers": [{"name": "main", "image": "pause"}]}},
        },
        "status": status,
    }


def test_get_jobs_shows_status_completions_duration_and_age() -> None:
    complete = job(
        succeeded=3,
        startTime=CREATED,
        completionTime="2026-01-01T00:00:42Z",
        conditions=[{"type": "Complete", "status": "True"}],
    )
    running = {
        **job(active=2, succeeded=1, startTime=CREATED),
        "metadata": {"name": "other", "creationTimestamp": CREATED},
    }
    assert format_table(JOB, [complete, running], NOW).splitlines() == [
        "NAME    STATUS     COMPLETIONS   DURATION   AGE",
        "train   Complete   3/3           42s        60m",
        "other   Running    1/3           60m        60m",
    ]
    failed = job(
        failed=1, conditions=[{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]
    )
    assert job_status_word(failed) == "Failed"
    work_queue = job()
    work_queue["spec"].pop("completions")
    assert job_completions(work_queue) == "0/1 of 2"


def test_get_deployments_and_replica_sets_show_kubectls_columns() -> None:
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web", "creationTimestamp": CREATED},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2},
    }
    assert format_table(DEPLOYMENT, [deployment], NOW).splitlines() == [
        "NAME   READY   UP-TO-DATE   AVAILABLE   AGE",
        "web    2/3     3            2           60m",
    ]
    rs = {
        "kind": "ReplicaSet",
        "metadata": {"name": "web-abc", "creationTimestamp": CREATED},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc"}},
            "template": {"spec": {"containers": [{"name": "main", "image": "pause"}]}},
        },
        "status": {"replicas": 3, "readyReplicas": 3},
    }
    assert format_table(REPLICA_SET, [rs], NOW, wide=True).splitlines() == [
        "NAME      DESIRED   CURRENT   READY   AGE   CONTAINERS   IMAGES   SELECTOR",
        "web-abc   3         3         3       60m   main         pause    app=web,pod-template-hash=abc",
    ]


def test_describe_job_shows_counts_policy_and_conditions() -> None:
    text = describe_job(
        job(
            failed=1,
            startTime=CREATED,
            conditions=[
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ],
        ),
        [],
        NOW,
    )
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert "Pods Statuses: 0 Active (0 Ready) / 0 Succeeded / 1 Failed" in lines
    assert "Backoff Limit: 0" in lines and "Ignore on pod conditions DisruptionTarget=True" in lines
    assert "Failed True BackoffLimitExceeded Job has reached the specified backoff limit" in lines
