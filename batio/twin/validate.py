"""``batio validate``: replay a recorded week with each job's own I/O and hold it against the measurements.

A week imported by ``batio import jobsio`` carries, per job, its recorded
start and run time and the two ends of its measured transfer time: the
low end (Darshan's seconds per rank: all ranks at once), raised to the
file system's floor, and the high end (the ranks' summed seconds, capped
by the run time, and lowered until the job, replayed amid the week's
contention, ends within its recorded run time: ``iophases.within_record``).

An I/O model (``batio.twin.iomodel``) trained on *other* weeks predicts each
job's low end; its high end follows as that times the job's ranks, capped
by the run time. Each end is a scenario: the jobs' profiles get the
predicted seconds (``batio.twin.iophases``), the ``replay`` policy starts every
job at its recorded start, and the engine adds contention where jobs meet.
A job's simulated I/O time is its execution time minus its compute time.
Jobs killed at their walltime stay in, with their simulated time, and are
counted; as they are cut short, the model's own predictions are scored
beside the replay (``MODEL``), unflattered. Reference rows: the jobs of the week that recur within it
predicting each other (the noise floor a model cannot beat), and one
bandwidth for every job (the single-bandwidth platform), fitted on the
training weeks. Statistics: ``batio.twin.accuracy``.
"""

import copy
import logging
import math
from pathlib import Path
import re

import numpy as np
import pandas as pd

from batio import engines
from batio.engines.embedded.routes import bandwidths as platform_bandwidths
from batio.errors import InputError
from batio.outfiles import file_set
from batio.report.metrics import read_jobs
from batio.resolve import resolve
from batio.twin import iomodel, iophases
from batio.twin.accuracy import STATS, error_stats, median_fold

log = logging.getLogger(__name__)

PLATFORM = "platform (replay)"
PLATFORM_HIGH = "platform (replay), high end"
RECURRING = "platform (replay), recurring shapes"
BASELINE = "baseline: one bandwidth for every job"
MODEL = "I/O model alone (no replay)"
NOISE = "reference: jobs recurring within the week"
COLUMNS = ("group", "predictor", *STATS, "median_fold", "inside_interval", "killed")
# predictor -> (its column of validation_jobs.csv, the measured end it is scored against, its final state)
SCORED = {PLATFORM: ("simulated", "measured_low", "final_state"),
          PLATFORM_HIGH: ("simulated_high", "measured_high", "final_state_high"),
          RECURRING: ("simulated", "measured_low", "final_state"),
          MODEL: ("predicted", "measured_low", None),
          BASELINE: ("baseline", "measured_low", None),
          NOISE: ("noise_floor", "measured_low", None)}


def label(week):
    """A week's name as a folder name under --out: a label, never a path."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(week)).lstrip(".") or "week"


def replay(platform, workload_path, out_prefix):
    """Run the replay policy; the jobs' _jobs.csv rows (job_id, starting_time, execution_time, final_state)."""
    engines.run(resolve("replay", {}, str(platform), [str(workload_path)], out_prefix).spec)
    jobs = read_jobs(out_prefix)
    return jobs[["job_id", "starting_time", "execution_time", "final_state"]]


def replayer(platform, folder, name):
    """A function that replays a workload (a dict) on ``platform``, each call in its own numbered
    folder ``folder/NAME1``, ``NAME2``...: what ``iophases.within_record`` calls."""
    rounds = iter(range(1, 100))

    def run(workload):
        step = f"{name}{next(rounds)}"
        return replay(platform, iophases.write(workload, folder / f"{step}.json"), folder / step / "out")
    return run


def single_bandwidth(training, fs):
    """(bytes/s of one client, its seconds function): the one bandwidth per node that best predicts the
    training jobs' low ends (least median % error, log grid), each job alone: bytes / min(nodes x b, fs)."""
    measured = 10 ** training["log_target"].to_numpy()

    def seconds(frame, b):
        return (frame["read_bytes"] / np.minimum(frame["res"] * b, fs["read"])
                + frame["written_bytes"] / np.minimum(frame["res"] * b, fs["write"]))
    grid = np.logspace(5, 12, 701)
    errors = [error_stats(seconds(training, b), measured)["median_ape"] for b in grid]
    return float(grid[int(np.argmin(errors))]), seconds


def noise_floor(table):
    """Per job, the median low end of the *other* jobs of its week with its shape (iomodel's recurrence);
    NaN where none."""
    found = np.full(len(table), np.nan)
    known = table[np.isfinite(table["measured"])].assign(log_target=lambda t: np.log10(t["low"]))
    position = {job_id: i for i, job_id in enumerate(table["job_id"])}
    for _, group in known.groupby(["res", "ranks"]):
        for i, row in enumerate(group.itertuples(index=False)):
            others = group.drop(group.index[i])
            found[position[row.job_id]] = iomodel.recurrence(others, pd.DataFrame([row._asdict()]))[0]
    return 10 ** found


