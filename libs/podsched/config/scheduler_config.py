"""Parse and validate a `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration.

Honoured: every profile (upstream's profile.Map: each `schedulerName` schedules the pods whose
`spec.schedulerName` names it, with its own plugins enabled/disabled per extension point (`*`
wildcard), its own DefaultPreemption args and percentageOfNodesToScore), the top-level
podInitialBackoffSeconds, podMaxBackoffSeconds and percentageOfNodesToScore, and the legacy
top-level `disablePreemption: true` (v1alpha1 era, kept because the seed documents describe it;
it turns preemption off in every profile). Validation follows upstream's
(pkg/scheduler/apis/config/validation): errors name the field path, e.g. `profiles[1].schedulerName`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from podsched.api.errors import ApiError, FieldError
from podsched.api.types import DEFAULT_SCHEDULER_NAME, Pod
from podsched.preemption.evaluator import DefaultPreemptionArgs
from podsched.preemption.pdb_policy import PDB_POLICIES, PdbPolicy

KIND = "KubeSchedulerConfiguration"
DEFAULT_PREEMPTION = "DefaultPreemption"
PREEMPTION_TOLERATION = "PreemptionToleration"
API_VERSIONS = ("kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3")
EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
    "placementGenerate",
    "placementScore",
    "podGroupPostFilter",
)


# Feature gates the configuration's `featureGates` may set, with upstream v1.37's defaults.
GENERIC_WORKLOAD = "GenericWorkload"
POD_GROUP_PREEMPTION_POLICY = "PodGroupPreemptionPolicy"
FEATURE_GATE_DEFAULTS: dict[str, bool] = {GENERIC_WORKLOAD: False, POD_GROUP_PREEMPTION_POLICY: False}


def _feature_gates(doc: Mapping[str, Any], errors: list[FieldError]) -> tuple[tuple[str, bool], ...]:
    """featureGates: {name: bool}, worded as component-base refuses a --feature-gates value."""
    raw = doc.get("featureGates")
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        errors.append(
            FieldError("featureGates", "must be a map of feature gate names to true or false", kind="Invalid value")
        )
        return ()
    gates: list[tuple[str, bool]] = []
    for name, value in raw.items():
        if name not in FEATURE_GATE_DEFAULTS:
            errors.append(
                FieldError(f"featureGates[{name}]", f"unrecognized feature gate: {name}", kind="Invalid value")
            )
        elif not isinstance(value, bool):
            errors.append(
                FieldError(
                    f"featureGates[{name}]",
                    f"invalid value of {name}={value}, must be true or false",
                    kind="Invalid value",
                )
            )
        else:
            gates.append((str(name), value))
    return tuple(gates)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """The configuration as its first profile sees it: the global settings and that profile's
    plugins and args, which is what a framework is built from (`build_framework`). The other
    profiles, each a SchedulerConfig of its own with the same global settings, are in
    `other_profiles`; `profiles` lists them all and `profile_named` resolves a pod's."""

    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    percentage_of_nodes_to_score: int = 0
    preemption_enabled: bool = True
    preemption_args: DefaultPreemptionArgs = field(default_factory=DefaultPreemptionArgs)
    # The PostFilter plugins, in upstream's order (the default DefaultPreemption, then those the
    # profile enables: kubernetes-sigs/scheduler-plugins' PreemptionToleration).
    post_filter_plugins: tuple[str, ...] = (DEFAULT_PREEMPTION,)
    toleration_args: DefaultPreemptionArgs = field(default_factory=DefaultPreemptionArgs)
    disabled_plugins: frozenset[tuple[str, str]] = frozenset()  # (extension point, plugin name)
    score_weights: tuple[tuple[str, int], ...] = ()  # overrides from plugins.score.enabled[].weight
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    other_profiles: tuple[SchedulerConfig, ...] = ()
    # featureGates: the scheduler's --feature-gates, read from the configuration file (a
    # podsched addition: upstream takes them as a flag). Every gate is off unless turned on.
    feature_gates: tuple[tuple[str, bool], ...] = ()

    def feature_enabled(self, gate: str) -> bool:
        return dict(self.feature_gates).get(gate, FEATURE_GATE_DEFAULTS.get(gate, False))

    @property
    def generic_workload(self) -> bool:
        """GenericWorkload: PodGroups are scheduled as groups (gang scheduling); off by default."""
        return self.feature_enabled(GENERIC_WORKLOAD)

    def plugin_enabled(self, point: str, plugin: str) -> bool:
        return (
            (point, plugin) not in self.disabled_plugins
            and (point, "*") not in self.disabled_plugins
            and ("multiPoint", plugin) not in self.disabled_plugins
        )

    @property
    def profiles(self) -> tuple[SchedulerConfig, ...]:
        """Every profile, in the file's order (the first is this one)."""
        return (self, *self.other_profiles)

    @property
    def scheduler_names(self) -> frozenset[str]:
        return frozenset(profile.scheduler_name for profile in self.profiles)

    def profile_named(self, scheduler_name: str) -> SchedulerConfig | None:
        """The profile that schedules pods whose spec.schedulerName is `scheduler_name`; None when no
        profile does (upstream's frameworkForPod: such pods are another scheduler's)."""
        if scheduler_name == self.scheduler_name:
            return self
        return next((p for p in self.other_profiles if p.scheduler_name == scheduler_name), None)


