"""Differential test: `podsched simulate` against the real upstream kube-scheduler on random clusters.

    .venv/bin/python -m tests.oracle.differential --count 1000 [--seed S] [--out DIR]
    .venv/bin/python -m tests.oracle.differential --replay DIR [DIR...]   (saved clusters again)
    .venv/bin/python -m tests.oracle.differential --shrink DIR            (a smaller replay of one)

Each cluster (tests/oracle/clusters.py) goes through podsched's simulator in this process and through
the oracle (tests/oracle/upstream, one long-lived `oracle -batch` process on the other core). Both are
reduced to one line per pod: final node ("" if pending), nominated node (pending pods only),
preempted, deleted. Upstream is random in two places (selectHost picks uniformly among the best-scored
nodes; the preemption dry run returns candidates in a nondeterministic order, so pickOneNodeForPreemption's
last tie is arbitrary), while podsched takes the first node. So when upstream's first answer differs, the
oracle runs that cluster again, up to --reruns times in all: if one of its runs gives exactly podsched's
outcome, podsched's choice is one upstream makes itself (a tie, shown rather than assumed); if none does,
it is a difference, written as replayable files: DIR/<id>/step0.yaml ... plus podsched.json,
upstream.json and diff.txt. Before that, two more ways to show a tie: podsched with random tie-breaks
giving one of upstream's outcomes, or the first decision where podsched and upstream seed 1 part binding
one pod to a node upstream's own `-v 10` scores rank equal to upstream's choice (large clusters, where
no few runs hit the whole combination of such choices).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

# Imported before hypothesis draws in its own thread (generate): numpy half-imported by one thread
# while hypothesis looks it up in sys.modules from another breaks the draw.
from podsched.config.scheduler_config import parse_scheduler_config
from podsched.simulator.engine import SIMULATION_EPOCH, Simulator
from podsched_devstack.process import process_cpu_seconds
from tests.oracle.gates import feature_gates, gates_flag, scheduler_config_text

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "bench-results" / "upstream-diff"
DEFAULT_RERUNS = 8
LAG = 16

# One pod's final state: (node, nominated node while pending, preempted, deleted).
PodOutcome = tuple[str, str, bool, bool]
Outcome = dict[str, PodOutcome]  # "namespace/name" -> PodOutcome


# --- podsched's side ------------------------------------------------------------------------------


@dataclass
class PodschedRun:
    outcome: Outcome
    result: dict[str, Any]  # what `podsched simulate -o json` prints
    rejected: list[dict[str, str]]
    seconds: float


def run_podsched(texts: Sequence[str], tie_seed: int | None = None) -> PodschedRun:
    """The files through `podsched simulate`'s engine, in this process: each file applied, then
    scheduled until nothing changes, as the CLI does. `tie_seed` breaks score ties at random and
    starts the preemption candidates at a random offset, as upstream may (simulate takes the first)."""
    started = time.perf_counter()
    gates = feature_gates(texts)
    config = parse_scheduler_config(scheduler_config_text(gates), "feature gates") if gates else None
    if tie_seed is None:
        simulator = Simulator(config)
    else:
        draws = random.Random(tie_seed)
        simulator = Simulator(config, rng=random.Random(tie_seed), offset=lambda n: draws.randrange(n))
    for index, text in enumerate(texts):
        simulator.apply_text(text, f"step{index}.yaml")
        simulator.run_until_quiescent()
    result = simulator.result()
    live = {(pod.namespace, pod.name) for pod in simulator.cluster.pods_by_uid.values()}
    outcome: Outcome = {}
    for pod in result["pods"]:
        metadata, spec, status = pod["metadata"], pod["spec"], pod.get("status", {})
        key = (metadata.get("namespace", "default"), metadata["name"])
        node = spec.get("nodeName", "") or ""
        preempted = any(
            c.get("type") == "DisruptionTarget"
            and c.get("status") == "True"
            and c.get("reason") == "PreemptionByScheduler"
            for c in status.get("conditions", [])
        )
        nominated = "" if node else status.get("nominatedNodeName", "") or ""
        outcome[f"{key[0]}/{key[1]}"] = (node, nominated, preempted, key not in live)
    return PodschedRun(outcome, result, result["rejected"], time.perf_counter() - started)


def upstream_outcome(answer: dict[str, Any]) -> Outcome:
    outcome: Outcome = {}
    for pod in answer.get("pods", []):
        node = pod.get("nodeName", "") or ""
        nominated = "" if node else pod.get("nominatedNodeName", "") or ""
        outcome[f"{pod['namespace']}/{pod['name']}"] = (
            node,
            nominated,
            bool(pod.get("preempted")),
            bool(pod.get("deleted")),
        )
    return outcome


# --- the oracle's side ------------------------------------------------------------------------------


class OracleError(RuntimeError):
    pass


def oracle_binary(build: bool = False) -> Path:
    """The oracle built from the current sources (`build`: build it first if needed, ~7 min the first
    time), or an OracleError saying how to build it."""
    from podsched_devstack import upstream
    from podsched_devstack.kafka import DevstackError

    try:
        return upstream.ensure_oracle_built() if build else upstream.oracle_binary()
    except DevstackError as error:
        raise OracleError(str(error)) from None


class Oracle:
    """One long-lived `oracle -batch` process. Requests are queued to its stdin by a writer thread
    and answers collected by id by a reader thread, so it works while this process simulates.

    The oracle answers in request order. If it gives no answer for `stall_seconds` while requests are
    outstanding (or dies), the oldest outstanding request is the one it is stuck on: that request gets
    an error answer (its files saved under `hung_dir`, if given), the process is replaced and the
    other outstanding requests are sent again."""

    def __init__(self, binary: Path | None = None, stall_seconds: float = 180.0, hung_dir: Path | None = None) -> None:
        self.binary = binary or oracle_binary()
        self.stall_seconds = stall_seconds
        self.hung_dir = hung_dir
        self.version = ""
        self.runs = 0
        self.hung: list[str] = []  # ids of requests the oracle never answered
        self._done = threading.Condition()
        self._answers: dict[str, dict[str, Any]] = {}
        self._outstanding: dict[str, str] = {}  # id -> request line, in request order
        self._generation = 0
        self._cpu_before = 0.0  # CPU time of replaced processes
        with self._done:
            self._start()

    def _start(self) -> None:
        """A fresh process; every outstanding request is sent to it again. Holds self._done."""
        self._generation += 1
        # A file rather than a pipe for stderr, so a chatty oracle can never block on it.
        self._log = tempfile.TemporaryFile(mode="w+", prefix="oracle-stderr-")  # noqa: SIM115 (closed in _stop)
        self._process = subprocess.Popen(
            [str(self.binary), "-batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
        )
        self._outbox: queue.Queue[str | None] = queue.Queue()
        self._failure = ""
        self._last_progress = time.monotonic()
        for line in self._outstanding.values():
            self._outbox.put(line)
        generation, process, outbox, log = self._generation, self._process, self._outbox, self._log
        threading.Thread(target=self._write, args=(process, outbox), name="oracle-writer", daemon=True).start()
        threading.Thread(target=self._read, args=(generation, process, log), name="oracle-reader", daemon=True).start()

    def _stop(self) -> None:
        self._cpu_before += self._process_cpu()
        self._outbox.put(None)
        self._process.kill()
        self._process.wait()
        self._log.close()

    def submit(self, request_id: str, texts: Sequence[str], seed: int = 1) -> None:
        """Queue one run; `seed` seeds upstream's math/rand (selectHost's ties, the preemption
        candidates' start offset), so run n of a cluster is repeatable with `oracle -seed n`."""
        request: dict[str, Any] = {"id": request_id, "files": list(texts), "seed": seed}
        gates = feature_gates(texts)
        if gates:
            request["featureGates"] = gates
        line = json.dumps(request)
        with self._done:
            self.runs += 1
            if not self._outstanding:  # the oracle was idle: its stall clock starts now
                self._last_progress = time.monotonic()
            self._outstanding[request_id] = line
            self._outbox.put(line)

    def answer(self, request_id: str) -> dict[str, Any]:
        with self._done:
            while request_id not in self._answers:
                stalled = time.monotonic() - self._last_progress > self.stall_seconds
                if (self._failure or stalled) and self._outstanding:
                    self._give_up_on_oldest(self._failure or f"no answer within {self.stall_seconds:.0f} s")
                elif self._failure:
                    raise OracleError(self._failure)
                self._done.wait(1.0)
            return self._answers.pop(request_id)

    def _give_up_on_oldest(self, why: str) -> None:
        culprit = next(iter(self._outstanding))
        line = self._outstanding.pop(culprit)
        self.hung.append(culprit)
        message = f"the oracle failed on this cluster ({why}); it was restarted"
        if self.hung_dir is not None:
            where = self.hung_dir / culprit.replace("#", "-run")
            where.mkdir(parents=True, exist_ok=True)
            for index, text in enumerate(json.loads(line)["files"]):
                (where / f"step{index}.yaml").write_text(text)
            message += f"; files in {where}"
        self._answers[culprit] = {"id": culprit, "upstream": self.version, "error": message}
        self._stop()
        self._start()

    def run(self, request_id: str, texts: Sequence[str], seed: int = 1) -> dict[str, Any]:
        self.submit(request_id, texts, seed)
        return self.answer(request_id)

    def _process_cpu(self) -> float:
        return process_cpu_seconds(self._process.pid) or 0.0

    def cpu_seconds(self) -> float:
        """User plus system CPU time the oracle processes have used so far (Linux /proc)."""
        return self._cpu_before + self._process_cpu()

    def close(self) -> None:
        with self._done:
            self._outbox.put(None)
            process, log = self._process, self._log
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _write(process: subprocess.Popen[str], outbox: queue.Queue[str | None]) -> None:
        stdin = process.stdin
        assert stdin is not None
        try:
            while (line := outbox.get()) is not None:
                stdin.write(line + "\n")
                stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the reader reports why the process ended
        finally:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()

    def _read(self, generation: int, process: subprocess.Popen[str], log: Any) -> None:
        stdout = process.stdout
        assert stdout is not None
        with contextlib.suppress(OSError, ValueError):
            for line in stdout:
                answer = json.loads(line)
                with self._done:
                    if generation != self._generation:
                        return
                    self.version = self.version or answer.get("upstream", "")
                    self._outstanding.pop(answer.get("id", ""), None)
                    self._answers[answer.get("id", "")] = answer
                    self._last_progress = time.monotonic()
                    self._done.notify_all()
        code = process.wait()
        with self._done:
            if generation != self._generation:
                return
            tail = ""
            with contextlib.suppress(OSError, ValueError):
                log.seek(0)
                tail = log.read()[-4000:]
            self._failure = f"the oracle ({self.binary}) exited with code {code}" + (f": {tail}" if tail else "")
            self._done.notify_all()