def _model(train, model, fs):
    if bool(train) == bool(model):
        raise InputError("--train", "give the training weeks (--train T.json ..., never the scored week) or a "
                                    "saved model (--model M.json), one of them")
    return iomodel.load(model) if model else iomodel.train(train, fs)


def _check_week(path, workload, week, model):
    if week in model.weeks:
        raise InputError(path, f"week {week!r} is one of the model's training weeks ({', '.join(model.weeks)}): "
                               "score a week with a model trained on other weeks")
    if iomodel.ranks_from(workload) != model.ranks_from:
        raise InputError(path, f"counts the ranks doing I/O from {iomodel.ranks_from(workload)}, the model's "
                               f"training weeks from {model.ranks_from}: import every week the same way "
                               "(with or without --runs)")


def score_week(platform, path, model, fs, folder):
    """The per-job frame of one week (see the module doc)."""
    workload, week = iomodel.read_week(path)
    _check_week(path, workload, week, model)
    table = iomodel.io_table(workload, fs)
    if not np.isfinite(table["measured"]).any():
        raise InputError(path, "no job with bytes and a measured transfer time (records without rank counts "
                               "import as io_time_unknown: see the workload's trace block), so nothing to validate")
    predicted, source = model.predict(table)
    predicted_high = iomodel.high_end(table, predicted)
    known = np.isfinite(table["measured"])
    ends = iophases.measured_ends(table)

    measured_high = copy.deepcopy(workload)
    iophases.give_io_times(measured_high, *ends["high"], fs, "high")
    unfit = iophases.within_record(measured_high, replayer(platform, folder, "high_measured"))
    allowed = {str(job["id"]): job["io_alone_s"] for job in measured_high["jobs"] if "io_alone_s" in job}
    high = table["job_id"].map(allowed).to_numpy(dtype=float)

    frame = table.assign(group=week, measured_low=table["low"].where(known), measured_high=high,
                         predicted=predicted, predicted_high=predicted_high, source=source,
                         unfit_high=table["job_id"].isin(unfit))
    for end, seconds, rest in (("low", predicted, table["runtime"] - table["low"].where(known, predicted)),
                               ("high", predicted_high, table["runtime"] - pd.Series(high).where(
                                   known, predicted_high))):
        scenario = copy.deepcopy(workload)
        ids = table["job_id"]
        iophases.give_io_times(scenario, dict(zip(ids, seconds)), dict(zip(ids, rest)), fs, end,
                               dict(zip(ids, source)))
        jobs = replayer(platform, folder, f"{end}_predicted")(scenario).set_index("job_id")
        suffix = "" if end == "low" else "_high"
        compute = pd.Series({str(job["id"]): job.get("io_compute_s", math.nan) for job in scenario["jobs"]})
        frame[f"simulated{suffix}"] = (jobs["execution_time"] - compute).reindex(ids).to_numpy()
        frame[f"final_state{suffix}"] = jobs["final_state"].reindex(ids).to_numpy()
    frame["noise_floor"] = noise_floor(table)
    return frame


def _row(group, predictor, frame):
    column, measured, state = SCORED[predictor]
    rows = frame[frame["source"] == "recurrence"] if predictor == RECURRING else frame
    stats = error_stats(rows[column], rows[measured])
    inside = rows[column].between(rows["measured_low"] * (1 - 1e-9), rows["measured_high"] * (1 + 1e-9))
    scored = np.isfinite(rows[measured]) & np.isfinite(rows[column])
    return {"group": group, "predictor": predictor, **stats, "median_fold": median_fold(rows[column], rows[measured]),
            "inside_interval": float(inside[scored].mean()) if scored.any() else math.nan,
            "killed": int((rows[state] != "COMPLETED_SUCCESSFULLY").sum()) if state else 0}


def statistics(frame):
    """The COLUMNS table: one row per group and predictor, then each predictor over all groups."""
    rows = []
    for group, part in [*frame.groupby("group", sort=True), ("all", frame)]:
        rows += [_row(group, predictor, part) for predictor in SCORED]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def folders(workloads):
    """{workload path: its folder under --out}, every week read and checked before anything runs:
    two workloads of one week (or of weeks whose folders would be one) are refused, not merged."""
    weeks: dict[Path, tuple[Path, str]]
    found, weeks = {}, {}
    for path in workloads:
        week = iomodel.read_week(path)[1]
        folder = label(week)
        if folder in weeks:
            first_path, first_week = weeks[folder]
            same = f"week {week!r}" if week == first_week else f"weeks {first_week!r} and {week!r} (one folder)"
            raise InputError(path, f"{same} also in {first_path}: score each week once, in one workload")
        weeks[folder] = (path, week)
        found[path] = folder
    return found


