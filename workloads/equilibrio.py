"""EquilibrIO's experimental workload on Theta scaled down 4x (seed 003).

The poster ("Experimental workload") combines 5,000 low-to-medium
I/O-intensity jobs with four peaks of 40 high-intensity jobs, 5,160 jobs,
built from Darshan logs of Theta (2017-2023). Those logs are not public in
that form, so this generator draws jobs from distributions typical of Theta
(below) and gives each the two numbers Darshan yields and the scheduler
reads, as extra job fields (Batsim forwards them in ``JOB_SUBMITTED``):

* ``io_walltime_share``: io_walltime_j / total_walltime_j, the fraction of
  the job's run time spent in I/O when it runs alone;
* ``average_bw``: average_bw_j in GB/s, the bandwidth of its I/O phases when
  it runs alone;
* ``io_class``: ``"high"`` or ``"low-medium"`` (for analysis only; the
  scheduler does not read it).

so that io_intensity_j = io_walltime_share x average_bw (GB/s) is the job's
bytes moved over its run time, alone.

What a job does (it really moves its bytes through the platform's PFS)
-----------------------------------------------------------------------
A job of T seconds alone (T = total_walltime_j) with I/O share s, average
bandwidth B (GB/s) and m steps runs, as one composed Batsim profile::

    read phase  |  m x [ compute chunk | write phase ]

* compute: (1 - s) T seconds in all, m equal ``parallel_homogeneous``
  chunks (flops = seconds x node speed, no communication; nodes are
  exclusive, so they always last exactly that long);
* I/O: s T seconds in all, a fraction ``read_fraction`` (10-40 %) reading
  the input, the rest in m equal checkpoint writes. An I/O phase of tau
  seconds moves B tau bytes (in total over the job's nodes) as one
  ``parallel_homogeneous_pfs`` transfer, which alone runs at the platform's
  rate R for the job, R = min(n x 12.5 GB/s, PFS) (PFS = 43 GB/s writing,
  60 GB/s reading), followed by a ``delay`` of tau (1 - B / R): the time an
  application spends in I/O calls without moving data at full speed
  (metadata, small requests, synchronisation). Alone, the phase lasts
  exactly tau and moves B tau bytes, i.e. B GB/s on average; sharing the
  PFS, only its transfer slows down. B <= R always (B <= 12 GB/s, R >= 12.5).

Distributions (Theta scaled down 4x, as the platform)
-----------------------------------------------------
* Nodes: Theta's node counts divided by 4 (rounded up). Theta is a
  capability machine: its production queue starts at 128 nodes and most
  node-hours go to 128-1,024-node jobs; its debug queues take 1-8 nodes,
  and Darshan (one log per application run) also records the many small
  runs (tests, post-processing, ensemble members) inside job scripts.
  Classes (probability, Theta nodes -> here, log-uniform within a range):
  1-8 30 % (-> 1-2); 9-32 12 % (-> 3-8); 128 25 % (-> 32); 129-255 5 %
  (-> 33-64); 256 12 % (-> 64); 257-511 3 % (-> 65-128); 512 8 % (-> 128);
  1,024 4 % (-> 256); 2,048 0.8 % (-> 512); 4,096 0.2 % (-> 1,024). Mean
  about 50 nodes, about 25 jobs running at once.
  High-intensity jobs take Theta's most common production sizes: 128 nodes
  60 %, 129-255 15 %, 256 25 % (-> 32-64).
* Run time alone: log-normal, median 45 min, sigma 1.0 (a few minutes to
  hours, as in HPC traces), clipped to [5 min, half the walltime limit of
  the job's size]. Theta's limits (by Theta nodes): 1-8 (debug) 1 h,
  9-255 3 h, 256-383 6 h, 384-639 9 h, 640-801 12 h, >= 802 24 h.
* Requested walltime: the run time times a log-uniform factor in [2, 5]
  (users over-estimate; enough to absorb I/O slowdowns), capped by the
  limit, rounded up to 10 min.
* Arrivals: an oversubscribed machine, as Theta was (its allocations were
  oversubscribed several times, and its queue held hundreds of jobs). At
  time 0, ``backlog`` (default 500) low-to-medium jobs are already queued
  (submitted within the first minute); the other low-to-medium jobs arrive
  as a Poisson process with a daily cycle (rate x (1 + 0.5 sin 2 pi t /
  day)), its mean rate set so they offer ``load`` (default 1.05) times the
  machine's node-hours over their span: demand slightly above what the
  machine can serve (about 0.97 of its node-hours with backfilling), so the
  queue stays long. The four peaks start at 1/8, 3/8, 5/8 and 7/8 of that
  span; each peak's 40 jobs arrive within 30 min (a campaign of one
  project), on top of the rest. The queue's length matters: io_intensity(W)
  averages over running *and queued* jobs, so a peak raises it less, and
  EquilibrIO holds back more of the peak, when more jobs are queued.
* Low-to-medium I/O intensity (5,000 jobs): s log-uniform in [0.5 %, 20 %],
  B log-uniform in [0.2, 8] GB/s, redrawn until s B < 0.5 GB/s.
* High I/O intensity (160 jobs): s uniform in [10 %, 30 %] ("at least 10 %
  of their time doing I/O"), B uniform in [8, 12] GB/s ("10 GB/s on
  average"): intensities 0.8-3.6 GB/s. Sizes above; run times and
  walltimes as the others.
* Steps m: uniform in 1..8 (checkpoints); read fraction uniform in
  [10 %, 40 %] of the I/O time.

Scale: ``--jobs N`` keeps what EquilibrIO's effect depends on (the peaks'
40 jobs, the backlog, the load, hence the queue's length) and shortens the
span: round(4 N / 5,160) peaks (at least one) and N - 40 x peaks
low-to-medium jobs.

    .venv/bin/python -m batio.workloads.equilibrio --seed 3 --out workloads/equilibrio_theta.json
    .venv/bin/python -m batio.workloads.equilibrio --jobs 1290 --seed 1 --out /tmp/w.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

NB_NODES = 1098
NODE_SPEED = 2.66e12      # flop/s, KNL 7230 peak (platforms/theta_quarter.xml)
NODE_BW = 12.5e9          # bytes/s, 100 Gb/s per node
PFS_WRITE_BW = 43e9       # bytes/s
PFS_READ_BW = 60e9        # bytes/s
GB = 1e9

NB_JOBS = 5160
PEAK_SIZE = 40
NB_PEAKS = 4
PEAK_DURATION = 1800.0
DAY = 86400.0

HIGH_SHARE = (0.10, 0.30)
HIGH_BW = (8.0, 12.0)
LOW_SHARE = (0.005, 0.20)
LOW_BW = (0.2, 8.0)
LOW_MAX_INTENSITY = 0.5   # GB/s

# (probability, Theta node range) -> nodes here = ceil(Theta nodes / 4)
SIZE_CLASSES = [
    (0.30, (1, 8)), (0.12, (9, 32)), (0.25, (128, 128)), (0.05, (129, 255)), (0.12, (256, 256)),
    (0.03, (257, 511)), (0.08, (512, 512)), (0.04, (1024, 1024)), (0.008, (2048, 2048)),
    (0.002, (4096, 4096)),
]
# High-intensity campaigns: Theta's most common production sizes (128-256 nodes -> 32-64)
HIGH_SIZE_CLASSES = [(0.60, (128, 128)), (0.15, (129, 255)), (0.25, (256, 256))]
# Theta's walltime limits by Theta node count (debug queue: 1 h)
WALLTIME_LIMITS = [(8, 3600.0), (255, 3 * 3600.0), (383, 6 * 3600.0), (639, 9 * 3600.0),
                   (801, 12 * 3600.0), (math.inf, 24 * 3600.0)]


def alone_rate(nodes: int, read: bool) -> float:
    """Bytes/s one job on ``nodes`` nodes gets alone from the PFS."""
    return min(nodes * NODE_BW, PFS_READ_BW if read else PFS_WRITE_BW)


def io_intensity(job: dict) -> float:
    """io_intensity_j (GB/s) of a workload job: share x average bandwidth."""
    return job["io_walltime_share"] * job["average_bw"]


def _log_uniform(rng, low, high):
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def _theta_nodes(rng, high_intensity=False) -> int:
    classes = HIGH_SIZE_CLASSES if high_intensity else SIZE_CLASSES
    probabilities = np.array([p for p, _ in classes])
    low, high = classes[rng.choice(len(classes), p=probabilities / probabilities.sum())][1]
    return low if low == high else int(round(_log_uniform(rng, low, high)))


def _walltime_limit(theta_nodes: int) -> float:
    return next(limit for bound, limit in WALLTIME_LIMITS if theta_nodes <= bound)


def draw_job(rng, high: bool) -> dict:
    """One job's shape: nodes, run time alone, walltime, I/O share and bandwidth, steps."""
    theta_nodes = _theta_nodes(rng, high)
    limit = _walltime_limit(theta_nodes)
    runtime = float(np.clip(45 * 60 * math.exp(rng.normal(0, 1.0)), 300, limit / 2))
    walltime = min(limit, math.ceil(runtime * _log_uniform(rng, 2, 5) / 600) * 600)
    if high:
        share, bw = float(rng.uniform(*HIGH_SHARE)), float(rng.uniform(*HIGH_BW))
    else:
        while True:
            share, bw = _log_uniform(rng, *LOW_SHARE), _log_uniform(rng, *LOW_BW)
            if share * bw < LOW_MAX_INTENSITY:
                break
    return {"nodes": math.ceil(theta_nodes / 4), "runtime": runtime, "walltime": float(walltime),
            "share": share, "bw": bw, "steps": int(rng.integers(1, 9)),
            "read_fraction": float(rng.uniform(0.1, 0.4)), "high": high}