# --- verdicts ---------------------------------------------------------------------------------------

IDENTICAL, TIE, DIFFERENCE = "identical", "tie", "difference"


@dataclass
class Verdict:
    cluster_id: str
    texts: list[str]
    kind: str = IDENTICAL
    podsched: PodschedRun | None = None
    upstream: list[dict[str, Any]] = field(default_factory=list)  # every run's answer, in order
    problem: str = ""  # why a difference is not a plain disagreement (rejection, error)
    tie: str = ""  # how a tie was shown
    path: Path | None = None

    @property
    def upstream_varied(self) -> bool:
        outcomes = {json.dumps(sorted(upstream_outcome(a).items())) for a in self.upstream if "error" not in a}
        return len(outcomes) > 1


def _settle(verdict: Verdict) -> bool:
    """Classify from the runs so far; True when no more upstream runs can change the verdict."""
    assert verdict.podsched is not None
    ours = verdict.podsched.outcome
    for index, answer in enumerate(verdict.upstream):
        if "error" in answer:
            verdict.kind, verdict.problem = DIFFERENCE, f"the oracle could not run it: {answer['error']}"
            return True
        if upstream_outcome(answer) == ours:
            verdict.kind = IDENTICAL if index == 0 else TIE
            verdict.tie = "" if index == 0 else f"upstream with seed {index + 1} gives podsched's outcome"
            return True
    verdict.kind = DIFFERENCE
    return False


