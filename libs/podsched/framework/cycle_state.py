"""CycleState: per-pod, per-cycle data that PreFilter computes and Filter/Score read.

Preemption's what-ifs clone it, so every stored value that is mutated later must implement
`clone()` (values without it are shared, which is right for read-only data)."""

from __future__ import annotations

from collections.abc import Callable, Collection
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


class PreFilterOnRead(CycleState):
    """The state PostFilter reads, with PreFilter (`pre_filter`, which writes it) run only when
    something first reads what PreFilter would have written: a key not written yet (other than
    `other_keys`, which PreFilter never writes), the skip sets, or a clone. The dry run on columns
    reads only its column inputs, so a run of preemptors decided there never pays for PreFilter; a
    node-by-node dry run clones the state, and gets it complete. PreFilter's outcome is not read:
    PostFilter follows a Filter that ran after a successful PreFilter."""

    __slots__ = ("_other_keys", "_pre_filter")

    def __init__(self, pre_filter: Callable[[CycleState], object], other_keys: Collection[str] = ()) -> None:
        self._pre_filter: Callable[[CycleState], object] | None = None  # not before CycleState's own fields
        super().__init__()
        self._pre_filter = pre_filter
        self._other_keys = other_keys

    def _complete(self) -> None:
        pre_filter, self._pre_filter = self._pre_filter, None
        if pre_filter is not None:
            pre_filter(self)

    def read(self, key: str) -> Any:
        if key not in self._data and key not in self._other_keys:
            self._complete()
        return self._data[key]

    def get(self, key: str) -> Any:
        if key not in self._data and key not in self._other_keys:
            self._complete()
        return self._data.get(key)

    def clone(self) -> CycleState:
        self._complete()
        return super().clone()

    @property  # type: ignore[override]
    def skip_filter_plugins(self) -> set[str]:
        self._complete()
        plugins: set[str] = _SKIP_FILTER.__get__(self)
        return plugins

    @skip_filter_plugins.setter
    def skip_filter_plugins(self, plugins: set[str]) -> None:
        _SKIP_FILTER.__set__(self, plugins)

    @property  # type: ignore[override]
    def skip_score_plugins(self) -> set[str]:
        self._complete()
        plugins: set[str] = _SKIP_SCORE.__get__(self)
        return plugins

    @skip_score_plugins.setter
    def skip_score_plugins(self, plugins: set[str]) -> None:
        _SKIP_SCORE.__set__(self, plugins)


# CycleState's own slots, under the properties that complete the state first.
_SKIP_FILTER: Any = CycleState.__dict__["skip_filter_plugins"]
_SKIP_SCORE: Any = CycleState.__dict__["skip_score_plugins"]
