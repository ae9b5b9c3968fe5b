"""`batio import`: SWF and sacct traces to Batsim workloads, checked against hand-computed values."""

import hashlib
import json
from pathlib import Path
import shutil

from conftest import DATA
import pandas as pd
import pytest

from batio import catalog
from batio.cli import main
from batio.errors import InputError
from batio.importers import import_trace
from batio.importers.sacct import parse_duration
from batio.inputs.workload import load_workload

SWF = DATA / "small.swf"
SACCT = DATA / "small.sacct"
KTH = Path(__file__).parent.parent.parent / "shared" / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf"


def by_id(workload):
    return {job["id"]: job for job in workload["jobs"]}


def summary(workload, *keys):
    return [[job[key] for key in keys] for job in workload["jobs"]]


# small.swf: MaxProcs 8, 2 processors per node -> 4 nodes; the first kept job (1) is submitted at 100.
# job 2: no allocated count, 3 requested -> 2 nodes; no requested time -> walltime run time + 1 = 31.
# job 3: 8 processors -> 4 nodes; runs 200 s past its 100 s request (kept: killed at its walltime).
# Skipped: 4 cancelled, 5 runs 0 s, 6 asks 10 > 8 processors, 7 has no run time, 8 no processor count,
# and the last line is a partial-execution record (status 3) of job 3.
SWF_JOBS = [[1, 0, 120, 2, "delay50"], [2, 30, 31, 2, "delay30"], [3, 60, 100, 4, "delay200"],
            [9, 360, 30, 2, "delay15"], [10, 400, 200, 1, "delay80"]]
SWF_SKIPPED = {"cancelled": 1, "zero_or_negative_run_time": 1, "larger_than_machine": 1, "missing_run_time": 1,
               "missing_processors": 1, "partial_execution_record": 1}


def test_swf_fixture_gives_hand_computed_jobs_and_skip_counts():
    workload = import_trace("swf", SWF, cores_per_node=2)
    assert workload["nb_res"] == 4
    assert summary(workload, "id", "subtime", "walltime", "res", "profile") == SWF_JOBS
    assert {name: p["delay"] for name, p in workload["profiles"].items()} == {
        "delay15": 15, "delay30": 30, "delay50": 50, "delay80": 80, "delay200": 200}
    trace = workload["trace"]
    assert (trace["records"], trace["jobs"]) == (11, 5)
    assert trace["skipped"] == SWF_SKIPPED
    assert trace["skipped_lines"] == {"cancelled": [14], "zero_or_negative_run_time": [15], "larger_than_machine": [16],
                                      "missing_run_time": [17], "missing_processors": [18],
                                      "partial_execution_record": [21]}
    assert trace["oddities"] == {"processors_from_request": 1, "walltime_from_run_time": 1,
                                 "run_time_above_requested_time": 1}
    # -1 counted per field over the 11 job lines.
    assert trace["missing_values"]["wait_time"] == 2 and trace["missing_values"]["requested_time"] == 1
    assert trace["missing_values"]["status"] == 1 and trace["missing_values"]["partition_number"] == 11
    assert trace["origin"] == 100 and trace["origin_date"] == "2001-09-09T03:48:20+02:00"
    assert trace["header"]["MaxProcs"] == "8" and "Information" in trace["header"]
    # every SWF field that is not missing travels with the job
    assert by_id(workload)[9] == {"id": 9, "subtime": 360, "walltime": 30, "res": 2, "profile": "delay15",
                                  "processors": 3, "wait_time": 50, "allocated_processors": 3,
                                  "average_cpu_time": 12.5, "used_memory": 2048, "requested_processors": 4,
                                  "requested_time": 30, "requested_memory": 4096, "status": 1, "user": 4,
                                  "group": 3}
    assert by_id(workload)[10]["preceding_job"] == 9 and by_id(workload)[10]["think_time"] == 40


