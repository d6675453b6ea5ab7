"""Parse and validate a `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration.

Honoured: profiles[0].plugins (enabled/disabled per extension point, `*` wildcard),
pluginConfig DefaultPreemption args, podInitialBackoffSeconds, podMaxBackoffSeconds,
percentageOfNodesToScore (top level and per profile), and the legacy top-level
`disablePreemption: true` (v1alpha1 era, kept because the seed documents describe it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from podsched.api.errors import ApiError, FieldError
from podsched.preemption.evaluator import DefaultPreemptionArgs

KIND = "KubeSchedulerConfiguration"
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
)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    percentage_of_nodes_to_score: int = 0
    preemption_enabled: bool = True
    preemption_args: DefaultPreemptionArgs = field(default_factory=DefaultPreemptionArgs)
    disabled_plugins: frozenset[tuple[str, str]] = frozenset()  # (extension point, plugin name)
    score_weights: tuple[tuple[str, int], ...] = ()  # overrides from plugins.score.enabled[].weight
    scheduler_name: str = "default-scheduler"

    def plugin_enabled(self, point: str, plugin: str) -> bool:
        return (
            (point, plugin) not in self.disabled_plugins
            and (point, "*") not in self.disabled_plugins
            and ("multiPoint", plugin) not in self.disabled_plugins
        )


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


def _number(doc: dict[str, Any], key: str, errors: list[FieldError], default: float, minimum: float) -> float:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        errors.append(FieldError(key, f"must be a number >= {minimum}", value))
        return default
    return float(value)


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
    percentage = int(_number(doc, "percentageOfNodesToScore", errors, 0, 0))
    if percentage > 100:
        errors.append(FieldError("percentageOfNodesToScore", "not in valid range [0-100]", percentage))
    preemption_enabled = True
    if doc.get("disablePreemption") is True:
        preemption_enabled = False
    disabled: set[tuple[str, str]] = set()
    weights: list[tuple[str, int]] = []
    args = DefaultPreemptionArgs()
    profiles = doc.get("profiles") or []
    if not isinstance(profiles, list):
        errors.append(FieldError("profiles", "must be a list", kind="Invalid value"))
        profiles = []
    scheduler_name = "default-scheduler"
    for index, profile in enumerate(profiles[:1]):  # one profile: the default scheduler's
        path = f"profiles[{index}]"
        if not isinstance(profile, dict):
            errors.append(FieldError(path, "must be a mapping"))
            continue
        scheduler_name = str(profile.get("schedulerName", scheduler_name))
        if "percentageOfNodesToScore" in profile:
            percentage = int(_number(profile, "percentageOfNodesToScore", errors, percentage, 0))
        plugins = profile.get("plugins") or {}
        for point, sets in plugins.items():
            if point not in EXTENSION_POINTS:
                errors.append(FieldError(f"{path}.plugins.{point}", "unknown extension point", point))
                continue
            for entry in (sets or {}).get("disabled") or []:
                disabled.add((point, str(entry.get("name", ""))))
            for entry in (sets or {}).get("enabled") or []:
                if point in ("score", "multiPoint") and "weight" in entry:
                    weights.append((str(entry.get("name")), int(entry["weight"])))
        for config_index, plugin_config in enumerate(profile.get("pluginConfig") or []):
            if plugin_config.get("name") != "DefaultPreemption":
                continue
            plugin_args = plugin_config.get("args") or {}
            args = DefaultPreemptionArgs(
                int(plugin_args.get("minCandidateNodesPercentage", args.min_candidate_nodes_percentage)),
                int(plugin_args.get("minCandidateNodesAbsolute", args.min_candidate_nodes_absolute)),
            )
            for message in args.validate():
                errors.append(FieldError(f"{path}.pluginConfig[{config_index}].args", message))
    config = SchedulerConfig(
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        percentage_of_nodes_to_score=percentage,
        preemption_enabled=preemption_enabled,
        preemption_args=args,
        disabled_plugins=frozenset(disabled),
        score_weights=tuple(weights),
        scheduler_name=scheduler_name,
    )
    if not config.plugin_enabled("postFilter", "DefaultPreemption"):
        config = replace(config, preemption_enabled=False)
    if errors:
        raise _invalid(errors)
    return config
