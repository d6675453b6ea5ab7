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
EXPECTATIONS = {
    "preempted",
    "nodes",
    "nominated",
    "events",
    "rejected",
    "scheduledOrder",
    "waited",
    "owned",
    "jobs",
    "podGroups",
}
# A PodGroup's PodGroupInitiallyScheduled condition: status ("True", "False", "" for none), reason, message.
POD_GROUP_KEYS = {"status", "reason", "message"}
EVENT_KEYS = {"reason", "pod", "object", "message", "messageStartsWith", "messageContains", "related", "last"}
JOB_KEYS = {"condition", "reason", "succeeded", "failed", "active"}
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
    if document.get("kind") in ("ReplicaSet", "Deployment", "Job"):
        template = (document.get("spec") or {}).get("template") or {}
        document = {"kind": "Pod", "metadata": document.get("metadata"), "spec": template.get("spec")}
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
        if (
            not isinstance(event, dict)
            or "reason" not in event
            or len({"pod", "object"} & set(event)) != 1
            or set(event) - EVENT_KEYS
        ):
            raise _fail(
                path, f"expect.events[{index}]", f"needs reason and pod or object; known fields: {sorted(EVENT_KEYS)}"
            )
        if "object" in event and not re.fullmatch(r"[A-Za-z]+/[a-z0-9.-]+", str(event["object"])):
            raise _fail(path, f"expect.events[{index}].object", "must be Kind/name, e.g. Job/train")
    owned = expect.get("owned", {})
    if not isinstance(owned, dict) or not all(isinstance(v, dict) for v in owned.values()):
        raise _fail(path, "expect.owned", "must map a workload name to {node name: pod count} ('' for pending)")
    jobs = expect.get("jobs", {})
    if not isinstance(jobs, dict) or not all(isinstance(v, dict) and not set(v) - JOB_KEYS for v in jobs.values()):
        raise _fail(path, "expect.jobs", f"must map a Job name to expectations among {sorted(JOB_KEYS)}")
    groups = expect.get("podGroups", {})
    if not isinstance(groups, dict) or not all(
        isinstance(v, dict) and not set(v) - POD_GROUP_KEYS for v in groups.values()
    ):
        raise _fail(
            path, "expect.podGroups", f"must map a PodGroup name to expectations among {sorted(POD_GROUP_KEYS)}"
        )
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
    pod: str  # the involved object's name (a pod's, unless `kind` says otherwise)
    message: str
    related: str
    time: float
    kind: str = "Pod"


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
    # Jobs at the end, by name (their Kubernetes JSON).
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # PodGroups at the end, by name (their Kubernetes JSON).
    pod_groups: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def preempted(self) -> list[str]:
        return sorted({e.pod for e in self.events if e.reason == "Preempted" and e.kind == "Pod"} | self.disrupted)


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
            e["involvedObject"]["kind"],
        )
        for e in output["events"]
    ]
    rejected = [{k: r[k] for k in ("kind", "namespace", "name", "message")} for r in output["rejected"]]
    disrupted = {p["metadata"]["name"] for p in history if disrupted_by_scheduler(p)}
    jobs = {w["metadata"]["name"]: w for w in output.get("workloads", []) if w["kind"] == "Job"}
    groups = {g["metadata"]["name"]: g for g in output.get("podGroups", [])}
    return Observed(pods, events, rejected, disrupted, jobs, groups)


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


def _preempted_match(want: list[str], got: list[str]) -> bool:
    """Names match exactly; `web-*` stands for one pod of a generated name starting with `web-`."""
    left = list(got)
    for name in sorted(want, key=lambda n: n.endswith("*")):
        prefix = name[:-1] if name.endswith("*") else None
        found = next((g for g in left if (g.startswith(prefix) if prefix is not None else g == name)), None)
        if found is None:
            return False
        left.remove(found)
    return not left


def _controller_name(pod: dict[str, Any]) -> str:
    for ref in pod.get("metadata", {}).get("ownerReferences", []):
        if ref.get("controller"):
            return str(ref.get("name", ""))
    return ""


def owned_pods(observed: Observed, workload: str) -> list[dict[str, Any]]:
    """The pods at the end (not terminating, not finished) that `workload` controls: directly, or, for
    a Deployment, through its ReplicaSets (named `<deployment>-<template hash>`)."""
    return [
        pod
        for pod in observed.pods.values()
        if (owner := _controller_name(pod))
        and (owner == workload or owner.rsplit("-", 1)[0] == workload)
        and not pod["metadata"].get("deletionTimestamp")
        and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]


