"""make bench-upstream without a full benchmark: upstream's real performance-config.yaml files (from the Go
module proxy) mapped onto podsched workloads, and the JSON line made from a tiny real podsched run."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest

from benchmarks import scheduler_perf
from benchmarks.bench_upstream import data_item, summarize
from benchmarks.upstream_config import COMPARED, ConfigError, load_config, variants, workload_from_config


@pytest.fixture(scope="module")
def configs() -> dict[str, list]:
    return {topic: load_config(topic) for topic in {t for t, _ in COMPARED}}


def test_every_compared_workload_maps_from_upstreams_config(configs: dict[str, list]) -> None:
    for topic, name in COMPARED:
        workload = workload_from_config(configs[topic], name)
        # make bench runs the same shapes as make bench-upstream: the two read the same numbers
        assert scheduler_perf.WORKLOADS[name] == workload
    unschedulable = workload_from_config(configs["default_preemption"], "Unschedulable/5kNodes/100Init/10kPods")
    assert (unschedulable.init_pods, unschedulable.churn_template) == (100, "high-priority-large-cpu")


def test_variants_are_upstreams_feature_gate_variants_with_the_same_params(configs: dict[str, list]) -> None:
    found = variants(configs["default_preemption"], "PreemptionAsync/5000Nodes")
    assert found[0] == "PreemptionAsync/5000Nodes"
    assert "PreemptionAsync/5000Nodes_AsyncPreemptionEnabled" in found
    # 5000Nodes_50000Pods_AsyncAPICallsEnabled has other params: not a variant of 5000Nodes_10000Pods
    assert variants(configs["misc"], "SchedulingBasic/5000Nodes_10000Pods") == ["SchedulingBasic/5000Nodes_10000Pods"]


def test_an_unsupported_op_names_the_workload_and_the_op(configs: dict[str, list]) -> None:
    config = copy.deepcopy(configs["default_preemption"])
    case = next(c for c in config if c["name"] == "PreemptionBasic")
    case["workloadTemplate"].insert(1, {"opcode": "createNamespaces", "count": 1})
    with pytest.raises(ConfigError, match=r"PreemptionBasic/1000Nodes: workloadTemplate\[1\] .*createNamespaces"):
        workload_from_config(config, "PreemptionBasic/1000Nodes")
    with pytest.raises(ConfigError, match="workload 'NoSuch' not found"):
        workload_from_config(configs["default_preemption"], "PreemptionBasic/NoSuch")


def test_data_item_picks_the_metric_by_label() -> None:
    items = [
        {"data": {"Perc50": 3.0}, "labels": {"Metric": "SchedulingDuration"}},
        {"data": {"Average": 150.5, "Perc50": 149.0}, "unit": "pods/s", "labels": {"Metric": "SchedulingThroughput"}},
    ]
    assert data_item(items, "SchedulingThroughput") == {"Average": 150.5, "Perc50": 149.0}
    assert data_item(items, "Missing") is None


def test_a_tiny_real_podsched_run_gives_the_json_line(kafka, tmp_path: Path, configs: dict[str, list]) -> None:
    workload = workload_from_config(configs["misc"], "SchedulingBasic/5000Nodes_10000Pods").scaled(0.01)
    run = asyncio.run(scheduler_perf.run_workload(workload, kafka, tmp_path, 0, 120.0))
    upstream_run = {"avg": 100.0, "latency_p50_ms": 5.0, "cpu_ms_per_pod": 2.0, "rss_mb": 900.0}
    line = summarize(workload.name, {workload.name: [upstream_run]}, [run])
    assert set(line) >= {"workload", "upstream_avg", "upstream_variant", "podsched_avg", "ratio", "rounds"}
    assert line["rounds"] == 1 and line["upstream_variant"] == workload.name
    assert line["podsched_avg"] == pytest.approx(run["throughput_avg"], abs=0.1)
    assert line["ratio"] == pytest.approx(run["throughput_avg"] / 100.0, abs=0.01)
    for side in ("upstream", "podsched"):
        assert set(line[side]) == {"latency_p50_ms", "cpu_ms_per_pod", "rss_mb"}
    assert line["podsched"]["cpu_ms_per_pod"] > 0 and line["podsched"]["rss_mb"] > 0