def test_swf_window_marks_warmup_evaluated_and_cooldown_categories():
    # cut = 130 - 30 = 100: job 1 warm-up (0), 2 and 3 evaluated (1), 9 cool-down (2: 400 <= 460 < 500),
    # job 10 (500) after the cool-down. Time 0 is the cut.
    workload = import_trace("swf", SWF, cores_per_node=2, start="130", end="400", warmup="30", cooldown="100s")
    assert summary(workload, "id", "subtime", "category") == [[1, 0, 0], [2, 30, 1], [3, 60, 1], [9, 360, 2]]
    trace = workload["trace"]
    assert trace["skipped"] == {**SWF_SKIPPED, "after_window": 1}
    assert trace["jobs_per_category"] == {"-1": 0, "0": 1, "1": 2, "2": 1}
    assert (trace["warmup_window"], trace["evaluated_window"], trace["cooldown_window"]) == ([0, 30], [30, 300],
                                                                                              [300, 400])


def test_swf_job_still_queued_at_the_cut_is_category_minus_one_submitted_at_the_cut():
    # --from 480, no warm-up: job 9 (submitted 460, started 460 + 50 = 510 >= 480) waited at the cut.
    workload = import_trace("swf", SWF, cores_per_node=2, start="480", warmup="0")
    assert summary(workload, "id", "subtime", "category") == [[9, 0, -1], [10, 20, 1]]
    assert workload["trace"]["skipped"]["before_window"] == 3


def test_swf_dates_are_read_in_the_trace_time_zone():
    # UnixStartTime 1000000000 is 2001-09-09T01:46:40Z, 03:46:40 in Stockholm (CEST): 130 s later is 03:48:50.
    by_seconds = import_trace("swf", SWF, cores_per_node=2, start="150")
    for date in ("2001-09-09T03:49:10", "2001-09-09T01:49:10+00:00"):
        assert import_trace("swf", SWF, cores_per_node=2, start=date)["jobs"] == by_seconds["jobs"]
    # time 0 is --from: jobs 3, 9, 10 at 160, 460, 500
    assert summary(by_seconds, "id", "subtime") == [[3, 10], [9, 310], [10, 350]]
    assert "category" not in by_seconds["jobs"][0]


def test_swf_max_jobs_nodes_and_cancelled_options():
    capped = import_trace("swf", SWF, cores_per_node=2, max_jobs=2)
    assert [job["id"] for job in capped["jobs"]] == [1, 2] and capped["trace"]["skipped"]["beyond_max_jobs"] == 3
    small = import_trace("swf", SWF, cores_per_node=2, nodes=2)
    assert small["nb_res"] == 2 and small["trace"]["skipped"]["larger_than_machine"] == 2  # jobs 6 and 3
    assert small["trace"]["machine_nodes_from"] == "--nodes"
    kept = import_trace("swf", SWF, cores_per_node=2, keep_cancelled=True)
    assert by_id(kept)[4]["subtime"] == 100 and by_id(kept)[4]["status"] == 5
    assert kept["trace"]["oddities"]["cancelled_kept"] == 1 and "cancelled" not in kept["trace"]["skipped"]
    one_core = import_trace("swf", SWF)  # 1 processor per node: 8 nodes, job 6 (10 processors) still too large
    assert one_core["nb_res"] == 8 and by_id(one_core)[3]["res"] == 8 and by_id(one_core)[2]["res"] == 3


def test_swf_sample_is_a_hash_of_seed_and_job_id():
    # sha256("1:1") starts with 0xd6b5...: 0.8387 of the way to 2**64, not in a 0.5 sample.
    assert int.from_bytes(hashlib.sha256(b"1:1").digest()[:8], "big") / 2 ** 64 == pytest.approx(0.8387, abs=1e-4)
    first = import_trace("swf", SWF, cores_per_node=2, sample=0.5, seed=0)
    assert [job["id"] for job in first["jobs"]] == [3, 9, 10]
    assert first["trace"]["skipped"]["not_sampled"] == 2 and first["trace"]["sample"] == {"fraction": 0.5, "seed": 0}
    assert import_trace("swf", SWF, cores_per_node=2, sample=0.5, seed=0) == first
    assert [job["id"] for job in import_trace("swf", SWF, cores_per_node=2, sample=0.5, seed=1)["jobs"]] == [2]
    assert len(import_trace("swf", SWF, cores_per_node=2, sample=1.0)["jobs"]) == 5


