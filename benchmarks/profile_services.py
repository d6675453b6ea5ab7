"""Where each service's CPU goes during a scheduler_perf workload: py-spy on every service.

    python -m benchmarks.profile_services [--workload NAME] [--scale F] [--rate HZ] [--top N] [--out-dir DIR]
    make profile WORKLOAD=SchedulingBasic [BENCH_ARGS="--scale 0.5"]

Runs one workload as `make bench` does (benchmarks.scheduler_perf, a fresh stack on a real Kafka broker)
and, for its measured phase only, samples each service's process group with `py-spy record
--nonblocking` (the services are not paused, so the figures stay close to an unprofiled run; the
Kafka broker is a JVM and is left out). Prints the harness's JSON line (the CPU per pod of each
process), then per service the functions with the most samples of their own ("self") and the most
samples with them on the stack ("total"), as a share of that service's samples and as CPU
milliseconds per measured pod (the share times the service's measured CPU per pod). The raw stacks
(py-spy's collapsed format, one file per service) stay in --out-dir for a flame graph.

Needs ptrace rights over the services (root, or kernel.yama.ptrace_scope=0); py-spy is a dev
dependency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.scheduler_perf import SHORT_NAMES, UPSTREAM_WORKLOADS, WORKLOADS, run_workload, workload_named
from podsched_devstack.kafka import KafkaBroker, ensure_kafka_installed
from podsched_devstack.services import ServiceStack

# Frames that only say "the event loop ran something": skipped when naming a stack's own function.
_LOOP_FRAMES = ("asyncio/", "selectors.py", "threading.py", "concurrent/futures/")


def py_spy() -> str:
    found = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if found is None:
        raise SystemExit("py-spy not found: it is a dev dependency (pip install -e '.[dev]')")
    return found


def start_profilers(out_dir: Path, rate: int) -> Callable[[ServiceStack], Callable[[], None]]:
    """The measured-phase hook for run_workload: one py-spy per service, stopped (SIGINT, which makes
    py-spy write its file) when the phase ends."""

    def begin(stack: ServiceStack) -> Callable[[], None]:
        spies = []
        for name, process in stack.processes.items():
            command = [py_spy(), "record", "--pid", str(process.pid), "--subprocesses", "--nonblocking"]
            command += ["--function", "--rate", str(rate), "--format", "raw", "--output", str(out_dir / f"{name}.txt")]
            log = (out_dir / f"{name}.py-spy.log").open("w")
            spies.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log))

        def end() -> None:
            for spy, _ in spies:
                spy.send_signal(signal.SIGINT)
            for spy, log in spies:
                try:
                    spy.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    spy.kill()
                log.close()

        return end

    return begin


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    """py-spy's raw (collapsed) output: 'frame;frame;...;frame count' per line, root first."""
    stacks: Counter[tuple[str, ...]] = Counter()
    if not path.exists():
        return stacks
    for line in path.read_text().splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks[tuple(_short(frame) for frame in frames.split(";"))] += int(count)
    return stacks


def _short(frame: str) -> str:
    """'decode_change (podsched_service/codec.py:140)' -> 'podsched_service/codec.py:decode_change';
    process and thread frames stay as they are."""
    function, _, where = frame.partition(" (")
    if not where:
        return frame
    file = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "/libs/", "/services/", "/lib/python3"):
        if marker in file:
            file = file.split(marker, 1)[1].lstrip("0123456789./")
            break
    return f"{file}:{function}"


def top_functions(stacks: Counter[tuple[str, ...]], top: int) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(self, total) sample counts per function, the largest first."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for frames, count in stacks.items():
        python = [f for f in frames if ".py:" in f]
        if python:
            own[python[-1]] += count
        for frame in set(python):
            if not any(marker in frame for marker in _LOOP_FRAMES):
                total[frame] += count
    return own.most_common(top), total.most_common(top)


def report(result: dict[str, Any], out_dir: Path, top: int) -> str:
    cpu = result["cpu_ms_per_pod"]
    lines = [f"{result['workload']}: {result['throughput_avg']} pods/s; CPU ms per measured pod:"]
    lines.append(
        "  " + ", ".join(f"{name} {value:.3f}" for name, value in cpu.items()) + f"; total {sum(cpu.values()):.3f}"
    )
    for path in sorted(out_dir.glob("*.txt")):
        name = path.stem
        stacks = read_stacks(path)
        samples = sum(stacks.values())
        if not samples:
            continue
        ms = cpu.get(name, 0.0)
        own, total = top_functions(stacks, top)
        lines.append(f"\n== {name}: {samples} samples, {ms:.3f} ms CPU per pod")
        for title, rows in (("self", own), ("total", total)):
            lines.append(f"  -- {title}")
            for function, count in rows:
                share = count / samples
                lines.append(f"  {share:6.1%} {share * ms:7.3f} ms  {function}")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    name = SHORT_NAMES.get(args.workload, args.workload)
    if name not in WORKLOADS and name not in UPSTREAM_WORKLOADS:
        print(f"unknown workload {args.workload}; known: {sorted(SHORT_NAMES)}", file=sys.stderr)
        return 2
    workload = workload_named(name).scaled(args.scale)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for old in args.out_dir.glob("*.txt"):
        old.unlink()
    ensure_kafka_installed()
    with tempfile.TemporaryDirectory(prefix="podsched-profile-") as tmp:
        broker = KafkaBroker(Path(tmp) / "kafka")
        broker.start(timeout=120)
        try:
            result = await run_workload(
                workload,
                broker,
                Path(tmp) / "runs",
                args.workers,
                args.timeout,
                args.scale,
                measured_phase=start_profilers(args.out_dir, args.rate),
            )
        finally:
            broker.stop()
    print(json.dumps({k: v for k, v in result.items() if not k.startswith("_")}), flush=True)
    text = report(result, args.out_dir, args.top)
    (args.out_dir / "summary.md").write_text(text + "\n")
    print(text)
    print(f"raw stacks and summary: {args.out_dir}", file=sys.stderr)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="SchedulingBasic", help=f"one of {sorted(SHORT_NAMES)}")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply nodes and pod counts (quick runs)")
    parser.add_argument("--workers", type=int, default=0, help="preemption worker processes (as make bench)")
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=15, help="functions listed per service and kind")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--out-dir", type=Path, default=Path(".cache/profile"))
    sys.exit(asyncio.run(main_async(parser.parse_args())))


if __name__ == "__main__":
    main()
