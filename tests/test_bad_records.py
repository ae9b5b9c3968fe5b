"""The readers of real machine records (jobsio, sacct) refuse numbers that are
not numbers or not possible, ids and weeks that are no names, in one line naming the
file, the line and the field; and what `batio import jobsio` writes, `batio run` runs."""

import json
from pathlib import Path

import pytest
from test_bad_input_values import SACCT_HEADER, one_line_error, sacct_line

from batio.cli import main

PLATFORMS = Path(__file__).parents[1] / "platforms"
HEADER = ("week,id,submissionTime,startTime,waitingTimeSeconds,runtimeSeconds,walltimeSeconds,nodesUsed,"
          "sum_nprocs,readBytes,writtenBytes,readTimeSeconds,writeTimeSeconds,metaTimeSeconds,runsCount")
ROW = {"week": "w1", "id": "1", "submissionTime": "2022-01-15 00:00:00", "startTime": "2022-01-15 00:01:40",
       "waitingTimeSeconds": "100", "runtimeSeconds": "1000", "walltimeSeconds": "1200", "nodesUsed": "2",
       "sum_nprocs": "128", "readBytes": "2000000000", "writtenBytes": "4000000000", "readTimeSeconds": "1280",
       "writeTimeSeconds": "2560", "metaTimeSeconds": "640", "runsCount": "1"}


def row(**values):
    cells = {**ROW, **values}
    return ",".join(cells[name] for name in HEADER.split(",")) + "\n"


def import_jobsio(tmp_path, text, *extra):
    trace = tmp_path / "jobs.csv"
    trace.write_text(text)
    return trace, ["import", "jobsio", str(trace), "--out", str(tmp_path / "w.json"), *extra]


NOT_ASCII = "is not a number in ASCII decimal digits"


@pytest.mark.parametrize("cells, expected", [
    ({"runtimeSeconds": "\u0661\u0660\u0660\u0660"}, f"field 'runtimeSeconds': value '\u0661\u0660\u0660\u0660' "
                                                    f"{NOT_ASCII}"),
    ({"nodesUsed": "\uff12"}, f"field 'nodesUsed': value '\uff12' {NOT_ASCII}"),
    ({"readBytes": "1_000"}, f"field 'readBytes': value '1_000' {NOT_ASCII}"),
    ({"nodesUsed": "\u00b2"}, f"field 'nodesUsed': value '\u00b2' {NOT_ASCII}"),
    ({"writtenBytes": "inf"}, f"field 'writtenBytes': value 'inf' {NOT_ASCII}"),
    ({"metaTimeSeconds": "nan"}, f"field 'metaTimeSeconds': value 'nan' {NOT_ASCII}"),
    ({"readBytes": "1e308"}, "field 'readBytes': value '1e308' is out of bounds: expected 0 to 1e+18"),
    ({"runtimeSeconds": "1e308"}, "field 'runtimeSeconds': value '1e308' is out of bounds: expected 0 to 1e+10"),
    ({"sum_nprocs": "1e20"}, "field 'sum_nprocs': value '1e20' is out of bounds"),
    ({"submissionTime": "9999-01-01 00:00:00", "startTime": "9999-01-01 00:00:01"},
     "field 'submissionTime': '9999-01-01 00:00:00' is not a date a record can hold (from 1970 to 2100)"),
    ({"startTime": "\u0661\u0662"}, "field 'startTime': '\u0661\u0662' is not a date such as 2022-01-15 01:01:03"),
    ({"startTime": "2022-01-14 00:00:00"}, "field 'startTime': is 86400 s before the submissionTime it follows"),
    ({"id": "\u0667"}, "field 'id': job id '\u0667' has digits other than ASCII 0-9"),
    ({"id": "\u00b2"}, "field 'id': job id '\u00b2' has digits other than ASCII 0-9"),
    ({"id": '"1,2"'}, "field 'id': job id '1,2' contains a comma"),
    ({"id": '"1\n2"'}, "field 'id': job id '1\\n2' contains a comma, a double quote or a line break"),
    ({"id": ""}, "field 'id': empty job id"),
    ({"week": ""}, "field 'week': empty week"),
    ({"week": "../../x"}, "field 'week': week '../../x' is not a plain name"),
    ({"week": ".."}, "field 'week': week '..' is not a plain name"),
])
def test_a_jobsio_row_that_is_no_record_is_refused(tmp_path, capsys, cells, expected):
    trace, argv = import_jobsio(tmp_path, HEADER + "\n" + row(**cells))
    line = one_line_error(capsys, argv)
    assert line.startswith(f"batio: error: {trace}, line ") and expected in line, line
    assert not (tmp_path / "w.json").exists()


def test_a_column_read_twice_is_refused_an_unread_one_is_not(tmp_path, capsys):
    trace, argv = import_jobsio(tmp_path, HEADER + ",id\n" + row().strip() + ",2\n")
    assert one_line_error(capsys, argv) == f"batio: error: {trace}, line 1, field 'id': column given twice"
    _, argv = import_jobsio(tmp_path, HEADER + ",note,note\n" + row().strip() + ",a,b\n")
    assert main(argv) == 0


@pytest.mark.parametrize("week", ["../../x", "/abs", ""])
def test_a_week_option_that_is_no_name_is_refused(tmp_path, capsys, week):
    _, argv = import_jobsio(tmp_path, HEADER + "\n" + row(), "--week", week)
    assert one_line_error(capsys, argv).startswith("batio: error: --week: ")


