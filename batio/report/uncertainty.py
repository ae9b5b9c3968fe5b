"""How far a comparison's numbers can be trusted: intervals over replicas, paired tests.

Design notes: docs/internals.md.
"""

from dataclasses import dataclass
import math

import numpy as np
from scipy import stats

LEVEL = 0.95
WILCOXON_MIN_N = 6
ONE_REPLICA = "one replica: no uncertainty estimate"
NO_DIFFERENCE = "no significant difference"


def interval(values, level=LEVEL):
    """(mean, half-width) of the Student t interval of ``values``' mean; half-width NaN below two values."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return math.nan, math.nan
    mean = float(values.mean())
    if len(values) < 2:
        return mean, math.nan
    quantile = float(stats.t.ppf((1 + level) / 2, len(values) - 1))
    return mean, quantile * float(values.std(ddof=1)) / math.sqrt(len(values))


@dataclass(frozen=True)
class Paired:
    """A policy's difference to the baseline over n paired replicas."""
    n: int
    mean: float          # mean of (policy - baseline)
    half_width: float    # of its 95 % interval (NaN for n < 2)
    p_t: float           # paired t test, two-sided (NaN for n < 2)
    p_wilcoxon: float    # Wilcoxon signed-rank, two-sided (NaN below WILCOXON_MIN_N)
    verdict: str


def verdict(mean, half_width, n, lower_is_better=True):
    """The words a table shows for a difference and its interval."""
    if n == 0 or math.isnan(mean):
        return "-"
    if n < 2:
        return ONE_REPLICA
    if mean - half_width <= 0 <= mean + half_width:
        return NO_DIFFERENCE
    better = (mean < 0) == lower_is_better
    return f"significantly {'lower' if mean < 0 else 'higher'} ({'better' if better else 'worse'})"


def paired(values, baseline, lower_is_better=True):
    """``values`` and ``baseline``: the metric per replica, in the same replica order (NaN pairs dropped)."""
    values, baseline = np.asarray(values, dtype=float), np.asarray(baseline, dtype=float)
    both = ~(np.isnan(values) | np.isnan(baseline))
    differences = values[both] - baseline[both]
    n = len(differences)
    mean, half_width = interval(differences)
    p_t = p_wilcoxon = math.nan
    if n >= 2:
        # Equal differences have no spread: the interval is the point, p is 0 unless all are 0.
        sd = float(differences.std(ddof=1))
        p_t = float(stats.ttest_1samp(differences, 0.0).pvalue) if sd > 0 else float(mean == 0)
    if n >= WILCOXON_MIN_N and np.any(differences != 0):
        p_wilcoxon = float(stats.wilcoxon(differences).pvalue)
    return Paired(n, mean, half_width, p_t, p_wilcoxon, verdict(mean, half_width, n, lower_is_better))
