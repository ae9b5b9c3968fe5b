"""TOKIO-ABC summaries as Mira's come (GPFS byte counters,
zero counters, one process count for every run) and an engine check that has
nothing to compare. Mira's file is not in ../shared: the files here are made
with its header's names, the other columns those of Cori's file."""

import json
import logging
import re

import pandas as pd
import pytest
from test_fstwin import write_summaries

from batio.cli import main
from batio.errors import InputError
from batio.twin import fstwin, fstwin_read

GIB = 2.0 ** 30
DAY = 86400
# Mira's summaries count the file system's traffic in bytes, not GiB.
MIRA = [{"fs_tot_gibs_read": "fs_tot_bytes_read", "fs_tot_gibs_written": "fs_tot_bytes_written"}.get(c, c)
        for c in fstwin_read.COLUMNS]


def run(day=0, fs="mira-fs1", app="/bin/ior", nprocs=16384, bw=1024.0, read=0.0, written=100 * GIB,
        fs_read=10 * GIB, fs_written=190 * GIB, gib=False):
    """One row of COLUMNS' values (the counters in bytes, or in GiB with ``gib``)."""
    start = 1500000000 + day * DAY
    scale = GIB if gib else 1.0
    return [fs, app, nprocs, start, start + 100, bw, read, written, 0, 1, fs_read / scale, fs_written / scale]


def write(path, rows, header=MIRA):
    return write_summaries(path, rows, header)


def test_byte_counters_read_as_gib_ones(tmp_path):
    rows = [run(), run(day=1, app="/x/hacc_io_read", read=50 * GIB, written=0.0, fs_read=80 * GIB)]
    in_bytes, _ = fstwin.read_runs(write(tmp_path / "mira.csv.gz", rows))
    in_gib, _ = fstwin.read_runs(write(tmp_path / "gib.csv.gz", [run(gib=True), run(day=1, app="/x/hacc_io_read",
                                       read=50 * GIB, written=0.0, fs_read=80 * GIB, gib=True)],
                                       header=fstwin_read.COLUMNS))
    # Background: (10 + 190 GiB) minus the run's own 100 GiB over 100 s; then 80 + 190 - 50.
    assert list(in_bytes["background"]) == pytest.approx([1.0 * GIB, 2.2 * GIB])
    pd.testing.assert_frame_equal(in_bytes, in_gib)


def test_a_bad_byte_counter_or_neither_counter_is_one_line(tmp_path):
    bad = run()
    bad[-2] = "lots"
    with pytest.raises(InputError, match=r"line 3, field 'fs_tot_bytes_read': value 'lots' is not a number"):
        fstwin.read_runs(write(tmp_path / "bad.csv.gz", [run(), bad]))
    header = [c for c in MIRA if c != "fs_tot_bytes_written"]
    with pytest.raises(InputError) as error:
        fstwin.read_runs(write(tmp_path / "none.csv.gz", [run()[:-1]], header=header))
    assert "field 'fs_tot_gibs_written': missing column (nor fs_tot_bytes_written" in str(error.value)
    assert "\n" not in str(error.value)


def test_zero_or_too_small_counters_are_unmeasured_and_counted(tmp_path):
    rows = [run(),
            run(day=1, fs_read=0.0, fs_written=0.0),            # counters zero: not measured
            run(day=2, fs_read=0.0, fs_written=99 * GIB),       # less than the run's own 100 GiB
            run(day=3, fs_read=0.0, fs_written=100 * GIB),      # exactly its own: no background, kept
            run(day=4, fs_read=0.0, fs_written=150 * GIB)]      # one counter zero, the total enough: kept
    runs, skipped = fstwin.read_runs(write(tmp_path / "mira.csv.gz", rows))
    assert list(runs["line"]) == [2, 5, 6]
    assert list(runs["background"]) == pytest.approx([1.0 * GIB, 0.0, 0.5 * GIB])
    assert dict(skipped) == {fstwin_read.ZERO: 1, fstwin_read.TOO_SMALL: 1}


def mira_week(tmp_path):
    """Eight daily runs of two configurations, every one with 16,384 processes."""
    rows = [run(day=day, app="/bin/ior" if day % 2 else "/x/hacc_io_write", bw=1000 + 10 * day,
                fs_read=(10 + day) * GIB) for day in range(8)]
    return write(tmp_path / "mira-summaries.csv.gz", rows)


def test_one_process_count_identifies_no_curve_and_says_so(tmp_path, capsys, caplog):
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING):
        assert main(["twin", str(mira_week(tmp_path)), "--fit-until", "2017-07-18", "--out", str(out)]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["mira-fs1: every run uses 16384 clients: no contention curve can be identified from one "
                        "client count; the link's capacity is fitted flat"]
    fit = json.loads((out / "fit.json").read_text())
    assert fit["twins"]["mira-fs1"]["contention_curve"] == "not identifiable: every run uses 16384 clients"
    (k1, c1), (k2, c2) = fit["twins"]["mira-fs1"]["curve_GiBps"]
    assert (k1, k2) == (16384, 8 * 16384) and c1 == c2  # a flat capacity, over as many nodes as before
    assert 'radical="0-131071"' in (out / "mira.xml").read_text()


def test_several_client_counts_fit_a_curve_without_a_warning(caplog):
    from test_fstwin import synthetic_runs
    _, runs = synthetic_runs(per_config=20)
    with caplog.at_level(logging.WARNING):
        fstwin.fit(runs, grid=4)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_engine_check_that_compares_nothing_says_so(tmp_path, capsys, caplog):
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING):
        assert main(["twin", str(mira_week(tmp_path)), "--fit-until", "2017-07-18", "--out", str(out),
                     "--engine-check", "2"]) == 0
    lines = [r.getMessage() for r in caplog.records if "engine check" in r.getMessage()]
    assert len(lines) == 1 and re.fullmatch(r"engine check: compared nothing: no run of a fitted configuration has "
                                            r"at most 2600 clients with its background clients \(the smallest has "
                                            r"16384 \+ \d+\)", lines[0])
    assert not (out / "engine_check.csv").exists()
    assert "engine_check.csv" not in capsys.readouterr().out


def test_an_engine_check_without_a_run_of_a_fitted_configuration_says_so(caplog):
    from batio.twin.fstwin_engine import engine_check
    twin = fstwin.Twin(((1, 1e9),), 1e8, {"another/config": 1e8})
    runs = pd.DataFrame({"line": [2], "file_system": ["fs"], "config": ["c"], "clients": [4], "background": [0.0]})
    with caplog.at_level(logging.WARNING):
        assert engine_check({"fs": twin}, runs).empty
    assert caplog.messages == ["engine check: compared nothing: no run is of a fitted configuration"]
