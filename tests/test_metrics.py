"""Run metrics (batio.metrics) cover the user's jobs, not the jobs a scheduler registers."""

import pytest

from batio.metrics import summarize
from conftest import workload

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