def _settle_by_podsched_ties(verdict: Verdict, attempts: int) -> bool:
    """The other way round: podsched breaking its ties at random (uniformly among equal scores, a
    random candidate offset, as upstream does) gives one of upstream's outcomes. Several tied pods
    in one cluster make it unlikely that a few upstream runs hit podsched's exact combination; this
    shows the two differ only in choices upstream itself leaves to chance."""
    theirs = [(index, upstream_outcome(a)) for index, a in enumerate(verdict.upstream) if "error" not in a]
    for tie_seed in range(1, attempts + 1):
        outcome = run_podsched(verdict.texts, tie_seed).outcome
        for index, other in theirs:
            if outcome == other:
                verdict.kind = TIE
                verdict.tie = f"podsched with tie-break seed {tie_seed} gives upstream's seed-{index + 1} outcome"
                return True
    return False


# One scheduling decision, in order: ("bind" or "nominate", "namespace/name", node).
Decision = tuple[str, str, str]
_ASSIGNED = re.compile(r"^Successfully assigned (\S+) to (\S+)$")
_NOMINATED = re.compile(r"^Nominated to node (\S+)")
_KLOG_PAIRS = re.compile(r'(\w+)=(?:"([^"]*)"|(\S+))')


def podsched_decisions(result: dict[str, Any]) -> list[Decision]:
    """podsched's binds and nominations from its simulate events, in the order `_in_order` gives."""
    timed: list[tuple[int, str, str, str]] = []
    for event in result.get("events", []):
        involved = event.get("involvedObject", {})
        pod = f"{involved.get('namespace', 'default')}/{involved.get('name', '')}"
        message = event.get("message", "")
        if event.get("reason") == "Scheduled" and (match := _ASSIGNED.match(message)):
            timed.append((_second(event), "bind", match.group(1), match.group(2)))
        elif event.get("reason") == "Nominated" and (match := _NOMINATED.match(message)):
            timed.append((_second(event), "nominate", pod, match.group(1)))
    return _in_order(timed)


