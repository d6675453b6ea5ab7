"""podsched against upstream's own scheduler_perf, same machine, same run, alternating.

    python -m benchmarks.bench_upstream [--workload NAME ...] [--rounds N] [--out-dir DIR]

Builds (once, cached under ``<cache>/schedperf/<hash of benchmarks/upstream_perf>``) upstream's scheduler_perf
test binaries ``misc`` and ``default_preemption`` and etcd from the wrapper module in
``benchmarks/upstream_perf``; then for each round and workload runs upstream's variants and podsched in turn
(upstream, podsched, upstream, podsched, ...) so that the machine's drift cancels out. podsched's parameters
come from upstream's ``performance-config.yaml`` (:mod:`benchmarks.upstream_config`).

Output: one JSON line per workload: workload, upstream_avg (median over rounds of the fastest variant's
SchedulingThroughput Average), upstream_variant, upstream_failed (variants that gave no figure, with
scheduler_perf's reason) and upstream_skipped (--skip-variant), podsched_avg, ratio, rounds, and per side
latency_p50_ms, cpu_ms_per_pod, rss_mb (podsched's also submit_to_bound_p50_ms and _max_ms), and the machine's load
averages (1, 5, 15 min) before and after the workload's runs (the machine is shared; the ratio stays fair
since the two sides alternate). The lines are also written to ``bench-upstream.jsonl`` in --out-dir,
replacing the lines of the same workloads and keeping the others, and ``bars.png`` is drawn from all of
that file's lines.

Upstream's figures: cpu_ms_per_pod is the CPU of the test process and etcd over the whole run (setup
included) per measured pod, rss_mb the peak of the larger of the two. latency_p50_ms is the P50 of
``scheduler_scheduling_attempt_duration_seconds{result="scheduled"}`` (one scheduling attempt that
succeeded: algorithm and binding): scheduler_perf v1.37.2 collects no end-to-end pod latency (its
default metrics name ``scheduler_pod_scheduling_duration_seconds``, which v1.37 no longer registers, and
not ``scheduler_pod_scheduling_sli_duration_seconds``). podsched's latency_p50_ms is the same measure of
its queue's histogram of that name (pop to the bind's answer), computed as upstream's collector does;
its submit_to_bound_p50_ms is a pod's whole wait, from its Apply sent to its bind on the log: both
creators run ahead of their schedulers, so most of that is waiting in the queue. submit_to_bound_max_ms
is the slowest pod's (the median over rounds of each run's slowest).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.scheduler_perf import run_workload
from benchmarks.upstream_config import COMPARED, load_config, module_dir, perf_dir, variants, workload_from_config
from podsched_devstack.cache import cache_root
from podsched_devstack.gobuild import build_once, find_go, go_env, inputs_hash
from podsched_devstack.kafka import KafkaBroker, ensure_kafka_installed
from podsched_devstack.process import DevstackError, repo_root

TOPICS = ("misc", "default_preemption", "podgroup/gangscheduling")


def binary_name(topic: str) -> str:
    """The test binary of a scheduler_perf package: ``<last part of its path>.test``."""
    return f"{topic.rsplit('/', 1)[-1]}.test"


def _progress(message: str) -> None:
    print(f"[bench-upstream] {message}", file=sys.stderr, flush=True)


def module_source() -> Path:
    return repo_root() / "benchmarks" / "upstream_perf"


def _sources(source: Path) -> list[Path]:
    return [source / "go.mod", source / "go.sum", source / "tools.go", source / "etcd" / "main.go"]


def ensure_built() -> Path:
    """The folder with ``etcd`` and the TOPICS' test binaries (``misc.test``, ...), built if needed
    (first time ~7 min and ~3 GB of memory; it shares Go's build cache with the oracle)."""
    source = module_source()
    folder = cache_root() / "schedperf" / inputs_hash(_sources(source))
    build_once(folder / binary_name(TOPICS[-1]), lambda: _build(source, folder))  # built last
    return folder


def _build(source: Path, folder: Path) -> None:
    go = find_go("upstream's scheduler_perf", "install Go 1.26 or newer (https://go.dev/dl/)")
    work = folder / "src"
    shutil.rmtree(work, ignore_errors=True)
    (work / "etcd").mkdir(parents=True)
    for path in _sources(source):
        shutil.copy2(path, work / path.relative_to(source))
    env = go_env(["-mod=mod"])
    steps = [("etcd", ["build", "-trimpath", "-o", str(folder / "etcd"), "./etcd"])]
    for topic in TOPICS:
        package = f"k8s.io/kubernetes/test/integration/scheduler_perf/{topic}"
        steps.append((topic, ["test", "-c", "-trimpath", "-o", str(folder / binary_name(topic)), package]))
    for what, args in steps:
        _progress(f"building {what} (log: {folder / 'build.log'})")
        with (folder / "build.log").open("a") as log:
            code = subprocess.run([go, *args], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        if code != 0:
            raise DevstackError(f"building {what} failed (exit {code}); see {folder / 'build.log'}")


# The scheduled attempts' latency histogram, as scheduler_perf's metrics collector labels its data item
# (test/integration/scheduler_perf/util.go collectHistogramVec: the metric's name and the label values
# it was collected for).
ATTEMPT_LATENCY = "scheduler_scheduling_attempt_duration_seconds"


def data_item(items: list[dict[str, Any]], metric: str, **labels: str) -> dict[str, Any] | None:
    """The data of the item labelled ``Metric: <metric>`` (and `labels`) in a scheduler_perf data-items list."""
    for item in items:
        item_labels = item.get("labels", {})
        if item_labels.get("Metric") == metric and all(item_labels.get(k) == v for k, v in labels.items()):
            return item.get("data")
    return None


def read_data_items(folder: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            items += json.loads(path.read_text()).get("dataItems") or []
        except (ValueError, AttributeError):
            continue
    return items


def _pattern(name: str) -> str:
    # anchor each '/'-separated part: Go matches part by part, and "5000Nodes" alone also matches variants
    return "/".join(f"^{part}$" for part in ["BenchmarkPerfScheduling", *name.split("/")])


def run_upstream(binaries: Path, topic: str, name: str, measured_pods: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="schedperf-") as out:
        env = dict(os.environ, KUBE_CACHE_MUTATION_DETECTOR="false", ARTIFACTS=out)
        env["PATH"] = f"{binaries}{os.pathsep}{env.get('PATH', '')}"
        # The binaries are built with -trimpath (as the oracle, sharing Go's build cache), so the apiserver's
        # test server finds its own package folder the way it does under bazel: TEST_SRCDIR/TEST_WORKSPACE
        # joined with the trimmed path "k8s.io/kubernetes@v1.37.2/...", i.e. the module cache.
        env.update(TEST_SRCDIR=str(module_dir().parents[1]), TEST_WORKSPACE=".")
        cmd = [
            str(binaries / binary_name(topic)),
            "-test.run=^$",
            f"-test.bench={_pattern(name)}",
            "-test.benchtime=1x",
            "-test.timeout=60m",
            "-perf-scheduling-label-filter=",
            f"-data-items-dir={out}",
        ]
        # upstream's thresholds are tuned for its 6-core CI: a low result exits 1 with the data written
        returncode, output, usage = run_measured(cmd, cwd=perf_dir(topic), env=env)
        items = read_data_items(Path(out))
    throughput = data_item(items, "SchedulingThroughput")
    if throughput is None:
        raise DevstackError(f"upstream {name}: no SchedulingThroughput (exit {returncode}):\n{output[-3000:]}")
    latency = data_item(items, ATTEMPT_LATENCY, result="scheduled")  # Perc50 is in milliseconds already
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "avg": round(float(throughput["Average"]), 1),
        "latency_p50_ms": round(float(latency["Perc50"]), 1) if latency and "Perc50" in latency else None,
        "cpu_ms_per_pod": round(cpu * 1000 / measured_pods, 3),
        "rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def run_measured(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, resource.struct_rusage]:
    """Run `cmd` to its end: its exit code, its output (stdout then stderr) and the resources of it and
    the children it waited for (etcd), from wait4 on this one process. getrusage(RUSAGE_CHILDREN)
    would do for the CPU (as a difference), but its ru_maxrss is the largest of every child this
    process ever reaped, so each run after the largest would report that one's peak."""
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        stdout.seek(0)
        stderr.seek(0)
        output = (stdout.read() + stderr.read()).decode(errors="replace")
    return proc.returncode, output, usage


def summarize(
    name: str,
    upstream: dict[str, list[dict[str, Any]]],
    podsched: list[dict[str, Any]],
    load: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
    skipped: list[str] | None = None,
) -> dict[str, Any]:
    # A variant that gave no figure (upstream's own wait for the pods timed out) is reported, not ranked.
    failed = {variant: runs[-1]["failed"] for variant, runs in upstream.items() if all("failed" in r for r in runs)}
    medians = {
        variant: statistics.median(r["avg"] for r in runs if "failed" not in r)
        for variant, runs in upstream.items()
        if variant not in failed
    }
    fastest = max(medians, key=lambda variant: medians[variant]) if medians else ""
    up = [r for r in upstream.get(fastest, []) if "failed" not in r]
    ours = statistics.median(r["throughput_avg"] for r in podsched)

    def med(runs: list[dict[str, Any]], key: str) -> float | None:
        values = [r[key] for r in runs if r.get(key) is not None]
        return round(statistics.median(values), 3) if values else None

    return {
        "workload": name,
        "upstream_avg": round(medians[fastest], 1) if fastest else None,
        "upstream_variant": fastest,
        "upstream_avg_by_variant": {v: round(m, 1) for v, m in medians.items()},
        "upstream_failed": failed,
        "upstream_skipped": skipped or [],
        "podsched_avg": round(ours, 1),
        # "collector" (upstream's 1 s samples), or "first sent to last bind" when a run's burst was
        # bound within one interval and the collector had no sample.
        "podsched_measured_by": sorted({r.get("throughput_measured_by", "collector") for r in podsched}),
        "ratio": round(ours / medians[fastest], 2) if fastest and medians[fastest] else None,
        "rounds": len(podsched),
        "upstream": {k: med(up, k) for k in ("latency_p50_ms", "cpu_ms_per_pod", "rss_mb")},
        "podsched": {
            # The same measure as upstream's: the P50 of the successful scheduling attempts.
            "latency_p50_ms": med(podsched, "attempt_p50_ms"),
            # A pod's whole wait, from its Apply sent to its bind seen on the log (queueing included).
            "submit_to_bound_p50_ms": med(podsched, "latency_p50_ms"),
            # The slowest pod's (PreemptionBasic's goal: every preemptor bound within 2 s).
            "submit_to_bound_max_ms": med(podsched, "latency_max_ms"),
            "cpu_ms_per_pod": med([{"c": sum(r["cpu_ms_per_pod"].values())} for r in podsched], "c"),
            "rss_mb": med(podsched, "rss_mb"),
        },
        "loadavg_before": [round(v, 2) for v in load[0]] if load else None,
        "loadavg_after": [round(v, 2) for v in load[1]] if load else None,
    }


def merge_lines(path: Path, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines already in `path` with those of the same workloads replaced by `lines` (new workloads
    appended); written back to `path` and returned."""
    kept: list[dict[str, Any]] = []
    if path.exists():
        kept = [json.loads(text) for text in path.read_text().splitlines() if text.strip()]
    fresh = {line["workload"]: line for line in lines}
    merged = [fresh.pop(line["workload"], line) for line in kept] + list(fresh.values())
    path.write_text("".join(json.dumps(line) + "\n" for line in merged))
    return merged


def plot(lines: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(9, 4))
    xs = range(len(lines))
    axis.bar([x - 0.2 for x in xs], [line["upstream_avg"] or 0 for line in lines], 0.4, label="kube-scheduler v1.37.2")
    axis.bar([x + 0.2 for x in xs], [line["podsched_avg"] for line in lines], 0.4, label="podsched")
    for x, line in zip(xs, lines, strict=True):
        if line["upstream_avg"] is None:  # upstream gave no figure (upstream_failed), not zero
            axis.text(x - 0.2, 5, "no figure", rotation=90, ha="center", va="bottom", fontsize=7)
    axis.set_xticks(list(xs), [line["workload"].replace("/", "\n", 1) for line in lines], fontsize=7)
    axis.set_ylabel("pods/s (SchedulingThroughput average)")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


async def main_async(args: argparse.Namespace) -> int:
    chosen = [(t, n) for t, n in COMPARED if not args.workload or any(w in n for w in args.workload)]
    binaries = ensure_built()
    ensure_kafka_installed()
    plan = []
    for topic, name in chosen:
        config = load_config(topic)
        names = [v for v in variants(config, name) if v not in args.skip_variant]
        plan.append((topic, name, names, workload_from_config(config, name, perf_dir(topic))))
    steps = args.rounds * sum(len(v) + 1 for _, _, v, _ in plan)
    done = 0
    upstream: dict[str, dict[str, list[dict[str, Any]]]] = {n: {} for _, n, _, _ in plan}
    ours: dict[str, list[dict[str, Any]]] = {n: [] for _, n, _, _ in plan}
    load: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
    with tempfile.TemporaryDirectory(prefix="podsched-bench-") as tmp:
        broker = KafkaBroker(Path(tmp) / "kafka")
        broker.start(timeout=120)
        try:
            for _ in range(args.rounds):
                for topic, name, names, workload in plan:
                    before = load[name][0] if name in load else os.getloadavg()
                    for variant in names:
                        _bar(done, steps, f"upstream {variant}")
                        try:
                            result = run_upstream(binaries, topic, variant, workload.measured_pods)
                        except DevstackError as error:  # e.g. its wait for the measured pods timed out
                            result = {"failed": _failure_line(str(error))}
                            _progress(f"upstream {variant} gave no figure: {result['failed']}")
                        upstream[name].setdefault(variant, []).append(result)
                        done += 1
                    _bar(done, steps, f"podsched {name}")
                    ours[name].append(await run_workload(workload, broker, Path(tmp) / "runs", 0, args.timeout))
                    load[name] = (before, os.getloadavg())
                    done += 1
        finally:
            broker.stop()
    _bar(done, steps, "done")
    print(file=sys.stderr)
    skipped = {name: [v for v in args.skip_variant if v.startswith(name)] for _, name, _, _ in plan}
    lines = [summarize(name, upstream[name], ours[name], load.get(name), skipped[name]) for _, name, _, _ in plan]
    for line in lines:
        print(json.dumps(line), flush=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    every = merge_lines(args.out_dir / "bench-upstream.jsonl", lines)
    plot(every, args.out_dir / "bars.png")
    print(f"plot: {args.out_dir / 'bars.png'}", file=sys.stderr)
    return 0


def _failure_line(message: str) -> str:
    """The line of a failed scheduler_perf run that says why (its FATAL ERROR's next line), else the last
    progress line of its wait for the pods ("pods: want 10000, got 5934"), else the first line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if "FATAL ERROR" in line and index + 1 < len(lines):
            return lines[index + 1][:300]
    waits = [line for line in lines if "pods: want" in line]
    if waits:
        return waits[-1][:300]
    return lines[0][:300] if lines else "failed"


def _bar(done: int, total: int, note: str) -> None:
    filled = int(30 * done / max(total, 1))
    print(
        f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {note[:60]:<60}", end="", file=sys.stderr, flush=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", action="append", default=[], help="a part of a workload's name")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--skip-variant",
        action="append",
        default=[],
        help="an upstream variant not to run, by its whole name (e.g. PreemptionAsync/5000Nodes, whose default "
        "gates may not finish within scheduler_perf's own timeout on a loaded machine); listed in the JSON line",
    )
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--out-dir", type=Path, default=Path(".cache/bench-upstream"))
    sys.exit(asyncio.run(main_async(parser.parse_args())))


if __name__ == "__main__":
    main()
