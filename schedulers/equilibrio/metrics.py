"""EquilibrIO's evaluation metrics (seed 003, slide "Evaluation metrics"),
from a run's output files and its workload.

Design notes (the model, its sources, the choices made): this folder's README.md, section metrics.py.
"""
from __future__ import annotations

from dataclasses import dataclass
import json
import math
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from batio.errors import InvalidValue
from batio.report.metrics import read_jobs


class Alone(Protocol):
    """What the metrics ask of a model of jobs run alone (``AloneModel``, or
    one whose bandwidths depend on the job's size)."""

    def phase_times(self, profile: dict, profiles: dict, nodes: int) -> tuple[float, float]:
        """(transfer seconds, fixed seconds) of a profile run alone on ``nodes`` nodes."""


@dataclass(frozen=True)
class AloneModel:
    """What one job gets alone: node speed (flop/s), node link, PFS read and
    write bandwidths (bytes/s)."""

    node_speed: float
    node_bw: float
    read_bw: float
    write_bw: float

    def phase_times(self, profile: dict, profiles: dict, nodes: int) -> tuple[float, float]:
        """(transfer seconds, fixed seconds) of a profile run alone on ``nodes`` nodes."""
        kind = profile["type"]
        if kind == "composed":
            transfer = fixed = 0.0
            for name in profile["seq"]:
                more = self.phase_times(profiles[name], profiles, nodes)
                transfer, fixed = transfer + more[0], fixed + more[1]
            repeat = profile.get("repeat", 1)
            return repeat * transfer, repeat * fixed
        if kind == "delay":
            return 0.0, float(profile["delay"])
        if kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
            if profile.get("com", 0):
                raise InvalidValue("communication between nodes is not modelled alone")
            cpu = float(profile["cpu"]) / (nodes if kind == "parallel_homogeneous_total" else 1)
            return 0.0, cpu / self.node_speed
        if kind == "parallel_homogeneous_pfs":
            read = nodes * float(profile.get("bytes_to_read", 0)) / min(nodes * self.node_bw, self.read_bw)
            write = nodes * float(profile.get("bytes_to_write", 0)) / min(nodes * self.node_bw, self.write_bw)
            return max(read, write), 0.0
        raise InvalidValue(f"profile type {kind!r} has no alone time here")


THETA_QUARTER = AloneModel(node_speed=2.66e12, node_bw=12.5e9, read_bw=60e9, write_bw=43e9)
"""``platforms/theta_quarter.xml``."""


def workload_jobs(workload: dict | str | Path, model: Alone = THETA_QUARTER) -> pd.DataFrame:
    """One row per workload job (index: job id as in ``_jobs.csv``): its
    size, io_intensity (GB/s, NaN without the fields), I/O class, and
    transfer, fixed and total time alone."""
    data = workload if isinstance(workload, dict) else json.loads(Path(workload).read_text())
    profiles = data["profiles"]
    rows = []
    for job in data["jobs"]:
        transfer, fixed = model.phase_times(profiles[job["profile"]], profiles, job["res"])
        share, bw = job.get("io_walltime_share"), job.get("average_bw")
        rows.append({"job_id": str(job["id"]), "res": job["res"],
                     "io_walltime_share": np.nan if share is None else float(share),
                     "io_intensity": np.nan if share is None or bw is None else float(share) * float(bw),
                     "io_class": job.get("io_class", ""),
                     "transfer_alone": transfer, "fixed_alone": fixed, "runtime_alone": transfer + fixed})
    return pd.DataFrame(rows).set_index("job_id")


def _ran(prefix) -> pd.DataFrame:
    jobs = read_jobs(prefix)
    jobs = jobs[jobs["final_state"] != "REJECTED"].copy()
    jobs["job_id"] = jobs["job_id"].astype(str)
    return jobs.set_index("job_id")


def job_metrics(prefix, workload, model: Alone = THETA_QUARTER) -> pd.DataFrame:
    """Per-job metrics (see README.md) of the run at ``prefix``."""
    jobs = _ran(prefix).join(workload_jobs(workload, model), how="left")
    execution = jobs["execution_time"]
    jobs["job_slowdown"] = (execution / jobs["runtime_alone"] - 1) * 100
    transfer = jobs["transfer_alone"].where(jobs["transfer_alone"] > 0)
    jobs["io_slowdown"] = ((execution - jobs["fixed_alone"]) / transfer - 1) * 100
    non_io = ((1 - jobs["io_walltime_share"]) * jobs["runtime_alone"]).fillna(jobs["fixed_alone"])
    jobs["utilisation"] = non_io / execution
    jobs["displacement"] = displacement(jobs)
    return jobs