def _second(event: dict[str, Any]) -> int:
    """The event's whole second of simulated time, as the oracle counts it (from the same epoch)."""
    when = datetime.fromisoformat(event["eventTime"].replace("Z", "+00:00")).timestamp()
    return int(when - SIMULATION_EPOCH)


def upstream_decisions(answer: dict[str, Any]) -> list[Decision]:
    """Upstream's binds and nominations, in the order `_in_order` gives."""
    timed = [
        (entry["time"], kind, f"{entry['namespace']}/{entry['name']}", entry["node"])
        for kind, key in (("nominate", "nominations"), ("bind", "binds"))
        for entry in answer.get(key) or []
    ]
    return _in_order(timed)


def _in_order(timed: list[tuple[int, str, str, str]]) -> list[Decision]:
    """By time; the oracle reports whole seconds and keeps binds and nominations apart, so within one
    second both sides are put in the same canonical order: nominations, then binds, each as reported."""
    ordered = sorted(enumerate(timed), key=lambda item: (item[1][0], item[1][1] != "nominate", item[0]))
    return [(kind, pod, node) for _, (_, kind, pod, node) in ordered]


def bound_attempt_scores(log: str) -> dict[str, list[dict[str, int]]]:
    """From the oracle's `-v 10` log: for each pod, per bind in order, the final score of every node
    in the attempt that bound it (prioritizeNodes' "Calculated node's final score for pod")."""
    current: dict[str, dict[str, int]] = {}
    bound: dict[str, list[dict[str, int]]] = {}
    for line in log.splitlines():
        if '"Attempting to schedule pod"' in line:
            fields = _klog_fields(line)
            current[fields.get("pod", "")] = {}
        elif '"Calculated node\'s final score for pod"' in line:
            fields = _klog_fields(line)
            current.setdefault(fields.get("pod", ""), {})[fields.get("node", "")] = int(fields.get("score", "0"))
        elif '"Successfully bound pod to node"' in line:
            pod = _klog_fields(line).get("pod", "")
            bound.setdefault(pod, []).append(current.get(pod, {}))
    return bound


