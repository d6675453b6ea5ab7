"""PodGroupPodsCount (upstream framework/plugins/podgrouppodscount, GenericWorkload gate): the
placement score plugin that favours the placement holding more of the group's pods.

A placement is a set of nodes the pod-group cycle tries the group on. Without topology-aware
placements (not supported here) there is one placement, all nodes, and the score decides nothing;
it is kept so the cycle scores placements as upstream does once there are several."""

from __future__ import annotations

from collections.abc import Sequence

MIN_SCORE = 0
MAX_SCORE = 100


def score_placement(scheduled_pods: int, proposed_assignments: int) -> int:
    """ScorePlacement: the group's pods already scheduled plus those the placement would place."""
    return scheduled_pods + proposed_assignments


def normalize_placement_scores(scores: Sequence[int]) -> list[int]:
    """NormalizePlacementScore: scaled to [MIN_SCORE, MAX_SCORE] by the highest count. A placement
    set in which no pod is placed anywhere is an error upstream (the gang plugin never lets one
    through); ValueError here."""
    highest = max(scores, default=0)
    if highest == 0:
        raise ValueError("no pods from pod group are assigned to any of the candidate placements")
    return [MIN_SCORE + score * (MAX_SCORE - MIN_SCORE) // highest for score in scores]
