"""Fig. 4 of paper 000 in the simulator: Lustre throughput vs concurrent write×8 jobs.

For k = 0..15, k write×8 jobs (workloads/stria.py: 80 GiB each, to a
random volume) are submitted together at t = 0 and scheduled by EASY on
each Stria platform; the aggregate write throughput is read from
``out_io.csv`` and averaged over the period when all k jobs run (from the
last start to the first end). Each k is repeated with several seeds, i.e.
several random choices of volumes, as the paper's box plot gathers many
measurements. Prints the table, writes it as CSV and plots it (PNG).

    .venv/bin/python scripts/stria_fig4.py [--reps 5] [--platforms literal congested fig4 degrading] [--out out/stria_fig4]
"""

import argparse
from concurrent.futures import ThreadPoolExecutor
import csv
import json
import math
import os
from pathlib import Path
import statistics

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from batio.catalog import scheduler_file_and_options
from batio.engine.run import RunSpec, simulate
from batio.workloads.stria import GiB, NB_NODES, job_mix

ROOT = Path(__file__).resolve().parents[1]
PLATFORMS = {
    "literal": ROOT / "platforms" / "stria15_lustre.xml",
    "congested": ROOT / "platforms" / "stria15_lustre_congested.xml",
    "fig4": ROOT / "platforms" / "stria15_lustre_fig4.xml",            # contention curve: Fig. 4 as printed
    "degrading": ROOT / "platforms" / "stria15_lustre_degrading.xml",  # the same with a published loss
}
SAMPLE_PERIOD = 1.0  # seconds, the engine's default --io-sample-period


def concurrent_writers(k, seed):
    """A workload of k write×8 jobs submitted at t = 0."""
    jobs, profiles = job_mix(["write8"] * k, np.random.default_rng(seed))
    return {"nb_res": NB_NODES, "jobs": jobs, "profiles": profiles}


def _rows(path):
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream))


def bytes_written(io_rows, begin, end):
    """Bytes written to all storage hosts between begin and end, from out_io.csv rows
    (each row's rate holds from its time until the next row of the same storage)."""
    by_storage = {}
    for row in io_rows:
        by_storage.setdefault(row["storage"], []).append((float(row["time"]), float(row["write_bytes_per_s"])))
    total = 0.0
    for steps in by_storage.values():
        for (time, rate), (next_time, _) in zip(steps, steps[1:] + [(math.inf, 0.0)]):
            total += rate * max(0.0, min(end, next_time) - max(begin, time))
    return total


def aggregate_write_rate(prefix):
    """Mean aggregate write throughput (B/s) while all jobs of the run run together."""
    jobs = _rows(f"{prefix}_jobs.csv")
    begin = max(float(job["starting_time"]) for job in jobs)
    end = min(float(job["finish_time"]) for job in jobs)
    # Whole sampling windows only: a window cut by a job start or end mixes two rates.
    whole_begin = math.ceil(begin / SAMPLE_PERIOD) * SAMPLE_PERIOD
    whole_end = math.floor(end / SAMPLE_PERIOD) * SAMPLE_PERIOD
    if whole_end - whole_begin >= SAMPLE_PERIOD:
        begin, end = whole_begin, whole_end
    return bytes_written(_rows(f"{prefix}_io.csv"), begin, end) / (end - begin)


def measure(platform, k, seed, folder):
    """Aggregate write throughput (B/s) of k concurrent write×8 jobs on platform."""
    if k == 0:
        return 0.0
    folder = Path(folder) / f"{Path(platform).stem}_k{k}_s{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    workload = folder / "workload.json"
    workload.write_text(json.dumps(concurrent_writers(k, seed)))
    scheduler, options = scheduler_file_and_options("easy")
    simulate(RunSpec(str(platform), [str(workload)], str(scheduler), str(folder / "out"), options))
    return aggregate_write_rate(folder / "out")


def plot(results, ks, path):
    figure, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), sharey=True)
    for axis, (name, by_k) in zip(np.atleast_1d(axes), results.items()):
        samples = [[rate / GiB for rate in by_k[k]] for k in ks]
        axis.boxplot(samples, positions=ks, widths=0.6)
        axis.plot(ks, [statistics.mean(s) for s in samples], "o-", label="mean")
        for level, what in ((20, "paper: short-term"), (15, "paper: long-term")):
            axis.axhline(level, color="gray", linestyle="--", linewidth=0.8)
            axis.text(ks[0], level + 0.2, what, color="gray", fontsize=8)
        axis.set_title(f"{PLATFORMS[name].name}")
        axis.set_xlabel('concurrent "write×8" jobs')
        axis.grid(alpha=0.3)
        axis.legend(loc="center right")
    np.atleast_1d(axes)[0].set_ylabel("Lustre total write throughput (GiB/s)")
    figure.suptitle("Fig. 4 of paper 000, simulated")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="seeds (volume choices) per k")
    parser.add_argument("--max-jobs", type=int, default=15)
    parser.add_argument("--out", default=str(ROOT / "out" / "stria_fig4"))
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--platforms", nargs="+", choices=list(PLATFORMS), default=["literal", "congested"])
    args = parser.parse_args()
    platforms = {name: PLATFORMS[name] for name in args.platforms}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ks = list(range(args.max_jobs + 1))
    cases = [(name, k, seed) for name in platforms for k in ks for seed in range(1, args.reps + 1)]
    with ThreadPoolExecutor(args.workers) as pool:  # each simulation runs in its own process
        rates = pool.map(lambda case: measure(PLATFORMS[case[0]], case[1], case[2], out / "runs"), cases)
        results = {name: {k: [] for k in ks} for name in platforms}
        for (name, k, _), rate in zip(cases, rates):
            results[name][k].append(rate)

    header = ["k"] + [f"{name} {stat} (GiB/s)" for name in platforms for stat in ("mean", "min", "max")]
    table = [[k] + [round(f(results[name][k]) / GiB, 2) for name in platforms for f in (statistics.mean, min, max)]
             for k in ks]
    with open(out / "stria_fig4.csv", "w", newline="") as stream:
        csv.writer(stream).writerows([header] + table)
    print(" | ".join(header))
    for row in table:
        print(" | ".join(str(value) for value in row))
    plot(results, ks, out / "stria_fig4.png")
    print(f"plot: {out / 'stria_fig4.png'}, table: {out / 'stria_fig4.csv'}")


if __name__ == "__main__":
    main()