def _klog_fields(line: str) -> dict[str, str]:
    message_end = line.find('" ', line.find('] "') + 3)
    return {
        m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _KLOG_PAIRS.finditer(line, message_end)
    }


def first_divergence_tie(ours: list[Decision], answer: dict[str, Any], log: str) -> str:
    """Why the first decision where podsched and this upstream run part is a tie, or "" if it is not
    one: it must bind the same pod to different nodes, and upstream's final scores in the attempt
    that bound it must give podsched's node the same, maximal, score as upstream's node. Decisions
    after it may differ: from there on the two clusters are in different states."""
    theirs = upstream_decisions(answer)
    for index, (mine, other) in enumerate(zip(ours, theirs, strict=False)):
        if mine == other:
            continue
        kind, pod, node = mine
        if kind != "bind" or other[0] != "bind" or other[1] != pod:
            return ""
        occurrence = sum(1 for d in theirs[:index] if d[0] == "bind" and d[1] == pod)
        attempts = bound_attempt_scores(log).get(pod, [])
        if occurrence >= len(attempts):
            return ""
        scores = attempts[occurrence]
        best = max(scores.values(), default=None)
        if best is None or scores.get(other[2]) != best or scores.get(node) != best:
            return ""
        return (
            f"decision {index + 1} binds {pod} to {node} (podsched) or {other[2]} (upstream seed 1), both "
            f"with upstream's maximal final score {best}"
        )
    return ""


def _settle_by_first_divergence(verdict: Verdict, binary: Path) -> bool:
    """Large clusters with many pods, each with many equally scored nodes: no few upstream runs hit
    podsched's whole combination. Shown pod by pod instead, at the first divergence from upstream
    seed 1, from the scores upstream itself logs at verbosity 10."""
    assert verdict.podsched is not None
    with tempfile.TemporaryDirectory(prefix="podsched-divergence-") as tmp:
        args: list[str] = [str(binary), "-seed", "1", "-v", "10"]
        gates = feature_gates(verdict.texts)
        if gates:
            args += ["-feature-gates", gates_flag(gates)]
        for index, text in enumerate(verdict.texts):
            (Path(tmp) / f"step{index}.yaml").write_text(text)
            args += ["-f", str(Path(tmp) / f"step{index}.yaml")]
        run = subprocess.run(args, capture_output=True, text=True, encoding="utf-8", timeout=600, check=False)
    if run.returncode != 0:
        return False
    why = first_divergence_tie(podsched_decisions(verdict.podsched.result), json.loads(run.stdout), run.stderr)
    if why:
        verdict.kind, verdict.tie = TIE, f"tie at the first divergence, shown by upstream's scores: {why}"
    return bool(why)


def describe(verdict: Verdict) -> str:
    """What differs, pod by pod, against each distinct upstream outcome."""
    lines = []
    if verdict.problem:
        lines.append(verdict.problem)
    if verdict.podsched is None:
        return "\n".join(lines)
    ours = verdict.podsched.outcome
    seen: list[Outcome] = []
    for answer in verdict.upstream:
        if "error" in answer:
            continue
        theirs = upstream_outcome(answer)
        if theirs in seen:
            continue
        seen.append(theirs)
        runs = [i for i, a in enumerate(verdict.upstream) if "error" not in a and upstream_outcome(a) == theirs]
        seeds = ", ".join(str(run + 1) for run in runs)
        lines.append(f"upstream with seed {seeds} ({len(runs)} of {len(verdict.upstream)} runs):")
        lines.append(f"  {'pod':<18} {'podsched (node, nominated, preempted, deleted)':<48} upstream")
        for key in sorted(set(ours) | set(theirs)):
            mine, other = ours.get(key), theirs.get(key)
            if mine != other:
                lines.append(f"  {key:<18} {_show(mine):<48} {_show(other)}")
    return "\n".join(lines)


