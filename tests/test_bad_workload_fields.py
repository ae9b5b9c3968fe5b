"""`batio validate` (and iomodel, which reads weeks the same way) refuses a workload
whose recorded or measured fields no import writes, and a week that is no name, before
anything runs or is written; two workloads of one week are refused, not merged."""

import copy
import json
import math
from pathlib import Path

import pytest
from test_bad_input_values import one_line_error

from batio.cli import main
from batio.importers import import_trace

DATA = Path(__file__).parent / "data"
PLATFORM_16 = Path(__file__).parents[1] / "platforms" / "cluster16_pfs.xml"


@pytest.fixture(scope="module")
def week():
    return import_trace("jobsio", DATA / "jobsio_tiny.csv", week="w1", nodes=16)


def validate(tmp_path, week, *workloads):
    """``batio validate`` argv scoring ``workloads`` (dicts) against ``week`` as the training week."""
    train = copy.deepcopy(week)
    train["trace"]["week"] = "train"
    (tmp_path / "train.json").write_text(json.dumps(train))
    argv = ["validate", "--platform", str(PLATFORM_16), "--train", str(tmp_path / "train.json"),
            "--out", str(tmp_path / "out")]
    for index, workload in enumerate(workloads):
        path = tmp_path / f"w{index}.json"
        path.write_text(json.dumps(workload, allow_nan=True))
        argv += ["--workload", str(path)]
    return argv


def nothing_written(out):
    """--out is made first (an unusable one is refused before any work), and left empty."""
    return not out.exists() or not any(out.iterdir())


def changed(week, key, value, job=0):
    workload = copy.deepcopy(week)
    workload["jobs"][job][key] = value
    return workload


NUMBER_0_TO = "must be a number from 0 to"


@pytest.mark.parametrize("key, value, expected", [
    ("measured_transfer_s", math.nan, f"field 'measured_transfer_s': {NUMBER_0_TO} 1e+10, got NaN"),
    ("measured_transfer_s", math.inf, f"field 'measured_transfer_s': {NUMBER_0_TO} 1e+10, got Infinity"),
    ("measured_read_s", 1e308, f"field 'measured_read_s': {NUMBER_0_TO} 1e+10, got 1e+308"),
    ("measured_write_s", -5, f"field 'measured_write_s': {NUMBER_0_TO} 1e+10, got -5"),
    ("measured_meta_s", True, f"field 'measured_meta_s': {NUMBER_0_TO} 1e+10, got true"),
    ("measured_transfer_s", "12", f"field 'measured_transfer_s': {NUMBER_0_TO} 1e+10, got \"12\""),
    ("read_bytes", math.nan, f"field 'read_bytes': {NUMBER_0_TO} 1e+18, got NaN"),
    ("written_bytes", -1, f"field 'written_bytes': {NUMBER_0_TO} 1e+18, got -1"),
    ("io_ranks", 0, "field 'io_ranks': must be a number from 0.001 to 2147483647, got 0"),
    ("nprocs", 2.5, "field 'nprocs': must be a whole number from 1 to 2147483647, got 2.5"),
    ("res", "2", "field 'res': must be a whole number from 1 to 2147483647, got \"2\""),
    ("recorded_start", "0", "field 'recorded_start': must be a number from -1e+10 to 1e+10, got \"0\""),
    ("recorded_end", -10, "field 'recorded_end': is 110 s before the recorded_start it follows"),
])
def test_a_recorded_or_measured_field_no_import_writes_is_refused(tmp_path, capsys, week, key, value, expected):
    argv = validate(tmp_path, week, changed(week, key, value))
    line = one_line_error(capsys, argv)
    assert line == f"batio: error: {tmp_path / 'w0.json'}, job '1', {expected}", line
    assert nothing_written(tmp_path / "out")


@pytest.mark.parametrize("trace, expected", [
    ({"week": "../../x"}, "field 'trace.week': week '../../x' is not a plain name"),
    ({"week": "/tmp/abs"}, "field 'trace.week': week '/tmp/abs' is not a plain name"),
    ({"week": ["a"]}, "field 'trace.week': a week is a name or a number, got [\"a\"]"),
    ({"week": True}, "field 'trace.week': a week is a name or a number, got true"),
    ("x", "field 'trace': the trace block is not an object: got \"x\""),
])
def test_a_week_that_is_no_name_is_refused_before_anything_is_written(tmp_path, capsys, week, trace, expected):
    workload = copy.deepcopy(week)
    workload["trace"] = trace if isinstance(trace, str) else {**workload["trace"], **trace}
    line = one_line_error(capsys, validate(tmp_path, week, workload))
    assert line.startswith(f"batio: error: {tmp_path / 'w0.json'}, {expected}"), line
    assert nothing_written(tmp_path / "out") and not Path("/tmp/abs").exists()


def test_a_job_without_an_id_is_refused(tmp_path, capsys, week):
    workload = copy.deepcopy(week)
    del workload["jobs"][1]["id"]
    line = one_line_error(capsys, validate(tmp_path, week, workload))
    assert line == f"batio: error: {tmp_path / 'w0.json'}, field 'id': job 2 has no id (a name or a number): got null"


@pytest.mark.parametrize("weeks, expected", [
    (("w1", "w1"), "week 'w1' also in {first}"),
    (("w 1", "w_1"), "weeks 'w 1' and 'w_1' (one folder) also in {first}"),
])
def test_two_workloads_of_one_week_are_refused_not_merged(tmp_path, capsys, week, weeks, expected):
    workloads = [copy.deepcopy(week) for _ in weeks]
    for workload, name in zip(workloads, weeks):
        workload["trace"]["week"] = name
    line = one_line_error(capsys, validate(tmp_path, week, *workloads))
    assert line == (f"batio: error: {tmp_path / 'w1.json'}: " + expected.format(first=tmp_path / "w0.json")
                    + ": score each week once, in one workload")
    assert nothing_written(tmp_path / "out")


def test_a_numbered_week_is_a_name(tmp_path, capsys, week):
    workload = copy.deepcopy(week)
    workload["trace"]["week"] = 5
    assert main(validate(tmp_path, week, workload)) == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "5").is_dir()
    assert "\n5," in (tmp_path / "out" / "validation.csv").read_text()


def test_an_interrupted_validation_leaves_the_earlier_tables_whole(tmp_path, capsys, monkeypatch, week):
    from batio.twin import validate as validating
    argv = validate(tmp_path, week, copy.deepcopy(week))
    assert main(argv) == 0
    out = tmp_path / "out"
    tables = {name: (out / name).read_bytes() for name in ("iomodel.json", "validation.csv", "validation_jobs.csv")}

    train = json.loads((tmp_path / "train.json").read_text())
    train["jobs"][0]["measured_transfer_s"] *= 2  # another model, which must not replace the earlier one alone
    (tmp_path / "train.json").write_text(json.dumps(train))

    def interrupted(frame):  # after the model's write, before the tables'
        raise KeyboardInterrupt
    monkeypatch.setattr(validating, "statistics", interrupted)
    assert main(argv) == 130
    assert {name: (out / name).read_bytes() for name in tables} == tables
    assert not list(out.glob(".staging-*"))