def _io_phase(profiles, name, nodes, seconds, bw, read):
    """Profiles of one I/O phase lasting ``seconds`` alone at ``bw`` GB/s on
    average: a transfer at the job's full rate, then the rest as a delay.
    Returns the names to run in sequence."""
    total_bytes = bw * GB * seconds
    transfer = total_bytes / alone_rate(nodes, read)
    key = "bytes_to_read" if read else "bytes_to_write"
    profiles[name] = {"type": "parallel_homogeneous_pfs", key: total_bytes / nodes, "storage": "pfs"}
    names = [name]
    if seconds - transfer > 1e-6:
        profiles[f"{name}_wait"] = {"type": "delay", "delay": seconds - transfer}
        names.append(f"{name}_wait")
    return names


def job_profiles(number: int, shape: dict, profiles: dict) -> str:
    """Add job ``number``'s profiles to ``profiles``; return its profile name."""
    nodes, runtime, share, bw, steps = (shape[k] for k in ("nodes", "runtime", "share", "bw", "steps"))
    io_seconds = share * runtime
    read_seconds = shape["read_fraction"] * io_seconds
    write_seconds = (io_seconds - read_seconds) / steps
    compute_seconds = (runtime - io_seconds) / steps
    prefix = f"j{number}"
    read = _io_phase(profiles, f"{prefix}_read", nodes, read_seconds, bw, read=True)
    profiles[f"{prefix}_compute"] = {"type": "parallel_homogeneous", "cpu": compute_seconds * NODE_SPEED, "com": 0}
    write = _io_phase(profiles, f"{prefix}_write", nodes, write_seconds, bw, read=False)
    profiles[f"{prefix}_step"] = {"type": "composed", "repeat": steps, "seq": [f"{prefix}_compute", *write]}
    profiles[prefix] = {"type": "composed", "seq": [*read, f"{prefix}_step"]}
    return prefix


