"""Reduce a saved difference to a small replay: `python -m tests.oracle.differential --shrink DIR`.

Works on the manifests themselves (delta debugging), so it reduces any saved case, generated or
written by hand: drop files, then objects (halves, quarters, ... single ones), then fields and list
items, keeping a change only when the cluster still differs from upstream in the same way (podsched
accepts every object, and the oracle, run up to --reruns times, never gives podsched's outcome).
The result goes to DIR/min/ with the same files as any saved case.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.oracle.clusters import to_yaml
from tests.oracle.differential import (
    Oracle,
    Verdict,
    _settle,
    _settle_by_podsched_ties,
    describe,
    read_case,
    run_podsched,
    upstream_outcome,
    write_case,
)

Files = list[list[dict[str, Any]]]

# Fields a reduction never removes: without them an object is not itself (or not valid at all), or
# it becomes one the generator never writes and the reduction drifts to another difference (a node
# with no cpu at all, a running pod that loses its node but keeps phase Running).
_KEEP = {
    ("apiVersion",),
    ("kind",),
    ("metadata",),
    ("metadata", "name"),
    ("spec", "containers"),
    ("spec", "containers", "*"),
    ("spec", "containers", "*", "name"),
    ("spec", "nodeName"),
    ("value",),
    ("status", "capacity", "cpu"),
    ("status", "capacity", "memory"),
    ("status", "allocatable", "cpu"),
    ("status", "allocatable", "memory"),
}


def _paths(document: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every removable field and list item of a manifest, deepest last (a whole subtree is tried
    before its parts)."""
    if isinstance(document, dict):
        for key, value in document.items():
            path = (*prefix, key)
            if _pattern(path) not in _KEEP:
                yield path
            yield from _paths(value, path)
    elif isinstance(document, list):
        for index, value in enumerate(document):
            path = (*prefix, index)
            if _pattern(path) not in _KEEP:
                yield path
            yield from _paths(value, path)


def _pattern(path: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple("*" if isinstance(part, int) else part for part in path)


def _without(document: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any] | None:
    changed = copy.deepcopy(document)
    parent: Any = changed
    for part in path[:-1]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return None
    try:
        del parent[path[-1]]
    except (KeyError, IndexError, TypeError):
        return None
    return changed


class Predicate:
    """Whether a candidate still shows the difference; counts the runs it took."""

    def __init__(self, oracle: Oracle, reruns: int, kind_of_problem: str, pods: set[str]) -> None:
        self.oracle, self.reruns, self.kind_of_problem = oracle, reruns, kind_of_problem
        self.pods = pods  # the pods the original differs on: one of them must still differ
        self.tries = 0

    def __call__(self, files: Files) -> Verdict | None:
        self.tries += 1
        texts = [to_yaml(documents) for documents in files if documents]
        verdict = Verdict(f"shrink-{self.tries}", texts)
        try:
            verdict.podsched = run_podsched(texts)
        except Exception:
            # A crash stays interesting only when crashing is what is being reduced.
            return verdict if self.kind_of_problem == "raised" else None
        if self.kind_of_problem == "raised" or verdict.podsched.rejected:
            return None
        for run in range(self.reruns):
            answer = self.oracle.run(f"{verdict.cluster_id}#{run}", texts, seed=run + 1)
            if "error" in answer:
                return None  # the oracle refuses the candidate: not a valid reduction
            verdict.upstream.append(answer)
            if _settle(verdict):
                return None
        if _settle_by_podsched_ties(verdict, self.reruns):
            return None
        if self.pods and not self.pods & differing_pods(verdict):
            return None  # a different difference: reducing towards it would lose the one at hand
        return verdict


def differing_pods(verdict: Verdict) -> set[str]:
    assert verdict.podsched is not None
    ours = verdict.podsched.outcome
    pods: set[str] = set()
    for answer in verdict.upstream:
        theirs = upstream_outcome(answer)
        pods |= {key for key in set(ours) | set(theirs) if ours.get(key) != theirs.get(key)}
    return pods


def reduce(files: Files, still_differs: Callable[[Files], Verdict | None]) -> tuple[Files, Verdict | None]:
    best = still_differs(files)
    if best is None:
        return files, None
    changed = True
    while changed:
        changed = False
        # 1. whole later files
        for index in range(len(files) - 1, 0, -1):
            candidate = files[:index] + files[index + 1 :]
            if (verdict := still_differs(candidate)) is not None:
                files, best, changed = candidate, verdict, True
        # 2. objects: chunks of halving size over the flattened list
        flat = [(i, j) for i, documents in enumerate(files) for j in range(len(documents))]
        size = max(1, len(flat) // 2)
        while size >= 1:
            start = 0
            while start < len(flat):
                drop = set(flat[start : start + size])
                candidate = [
                    [d for j, d in enumerate(documents) if (i, j) not in drop] for i, documents in enumerate(files)
                ]
                if (verdict := still_differs(candidate)) is not None:
                    files, best, changed = candidate, verdict, True
                    flat = [(i, j) for i, documents in enumerate(files) for j in range(len(documents))]
                else:
                    start += size
            size //= 2
        # 3. fields and list items, one at a time
        for i in range(len(files)):
            for j in range(len(files[i])):
                progress = True
                while progress:
                    progress = False
                    for path in list(_paths(files[i][j])):
                        smaller = _without(files[i][j], path)
                        if smaller is None:
                            continue
                        candidate = [list(documents) for documents in files]
                        candidate[i][j] = smaller
                        if (verdict := still_differs(candidate)) is not None:
                            files, best, changed, progress = candidate, verdict, True, True
                            break
    return files, best


def shrink_case(path: Path, oracle: Oracle, reruns: int) -> int:
    """Reduce the case in `path`; 1 when a (smaller) difference was written to path/min, else 0."""
    started = time.monotonic()
    texts = read_case(path)
    files: Files = [[d for d in yaml.safe_load_all(text) if d] for text in texts]
    try:
        run_podsched(texts)
        kind = "disagrees"
    except Exception:
        kind = "raised"
    first = Predicate(oracle, reruns, kind, set())(files)
    if first is None:
        print(f"{path}: no difference from upstream in {reruns} runs any more; nothing to shrink")
        return 0
    predicate = Predicate(oracle, reruns, kind, differing_pods(first) if kind == "disagrees" else set())
    smallest, verdict = reduce(files, predicate)
    assert verdict is not None
    verdict.cluster_id = "min"
    out = write_case(verdict, path)
    before = sum(len(documents) for documents in files)
    after = sum(len(documents) for documents in smallest)
    print(
        f"{path}: {before} objects -> {after} in {predicate.tries} tries, {time.monotonic() - started:.0f} s; "
        f"written to {out}"
    )
    print(describe(verdict))
    return 1