def _show(outcome: PodOutcome | None) -> str:
    if outcome is None:
        return "(absent)"
    node, nominated, preempted, deleted = outcome
    words = [node or "pending"]
    if nominated:
        words.append(f"nominated {nominated}")
    if preempted:
        words.append("preempted")
    if deleted:
        words.append("deleted")
    return ", ".join(words)


def write_case(verdict: Verdict, out_dir: Path) -> Path:
    """Replayable files for one cluster: step<i>.yaml, podsched.json, upstream.json, diff.txt."""
    path = out_dir / verdict.cluster_id
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("step*.yaml"):
        old.unlink()
    names = []
    for index, text in enumerate(verdict.texts):
        (path / f"step{index}.yaml").write_text(text)
        names.append(f"step{index}.yaml")
    run = verdict.podsched
    podsched = {
        "outcome": {k: list(v) for k, v in sorted(run.outcome.items())} if run else None,
        "rejected": run.rejected if run else None,
        "simulate": run.result if run else None,
    }
    (path / "podsched.json").write_text(json.dumps(podsched, indent=1) + "\n")
    (path / "upstream.json").write_text(json.dumps({"runs": verdict.upstream}, indent=1) + "\n")
    files = " ".join(f"-f {name}" for name in names)
    gates = feature_gates(verdict.texts)
    config_flag = gates_flag_args = ""
    if gates:
        (path / "config.yaml").write_text(scheduler_config_text(gates))
        config_flag, gates_flag_args = " --config config.yaml", f" -feature-gates {gates_flag(gates)}"
    (path / "diff.txt").write_text(
        f"{verdict.cluster_id}: {verdict.kind}\n{describe(verdict)}\n\nreplay (in this directory):\n"
        f"  podsched simulate {files}{config_flag} -o json\n  oracle -seed 1{gates_flag_args} {files}\n"
        f"  python -m tests.oracle.differential --replay {path}\n"
    )
    verdict.path = path
    return path


def read_case(path: Path) -> list[str]:
    steps = sorted(path.glob("step*.yaml"), key=lambda p: int(p.stem[4:]))
    if not steps:
        raise SystemExit(f"error: {path} has no step0.yaml")
    return [step.read_text() for step in steps]


# --- comparing many clusters ------------------------------------------------------------------------


@dataclass
class Tally:
    compared: int = 0
    identical: int = 0
    ties: int = 0
    differences: int = 0
    ties_by_podsched: int = 0  # shown by podsched's random tie-breaks rather than by upstream's runs
    ties_by_scores: int = 0  # shown at the first divergence by upstream's own scores
    upstream_varied: int = 0
    podsched_seconds: float = 0.0
    verdicts: list[Verdict] = field(default_factory=list)  # differences only

    def add(self, verdict: Verdict) -> None:
        self.compared += 1
        if verdict.kind == IDENTICAL:
            self.identical += 1
        elif verdict.kind == TIE:
            self.ties += 1
            self.ties_by_podsched += verdict.tie.startswith("podsched")
            self.ties_by_scores += verdict.tie.startswith("tie at the first divergence")
        else:
            self.differences += 1
            self.verdicts.append(verdict)
        self.upstream_varied += verdict.upstream_varied
        if verdict.podsched is not None:
            self.podsched_seconds += verdict.podsched.seconds

    def line(self) -> str:
        return f"compared {self.compared}, identical {self.identical}, ties {self.ties}, differences {self.differences}"


