"""Error statistics of simulated against measured values (batio.twin.accuracy),
against hand-computed values."""

import math

import pandas as pd
import pytest

from batio.twin.accuracy import error_stats, error_table


def test_error_statistics_of_four_pairs_by_hand():
    # APEs: |110-100|/100 = 10 %, |50-100|/100 = 50 %, |20-10|/10 = 100 %, |30-40|/40 = 25 %.
    # Sorted 10, 25, 50, 100: median (25+50)/2 = 37.5; p90 at rank 0.9*3 = 2.7: 50 + 0.7*50 = 85.
    # Within 25 %: 10 and 25 -> 0.5. Ranks sim (110,50,20,30) = 4,3,1,2; measured (100,100,10,40) = 3.5,3.5,1,2:
    # Pearson of the ranks = 0.9486832980505138.
    stats = error_stats([110, 50, 20, 30], [100, 100, 10, 40])
    assert stats["pairs"] == 4
    assert stats["median_ape"] == pytest.approx(37.5)
    assert stats["p90_ape"] == pytest.approx(85.0)
    assert stats["within_25"] == pytest.approx(0.5)
    assert stats["spearman"] == pytest.approx(0.9486832980505138)


def test_pairs_without_a_positive_finite_measurement_are_left_out():
    stats = error_stats([1, 2, 3, float("nan")], [0, -1, 3, 4])
    assert stats["pairs"] == 1
    assert stats["median_ape"] == 0
    assert math.isnan(stats["spearman"])  # one pair: no rank correlation


def test_an_error_table_has_a_row_per_group_and_one_over_all():
    frame = pd.DataFrame({"week": ["a", "a", "b"], "sim": [2.0, 1.0, 3.0], "meas": [1.0, 1.0, 2.0]})
    table = error_table(frame, "sim", "meas", "week")
    assert list(table["week"]) == ["a", "b", "all"]
    assert list(table["pairs"]) == [2, 1, 3]
    assert table.loc[0, "median_ape"] == pytest.approx(50.0)   # 100 % and 0 %
    assert table.loc[2, "median_ape"] == pytest.approx(50.0)   # 100, 0, 50