@pytest.mark.parametrize("line, message", [
    ("  1 100 10 50 4 -1 -1 4 120 -1 1 1 1 -1 -1 -1 -1",
     "bad.swf, line 2, field 'think_time (field 18)': an SWF job line has 18 fields, this one has 17"),
    ("  1 100 10 5x 4 -1 -1 4 120 -1 1 1 1 -1 -1 -1 -1 -1",
     "bad.swf, line 2, field 'run_time (field 4)': value '5x' is not a number in ASCII decimal digits"),
    ("  1 -5 10 50 4 -1 -1 4 120 -1 1 1 1 -1 -1 -1 -1 -1",
     "bad.swf, line 2, field 'submit_time (field 2)': submit time -5 is negative"),
])
def test_malformed_swf_line_is_one_line_error_naming_file_line_and_field(tmp_path, capsys, line, message):
    bad = tmp_path / "bad.swf"
    bad.write_text(f"; MaxProcs: 8\n{line}\n")
    with pytest.raises(InputError) as error:
        import_trace("swf", bad)
    assert str(error.value) == str(bad.parent / message)
    assert main(["import", "swf", str(bad), "--out", str(tmp_path / "w.json")]) == 2
    assert capsys.readouterr().err == f"batio: error: {bad.parent / message}\n"
    assert not (tmp_path / "w.json").exists()


def test_repeated_swf_job_number_is_an_error(tmp_path):
    bad = tmp_path / "dup.swf"
    bad.write_text("1 0 0 5 1 -1 -1 1 9 -1 1 1 1 -1 -1 -1 -1 -1\n1 3 0 5 1 -1 -1 1 9 -1 1 1 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(InputError, match=r"dup.swf, line 2, field 'job_number \(field 1\)': job number 1 already "
                                         r"on line 1"):
        import_trace("swf", bad)


def test_import_options_out_of_range_are_errors():
    for kwargs, option in (({"sample": 0}, "--sample"), ({"start": "500", "end": "400"}, "--to"),
                           ({"warmup": "ten"}, "--warmup"), ({"cores_per_node": 0}, "--cores-per-node"),
                           ({"start": "tomorrow"}, "--from"), ({"nodes": 0}, "--nodes")):
        with pytest.raises(InputError, match=f"^{option}: "):
            import_trace("swf", SWF, **kwargs)
    with pytest.raises(InputError, match="--cores-per-node: applies to SWF traces only"):
        import_trace("sacct", SACCT, cores_per_node=2)


# small.sacct: time 0 is job 101's submission, 2024-03-01T10:00:00. Steps 101.batch and 101.0 are
# skipped, 104 was cancelled, 105 pending, 108 running, 107 ran 0 s. 106's Partition_Limit: no walltime.
SACCT_JOBS = [[101, 0, 3600, 2, "delay600"], [102, 60, 1800, 4, "delay1800"], [103, 150, 172800, 1, "delay93600"],
              [106, 300, -1, 8, "delay1200"], ["109_1", 480, 900, 1, "delay600"]]