def test_ids_007_and_7_are_one_id_the_second_skipped_as_duplicate(tmp_path):
    _, argv = import_jobsio(tmp_path, HEADER + "\n" + row(id="007") + row(id="7"))
    assert main(argv) == 0
    workload = json.loads((tmp_path / "w.json").read_text())
    assert [job["id"] for job in workload["jobs"]] == [7]
    assert workload["trace"]["skipped"] == {"duplicate_id": 1}
    assert workload["trace"]["skipped_lines"] == {"duplicate_id": [3]}


@pytest.mark.parametrize("nprocs, expected", [("nan", NOT_ASCII), ("0", "out of bounds"), ("2.5", "not a whole")])
def test_a_runs_file_with_no_process_count_is_refused(tmp_path, capsys, nprocs, expected):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"week,job_id,nprocs,dStartTime,dEndTime\nw1,1,{nprocs},1642208677,1642293542\n")
    _, argv = import_jobsio(tmp_path, HEADER + "\n" + row(), "--runs", str(runs))
    line = one_line_error(capsys, argv)
    assert line.startswith(f"batio: error: {runs}, line 2, field 'nprocs': ") and expected in line, line


@pytest.mark.parametrize("cells", [
    {"readTimeSeconds": "128000", "writeTimeSeconds": "0", "metaTimeSeconds": "0", "writtenBytes": "0"},
    {"readTimeSeconds": "64000", "writeTimeSeconds": "64000", "metaTimeSeconds": "0"},
    {"readTimeSeconds": "999999", "writeTimeSeconds": "999999", "metaTimeSeconds": "0"},
])
def test_io_that_fills_the_run_time_keeps_a_delay_batio_runs(tmp_path, cells):
    _, argv = import_jobsio(tmp_path, HEADER + "\n" + row(**cells))
    assert main(argv) == 0
    workload = json.loads((tmp_path / "w.json").read_text())
    assert workload["profiles"]["1_rest"] == {"type": "delay", "delay": 1e-06}
    assert main(["run", "--platform", str(PLATFORMS / "cluster16_pfs.xml"), "--workload", str(tmp_path / "w.json"),
                 "--scheduler", "replay", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert Path(tmp_path / "run" / "out_jobs.csv").read_text().count("COMPLETED_SUCCESSFULLY") == 1


@pytest.mark.parametrize("line, expected", [
    (sacct_line(submit="2024-04-01T00:00:00"), "field 'Start': is 2.67834e+06 s before the Submit it follows"),
    ("1|2024-03-01T00:00:00|2024-03-01T00:01:00|2024-02-01T00:00:00|00:10:00|01:00:00|1|COMPLETED\n",
     "field 'End': is 2.50566e+06 s before the Start it follows"),
    (sacct_line(submit="9999-03-01T00:00:00"), "field 'Submit': '9999-03-01T00:00:00' is not a date a record can hold"),
    (sacct_line(submit="\u0662024-03-01T00:00:00"), "field 'Submit': '\u0662024-03-01T00:00:00' is not a date"),
])
def test_a_sacct_line_out_of_order_or_out_of_time_is_refused(tmp_path, capsys, line, expected):
    trace = tmp_path / "t.sacct"
    trace.write_text(SACCT_HEADER + line)
    error = one_line_error(capsys, ["import", "sacct", str(trace), "--out", str(tmp_path / "w.json")])
    assert error.startswith(f"batio: error: {trace}, line 2, ") and expected in error, error


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("format, trace, extra", [
    ("swf", DATA / "small.swf", []), ("sacct", DATA / "small.sacct", []),
    ("jobsio", DATA / "jobsio_tiny.csv", ["--week", "w1"]),
])
def test_what_every_reader_writes_batio_runs(tmp_path, format, trace, extra):
    workload = tmp_path / "w.json"
    assert main(["import", format, str(trace), "--nodes", "16", "--out", str(workload), *extra]) == 0
    assert main(["run", "--platform", str(PLATFORMS / "cluster16_pfs.xml"), "--workload", str(workload),
                 "--scheduler", "fcfs", "--out", str(tmp_path / "run"), "--quiet"]) == 0


def test_a_jobsio_week_whose_io_fills_a_run_validates(tmp_path, capsys):
    """The week scored holds a job whose per-rank I/O is its whole run time (a delay of LEAST_DELAY_S)."""
    week = tmp_path / "w2.json"
    _, argv = import_jobsio(tmp_path, HEADER + "\n" + row(week="w2") + row(
        week="w2", id="2", readTimeSeconds="64000", writeTimeSeconds="64000", metaTimeSeconds="0"), "--nodes", "16")
    assert main([*argv[:-3], str(week), *argv[-2:]]) == 0
    train = tmp_path / "w1.json"
    assert main(["import", "jobsio", str(DATA / "jobsio_tiny.csv"), "--week", "w1", "--nodes", "16",
                 "--out", str(train)]) == 0
    assert main(["validate", "--platform", str(PLATFORMS / "cluster16_pfs.xml"), "--workload", str(week),
                 "--train", str(train), "--out", str(tmp_path / "v")]) == 0, capsys.readouterr().err
    assert (tmp_path / "v" / "validation.csv").is_file()
