"""The numpy fast path: column-major node state and a vectorized scheduling cycle that gives the
plain path's answers for the pods it handles and hands every other pod to the plain path."""

from podsched.fastpath.algorithm import FastSchedulingAlgorithm, build_fast_algorithm
from podsched.fastpath.columns import NodeColumns

__all__ = ["FastSchedulingAlgorithm", "NodeColumns", "build_fast_algorithm"]
