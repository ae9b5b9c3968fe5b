"""`batio import jobsio` (jobs joined with their Darshan I/O), the replay policy, `batio validate`.

tests/data/jobsio_tiny.csv is hand-written in the columns of the Theta 2022
records (../shared/data/theta2022/jobs.csv); its values are chosen so that
every mapped number is computed by hand below.
"""

import json
import logging
from pathlib import Path
import shutil

import pytest

from batio.cli import main
from batio.errors import InputError
from batio.importers import import_trace
from batio.twin.validate import headroom, replay

DATA = Path(__file__).parent / "data"
TINY = DATA / "jobsio_tiny.csv"
SHARED = Path(__file__).parents[1] / ".." / "shared" / "data" / "theta2022"
PLATFORM_16 = Path(__file__).parents[1] / "platforms" / "cluster16_pfs.xml"


def test_rows_become_io_phases_and_job_fields():
    workload = import_trace("jobsio", TINY, week="w1", nodes=16)
    jobs = {job["id"]: job for job in workload["jobs"]}
    profiles = workload["profiles"]
    # Job 1: 2 nodes, 128 ranks; 1280 / 2560 / 640 rank-seconds of read / write / metadata.
    one = jobs[1]
    assert (one["subtime"], one["recorded_start"], one["recorded_end"]) == (0, 100, 1100)
    assert (one["measured_read_s"], one["measured_write_s"], one["measured_meta_s"]) == (10.0, 20.0, 5.0)
    assert one["measured_transfer_s"] == 30.0
    assert one["io_walltime_share"] == pytest.approx(35 / 1000)
    assert one["average_bw"] == pytest.approx(6e9 / 35 / 1e9)
    assert [profiles[name] for name in profiles["1"]["seq"]] == [
        {"type": "parallel_homogeneous_pfs", "storage": "pfs", "bytes_to_read": 1_000_000_000},  # 2e9 over 2 hosts
        {"type": "delay", "delay": 970},  # 1000 s run time - 30 s of transfers (metadata stays in the delay)
        {"type": "parallel_homogeneous_pfs", "storage": "pfs", "bytes_to_write": 2_000_000_000}]
    # Job 2 writes only: its phases are the delay (500 - 10) then the write.
    assert [profiles[name] for name in profiles["2"]["seq"]] == [
        {"type": "delay", "delay": 490},
        {"type": "parallel_homogeneous_pfs", "storage": "pfs", "bytes_to_write": 1_000_000_000}]
    # Job 4: no rank count, so no per-rank time; it ran 300 s on a 200 s limit, which becomes 300.
    assert "measured_transfer_s" not in jobs[4] and jobs[4]["walltime"] == 300
    trace = workload["trace"]
    assert trace["skipped"] == {"no_run_time": 1, "other_week": 1}
    assert trace["skipped_lines"] == {"no_run_time": [4], "other_week": [6]}
    assert trace["oddities"] == {"io_time_unknown": 1, "ran_past_walltime": 1}


def test_several_weeks_need_one_chosen():
    with pytest.raises(InputError, match=r"holds 2 weeks \(w1, w2\): choose one with --week"):
        import_trace("jobsio", TINY)


def test_a_malformed_record_names_file_line_and_column(tmp_path, capsys):
    lines = TINY.read_text().splitlines()
    lines[2] = lines[2].replace(",1,64,1.0", ",one,64,1.0", 1)  # nodesUsed of job 2, line 3
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    assert main(["import", "jobsio", str(bad), "--week", "w1", "--out", str(tmp_path / "w.json")]) == 2
    assert capsys.readouterr().err == (f"batio: error: {bad}, line 3, field 'nodesUsed': value 'one' is not a "
                                       "number in ASCII decimal digits\n")
    lines[2] = lines[2][:lines[2].rindex(",")]  # a field short
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 3, field 'cleaned_writtenBytes': 24 fields for the header's 25"):
        import_trace("jobsio", bad, week="w1")


def test_runs_file_sets_the_ranks_doing_io_at_once(tmp_path):
    # Job 1's 128 ranks in two launches of 64, one after the other (concurrency 1):
    # 64 ranks at once, so its per-rank times double.
    runs = tmp_path / "runs.csv"
    runs.write_text("week,job_id,run_id,nprocs,dStartTime,dEndTime,runtime,readBytes,writtenBytes\n"
                    "w1,1,0,64,1000,1099,100,0,0\nw1,1,1,64,1100,1199,100,0,0\nw2,5,0,64,0,9,10,0,0\n")
    workload = import_trace("jobsio", TINY, week="w1", runs=runs)
    one = next(job for job in workload["jobs"] if job["id"] == 1)
    assert (one["io_ranks"], one["measured_transfer_s"]) == (64.0, 60.0)
    assert workload["trace"]["darshan_runs"] == {"file": str(runs), "jobs_with_runs": 1, "other_weeks": 1,
                                                 "jobs_not_imported": 0}
    assert workload["trace"]["oddities"]["runs_count_differs"] == 1  # runsCount says 1, the file 2


