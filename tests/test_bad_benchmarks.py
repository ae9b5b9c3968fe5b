"""`batio twin` and `validate --benchmarks` refuse TOKIO-ABC numbers no benchmark run
records, in one line naming the file, the line and the column; `twin` writes its platform under
--out only, and an interrupted twin leaves the earlier fit whole."""

from pathlib import Path
import signal

import pytest
from test_bad_input_values import one_line_error
from test_fstwin import row, write_summaries

from batio.cli import main
from batio.errors import Interrupted
from batio.twin import fstwin

DAY = 86400
ARABIC_DATE = "\u0662\u0660\u0661\u0667-07-18"
NOT_ASCII = "is not a number in ASCII decimal digits"


def rows(bad=None):
    """Eight daily runs (a twin can be fitted on the first four), the sixth with ``bad`` cells."""
    days = [row(start=str(1500000000 + day * DAY), end=str(1500000100 + day * DAY), bw=str(1000 + 10 * day),
                fs_read=str(10 + day)) for day in range(8)]
    if bad:
        days[5] = row(**{"start": str(1500000000 + 5 * DAY), "end": str(1500000100 + 5 * DAY), **bad})
    return days


@pytest.mark.parametrize("bad, column, expected", [
    ({"bw": "inf"}, "darshan_agg_perf_by_slowest_posix", f"value 'inf' {NOT_ASCII}"),
    ({"bw": "nan"}, "darshan_agg_perf_by_slowest_posix", f"value 'nan' {NOT_ASCII}"),
    ({"bw": "-5"}, "darshan_agg_perf_by_slowest_posix", "value '-5' is out of bounds"),
    ({"read": "1e308"}, "darshan_tot_bytes_read_posix", "value '1e308' is out of bounds: expected 0 to 1e+18"),
    ({"written": "-1"}, "darshan_tot_bytes_written_posix", "value '-1' is out of bounds"),
    ({"fs_read": "inf"}, "fs_tot_gibs_read", f"value 'inf' {NOT_ASCII}"),
    ({"fs_written": "-3"}, "fs_tot_gibs_written", "value '-3' is out of bounds"),
    ({"files_w": "-2"}, "darshan_biggest_write_api_files", "value '-2' is out of bounds"),
    ({"files_r": "1.5"}, "darshan_biggest_read_api_files", "must be a whole number, got '1.5'"),
    ({"start": "inf"}, "darshan_start_time", f"value 'inf' {NOT_ASCII}"),
    ({"start": "253402300800", "end": "253402300900"}, "darshan_start_time", "is out of bounds: expected 0 to "
                                                                            "4102444800"),
    ({"end": "1499999999"}, "darshan_end_time", "is 432001 s before the darshan_start_time it follows"),
    ({"nprocs": "1e20"}, "darshan_nprocs", "value '1e20' is out of bounds: expected 1 to 2147483647"),
    ({"nprocs": "inf"}, "darshan_nprocs", f"value 'inf' {NOT_ASCII}"),
    ({"nprocs": "\u0665\u0661\u0662"}, "darshan_nprocs", f"value '\u0665\u0661\u0662' {NOT_ASCII}"),
    ({"bw": "1_000"}, "darshan_agg_perf_by_slowest_posix", f"value '1_000' {NOT_ASCII}"),
])
@pytest.mark.parametrize("command", ["twin", "validate"])
def test_a_run_no_benchmark_records_is_refused(tmp_path, capsys, bad, column, expected, command):
    path = write_summaries(tmp_path / "s.csv.gz", rows(bad))
    argv = (["twin", str(path)] if command == "twin" else ["validate", "--benchmarks", str(path)])
    line = one_line_error(capsys, [*argv, "--fit-until", "2017-07-18", "--out", str(tmp_path / "out")])
    assert line == f"batio: error: {path}, line 7, field '{column}': {expected}" or (
        line.startswith(f"batio: error: {path}, line 7, field '{column}': ") and expected in line), line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("system", ["", "../x", "/tmp/batio-absolute-system", "..", "a\\b"])
def test_a_system_name_that_is_no_plain_name_is_refused(tmp_path, capsys, system):
    path = write_summaries(tmp_path / "s.csv.gz", rows())
    line = one_line_error(capsys, ["twin", str(path), "--system", system, "--out", str(tmp_path / "out")])
    assert line.startswith("batio: error: --system: "), line
    assert not (tmp_path / "x.xml").exists() and not Path("/tmp/batio-absolute-system.xml").exists()


def fit_mini(tmp_path, capsys, *extra):
    path = write_summaries(tmp_path / "s.csv.gz", rows())
    out = tmp_path / "out"
    assert main(["twin", str(path), "--system", "mini", "--fit-until", "2017-07-18", "--out", str(out), *extra]) == 0
    capsys.readouterr()
    return path, out


@pytest.mark.parametrize("stop, code", [(KeyboardInterrupt(), 130), (Interrupted(signal.SIGTERM), 143)])
def test_an_interrupted_twin_leaves_the_earlier_fit_whole(tmp_path, capsys, monkeypatch, stop, code):
    path, out = fit_mini(tmp_path, capsys)
    before = {file.name: file.read_bytes() for file in out.iterdir()}
    assert sorted(before) == ["fit.json", "mini.xml", "validation.csv"]

    def interrupted(*_args, **_kwargs):  # right after the new platform's write, before fit.json's
        raise stop
    monkeypatch.setattr(fstwin, "_validation", interrupted)
    assert main(["twin", str(path), "--system", "other", "--fit-until", "2017-07-16", "--out", str(out)]) == code
    assert {file.name: file.read_bytes() for file in out.iterdir()} == before  # no other.xml, no staging folder


def test_a_new_fit_replaces_the_whole_set_and_an_old_engine_check(tmp_path, capsys):
    path, out = fit_mini(tmp_path, capsys)
    (out / "engine_check.csv").write_text("from an earlier fit\n")
    old_fit = (out / "fit.json").read_text()
    assert main(["twin", str(path), "--system", "mini", "--fit-until", "2017-07-16", "--out", str(out)]) == 0
    assert sorted(file.name for file in out.iterdir()) == ["fit.json", "mini.xml", "validation.csv"]
    assert (out / "fit.json").read_text() != old_fit


@pytest.mark.parametrize("flag, value, expected", [
    ("--days", "nan", "--days: expected a whole number in ASCII digits, got 'nan'"),
    ("--days", "inf", "--days: expected a whole number in ASCII digits, got 'inf'"),
    ("--days", "1e18", "--days: expected a whole number in ASCII digits, got '1e18'"),
    ("--days", "3651", "--days: must be from 1 to 3650, got 3651"),
    ("--days", "0", "--days: must be from 1 to 3650, got 0"),
    ("--engine-check", "-1", "--engine-check: expected a whole number in ASCII digits, got '-1'"),
    ("--engine-check", "1001", "--engine-check: must be from 0 to 1000, got 1001"),
    ("--fit-until", ARABIC_DATE, f"--fit-until: '{ARABIC_DATE}' is not a date such as 2017-07-18"),
    ("--fit-until", "", "--fit-until: '' is not a date such as 2017-07-18"),
    ("--fit-until", "9999-01-01", "--fit-until: '9999-01-01' is not a date a record can hold (from 1970 to 2100)"),
])
def test_a_twin_flag_out_of_its_bounds_is_one_line(tmp_path, capsys, flag, value, expected):
    path = write_summaries(tmp_path / "s.csv.gz", rows())
    line = one_line_error(capsys, ["twin", str(path), flag, value, "--out", str(tmp_path / "out")])
    assert line == f"batio: error: {expected}"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
