"""What the report's figures show of one run, read from its output files only.

- the jobs of ``out_jobs.csv``, each with the bytes its profile moves to or
  from storage (from the workload file ``out_run.json`` names, used only if
  its SHA-256 still matches the run's), its I/O intensity class and whether it
  was backfilled;
- the storage throughput of ``out_io.csv`` and its capacity (``out_run.json``'s
  ``storage_bandwidth``, which the embedded engine records);
- utilisation (``out_machine_states.csv``) and queue length over time.

A job is **backfilled** when it started before a job submitted earlier that
was still waiting: some job K with submit(K) < submit(J) started after J did
(or was still waiting at J's start and never started).
"""

from dataclasses import dataclass
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from batio import metrics

# I/O intensity: bytes moved per second of the job's execution, in decades.
INTENSITY = [("no I/O", 0.0), ("< 10 MB/s", 1e7), ("10-100 MB/s", 1e8), ("0.1-1 GB/s", 1e9), (">= 1 GB/s", math.inf)]
UNKNOWN = "bytes unknown"
CLASSES = [name for name, _ in INTENSITY] + [UNKNOWN]
# Light to dark with the I/O rate (ColorBrewer YlOrRd), grey for no I/O, blue for unknown bytes.
COLOURS = dict(zip(CLASSES, ["#bdbdbd", "#fed976", "#fd8d3c", "#e31a1c", "#800026", "#80b1d3"]))
# The time unit a span is shown in: seconds up to 2 h, hours up to 3 days, then days.
UNITS = [("s", 1.0, 7200.0), ("h", 3600.0, 3 * 86400.0), ("days", 86400.0, math.inf)]


def time_unit(span):
    """(name, seconds per unit) for an axis spanning ``span`` seconds."""
    return next((name, size) for name, size, limit in UNITS if span <= limit)


@dataclass
class Run:
    """One run's data for figures; ``notes`` say what could not be shown and why."""

    jobs: pd.DataFrame          # out_jobs.csv's jobs that started, with bytes, intensity, backfilled
    record: dict
    nb_compute: int
    throughput: tuple | None    # (times, read B/s, write B/s); None without out_io.csv
    capacity: float | None      # bytes/s the storage hosts' links carry at most
    utilisation: tuple          # (times, fraction of compute hosts busy)
    queue: tuple                # (times, jobs submitted and not started)
    notes: list


def profile_bytes(profiles, name, hosts, seen=()):
    """Bytes a job of ``hosts`` hosts moves to or from storage with profile ``name``; NaN if unknown."""
    profile = profiles.get(name)
    if profile is None or name in seen:
        return math.nan
    kind = profile.get("type")
    if kind == "parallel_homogeneous_pfs":
        return hosts * (float(profile.get("bytes_to_read", 0)) + float(profile.get("bytes_to_write", 0)))
    if kind == "data_staging":
        return float(profile.get("nb_bytes", 0))
    if kind == "composed":
        parts = [profile_bytes(profiles, part, hosts, (*seen, name)) for part in profile.get("seq", [])]
        return int(profile.get("repeat", 1)) * sum(parts)
    if kind in ("delay", "parallel_homogeneous", "parallel_homogeneous_total", "parallel"):
        return 0.0  # compute and traffic between the job's own hosts: no storage
    return math.nan


def _job_bytes(jobs, record, notes):
    """Per job, the bytes of its profile, from workloads whose digest matches the run's record."""
    values = pd.Series(math.nan, index=jobs.index)
    for index, path in enumerate(record["spec"]["workloads"]):
        recorded = record.get("inputs_sha256", {}).get(str(path))
        try:
            with open(path, "rb") as stream:
                digest = hashlib.file_digest(stream, "sha256").hexdigest()
        except OSError:
            notes.append(f"workload {path} is gone: job bytes unknown")
            continue
        if digest != recorded:
            notes.append(f"workload {path} changed since the run (SHA-256 differs): job bytes unknown")
            continue
        profiles = json.loads(Path(path).read_text()).get("profiles", {})
        mine = jobs["workload_name"] == f"w{index}"
        values[mine] = [profile_bytes(profiles, profile, hosts) for profile, hosts in
                        zip(jobs.loc[mine, "profile"], jobs.loc[mine, "requested_number_of_resources"])]
    return values