def _daily_arrivals(rng, count, span):
    """``count`` sorted times in [0, span) of a Poisson process whose rate
    follows 1 + 0.5 sin(2 pi t / day) (peak at 6 h into each day)."""
    times = []
    while len(times) < count:
        t = rng.uniform(0, span, 2 * count)
        keep = rng.uniform(0, 1.5, 2 * count) < 1 + 0.5 * np.sin(2 * np.pi * t / DAY)
        times.extend(t[keep].tolist())
    return np.sort(np.array(times[:count]))


def equilibrio_workload(seed: int = 3, nb_jobs: int = NB_JOBS, load: float = 1.05, backlog: int = 500) -> dict:
    """The workload as a Batsim workload dict (see the module docstring)."""
    rng = np.random.default_rng(seed)
    nb_peaks = max(1, round(NB_PEAKS * nb_jobs / NB_JOBS))
    nb_low = nb_jobs - PEAK_SIZE * nb_peaks
    if nb_low < 0:
        raise ValueError(f"{nb_jobs} jobs cannot hold {nb_peaks} peak(s) of {PEAK_SIZE} jobs")
    low = [draw_job(rng, high=False) for _ in range(nb_low)]
    high = [draw_job(rng, high=True) for _ in range(PEAK_SIZE * nb_peaks)]
    backlog = min(backlog, nb_low)
    for shape in low[:backlog]:
        shape["subtime"] = float(rng.uniform(0, 60))
    work = sum(shape["nodes"] * shape["runtime"] for shape in low[backlog:])
    span = work / (load * NB_NODES) if low[backlog:] else DAY
    for shape, subtime in zip(low[backlog:], _daily_arrivals(rng, nb_low - backlog, span)):
        shape["subtime"] = float(subtime)
    for peak in range(nb_peaks):
        start = span * (2 * peak + 1) / (2 * nb_peaks)
        arrivals = np.sort(rng.uniform(start, start + PEAK_DURATION, PEAK_SIZE))
        for shape, subtime in zip(high[peak * PEAK_SIZE:(peak + 1) * PEAK_SIZE], arrivals):
            shape["subtime"] = float(subtime)
            shape["peak"] = peak
    shapes = sorted(low + high, key=lambda shape: shape["subtime"])
    jobs: list[dict] = []
    profiles: dict[str, dict] = {}
    for number, shape in enumerate(shapes, start=1):
        profile = job_profiles(number, shape, profiles)
        job = {"id": number, "subtime": round(shape["subtime"], 3), "walltime": shape["walltime"],
               "res": shape["nodes"], "profile": profile,
               "io_walltime_share": round(shape["share"], 6), "average_bw": round(shape["bw"], 6),
               "io_class": "high" if shape["high"] else "low-medium",
               "total_walltime": round(shape["runtime"], 3)}
        if "peak" in shape:
            job["peak"] = shape["peak"]
        jobs.append(job)
    return {"nb_res": NB_NODES, "jobs": jobs, "profiles": profiles,
            "description": f"EquilibrIO workload (batio workloads/equilibrio.py), seed {seed}, "
                           f"{nb_jobs} jobs ({nb_low} low-to-medium, {nb_peaks} peaks of {PEAK_SIZE} high), "
                           f"load {load}"}


def main(argv=None):
    parser = argparse.ArgumentParser(description="EquilibrIO's workload on Theta scaled down 4x")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=NB_JOBS, help=f"number of jobs (default {NB_JOBS})")
    parser.add_argument("--load", type=float, default=1.05,
                        help="offered load of the arriving low-to-medium jobs (default 1.05)")
    parser.add_argument("--backlog", type=int, default=500,
                        help="low-to-medium jobs already queued at time 0 (default 500)")
    parser.add_argument("--out", help="output file (default: standard output)")
    args = parser.parse_args(argv)
    work = equilibrio_workload(args.seed, args.jobs, args.load, args.backlog)
    text = json.dumps(work, separators=(",", ":"))
    if args.out:
        with open(args.out, "w") as stream:
            stream.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