def compare_clusters(
    clusters: Iterable[tuple[str, list[str]]],
    oracle: Oracle,
    *,
    reruns: int = DEFAULT_RERUNS,
    first_runs: int = 1,
    tie_attempts: int = DEFAULT_RERUNS,
    total: int | None = None,
    out_dir: Path | None = None,
    progress: Callable[[Tally, int], None] | None = None,
) -> Tally:
    """Compare every cluster; `clusters` may be a generator (its items are sent to the oracle as
    they come, and simulated once all are sent, so both sides work at once). `first_runs` upstream
    runs of every cluster (2 or more shows how often upstream disagrees with itself); up to
    `reruns` in all for a cluster podsched does not match, then up to `tie_attempts` podsched runs
    with random tie-breaks."""
    tally = Tally()
    total = total or 0
    waiting: deque[Verdict] = deque()  # sent to the oracle, not yet simulated
    unsettled: list[Verdict] = []

    def compare(verdict: Verdict) -> None:
        try:
            verdict.podsched = run_podsched(verdict.texts)
        except Exception:
            verdict.problem = "podsched simulate raised:\n" + traceback.format_exc()
        verdict.upstream = [oracle.answer(f"{verdict.cluster_id}#{run}") for run in range(first_runs)]
        if verdict.podsched is None:
            verdict.kind = DIFFERENCE
        elif verdict.podsched.rejected:
            verdict.kind = DIFFERENCE
            rejected = json.dumps(verdict.podsched.rejected)
            verdict.problem = f"podsched rejected objects of a generated cluster: {rejected}"
        elif not _settle(verdict) and reruns > first_runs:
            for run in range(first_runs, reruns):
                oracle.submit(f"{verdict.cluster_id}#{run}", verdict.texts, seed=run + 1)
            unsettled.append(verdict)
            return
        _record(tally, verdict, out_dir, progress, total)

    # The oracle is kept LAG clusters ahead, so it works on later clusters while this process
    # simulates earlier ones.
    for cluster_id, texts in clusters:
        for run in range(first_runs):
            oracle.submit(f"{cluster_id}#{run}", texts, seed=run + 1)
        waiting.append(Verdict(cluster_id, texts))
        if len(waiting) > LAG:
            compare(waiting.popleft())
    while waiting:
        compare(waiting.popleft())
    for verdict in unsettled:
        for run in range(first_runs, reruns):
            verdict.upstream.append(oracle.answer(f"{verdict.cluster_id}#{run}"))
        if not _settle(verdict) and not _settle_by_podsched_ties(verdict, tie_attempts):
            _settle_by_first_divergence(verdict, oracle.binary)
        _record(tally, verdict, out_dir, progress, total)
    return tally


def _record(
    tally: Tally, verdict: Verdict, out_dir: Path | None, progress: Callable[[Tally, int], None] | None, total: int
) -> None:
    if verdict.kind == DIFFERENCE and out_dir is not None:
        write_case(verdict, out_dir)
    tally.add(verdict)
    if verdict.kind != DIFFERENCE:
        verdict.podsched = None  # keep memory flat over thousands of clusters
        verdict.upstream = verdict.upstream[:0] if not verdict.upstream_varied else verdict.upstream
    if progress is not None:
        progress(tally, total)


