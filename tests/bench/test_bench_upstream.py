"""make bench-upstream without a full benchmark: upstream's real performance-config.yaml files (from the Go
module proxy) mapped onto podsched workloads, and the JSON line made from a tiny real podsched run."""

from __future__ import annotations

import asyncio
import copy
import os
import sys
from pathlib import Path

import pytest

from benchmarks import scheduler_perf
from benchmarks.bench_upstream import data_item, run_measured, summarize
from benchmarks.upstream_config import (
    COMPARED,
    ConfigError,
    load_config,
    perf_dir,
    render_template,
    variants,
    workload_from_config,
)


@pytest.fixture(scope="module")
def configs() -> dict[str, list]:
    return {topic: load_config(topic) for topic in {t for t, _ in COMPARED}}


def test_every_compared_workload_maps_from_upstreams_config(configs: dict[str, list]) -> None:
    for topic, name in COMPARED:
        workload = workload_from_config(configs[topic], name, perf_dir(topic))
        # make bench runs the same shapes as make bench-upstream: the two read the same numbers
        assert scheduler_perf.workload_named(name) == workload
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
    case["workloadTemplate"].insert(1, {"opcode": "createResourceClaims", "count": 1})
    with pytest.raises(ConfigError, match=r"PreemptionBasic/1000Nodes: workloadTemplate\[1\] .*createResourceClaims"):
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


def test_each_upstream_run_reports_its_own_peak_memory(tmp_path: Path) -> None:
    """A run's rss_mb is its own process tree's peak, not the largest of every run before it."""

    def run(megabytes: int, exit_code: int = 0) -> tuple[int, str, float]:
        code = f"x = bytearray({megabytes} << 20); x[::4096] = b'1' * len(x[::4096]); print('ran'); exit({exit_code})"
        returncode, output, usage = run_measured([sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ))
        return returncode, output, usage.ru_maxrss / 1024

    assert run(300)[2] > 300
    returncode, output, small_peak = run(20, exit_code=3)
    assert (returncode, output) == (3, "ran\n")
    assert small_peak < 200


def test_a_tiny_real_podsched_run_gives_the_json_line(kafka, tmp_path: Path, configs: dict[str, list]) -> None:
    workload = workload_from_config(configs["misc"], "SchedulingBasic/5000Nodes_10000Pods").scaled(0.01)
    run = asyncio.run(scheduler_perf.run_workload(workload, kafka, tmp_path, 0, 120.0))
    upstream_run = {"avg": 100.0, "latency_p50_ms": 5.0, "cpu_ms_per_pod": 2.0, "rss_mb": 900.0}
    line = summarize(workload.name, {workload.name: [upstream_run]}, [run])
    assert set(line) >= {"workload", "upstream_avg", "upstream_variant", "podsched_avg", "ratio", "rounds"}
    assert line["rounds"] == 1 and line["upstream_variant"] == workload.name
    assert line["podsched_avg"] == pytest.approx(run["throughput_avg"], abs=0.1)
    assert line["ratio"] == pytest.approx(run["throughput_avg"] / 100.0, abs=0.01)
    assert line["podsched_measured_by"] == [run["throughput_measured_by"]]
    assert run["throughput_measured_by"] in ("collector", "first sent to last bind") and run["throughput_avg"] > 0
    assert set(line["upstream"]) == {"latency_p50_ms", "cpu_ms_per_pod", "rss_mb"}
    assert set(line["podsched"]) == {
        "latency_p50_ms",
        "submit_to_bound_p50_ms",
        "submit_to_bound_max_ms",
        "cpu_ms_per_pod",
        "rss_mb",
    }
    assert line["podsched"]["cpu_ms_per_pod"] > 0 and line["podsched"]["rss_mb"] > 0
    # Both latencies measured: the attempts' P50 from the queue's histogram, and the whole wait.
    assert line["podsched"]["latency_p50_ms"] > 0 and line["podsched"]["submit_to_bound_p50_ms"] > 0
    assert line["podsched"]["submit_to_bound_max_ms"] >= line["podsched"]["submit_to_bound_p50_ms"]


