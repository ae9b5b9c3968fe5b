"""``batio validate``: replay a recorded week and hold each job's simulated I/O time against its measured one.

The workload comes from ``batio import jobsio``: each job carries
``recorded_start`` and ``measured_transfer_s``, the per-rank seconds of the
directions (read, write) whose bytes its file-system phases move. The
``replay`` policy starts every job at its recorded start on the engine;
a job's simulated transfer time is then its execution time minus its delay
phase (the rest of its recorded run time), since nothing else in its
profile takes time. Jobs that do not complete (killed at their walltime)
are left out of the pairs and counted. Against it stands a stated baseline: the job's bytes at
the median measured per-job bandwidth (bytes / measured transfer time) of a
training workload (``--train``; default the validated workload itself,
which favours the baseline). Statistics: ``batio.accuracy``.
"""

import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from batio import catalog, engines
from batio.accuracy import STATS, error_table
from batio.errors import InputError
from batio.inputs.spec import RunSpec
from batio.metrics import read_jobs

log = logging.getLogger(__name__)

PLATFORM = "platform (replay)"
BASELINE = "baseline: bytes / median bandwidth"
COLUMNS = ("group", "predictor", *STATS)


def load(path):
    """A workload written by ``batio import jobsio`` (its jobs must carry recorded_start)."""
    try:
        workload = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise InputError(path, f"cannot read the workload: {error}") from None
    jobs = workload.get("jobs") if isinstance(workload, dict) else None
    if not jobs:
        raise InputError(path, "no jobs")
    lacking = [job.get("id") for job in jobs if "recorded_start" not in job]
    if lacking:
        raise InputError(path, f"{len(lacking)} jobs lack recorded_start (import it with `batio import jobsio`)",
                         job=lacking[0], field="recorded_start")
    return workload


def group_name(workload, path):
    return (workload.get("trace") or {}).get("week") or Path(path).stem


def measured_jobs(workload):
    """One row per job: id, res, bytes moved, measured transfer seconds (NaN: unknown), delay seconds."""
    profiles = workload["profiles"]
    rows = []
    for job in workload["jobs"]:
        seq = profiles[job["profile"]].get("seq", [job["profile"]])
        delay = sum(profiles[name]["delay"] for name in seq if profiles[name]["type"] == "delay")
        rows.append({"job_id": str(job["id"]), "res": job["res"], "recorded_start": job["recorded_start"],
                     "bytes": job.get("read_bytes", 0) + job.get("written_bytes", 0),
                     "measured": job.get("measured_transfer_s", np.nan), "delay": delay})
    return pd.DataFrame(rows)


def median_bandwidth(jobs, source="--train"):
    """Median over jobs with bytes and a measured transfer time of bytes / that time (B/s);
    ``source`` names the workload in the error when there is none."""
    known = jobs[(jobs["bytes"] > 0) & (jobs["measured"] > 0)]
    if known.empty:
        raise InputError(source, "no job with bytes and a measured transfer time (records without rank counts "
                                 "import as io_time_unknown: see the workload's trace block), so nothing to "
                                 "validate or to take a baseline bandwidth from")
    return float((known["bytes"] / known["measured"]).median())


def replay(platform, workload_path, out_prefix):
    """Run the replay policy; the jobs' _jobs.csv rows (job_id, starting_time, execution_time, final_state)."""
    scheduler, _ = catalog.scheduler_file_and_options("replay")
    engines.run(RunSpec(platform=str(platform), workloads=[str(workload_path)], scheduler=str(scheduler),
                     out_prefix=str(out_prefix)))
    jobs = read_jobs(out_prefix)
    return jobs[["job_id", "starting_time", "execution_time", "final_state"]]


def compare(jobs, simulated, bandwidth):
    """The per-job pairs: measured, simulated (execution minus delay) and baseline seconds."""
    frame = jobs.merge(simulated, on="job_id", how="left")
    # A job killed at its walltime (one that ran past its limit on the real machine has
    # walltime = run time) has no simulated transfer time, only a bound: left out, counted.
    completed = frame["final_state"] == "COMPLETED_SUCCESSFULLY"
    frame["simulated"] = (frame["execution_time"] - frame["delay"]).where(completed)
    frame["baseline"] = (frame["bytes"] / bandwidth).where(completed)  # on the same pairs as the platform
    frame["start_delay"] = frame["starting_time"] - frame["recorded_start"]
    return frame


def statistics(frame):
    """The COLUMNS table: one row per group and predictor, then each predictor over all groups."""
    tables = []
    for predictor, column in ((PLATFORM, "simulated"), (BASELINE, "baseline")):
        table = error_table(frame, column, "measured", by="group")
        table.insert(1, "predictor", predictor)
        tables.append(table)
    table = pd.concat(tables, ignore_index=True)[list(COLUMNS)]
    order = table["group"].eq("all").astype(int)  # each group's rows, then those over all groups
    return table.assign(_last=order).sort_values(["_last", "group", "predictor"], kind="stable").drop(
        columns="_last").reset_index(drop=True)


def validate(platform, workloads, out, train=None):
    """(statistics table, per-job frame) of the replay of each workload on ``platform``;
    both written to ``out`` (validation.csv, validation_jobs.csv)."""
    out = Path(out)
    train_jobs = measured_jobs(load(train)) if train else None
    if train_jobs is not None:
        median_bandwidth(train_jobs, train)  # a training week without measurements: said before any replay
    frames = []
    for path in workloads:
        workload = load(path)
        group = group_name(workload, path)
        jobs = measured_jobs(workload)
        median_bandwidth(jobs, path)  # no measured job: nothing to hold the simulation against
        bandwidth = median_bandwidth(jobs if train_jobs is None else train_jobs, train or path)
        log.info("%s: baseline bandwidth %.4g B/s (%s)", group, bandwidth, train or "in-sample")
        folder = out / group
        folder.mkdir(parents=True, exist_ok=True)
        frame = compare(jobs, replay(platform, path, folder / "out"), bandwidth)
        frame.insert(0, "group", group)
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    table = statistics(frame)
    table.to_csv(out / "validation.csv", index=False)
    frame.to_csv(out / "validation_jobs.csv", index=False)
    return table, frame


def format_table(table):
    """The table as text, one line per row."""
    lines = [f"{'group':<24} {'predictor':<36} {'pairs':>6} {'median %':>9} {'p90 %':>9} {'±25 %':>6} "
             f"{'Spearman':>8}"]
    for row in table.itertuples(index=False):
        lines.append(f"{row.group:<24} {row.predictor:<36} {row.pairs:>6} {row.median_ape:>9.1f} "
                     f"{row.p90_ape:>9.1f} {row.within_25:>6.2f} {row.spearman:>8.2f}")
    return "\n".join(lines)


def headroom(workload, machine_nodes=None, week_seconds=7 * 86400):
    """What any I/O-aware policy could gain at most, from the measurements alone (a dict).

    A policy cannot make a job's I/O take less than no time, so the node-hours it can
    free are at most those the jobs held while in I/O. From Darshan's times summed over
    ranks, a job's I/O wall time lies between the per-rank time (all ranks did I/O at
    once: ``low``) and the summed rank time capped at its run time (one rank at a time:
    ``high``); the bound is ``high``. Shares are of the jobs' node-hours and, given
    ``machine_nodes``, of the machine's node-hours in a week."""
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
    return result
