"""How far simulated values lie from measured ones: the error statistics of
``batio validate``, one definition for jobs' I/O times and benchmarks'
bandwidths alike.

For each pair with a measured value > 0, the absolute percentage error is
``|simulated - measured| / measured x 100``. A table reports, per group:
the pairs compared, the median and 90th-percentile absolute % error, the
share within +-25 %, and Spearman's rank correlation between simulated and
measured (NaN with fewer than two pairs or a constant side).
"""

import math

import numpy as np
import pandas as pd

# The columns of error_stats' result, in order.
STATS = ("pairs", "median_ape", "p90_ape", "within_25", "spearman")


def absolute_percentage_errors(simulated, measured):
    """|simulated - measured| / measured x 100 for each pair whose measured
    value is positive and both values are finite; the others are left out."""
    simulated = np.asarray(simulated, dtype=float)
    measured = np.asarray(measured, dtype=float)
    keep = np.isfinite(simulated) & np.isfinite(measured) & (measured > 0)
    return np.abs(simulated[keep] - measured[keep]) / measured[keep] * 100.0


def error_stats(simulated, measured):
    """The statistics of STATS for one set of pairs (a dict)."""
    simulated = np.asarray(simulated, dtype=float)
    measured = np.asarray(measured, dtype=float)
    keep = np.isfinite(simulated) & np.isfinite(measured) & (measured > 0)
    ape = absolute_percentage_errors(simulated, measured)
    if not len(ape):
        return {"pairs": 0, "median_ape": math.nan, "p90_ape": math.nan, "within_25": math.nan,
                "spearman": math.nan}
    # Linear interpolation between order statistics (numpy's default), so that
    # a percentile of a small sample is reproducible by hand.
    return {"pairs": int(len(ape)),
            "median_ape": float(np.median(ape)),
            "p90_ape": float(np.percentile(ape, 90)),
            "within_25": float(np.mean(ape <= 25.0)),
            "spearman": spearman(simulated[keep], measured[keep])}


def spearman(a, b):
    """Spearman's rank correlation (average ranks for ties); NaN when it is
    undefined (fewer than two pairs, or one side constant)."""
    a = pd.Series(np.asarray(a, dtype=float))
    b = pd.Series(np.asarray(b, dtype=float))
    if len(a) < 2 or a.nunique() < 2 or b.nunique() < 2:
        return math.nan
    return float(a.rank().corr(b.rank()))


def error_table(frame, simulated, measured, by):
    """One row of STATS per value of column ``by`` of ``frame`` (in sorted
    order), then a row ``all`` over every pair."""
    rows = []
    for key, group in frame.groupby(by, sort=True):
        rows.append({by: key, **error_stats(group[simulated], group[measured])})
    rows.append({by: "all", **error_stats(frame[simulated], frame[measured])})
    return pd.DataFrame(rows, columns=[by, *STATS])


def median_fold(simulated, measured):
    """The median of |log10(simulated / measured)| over the pairs with both sides > 0 and finite,
    as a factor (10 ** that median: 1.0 is exact, 2.0 is off by a factor of 2 either way)."""
    simulated = np.asarray(simulated, dtype=float)
    measured = np.asarray(measured, dtype=float)
    keep = np.isfinite(simulated) & np.isfinite(measured) & (measured > 0) & (simulated > 0)
    if not keep.any():
        return math.nan
    return float(10 ** np.median(np.abs(np.log10(simulated[keep] / measured[keep]))))
