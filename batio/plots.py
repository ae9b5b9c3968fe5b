"""Figures of runs, drawn from their output files only, as PNG.

- ``allocation_and_throughput``: which job held which compute host when (a
  Gantt chart, from ``_jobs.csv``) above the aggregate storage throughput,
  read and write stacked (from ``_io.csv``), on one time axis, so that I/O
  bursts line up with the jobs that cause them;
- ``utilisation_over_time``: the fraction of compute hosts running a job
  (from ``_machine_states.csv``), one line per policy;
- ``slowdown_distributions``: per-job slowdown and I/O slowdown, one box per policy.

matplotlib's ``Figure`` is used without pyplot: no global state and no
display, so figures can be drawn from any thread or worker.
"""

from pathlib import Path

from matplotlib import colormaps
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
import numpy as np
import pandas as pd

from batio import metrics
from batio.outfiles import written

DPI = 110


def host_intervals(allocation):
    """Batsim's interval set ``"0-3 8"`` as [(first host, number of hosts)]."""
    intervals = []
    for part in str(allocation).split():
        first, _, last = part.partition("-")
        intervals.append((int(first), int(last or first) - int(first) + 1))
    return intervals


def aggregate_throughput(prefix):
    """(times, read B/s, write B/s) summed over storage hosts, as step functions
    starting at time 0; None when the run has no ``_io.csv`` (real Batsim)."""
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


def _nb_compute(prefix, jobs):
    try:
        return int(pd.read_json(f"{prefix}_run.json", typ="series")["nb_compute_resources"])
    except (OSError, ValueError, KeyError):
        return max((first + count for allocation in jobs["allocated_resources"]
                    for first, count in host_intervals(allocation)), default=1)


def draw_allocation(axes, ran, label_jobs=False, min_labelled=0.0):
    """Each job of ``ran`` (rows of ``_jobs.csv``) as one rectangle per interval
    of its hosts, in one collection: a call per rectangle (``broken_barh``)
    rescales the axes over every rectangle drawn so far, which took 706 s
    for a trace day's 29,144 jobs (2.1 s now). Returns the collection."""
    colours = colormaps["tab20"]
    corners, faces, edges, widths = [], [], [], []
    for number, job in enumerate(ran.itertuples(index=False)):
        failed = job.final_state != "COMPLETED_SUCCESSFULLY"
        start, end = job.starting_time, job.starting_time + job.execution_time
        for first, count in host_intervals(job.allocated_resources):
            corners.append([(start, first), (start, first + count), (end, first + count), (end, first)])
            faces.append(colours(number % 20))
            edges.append("red" if failed else "black")
            widths.append(1.2 if failed else 0.3)
            if label_jobs and job.execution_time > min_labelled:
                axes.text(start + job.execution_time / 2, first + count / 2, str(job.job_id),
                          ha="center", va="center", fontsize=6, clip_on=True)
    rectangles = PolyCollection(corners, facecolors=faces, edgecolors=edges, linewidths=widths)
    axes.add_collection(rectangles)
    return rectangles


def allocation_and_throughput(prefix, path, title, time_limit=None):
    """The Gantt chart of compute hosts above the storage throughput of one run."""
    jobs = metrics.read_jobs(prefix)
    ran = jobs[(jobs["final_state"] != "REJECTED") & jobs["starting_time"].notna()]
    nb_compute = _nb_compute(prefix, jobs)
    end = time_limit or float(ran["finish_time"].max() if len(ran) else 1.0)
    figure = Figure(figsize=(10, 6.5), layout="constrained")
    hosts, storage = figure.subplots(2, 1, sharex=True, height_ratios=[3, 1.2])
    draw_allocation(hosts, ran, label_jobs=len(ran) <= 80, min_labelled=end / 40)  # beyond 80, labels are unreadable
    hosts.set_ylim(0, nb_compute)
    hosts.yaxis.set_major_locator(MaxNLocator(integer=True))  # host i is the band [i, i + 1)
    hosts.set_ylabel("compute host")
    hosts.set_title("node allocation (red edge: job did not succeed)", fontsize=9)
    throughput = aggregate_throughput(prefix)
    if throughput is None:
        storage.text(0.5, 0.5, "no _io.csv: storage throughput is measured by batio's embedded engine only",
                     ha="center", va="center", transform=storage.transAxes, fontsize=9)
    else:
        times, read, write = throughput
        times, read, write = np.append(times, end), np.append(read, read[-1]), np.append(write, write[-1])
        storage.fill_between(times, 0, read / 1e9, step="post", label="read", color="tab:blue", alpha=0.7)
        storage.fill_between(times, read / 1e9, (read + write) / 1e9, step="post", label="write",
                             color="tab:orange", alpha=0.7)
        storage.legend(loc="upper right", fontsize=8)
    storage.set_ylabel("storage GB/s")
    storage.set_xlabel("time (s)")
    storage.set_xlim(0, end)
    figure.suptitle(title)
    with written(path):
        figure.savefig(path, dpi=DPI)
    return path


def utilisation_over_time(prefixes, path, title, time_limit=None):
    """``prefixes``: {policy label: run prefix}."""
    figure = Figure(figsize=(10, 4), layout="constrained")
    axes = figure.subplots()
    end = 0.0
    for label, prefix in prefixes.items():
        states = pd.read_csv(f"{prefix}_machine_states.csv").drop_duplicates("time", keep="last")
        hosts = states.drop(columns="time").sum(axis=1)
        fraction = (states["nb_computing"] / hosts.where(hosts > 0)).fillna(0.0)
        times = np.concatenate([[0.0], states["time"].to_numpy(dtype=float)])
        axes.step(times, np.concatenate([[0.0], fraction.to_numpy()]), where="post", label=label, linewidth=1.2)
        end = max(end, float(times[-1]))
    axes.set_xlim(0, time_limit or end or 1.0)
    axes.set_ylim(0, 1.05)
    axes.set_xlabel("time (s)")
    axes.set_ylabel("compute hosts busy (fraction)")
    axes.legend(loc="lower right", fontsize=8)
    axes.set_title(title)
    with written(path):
        figure.savefig(path, dpi=DPI)
    return path


def _boxes(axes, samples, ylabel):
    labels = list(samples)
    values = [np.asarray(samples[label], dtype=float) for label in labels]
    axes.boxplot(values, tick_labels=labels, showmeans=True)
    axes.set_ylabel(ylabel)
    positive = np.concatenate(values) if values else np.array([])
    if len(positive) and positive.min() > 0 and positive.max() / positive.min() > 30:
        axes.set_yscale("log")
    axes.tick_params(axis="x", labelrotation=20, labelsize=8)


def slowdown_distributions(slowdowns, io_slowdowns, path, title):
    """{policy label: per-job values} for the slowdown, and for the I/O slowdown (may be empty)."""
    panels = 2 if any(len(values) for values in io_slowdowns.values()) else 1
    figure = Figure(figsize=(5 + 4 * panels, 4.5), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, panels))
    _boxes(axes[0], slowdowns, "slowdown (turnaround / execution time)")
    if panels == 2:
        _boxes(axes[1], io_slowdowns, "I/O slowdown (execution time / alone)")
    figure.suptitle(title)
    with written(path):
        figure.savefig(path, dpi=DPI)
    return path