@pytest.mark.parametrize("rows, said", [
    ("", "(a header only)"),
    ("w2,5,0,64,0,9,10,0,0\n", "of week w1 (1 of other weeks)"),
])
def test_a_runs_file_without_a_run_of_the_week_is_a_warning(tmp_path, caplog, rows, said):
    runs = tmp_path / "runs.csv"
    runs.write_text("week,job_id,run_id,nprocs,dStartTime,dEndTime,runtime,readBytes,writtenBytes\n" + rows)
    with caplog.at_level(logging.WARNING, logger="batio.importers.jobsio"):
        workload = import_trace("jobsio", TINY, week="w1", runs=runs)
    assert caplog.messages == [f"{runs}: no Darshan run {said}: every job's launches are taken as running at once"]
    assert workload["trace"]["darshan_runs"]["jobs_with_runs"] == 0


def test_replay_starts_jobs_at_their_recorded_times(tmp_path):
    workload = tmp_path / "w1.json"
    assert main(["import", "jobsio", str(TINY), "--week", "w1", "--nodes", "16", "--out", str(workload)]) == 0
    jobs = replay(PLATFORM_16, workload, tmp_path / "out" / "out").set_index("job_id")
    recorded = {job["id"]: job["recorded_start"] for job in json.loads(workload.read_text())["jobs"]}
    for job_id, start in recorded.items():  # pybatsim stamps a decision a few ms after the event
        assert jobs.loc[str(job_id), "starting_time"] == pytest.approx(start, abs=0.01)
    # cluster16_pfs: 1 GB/s to the file system. Job 1 reads 2e9 B (2 s) and writes 4e9 B (4 s) beside
    # its 970 s delay; job 2 writes 1e9 B (1 s) beside its 490 s.
    assert jobs.loc["1", "execution_time"] == pytest.approx(976.0, abs=0.01)
    assert jobs.loc["2", "execution_time"] == pytest.approx(491.0, abs=0.01)


@pytest.mark.skipif(not (SHARED / "jobs.csv").exists(), reason="needs ../shared/data/theta2022")
def test_shared_theta_records(tmp_path):
    """The first records of the Theta week 2022-01-15 (and its launches), copied and imported."""
    lines = (SHARED / "jobs.csv").read_text().splitlines()
    sample = tmp_path / "jobs.csv"
    sample.write_text("\n".join(lines[:6]) + "\n")
    shutil.copy(SHARED / "darshan_runs.csv", tmp_path / "runs.csv")
    workload = import_trace("jobsio", sample, runs=tmp_path / "runs.csv", nodes=4392)
    first = workload["jobs"][0]
    # Job 574381: submitted 2022-01-12 05:04:47, started 2022-01-15 01:01:03, 85,315 s on 2048 nodes;
    # 131,072 ranks in 4 launches running at once (darshan_runs.csv), so every rank did I/O.
    assert first["id"] == 574381 and first["res"] == 2048 and first["recorded_start"] == 244576
    assert first["io_ranks"] == pytest.approx(131072, rel=0.01)
    assert first["measured_write_s"] == pytest.approx(972515498.5505399 / first["io_ranks"], rel=1e-6)
    assert workload["trace"]["skipped"] == {}


def test_headroom_is_the_io_share_of_node_hours():
    workload = import_trace("jobsio", TINY, week="w1", nodes=16)
    bound = headroom(workload, machine_nodes=16, week_seconds=10000)
    # Node-seconds held: 2 x 1000 + 1 x 500 + 3 x 300 = 3400. In I/O, all ranks at once:
    # job 1 2 x 35 s, job 2 1 x 11 s (job 4's time is unknown) = 81; one rank at a time:
    # job 1 2 x min(1000, 35 x 128), job 2 1 x min(500, 11 x 64) = 2500.
    assert bound["jobs_with_io_times"] == 2 and bound["node_hours"] == pytest.approx(3400 / 3600)
    assert bound["io_share_low"] == pytest.approx(81 / 3400)
    assert bound["io_share_high"] == pytest.approx(2500 / 3400)
    assert bound["jobs_share_of_machine"] == pytest.approx(3400 / 160000)
    assert bound["io_share_of_machine_low"] == pytest.approx(81 / 160000)


def test_a_week_without_measured_transfer_times_is_refused_naming_it(tmp_path, capsys):
    # Job 4 of w1 has no rank count (io_time_unknown): a week of only such jobs has nothing to validate.
    lines = TINY.read_text().splitlines()
    header, rows = lines[0], lines[1:]
    only_unknown = [row for row in rows if row.split(",")[0] == "w1"][3:4]
    source = tmp_path / "unknown.csv"
    source.write_text("\n".join([header, *only_unknown]) + "\n")
    workload = tmp_path / "u.json"
    assert main(["import", "jobsio", str(source), "--nodes", "16", "--out", str(workload)]) == 0
    capsys.readouterr()
    other = import_trace("jobsio", TINY, week="w1", nodes=16)
    other["trace"]["week"] = "another week"  # a training week with measured jobs
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert main(["validate", "--platform", str(PLATFORM_16), "--workload", str(workload),
                 "--train", str(tmp_path / "other.json"), "--out", str(tmp_path / "v")]) == 2
    assert capsys.readouterr().err.startswith(f"batio: error: {workload}: no job with bytes and a measured transfer")