def generate(count: int, seed: int, workloads: bool = True) -> Iterator[list[str]]:
    """`count` clusters from the hypothesis strategy, reproducible from `seed`, yielded as they are
    drawn (hypothesis runs in a thread, so the oracle can start on the first ones at once).
    `workloads`: some clusters have PodGroups (GenericWorkload on); without, a seed gives the
    clusters it gave before workloads were generated."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    from tests.oracle.clusters import GeneratedCluster, clusters

    drawn: queue.Queue[list[str] | BaseException | None] = queue.Queue(maxsize=256)

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(clusters(workloads))
    def collect(cluster: GeneratedCluster) -> None:
        drawn.put(cluster.texts())

    def run() -> None:
        try:
            collect()
            drawn.put(None)
        except BaseException as error:  # handed to the consumer
            drawn.put(error)

    threading.Thread(target=run, name="generate", daemon=True).start()
    while (item := drawn.get()) is not None:
        if isinstance(item, BaseException):
            raise item
        yield item


# --- command line ----------------------------------------------------------------------------------


def _progress_printer(started: float, oracle: Oracle) -> Callable[[Tally, int], None]:
    last = [0.0]

    def show(tally: Tally, total: int) -> None:
        now = time.monotonic()
        if now - last[0] < 10 and tally.compared != total:
            return
        last[0] = now
        per = 1000 * tally.podsched_seconds / max(1, tally.compared)
        print(
            f"[{tally.compared}/{total}] identical {tally.identical}, ties {tally.ties}, "
            f"differences {tally.differences}; podsched {per:.0f} ms/cluster, oracle CPU "
            f"{1000 * oracle.cpu_seconds() / max(1, oracle.runs):.0f} ms/run; {now - started:.0f} s",
            flush=True,
        )

    return show


def _report(tally: Tally, oracle: Oracle, started: float, first_runs: int, reruns: int) -> None:
    for verdict in tally.verdicts:
        where = verdict.path if verdict.path is not None else verdict.cluster_id
        first = describe(verdict).splitlines()
        print(f"difference: {where}" + (f" ({first[0]})" if verdict.problem and first else ""))
    elapsed = time.monotonic() - started
    print(
        f"ties: {tally.ties - tally.ties_by_podsched - tally.ties_by_scores} shown by an upstream run giving "
        f"podsched's outcome, {tally.ties_by_podsched} by podsched with random tie-breaks giving an upstream "
        f"outcome, {tally.ties_by_scores} at the first divergence by upstream's own scores"
    )
    print(
        f"upstream answered differently across its own runs on {tally.upstream_varied} clusters "
        f"({first_runs} run(s) each, up to {reruns} where podsched differed)"
    )
    print(
        f"time {elapsed:.1f} s; podsched {1000 * tally.podsched_seconds / max(1, tally.compared):.1f} ms/cluster "
        f"(wall, in this process); oracle {1000 * oracle.cpu_seconds() / max(1, oracle.runs):.1f} ms/run "
        f"(CPU, {oracle.runs} runs); upstream kube-scheduler {oracle.version or 'unknown'}"
    )
    print(tally.line(), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.oracle.differential", description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--count", type=int, help="random clusters to compare")
    mode.add_argument("--replay", nargs="+", type=Path, metavar="DIR", help="compare saved clusters (step*.yaml)")
    mode.add_argument("--shrink", type=Path, metavar="DIR", help="reduce one saved difference; writes DIR/min")
    parser.add_argument("--seed", type=int, help="hypothesis seed (default: random, printed)")
    parser.add_argument(
        "--no-workloads",
        dest="workloads",
        action="store_false",
        help="no PodGroups in the random clusters (by default about a third have them, GenericWorkload on)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where differences go (default {DEFAULT_OUT})")
    parser.add_argument(
        "--reruns", type=int, help=f"upstream runs at most per cluster (default {DEFAULT_RERUNS}; 4 when shrinking)"
    )
    parser.add_argument("--first-runs", type=int, default=2, help="upstream runs of every cluster")
    parser.add_argument("--oracle", type=Path, help="oracle binary (default: built from tests/oracle/upstream)")
    args = parser.parse_args(argv)
    if args.reruns is None:  # a reduction tries hundreds of candidates: fewer runs each
        args.reruns = 4 if args.shrink is not None else DEFAULT_RERUNS
    started = time.monotonic()
    try:
        oracle = Oracle(args.oracle, stall_seconds=60 if args.shrink else 180, hung_dir=args.out / "oracle-failures")
    except OracleError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.shrink is not None:
        from tests.oracle.shrink import shrink_case

        with oracle:
            return shrink_case(args.shrink, oracle, reruns=args.reruns)
    with oracle:
        if args.replay:
            cases: Iterable[tuple[str, list[str]]] = [(path.name, read_case(path)) for path in args.replay]
            total = len(args.replay)
            print(f"replaying {len(cases)} saved cluster(s)", flush=True)
        else:
            count = args.count if args.count is not None else 100
            seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
            print(f"generating and comparing {count} clusters (seed {seed})", flush=True)
            total = count
            cases = ((f"s{seed}-{i:05d}", texts) for i, texts in enumerate(generate(count, seed, args.workloads)))
        try:
            tally = compare_clusters(
                cases,
                oracle,
                reruns=args.reruns,
                first_runs=min(args.first_runs, args.reruns),
                out_dir=args.out,
                progress=_progress_printer(started, oracle),
                total=total,
            )
        except OracleError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        _report(tally, oracle, started, min(args.first_runs, args.reruns), args.reruns)
    return 0 if tally.differences == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
