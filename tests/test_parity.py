"""`batio parity`'s job-by-job comparison, on hand-made job tables."""

import hashlib
import json

import pandas as pd
import pytest

from batio import catalog
from batio.engines.embedded.run import simulate
from batio.parity import Pair, compare_jobs, pairs, read_jobs, spec_for, truncated_workload


def jobs(rows):
    return pd.DataFrame(rows, columns=["workload_name", "job_id", "allocated_resources", "starting_time",
                                       "finish_time"])


BATSIM = jobs([("w0", "1", "0", 0.0074, 100.0), ("w0", "2", "1", 10.0, 2000.0), ("w0", "3", "2", 5.0, 50.0),
               ("loads", "1", "3", 1.0, 2.0)])


def test_identical_runs_have_no_deviation():
    row = compare_jobs(BATSIM, BATSIM.copy())
    assert (row["decisions_differ"], row["jobs_off"], row["worst_deviation_s"]) == (0, 0, 0.0)
    assert row["makespan_embedded"] == row["makespan_batsim"] == 2000.0


def test_off_needs_both_the_relative_and_the_absolute_bound():
    embedded = BATSIM.copy()
    embedded.loc[0, "starting_time"] = 0.0080     # 8 % of a tiny time, but 0.6 ms: not off
    embedded.loc[1, "finish_time"] = 2001.0       # 0.05 %: not off
    embedded.loc[2, "finish_time"] = 50.1         # 0.2 % and 0.1 s: off
    row = compare_jobs(embedded, BATSIM)
    assert row["jobs_off"] == 1 and row["worst_job"] == "w0!2"
    assert row["worst_deviation_s"] == pytest.approx(1.0) and row["worst_relative"] == pytest.approx(0.0005)


def test_a_job_never_allocated_in_one_file_moves_no_other_decision(tmp_path):
    """Read as numbers, the file with an empty allocation (a job rejected on
    one engine only) gave every allocation as a float, "3.0" against the
    other file's "3": a whole day of LEA counted 26,435 decisions differing
    instead of 9,450."""
    rejected = BATSIM.copy()
    rejected.loc[2, ["allocated_resources", "starting_time", "finish_time"]] = [None, float("nan"), float("nan")]
    for name, table in (("a", rejected), ("b", BATSIM)):
        table.to_csv(tmp_path / f"{name}_jobs.csv", index=False)
    row = compare_jobs(read_jobs(tmp_path / "a_jobs.csv"), read_jobs(tmp_path / "b_jobs.csv"))
    assert row["decisions_differ"] == 1 and row["jobs_off"] == 0   # job 3 alone


def test_other_resources_or_a_missing_job_are_decisions_not_timing():
    embedded = BATSIM.copy()
    embedded.loc[2, "allocated_resources"] = "5"
    embedded.loc[2, "finish_time"] = 90.0
    embedded = embedded.drop(index=3)
    row = compare_jobs(embedded, BATSIM)
    assert row["decisions_differ"] == 2 and row["jobs_off"] == 0 and row["worst_deviation_s"] == 0.0


def test_truncated_workload_keeps_the_first_jobs_and_their_profiles(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": 2, "jobs": [
        {"id": "late", "subtime": 9, "walltime": 5, "res": 1, "profile": "b"},
        {"id": "early", "subtime": 1, "walltime": 5, "res": 1, "profile": "c"}],
        "profiles": {"a": {"type": "delay", "delay": 1}, "b": {"type": "delay", "delay": 2},
                     "c": {"type": "composed", "seq": ["a"]}}}))
    data = json.loads(truncated_workload(path, 1, tmp_path).read_text())
    assert [job["id"] for job in data["jobs"]] == ["early"] and sorted(data["profiles"]) == ["a", "c"]


def test_every_catalog_policy_has_bundled_inputs():
    for pair in pairs():
        assert catalog.platform_path(pair.platform).is_file() and catalog.workload_path(pair.workload).is_file()
    assert pairs(["easy-ljf"])[0].workload == "catios_bw"


def test_a_pair_runs_with_the_batsim_features_its_scheduler_needs():
    lea = spec_for(Pair("lea", "memcluster486", "memcluster486_slice"), "memcluster486_slice", "p", "embedded")
    assert lea.dynamic_jobs and lea.compute_sharing and lea.mode == "inprocess"
    easy = spec_for(Pair("easy", "memcluster486", "memcluster486_slice"), "memcluster486_slice", "p", "batsim")
    assert easy.mode == "socket"  # real Batsim talks to its scheduler over the socket
    assert not (easy.dynamic_jobs or easy.compute_sharing)


# Real Batsim 4.2.1 (b5463dba, built against Debian's SimGrid 3.32), 2026-11-27:
# `locality-fcfs` on its bundled inputs (memcluster486_slice, 2,743 jobs with the
# loads), the SHA-256 of ``schedule_of`` its _jobs.csv.
BATSIM_LOCALITY_FCFS_SLICE = "24524259ffb45216ebd2d033c2b1d0adcce85abd67ef5960aff65494be4bcdbc"


def schedule_of(jobs_csv):
    """Every job's workload, id, state, hosts, start and finish, as Batsim prints them (%.6f)."""
    table = pd.read_csv(jobs_csv, dtype=str, keep_default_na=False)
    rows = sorted(zip(table.workload_name, table.job_id, table.final_state, table.allocated_resources,
                      (f"{float(t):.6f}" for t in table.starting_time), (f"{float(t):.6f}" for t in table.finish_time)))
    return hashlib.sha256("\n".join(",".join(row) for row in rows).encode()).hexdigest()


def test_jobs_ending_in_one_instant_reach_the_scheduler_as_on_batsim(tmp_path):
    """A reference run: the locality FCFS slice's schedule on the embedded
    engine is real Batsim's, job for job. Its jobs and loads often end in
    the same instant; Batsim's server calls the scheduler once its mailbox
    holds no posted message, which a message sent in the same scheduling
    round is not yet. Counting such a message as coming grouped completions
    that Batsim splits, and put 7 jobs on other nodes."""
    pair = pairs(["locality-fcfs"])[0]
    spec = spec_for(pair, catalog.workload_path(pair.workload), tmp_path / "out", "embedded")
    simulate(spec)
    assert schedule_of(f"{spec.out_prefix}_jobs.csv") == BATSIM_LOCALITY_FCFS_SLICE
