"""What the report's figures show of one run, read from its output files only.

- the jobs of ``out_jobs.csv``, each with the bytes its profile moves to or
  from storage (from the workload file ``out_run.json`` names, used only if
  its SHA-256 still matches the run's), its class of bytes (a property of the
  job, so that its colour is the same under every policy) and whether it was
  backfilled;
- the storage throughput of ``out_io.csv`` and the capacity that binds it: the
  narrowest link shared by every route to storage (``binding_capacity``), not
  the sum of the storage hosts' links;
- utilisation (``out_machine_states.csv``) and queue length over time.

A job is **backfilled** when it started before a job submitted earlier that
was still waiting: some job K with submit(K) < submit(J) started after J did
(or was still waiting at J's start and never started).
"""

from dataclasses import dataclass
import functools
import hashlib
import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from batio.engines.embedded import routes
from batio.errors import BatioError
from batio.report import metrics
from batio.report.metrics import job_bytes

# The bytes a job's profile moves, in decades: not per second of its run, which changes with the policy.
INTENSITY = [("no I/O", 0.0), ("< 1 GB", 1e9), ("1-10 GB", 1e10), ("10-100 GB", 1e11), (">= 100 GB", math.inf)]
LEGEND = "bytes the job moves"
UNKNOWN = "bytes unknown"
CLASSES = [name for name, _ in INTENSITY] + [UNKNOWN]
# Light to dark with the bytes (ColorBrewer YlOrRd), grey for no I/O, blue for unknown bytes.
COLOURS = dict(zip(CLASSES, ["#bdbdbd", "#fed976", "#fd8d3c", "#e31a1c", "#800026", "#80b1d3"]))
logger = logging.getLogger(__name__)
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
    capacity: float | None      # bytes/s all jobs' storage traffic can reach at most (binding_capacity)
    utilisation: tuple          # (times, fraction of compute hosts busy)
    queue: tuple                # (times, jobs submitted and not started)
    notes: list


def _job_bytes(jobs, record, notes):
    """Per job, the bytes of its profile, from workloads whose digest matches the run's record."""
    profiles_of = {}
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
        profiles_of[f"w{index}"] = json.loads(Path(path).read_text()).get("profiles", {})
    return job_bytes(jobs, profiles_of)


def intensity_class(bytes_moved):
    """The INTENSITY class of a job's bytes (UNKNOWN when they are)."""
    if math.isnan(bytes_moved):
        return UNKNOWN
    if bytes_moved == 0:
        return INTENSITY[0][0]
    return next(name for name, limit in INTENSITY[1:] if bytes_moved < limit)


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
    """(sum of the storage hosts' link bandwidths, a note or None): out_run.json alone, when the
    platform file is gone; it overstates when storage hosts share the link that binds."""
    bandwidths = record.get("storage_bandwidth")
    if not bandwidths:
        return None, ("no capacity line: out_run.json records no storage_bandwidth (runs of batio's "
                      "embedded engine record it, older ones do not)")
    if any(value is None for value in bandwidths.values()):
        return None, "no capacity line: a storage host has no link that every compute host's route crosses"
    note = None if len(bandwidths) == 1 else "capacity: the sum of the storage hosts' links"
    return float(sum(bandwidths.values())), note


@functools.lru_cache(maxsize=16)
def _route_capacity(platform, digest):
    """routes.capacity of a platform file, once per file and content (a child process each)."""
    del digest  # the key of the cache: a changed file is read again
    return routes.capacity(platform)


def binding_capacity(record):
    """(bytes/s of the link that binds all jobs' storage traffic (routes.capacity; the smaller of
    read and write), a note or None); from ``storage_capacity`` when the platform file is gone or changed."""
    platform = str(record.get("spec", {}).get("platform", ""))
    try:
        with open(platform, "rb") as stream:
            digest = hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError:
        digest = None
    if digest is None or digest != record.get("inputs_sha256", {}).get(platform):
        return storage_capacity(record)
    try:
        found = _route_capacity(platform, digest)
    except BatioError as error:
        logger.warning("no capacity line: %s", error)
        return None, f"no capacity line: {error}"
    read, write = found["read"], found["write"]
    if math.isinf(min(read, write)):
        return None, "no capacity line: no link on the routes to storage bounds all jobs' transfers"
    note = None if read == write else (f"capacity: reads {read / 1e9:.3g} GB/s, writes {write / 1e9:.3g} GB/s; "
                                       "the line is the smaller")
    return float(min(read, write)), note


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
    notes: list[str] = []
    all_jobs["bytes"] = _job_bytes(all_jobs, record, notes)
    all_jobs["backfilled"] = backfilled(all_jobs)
    jobs = all_jobs[all_jobs["starting_time"].notna()].copy()
    jobs["intensity"] = [intensity_class(value) for value in jobs["bytes"]]
    throughput = aggregate_throughput(prefix)
    if throughput is None:
        notes.append("no out_io.csv (runs on real Batsim): no storage throughput")
    capacity, note = binding_capacity(record) if throughput is not None else (None, None)
    notes += [note] if note and throughput is not None else []
    return Run(jobs, record, int(record["nb_compute_resources"]), throughput, capacity, utilisation(prefix),
               queue_length(all_jobs), notes)
