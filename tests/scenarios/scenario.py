"""Scenario files (tests/scenarios/*.yaml, format in README.md): loading them, and the one check both
runners use, `check(expect, observed)`, on observations built from `podsched simulate`'s JSON output
(`observe_simulation`) or from the live API (tests/services/test_live_parity.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from podsched.api.manifests import parse_timestamp

FOLDER = Path(__file__).resolve().parent
COMMON = FOLDER / "common.yaml"
KNOWN_DIFFERENCES = FOLDER / "KNOWN_DIFFERENCES.md"
NOT_SCENARIOS = {"common.yaml"}
MAX_GRACE_SECONDS = 3  # live, grace periods pass in real time: keep runs quick
TOP_LEVEL = {"description", "config", "liveOnly", "steps", "expect"}
EXPECTATIONS = {"preempted", "nodes", "nominated", "events", "rejected", "scheduledOrder", "waited"}
EVENT_KEYS = {"reason", "pod", "message", "messageStartsWith", "messageContains", "related", "last"}
WAITED_KEYS = {"pod", "from", "to", "atLeastSeconds"}


class ScenarioError(ValueError):
    """A scenario file that does not follow the format, naming the file and the field."""


@dataclass(frozen=True)
class Delete:
    """A step that deletes one object (live only: simulate has no way to delete)."""

    kind: str
    name: str
    namespace: str = "default"


Step = list[dict[str, Any]] | Delete


@dataclass
class Scenario:
    name: str
    path: Path
    description: str
    steps: list[Step]
    expect: dict[str, Any]
    config: str = ""
    live_only: str = ""

    @property
    def has_deletes(self) -> bool:
        return any(isinstance(step, Delete) for step in self.steps)


def _fail(path: Path, where: str, problem: str) -> ScenarioError:
    return ScenarioError(f"{path.name}: {where}: {problem}")


def load(path: Path) -> Scenario:
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise _fail(path, "top level", "must be a mapping with description, steps and expect")
    unknown = set(data) - TOP_LEVEL
    if unknown:
        raise _fail(path, "top level", f"unknown field(s) {sorted(unknown)}; known: {sorted(TOP_LEVEL)}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _fail(path, "description", "required: what the scenario shows and where it comes from")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise _fail(path, "steps", "required: a non-empty list of steps")
    steps: list[Step] = []
    for index, raw in enumerate(raw_steps):
        where = f"steps[{index}]"
        if isinstance(raw, dict) and set(raw) == {"delete"}:
            target = raw["delete"]
            if not isinstance(target, dict) or not {"kind", "name"} <= set(target):
                raise _fail(path, f"{where}.delete", "needs kind and name (and optionally namespace)")
            steps.append(Delete(str(target["kind"]), str(target["name"]), str(target.get("namespace", "default"))))
            continue
        if not isinstance(raw, list) or not raw or not all(isinstance(doc, dict) for doc in raw):
            raise _fail(path, where, "must be a non-empty list of manifests, or {delete: {kind, name}}")
        for position, document in enumerate(raw):
            _check_grace(path, f"{where}[{position}]", document)
        steps.append(raw)
    live_only = str(data.get("liveOnly") or "")
    if any(isinstance(step, Delete) for step in steps) and not live_only:
        raise _fail(path, "liveOnly", "a scenario with a delete step must say why it is live only")
    expect = data.get("expect")
    if not isinstance(expect, dict):
        raise _fail(path, "expect", "required: a mapping of expectations")
    _check_expect(path, expect)
    config = data.get("config") or ""
    if not isinstance(config, str):
        raise _fail(path, "config", "must be KubeSchedulerConfiguration text (use `config: |`)")
    return Scenario(path.stem, path, description.strip(), steps, expect, config, live_only)


def _check_grace(path: Path, where: str, document: dict[str, Any]) -> None:
    if document.get("kind") != "Pod":
        return
    grace = (document.get("spec") or {}).get("terminationGracePeriodSeconds")
    if not isinstance(grace, int) or not 0 <= grace <= MAX_GRACE_SECONDS:
        name = (document.get("metadata") or {}).get("name", "?")
        raise _fail(
            path,
            f"{where} (pod {name}) spec.terminationGracePeriodSeconds",
            f"set it between 0 and {MAX_GRACE_SECONDS}: live, grace periods pass in real time",
        )


def _check_expect(path: Path, expect: dict[str, Any]) -> None:
    unknown = set(expect) - EXPECTATIONS
    if unknown:
        raise _fail(path, "expect", f"unknown field(s) {sorted(unknown)}; known: {sorted(EXPECTATIONS)}")
    for key in ("preempted", "scheduledOrder"):
        if key in expect and not isinstance(expect[key], list):
            raise _fail(path, f"expect.{key}", "must be a list of pod names")
    for key in ("nodes", "nominated"):
        if key in expect and not isinstance(expect[key], dict):
            raise _fail(path, f"expect.{key}", "must be a mapping of pod name to node name")
    for index, event in enumerate(expect.get("events", [])):
        if not isinstance(event, dict) or not {"reason", "pod"} <= set(event) or set(event) - EVENT_KEYS:
            raise _fail(path, f"expect.events[{index}]", f"needs reason and pod; known fields: {sorted(EVENT_KEYS)}")
    for index, waited in enumerate(expect.get("waited", [])):
        if not isinstance(waited, dict) or set(waited) != WAITED_KEYS:
            raise _fail(path, f"expect.waited[{index}]", f"needs exactly {sorted(WAITED_KEYS)}")
    for index, rejected in enumerate(expect.get("rejected", [])):
        if not isinstance(rejected, dict) or not {"kind", "name", "message"} <= set(rejected):
            raise _fail(path, f"expect.rejected[{index}]", "needs kind, name and message")


def all_scenarios() -> list[Scenario]:
    return [load(path) for path in sorted(FOLDER.glob("*.yaml")) if path.name not in NOT_SCENARIOS]


def manifests_text(documents: list[dict[str, Any]]) -> str:
    return str(yaml.safe_dump_all(documents, sort_keys=False))


# --- observations -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeenEvent:
    reason: str
    pod: str
    message: str
    related: str
    time: float


@dataclass
class Observed:
    """What a run left behind, the same shape whichever mode produced it."""

    # Pods that exist at the end, by name (a victim whose grace period ended is gone).
    pods: dict[str, dict[str, Any]]
    # Every event about a pod, in the order they happened.
    events: list[SeenEvent]
    # Objects refused at admission: kind, namespace, name, message (kubectl's line).
    rejected: list[dict[str, str]]
    # Pods that carried the DisruptionTarget/PreemptionByScheduler condition at some point seen.
    disrupted: set[str] = field(default_factory=set)

    @property
    def preempted(self) -> list[str]:
        return sorted({e.pod for e in self.events if e.reason == "Preempted"} | self.disrupted)


def disrupted_by_scheduler(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
        for c in pod.get("status", {}).get("conditions", [])
    )


def observe_simulation(output: dict[str, Any]) -> Observed:
    """From `podsched simulate -o json`: its pods are every pod ever created; those with a
    deletionTimestamp have finished terminating by the time simulate stops."""
    history = output["pods"]
    pods = {p["metadata"]["name"]: p for p in history if not p["metadata"].get("deletionTimestamp")}
    events = [
        SeenEvent(
            e["reason"],
            e["involvedObject"]["name"],
            e["message"],
            (e.get("related") or {}).get("name", ""),
            parse_timestamp(e["eventTime"]),
        )
        for e in output["events"]
        if e["involvedObject"]["kind"] == "Pod"
    ]
    rejected = [{k: r[k] for k in ("kind", "namespace", "name", "message")} for r in output["rejected"]]
    return Observed(pods, events, rejected, {p["metadata"]["name"] for p in history if disrupted_by_scheduler(p)})


def run_simulate(scenario: Scenario, tmp_path: Path, capsys: Any) -> dict[str, Any]:
    """`podsched simulate -f common.yaml -f step1.yaml ... [--config] -o json`, in-process (`capsys`:
    pytest's capture of its output); its parsed output."""
    from podsched_cli.main import main

    args = ["simulate", "-f", str(COMMON)]
    for index, step in enumerate(scenario.steps):
        assert isinstance(step, list), f"{scenario.path.name}: simulate cannot run a delete step"
        path = tmp_path / f"step{index + 1}.yaml"
        path.write_text(manifests_text(step))
        args += ["-f", str(path)]
    if scenario.config:
        config = tmp_path / "config.yaml"
        config.write_text(scenario.config)
        args += ["--config", str(config)]
    capsys.readouterr()
    assert main([*args, "-o", "json"]) == 0, capsys.readouterr().err
    output: dict[str, Any] = json.loads(capsys.readouterr().out)
    return output


# --- the check ----------------------------------------------------------------------------------------


def _node(pod: dict[str, Any]) -> str:
    return str(pod.get("spec", {}).get("nodeName", "") or "")


def _nominated(pod: dict[str, Any]) -> str:
    return str(pod.get("status", {}).get("nominatedNodeName", "") or "")


def _event_matches(want: dict[str, Any], seen: SeenEvent) -> bool:
    if "message" in want and seen.message != want["message"]:
        return False
    if "messageStartsWith" in want and not seen.message.startswith(want["messageStartsWith"]):
        return False
    if "messageContains" in want and want["messageContains"] not in seen.message:
        return False
    return "related" not in want or seen.related == want["related"]


def _describe(events: list[SeenEvent]) -> str:
    return "; ".join(f"{e.reason}: {e.message!r}" + (f" (related {e.related})" if e.related else "") for e in events)


def check(expect: dict[str, Any], observed: Observed) -> list[str]:
    """Every way `observed` differs from `expect`, one line each (empty: as expected)."""
    problems: list[str] = []
    want_preempted = sorted(expect.get("preempted", []))
    if observed.preempted != want_preempted:
        problems.append(f"preempted: expected {want_preempted}, got {observed.preempted}")
    for name, want in expect.get("nodes", {}).items():
        pod = observed.pods.get(name)
        if want is None:
            if pod is not None:
                problems.append(f"nodes: {name} should be gone, but it exists (node {_node(pod)!r})")
        elif pod is None:
            problems.append(f"nodes: {name} should be on {want!r}, but it does not exist")
        elif _node(pod) != want:
            problems.append(f"nodes: {name} expected on {want!r}, is on {_node(pod)!r}")
    for name, want in expect.get("nominated", {}).items():
        pod = observed.pods.get(name)
        if pod is None:
            problems.append(f"nominated: {name} does not exist")
        elif _nominated(pod) != (want or ""):
            problems.append(f"nominated: {name} expected {want!r}, has {_nominated(pod)!r}")
    after: dict[str, int] = {}  # per pod, the index of the last event matched: order within a pod counts
    for want in expect.get("events", []):
        indexed = [(i, e) for i, e in enumerate(observed.events) if e.reason == want["reason"] and e.pod == want["pod"]]
        if want.get("last"):
            indexed = indexed[-1:]
        start = after.get(want["pod"], -1)
        found = next((i for i, e in indexed if i > start and _event_matches(want, e)), None)
        if found is None:
            shown = {k: v for k, v in want.items() if k not in ("reason", "pod")}
            problems.append(
                f"events: no {want['reason']} event of {want['pod']} matching {shown} "
                f"(after the ones matched before); its {want['reason']} events: {_describe([e for _, e in indexed])}"
            )
        else:
            after[want["pod"]] = found
    want_rejected = sorted((r["kind"], r["name"], r["message"]) for r in expect.get("rejected", []))
    got_rejected = sorted((r["kind"], r["name"], r["message"]) for r in observed.rejected)
    if want_rejected != got_rejected:
        problems.append(f"rejected: expected {want_rejected}, got {got_rejected}")
    if "scheduledOrder" in expect:
        names = set(expect["scheduledOrder"])
        order: list[str] = []
        for e in observed.events:
            if e.reason == "Scheduled" and e.pod in names and e.pod not in order:
                order.append(e.pod)
        if order != expect["scheduledOrder"]:
            problems.append(f"scheduledOrder: expected {expect['scheduledOrder']}, got {order}")
    for want in expect.get("waited", []):
        pod_events = [e for e in observed.events if e.pod == want["pod"]]
        begin = next((e for e in pod_events if e.reason == want["from"]), None)
        end = next((e for e in pod_events if e.reason == want["to"] and begin and e.time >= begin.time), None)
        if begin is None or end is None:
            problems.append(f"waited: {want['pod']} has no {want['from']} event followed by a {want['to']} event")
        elif end.time - begin.time < float(want["atLeastSeconds"]) - 1e-3:
            problems.append(
                f"waited: {want['pod']} went from {want['from']} to {want['to']} in {end.time - begin.time:.3f}s, "
                f"expected at least {want['atLeastSeconds']}s"
            )
    return problems


def assert_as_expected(scenario: Scenario, observed: Observed, mode: str) -> None:
    problems = check(scenario.expect, observed)
    if problems:
        raise AssertionError(
            f"{scenario.path.name} ({mode}) differs from its expectations:\n  "
            + "\n  ".join(problems)
            + "\nevents seen:\n  "
            + "\n  ".join(f"{e.reason} {e.pod}: {e.message}" for e in observed.events)
        )


def known_differences_text() -> str:
    return KNOWN_DIFFERENCES.read_text() if KNOWN_DIFFERENCES.exists() else ""


_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def check_file_name(scenario: Scenario) -> None:
    if not _NAME.match(scenario.name):
        raise _fail(scenario.path, "file name", "use lower-case words joined by '-', saying what the scenario shows")