def test_sacct_fixture_gives_hand_computed_jobs_and_skip_counts():
    workload = import_trace("sacct", SACCT)
    assert workload["nb_res"] == 8  # the largest job, without --nodes
    assert summary(workload, "id", "subtime", "walltime", "res", "profile") == SACCT_JOBS
    trace = workload["trace"]
    assert (trace["records"], trace["jobs"]) == (11, 5)
    assert trace["skipped"] == {"job_step": 2, "cancelled": 1, "not_ended": 2, "zero_or_negative_run_time": 1}
    assert trace["skipped_lines"]["job_step"] == [3, 4] and trace["skipped_lines"]["not_ended"] == [8, 11]
    # 102 ran its whole 30 min time limit (TIMEOUT): the simulation kills it at its walltime too.
    assert trace["oddities"] == {"ended_at_time_limit": 1, "partition_limit_no_walltime": 1}
    assert [job["id"] for job in workload["jobs"] if job.get("ended_at_time_limit")] == [102]
    assert trace["origin_date"] == "2024-03-01T10:00:00"  # the cluster's local time, as sacct wrote it
    jobs = by_id(workload)
    assert jobs[101]["command"] == "srun -N2 lmp -in in.lj" and jobs[101]["user"] == "alice"
    assert jobs[103]["state"] == "FAILED" and jobs[102]["state"] == "TIMEOUT"
    assert jobs["109_1"]["command"] == "sbatch --array=1 a.sh | tee log"  # a '|' inside the last column


def test_sacct_parsable_with_a_trailing_separator_reads_the_same(tmp_path):
    parsable = tmp_path / "p.sacct"
    parsable.write_text("".join(line + "|\n" for line in SACCT.read_text().splitlines()))
    assert import_trace("sacct", parsable)["jobs"] == import_trace("sacct", SACCT)["jobs"]


def test_sacct_nodes_window_and_cancelled():
    small = import_trace("sacct", SACCT, nodes=4)
    assert small["nb_res"] == 4 and small["trace"]["skipped"]["larger_than_machine"] == 1  # job 106, 8 nodes
    kept = import_trace("sacct", SACCT, keep_cancelled=True)
    assert by_id(kept)[104] == {"id": 104, "subtime": 180, "walltime": -1, "res": 1, "profile": "delay60",
                                "state": "CANCELLED by 1001", "name": "py", "user": "alice", "command": "python x.py"}
    assert kept["trace"]["oddities"] == {"partition_limit_no_walltime": 1, "unlimited_no_walltime": 1,
                                         "cancelled_kept": 1, "ended_at_time_limit": 1}
    window = import_trace("sacct", SACCT, start="2024-03-01T10:02:00", end="2024-03-01T10:06:00", warmup="2m")
    assert summary(window, "id", "subtime", "category") == [[101, 0, 0], [102, 60, 0], [103, 150, 1],
                                                            [106, 300, 1]]


@pytest.mark.parametrize("text, seconds", [("00:10:00", 600), ("1-02:00:00", 93600), ("01:00", 60), ("10", 600),
                                           ("2-00", 172800), ("1-02:30", 95400), ("00:00:01.5", 1.5),
                                           ("UNLIMITED", None), ("Partition_Limit", None), ("INFINITE", None)])
def test_slurm_time_formats(text, seconds):
    assert parse_duration(text, "f", "Timelimit") == seconds


SACCT_HEADER = "JobID|JobName|User|Submit|Start|End|Elapsed|Timelimit|NNodes|State"
GOOD = "7|x|u|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:01:00|00:01:00|00:05:00|1|COMPLETED"