def responsible_for_pod(config: SchedulerConfig, pod: Pod) -> bool:
    """Whether some profile schedules `pod` (upstream's responsibleForPod): pods naming another
    scheduler are never queued, get no event and stay Pending."""
    name = pod.spec.scheduler_name
    return name == config.scheduler_name or any(p.scheduler_name == name for p in config.other_profiles)


def _invalid(errors: list[FieldError]) -> ApiError:
    return ApiError.invalid(KIND, "config", errors)


def parse_scheduler_config(text: str, source: str = "config") -> SchedulerConfig:
    """Parse YAML/JSON text; raise ApiError naming the offending field."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ApiError.bad_request(KIND, source, f"error parsing {source}: {error}") from error
    if not isinstance(doc, dict):
        raise _invalid([FieldError("<root>", "must be a mapping", kind="Invalid value")])
    return scheduler_config_from_dict(doc)


def _number(
    doc: Mapping[str, Any], key: str, errors: list[FieldError], default: float, minimum: float, path: str = ""
) -> float:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        errors.append(FieldError(path + key, f"must be a number >= {minimum}", value))
        return default
    return float(value)


def _percentage(doc: Mapping[str, Any], errors: list[FieldError], default: int, path: str = "") -> int:
    percentage = int(_number(doc, "percentageOfNodesToScore", errors, default, 0, path))
    if percentage > 100:
        errors.append(FieldError(path + "percentageOfNodesToScore", "not in valid range [0-100]", percentage))
        return default
    return percentage


def scheduler_config_from_dict(doc: dict[str, Any]) -> SchedulerConfig:
    errors: list[FieldError] = []
    if doc.get("kind", KIND) != KIND:
        errors.append(FieldError("kind", f"must be {KIND}", doc.get("kind")))
    if doc.get("apiVersion", API_VERSIONS[0]) not in API_VERSIONS and "disablePreemption" not in doc:
        errors.append(FieldError("apiVersion", f"must be one of {', '.join(API_VERSIONS)}", doc.get("apiVersion")))
    initial = _number(doc, "podInitialBackoffSeconds", errors, 1.0, 1)
    maximum = _number(doc, "podMaxBackoffSeconds", errors, 10.0, 1)
    if maximum < initial:
        errors.append(
            FieldError("podMaxBackoffSeconds", "must be greater than or equal to podInitialBackoffSeconds", maximum)
        )
    defaults = SchedulerConfig(
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        percentage_of_nodes_to_score=_percentage(doc, errors, 0),
        preemption_enabled=doc.get("disablePreemption") is not True,
        feature_gates=_feature_gates(doc, errors),
    )
    raw_profiles = doc.get("profiles")
    if raw_profiles is None or raw_profiles == []:
        raw_profiles = [{}]  # upstream's default: one profile, the default scheduler
    if not isinstance(raw_profiles, list):
        errors.append(FieldError("profiles", "must be a list", kind="Invalid value"))
        raw_profiles = [{}]
    profiles: list[SchedulerConfig] = []
    first_with_name: dict[str, int] = {}
    for index, raw in enumerate(raw_profiles):
        path = f"profiles[{index}]"
        if not isinstance(raw, dict):
            errors.append(FieldError(path, "must be a mapping"))
            continue
        profile = _profile(raw, path, defaults, len(raw_profiles) == 1, errors)
        name = profile.scheduler_name
        if name in first_with_name:
            # Upstream: field.Duplicate(profiles[i].schedulerName, ...); its value is the earlier
            # profile's path, which apimachinery renders as `{}`: the name and that path say more.
            errors.append(
                FieldError(
                    f"{path}.schedulerName",
                    f"also profiles[{first_with_name[name]}].schedulerName",
                    name,
                    kind="Duplicate value",
                )
            )
        elif name:
            first_with_name[name] = index
        profiles.append(profile)
    _check_common_queue_sort(raw_profiles, errors)
    if errors:
        raise _invalid(errors)
    return replace(profiles[0], other_profiles=tuple(profiles[1:]))


def _check_common_queue_sort(raw_profiles: list[Any], errors: list[FieldError]) -> None:
    """Upstream's validateCommonQueueSort: one queue serves every profile, so every profile's
    queueSort plugin set must be the first profile's."""

    def queue_sort(raw: Any) -> Any:
        plugins = raw.get("plugins") if isinstance(raw, dict) else None
        return (plugins.get("queueSort") if isinstance(plugins, dict) else None) or {}

    first = queue_sort(raw_profiles[0])
    for index, raw in enumerate(raw_profiles[1:], start=1):
        if queue_sort(raw) != first:
            errors.append(FieldError(f"profiles[{index}].plugins.queueSort", "must be the same for all profiles"))


