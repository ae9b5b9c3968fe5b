"""Each job's own I/O time written into its profile, so that the engine adds contention on top.

A job imported by ``batio import jobsio`` runs its read phase, a delay (the
rest of its run time), then its write phase. Given the seconds its
transfers should take alone (measured at one end of their interval, or
predicted by ``batio.twin.iomodel``), the delay becomes the job's compute time
plus its I/O *latency*: those seconds minus what the platform takes alone
for its bytes (``routes.Bandwidths.alone``). Alone, the job's transfers then
take exactly the seconds given; beside other jobs, only the phases that move
bytes share the file system's links and stretch. Real Batsim 4.2.1 runs the
same profiles (delays and ``parallel_homogeneous_pfs`` phases) unchanged.

Fields written on each job that moves bytes: ``io_alone_s`` (its transfers'
seconds alone on the platform), ``io_latency_s``, ``io_compute_s`` (the rest
of its run time), ``io_end`` (``low`` or ``high``) and ``io_source``.
"""

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from batio.errors import InputError
from batio.importers.common import LEAST_DELAY_S, as_number

log = logging.getLogger(__name__)
ENDS = ("low", "high")


def seconds_field(value):
    """A duration for a job field: nine significant digits, so that a transfer of nanoseconds stays > 0
    (the I/O-aware policies refuse an ``io_alone_s`` of 0 beside bytes)."""
    return as_number(float(f"{value:.9g}"))


def _rest_profile(workload, job):
    """The name of a job's delay phase (the imported ``ID_rest``)."""
    profiles = workload["profiles"]
    seq = profiles[job["profile"]].get("seq") if profiles[job["profile"]]["type"] == "composed" else None
    rest = [name for name in (seq or []) if profiles[name]["type"] == "delay"]
    if len(rest) != 1:
        raise InputError(workload.get("trace", {}).get("file", "workload"), "its profile is not read, delay, "
                         "write as `batio import jobsio` writes it", job=job["id"], field="profile")
    return rest[0]


def per_host_bytes(workload, job):
    """(bytes read, bytes written) per host of a job's phases."""
    read = written = 0.0
    for name in workload["profiles"][job["profile"]]["seq"]:
        phase = workload["profiles"][name]
        read += phase.get("bytes_to_read", 0)
        written += phase.get("bytes_to_write", 0)
    return read, written


def give_io_times(workload, seconds, compute, bandwidths, end, source=None):
    """Set each job's transfers to take ``seconds[job id]`` alone (in place); ``compute[job id]``: the rest
    of its run time. Returns the number of jobs whose platform is slower than the seconds given (their
    transfers take the platform's time alone instead; counted, not hidden)."""
    if end not in ENDS:
        raise ValueError(end)
    slower = 0
    for job in workload["jobs"]:
        key = str(job["id"])
        if key not in seconds:
            continue
        read, written = per_host_bytes(workload, job)
        platform_s = bandwidths.alone(read, written, job["res"])
        target = float(seconds[key])
        slower += platform_s > target + 1e-6  # not the rounding of bytes to whole bytes per host
        latency = max(0.0, target - platform_s)
        rest = max(0.0, float(compute[key]))
        workload["profiles"][_rest_profile(workload, job)] = {
            "type": "delay", "delay": as_number(max(LEAST_DELAY_S, round(rest + latency, 6)))}
        job.update({"io_alone_s": seconds_field(max(target, platform_s)),
                    "io_latency_s": seconds_field(latency), "io_compute_s": seconds_field(rest),
                    "io_end": end, "io_source": (source or {}).get(key, "measured")})
    return slower


def measured_ends(table) -> dict[str, tuple[dict, dict]]:
    """{end: ({job id: seconds}, {job id: compute seconds})} of the jobs whose I/O was measured."""
    known = table[np.isfinite(table["measured"])]
    ends = {}
    for end in ENDS:
        seconds = dict(zip(known["job_id"], known[end]))
        ends[end] = seconds, dict(zip(known["job_id"], known["runtime"] - known[end]))
    return ends


def write(workload, path):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(workload, indent=1) + "\n")
    return Path(path)


def overruns(workload, jobs):
    """Seconds by which each job ran past its recorded run time in a replay's ``jobs`` (job_id, execution_time)."""
    recorded = {str(job["id"]): job["recorded_end"] - job["recorded_start"] for job in workload["jobs"]}
    executed = jobs.set_index("job_id")["execution_time"]
    return pd.Series({key: executed[key] - runtime for key, runtime in recorded.items() if key in executed.index})