@pytest.mark.parametrize("line, message", [
    (GOOD.replace("00:01:00|00:05", "1:2:3:4|00:05"),
     "line 2, field 'Elapsed': '1:2:3:4' is not a Slurm time ([D-]HH:MM:SS, MM:SS, minutes, UNLIMITED or "
     "Partition_Limit)"),
    (GOOD.replace("2024-03-01T10:00:00|2024", "yesterday|2024", 1),
     "line 2, field 'Submit': 'yesterday' is not a date such as 2024-03-01T12:34:56"),
    (GOOD.replace("COMPLETED", "EXPLODED"), "line 2, field 'State': unknown job state 'EXPLODED'"),
    (GOOD.replace("|1|COMPLETED", "|two|COMPLETED"),
     "line 2, field 'NNodes': node count 'two' is not a whole number from 0 to 2147483647 in ASCII digits"),
    (GOOD + "|extra", "line 2, field 'State': 11 fields for the header's 10 (fields are separated by '|': "
                      "export with --parsable2)"),
    (GOOD + "\n" + GOOD, "line 3, field 'JobID': job 7 already on line 2 (export without --duplicates)"),
])
def test_malformed_sacct_line_is_one_line_error_naming_file_line_and_field(tmp_path, capsys, line, message):
    bad = tmp_path / "bad.sacct"
    bad.write_text(f"{SACCT_HEADER}\n{line}\n")
    with pytest.raises(InputError) as error:
        import_trace("sacct", bad)
    assert str(error.value) == f"{bad}, {message}"
    assert main(["import", "sacct", str(bad), "--out", str(tmp_path / "w.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_sacct_header_must_have_the_documented_fields(tmp_path):
    bad = tmp_path / "bad.sacct"
    bad.write_text("JobID|Submit|State\n1|2024-03-01T10:00:00|COMPLETED\n")
    with pytest.raises(InputError, match=r"bad.sacct, line 1, field 'Start': the header lacks Start, End, Elapsed, "
                                         r"Timelimit, NNodes"):
        import_trace("sacct", bad)


def test_cli_import_writes_a_workload_the_engine_loads_and_prints_the_counts(tmp_path, capsys):
    out = tmp_path / "w" / "small.json"
    assert main(["import", "swf", str(SWF), "--cores-per-node", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "small.swf (swf): 11 records read, 5 jobs kept on 4 nodes (header MaxProcs 8 / 2 cores " \
                         "per node)"
    assert printed[1] == ("skipped 6: cancelled 1, larger_than_machine 1, missing_processors 1, missing_run_time 1, "
                          "partial_execution_record 1, zero_or_negative_run_time 1")
    written = json.loads(out.read_text())
    assert summary(written, "id", "subtime", "walltime", "res", "profile") == SWF_JOBS
    assert len(out.read_text().splitlines()) == 8 + 5 + 5  # one line per job and per profile, 8 others
    loaded = load_workload(out, "w0")
    assert [job.subtime for job in loaded.jobs] == [0, 30, 60, 360, 400]


def test_imported_jobs_run_on_a_generated_platform_as_the_trace_says(tmp_path, capsys):
    platform, workload = tmp_path / "m4.xml", tmp_path / "small.json"
    assert main(["platform", "--nodes", "4", "--cores", "2", "--speed", "1Gf", "--node-link", "10GBps",
                 "--pfs-bandwidth", "1GBps", "--out", str(platform)]) == 0
    assert main(["import", "swf", str(SWF), "--cores-per-node", "2", "--out", str(workload)]) == 0
    assert main(["run", "--platform", str(platform), "--workload", str(workload), "--scheduler", "easy",
                 "--out", str(tmp_path / "run"), "--quiet"]) == 0
    capsys.readouterr()
    jobs = pd.read_csv(tmp_path / "run" / "out_jobs.csv").set_index("job_id")
    # Job 2's walltime is its run time + 1 s: it completes. Job 3 runs 200 s past a 100 s request: killed.
    assert jobs["final_state"].to_dict() == {1: "COMPLETED_SUCCESSFULLY", 2: "COMPLETED_SUCCESSFULLY",
                                             3: "COMPLETED_WALLTIME_REACHED", 9: "COMPLETED_SUCCESSFULLY",
                                             10: "COMPLETED_SUCCESSFULLY"}
    assert jobs.loc[[1, 2, 9, 10], "execution_time"].tolist() == [50, 30, 15, 80]
    # job 3 needs all 4 nodes: it waits for job 2 (30 + 30 = 60), and job 1 ended at 50.
    assert jobs.loc[3, "starting_time"] == pytest.approx(60, abs=1e-3)


needs_kth = pytest.mark.skipif(not KTH.is_file(), reason=f"no {KTH}")


@needs_kth
def test_kth_trace_counts():
    workload = import_trace("swf", KTH)
    trace = workload["trace"]
    # 28,476 job lines: 8 ran 0 s, job 27313 has no processor count; 475 ran past their request.
    assert (trace["records"], trace["jobs"]) == (28476, 28467)
    assert trace["skipped"] == {"zero_or_negative_run_time": 8, "missing_processors": 1}
    assert trace["skipped_lines"]["missing_processors"] == [27323]
    assert trace["oddities"] == {"run_time_above_requested_time": 475}
    assert workload["nb_res"] == 100 and trace["machine_nodes_from"] == "header MaxProcs 100 / 1 cores per node"
    assert trace["origin"] == 599850 and workload["jobs"][0]["id"] == 15
    assert trace["origin_date"] == "1996-09-30T12:38:01+02:00"


@needs_kth
def test_kth_window_runs_on_the_embedded_engine(tmp_path, capsys):
    platform, workload = tmp_path / "kth.xml", tmp_path / "kth.json"
    assert main(["platform", "--nodes", "100", "--speed", "1Gf", "--node-link", "10GBps", "--pfs-bandwidth", "1GBps",
                 "--out", str(platform)]) == 0
    assert main(["import", "swf", str(KTH), "--from", "1996-10-01", "--max-jobs", "200", "--out", str(workload)]) == 0
    assert "200 jobs kept" in capsys.readouterr().out
    imported = json.loads(workload.read_text())
    # 1996-10-01T00:00 in Stockholm (CEST) is 640,769 s after UnixStartTime (1996-09-23T14:00:31 CEST);
    # the first job submitted from then is job 107, at 640,779.
    assert imported["trace"]["origin"] == 640769 and imported["jobs"][0] == {**imported["jobs"][0], "id": 107,
                                                                              "subtime": 10}
    assert main(["run", "--platform", str(platform), "--workload", str(workload), "--scheduler", "easy",
                 "--out", str(tmp_path / "run"), "--quiet"]) == 0
    capsys.readouterr()
    jobs = pd.read_csv(tmp_path / "run" / "out_jobs.csv")
    assert len(jobs) == 200 and jobs["final_state"].isin(["COMPLETED_SUCCESSFULLY",
                                                          "COMPLETED_WALLTIME_REACHED"]).all()
    assert (jobs["starting_time"] >= jobs["submission_time"]).all()


@needs_kth
@pytest.mark.batsim
@pytest.mark.skipif(shutil.which("batsim") is None, reason="no batsim binary on PATH")
def test_kth_window_gives_the_same_job_times_on_real_batsim(tmp_path, capsys):
    platform, workload = tmp_path / "kth.xml", tmp_path / "kth.json"
    assert main(["platform", "--nodes", "100", "--speed", "1Gf", "--node-link", "10GBps", "--pfs-bandwidth", "1GBps",
                 "--out", str(platform)]) == 0
    assert main(["import", "swf", str(KTH), "--from", "1996-10-01", "--max-jobs", "200", "--out", str(workload)]) == 0
    times = {}
    for engine in ("embedded", "batsim"):
        assert main(["run", "--engine", engine, "--platform", str(platform), "--workload", str(workload),
                     "--scheduler", "easy", "--out", str(tmp_path / engine), "--quiet"]) == 0
        jobs = pd.read_csv(tmp_path / engine / "out_jobs.csv").set_index("job_id").sort_index()
        times[engine] = jobs[["starting_time", "finish_time"]]
    capsys.readouterr()
    assert len(times["batsim"]) == 200
    assert ((times["embedded"] - times["batsim"]).abs() <= 1e-3).all().all()


@needs_kth
def test_the_bundled_kth_slice_is_the_import_of_the_traces_first_300_jobs(tmp_path, capsys):
    """workloads/kth_sp2_first300.json (the cross-paper matrix's real trace) is what its .md says it is."""
    workload = tmp_path / "kth.json"
    assert main(["import", "swf", str(KTH), "--max-jobs", "300", "--out", str(workload)]) == 0
    capsys.readouterr()
    bundled = json.loads(catalog.workload_path("kth_sp2_first300").read_text())
    assert json.loads(workload.read_text()) == bundled
