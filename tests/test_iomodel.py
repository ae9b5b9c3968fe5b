"""The per-job I/O model (batio.twin.iomodel), each job's own I/O in its profile (batio.twin.iophases) and
`batio validate` scoring a week with a model trained on other weeks, on hand-computed weeks.

The platform is cluster16_pfs: each node's link 1.25 GB/s, the file system's 1 GB/s (shared),
so alone a job of n nodes moving b bytes per host takes b / min(1.25e9, 1e9 / n) seconds.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from batio.cli import main
from batio.engines.embedded.routes import Bandwidths, bandwidths
from batio.errors import InputError
from batio.importers import dumps, import_trace
from batio.twin import iomodel, iophases
from batio.twin.validate import NOISE, PLATFORM, PLATFORM_HIGH, RECURRING, headroom, replay, validate

PLATFORM_16 = Path(__file__).parents[1] / "platforms" / "cluster16_pfs.xml"
HEADER = ("week,id,submissionTime,startTime,waitingTimeSeconds,runtimeSeconds,walltimeSeconds,nodesUsed,"
          "sum_nprocs,readBytes,writtenBytes,readTimeSeconds,writeTimeSeconds,metaTimeSeconds")
FS16 = Bandwidths(client_read=1.25e9, fs_read=1e9, client_write=1.25e9, fs_write=1e9)


def row(week, job_id, start_s, runtime, nodes, ranks, read, written, read_rank_s, write_rank_s, walltime=None):
    """One jobsio record; times summed over ranks from per-rank seconds, submitted at time 0."""
    start = f"2022-01-15 {start_s // 3600:02d}:{start_s // 60 % 60:02d}:{start_s % 60:02d}"
    return (f"{week},{job_id},2022-01-15 00:00:00,{start},{start_s},{runtime},{walltime or runtime + 100},{nodes},"
            f"{ranks},{read},{written},{read_rank_s * ranks},{write_rank_s * ranks},{ranks}")


def weeks(tmp_path, rows):
    """{week: workload path} of ``rows`` imported one week at a time on 16 nodes."""
    source = tmp_path / "jobs.csv"
    source.write_text("\n".join([HEADER, *rows]) + "\n")
    paths = {}
    for week in sorted({line.split(",")[0] for line in rows}):
        paths[week] = tmp_path / f"{week}.json"
        paths[week].write_text(dumps(import_trace("jobsio", source, week=week, nodes=16)))
    return paths


# Training week t: job 11 moves 2e9 read + 4e9 written on 2 nodes (128 ranks) in 20 + 40 s per rank;
# job 12 writes 1e9 on 1 node (64 ranks) in 10 s per rank. Scored week w: the same shapes (bytes
# within 10 %), measured 30 s and 10 s; and job 3, a shape never seen (learned).
TRAIN = [row("t", 11, 0, 1000, 2, 128, 2_000_000_000, 4_000_000_000, 20, 40),
         row("t", 12, 0, 500, 1, 64, 0, 1_000_000_000, 0, 10)]
SCORED = [row("w", 1, 100, 1000, 2, 128, 2_050_000_000, 4_000_000_000, 10, 20),
          row("w", 2, 2000, 500, 1, 64, 0, 1_000_000_000, 0, 10),
          row("w", 3, 4000, 300, 4, 256, 8_000_000_000, 0, 50, 0)]


def test_routes_give_the_client_and_file_system_bandwidths():
    assert bandwidths(PLATFORM_16) == FS16
    # A 2-node job moving 1e9 B read and 2e9 B written per host: 1e9 / min(1.25e9, 5e8) + 2e9 / 5e8 = 6 s.
    assert FS16.alone(1e9, 2e9, 2) == pytest.approx(6.0)


def test_recurring_jobs_predict_a_job_and_the_rest_is_learned_within_its_bounds(tmp_path):
    paths = weeks(tmp_path, TRAIN + SCORED)
    model = iomodel.train([paths["t"]], FS16)
    workload, _ = iomodel.read_week(paths["w"])
    table = iomodel.io_table(workload, FS16)
    seconds, source = model.predict(table)
    assert list(source) == ["recurrence", "recurrence", "learned"]
    assert seconds[:2] == pytest.approx([60.0, 10.0])
    # Job 3: 8e9 B over 1e9 B/s is its floor (8 s); its run time (300 s) caps it.
    assert 8.0 <= seconds[2] <= 300.0
    assert table["low"].tolist() == pytest.approx([30.0, 10.0, 50.0])
    # High end: the per-rank time times the ranks, capped by the run time.
    assert table["high"].tolist() == pytest.approx([1000.0, 500.0, 300.0])


def test_the_low_end_is_raised_to_the_file_systems_floor(tmp_path):
    # 4e9 B written at 1e9 B/s take 4 s at the least; 1 s per rank was measured.
    paths = weeks(tmp_path, [row("w", 1, 0, 100, 4, 8, 0, 4_000_000_000, 0, 1)])
    table = iomodel.io_table(iomodel.read_week(paths["w"])[0], FS16)
    assert (table.loc[0, "measured"], table.loc[0, "floor"], table.loc[0, "low"]) == (1.0, 4.0, 4.0)


def test_a_saved_model_states_its_weeks_and_predicts_the_same(tmp_path):
    paths = weeks(tmp_path, TRAIN + SCORED + [row("u", 21, 0, 800, 4, 256, 8_000_000_000, 0, 40, 0)])
    model = iomodel.train([paths["t"], paths["u"]], FS16)
    model.save(tmp_path / "m.json")
    saved = json.loads((tmp_path / "m.json").read_text())
    assert saved["weeks"] == ["t", "u"] and saved["features"] == list(iomodel.FEATURES)
    assert saved["ranks_from"] == "sum_nprocs" and len(saved["held_out_log10_errors"]) == 3
    table = iomodel.io_table(iomodel.read_week(paths["w"])[0], FS16)
    assert iomodel.load(tmp_path / "m.json").predict(table)[0] == pytest.approx(model.predict(table)[0])
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    with pytest.raises(InputError, match=r"bad.json, field 'format': not a batio I/O model"):
        iomodel.load(tmp_path / "bad.json")


def test_own_io_makes_the_transfers_take_the_seconds_given_alone(tmp_path):
    paths = weeks(tmp_path, SCORED[:1])
    workload, _ = iomodel.read_week(paths["w"])
    # Job 1: 2 nodes, 1.025e9 B read and 2e9 B written per host: 2.05 + 4 = 6.05 s on the platform.
    iophases.give_io_times(workload, {"1": 60.0}, {"1": 970.0}, FS16, "low")
    job = workload["jobs"][0]
    assert (job["io_alone_s"], job["io_latency_s"], job["io_compute_s"]) == (60, pytest.approx(53.95), 970)
    assert workload["profiles"]["1_rest"]["delay"] == pytest.approx(970 + 53.95)
    path = iophases.write(workload, tmp_path / "own.json")
    jobs = replay(PLATFORM_16, path, tmp_path / "run" / "out").set_index("job_id")
    # 970 s + 60 s of I/O, and the links' latencies (milliseconds)
    assert jobs.loc["1", "execution_time"] == pytest.approx(1030.0, abs=0.01)


def test_the_high_end_is_lowered_until_each_job_ends_within_its_record(tmp_path):
    # Two 1-node jobs start together by reading 1e9 B each: 1 s alone, 2 s side by side (the file
    # system's 1 GB/s is shared). Job 1 (run time 10 s) is given 10 s of I/O at the high end: 9 s of
    # it latency, so it runs 11 s beside job 2 until 1 s of latency is taken off. Job 2 (run time
    # 1 s) is all bandwidth: it cannot end within its record.
    paths = weeks(tmp_path, [row("w", 1, 0, 10, 1, 1, 1_000_000_000, 0, 1, 0),
                             row("w", 2, 0, 1, 1, 1, 1_000_000_000, 0, 1, 0, walltime=100)])
    workload, _ = iomodel.read_week(paths["w"])
    iophases.give_io_times(workload, {"1": 10.0, "2": 1.0}, {"1": 0.0, "2": 0.0}, FS16, "high")
    rounds = iter(range(10))

    def run(candidate):
        step = tmp_path / f"r{next(rounds)}"
        return replay(PLATFORM_16, iophases.write(candidate, step / "w.json"), step / "out")
    assert iophases.within_record(workload, run) == ["2"]
    one = workload["jobs"][0]
    assert (one["io_latency_s"], one["io_alone_s"]) == (pytest.approx(8.0, abs=0.01), pytest.approx(9.0, abs=0.01))
    assert run(workload).set_index("job_id").loc["1", "execution_time"] == pytest.approx(10.0, abs=0.01)


def test_validate_scores_each_end_against_a_model_of_other_weeks(tmp_path):
    paths = weeks(tmp_path, TRAIN + SCORED)
    table, jobs = validate(PLATFORM_16, [paths["w"]], tmp_path / "out", train=[paths["t"]])
    jobs = jobs.set_index("job_id")
    # Job 1 recurs from job 11 (60 s): simulated 60 s for 30 s measured (100 % off); job 2 recurs
    # exactly (10 s for 10 s). Their transfers never overlap with another job's.
    assert jobs.loc["1", "simulated"] == pytest.approx(60.0, abs=0.01)
    assert jobs.loc["2", "simulated"] == pytest.approx(10.0, abs=0.01)
    # High end: job 1 min(60 x 128, 1000) = 1000 s against min(30 x 128, 1000) = 1000 s.
    assert jobs.loc["1", "simulated_high"] == pytest.approx(1000.0, abs=0.01)
    assert jobs.loc["1", "measured_high"] == pytest.approx(1000.0, abs=0.01)
    rows = table.set_index(["group", "predictor"])
    recurring = rows.loc[("w", RECURRING)]
    assert recurring["pairs"] == 2 and recurring["median_ape"] == pytest.approx(50.0, abs=0.05)
    assert recurring["median_fold"] == pytest.approx(10 ** (np.log10(2) / 2), abs=1e-3)
    assert rows.loc[("w", PLATFORM), "pairs"] == 3
    assert rows.loc[("w", PLATFORM_HIGH), "median_ape"] == pytest.approx(0.0, abs=0.01)
    assert rows.loc[("w", NOISE), "pairs"] == 0  # no shape recurs within the week
    written = json.loads((tmp_path / "out" / "iomodel.json").read_text())
    assert written["weeks"] == ["t"]


def test_validate_refuses_a_week_the_model_was_trained_on(tmp_path, capsys):
    paths = weeks(tmp_path, TRAIN + SCORED)
    assert main(["validate", "--platform", str(PLATFORM_16), "--workload", str(paths["t"]),
                 "--train", str(paths["t"]), "--out", str(tmp_path / "v")]) == 2
    assert "week 't' is one of the model's training weeks (t)" in capsys.readouterr().err
    assert main(["validate", "--platform", str(PLATFORM_16), "--workload", str(paths["w"]),
                 "--out", str(tmp_path / "v")]) == 2
    assert "give the training weeks (--train T.json ..., never the scored week) or a saved model" in (
        capsys.readouterr().err)


def test_iomodel_commands_train_and_apply_a_week(tmp_path, capsys):
    paths = weeks(tmp_path, TRAIN + SCORED + [row("u", 21, 0, 800, 2, 128, 2_000_000_000, 4_000_000_000, 25, 45)])
    model = tmp_path / "m.json"
    assert main(["iomodel", "train", str(paths["t"]), str(paths["u"]), "--platform", str(PLATFORM_16),
                 "--out", str(model)]) == 0
    out = tmp_path / "w_low.json"
    assert main(["iomodel", "apply", str(paths["w"]), "--model", str(model), "--platform", str(PLATFORM_16),
                 "--out", str(out)]) == 0
    assert "3 jobs that move bytes at the low end: 3 measured" in capsys.readouterr().out
    jobs = {job["id"]: job for job in json.loads(out.read_text())["jobs"]}
    assert jobs[1]["io_alone_s"] == 30 and jobs[1]["io_source"] == "measured"
    # A replica divides each job's seconds by 10 ** (an error drawn from the held-out ones), within
    # [floor, run time]: job 1's 30 s (floor 6.05 s) become one of those values.
    errors = iomodel.load(model).held_out
    assert len(errors) == 3 and errors[2] == pytest.approx(np.log10(60 / 70), abs=1e-6)  # job 21 predicted by job 11
    replica = iophases.replica(1, out, model)
    drawn = {job["id"]: job["io_alone_s"] for job in replica["jobs"]}
    assert any(drawn[1] == pytest.approx(max(6.05, 30 / 10 ** error), abs=1e-5) for error in errors)
    assert replica["trace"]["replica"]["seed"] == 1


def test_headroom_names_both_ends_of_the_machine_share(tmp_path):
    paths = weeks(tmp_path, SCORED[:2])
    bound = headroom(json.loads(paths["w"].read_text()), machine_nodes=16, week_seconds=10000)
    # Node-seconds: 2 x 1000 + 500 = 2500; in I/O (read + write + metadata per rank): job 1 2 x 31 s,
    # job 2 11 s (73); one rank at a time: 2 x min(1000, 31 x 128) + min(500, 11 x 64) = 2500.
    assert bound["io_share_low"] == pytest.approx(73 / 2500)
    assert bound["io_share_of_machine_high"] == pytest.approx(2500 / 160000)


def test_a_transfer_of_nanoseconds_keeps_a_positive_time_that_io_aware_accepts(tmp_path):
    # 100 B written at 1 GB/s: 1e-7 s, which six decimals would round to 0 (io_aware refuses 0).
    paths = weeks(tmp_path, [row("w", 1, 0, 100, 1, 1, 0, 100, 0, 0.0000001)])
    workload, _ = iomodel.read_week(paths["w"])
    iophases.give_io_times(workload, {"1": 1e-7}, {"1": 100.0}, FS16, "low")
    assert workload["jobs"][0]["io_alone_s"] == pytest.approx(1e-7)
    path = iophases.write(workload, tmp_path / "own.json")
    assert main(["run", "--platform", str(PLATFORM_16), "--workload", str(path), "--scheduler", "io_aware",
                 "--options", '{"limit": 1}', "--out", str(tmp_path / "run")]) == 0


def test_a_workload_not_imported_from_jobsio_records_is_one_clear_line(tmp_path, capsys):
    demo = Path(__file__).parents[1] / "workloads" / "demo.json"
    assert main(["iomodel", "train", str(demo), "--platform", str(PLATFORM_16), "--out", str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err == (f"batio: error: {demo}: no job with bytes and a measured transfer time to "
                                       "learn from (records without rank counts import as io_time_unknown)\n")
