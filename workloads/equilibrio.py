"""EquilibrIO's experimental workload on Theta scaled down 4x (seed 003).

Design notes (the model, its sources, the choices made): this folder's README.md, section equilibrio.py.
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
    times: list[float] = []
    while len(times) < count:
        t = rng.uniform(0, span, 2 * count)
        keep = rng.uniform(0, 1.5, 2 * count) < 1 + 0.5 * np.sin(2 * np.pi * t / DAY)
        times.extend(t[keep].tolist())
    return np.sort(np.array(times[:count]))


def equilibrio_workload(seed: int = 3, nb_jobs: int = NB_JOBS, load: float = 1.05, backlog: int = 500) -> dict:
    """The workload as a Batsim workload dict (see README.md)."""
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
