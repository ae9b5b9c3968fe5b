"""Fig. 4 of paper 000 in the simulator: Lustre throughput vs concurrent write×8 jobs.

The runs are a sweep (``scripts/sweeps/stria_fig4.yaml``): for k = 1..15, k
write×8 jobs (``workloads/stria.py``: 80 GiB each, to a random volume)
submitted together at t = 0 and scheduled by EASY on each Stria platform,
each k with several seeds, i.e. several random choices of volumes, as the
paper's box plot gathers many measurements. This step reads the sweep's
outputs: the aggregate write throughput of a run, from its ``out_io.csv``,
averaged over the period when all k jobs run (from the last start to the
first end). It prints the table, writes it as CSV and plots it (PNG).

    .venv/bin/batio sweep scripts/sweeps/stria_fig4.yaml --out out/stria_fig4 --workers 2
    .venv/bin/python scripts/stria_fig4.py --from-sweep out/stria_fig4
"""

import argparse
import csv
import logging
import math
from pathlib import Path
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from batio.errors import exits_on_error  # noqa: E402
from batio.inputs.spec import DEFAULT_IO_SAMPLE_PERIOD_S  # noqa: E402
from batio.sweep import read_results  # noqa: E402
from batio.workloads.stria import GiB  # noqa: E402

SAMPLE_PERIOD = DEFAULT_IO_SAMPLE_PERIOD_S  # the sweep's: its configs leave io_sample_period to the default
logger = logging.getLogger("stria_fig4")


def _rows(path):
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream))


def bytes_written(io_rows, begin, end):
    """Bytes written to all storage hosts between begin and end, from out_io.csv rows
    (each row's rate holds from its time until the next row of the same storage)."""
    by_storage: dict = {}
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


def rates_from_sweep(folder):
    """{platform name: {k: [B/s, one per seed]}} from a sweep of stria_fig4.yaml
    (workloads labelled ``writers-K``); failed runs are reported and left out."""
    folder = Path(folder)
    ok, _ = read_results(folder, "scripts/sweeps/stria_fig4.yaml")
    rates: dict = {}
    for _, run in ok.iterrows():
        k = int(str(run["workload"]).removeprefix("writers-"))
        by_k = rates.setdefault(Path(run["platform"]).stem, {})
        by_k.setdefault(k, []).append(aggregate_write_rate(folder / "runs" / run["run_id"] / "out"))
    return rates


def plot(results, ks, path):
    figure, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), sharey=True)
    for axis, (name, by_k) in zip(np.atleast_1d(axes), results.items()):
        samples = [[rate / GiB for rate in by_k[k]] for k in ks]
        axis.boxplot(samples, positions=ks, widths=0.6)
        axis.plot(ks, [statistics.mean(s) for s in samples], "o-", label="mean")
        for level, what in ((20, "paper: short-term"), (15, "paper: long-term")):
            axis.axhline(level, color="gray", linestyle="--", linewidth=0.8)
            axis.text(ks[0], level + 0.2, what, color="gray", fontsize=8)
        axis.set_title(f"{name}.xml")
        axis.set_xlabel('concurrent "write×8" jobs')
        axis.grid(alpha=0.3)
        axis.legend(loc="center right")
    np.atleast_1d(axes)[0].set_ylabel("Lustre total write throughput (GiB/s)")
    figure.suptitle("Fig. 4 of paper 000, simulated")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


@exits_on_error
def main():
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-sweep", required=True, metavar="DIR",
                        help="the output folder of `batio sweep scripts/sweeps/stria_fig4.yaml`")
    parser.add_argument("--out", help="where to write stria_fig4.csv and .png (default: the sweep's folder)")
    args = parser.parse_args()
    out = Path(args.out or args.from_sweep)
    out.mkdir(parents=True, exist_ok=True)
    rates = rates_from_sweep(args.from_sweep)
    if not rates:
        raise SystemExit(f"--from-sweep {args.from_sweep}: no successful run")
    for by_k in rates.values():
        by_k[0] = [0.0]
    ks = sorted(set.intersection(*(set(by_k) for by_k in rates.values())))
    header = ["k"] + [f"{name} {stat} (GiB/s)" for name in rates for stat in ("mean", "min", "max")]
    table = [[k] + [round(f(rates[name][k]) / GiB, 2) for name in rates for f in (statistics.mean, min, max)]
             for k in ks]
    with open(out / "stria_fig4.csv", "w", newline="") as stream:
        csv.writer(stream).writerows([header] + table)
    logger.info(" | ".join(header))
    for row in table:
        logger.info(" | ".join(str(value) for value in row))
    plot(rates, ks, out / "stria_fig4.png")
    logger.info("plot: %s, table: %s", out / "stria_fig4.png", out / "stria_fig4.csv")


if __name__ == "__main__":
    main()