def test_the_gang_workload_is_rendered_from_upstreams_config_and_template_files(configs: dict[str, list]) -> None:
    topic, name = "podgroup/gangscheduling", "GangScheduling/5000Nodes_1000Gangs_3000Pods"
    assert (topic, name) in COMPARED
    case = next(c for c in configs[topic] if c["name"] == "GangScheduling")
    params = next(w for w in case["workloads"] if w["name"] == "5000Nodes_1000Gangs_3000Pods")["params"]
    workload = workload_from_config(configs[topic], name, perf_dir(topic))
    # the counts are the config's params, the gate its test case's featureGates
    assert (workload.nodes, workload.pod_groups) == (params["initNodes"], params["initPodGroups"])
    assert workload.measured_pods == params["initPodGroups"] * params["podsPerGroup"]
    assert dict(workload.feature_gates) == case["featureGates"] == {"GenericWorkload": True}
    assert workload.scheduler_config()["featureGates"] == {"GenericWorkload": True}
    # the objects are upstream's template files rendered: the same text, the same params
    templates = perf_dir(topic) / "templates"
    assert workload.pod_group_manifest.text == (templates / "podgroup.yaml").read_text()
    assert workload.measured_manifest.text == (templates / "gang-pod.yaml").read_text()
    groups, pods = workload.pod_group_documents(), workload.measured_documents()
    assert [g["metadata"]["name"] for g in groups[:2]] == ["gang-0", "gang-1"]
    assert groups[0]["kind"] == "PodGroup" and groups[0]["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert groups[0]["spec"]["schedulingPolicy"] == {"gang": {"minCount": params["podsPerGroup"]}}
    per_group = params["podsPerGroup"]
    assert pods[per_group]["metadata"]["name"] == f"test-gang-scheduling-{per_group}"
    assert [p["spec"]["schedulingGroup"]["podGroupName"] for p in pods[: per_group + 1]] == (
        ["gang-0"] * per_group + ["gang-1"]
    )
    assert {d["metadata"]["namespace"] for d in groups + pods} == {scheduler_perf.MEASURED_NAMESPACE}
    # a changed upstream file changes what podsched creates
    edited = copy.deepcopy(configs[topic])
    next(c for c in edited if c["name"] == "GangScheduling")["workloads"][0]["params"]["podsPerGroup"] = 7
    small = workload_from_config(edited, "GangScheduling/10Nodes_3Gangs", perf_dir(topic))
    assert small.measured_pods == 21 and small.pod_group_documents()[2]["spec"]["schedulingPolicy"]["gang"] == {
        "minCount": 7
    }


def test_an_unsupported_template_action_names_the_file_and_the_action() -> None:
    assert render_template("a: {{DivideInt .Index .n}}", {"Index": 7, "n": 3}, "w") == {"a": 2}
    with pytest.raises(ConfigError, match=r"w: template action '\{\{printf \"%d\" .Index\}\}' is not supported"):
        render_template('a: {{printf "%d" .Index}}', {"Index": 1}, "w")
    with pytest.raises(ConfigError, match=r"w: template value '.missing' is not among \['Index'\]"):
        render_template("a: {{.missing}}", {"Index": 1}, "w")


def test_a_tiny_real_gang_run_binds_every_gang(kafka, tmp_path: Path, configs: dict[str, list]) -> None:
    topic = "podgroup/gangscheduling"
    workload = workload_from_config(configs[topic], "GangScheduling/10Nodes_3Gangs", perf_dir(topic))
    # run_workload returns once every measured pod is bound (and raises naming how many were not)
    run = asyncio.run(scheduler_perf.run_workload(workload, kafka, tmp_path, 0, 120.0))
    assert run["measured_pods"] == 9 and run["latency_p50_ms"] > 0
    assert run["per_pod"]["scheduler_schedule_attempts[scheduled]"] >= 1