def validate(platform, workloads, out, train=None, model=None):
    """(statistics table, per-job frame) of each workload replayed on ``platform`` with the I/O model
    trained on ``train`` (or loaded from ``model``); written to ``out`` (validation.csv,
    validation_jobs.csv, and iomodel.json when trained here)."""
    scored = folders(workloads)
    out = Path(out)
    # The model and the two tables of one validation go together: written whole or not at all (the
    # weeks' replays, in their own folders, are working files).
    with file_set(out, replaces=("iomodel.json",)) as staging:
        fs = platform_bandwidths(platform)
        fitted = _model(train, model, fs)
        if train:
            fitted.save(staging / "iomodel.json")
        bandwidth, seconds = single_bandwidth(fitted.training, fitted.fs)
        log.info("one bandwidth for every job: %.4g B/s per node, fitted on %s", bandwidth, ", ".join(fitted.weeks))
        frames = []
        for path, folder in scored.items():
            frame = score_week(platform, path, fitted, fs, out / folder)
            frames.append(frame.assign(baseline=seconds(frame, bandwidth).where(np.isfinite(frame["measured_low"]))))
        frame = pd.concat(frames, ignore_index=True)
        table = statistics(frame)
        table.to_csv(staging / "validation.csv", index=False)
        columns = ["group", "job_id", "res", "read_bytes", "written_bytes", "source", "measured_low", "measured_high",
                   "predicted", "predicted_high", "simulated", "simulated_high", "final_state", "final_state_high",
                   "unfit_high", "baseline", "noise_floor"]
        frame[columns].to_csv(staging / "validation_jobs.csv", index=False)
    return table, frame


def format_table(table):
    """The table as text, one line per row (with the fold and interval columns where the table has them)."""
    extra = "median_fold" in table.columns
    lines = [f"{'group':<24} {'predictor':<42} {'pairs':>6} {'median %':>9} {'p90 %':>9} {'±25 %':>6} "
             f"{'Spearman':>8}" + (f" {'fold':>6} {'inside':>6} {'killed':>6}" if extra else "")]
    for row in table.itertuples(index=False):
        lines.append(f"{row.group:<24} {row.predictor:<42} {row.pairs:>6} {row.median_ape:>9.1f} "
                     f"{row.p90_ape:>9.1f} {row.within_25:>6.2f} {row.spearman:>8.2f}"
                     + (f" {row.median_fold:>6.2f} {row.inside_interval:>6.2f} {row.killed:>6}" if extra else ""))
    return "\n".join(lines)


def headroom(workload, machine_nodes=None, week_seconds=7 * 86400):
    """What any I/O-aware policy could gain at most, from the measurements alone (a dict).

    A policy cannot make a job's I/O take less than no time, so the node-hours it can
    free are at most those the jobs held while in I/O. From Darshan's times summed over
    ranks, a job's I/O wall time lies between the per-rank time (all ranks did I/O at
    once: ``low``) and the summed rank time capped at its run time (one rank at a time:
    ``high``). The node-hours a policy could free lie between the two: ``low`` if all ranks
    did their I/O at once, ``high`` if one after the other; the upper bound is ``high``.
    Shares are of the jobs' node-hours and, given ``machine_nodes``, of the machine's
    node-hours in a week."""
    held = io_low = io_high = 0.0
    known = 0
    for job in workload["jobs"]:
        runtime = job["recorded_end"] - job["recorded_start"]
        held += job["res"] * runtime
        if "measured_meta_s" not in job:
            continue
        known += 1
        per_rank = job["measured_read_s"] + job["measured_write_s"] + job["measured_meta_s"]
        io_low += job["res"] * per_rank
        io_high += job["res"] * min(runtime, per_rank * job["io_ranks"])
    measured = known > 0 and held > 0
    result = {"jobs": len(workload["jobs"]), "jobs_with_io_times": known, "node_hours": held / 3600,
              "io_share_low": io_low / held if measured else math.nan,
              "io_share_high": io_high / held if measured else math.nan}
    if machine_nodes:
        result["jobs_share_of_machine"] = held / (machine_nodes * week_seconds)
        result["io_share_of_machine_low"] = io_low / (machine_nodes * week_seconds) if measured else math.nan
        result["io_share_of_machine_high"] = io_high / (machine_nodes * week_seconds) if measured else math.nan
    return result
