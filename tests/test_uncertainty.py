"""Intervals over replicas and paired differences to the baseline (batio.report.uncertainty),
and how reports show them."""

import math

import pandas as pd
import pytest

from batio.report import comparison
from batio.report.uncertainty import NO_DIFFERENCE, ONE_REPLICA, interval, paired

T_975_2 = 4.302652729911275  # Student t quantile 0.975 with 2 degrees of freedom (tables)


def test_interval_of_a_tiny_sample_is_students():
    # 1, 2, 3: mean 2, sd 1, half-width t(0.975, 2) x 1 / sqrt(3) = 2.4841
    mean, half_width = interval([1, 2, 3])
    assert mean == 2
    assert half_width == pytest.approx(T_975_2 / math.sqrt(3), rel=1e-9)  # the table value, to 10 digits
    assert half_width == pytest.approx(2.4841, abs=1e-4)
    assert math.isnan(interval([5])[1])  # one value: no interval


def test_paired_differences_are_taken_replica_by_replica():
    # Differences 1, 2, 3 although the policy's values spread far more than they do.
    result = paired([11, 102, 1003], [10, 100, 1000])
    assert (result.n, result.mean) == (3, 2)
    assert result.half_width == pytest.approx(T_975_2 / math.sqrt(3))
    # t = 2 / (1 / sqrt 3) = 3.4641 with 2 degrees of freedom: p = 0.0742 (two-sided)
    assert result.p_t == pytest.approx(0.07418, abs=1e-4)
    assert math.isnan(result.p_wilcoxon)  # 3 pairs: the signed-rank test cannot reach 5 %
    assert result.verdict == NO_DIFFERENCE  # [-0.48, 4.48] covers 0


def test_a_difference_whose_interval_excludes_zero_is_significant():
    # Differences -10, -12, -11: mean -11, sd 1, interval -11 +- 2.48: lower waits are better.
    result = paired([90, 88, 89], [100, 100, 100])
    assert result.verdict == "significantly lower (better)"
    assert result.p_t < 0.05
    assert paired([0.9, 0.88, 0.89], [0.8, 0.8, 0.8], lower_is_better=False).verdict == \
        "significantly higher (better)"
    assert paired([5], [3]).verdict == ONE_REPLICA


def _results(waits, baseline_waits):
    rows = []
    for policy, values in (("base", baseline_waits), ("new", waits)):
        for seed, value in enumerate(values, start=1):
            rows.append({"platform": "p", "workload": "w", "engine": "embedded", "policy": policy, "seed": seed,
                         "status": "ok", "mean_wait": value, "jobs": 10, "evaluated_jobs": 10, "window": "all jobs"})
    return pd.DataFrame(rows)


def test_the_summary_table_shows_intervals_and_verdicts():
    summary = comparison.summary_table(_results([11, 102, 1003], [10, 100, 1000]), baseline="base")
    new = summary.set_index("policy").loc["new"]
    assert new["mean_wait_diff"] == 2 and new["mean_wait_verdict"] == NO_DIFFERENCE
    # 11, 102, 1003: mean 372, sd sqrt(601382 / 2) = 548.35, half-width 4.3027 x 548.35 / sqrt(3) = 1362.18
    assert new["mean_wait_ci"] == pytest.approx(1362.18, abs=0.01)
    text = comparison.format_text(summary, baseline="base")
    assert "372.0 ± 1362.2 (1.01x)" in text
    assert "Means over 3 replicas" in text
    assert "2.0 ± 2.5" in text and NO_DIFFERENCE in text


def test_one_replica_says_there_is_no_uncertainty_estimate():
    summary = comparison.summary_table(_results([5], [3]), baseline="base")
    text = comparison.format_text(summary, baseline="base")
    assert "One replica: no uncertainty estimate" in text and "±" not in text
    assert summary.set_index("policy").loc["new", "mean_wait_verdict"] == ONE_REPLICA
