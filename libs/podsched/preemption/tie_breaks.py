"""pickOneNodeForPreemption: an ordered list of small score functions; each keeps only the best
candidates, and the first that leaves one candidate decides."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from podsched.api.types import Pod
from podsched.preemption.ordering import earliest_start_time_of_top_priority

INT32_OFFSET = 2**31  # math.MaxInt32 + 1: makes every priority term positive
MIN_INT64 = -(2**63)


class VictimSummary(NamedTuple):
    """What the tie-breaks read from a candidate's victims, at the dry run's `now` (a tuple: a dry
    run on columns makes one per candidate node, hundreds per cycle)."""

    top_priority: int  # the highest victim priority (victims[0]'s)
    priority_sum: int  # sum of (priority + 2**31)
    earliest_top_start: float | None  # GetEarliestPodStartTime (unset start times count as now)

    @staticmethod
    def of(victims: Sequence[Pod], now: float) -> VictimSummary:
        return VictimSummary(
            victims[0].priority,
            sum(victim.priority + INT32_OFFSET for victim in victims),
            earliest_start_time_of_top_priority(victims, now),
        )


@dataclass(slots=True)
class Candidate:
    """A node where preemption would let the pod fit, with the victims sorted most important first.
    `summary` may come with it (a dry run that computed it for many nodes at once), else it is
    computed from the victims when a tie-break first asks."""

    node_name: str
    victims: list[Pod] = field(default_factory=list)
    num_pdb_violations: int = 0
    summary: VictimSummary | None = None
    # The default tie-breaks' scores, once asked for: a dry run on columns hands the same Candidate to
    # every dry run that reaches its node while its outcome holds (32 preemptors of a run).
    _default_scores: tuple[float, ...] | None = field(default=None, repr=False, compare=False)

    def victim_summary(self, now: float) -> VictimSummary:
        if self.summary is None:
            self.summary = VictimSummary.of(self.victims, now)
        return self.summary

    def default_scores(self, now: float) -> tuple[float, ...]:
        """default_score_funcs(now) applied to this candidate, in their order. `now` is read only by
        a summary made here (victim_summary keeps the first), so the scores are kept with it."""
        if self._default_scores is None:
            summary = self.victim_summary(now)
            earliest = summary.earliest_top_start
            self._default_scores = (
                -self.num_pdb_violations,
                -summary.top_priority,
                -summary.priority_sum,
                -len(self.victims),
                MIN_INT64 if earliest is None else earliest,
            )
        return self._default_scores


ScoreFunc = Callable[[Candidate], float]


def fewest_pdb_violations(candidate: Candidate) -> float:
    return -candidate.num_pdb_violations


def lowest_highest_victim_priority(candidate: Candidate) -> float:
    summary = candidate.summary
    return -(summary.top_priority if summary is not None else candidate.victims[0].priority)


def lowest_priority_sum(candidate: Candidate) -> float:
    summary = candidate.summary
    if summary is not None:
        return -summary.priority_sum
    return -sum(victim.priority + INT32_OFFSET for victim in candidate.victims)


def fewest_victims(candidate: Candidate) -> float:
    return -len(candidate.victims)


def latest_start_time_score(now: float) -> ScoreFunc:
    """Prefer disturbing the most recently started of the highest-priority victims."""

    def score(candidate: Candidate) -> float:
        summary = candidate.summary or candidate.victim_summary(now)
        earliest = summary.earliest_top_start
        return MIN_INT64 if earliest is None else earliest

    return score


def default_score_funcs(now: float) -> list[ScoreFunc]:
    return [
        fewest_pdb_violations,
        lowest_highest_victim_priority,
        lowest_priority_sum,
        fewest_victims,
        latest_start_time_score(now),
    ]


def pick_by_default_tie_breaks(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """pick_one_node_for_preemption(candidates, default_score_funcs(now)) in one pass: keeping the
    best by each score in turn, then the first left, is taking the first candidate whose scores, as a
    tuple in the tie-breaks' order, are the greatest (max keeps the first of equal ones)."""
    if not candidates:
        return None
    return max(candidates, key=lambda candidate: candidate.default_scores(now))


def pick_one_node_for_preemption(candidates: Sequence[Candidate], score_funcs: Sequence[ScoreFunc]) -> Candidate | None:
    """Apply the tie-breaks in order. Upstream breaks a final tie by Go map order (arbitrary); we take
    the first remaining candidate in dry-run order, which is deterministic."""
    if not candidates:
        return None
    remaining = candidates
    for score_func in score_funcs:
        scores = list(map(score_func, remaining))  # hundreds of candidates when the dry run is on columns
        best_score = max(scores)
        if scores.count(best_score) == len(scores):
            continue  # a tie between all of them (PreemptionBasic's: every tie-break but the last)
        best = [candidate for candidate, score in zip(remaining, scores, strict=True) if score == best_score]
        if len(best) == 1:
            return best[0]
        remaining = best
    return remaining[0]
