"""benchmarks.throughput reproduces scheduler_perf's SchedulingThroughput arithmetic, benchmarks.histogram
its latency percentiles and benchmarks.client_limit its client's rate limit;
benchmarks.scheduler_perf.call_ms turns the services' timing counters into mean milliseconds per call."""

from __future__ import annotations

import math

import pytest

from benchmarks.client_limit import TokenBucket
from benchmarks.histogram import bucket_quantile
from benchmarks.scheduler_perf import call_ms
from benchmarks.throughput import burst_rate, nearest_rank, summarize, throughput_samples


def test_the_first_nonzero_tick_is_the_baseline_and_gives_no_sample() -> None:
    ticks = [(1.0, 0), (2.0, 0), (3.0, 50), (4.0, 150), (5.0, 350)]
    assert throughput_samples(ticks) == [100.0, 200.0]


def test_skipped_ticks_are_reweighted_by_the_actual_elapsed_time() -> None:
    # No pod lands at t=5 and t=6; at t=7.5 (a late tick) 300 more are bound over 3.5 s.
    ticks = [(3.0, 100), (4.0, 200), (5.0, 200), (6.0, 200), (7.5, 500)]
    rate = 300 / 3.5
    assert throughput_samples(ticks) == [100.0, rate, rate, rate]


def test_no_sample_without_a_second_nonzero_tick() -> None:
    assert throughput_samples([(1.0, 0), (2.0, 10)]) == []
    assert summarize([]).samples == 0


def test_average_is_the_mean_of_samples_and_percentiles_are_nearest_rank() -> None:
    samples = [400.0, 100.0, 300.0, 200.0]
    summary = summarize(samples)
    assert summary.average == 250.0  # not total pods / total time
    assert summary.perc50 == 200.0  # ceil(4 * 0.5) - 1 = index 1
    assert summary.perc90 == 400.0  # ceil(3.6) - 1 = index 3
    assert summary.perc99 == 400.0


@pytest.mark.parametrize(("percent", "expected"), [(1, 1.0), (10, 1.0), (11, 2.0), (50, 5.0), (100, 10.0)])
def test_nearest_rank(percent: float, expected: float) -> None:
    assert nearest_rank([float(i) for i in range(1, 11)], percent) == expected


def test_a_burst_within_one_interval_is_measured_from_its_first_pod_sent_to_its_last_bind() -> None:
    # Every pod bound between two ticks: the collector has no sample.
    assert throughput_samples([(1.0, 0), (2.0, 0), (3.0, 1000)]) == []
    binds = [2.2 + 0.0005 * i for i in range(1000)]  # 1000 binds over 0.4995 s, the first sent at 0.2
    assert burst_rate(binds, started=0.2) == pytest.approx(1000 / 2.4995)
    assert burst_rate([], started=0.2) == 0.0
    assert burst_rate([2.5], started=2.5) == 0.0


def test_call_ms_means_each_call_and_leaves_the_queues_watch_streams_out() -> None:
    counted = {
        "podsched_kafka_commit_duration_seconds_sum": 1.0,
        "podsched_kafka_commit_duration_seconds_count": 100,
        "grpc_client_handling_seconds_sum[Bind]": 4.0,
        "grpc_client_handled[Bind]": 100,
        "grpc_client_handling_seconds_sum[FindNodes]": 1.0,
        "grpc_client_handled[FindNodes]": 0,  # no call: no mean
        "grpc_server_handling_seconds_sum[ApplyBatch]": 6.0,
        "grpc_server_handling_seconds_count[ApplyBatch]": 100,
        "grpc_server_handling_seconds_sum[Watch]": 60.0,
        "grpc_server_handling_seconds_count[Watch]": 1,
    }
    assert call_ms(counted) == {"commit": 10.0, "Bind": 40.0, "queue ApplyBatch": 60.0}


def test_the_creators_token_bucket_spends_its_burst_then_qps_tokens_a_second() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=100.0, burst=50, clock=lambda: now[0])
    assert bucket.reserve(32) == 0.0
    assert bucket.reserve(18) == 0.0  # the burst is spent
    assert bucket.reserve(10) == pytest.approx(0.1)  # in debt by 10 tokens: 0.1 s at 100 a second
    now[0] = 0.1
    assert bucket.reserve(10) == pytest.approx(0.1)  # the debt was earned back; these 10 are new debt
    now[0] = 60.0
    assert bucket.reserve(50) == 0.0  # a long pause refills the bucket to its burst, not beyond
    assert bucket.reserve(1) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="qps"):
        TokenBucket(qps=0, burst=1)


def test_a_histogram_quantile_interpolates_within_its_bucket_as_prometheus_does() -> None:
    # 10 attempts under 1 ms, 30 between 1 and 2 ms, 60 between 2 and 4 ms.
    buckets = {0.001: 10.0, 0.002: 40.0, 0.004: 100.0, math.inf: 100.0}
    assert bucket_quantile(0.5, buckets) == pytest.approx(0.002 + 0.002 * 10 / 60)
    assert bucket_quantile(0.05, buckets) == pytest.approx(0.0005)
    assert bucket_quantile(0.4, buckets) == pytest.approx(0.002)
    # A rank in the +Inf bucket answers the highest finite bound.
    assert bucket_quantile(0.99, {0.001: 10.0, 0.002: 20.0, math.inf: 100.0}) == 0.002
    assert math.isnan(bucket_quantile(0.5, {0.001: 0.0, math.inf: 0.0}))
    with pytest.raises(ValueError, match="Inf"):
        bucket_quantile(0.5, {0.001: 1.0})
