"""DefaultPreemption's `pdbPolicy` argument, podsched's own opt-in.

`BestEffort` (the default) is upstream's behaviour: SelectVictimsOnNode reprieves PDB-covered pods
first, and a candidate whose victims violate a PodDisruptionBudget is only ranked after the ones
that violate none, so it is still chosen when nothing else helps. `Strict` never picks such a set:
a node whose victim set would exceed some PDB's disruptionsAllowed is no candidate, and when no
node is left the preemptor stays pending, its FailedScheduling message naming the PDBs."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from podsched.api.types import PodDisruptionBudget


class PdbPolicy(StrEnum):
    BEST_EFFORT = "BestEffort"
    STRICT = "Strict"


PDB_POLICIES = tuple(policy.value for policy in PdbPolicy)
# How many PDBs a node's reason names before it says "and N more" (the reason is per node, and the
# FitError message counts nodes per distinct reason).
MAX_NAMED_PDBS = 3


def strict_pdb_reason(violated: Sequence[PodDisruptionBudget]) -> str:
    """The node's status reason under Strict: which PDBs its victim set would violate."""
    names = sorted(f"{pdb.namespace}/{pdb.name}" for pdb in violated)
    shown = ", ".join(names[:MAX_NAMED_PDBS])
    if len(names) > MAX_NAMED_PDBS:
        shown += f" and {len(names) - MAX_NAMED_PDBS} more"
    noun = "PodDisruptionBudget" if len(names) == 1 else "PodDisruptionBudgets"
    return f"Preemption would violate {noun} {shown} (pdbPolicy: Strict)"