def _profile(
    raw: dict[str, Any], path: str, defaults: SchedulerConfig, only: bool, errors: list[FieldError]
) -> SchedulerConfig:
    """One entry of `profiles` (at `path`) on top of the global `defaults`. A lone profile may omit
    schedulerName (it is the default scheduler); with several, each must name itself."""
    name: Any = raw.get("schedulerName")
    if name is None and only:
        name = DEFAULT_SCHEDULER_NAME
    if name is None or name == "":
        errors.append(FieldError(f"{path}.schedulerName", "", kind="Required value"))
        name = ""
    elif not isinstance(name, str):
        errors.append(FieldError(f"{path}.schedulerName", "must be a string", name))
        name = ""
    percentage = defaults.percentage_of_nodes_to_score
    if "percentageOfNodesToScore" in raw:
        percentage = _percentage(raw, errors, percentage, f"{path}.")
    disabled: set[tuple[str, str]] = set()
    enabled_post_filter: list[str] = []
    weights: list[tuple[str, int]] = []
    plugins = raw.get("plugins") or {}
    if not isinstance(plugins, dict):
        errors.append(FieldError(f"{path}.plugins", "must be a mapping"))
        plugins = {}
    for point, sets in plugins.items():
        point_path = f"{path}.plugins.{point}"
        if point not in EXTENSION_POINTS:
            errors.append(FieldError(point_path, "unknown extension point", point))
            continue
        if sets is None:
            continue
        if not isinstance(sets, dict):
            errors.append(FieldError(point_path, "must be a mapping"))
            continue
        for which in ("enabled", "disabled"):
            entries = sets.get(which) or []
            if not isinstance(entries, list):
                errors.append(FieldError(f"{point_path}.{which}", "must be a list"))
                continue
            for entry_index, entry in enumerate(entries):
                entry_path = f"{point_path}.{which}[{entry_index}]"
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
                    errors.append(FieldError(f"{entry_path}.name", "", kind="Required value"))
                    continue
                if which == "disabled":
                    disabled.add((point, entry["name"]))
                elif point == "postFilter":
                    enabled_post_filter.append(entry["name"])
                elif point in ("score", "multiPoint") and "weight" in entry:
                    weight = entry["weight"]
                    if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
                        errors.append(FieldError(f"{entry_path}.weight", "must be a non-negative integer", weight))
                        continue
                    weights.append((entry["name"], weight))
    args = defaults.preemption_args
    toleration_args = defaults.toleration_args
    plugin_configs = raw.get("pluginConfig") or []
    if not isinstance(plugin_configs, list):
        errors.append(FieldError(f"{path}.pluginConfig", "must be a list"))
        plugin_configs = []
    seen: set[str] = set()
    for config_index, plugin_config in enumerate(plugin_configs):
        config_path = f"{path}.pluginConfig[{config_index}]"
        if not isinstance(plugin_config, dict):
            errors.append(FieldError(config_path, "must be a mapping"))
            continue
        plugin_name = plugin_config.get("name")
        if plugin_name in seen:
            errors.append(FieldError(config_path, "", plugin_name, kind="Duplicate value"))
            continue
        if isinstance(plugin_name, str):
            seen.add(plugin_name)
        if plugin_name == DEFAULT_PREEMPTION:
            args = _default_preemption_args(plugin_config.get("args"), f"{config_path}.args", errors) or args
        elif plugin_name == PREEMPTION_TOLERATION:
            raw_args = plugin_config.get("args")
            if isinstance(raw_args, dict) and "pdbPolicy" in raw_args:
                # PreemptionTolerationArgs has the candidate minimums only.
                errors.append(
                    FieldError(f"{config_path}.args.pdbPolicy", "a DefaultPreemption argument", kind="Forbidden")
                )
                continue
            toleration_args = _default_preemption_args(raw_args, f"{config_path}.args", errors) or toleration_args
    profile = replace(
        defaults,
        scheduler_name=name,
        percentage_of_nodes_to_score=percentage,
        preemption_args=args,
        toleration_args=toleration_args,
        disabled_plugins=frozenset(disabled),
        score_weights=tuple(weights),
    )
    post_filter = [DEFAULT_PREEMPTION] if profile.plugin_enabled("postFilter", DEFAULT_PREEMPTION) else []
    # An enabled plugin runs unless disabled by name (upstream: `*` disables the default plugins only).
    if PREEMPTION_TOLERATION in enabled_post_filter and ("postFilter", PREEMPTION_TOLERATION) not in disabled:
        post_filter.append(PREEMPTION_TOLERATION)
    profile = replace(profile, post_filter_plugins=tuple(post_filter))
    if not post_filter:
        profile = replace(profile, preemption_enabled=False)
    return profile