def within_record(workload, replay, rounds=3, slack=0.01):
    """Lower each job's high-end I/O latency until, replayed at its recorded start amid the week's
    contention, it ends within its recorded run time (in place; ``replay(workload)`` runs it and returns
    its jobs); ``slack`` forgives the platform's link latencies (milliseconds). Returns the ids of the
    jobs that cannot be made to fit (no latency left to remove)."""
    jobs = {str(job["id"]): job for job in workload["jobs"] if job.get("io_end") == "high"}
    unfit: set[str] = set()
    for _ in range(rounds):
        excess = overruns(workload, replay(workload))
        late = excess[excess > slack]
        late = late[[key in jobs for key in late.index]]
        if late.empty:
            return sorted(unfit)
        for key, seconds in late.items():
            job = jobs[key]
            cut = min(seconds, job["io_latency_s"])
            if cut < seconds - slack:
                unfit.add(key)
            rest = _rest_profile(workload, job)
            delay = workload["profiles"][rest]["delay"] - cut
            workload["profiles"][rest]["delay"] = as_number(max(LEAST_DELAY_S, round(delay, 6)))
            job["io_latency_s"] = seconds_field(job["io_latency_s"] - cut)
            job["io_alone_s"] = seconds_field(job["io_alone_s"] - cut)
    excess = overruns(workload, replay(workload))
    unfit |= {key for key, seconds in excess.items() if seconds > slack and key in jobs}
    log.info("high end within the record: %d jobs cannot be made to fit", len(unfit))
    return sorted(unfit)


def draw(model, seconds, floor, runtime, seed):
    """Each job's seconds times an error drawn from the model's held-out errors (a replica's I/O),
    kept within [floor, run time]."""
    if not model.held_out:
        raise InputError("--model", "holds no held-out errors (train it on two weeks or more): replicas draw "
                                    "each job's I/O from them")
    errors = np.asarray(model.held_out)
    drawn = np.random.default_rng(seed).choice(errors, size=len(seconds))
    return np.clip(np.asarray(seconds) / 10 ** drawn, floor, np.maximum(runtime, floor))


def own_io(workload, model, fs, end, seed=None, replay=None):
    """Every job that moves bytes given its own I/O at ``end`` (in place): the measured end where its record
    has one, else the model's prediction (the low end; times its ranks, capped by its run time, at the high
    end); drawn around that from the model's held-out errors when ``seed`` is given. At the high end, with
    ``replay``, lowered until each job ends within its record (``within_record``). Returns what was done
    (counts), for the workload's trace block."""
    from batio.twin.iomodel import high_end, io_table
    table = io_table(workload, fs)
    predicted, source = model.predict(table)
    known = np.isfinite(table["measured"]).to_numpy()
    if end == "high":
        predicted = high_end(table, predicted)
    seconds = np.where(known, table[end], predicted)
    compute = table["runtime"].to_numpy() - np.where(known, table[end], predicted)
    if seed is not None:
        seconds = draw(model, seconds, table["floor"], table["runtime"], seed)
    origin = np.where(known, "measured", source)
    ids = table["job_id"]
    slower = give_io_times(workload, dict(zip(ids, seconds)), dict(zip(ids, compute)), fs, end,
                           dict(zip(ids, origin)))
    unfit = within_record(workload, replay) if end == "high" and replay is not None else []
    counts = {"end": end, "jobs": len(table), "measured": int(known.sum()),
              "predicted": {name: int(((origin == name)).sum()) for name in ("recurrence", "learned")},
              "platform_slower": slower, "high_end_unfit": len(unfit), "seed": seed,
              "model_weeks": model.weeks}
    workload.setdefault("trace", {})["own_io"] = counts
    return counts


def replica(seed, path, model):
    """A what-if replica (a ``batio compare`` workload generator): the workload at ``path`` (written by
    ``batio iomodel apply``) with each job's I/O drawn around its own from ``model``'s held-out errors."""
    from batio.twin.iomodel import load, read_week
    workload, _ = read_week(path)
    fitted = load(model)
    jobs = [job for job in workload["jobs"] if "io_alone_s" in job]
    if not jobs:
        raise InputError(path, "no job carries its own I/O (io_alone_s): write it with `batio iomodel apply`")
    base = np.array([job["io_alone_s"] for job in jobs])
    latency = np.array([job["io_latency_s"] for job in jobs])
    floor = base - latency
    runtime = np.array([job["recorded_end"] - job["recorded_start"] for job in jobs])
    drawn = draw(fitted, base, floor, np.maximum(runtime, base), seed)
    for job, seconds, fixed in zip(jobs, drawn, floor):
        rest = _rest_profile(workload, job)
        latency_s = max(0.0, seconds - fixed)
        workload["profiles"][rest]["delay"] = as_number(max(LEAST_DELAY_S, round(job["io_compute_s"] + latency_s, 6)))
        job.update({"io_alone_s": seconds_field(max(seconds, fixed)), "io_latency_s": seconds_field(latency_s)})
    workload.setdefault("trace", {})["replica"] = {"seed": seed, "of": str(path), "model": str(model)}
    return workload
