"""A short soak (benchmarks/soak.py, which `make soak` runs for as long as asked): a minute of churn with
preemptions through the public API on the three-node Kafka cluster and two queue replicas, while one of
each kind of process is killed with SIGKILL (binder, filter, preemption, the leading queue, the standby
queue, a Kafka node). The audit finds nothing and no acknowledged write is lost. Nothing about speed or
memory is asserted: a minute says nothing about a trend, and the machine may be loaded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.soak import KILL_KINDS, SoakOptions, parse_duration, rss_summary, run_soak
from podsched_devstack.kafka_cluster import KafkaCluster


def test_durations_read_as_seconds_minutes_or_hours() -> None:
    assert [parse_duration(text) for text in ("90", "90s", "30m", "1h", "1.5m")] == [90, 90, 1800, 3600, 90]
    with pytest.raises(Exception, match=re.escape("duration: expected seconds or e.g. 90s, 30m, 1h; got '30 minutes'")):
        parse_duration("30 minutes")


def test_the_rss_slope_ignores_the_drop_at_a_restart_and_finds_a_leak() -> None:
    # 20 minutes sampled every 10 s. "steady" is restarted at 5 and 14 minutes, each incarnation flat at
    # its own level (100, then 60, then 80 MB); "leaking" grows 1 MB a minute; "brief" lives 40 s at a time.
    samples = []
    for t in range(0, 1200, 10):
        steady_pid = 1 if t < 300 else 2 if t < 840 else 3
        steady = {1: 100e6, 2: 60e6, 3: 80e6}[steady_pid]
        samples.append(
            {
                "t": t,
                "rss": {"steady": steady, "leaking": 50e6 + t / 60 * 1e6, "brief": 30e6 + (t % 40) * 1e6},
                "pid": {"steady": steady_pid, "leaking": 7, "brief": 100 + t // 40},
            }
        )
    summary = rss_summary(samples, duration=1200)
    assert summary["steady"]["slope_mb_per_hour"] == 0.0
    assert summary["steady"]["incarnations"] == 3
    assert summary["steady"]["first_mib"] == round(100e6 / 2**20, 1)
    assert summary["leaking"]["slope_mb_per_hour"] == pytest.approx(60.0)
    assert summary["brief"]["slope_mb_per_hour"] is None, "no incarnation lived a minute after its warm-up"


def test_the_growth_after_the_warm_up_is_given_per_10_minutes_for_rss_and_its_anonymous_part() -> None:
    # 30 minutes every 10 s: RSS climbs 20 MB in the first 10 minutes, then grows 0.6 MB per 10 minutes
    # while its anonymous part, after the same climb, stays flat (code paged in, not allocation).
    samples = []
    for t in range(0, 1800, 10):
        anonymous = 40e6 + min(t, 600) / 600 * 20e6
        rss = anonymous + 30e6 + max(0, t - 600) / 600 * 0.6e6
        samples.append({"t": t, "rss": {"queue": rss}, "anonymous": {"queue": anonymous}, "pid": {"queue": 1}})
    summary = rss_summary(samples, duration=1800, warm_up=600)["queue"]
    assert summary["rss_mib_per_10_min_after_warm_up"] == pytest.approx(0.6e6 / 2**20, abs=0.01)
    assert summary["anonymous_mib_per_10_min_after_warm_up"] == 0.0


@pytest.mark.timeout(1200)
def test_a_minute_of_churn_with_one_kill_9_of_each_kind_loses_nothing(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    options = SoakOptions(
        duration=60,
        seed=16,
        nodes=4,
        cpus_per_node=8,
        live_pods=40,
        creates_per_second=1.5,
        kill_every=6,
        kafka_down=(3.0, 6.0),
        sample_every=2,
        max_slope=float("inf"),  # a minute says nothing about a trend
        full_round=True,
        min_creates=70,  # the nodes fill up (32 slots) and pods are deleted, however slow the machine
    )
    summary = run_soak(options, kafka_cluster, tmp_path / "run", tmp_path / "out", log=print)
    print(json.dumps({k: v for k, v in summary.items() if k != "rss"}))

    assert summary["errors"] == []
    assert summary["violations"] == 0, "\n".join(summary["violation_samples"])
    assert summary["lost_write_count"] == 0, summary["lost_writes"]
    assert summary["resurrected_deletes"] == []
    assert all(summary["kills"][kind] >= 1 for kind in KILL_KINDS), summary["kills"]
    pods = summary["pods"]
    assert pods["created"] > options.live_pods and pods["deleted"] > 0, pods
    assert pods["preempted"] > 0, "high-priority pods on full nodes preempt"
    # Every process was sampled, and the report says where its memory went.
    assert {"binder", "filter", "preemption", "queue", "queue-2", "kafka-1", "kafka-2", "kafka-3"} <= set(
        summary["rss"]
    )
    assert (tmp_path / "out" / "rss.png").stat().st_size > 0
    lines = (tmp_path / "out" / "rss.jsonl").read_text().splitlines()
    assert len(lines) >= 10 and all(json.loads(line)["rss"] for line in lines)
