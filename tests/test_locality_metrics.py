"""Paper 004's metrics (batio.schedulers.locality.metrics) on a hand-written run."""

import json

import pandas as pd
import pytest

from batio.engines.embedded.outputs import JOBS_COLUMNS
from batio.errors import InputError
from batio.schedulers.locality import metrics as lm

BANDWIDTH = 1e8  # bytes/s: a 6.4 GB file loads in 64 s


def _row(job_id, workload, subtime, start, finish, metadata):
    row: dict = dict.fromkeys(JOBS_COLUMNS, 0)
    row.update(job_id=job_id, workload_name=workload, submission_time=subtime,
               starting_time=start, finish_time=finish, final_state="COMPLETED_SUCCESSFULLY", metadata=metadata)
    return row


@pytest.fixture
def run(tmp_path):
    # Job 1 (category 1) decided at 10 on node 3, loads 6.4 GB (64 s), runs 100 s.
    # Job 2 (category 1) decided at 30 on node 3, waits for job 1's load (case 3): computes from 74.
    # Job 3 (category 0) decided at 0, file in memory (case 1).
    jobs = [
        {"id": 1, "subtime": 0, "walltime": 500, "res": 1, "profile": "d100", "cores": 1, "file": "f1",
         "file_bytes": 6.4e9, "category": 1},
        {"id": 2, "subtime": 20, "walltime": 500, "res": 1, "profile": "d100", "cores": 2, "file": "f1",
         "file_bytes": 6.4e9, "category": 1},
        {"id": 3, "subtime": 0, "walltime": 500, "res": 1, "profile": "d50", "cores": 4, "file": "f9",
         "file_bytes": 25.6e9, "category": 0},
    ]
    workload = {"nb_res": 4, "jobs": jobs, "profiles": {"d100": {"type": "delay", "delay": 100},
                                                        "d50": {"type": "delay", "delay": 50}}}
    (tmp_path / "w.json").write_text(json.dumps(workload))
    rows = [
        _row(3, "w0", 0, 0, 50, "node=0;decided=0;case=1;load=;reused=1"),
        _row(0, "loads", 10, 10, 74, ""),
        _row(1, "w0", 0, 74, 174, "node=3;decided=10;case=2;load=loads!0;reused=0"),
        _row(2, "w0", 20, 74, 174, "node=3;decided=30;case=3;load=loads!0;reused=1"),
    ]
    pd.DataFrame(rows, columns=JOBS_COLUMNS).to_csv(tmp_path / "out_jobs.csv", index=False)
    return tmp_path


def test_job_table_and_summary_match_hand_computed_values(run):
    table = lm.job_table(run / "out", run / "w.json", BANDWIDTH)
    assert list(table.index) == ["w0!3", "w0!1", "w0!2"]  # the load job is not a user job
    job1, job2 = table.loc["w0!1"], table.loc["w0!2"]
    assert job1["load_wait"] == 64 and job2["load_wait"] == 44
    assert job2["queue_time"] == 10
    # ReferenceFlow = 100 + 6.4e9 / 1e8 = 164; flows 174 and 154.
    assert job1["stretch"] == pytest.approx(174 / 164)
    assert job2["stretch"] == pytest.approx(154 / 164)
    summary = lm.summary(table)
    assert summary["evaluated_jobs"] == 2
    assert summary["mean_stretch"] == pytest.approx((174 + 154) / 2 / 164)
    assert summary["total_load_wait"] == 108
    assert summary["reused_files"] == 1
    assert summary["max_queue_time"] == 10


def test_cluster_usage_counts_cores_queued_running_and_loading(run):
    usage = lm.cluster_usage(lm.job_table(run / "out", run / "w.json", BANDWIDTH)).set_index("time")
    assert usage.loc[0, ["queued", "running", "loading"]].tolist() == [1, 4, 0]  # job 1 queued, job 3 runs
    assert usage.loc[10, ["queued", "running", "loading"]].tolist() == [0, 5, 1]
    assert usage.loc[30, ["queued", "running", "loading"]].tolist() == [0, 7, 3]
    assert usage.loc[50, ["queued", "running", "loading"]].tolist() == [0, 3, 3]
    assert usage.loc[74, ["queued", "running", "loading"]].tolist() == [0, 3, 0]
    assert usage.loc[174, ["queued", "running", "loading"]].tolist() == [0, 0, 0]


def test_stretch_ratio_is_baseline_over_variant_on_evaluated_jobs(run):
    table = lm.job_table(run / "out", run / "w.json", BANDWIDTH)
    better = table.copy()
    better["stretch"] = table["stretch"] / 2
    ratios = lm.stretch_ratio(table, better)
    assert sorted(ratios.index) == ["w0!1", "w0!2"]
    assert ratios["ratio"].tolist() == pytest.approx([2.0, 2.0])


def test_a_run_without_locality_metadata_is_a_clear_error(run):
    rows = pd.read_csv(run / "out_jobs.csv", keep_default_na=False)
    rows["metadata"] = ""
    rows.to_csv(run / "out_jobs.csv", index=False)
    with pytest.raises(InputError, match=r"metadata.*schedulers/locality/locality.py"):
        lm.job_table(run / "out", run / "w.json", BANDWIDTH)
