"""Windows of a trace as replicas (batio.windows): which jobs each window holds, in which category."""

import json

import pandas as pd
import pytest

from batio.cli import main
from batio.errors import InputError
from batio.inputs.workload import load_workload
from batio.windows import trace_window, window_count


def test_a_window_holds_its_margins_recategorised_and_shifted(tmp_path):
    trace = tmp_path / "t.json"
    profiles = {"d": {"type": "delay", "delay": 5}, "unused": {"type": "delay", "delay": 9}}
    jobs = [{"id": i, "subtime": t, "walltime": 10, "res": 1, "profile": "d"} for i, t in
            enumerate([0, 60, 120, 250, 310])]
    trace.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    assert window_count(trace, 100) == 3  # the span 0..310 holds 3 whole windows
    # Window 2 is [100, 200); with 50 s of warm-up and 20 s of cool-down it holds [50, 220), from time 50 on.
    second = trace_window(2, str(trace), 100, warmup=50, cooldown=20)
    assert [(j["id"], j["subtime"], j["category"]) for j in second["jobs"]] == [(1, 10, 0), (2, 70, 1)]
    assert list(second["profiles"]) == ["d"] and second["window"]["trace_seconds"] == [100, 200]
    third = trace_window(3, str(trace), 100, warmup=50, cooldown=20)
    assert [(j["id"], j["subtime"], j["category"]) for j in third["jobs"]] == [(3, 100, 1), (4, 160, 2)]
    with pytest.raises(InputError, match="shorter than one window"):
        window_count(trace, 400)
    with pytest.raises(InputError, match="--window-count: expected 1 to 3"):
        window_count(trace, 100, count=4)


def test_windows_tile_the_evaluated_category_only(tmp_path):
    # An imported trace with warm-up (category 0) and cool-down (2): windows start at the first category-1 job.
    trace = tmp_path / "t.json"
    jobs = [{"id": i, "subtime": t, "walltime": 10, "res": 1, "profile": "d", "category": c} for i, (t, c) in
            enumerate([(0, 0), (100, 1), (150, 1), (300, 1), (900, 2)])]
    trace.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 5}}}))
    assert window_count(trace, 100) == 2
    first = trace_window(1, str(trace), 100)
    assert [(j["id"], j["subtime"], j["category"]) for j in first["jobs"]] == [(1, 0, 1), (2, 50, 1)]


def _composed_trace(path):
    """Five jobs every 50 s (two whole windows of 100 s), each with a jobsio import's composed profile
    (ID_read, ID_rest, ID_write; job 3 writes nothing), and a profile no job reaches."""
    jobs, profiles = [], {"orphan": {"type": "delay", "delay": 1}}
    for i in range(5):
        phases = [f"{i}_read", f"{i}_rest"] + ([f"{i}_write"] if i != 3 else [])
        profiles |= {f"{i}_read": {"type": "parallel_homogeneous_pfs", "storage": "pfs", "bytes_to_read": 1e8},
                     f"{i}_rest": {"type": "delay", "delay": 10},
                     f"{i}_write": {"type": "parallel_homogeneous_pfs", "storage": "pfs", "bytes_to_write": 2e8},
                     str(i): {"type": "composed", "seq": phases}}
        jobs.append({"id": i, "subtime": 50 * i, "walltime": 100, "res": 2, "profile": str(i)})
    del profiles["3_write"]
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    return path


def test_a_window_keeps_the_phases_of_composed_profiles(tmp_path):
    # Window 2 is [100, 200): jobs 2 and 3; their composed profiles and every phase they name stay.
    trace = _composed_trace(tmp_path / "t.json")
    second = trace_window(2, str(trace), 100)
    assert [job["id"] for job in second["jobs"]] == [2, 3]
    assert set(second["profiles"]) == {"2", "2_read", "2_rest", "2_write", "3", "3_read", "3_rest"}
    window = tmp_path / "w2.json"
    window.write_text(json.dumps(second))
    checked = load_workload(window, "w0")  # the workload check: every phase a composed profile names is defined
    assert [job.profile for job in checked.jobs] == ["2", "3"]


def test_a_profile_named_but_not_defined_is_one_clear_error(tmp_path):
    trace = _composed_trace(tmp_path / "t.json")
    data = json.loads(trace.read_text())
    del data["profiles"]["2_rest"]
    trace.write_text(json.dumps(data))
    with pytest.raises(InputError, match="profile '2_rest' is named by a job or a composed profile but not defined"):
        trace_window(2, str(trace), 100)


def test_windows_of_composed_profiles_run_through_the_engine(tmp_path):
    # batio compare --windows on a jobsio-like trace: each window's jobs run their phases.
    trace = _composed_trace(tmp_path / "t.json")
    out = tmp_path / "cmp"
    assert main(["compare", "--platform", "cluster16_pfs", "--workload", str(trace), "--schedulers", "fcfs,easy",
                 "--windows", "100", "--out", str(out), "--quiet"]) == 0
    summary = pd.read_csv(out / "report" / "summary.csv").set_index("policy")
    assert list(summary["runs_ok"]) == [2, 2] and list(summary["evaluated_jobs"]) == [2, 2]
    assert summary.loc["fcfs", "bytes_moved"] > 0  # the read and write phases ran
