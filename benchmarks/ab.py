"""Compare two commits with the scheduler_perf harness, runs interleaved.

    python -m benchmarks.ab --base REV [--head REV] [--workload NAME] [--rounds N] [-- harness args]
    make bench-ab BASE=REV [HEAD=REV] [WORKLOAD=NAME] [ROUNDS=N] [BENCH_ARGS=...]

This machine's speed drifts by tens of percent from one quarter hour to the next (every process's
CPU per pod moves together, the Kafka broker's included), so two runs made minutes apart compare
the machine as much as the code. Here base and head take turns, round after round, on the same
broker binaries and the same harness arguments, and the summary gives each side's median. Each side
runs from its own checkout (a git worktree under .cache/ab/, with its generated protos; the working
tree itself when --head is omitted), with this virtualenv. Every run's whole JSON line is appended
to .cache/ab/runs.jsonl; the summary also gives each process's median CPU per pod.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKTREES = ROOT / ".cache" / "ab"
RUNS_LOG = WORKTREES / "runs.jsonl"


def checkout(rev: str) -> Path:
    """A worktree of `rev` with its protos generated (made once, reused while the commit is the same)."""
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    path = WORKTREES / sha[:12]
    if not (path / "libs" / "podsched_proto" / ".generated").exists():
        if not path.exists():
            WORKTREES.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True)
        # The Makefile's own `protos` rule, with this virtualenv (-o: do not rebuild it from that
        # checkout's pyproject.toml).
        venv = Path(sys.prefix)
        subprocess.run(["make", "-C", str(path), "protos", f"VENV={venv}", "-o", str(venv / ".installed")], check=True)
    return path


def run_once(path: Path, workload: str, harness_args: list[str]) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(path / part) for part in ("libs", "services", "."))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scheduler_perf", "--workload", workload, *harness_args],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{path}: the harness failed ({done.returncode}):\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def cpu_total(result: dict[str, Any]) -> float:
    return float(sum(result.get("cpu_ms_per_pod", {}).values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the commit to compare against")
    parser.add_argument("--head", default="", help="the commit to measure (default: the working tree)")
    parser.add_argument("--workload", default="SchedulingBasic")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("harness_args", nargs=argparse.REMAINDER, help="after --: passed to scheduler_perf")
    args = parser.parse_args()
    harness_args = [a for a in args.harness_args if a != "--"]
    sides = {"base": checkout(args.base), "head": checkout(args.head) if args.head else ROOT}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for round_index in range(args.rounds):
        order = list(sides) if round_index % 2 == 0 else list(reversed(sides))  # neither side always first
        for name in order:
            result = run_once(sides[name], args.workload, harness_args)
            results[name].append(result)
            RUNS_LOG.parent.mkdir(parents=True, exist_ok=True)
            with RUNS_LOG.open("a") as log:  # every run's whole JSON line, for a closer look later
                log.write(json.dumps({"side": name, "rev": str(sides[name]), **result}) + "\n")
            print(
                f"round {round_index + 1} {name}: {result['throughput_avg']} pods/s, "
                f"latency p50 {result['latency_p50_ms']} max {result['latency_max_ms']} ms, "
                f"CPU {cpu_total(result):.2f} ms per pod, "
                f"calibration {result.get('calibration_us', '-')} us",
                flush=True,
            )
    for name, runs in results.items():
        print(
            json.dumps(
                {
                    "side": name,
                    "rev": args.base if name == "base" else (args.head or "working tree"),
                    "workload": runs[0]["workload"],
                    "runs": len(runs),
                    "throughput_avg_median": statistics.median(r["throughput_avg"] for r in runs),
                    "latency_p50_ms_median": statistics.median(r["latency_p50_ms"] for r in runs),
                    "cpu_ms_per_pod_median": round(statistics.median(cpu_total(r) for r in runs), 3),
                    # Where each side's CPU went: each process's median (they need not add up to the total's).
                    "cpu_ms_per_pod_by_process_median": {
                        process: round(statistics.median(r["cpu_ms_per_pod"].get(process, 0.0) for r in runs), 3)
                        for process in runs[0].get("cpu_ms_per_pod", {})
                    },
                    "latency_p99_ms_median": statistics.median(r["latency_p99_ms"] for r in runs),
                    # The slowest pod's wait (PreemptionBasic's every preemptor within 2 s): the median
                    # run's, and the worst run's.
                    "latency_max_ms_median": statistics.median(r["latency_max_ms"] for r in runs),
                    "latency_max_ms_worst": max(r["latency_max_ms"] for r in runs),
                    "calibration_us_median": statistics.median(r.get("calibration_us", 0.0) for r in runs),
                }
            )
        )


if __name__ == "__main__":
    main()
