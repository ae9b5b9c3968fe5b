"""Metrics of paper 004 (locality-aware scheduling, Sections 3 and 5), computed
from a run's ``_jobs.csv`` and its workload JSON only.

Per user job (``schedulers/locality/locality.py`` writes ``node``, ``decided`` (t_k),
``case`` and ``reused`` in the job's Batsim metadata):

* queue time = t_k - SubTime: until the scheduler gave the job its cores;
* load wait = compute start - t_k: the time the job waited for its file
  (0 when the file was in memory; the paper's "time spent waiting for a file
  to be available", Figure 2b);
* Flow = CompletionTime - SubTime;
* ReferenceFlow = Duration + Size(File) / Bandwidth, its flow alone;
* stretch = Flow / ReferenceFlow (Section 3).

The paper evaluates the jobs submitted on the evaluated day (the trace's
``category`` 1, Figure 1); the jobs around it only load the cluster.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from batio.errors import InputError
from batio.report.metrics import read_jobs

EVALUATED = 1


def _metadata(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(";") if "=" in item)


def job_table(prefix, workload_path, link_bandwidth: float) -> pd.DataFrame:
    """One row per user job of the run whose outputs start with ``prefix``."""
    workload = json.loads(Path(workload_path).read_text())
    profiles = workload["profiles"]
    described = {str(job["id"]): job for job in workload["jobs"]}
    jobs = read_jobs(prefix)
    jobs = jobs[jobs["workload_name"] == "w0"]
    rows = []
    for job in jobs.itertuples(index=False):
        local_id = str(job.job_id)  # Batsim writes the id within the workload, named in workload_name
        spec = described.get(local_id)
        if spec is None:
            raise InputError(str(workload_path), "the run has a job the workload does not describe", job=local_id)
        meta = _metadata(job.metadata)
        if "decided" not in meta:
            raise InputError(f"{prefix}_jobs.csv", "no locality metadata (decided=...): was the run made by "
                                                   "schedulers/locality/locality.py?",
                             job=f"w0!{local_id}", field="metadata")
        duration = float(profiles[spec["profile"]]["delay"])
        decided = float(meta["decided"])
        rows.append({
            "job_id": f"w0!{local_id}", "category": spec.get("category", EVALUATED), "cores": spec["cores"],
            "file": spec["file"], "file_bytes": spec["file_bytes"], "duration": duration,
            "subtime": float(job.submission_time), "decided": decided, "start": float(job.starting_time),
            "finish": float(job.finish_time), "node": int(meta["node"]), "case": int(meta["case"]),
            "reused": meta["reused"] == "1", "final_state": job.final_state,
        })
    table = pd.DataFrame(rows)
    table["queue_time"] = table["decided"] - table["subtime"]
    table["load_wait"] = table["start"] - table["decided"]
    table["flow"] = table["finish"] - table["subtime"]
    table["reference_flow"] = table["duration"] + table["file_bytes"] / link_bandwidth
    table["stretch"] = table["flow"] / table["reference_flow"]
    return table.set_index("job_id", drop=False)


def summary(table: pd.DataFrame) -> dict:
    """Section 5's measures over the evaluated jobs."""
    evaluated = table[table["category"] == EVALUATED]
    return {
        "evaluated_jobs": int(len(evaluated)),
        "mean_stretch": float(evaluated["stretch"].mean()),
        "total_load_wait": float(evaluated["load_wait"].sum()),
        "reused_files": int(evaluated["reused"].sum()),
        "max_queue_time": float(evaluated["queue_time"].max()),
        "mean_flow": float(evaluated["flow"].mean()),
    }


def cluster_usage(table: pd.DataFrame, category: int | None = None) -> pd.DataFrame:
    """Cores running, queued and loading over time (the paper's Figures 3-4
    and 7-8): a job's cores count as queued from SubTime to t_k, as running
    from t_k to its completion (loading included), and as loading from t_k to
    its compute start. ``category`` restricts to one category of jobs."""
    jobs = table if category is None else table[table["category"] == category]
    events = []
    for column, sign_at in (("queued", ("subtime", "decided")), ("running", ("decided", "finish")),
                            ("loading", ("decided", "start"))):
        begin, end = sign_at
        events.append(pd.DataFrame({"time": jobs[begin], column: jobs["cores"]}))
        events.append(pd.DataFrame({"time": jobs[end], column: -jobs["cores"]}))
    steps = pd.concat(events).fillna(0).groupby("time").sum().sort_index().cumsum()
    return steps.reset_index()