def _default_preemption_args(raw: Any, path: str, errors: list[FieldError]) -> DefaultPreemptionArgs | None:
    """DefaultPreemptionArgs from a pluginConfig entry's args (upstream's defaults for what is
    omitted); None, with the errors noted, when they are invalid."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        errors.append(FieldError(path, "must be a mapping"))
        return None
    defaults = DefaultPreemptionArgs()
    pdb_policy = raw.get("pdbPolicy", PdbPolicy.BEST_EFFORT.value)
    if pdb_policy not in PDB_POLICIES:
        # podsched's own argument: worded as upstream words an unsupported enum value.
        errors.append(
            FieldError(
                f"{path}.pdbPolicy",
                "supported values: " + ", ".join(f'"{v}"' for v in PDB_POLICIES),
                pdb_policy,
                kind="Unsupported value",
            )
        )
        return None
    values: list[int] = []
    for key, default in (
        ("minCandidateNodesPercentage", defaults.min_candidate_nodes_percentage),
        ("minCandidateNodesAbsolute", defaults.min_candidate_nodes_absolute),
    ):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(FieldError(f"{path}.{key}", "must be an integer", value))
            return None
        values.append(value)
    percentage, absolute = values
    percentage_path, absolute_path = f"{path}.minCandidateNodesPercentage", f"{path}.minCandidateNodesAbsolute"
    # Upstream's ValidateDefaultPreemptionArgs, field by field.
    problems = len(errors)
    if not 0 <= percentage <= 100:
        errors.append(FieldError(percentage_path, "not in valid range [0, 100]", percentage))
    if absolute < 0:
        errors.append(FieldError(absolute_path, "not in valid range [0, inf)", absolute))
    if percentage == 0 and absolute == 0:
        errors.append(FieldError(percentage_path, "cannot be zero at the same time as minCandidateNodesAbsolute", 0))
        errors.append(FieldError(absolute_path, "cannot be zero at the same time as minCandidateNodesPercentage", 0))
    return None if len(errors) > problems else DefaultPreemptionArgs(percentage, absolute, str(pdb_policy))
