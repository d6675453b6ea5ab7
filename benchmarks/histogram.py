"""A latency percentile from a Prometheus histogram, as scheduler_perf's metrics collector computes it.

Upstream reads its histograms' cumulative buckets and takes a quantile with Prometheus' bucket
interpolation (k8s.io/component-base/metrics/testutil, Histogram.Quantile, then bucketQuantile):
the rank q * count falls in some bucket, and the answer is that bucket's lower bound plus the share
of the bucket's width that the rank reaches into it; a rank in the +Inf bucket answers the highest
finite bound. Here the buckets are the difference of two scrapes, around the measured phase, as
upstream resets its metrics before it."""

from __future__ import annotations

import math
from collections.abc import Mapping


def bucket_quantile(q: float, cumulative: Mapping[float, float]) -> float:
    """The q-quantile of a histogram given as {upper bound (+Inf included): cumulative count};
    NaN when the histogram is empty."""
    buckets = sorted(cumulative.items())
    if not buckets or buckets[-1][0] != math.inf:
        raise ValueError("a histogram's buckets end with the +Inf bucket")
    total = buckets[-1][1]
    if total <= 0 or len(buckets) < 2:
        return math.nan
    rank = q * total
    index = next(i for i, (_, count) in enumerate(buckets) if count >= rank)
    if index == len(buckets) - 1:
        return buckets[-2][0]
    start, below = (buckets[index - 1][0], buckets[index - 1][1]) if index > 0 else (0.0, 0.0)
    end, count = buckets[index]
    return start + (end - start) * (rank - below) / (count - below)