def _job_facts(job: dict[str, Any]) -> dict[str, Any]:
    status = job.get("status", {})
    final = [
        c for c in status.get("conditions", []) if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
    ]
    return {
        "condition": final[-1]["type"] if final else "",
        "reason": final[-1].get("reason", "") if final else "",
        "succeeded": status.get("succeeded", 0),
        "failed": status.get("failed", 0),
        "active": status.get("active", 0),
    }


def pod_group_facts(group: dict[str, Any]) -> dict[str, str]:
    """The PodGroupInitiallyScheduled condition's status, reason and message ("" without one)."""
    conditions = (group.get("status") or {}).get("conditions") or []
    found = next((c for c in conditions if c.get("type") == "PodGroupInitiallyScheduled"), {})
    return {key: str(found.get(key, "")) for key in ("status", "reason", "message")}


def check(expect: dict[str, Any], observed: Observed) -> list[str]:
    """Every way `observed` differs from `expect`, one line each (empty: as expected)."""
    problems: list[str] = []
    want_preempted = sorted(expect.get("preempted", []))
    if not _preempted_match(want_preempted, observed.preempted):
        problems.append(f"preempted: expected {want_preempted}, got {observed.preempted}")
    for workload, want_nodes in expect.get("owned", {}).items():
        got_nodes: dict[str, int] = {}
        for pod in owned_pods(observed, workload):
            got_nodes[_node(pod)] = got_nodes.get(_node(pod), 0) + 1
        if got_nodes != {str(k or ""): v for k, v in want_nodes.items()}:
            problems.append(f"owned: {workload}'s pods by node expected {want_nodes}, got {got_nodes}")
    for name, want_job in expect.get("jobs", {}).items():
        job = observed.jobs.get(name)
        if job is None:
            problems.append(f"jobs: {name} does not exist")
            continue
        facts = _job_facts(job)
        differing = {k: facts[k] for k, v in want_job.items() if facts[k] != v}
        if differing:
            problems.append(f"jobs: {name} expected {want_job}, has {facts}")
    for name, want_group in expect.get("podGroups", {}).items():
        group = observed.pod_groups.get(name)
        if group is None:
            problems.append(f"podGroups: {name} does not exist")
            continue
        facts = pod_group_facts(group)
        if {k: facts[k] for k in want_group} != want_group:
            problems.append(f"podGroups: {name} expected {want_group}, has {facts}")
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
        kind, name = want["object"].split("/", 1) if "object" in want else ("Pod", want["pod"])
        indexed = [
            (i, e)
            for i, e in enumerate(observed.events)
            if e.reason == want["reason"] and e.pod == name and e.kind == kind
        ]
        if want.get("last"):
            indexed = indexed[-1:]
        start = after.get(f"{kind}/{name}", -1)
        found = next((i for i, e in indexed if i > start and _event_matches(want, e)), None)
        if found is None:
            shown = {k: v for k, v in want.items() if k not in ("reason", "pod", "object")}
            problems.append(
                f"events: no {want['reason']} event of {kind}/{name} matching {shown} "
                f"(after the ones matched before); its {want['reason']} events: {_describe([e for _, e in indexed])}"
            )
        else:
            after[f"{kind}/{name}"] = found
    want_rejected = sorted((r["kind"], r["name"], r["message"]) for r in expect.get("rejected", []))
    got_rejected = sorted((r["kind"], r["name"], r["message"]) for r in observed.rejected)
    if want_rejected != got_rejected:
        problems.append(f"rejected: expected {want_rejected}, got {got_rejected}")
    if "scheduledOrder" in expect:
        names = set(expect["scheduledOrder"])
        order: list[str] = []
        for e in observed.events:
            if e.reason == "Scheduled" and e.kind == "Pod" and e.pod in names and e.pod not in order:
                order.append(e.pod)
        if order != expect["scheduledOrder"]:
            problems.append(f"scheduledOrder: expected {expect['scheduledOrder']}, got {order}")
    for want in expect.get("waited", []):
        pod_events = [e for e in observed.events if e.pod == want["pod"] and e.kind == "Pod"]
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
            + "\n  ".join(f"{e.reason} {e.kind}/{e.pod}: {e.message}" for e in observed.events)
        )


def known_differences_text() -> str:
    return KNOWN_DIFFERENCES.read_text() if KNOWN_DIFFERENCES.exists() else ""


_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def check_file_name(scenario: Scenario) -> None:
    if not _NAME.match(scenario.name):
        raise _fail(scenario.path, "file name", "use lower-case words joined by '-', saying what the scenario shows")
