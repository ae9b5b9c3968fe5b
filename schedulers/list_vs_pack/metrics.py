"""Metrics of the list-versus-pack study (seed 001, section "Evaluation
criterion" and "Idle time vs stretch"), from a run's output files and the
job metadata of its workload (``workloads/periodic.py``).

Design notes (the model, its sources, the choices made): this folder's README.md, section metrics.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from batio.errors import InvalidValue

METADATA = ["iterations", "compute_time", "io_volume", "io_time", "period", "alone_time", "avg_bandwidth",
            "io_share", "io_kind"]


def load_jobs(prefix, workload) -> pd.DataFrame:
    """``out_jobs.csv`` of a run joined with its workload's job metadata.

    ``workload``: the workload JSON's path or its parsed dict. Adds ``work``
    (Q n w), ``stretch_io`` (execution time / alone time) and ``pack`` /
    ``backfilled`` when the scheduler set ``pack=K;backfilled=B`` metadata.
    """
    if not isinstance(workload, dict):
        workload = json.loads(Path(workload).read_text())
    jobs = pd.read_csv(f"{prefix}_jobs.csv", keep_default_na=False, na_values={"starting_time": [""]},
                       dtype={"job_id": str, "metadata": str})
    fields = pd.DataFrame([{"job_id": str(job["id"]), "Q": job["res"], **{k: job.get(k) for k in METADATA}}
                           for job in workload["jobs"]])
    jobs = jobs.merge(fields, on="job_id", how="left", validate="one_to_one")
    missing = jobs["alone_time"].isna()
    if missing.any():
        raise InvalidValue(f"{prefix}: jobs {list(jobs.loc[missing, 'job_id'])} have no 'alone_time' "
                         "metadata: not a periodic workload (workloads/periodic.py)")
    jobs = jobs[jobs["final_state"] != "REJECTED"].copy()
    jobs["start"] = jobs["starting_time"].astype(float)
    jobs["finish"] = jobs["finish_time"].astype(float)
    jobs["work"] = jobs["Q"] * jobs["iterations"] * jobs["compute_time"]
    jobs["stretch_io"] = (jobs["finish"] - jobs["start"]) / jobs["alone_time"]
    meta = jobs["metadata"].fillna("").astype(str)
    jobs["pack"] = meta.str.extract(r"pack=(\d+)")[0].astype(float)
    jobs["backfilled"] = meta.str.extract(r"backfilled=(\d)")[0].astype(float)
    return jobs


def lower_bound(workload, nb_hosts) -> float:
    """sum_i Q_i T_i(b) / P: no schedule ends earlier."""
    if not isinstance(workload, dict):
        workload = json.loads(Path(workload).read_text())
    return sum(job["res"] * job["alone_time"] for job in workload["jobs"]) / nb_hosts


def stretches(jobs: pd.DataFrame) -> pd.Series:
    return jobs["stretch_io"]


def makespan(jobs: pd.DataFrame) -> float:
    return float(jobs["finish"].max()) if len(jobs) else 0.0


def utilisation(jobs: pd.DataFrame, nb_hosts: int) -> float:
    """U(makespan): all the work over P x makespan."""
    end = makespan(jobs)
    return float(jobs["work"].sum() / (nb_hosts * end)) if end > 0 else 0.0


def idle_ratio(jobs: pd.DataFrame, nb_hosts: int) -> float:
    end = makespan(jobs)
    if end <= 0:
        return 0.0
    return float(1 - (jobs["Q"] * (jobs["finish"] - jobs["start"])).sum() / (nb_hosts * end))


def _step_integral(starts, ends, rates, edges) -> np.ndarray:
    """Integral over each bin [edges[k], edges[k+1]) of sum_i rates_i 1[starts_i <= t < ends_i]."""
    starts, ends, rates = (np.asarray(x, float) for x in (starts, ends, rates))
    edges = np.asarray(edges, float)

    def cumulative(t):  # integral from 0 to each t, for every job, summed
        inside = np.clip(t[:, None], starts[None, :], ends[None, :]) - starts[None, :]
        return (inside * rates[None, :]).sum(axis=1)

    return np.diff(cumulative(edges))


def work_done(jobs: pd.DataFrame, times) -> np.ndarray:
    """Host-seconds of computation done by each time in ``times``."""
    times = np.asarray(times, float)
    duration = (jobs["finish"] - jobs["start"]).to_numpy()
    rates = np.divide(jobs["work"].to_numpy(), duration, out=np.zeros(len(jobs)), where=duration > 0)
    return np.concatenate([[0.0], np.cumsum(_step_integral(jobs["start"], jobs["finish"], rates,
                                                           np.concatenate([[0.0], times])))])[1:]


def cumulative_utilisation(jobs: pd.DataFrame, nb_hosts: int, times) -> np.ndarray:
    """The paper's U(t) = work done by t / (P t), at each of ``times`` (> 0)."""
    times = np.asarray(times, float)
    return work_done(jobs, times) / (nb_hosts * times)


