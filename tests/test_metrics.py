"""Run metrics (batio.report.metrics) cover the user's jobs, not the jobs a scheduler registers."""

import json
import re

from conftest import workload
import pytest

from batio.report.metrics import format_summary, job_io_slowdowns, summarize

DELAY10 = {"d": {"type": "delay", "delay": 10}}


def test_dynamic_jobs_are_left_out_of_the_run_metrics(simulate_workload):
    # A (10 s) runs at 0 on host 0; the scheduler's own job (70 s) runs at 5 on
    # host 1 and would otherwise set the makespan (75 s) and the mean wait.
    registrations = [{"at": 5, "profile": "p", "profile_def": {"type": "delay", "delay": 70},
                      "job": {"id": "dyn!1", "res": 1, "walltime": 100, "profile": "p"}, "last": True}]
    jobs = [{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"}]
    run = simulate_workload(workload(jobs, DELAY10), dynamic_jobs=True, acknowledge_dynamic_jobs=True,
                            options={"execute": {"w0!A": {"alloc": "0"}, "dyn!1": {"alloc": "1"}},
                                     "register": registrations})
    assert len(run.jobs) == 2
    summary = summarize(run.prefix)
    assert summary["jobs"] == 1
    assert summary["makespan"] == pytest.approx(10, abs=0.1)
    assert summary["mean_wait"] == pytest.approx(0, abs=0.1)


def test_a_run_whose_jobs_were_all_rejected_has_an_empty_summary(tmp_path):
    # Batsim leaves the times of rejected jobs empty.
    (tmp_path / "out_jobs.csv").write_text(
        "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,"
        "final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,"
        "allocated_resources,consumed_energy,metadata\n"
        'A,w0,d,0.000000,1,100.000000,0,REJECTED,,,,,,,,,""\n'
        'B,w0,d,1.000000,1,100.000000,0,REJECTED,,,,,,,,,""\n')
    summary = summarize(tmp_path / "out", nb_compute=4)
    assert (summary["jobs"], summary["succeeded"], summary["makespan"], summary["utilisation"]) == (2, 0, 0.0, 0.0)


HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,"
          "final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,"
          "allocated_resources,consumed_energy,metadata\n")


def _finished_run(tmp_path, jobs, categories=None):
    """Output files of a run of ``jobs`` [(id, submit, wait, execution)] on 4 hosts, its workload
    marking ``categories`` {id: category}; returns the prefix."""
    rows = []
    for job_id, submit, wait, execution in jobs:
        start, finish = submit + wait, submit + wait + execution
        rows.append(f'{job_id},w0,d,{submit},1,1000,1,COMPLETED_SUCCESSFULLY,{start},{execution},{finish},'
                    f'{wait},{wait + execution},{(wait + execution) / execution},0,,""\n')
    (tmp_path / "out_jobs.csv").write_text(HEADER + "".join(rows))
    described = [{"id": job_id, "subtime": submit, "walltime": 1000, "res": 1, "profile": "d",
                  **({"category": categories[job_id]} if categories else {})} for job_id, submit, _, _ in jobs]
    (tmp_path / "w.json").write_text(json.dumps(workload(described, DELAY10)))
    (tmp_path / "out_run.json").write_text(json.dumps({"nb_compute_resources": 4,
                                                       "spec": {"workloads": [str(tmp_path / "w.json")]}}))
    return tmp_path / "out"


def test_bounded_slowdown_is_turnaround_over_the_execution_time_bounded_by_tau(tmp_path):
    # A 2 s job waiting 18 s: stretch 20 / 2 = 10, bounded slowdown 20 / max(2, 10) = 2.
    # A 100 s job waiting 50 s: 150 / 100 = 1.5 for both. A 1 s job waiting 3 s: 4 / 10 < 1, so 1.
    prefix = _finished_run(tmp_path, [("A", 0, 18, 2), ("B", 0, 50, 100), ("C", 5, 3, 1)])
    summary = summarize(prefix)
    assert summary["max_slowdown"] == pytest.approx(10)
    assert summary["max_bounded_slowdown"] == pytest.approx(2)
    assert summary["mean_bounded_slowdown"] == pytest.approx((2 + 1.5 + 1) / 3)
    # tau 1 s: A's 20 / 2 = 10 and C's 4 / 1 = 4.
    assert summarize(prefix, tau=1)["mean_bounded_slowdown"] == pytest.approx((10 + 1.5 + 4) / 3)
    assert "mean / max bounded slowdown (tau 10 s)  1.500 / 2.000" in format_summary(summary)


def test_the_metrics_of_a_categorised_workload_cover_its_evaluated_jobs(tmp_path):
    # Waits 100 (category 0), 10 and 30 (category 1), 1000 (category 2): the evaluated mean is 20,
    # the mean over all jobs 285. The makespan stays the whole run's: D finishes at 400 + 1000 + 5.
    jobs = [("A", 0, 100, 5), ("B", 200, 10, 5), ("C", 300, 30, 5), ("D", 400, 1000, 5)]
    summary = summarize(_finished_run(tmp_path, jobs, {"A": 0, "B": 1, "C": 1, "D": 2}))
    assert (summary["jobs"], summary["evaluated_jobs"], summary["window"]) == (4, 2, "category 1")
    assert (summary["mean_wait"], summary["max_wait"]) == (pytest.approx(20), pytest.approx(30))
    assert summary["makespan"] == pytest.approx(1405)
    assert re.search(r"evaluated +2 of 4 jobs \(category 1\)", format_summary(summary))
    unmarked = summarize(_finished_run(tmp_path, jobs))
    assert (unmarked["mean_wait"], unmarked["window"]) == (pytest.approx(285), "all jobs")


def test_the_io_slowdown_of_a_categorised_workload_covers_its_evaluated_jobs(tmp_path):
    # A (category 0) runs 20 s against 10 s alone, B (category 1) 15 s against 10 s: only B's 1.5 counts.
    (tmp_path / "run").mkdir()
    (tmp_path / "alone").mkdir()
    run = _finished_run(tmp_path / "run", [("A", 0, 0, 20), ("B", 0, 0, 15)], {"A": 0, "B": 1})
    alone = _finished_run(tmp_path / "alone", [("A", 0, 0, 10), ("B", 30, 0, 10)], {"A": 0, "B": 1})
    assert job_io_slowdowns(run, alone).to_dict() == {"B": 1.5}