def intensity_class(bytes_moved, seconds):
    """The INTENSITY class of a job (UNKNOWN when its bytes are)."""
    if math.isnan(bytes_moved):
        return UNKNOWN
    if bytes_moved == 0:
        return INTENSITY[0][0]
    rate = bytes_moved / max(seconds, 1e-9)
    return next(name for name, limit in INTENSITY[1:] if rate < limit)


def backfilled(jobs):
    """Per job: started before a job submitted earlier was (see the module doc)."""
    started = jobs["starting_time"].fillna(math.inf)  # never started: waiting to the end
    by_submit = pd.DataFrame({"submit": jobs["submission_time"], "start": started})
    latest = by_submit.groupby("submit")["start"].max().astype(float).sort_index()
    # The latest start among jobs submitted strictly earlier than each submit time.
    earlier = latest.cummax().shift(1, fill_value=-math.inf)
    return (started < by_submit["submit"].map(earlier)) & jobs["starting_time"].notna()


def aggregate_throughput(prefix):
    """(times, read B/s, write B/s) summed over storage hosts, as step functions
    from time 0; None when the run has no ``_io.csv`` (real Batsim)."""
    path = Path(f"{prefix}_io.csv")
    if not path.exists():
        return None
    io = pd.read_csv(path)
    if io.empty:
        return np.array([0.0]), np.array([0.0]), np.array([0.0])
    # Each row holds its storage's rate until that storage's next row.
    rates = io.pivot_table(index="time", columns="storage", values=["read_bytes_per_s", "write_bytes_per_s"],
                           aggfunc="last").sort_index().ffill().fillna(0.0)
    times = np.concatenate([[0.0], rates.index.to_numpy(dtype=float)])
    read = np.concatenate([[0.0], rates["read_bytes_per_s"].sum(axis=1).to_numpy()])
    write = np.concatenate([[0.0], rates["write_bytes_per_s"].sum(axis=1).to_numpy()])
    return times, read, write


def storage_capacity(record):
    """(sum of the storage hosts' link bandwidths, a note or None)."""
    bandwidths = record.get("storage_bandwidth")
    if not bandwidths:
        return None, ("no capacity line: out_run.json records no storage_bandwidth (runs of batio's embedded "
                      "engine since issue 47 do)")
    if any(value is None for value in bandwidths.values()):
        return None, "no capacity line: a storage host has no link that every compute host's route crosses"
    note = None if len(bandwidths) == 1 else "capacity: the sum of the storage hosts' links"
    return float(sum(bandwidths.values())), note


def utilisation(prefix):
    """(times, fraction of compute hosts computing) as a step function from time 0."""
    states = pd.read_csv(f"{prefix}_machine_states.csv").drop_duplicates("time", keep="last")
    hosts = states.drop(columns="time").sum(axis=1)
    fraction = (states["nb_computing"] / hosts.where(hosts > 0)).fillna(0.0)
    return (np.concatenate([[0.0], states["time"].to_numpy(dtype=float)]),
            np.concatenate([[0.0], fraction.to_numpy()]))


def queue_length(jobs):
    """(times, number of jobs submitted and not yet started or rejected) as a step function."""
    leaves = jobs["starting_time"].fillna(jobs["finish_time"]).fillna(jobs["submission_time"])
    events = pd.concat([pd.Series(1, index=jobs["submission_time"].to_numpy()),
                        pd.Series(-1, index=leaves.to_numpy())]).groupby(level=0).sum().sort_index()
    return (np.concatenate([[0.0], events.index.to_numpy(dtype=float)]),
            np.concatenate([[0], events.cumsum().to_numpy()]))


def load_run(prefix):
    """The Run of the outputs ``PREFIX_*`` (InputError when one is missing)."""
    metrics.check_outputs(prefix)
    record = metrics.run_record(prefix)
    all_jobs = metrics.read_jobs(prefix)
    notes = []
    all_jobs["bytes"] = _job_bytes(all_jobs, record, notes)
    all_jobs["backfilled"] = backfilled(all_jobs)
    jobs = all_jobs[all_jobs["starting_time"].notna()].copy()
    jobs["intensity"] = [intensity_class(b, t) for b, t in zip(jobs["bytes"], jobs["execution_time"])]
    throughput = aggregate_throughput(prefix)
    if throughput is None:
        notes.append("no out_io.csv (runs on real Batsim): no storage throughput")
    capacity, note = storage_capacity(record)
    notes += [note] if note and throughput is not None else []
    return Run(jobs, record, int(record["nb_compute_resources"]), throughput, capacity, utilisation(prefix),
               queue_length(all_jobs), notes)
