"""Figures of runs, drawn from their output files only, as PNG (for papers).

Design notes: docs/internals.md.
"""

from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
import numpy as np

from batio.outfiles import written
from batio.report import schedule_data
from batio.report.schedule_data import COLOURS, time_unit

DPI = 110


def host_intervals(allocation):
    """Batsim's interval set ``"0-3 8"`` as [(first host, number of hosts)]."""
    intervals = []
    for part in str(allocation).split():
        first, _, last = part.partition("-")
        intervals.append((int(first), int(last or first) - int(first) + 1))
    return intervals


def draw_allocation(axes, ran, label_jobs=False, min_labelled=0.0, unit=1.0):
    """Each job of ``ran`` (rows of ``_jobs.csv`` with schedule_data's ``intensity``) as one
    rectangle per interval of its hosts, coloured by its bytes' class, in one collection: a
    call per rectangle (``broken_barh``) rescales the axes over every rectangle drawn so far,
    which took 706 s for a trace day's 29,144 jobs (2.1 s now). Times are divided by ``unit``.
    Returns the collection."""
    corners, faces, edges, widths = [], [], [], []
    for job in ran.itertuples(index=False):
        failed = job.final_state != "COMPLETED_SUCCESSFULLY"
        start, end = job.starting_time / unit, (job.starting_time + job.execution_time) / unit
        for first, count in host_intervals(job.allocated_resources):
            corners.append([(start, first), (start, first + count), (end, first + count), (end, first)])
            faces.append(COLOURS[job.intensity])
            edges.append("red" if failed else "black")
            widths.append(1.2 if failed else 0.3)
            if label_jobs and job.execution_time > min_labelled:
                axes.text((start + end) / 2, first + count / 2, str(job.job_id),
                          ha="center", va="center", fontsize=6, clip_on=True)
    rectangles = PolyCollection(corners, facecolors=faces, edgecolors=edges, linewidths=widths)
    axes.add_collection(rectangles)
    return rectangles


def allocation_and_throughput(prefix, path, title, time_limit=None):
    """The Gantt chart of compute hosts above the storage throughput of one run; without
    I/O (or without ``_io.csv``) the chart alone, saying so."""
    run = schedule_data.load_run(prefix)
    end = time_limit or float(run.jobs["finish_time"].max() if len(run.jobs) else 1.0)
    name, unit = time_unit(end)
    throughput = run.throughput
    has_io = throughput is not None and float(np.max(throughput[1] + throughput[2])) > 0
    figure = Figure(figsize=(10, 6.5 if has_io else 4.8), layout="constrained")
    if has_io:
        hosts, storage = figure.subplots(2, 1, sharex=True, height_ratios=[3, 1.2])
    else:
        hosts = figure.subplots()
    # beyond 80 jobs, labels are unreadable
    draw_allocation(hosts, run.jobs, label_jobs=len(run.jobs) <= 80, min_labelled=end / 40, unit=unit)
    hosts.set_ylim(0, run.nb_compute)
    hosts.yaxis.set_major_locator(MaxNLocator(integer=True))  # host i is the band [i, i + 1)
    hosts.set_ylabel("compute host")
    shown = [label for label in schedule_data.CLASSES if (run.jobs["intensity"] == label).any()]
    hosts.legend([Patch(color=COLOURS[label]) for label in shown], shown, title=schedule_data.LEGEND,
                 fontsize=7, title_fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    missing = ("no out_io.csv: storage throughput is measured by batio's embedded engine only"
               if throughput is None else "no I/O in this run")
    hosts.set_title("node allocation (red edge: job did not succeed)" + ("" if has_io else f"; {missing}"),
                    fontsize=9)
    bottom = hosts
    if has_io:
        times, read, write = throughput
        times, read, write = np.append(times, end) / unit, np.append(read, read[-1]), np.append(write, write[-1])
        storage.fill_between(times, 0, read / 1e9, step="post", label="read", color="tab:blue", alpha=0.7)
        storage.fill_between(times, read / 1e9, (read + write) / 1e9, step="post", label="write",
                             color="tab:orange", alpha=0.7)
        if run.capacity is not None:
            storage.axhline(run.capacity / 1e9, color="black", linestyle="--", linewidth=1,
                            label="capacity (narrowest shared link)")
        storage.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
        storage.set_ylabel("storage GB/s")
        bottom = storage
    bottom.set_xlabel(f"time ({name})")
    bottom.set_xlim(0, end / unit)
    figure.suptitle(title)
    with written(path):
        figure.savefig(path, dpi=DPI)
    return path


def utilisation_over_time(prefixes, path, title, time_limit=None):
    """``prefixes``: {policy label: run prefix}; one panel per policy on one time axis
    (overlaid step lines of several policies hide each other)."""
    series = {label: schedule_data.utilisation(prefix) for label, prefix in prefixes.items()}
    end = time_limit or max([float(times[-1]) for times, _ in series.values()] + [1.0])
    name, unit = time_unit(end)
    figure = Figure(figsize=(10, 1.2 + 1.3 * len(series)), layout="constrained")
    axes = np.atleast_1d(figure.subplots(len(series), 1, sharex=True, squeeze=False)[:, 0])
    for panel, (label, (times, fraction)) in zip(axes, series.items()):
        panel.step(times / unit, fraction, where="post", linewidth=1.0, color="tab:blue")
        panel.set_ylim(0, 1.05)
        panel.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
    axes[-1].set_xlim(0, end / unit)
    axes[-1].set_xlabel(f"time ({name})")
    figure.supylabel("compute hosts busy (fraction)", fontsize=9)
    figure.suptitle(title)
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
    figure.suptitle(f"{title}\nbox: quartiles, orange line: median; whiskers: 1.5 x IQR; circles: beyond; "
                    "green triangle: mean", fontsize=10)
    with written(path):
        figure.savefig(path, dpi=DPI)
    return path


def metric_intervals(summary, metrics, headings, path, title):
    """One panel per metric of ``summary`` (report.summary_table's rows of one group):
    each policy's mean, with its ``METRIC_ci`` half-width as an error bar when known."""
    shown = [metric for metric in metrics if summary[metric].notna().any()]
    figure = Figure(figsize=(3.2 * max(len(shown), 1), 3.8), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, max(len(shown), 1)))
    policies = list(summary["policy"])
    for panel, metric in zip(axes, shown):
        means = summary[metric].to_numpy(dtype=float)
        errors = np.nan_to_num(summary[f"{metric}_ci"].to_numpy(dtype=float))  # no interval: no bar
        panel.errorbar(range(len(policies)), means, yerr=errors, fmt="o", capsize=4)
        panel.set_xticks(range(len(policies)), policies, rotation=20, fontsize=8)
        panel.set_title(headings[metric], fontsize=9)
    figure.suptitle(title)
    with written(path):
        figure.savefig(path, dpi=DPI)
    return path