def instant_utilisation(jobs: pd.DataFrame, nb_hosts: int, edges) -> np.ndarray:
    """Work rate over P, averaged over each bin of ``edges``."""
    duration = (jobs["finish"] - jobs["start"]).to_numpy()
    rates = np.divide(jobs["work"].to_numpy(), duration, out=np.zeros(len(jobs)), where=duration > 0)
    return _step_integral(jobs["start"], jobs["finish"], rates, edges) / (nb_hosts * np.diff(edges))


def resource_usage(jobs: pd.DataFrame, nb_hosts: int, bandwidth: float, edges, io_csv=None) -> dict:
    """Bin averages of running jobs, allocated host fraction, planned and
    (with ``io_csv``) measured bandwidth fraction."""
    edges = np.asarray(edges, float)
    widths = np.diff(edges)
    ones = np.ones(len(jobs))
    usage = {
        "running_jobs": _step_integral(jobs["start"], jobs["finish"], ones, edges) / widths,
        "hosts": _step_integral(jobs["start"], jobs["finish"], jobs["Q"], edges) / widths / nb_hosts,
        "bandwidth_planned": _step_integral(jobs["start"], jobs["finish"], jobs["avg_bandwidth"], edges)
        / widths / bandwidth,
    }
    if io_csv is not None and Path(io_csv).exists():
        io = pd.read_csv(io_csv)
        if len(io):
            io = io.sort_values("time")
            rate = (io["read_bytes_per_s"] + io["write_bytes_per_s"]).to_numpy()
            begin = io["time"].to_numpy()
            end = np.append(begin[1:], max(edges[-1], begin[-1]))
            usage["bandwidth_measured"] = _step_integral(begin, end, rate, edges) / widths / bandwidth
        else:
            usage["bandwidth_measured"] = np.zeros(len(widths))
    return usage


def summarize(prefix, workload, nb_hosts=None, steady=(0.1, 0.5)) -> dict:
    """The paper's metrics of one run. ``steady``: the window, as fractions
    of the run's makespan, of ``steady_utilisation``."""
    if not isinstance(workload, dict):
        workload = json.loads(Path(workload).read_text())
    if nb_hosts is None:
        nb_hosts = json.loads(Path(f"{prefix}_run.json").read_text())["nb_compute_resources"]
    jobs = load_jobs(prefix, workload)
    bound = lower_bound(workload, nb_hosts)
    end = makespan(jobs)
    rho = stretches(jobs)
    window = np.array(steady) * end
    return {
        "jobs": int(len(jobs)),
        "succeeded": int((jobs["final_state"] == "COMPLETED_SUCCESSFULLY").sum()),
        "makespan": end,
        "lower_bound": bound,
        "makespan_over_bound": end / bound if bound > 0 else float("nan"),
        "mean_stretch": float(rho.mean()),
        "max_stretch": float(rho.max()),
        "utilisation": utilisation(jobs, nb_hosts),
        "steady_utilisation": float(instant_utilisation(jobs, nb_hosts, window)[0]),
        "idle_ratio": idle_ratio(jobs, nb_hosts),
        "mean_wait": float(jobs["waiting_time"].astype(float).mean()),
        "packs": int(jobs["pack"].max()) if jobs["pack"].notna().any() else 0,
        "backfilled": int((jobs["backfilled"] == 1).sum()),
    }
