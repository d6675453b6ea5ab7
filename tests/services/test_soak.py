"""A short soak (benchmarks/soak.py, which `make soak` runs for as long as asked): a minute of churn with
preemptions through the public API on the three-node Kafka cluster and two queue replicas, while one of
each kind of process is killed with SIGKILL (binder, filter, preemption, the leading queue, the standby
queue, a Kafka node). The audit finds nothing and no acknowledged write is lost. Nothing about speed or
memory is asserted: a minute says nothing about a trend, and the machine may be loaded."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.soak import KILL_KINDS, SoakOptions, group_members, parse_duration, rss_summary, run_soak
from podsched_devstack.kafka_cluster import KafkaCluster


def test_durations_read_as_seconds_minutes_or_hours() -> None:
    assert [parse_duration(text) for text in ("90", "90s", "30m", "1h", "1.5m")] == [90, 90, 1800, 3600, 90]
    with pytest.raises(Exception, match=re.escape("duration: expected seconds or e.g. 90s, 30m, 1h; got '30 minutes'")):
        parse_duration("30 minutes")


def test_the_level_slope_is_flat_for_a_process_that_comes_back_to_its_level_and_finds_a_leak() -> None:
    # 20 minutes sampled every 10 s. Each restarted process starts at 40 MB and is at its level 90 s later
    # (the replay), inside the two minutes left out after a start. "steady" is restarted at 5 and 14
    # minutes and levels at 100 MB each time; "leaking" never restarts and grows 1 MB a minute; "regrowing"
    # is restarted every 5 minutes and climbs 1 MB a minute from its level (each incarnation the same way:
    # a cache filling until the kill); "rebuilt_larger" comes back 10 MB higher at each restart every 5
    # minutes (what it rebuilds from the log grows); "brief" lives 40 s at a time.
    def after_start(age: float, level: float) -> float:
        return 40e6 + min(age, 90) / 90 * (level - 40e6)

    samples = []
    for t in range(0, 1200, 10):
        steady_start = 0 if t < 300 else 300 if t < 840 else 840
        five_minutes = t // 300
        samples.append(
            {
                "t": t,
                "rss": {
                    "steady": after_start(t - steady_start, 100e6),
                    "leaking": 50e6 + t / 60 * 1e6,
                    "regrowing": after_start(t % 300, 100e6) + max(0, t % 300 - 90) / 60 * 1e6,
                    "rebuilt_larger": after_start(t % 300, 100e6 + five_minutes * 10e6),
                    "brief": 30e6 + (t % 40) * 1e6,
                },
                "pid": {
                    "steady": steady_start,
                    "leaking": 7,
                    "regrowing": five_minutes,
                    "rebuilt_larger": five_minutes,
                    "brief": 100 + t // 40,
                },
            }
        )
    summary = rss_summary(samples, duration=1200)
    assert summary["steady"]["slope_mb_per_hour"] == 0.0
    assert summary["steady"]["within_incarnations_mb_per_hour"] == 0.0
    assert summary["steady"]["incarnations"] == 3
    assert summary["steady"]["first_mib"] == round(40e6 / 2**20, 1)
    assert summary["leaking"]["slope_mb_per_hour"] == pytest.approx(60.0)
    assert summary["leaking"]["within_incarnations_mb_per_hour"] == pytest.approx(60.0)
    regrowing = summary["regrowing"]
    assert regrowing["within_incarnations_mb_per_hour"] == pytest.approx(60.0), "each incarnation's climb"
    assert abs(regrowing["slope_mb_per_hour"]) < 60.0 / 5, "the same climb each time is no trend of the level"
    rebuilt = summary["rebuilt_larger"]
    assert rebuilt["within_incarnations_mb_per_hour"] == 0.0
    assert rebuilt["slope_mb_per_hour"] > 60.0, "10 MB more every 5 minutes is 120 MB/hour of level"
    assert summary["brief"]["slope_mb_per_hour"] is None, "no sample two minutes after a start"
    assert summary["brief"]["within_incarnations_mb_per_hour"] is None


def test_a_service_group_is_sampled_process_by_process(tmp_path: Path) -> None:
    # A process group like the preemption service's: a leader that starts a worker with multiprocessing's
    # spawn (which starts the resource tracker too).
    script = tmp_path / "group.py"
    script.write_text(
        "import multiprocessing, sys, time\n"
        "def work():\n    time.sleep(120)\n"
        "if __name__ == '__main__':\n"
        "    worker = multiprocessing.get_context('spawn').Process(target=work, daemon=True)\n"
        "    worker.start()\n    print('started', flush=True)\n    time.sleep(120)\n"
    )
    leader = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert leader.stdout is not None and leader.stdout.readline() == b"started\n"
        members = group_members("preemption", leader.pid)
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
    assert set(members) == {"preemption", "preemption-worker-1", "preemption-resource-tracker"}, members
    assert members["preemption"] == leader.pid
    assert len(set(members.values())) == 3


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
