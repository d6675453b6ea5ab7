"""fit_statuses: NodeResourcesFit's statuses for many failing nodes at once, one per distinct set of
failed checks, each node pointing at its own, as fit_status words it for that node alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from podsched.fastpath.fit_status import _UNRESOLVABLE_BIT, fit_status, fit_statuses
from podsched.framework.interface import ResourceCheck


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.data())
def test_each_node_gets_its_own_status_and_the_statuses_are_distinct(checks_count: int, data: st.DataObject) -> None:
    checks = tuple(ResourceCheck(f"example.com/r{k}", 1, f"Insufficient example.com/r{k}") for k in range(checks_count))
    nodes = data.draw(st.integers(1, 40))
    rows = st.lists(st.booleans(), min_size=nodes, max_size=nodes)
    fails = [np.array(data.draw(rows), np.bool_) for _ in range(1 + checks_count)]
    unresolvable = np.array(data.draw(rows), np.bool_)
    index, statuses = fit_statuses(fails, unresolvable, checks)
    patterns = []
    for node in range(nodes):
        pattern = sum(int(fail[node]) << k for k, fail in enumerate(fails))
        pattern |= int(unresolvable[node]) << _UNRESOLVABLE_BIT
        patterns.append(pattern)
        own, grouped = fit_status(pattern, checks), statuses[int(index[node])]
        assert (grouped.code, grouped.reasons, grouped.plugin) == (own.code, own.reasons, own.plugin)
    # One status per distinct pattern, in the patterns' order.
    assert [s.reasons for s in statuses] == [fit_status(p, checks).reasons for p in sorted(set(patterns))]
    assert [s.code for s in statuses] == [fit_status(p, checks).code for p in sorted(set(patterns))]