def displacement(jobs: pd.DataFrame) -> pd.Series:
    """|start position - arrival position| of each job (index: job id)."""
    key = pd.Series([_natural(job_id) for job_id in jobs.index], index=jobs.index)
    arrival = sorted(jobs.index, key=lambda j: (jobs.at[j, "submission_time"], key[j]))
    arrival_position = {job_id: i for i, job_id in enumerate(arrival)}
    start = sorted(jobs.index, key=lambda j: (jobs.at[j, "starting_time"], arrival_position[j]))
    return pd.Series({job_id: abs(i - arrival_position[job_id]) for i, job_id in enumerate(start)},
                     dtype=float).reindex(jobs.index)


def _natural(job_id: str):
    return (0, int(job_id), "") if job_id.isdigit() else (1, 0, job_id)


def intensity_timeline(prefix, workload, model: Alone = THETA_QUARTER) -> pd.DataFrame:
    """io_intensity(S) and io_intensity(W) over time: rows (time, S, W,
    nb_running, nb_in_system), each holding from ``time`` to the next row.

    Events at one instant apply together; jobs without I/O fields do not
    count."""
    jobs = _ran(prefix).join(workload_jobs(workload, model)[["io_intensity"]], how="left")
    jobs = jobs[jobs["io_intensity"].notna()]
    events = []  # (time, d running sum, d running count, d system sum, d system count)
    for row in jobs.itertuples():
        value = row.io_intensity
        events.append((row.submission_time, 0.0, 0, value, 1))
        events.append((row.starting_time, value, 1, 0.0, 0))
        events.append((row.finish_time, -value, -1, -value, -1))
    if not events:
        return pd.DataFrame(columns=["time", "S", "W", "nb_running", "nb_in_system"])
    frame = pd.DataFrame(events, columns=["time", "ds", "dn", "dw", "dm"])
    grouped = frame.groupby("time", sort=True)[["ds", "dn", "dw", "dm"]].sum()
    totals = grouped.cumsum()
    running, system = totals["dn"].round().astype(int), totals["dm"].round().astype(int)
    s = np.where(running > 0, totals["ds"] / running.clip(lower=1), 0.0)
    w = np.where(system > 0, totals["dw"] / system.clip(lower=1), 0.0)
    return pd.DataFrame({"time": grouped.index.to_numpy(dtype=float), "S": s, "W": w,
                         "nb_running": running.to_numpy(), "nb_in_system": system.to_numpy()})


def mean_distance(timeline: pd.DataFrame, start: float | None = None, end: float | None = None) -> float:
    """Time average of |S - W| over the timeline (optionally within [start,
    end]), over the times with at least one job in the system."""
    if len(timeline) < 2:
        return 0.0
    times = timeline["time"].to_numpy(dtype=float)
    spans = np.diff(times)
    lows, highs = times[:-1], times[1:]
    if start is not None or end is not None:
        lows = np.maximum(lows, -math.inf if start is None else start)
        highs = np.minimum(highs, math.inf if end is None else end)
        spans = np.clip(highs - lows, 0, None)
    distance = np.abs(timeline["S"].to_numpy() - timeline["W"].to_numpy())[:-1]
    occupied = timeline["nb_in_system"].to_numpy()[:-1] > 0
    weight = spans * occupied
    total = weight.sum()
    return float((distance * weight).sum() / total) if total > 0 else 0.0


def summary(prefix, workload, model: Alone = THETA_QUARTER) -> dict:
    """The poster's numbers for one run: medians and means of the per-job
    metrics (all jobs, and high-intensity jobs if the workload marks them),
    mean displacement, mean distance, makespan, kills."""
    jobs = job_metrics(prefix, workload, model)
    timeline = intensity_timeline(prefix, workload, model)
    result = {"jobs": int(len(jobs)),
              "killed": int((jobs["final_state"] != "COMPLETED_SUCCESSFULLY").sum()),
              "makespan": float(jobs["finish_time"].max()) if len(jobs) else 0.0,
              "mean_wait": float(jobs["waiting_time"].mean()) if len(jobs) else 0.0,
              "mean_distance": mean_distance(timeline)}
    groups = {"all": jobs}
    if (jobs["io_class"] == "high").any():
        groups["high"] = jobs[jobs["io_class"] == "high"]
    for name, group in groups.items():
        for metric in ("job_slowdown", "io_slowdown", "utilisation", "displacement"):
            values = group[metric].dropna()
            result[f"{name}_{metric}_median"] = float(values.median()) if len(values) else float("nan")
            result[f"{name}_{metric}_mean"] = float(values.mean()) if len(values) else float("nan")
    return result
