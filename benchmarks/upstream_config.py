"""podsched workloads read from upstream's own scheduler_perf ``performance-config.yaml`` files.

``make bench-upstream`` compares podsched with upstream on the same workloads; reading the parameters from
the files upstream's benchmark itself runs (in the Go module cache, at the version the wrapper module in
``benchmarks/upstream_perf`` requires) keeps the two identical when upstream changes them.

A test case's ``workloadTemplate`` is mapped onto :class:`benchmarks.scheduler_perf.Workload`:
``createNodes`` -> nodes; the first ``createPods`` -> init pods; ``churn`` (mode create) -> the churn
template and interval; the ``createPods`` with ``collectMetrics`` -> the measured pods. Templates are
upstream's ``templates/pod-*.yaml``, named by their file (``pod-low-priority.yaml`` -> ``low-priority``).
Anything else in the template raises naming the test case and the op.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from benchmarks.scheduler_perf import Workload

UPSTREAM_MODULE = "k8s.io/kubernetes@v1.37.2"
#: The workloads compared, as upstream names them: (test package, test case/workload). Their feature-gate
#: variants (same params, name + ``_...Enabled``) are found in the config by :func:`variants`.
COMPARED = [
    ("misc", "SchedulingBasic/5000Nodes_10000Pods"),
    ("default_preemption", "PreemptionBasic/1000Nodes"),
    ("default_preemption", "PreemptionAsync/5000Nodes"),
    ("default_preemption", "Unschedulable/5kNodes/100Init/10kPods"),
]


class ConfigError(ValueError):
    """A performance-config.yaml that cannot be mapped: the message names the test case and field."""


def module_dir(module: str = UPSTREAM_MODULE) -> Path:
    """Download ``module`` from the Go module proxy (a no-op once cached) and return its directory."""
    proc = subprocess.run(
        ["go", "mod", "download", "-json", module], capture_output=True, text=True, check=False, env=_go_env()
    )
    if proc.returncode != 0:
        raise RuntimeError(f"`go mod download {module}` failed: {proc.stdout}{proc.stderr}".strip())
    return Path(json.loads(proc.stdout)["Dir"])


def _go_env() -> dict[str, str]:
    from podsched_devstack.gobuild import go_env

    return go_env()


def perf_dir(topic: str, root: Path | None = None) -> Path:
    """``test/integration/scheduler_perf/<topic>`` in the module: where the test binary must run."""
    return (root or module_dir()) / "test" / "integration" / "scheduler_perf" / topic


def _template_kind(path: str, where: str) -> str:
    name = Path(path).name
    if not (name.startswith("pod-") and name.endswith(".yaml")):
        raise ConfigError(f"{where}: template {path!r} is not one of upstream's templates/pod-*.yaml")
    return name[len("pod-") : -len(".yaml")]


def _count(op: dict[str, Any], params: dict[str, Any], where: str) -> int:
    if "count" in op:
        return int(op["count"])
    ref = str(op.get("countParam", ""))
    if not ref.startswith("$") or ref[1:] not in params:
        raise ConfigError(f"{where}: countParam {ref!r} is not among the workload's params {sorted(params)}")
    return int(params[ref[1:]])


def workload_from_config(config: list[dict[str, Any]], name: str) -> Workload:
    """The podsched Workload for upstream's ``<test case>/<workload>`` name in a parsed config."""
    case_name, _, workload_name = name.partition("/")
    case = next((c for c in config if c.get("name") == case_name), None)
    if case is None:
        raise ConfigError(f"test case {case_name!r} not found; the file has {[c.get('name') for c in config]}")
    entry = next((w for w in case.get("workloads", []) if w.get("name") == workload_name), None)
    if entry is None:
        raise ConfigError(f"{case_name}: workload {workload_name!r} not found")
    params = entry.get("params", {})
    default_template = case.get("defaultPodTemplatePath", "../templates/pod-default.yaml")
    nodes = 0
    pods: list[tuple[int, str, bool]] = []
    churn_template, churn_interval = "", 0.2
    for index, op in enumerate(case.get("workloadTemplate", [])):
        where = f"{name}: workloadTemplate[{index}] (opcode {op.get('opcode')!r})"
        opcode = op.get("opcode")
        if opcode == "createNodes":
            if op.get("nodeTemplatePath"):
                raise ConfigError(f"{where}: nodeTemplatePath is not supported (only the default node)")
            nodes += _count(op, params, where)
        elif opcode == "createPods":
            kind = _template_kind(op.get("podTemplatePath", default_template), where)
            pods.append((_count(op, params, where), kind, bool(op.get("collectMetrics"))))
        elif opcode == "churn":
            if op.get("mode") != "create" or len(op.get("templatePaths", [])) != 1:
                raise ConfigError(f"{where}: only churn with mode create and one template is supported")
            churn_template = _template_kind(op["templatePaths"][0], where)
            churn_interval = int(op.get("intervalMilliseconds", 500)) / 1000
        else:
            raise ConfigError(f"{where}: opcode not supported")
    measured = [p for p in pods if p[2]]
    init = [p for p in pods if not p[2]]
    if len(measured) != 1 or len(init) > 1:
        raise ConfigError(f"{name}: expected one init createPods and one with collectMetrics, got {pods}")
    init_count, init_kind, _ = init[0] if init else (0, "default", False)
    return Workload(name, nodes, init_count, init_kind, measured[0][0], measured[0][1], churn_template, churn_interval)


def load_workload(topic: str, name: str, root: Path | None = None) -> Workload:
    """Read ``<topic>/performance-config.yaml`` of the upstream module and map workload ``name``."""
    path = perf_dir(topic, root) / "performance-config.yaml"
    try:
        return workload_from_config(yaml.safe_load(path.read_text()), name)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def variants(config: list[dict[str, Any]], name: str) -> list[str]:
    """``name`` and upstream's feature-gate variants of it: workloads of the same test case named
    ``<workload>_<something>Enabled`` with the same params (e.g. ``_AsyncAPICallsEnabled``)."""
    case_name, _, workload_name = name.partition("/")
    case = next(c for c in config if c.get("name") == case_name)
    entries = {w.get("name"): w for w in case.get("workloads", [])}
    params = entries[workload_name].get("params")
    found = [
        f"{case_name}/{other}"
        for other, entry in entries.items()
        if other.startswith(workload_name + "_") and other.endswith("Enabled") and entry.get("params") == params
    ]
    return [name, *found]


def load_config(topic: str, root: Path | None = None) -> list[dict[str, Any]]:
    return yaml.safe_load((perf_dir(topic, root) / "performance-config.yaml").read_text())
