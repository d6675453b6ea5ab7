"""The column strategy of the framework runtime: node state as numpy columns, a scheduling cycle's
Filter and Score evaluated on every node at once (strategy.py), and the preemption dry run on many
nodes at once (dry_run.py). Same answers as the plugins' own methods node by node."""

from podsched.fastpath.columns import NodeColumns
from podsched.fastpath.dry_run import VectorizedDryRun
from podsched.fastpath.strategy import ColumnStrategy

__all__ = ["ColumnStrategy", "NodeColumns", "VectorizedDryRun"]