def stretch_ratio(baseline: pd.DataFrame, variant: pd.DataFrame) -> pd.DataFrame:
    """Per evaluated job, stretch under the baseline / stretch under the
    variant (> 1: the variant improves it; the paper's Figures 5 and 11)."""
    both = baseline[["subtime", "duration", "stretch", "category"]].join(
        variant[["stretch"]].rename(columns={"stretch": "stretch_variant"}), how="inner")
    both = both[both["category"] == EVALUATED]
    both["ratio"] = both["stretch"] / both["stretch_variant"]
    return both


def evaluated_window(table: pd.DataFrame) -> tuple[float, float]:
    """First and last submission times of the evaluated jobs."""
    evaluated = table[table["category"] == EVALUATED]["subtime"]
    return (float(evaluated.min()), float(evaluated.max())) if len(evaluated) else (np.nan, np.nan)


# -- against the authors' simulator ------------------------------------------------

def read_authors_gantt(path) -> pd.DataFrame:
    """Per started job (``job_id``: the trace id), ``start`` (t_k), ``end`` and
    ``node``, in seconds from t0, from the per-job file
    (``outputs/Results_all_jobs_<SCHEDULER>.csv``) of the authors' simulator
    built with ``-DPRINT_GANTT_CHART``: Batsim-like columns where column 11
    is the start, 12 the end and 14 the cores used (node x 20 + core); the
    ``I/O-`` lines describe loads and are skipped. Also reads the
    ``job_id,start,end,node`` CSV this module's callers record it as."""
    path = Path(path)
    text = path.read_text()
    if text.startswith("job_id,start,end,node"):
        return pd.read_csv(path).set_index("job_id")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split(",")
        if not line or fields[0].startswith("I/O-"):
            continue
        try:
            cores = [int(core) for core in fields[14].strip('"').split()]
            rows.append((int(fields[0]), int(fields[11]), int(fields[12]), cores[0] // 20))
        except (IndexError, ValueError):
            raise InputError(f"{path}, line {number}",
                             "not a line of the authors' per-job output "
                             "(job id, ..., start in column 11, end in 12, cores in 14)") from None
    return pd.DataFrame(rows, columns=["job_id", "start", "end", "node"]).set_index("job_id")


def compare_with_authors(table: pd.DataFrame, authors: pd.DataFrame, tolerance: float = 1.0) -> dict:
    """batio's run (``job_table`` of a run on a workload converted with
    ``--running-at-cut restart``, whose time 0 is the authors' t0) against
    the authors' simulator on the same input, job by job: their mean
    stretch over the evaluated jobs (the authors' stretch from their end
    times and batio's job descriptions, the same formula), the share of jobs
    whose t_k is within ``tolerance`` seconds of theirs (all jobs both
    started, and the evaluated ones), the share on the same node, and the
    job whose t_k differs most."""
    ids = pd.Series([int(job_id.split("!")[1]) for job_id in table.index], index=table.index)
    ours = table.set_index(ids)
    both = ours.join(authors.rename(columns=lambda c: f"authors_{c}"), how="inner")
    evaluated = both[both["category"] == EVALUATED]
    missing = int((ours["category"] == EVALUATED).sum() - len(evaluated))
    if missing:
        raise InputError("authors' output", f"{missing} evaluated jobs of the run are not in it")
    authors_stretch = (evaluated["authors_end"] - evaluated["subtime"]) / evaluated["reference_flow"]
    gap = (both["decided"] - both["authors_start"]).abs()
    worst = gap.idxmax() if len(gap) else None
    return {
        "mean_stretch": float(evaluated["stretch"].mean()),
        "authors_mean_stretch": float(authors_stretch.mean()),
        "stretch_ratio": float(evaluated["stretch"].mean() / authors_stretch.mean()),
        "jobs_compared": int(len(both)),
        "start_within_tolerance": float((gap <= tolerance).mean()),
        "evaluated_start_within_tolerance": float((gap[evaluated.index] <= tolerance).mean()),
        "same_node": float((both["node"] == both["authors_node"]).mean()),
        "worst_job": None if worst is None else int(worst),
        "worst_start_gap": float(gap.max()) if len(gap) else 0.0,
    }
