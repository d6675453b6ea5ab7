"""PreFilterOnRead: the PostFilter state whose PreFilter runs only when something reads it."""

from __future__ import annotations

from podsched.framework.cycle_state import CycleState, PreFilterOnRead

PRE_FILTER_KEY = "plugin/pre-filter"
OTHER_KEY = "elsewhere/inputs"


def deferred(runs: list[int]) -> PreFilterOnRead:
    def pre_filter(state: CycleState) -> None:
        runs.append(1)
        state.write(PRE_FILTER_KEY, "computed")
        state.skip_filter_plugins.add("Skipped")

    return PreFilterOnRead(pre_filter, other_keys=(OTHER_KEY,))


def test_keys_written_without_pre_filter_are_read_without_it() -> None:
    runs: list[int] = []
    state = deferred(runs)
    assert state.get(OTHER_KEY) is None
    state.write(OTHER_KEY, "inputs")
    assert state.read(OTHER_KEY) == "inputs" and state.get(OTHER_KEY) == "inputs"
    assert runs == []


def test_pre_filter_runs_once_on_the_first_read_of_what_it_writes() -> None:
    for read in (
        lambda state: state.get(PRE_FILTER_KEY),
        lambda state: state.read(PRE_FILTER_KEY),
        lambda state: state.clone().read(PRE_FILTER_KEY),
        lambda state: "Skipped" in state.skip_filter_plugins and "computed",
    ):
        runs: list[int] = []
        state = deferred(runs)
        assert read(state) == "computed"
        assert state.get(PRE_FILTER_KEY) == "computed" and state.skip_filter_plugins == {"Skipped"}
        clone = state.clone()
        assert type(clone) is CycleState and clone.skip_filter_plugins == {"Skipped"}
        assert runs == [1]
