"""Metrics of one run, computed from its output files only.

Definitions (all over the jobs that ran, i.e. not rejected):
- makespan: the last finish time (Batsim's definition, from time 0);
- wait: starting_time - submission_time;
- slowdown: Batsim's ``stretch``, turnaround / execution time;
- utilisation: sum of execution_time x requested hosts, over compute hosts x
  makespan (the fraction of compute host-time spent running jobs);
- bytes moved: read plus written on storage hosts (``_io.csv``; runs on real
  Batsim have no such file and report it as unknown).

Jobs a scheduler registered itself (Batsim's dynamic jobs, e.g. the file
loads of ``schedulers/locality/locality.py``) are means, not the user's work: the
metrics cover the jobs of the input workloads only, which Batsim names
``w0``, ``w1``, ... in the order they were given. Their bytes still count in
bytes moved.
"""

import json
from pathlib import Path

import pandas as pd

# The columns of a comparison's or a sweep's results, per run (summarize, and the I/O slowdown).
METRICS = ("jobs", "succeeded", "makespan", "mean_wait", "max_wait", "mean_slowdown", "max_slowdown",
           "utilisation", "bytes_moved", "mean_io_slowdown", "max_io_slowdown")


# Batsim leaves these empty for a rejected job; job ids and metadata keep
# their text as written (an id "NA" stays "NA").
_TIMES_OF_RUN_JOBS = ("starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time",
                      "stretch", "consumed_energy")


# Text as written: an id "007" stays "007", not the number 7.
_TEXT_COLUMNS = ("job_id", "workload_name", "profile", "final_state", "allocated_resources", "metadata")


def read_jobs(prefix):
    return pd.read_csv(f"{prefix}_jobs.csv", keep_default_na=False, encoding="utf-8",
                       dtype={column: str for column in _TEXT_COLUMNS},
                       na_values={column: [""] for column in _TIMES_OF_RUN_JOBS})


def bytes_moved(prefix):
    path = Path(f"{prefix}_io.csv")
    if not path.exists():
        return float("nan")
    io = pd.read_csv(path)
    if io.empty:
        return 0.0
    total = 0.0
    for _, rows in io.groupby("storage", sort=False):
        rows = rows.sort_values("time")
        spans = rows["time"].shift(-1) - rows["time"]
        total += ((rows["read_bytes_per_s"] + rows["write_bytes_per_s"]) * spans).sum()
    return float(total)


def summarize(prefix, nb_compute=None):
    """Return the summary of the run whose outputs start with ``prefix``."""
    record_path = Path(f"{prefix}_run.json")
    record = json.loads(record_path.read_text()) if record_path.exists() else None
    if nb_compute is None:
        nb_compute = record["nb_compute_resources"]
    jobs = read_jobs(prefix)
    if record is not None:
        inputs = {f"w{index}" for index in range(len(record["spec"]["workloads"]))}
        jobs = jobs[jobs["workload_name"].isin(inputs)]
    ran = jobs[jobs["final_state"] != "REJECTED"]
    makespan = float(ran["finish_time"].max()) if len(ran) else 0.0
    busy = float((ran["execution_time"] * ran["requested_number_of_resources"]).sum())
    return {
        "jobs": int(len(jobs)),
        "succeeded": int((jobs["final_state"] == "COMPLETED_SUCCESSFULLY").sum()),
        "makespan": makespan,
        "mean_wait": float(ran["waiting_time"].mean()) if len(ran) else 0.0,
        "max_wait": float(ran["waiting_time"].max()) if len(ran) else 0.0,
        "mean_slowdown": float(ran["stretch"].mean()) if len(ran) else 0.0,
        "max_slowdown": float(ran["stretch"].max()) if len(ran) else 0.0,
        "utilisation": busy / (nb_compute * makespan) if makespan > 0 else 0.0,
        "bytes_moved": bytes_moved(prefix),
    }


def format_summary(summary):
    rows = [
        ("jobs (succeeded)", f"{summary['jobs']} ({summary['succeeded']})"),
        ("makespan", f"{summary['makespan']:.1f} s"),
        ("mean wait", f"{summary['mean_wait']:.1f} s"),
        ("mean / max slowdown", f"{summary['mean_slowdown']:.3f} / {summary['max_slowdown']:.3f}"),
        ("utilisation", f"{100 * summary['utilisation']:.1f} %"),
        ("bytes moved", "unknown" if summary["bytes_moved"] != summary["bytes_moved"]
         else f"{summary['bytes_moved'] / 1e9:.3f} GB"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name:<{width}}  {value}" for name, value in rows)


def job_io_slowdowns(prefix, reference_prefix):
    """Per job: its execution time in the run over its execution time alone on
    the machine (the reference run), for jobs that succeeded in both. Compute
    is never shared between jobs (unless --enable-compute-sharing), so what
    slows a job down is the links and storage it shares: its I/O."""
    run, alone = read_jobs(prefix), read_jobs(reference_prefix)
    keys = ["workload_name", "job_id"]
    run = run[run["final_state"] == "COMPLETED_SUCCESSFULLY"].astype({"job_id": str})
    alone = alone[alone["final_state"] == "COMPLETED_SUCCESSFULLY"].astype({"job_id": str})
    both = run.merge(alone[keys + ["execution_time"]], on=keys, suffixes=("", "_alone"))
    both = both[both["execution_time_alone"] > 0]
    return pd.Series((both["execution_time"] / both["execution_time_alone"]).to_numpy(),
                     index=both["job_id"].to_numpy(), name="io_slowdown")
