"""What the report's charts show of a run, on hand-made data with known answers."""

import math

import numpy as np
import pandas as pd
import pytest

from batio.report.html_report import occupancy, step_means
from batio.report.metrics import profile_bytes
from batio.report.schedule_data import backfilled, intensity_class, storage_capacity, time_unit


def test_backfilled_means_started_before_a_job_submitted_earlier_that_was_waiting():
    jobs = pd.DataFrame({
        "submission_time": [0.0, 1.0, 2.0, 2.0, 3.0, 4.0],
        "starting_time": [0.0, 50.0, 10.0, 60.0, 55.0, math.nan],
    })
    # job 2 (submitted at 2) starts at 10 while job 1 (submitted at 1) waits until 50;
    # job 3 has the same submit time as job 2, which started earlier: not a jump over it;
    # job 4 starts at 55 before job 3 (60); job 5 never started.
    assert list(backfilled(jobs)) == [False, False, True, False, True, False]


def test_a_job_that_never_starts_counts_as_waiting_to_the_end():
    jobs = pd.DataFrame({"submission_time": [0.0, 1.0], "starting_time": [math.nan, 5.0]})
    assert list(backfilled(jobs)) == [False, True]


def test_profile_bytes_follow_batsims_profile_types():
    profiles = {"w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 2e9, "bytes_to_read": 1e9},
                "c": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 5e8},
                "s": {"type": "data_staging", "nb_bytes": 7e9},
                "job": {"type": "composed", "repeat": 3, "seq": ["c", "w"]},
                "loop": {"type": "composed", "seq": ["loop"]},
                "trace": {"type": "usage_trace"}}
    assert profile_bytes(profiles, "w", 4) == 12e9         # every host reads and writes
    assert profile_bytes(profiles, "c", 4) == 0.0          # traffic between the job's hosts
    assert profile_bytes(profiles, "s", 4) == 7e9          # one transfer
    assert profile_bytes(profiles, "job", 2) == 3 * 6e9
    for unknown in ("loop", "trace", "absent"):
        assert math.isnan(profile_bytes(profiles, unknown, 1))


def test_classes_are_decades_of_the_bytes_a_job_moves_whatever_its_run():
    assert intensity_class(0.0) == "no I/O"
    assert intensity_class(5e8) == "< 1 GB"
    assert intensity_class(5e9) == "1-10 GB"
    assert intensity_class(1e12) == ">= 100 GB"
    assert intensity_class(math.nan) == "bytes unknown"


@pytest.mark.parametrize(("span", "unit"), [(7200, "s"), (7201, "h"), (3 * 86400, "h"), (3 * 86400 + 1, "days")])
def test_time_unit_follows_the_span(span, unit):
    assert time_unit(span)[0] == unit


def test_long_step_functions_become_exact_bin_means():
    rng = np.random.default_rng(3)
    times = np.concatenate([[0.0], np.sort(rng.uniform(0, 100, 999))])
    values = rng.uniform(0, 5, 1000)
    starts, means = step_means(times, values, 120.0, bins=40)
    assert len(starts) == 41 and starts[-1] == 120.0
    fine = np.linspace(0, 120, 1_200_001)[:-1] + 0.5e-4  # midpoints of 0.1 ms steps
    sampled = values[np.searchsorted(times, fine, side="right") - 1]
    assert means[:-1] == pytest.approx(sampled.reshape(40, -1).mean(axis=1), abs=1e-3)
    short_starts, short_values = step_means([0.0, 5.0], [1.0, 2.0], 9.0)
    assert list(short_starts) == [0.0, 5.0, 9.0] and list(short_values) == [1.0, 2.0, 2.0]


def test_occupancy_is_the_exact_busy_fraction_and_io_rate_of_each_cell():
    jobs = pd.DataFrame({"starting_time": [0.0, 12.5], "execution_time": [10.0, 5.0],
                         "allocated_resources": ["0-1", "1"], "bytes": [0.0, 1e10]})
    edges, firsts, busy, rate = occupancy(jobs, nb_hosts=2, end=20.0, bins=4, rows=2)
    assert list(edges) == [0, 5, 10, 15, 20] and list(firsts) == [0, 1]
    assert busy.tolist() == [[1, 1, 0, 0], [1, 1, 0.5, 0.5]]
    assert rate[1, 2] == pytest.approx(2e9) and rate[1, 0] == 0.0  # job 2 moves 10 GB in 5 s
    assert math.isnan(rate[0, 3])  # an idle cell has no I/O rate, not 0
    _, firsts, busy, _ = occupancy(jobs, nb_hosts=2, end=20.0, bins=4, rows=1)
    assert list(firsts) == [0] and busy.tolist() == [[1, 1, 0.25, 0.25]]  # both hosts in one row


def test_capacity_comes_from_the_run_record_or_says_why_not():
    assert storage_capacity({"storage_bandwidth": {"pfs": 1e9}}) == (1e9, None)
    assert storage_capacity({"storage_bandwidth": {"a": 1e9, "b": 2e9}})[0] == 3e9
    capacity, note = storage_capacity({})
    assert capacity is None and "storage_bandwidth" in note
