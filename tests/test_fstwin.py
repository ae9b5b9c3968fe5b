"""The file-system twin from TOKIO-ABC (batio/twin/fstwin.py): reading, the model
by hand, the fit on synthetic runs, and the engine running the same model."""

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from batio.cli import main
from batio.errors import InputError
from batio.twin import fstwin, fstwin_read

GIB = 2.0 ** 30
SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tokio_abc"
HEADER = [*fstwin_read.COLUMNS, "extra"]


def row(fs="cscratch", app="/bin/ior", nprocs="512", start="1500000000", end="1500000100", bw="1024",
        read="0", written=str(100 * GIB), files_r="0", files_w="1", fs_read="10", fs_written="190"):
    return [fs, app, nprocs, start, end, bw, read, written, files_r, files_w, fs_read, fs_written, "x"]


def write_summaries(path, rows, header=HEADER):
    with gzip.open(path, "wt", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_reading_a_tiny_summaries_file(tmp_path):
    path = write_summaries(tmp_path / "s.csv.gz", [
        row(),
        row(app="/x/hacc_io_read", read=str(50 * GIB), written="0", files_r="512", files_w="2", bw="2048"),
        row(fs=""),           # a run on another file system
        row(bw=""),           # no bandwidth
        row(fs_read="", fs_written=""),  # no traffic measured
        row(fs_written=""),   # half of it
        row(end=""),
        row(bw="0"),
    ])
    runs, skipped = fstwin.read_runs(path)
    assert list(runs["line"]) == [2, 3]
    assert dict(skipped) == {fstwin_read.SKIPS[0][1]: 1, fstwin_read.SKIPS[1][1]: 1, fstwin_read.SKIPS[2][1]: 2,
                             "no start or end time": 1, "measured bandwidth not positive": 1}
    assert list(runs["config"]) == ["ior/shared/write/512/cscratch", "hacc_io_read/fpp/read/512/cscratch"]
    # Background: (10 + 190 GiB) minus the run's own 100 GiB, over its 100 s.
    assert runs["background"][0] == pytest.approx(1.0 * GIB)
    assert runs["background"][1] == pytest.approx(1.5 * GIB)
    assert runs["measured"][1] == 2048 * 2.0 ** 20


@pytest.mark.parametrize("bad, column, line", [
    (row(nprocs="many"), "darshan_nprocs", 3),
    (row(fs_written="1e"), "fs_tot_gibs_written", 3),
    (row(nprocs="512.5"), "darshan_nprocs", 3),
])
def test_a_malformed_value_names_file_line_and_column(tmp_path, bad, column, line):
    path = write_summaries(tmp_path / "s.csv.gz", [row(), bad])
    with pytest.raises(InputError) as error:
        fstwin.read_runs(path)
    assert str(error.value).startswith(f"{path}, line {line}, field '{column}': ")
    assert "\n" not in str(error.value)


def test_a_ragged_row_or_missing_column_is_one_line(tmp_path, capsys):
    ragged = write_summaries(tmp_path / "r.csv.gz", [row(), row()[:5] + ["1"] * 20])
    assert main(["twin", str(ragged), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"batio: error: {ragged}: malformed CSV") and "line 3" in err and "\n" not in err
    missing = tmp_path / "m.csv"
    missing.write_text("darshan_app,darshan_nprocs\nior,512\n")
    with pytest.raises(InputError, match="field '_file_system'"):
        fstwin.read_runs(missing)


G = 1e9
# (curve, background client rate, per-client limit, n, background B/s, hand-computed bandwidth)
HAND = [
    # C(7) = 3.5 GB/s for 4 + 3 clients, none capped below 0.5 GB/s: 4 x 0.5.
    (((1, 5 * G), (7, 3.5 * G)), 1 * G, 1 * G, 4, 3 * G, 2.0 * G),
    # One background client capped at 1 GB/s < 8/5: the benchmark gets the rest, 8 - 1.
    (((1, 8 * G),), 1 * G, 3 * G, 4, 1 * G, 7.0 * G),
    # The benchmark's own limit (4 x 1 GB/s) is below its fair share.
    (((1, 8 * G),), 1 * G, 1 * G, 4, 1 * G, 4.0 * G),
    # No background: 4 clients alone, C(4) = 8 - 4 x 3/4 = 5 GB/s < 4 x 3.
    (((1, 8 * G), (5, 4 * G)), 1 * G, 3 * G, 4, 0.0, 5.0 * G),
]


@pytest.mark.parametrize("curve, rate, limit, n, background, expected", HAND)
def test_the_model_by_hand(curve, rate, limit, n, background, expected):
    twin = fstwin.Twin(curve, rate, {"c": limit})
    runs = pd.DataFrame({"config": ["c"], "clients": [n], "background": [background]})
    assert twin.predict(runs)[0] == pytest.approx(expected)


def synthetic_runs(seed=1, per_config=60):
    """Runs drawn from a known twin (capacity 100 GB/s falling to 60 at 8 x 64 clients,
    background clients of 0.5 GB/s), 2 % noise."""
    rng = np.random.default_rng(seed)
    truth = fstwin.Twin(((16, 100 * G), (512, 60 * G)), 0.5 * G,
                        {"a": 3 * G, "b": 1.2 * G, "c": 0.8 * G})
    clients = {"a": 16, "b": 64, "c": 64}
    frames = []
    for config, n in clients.items():
        frames.append(pd.DataFrame({"config": config, "clients": n, "file_system": "fs",
                                    "background": rng.uniform(0, 80 * G, per_config)}))
    runs = pd.concat(frames, ignore_index=True)
    runs["measured"] = truth.predict(runs) * rng.normal(1.0, 0.02, len(runs))
    return truth, runs


def test_the_fit_recovers_known_parameters():
    truth, runs = synthetic_runs()
    fitted = fstwin.fit(runs, grid=8)
    _, held_out = synthetic_runs(seed=2)
    held_out["measured"] = truth.predict(held_out)
    error = np.abs(fitted.predict(held_out) / held_out["measured"] - 1)
    assert np.median(error) < 0.03 and np.percentile(error, 90) < 0.08
    assert fitted.capacity(16) == pytest.approx(100 * G, rel=0.1)
    for config, limit in truth.client_limits.items():
        assert fitted.client_limits[config] == pytest.approx(limit, rel=0.1)


def test_batio_twin_writes_a_platform_that_validates_alike(tmp_path, capsys):
    rows = [row(start=str(1500000000 + day * 86400), end=str(1500000100 + day * 86400),
                bw=str(1000 + 10 * day), fs_read=str(10 + day)) for day in range(8)]
    path = write_summaries(tmp_path / "s.csv.gz", rows)
    out = tmp_path / "out"
    assert main(["twin", str(path), "--system", "mini", "--fit-until", "2017-07-18", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "held-out: all" in printed
    assert "runs: 8 used (4 fitted, before 2017-07-18; 4 held out); skipped: none" in printed
    table = pd.read_csv(out / "validation.csv")
    assert list(table.columns) == ["group", "predictor", "pairs", "median_ape", "p90_ape", "within_25", "spearman"]
    held = table[(table["group"] == "held-out: all") & (table["predictor"] == "config median")].iloc[0]
    # 2017-07-18 00:00 UTC splits days 0-3 (median 1015 MiB/s) from days 4-7 (1040 .. 1070).
    measured = np.array([1040, 1050, 1060, 1070])
    assert held["pairs"] == 4
    assert held["median_ape"] == pytest.approx(np.median(np.abs(1015 - measured) / measured * 100), rel=1e-3)
    # The platform carries the whole fit: validating with it gives the same table.
    again = fstwin.validate_benchmarks(path, platform=out / "mini.xml", fit_until="2017-07-18")
    assert np.allclose(again["median_ape"], table["median_ape"], rtol=1e-3, equal_nan=True)


def test_the_rolling_median_stands_beside_the_recalibrated_twin(tmp_path, capsys):
    rows = [row(start=str(1500000000 + day * 86400), end=str(1500000100 + day * 86400),
                bw=str(1000 + 10 * day), fs_read=str(10 + day)) for day in range(8)]
    out = tmp_path / "out"
    assert main(["twin", str(write_summaries(tmp_path / "s.csv.gz", rows)), "--fit-until", "2017-07-18",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "validation.csv").set_index(["group", "predictor"])
    held = table.loc[("held-out: all", "config median, rolling over the last 28 days")]
    # Days 4-7, each against the median of every earlier day: 1015, 1020, 1025, 1030 MiB/s.
    measured = np.array([1040, 1050, 1060, 1070])
    errors = np.abs(np.array([1015, 1020, 1025, 1030]) - measured) / measured * 100
    assert held["pairs"] == 4 and held["median_ape"] == pytest.approx(np.median(errors), rel=1e-3)
    recent = table.loc[("held-out: all", "twin, recalibrated on the last 28 days"), "median_ape"]
    gap = json.loads((out / "fit.json").read_text())["recalibrated_twin_minus_rolling_median"]
    assert gap["pairs"] == 4 and gap["difference_points"] == pytest.approx(recent - np.median(errors), abs=1e-3)
    assert gap["ci95_points"][0] <= gap["difference_points"] <= gap["ci95_points"][1]
    assert (f"held out, recalibrated twin minus rolling config median: {gap['difference_points']:+.2f} points of "
            f"median abs % error ({recent:.1f} against {np.median(errors):.1f}; 95 % paired bootstrap interval") \
        in printed


def test_the_paired_gap_by_hand():
    measured = np.array([100.0, 200.0, 400.0, 50.0])
    gap = fstwin.paired_gap(measured * 1.1, measured * 1.25, measured)
    assert gap["pairs"] == 4 and gap["median_ape"] == pytest.approx([10.0, 25.0])
    assert gap["difference_points"] == pytest.approx(-15.0) and gap["ci95_points"] == pytest.approx([-15.0, -15.0])
    # A run one predictor misses is left out of both; NaN predictions are not pairs.
    gap = fstwin.paired_gap([110.0, np.nan, 100.0], [100.0, 1.0, 130.0], [100.0, 100.0, 100.0], rounds=200)
    assert gap["pairs"] == 2 and gap["difference_points"] == pytest.approx(5.0 - 15.0)
    assert -30.0 <= gap["ci95_points"][0] <= gap["ci95_points"][1] <= 10.0


def test_batio_validate_takes_benchmark_runs_and_the_twin_platform(tmp_path, capsys):
    rows = [row(start=str(1500000000 + day * 86400), end=str(1500000100 + day * 86400),
                bw=str(1000 + 10 * day), fs_read=str(10 + day)) for day in range(8)]
    path = write_summaries(tmp_path / "s.csv.gz", rows)
    assert main(["twin", str(path), "--system", "mini", "--fit-until", "2017-07-18", "--out", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    out = tmp_path / "v"
    assert main(["validate", "--benchmarks", str(path), "--platform", str(tmp_path / "t" / "mini.xml"),
                 "--fit-until", "2017-07-18", "--out", str(out)]) == 0
    assert "held-out: all" in capsys.readouterr().out
    assert np.allclose(pd.read_csv(out / "validation.csv")["median_ape"],
                       pd.read_csv(tmp_path / "t" / "validation.csv")["median_ape"], rtol=1e-3, equal_nan=True)
    # Jobs and benchmarks are two kinds of validation: mixing them is one line.
    assert main(["validate", "--benchmarks", str(path), "--workload", "w.json", "--out", str(tmp_path / "x")]) == 2
    assert "--benchmarks takes no --workload" in capsys.readouterr().err
    assert main(["validate", "--out", str(tmp_path / "y")]) == 2
    assert "give --platform and --workload" in capsys.readouterr().err


def test_the_table_splits_by_file_system_when_there_are_several():
    test = pd.DataFrame({"file_system": ["s1", "s1", "s2"], "app": "ior/fpp", "direction": "write",
                         "measured": [100.0, 200.0, 50.0]})
    rows = fstwin.table(test, {"p": np.array([110.0, 150.0, 75.0])}, "held-out").set_index("group")
    assert rows.loc["held-out: file_system=s1", "median_ape"] == pytest.approx(17.5)  # 10 % and 25 %
    assert rows.loc["held-out: file_system=s2", "median_ape"] == pytest.approx(50.0)
    assert rows.loc["held-out: all", "pairs"] == 3
    single = fstwin.table(test[test["file_system"] == "s1"], {"p": np.array([110.0, 150.0])}, "x")
    assert not single["group"].str.contains("file_system").any()


def test_bad_names_and_options_are_one_line(tmp_path, capsys):
    path = write_summaries(tmp_path / "s.csv.gz", [row(), row(fs="scratch<1>")])
    with pytest.raises(InputError, match=r"line 3, field '_file_system': a file system name"):
        fstwin.read_runs(path)
    assert main(["twin", str(path), "--days", "0", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == "batio: error: --days: must be from 1 to 3650, got 0"
    with pytest.raises(InputError, match="no link carries a fit"):
        fstwin.read_platform(Path(__file__).resolve().parents[1] / "platforms" / "cluster16_pfs.xml")


def test_the_engine_gives_the_analytic_bandwidth(tmp_path):
    from batio.twin.fstwin_engine import simulate_run
    curve, rate, limit, n, background, expected = HAND[0]
    twin = fstwin.Twin(curve, rate, {"c": limit})
    run = pd.Series({"config": "c", "clients": n, "background": background, "direction": "write"})
    assert simulate_run(twin, run, tmp_path) == pytest.approx(expected, rel=1e-6)


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/data/tokio_abc")
def test_the_shared_cori_file_reads_with_its_skips():
    runs, skipped = fstwin.read_runs(SHARED / "cori-summaries_2017-02-14-2018-02-15.csv.gz")
    assert len(runs) == 4761
    assert skipped[fstwin_read.SKIPS[0][1]] == 6025 and skipped[fstwin_read.SKIPS[2][1]] == 154
    # Counters that measured nothing, or less than the run's own bytes.
    assert skipped[fstwin_read.ZERO] == 186 and skipped[fstwin_read.TOO_SMALL] == 106
