"""CycleState: per-pod, per-cycle data that PreFilter computes and Filter/Score read.

Preemption's what-ifs clone it, so every stored value that is mutated later must implement
`clone()` (values without it are shared, which is right for read-only data)."""

from __future__ import annotations

from typing import Any


class CycleState:
    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """Return the value or raise KeyError (a plugin reading state its PreFilter never wrote is a bug)."""
        return self._data[key]

    def get(self, key: str) -> Any:
        return self._data.get(key)

    def clone(self) -> CycleState:
        clone = CycleState()
        for key, value in self._data.items():
            clone._data[key] = value.clone() if hasattr(value, "clone") else value
        clone.skip_filter_plugins = set(self.skip_filter_plugins)
        clone.skip_score_plugins = set(self.skip_score_plugins)
        return clone
