"""podsched workloads read from upstream's own scheduler_perf ``performance-config.yaml`` files.

``make bench-upstream`` compares podsched with upstream on the same workloads; reading the parameters from
the files upstream's benchmark itself runs (in the Go module cache, at the version the wrapper module in
``benchmarks/upstream_perf`` requires) keeps the two identical when upstream changes them.

A test case's ``workloadTemplate`` is mapped onto :class:`benchmarks.scheduler_perf.Workload`:
``createNodes`` -> nodes; the first ``createPods`` -> init pods; ``churn`` (mode create) -> the churn
template and interval; the ``createPods`` with ``collectMetrics`` -> the measured pods. Templates are
upstream's ``templates/pod-*.yaml``, named by their file (``pod-low-priority.yaml`` -> ``low-priority``).

Gang workloads (``podgroup/gangscheduling``): ``createNamespaces`` is a no-op (podsched's namespaces
need no object); ``createPodGroups`` -> PodGroups rendered from its ``templatePath`` per index, and a
measured ``createPods`` whose template is not a ``pod-*.yaml`` -> pods rendered from that file (both
files read from the test package, rendered with :func:`render_template`); ``countMultiplierParam``
multiplies the count as upstream does; the test case's ``featureGates`` go into the scheduler
configuration. Anything else in the template raises naming the test case and the op.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
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
    ("podgroup/gangscheduling", "GangScheduling/5000Nodes_1000Gangs_3000Pods"),
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


# The functions of scheduler_perf's getTemplateFuncs (operations.go) that take and give integers.
_TEMPLATE_FUNCS: dict[str, Callable[[int, int], int]] = {
    "AddInt": lambda a, b: a + b,
    "SubtractInt": lambda a, b: a - b,
    "MultiplyInt": lambda a, b: a * b,
    "DivideInt": lambda a, b: int(a / b),  # Go: int(float64(a) / float64(b)), truncated toward zero
    "Mod": lambda a, b: a % b,
}
_ACTION = re.compile(r"{{\s*(.*?)\s*}}")


def render_template(text: str, values: dict[str, int], where: str) -> Any:
    """An upstream template file (Go text/template) rendered with `values` (``Index`` and the op's
    templateParams) and parsed as YAML. Only ``{{.Name}}`` and ``{{Func .A .B}}`` with the integer
    functions of scheduler_perf are understood; anything else raises naming `where`."""

    def value(token: str) -> int:
        if token.startswith(".") and token[1:] in values:
            return values[token[1:]]
        if re.fullmatch(r"-?\d+", token):
            return int(token)
        raise ConfigError(f"{where}: template value {token!r} is not among {sorted(values)}")

    def action(match: re.Match[str]) -> str:
        words = match.group(1).split()
        if len(words) == 1:
            return str(value(words[0]))
        if len(words) == 3 and words[0] in _TEMPLATE_FUNCS:
            return str(_TEMPLATE_FUNCS[words[0]](value(words[1]), value(words[2])))
        raise ConfigError(f"{where}: template action {match.group(0)!r} is not supported")

    # libyaml's loader: the gang workloads render one file per measured pod inside the measured
    # phase, and the pure-Python loader cost 0.65 ms of the harness's CPU a pod (libyaml: 0.08).
    return yaml.load(_ACTION.sub(action, text), Loader=yaml.CSafeLoader)


def _template_params(op: dict[str, Any], params: dict[str, Any], where: str) -> dict[str, int]:
    resolved = {}
    for key, raw in (op.get("templateParams") or {}).items():
        if isinstance(raw, str) and raw.startswith("$"):
            if raw[1:] not in params:
                raise ConfigError(f"{where}: templateParams[{key}] {raw!r} is not among the params {sorted(params)}")
            raw = params[raw[1:]]
        resolved[key] = int(raw)
    return resolved


@dataclass(frozen=True)
class TemplateFile:
    """One of upstream's template files with its op's params: called with an index, the object upstream
    creates for that index. Equal when the file's text and the params are (two reads of one config)."""

    path: Path
    text: str
    params: tuple[tuple[str, int], ...]
    where: str

    def __call__(self, index: int) -> dict[str, Any]:
        return render_template(self.text, {**dict(self.params), "Index": index}, self.where)


def _rendered(folder: Path, path: str, values: dict[str, int], where: str) -> TemplateFile:
    try:
        text = (folder / path).read_text()
    except OSError as error:
        raise ConfigError(f"{where}: cannot read template {path!r}: {error.strerror}") from None
    template = TemplateFile(folder / path, text, tuple(sorted(values.items())), where)
    template(0)  # a bad template fails now, not mid-run
    return template


def workload_from_config(config: list[dict[str, Any]], name: str, folder: Path | None = None) -> Workload:
    """The podsched Workload for upstream's ``<test case>/<workload>`` name in a parsed config; `folder`
    (the test package) is where the config's own template files are read from."""
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
    gang: dict[str, Any] = {}
    for index, op in enumerate(case.get("workloadTemplate", [])):
        where = f"{name}: workloadTemplate[{index}] (opcode {op.get('opcode')!r})"
        opcode = op.get("opcode")
        if opcode == "createNodes":
            if op.get("nodeTemplatePath"):
                raise ConfigError(f"{where}: nodeTemplatePath is not supported (only the default node)")
            nodes += _count(op, params, where)
        elif opcode == "createNamespaces":
            pass  # a namespace needs no object in podsched
        elif opcode == "createPodGroups":
            if folder is None:
                raise ConfigError(f"{where}: PodGroup templates need the test package's folder")
            gang["pod_groups"] = _count(op, params, where)
            gang["pod_group_manifest"] = _rendered(
                folder, op.get("templatePath", ""), _template_params(op, params, where), where
            )
        elif opcode == "createPods":
            count = _count(op, params, where)
            if op.get("countMultiplierParam"):
                count *= _count({"countParam": op["countMultiplierParam"]}, params, where)
            path = op.get("podTemplatePath", default_template)
            if Path(path).name.startswith("pod-"):
                kind = _template_kind(path, where)
            elif op.get("collectMetrics") and folder is not None:
                kind = "default"  # not used: the pods come from the rendered file
                gang["measured_manifest"] = _rendered(folder, path, _template_params(op, params, where), where)
            else:
                kind = _template_kind(path, where)  # raises naming the template
            pods.append((count, kind, bool(op.get("collectMetrics"))))
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
    workload = Workload(
        name, nodes, init_count, init_kind, measured[0][0], measured[0][1], churn_template, churn_interval
    )
    gates = tuple(sorted((str(k), bool(v)) for k, v in (case.get("featureGates") or {}).items()))
    return replace(workload, feature_gates=gates, **gang)


def load_workload(topic: str, name: str, root: Path | None = None) -> Workload:
    """Read ``<topic>/performance-config.yaml`` of the upstream module and map workload ``name``."""
    path = perf_dir(topic, root) / "performance-config.yaml"
    try:
        return workload_from_config(yaml.safe_load(path.read_text()), name, path.parent)
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
