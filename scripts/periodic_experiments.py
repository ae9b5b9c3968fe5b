"""The tables and figures of seed 001's list-versus-pack experiments
(Jeannot, Pallez, Vidal, IJHPCA 2023), from ``batio sweep`` outputs.

The experiments are sweep configs (``scripts/sweeps/periodic_*.yaml``: each
one's header says what it reproduces and its commands): workload families
M-BN, M-No, U-BN, U-No x I/O load alpha 0.2..0.8 x seeded workloads of
periodic jobs (``batio.workloads.periodic:sweep_workload``) on
``platforms/periodic_rack.xml``, under I/O-aware list scheduling (LS,
``schedulers/list_vs_pack/ioList.py``, conservative backfilling) and pack
scheduling (``schedulers/list_vs_pack/ioPack.py``: Random, Max, Char, with
backfilling), under either I/O model of the engine: Batsim's fair sharing
and ``io_exclusive`` (one transfer at a time, FIFO: the paper's model).

This script simulates nothing: it reads the sweeps' output folders
(``results.csv``, ``runs/``, ``workloads/``), measures every run with the
paper's metrics (``schedulers/list_vs_pack/metrics.py``) and draws the
paper's figures as PNG files:

* Fig. 4-5: utilisation during the execution (the paper's cumulative U(t)
  and the instantaneous one), per family and alpha;
* Fig. 6-7: max and mean stretch against alpha;
* Fig. 8: resource usage over time (running jobs, hosts, bandwidth) on M-BN
  and M-No;
* Fig. 9: mean stretch against the idle ratio (M-BN);

and writes ``summary.csv`` (one row per run) and the tables of
``RESULTS/periodic.md`` (between its ``tables`` markers). Each policy label
of the sweeps is a strategy (LS, Random, Max, Char, and the controls LS-LJF
and LS-noIO); ``--strategies`` keeps some of them. The defaults reproduce
``scripts/results/periodic.md``:

    .venv/bin/batio sweep scripts/sweeps/periodic_lessons.yaml --workers 2
    .venv/bin/batio sweep scripts/sweeps/periodic_fair.yaml --workers 2
    .venv/bin/python scripts/periodic_experiments.py --from-sweep out/sweeps/periodic_lessons out/sweeps/periodic_fair
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
import sys

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from batio.errors import exits_on_error  # noqa: E402
from batio.outfiles import bold_best, markdown_table  # noqa: E402
from batio.schedulers.list_vs_pack import metrics as pm  # noqa: E402
from batio.sweep import RESULTS_FILE, read_results  # noqa: E402
from batio.workloads import periodic  # noqa: E402

NB_HOSTS = periodic.DEFAULT_HOSTS
BANDWIDTH = periodic.DEFAULT_BANDWIDTH
FAMILIES = list(periodic.SHORT_NAMES)  # M-BN, M-No, U-BN, U-No
STRATEGIES = ["LS", "Random", "Max", "Char"]  # the paper's four
# Controls, not in the paper: LS with the queue sorted longest first, and LS
# blind to I/O (the same planning, with an I/O bandwidth that never binds).
EXTRA_STRATEGIES = ["LS-LJF", "LS-noIO"]
ALL = STRATEGIES + EXTRA_STRATEGIES
MODELS = {"fair": False, "exclusive": True}
COLOURS = {"LS": "tab:blue", "Random": "tab:green", "Max": "tab:orange", "Char": "tab:red",
           "LS-LJF": "tab:purple", "LS-noIO": "tab:gray"}
BINS = 40  # time bins over each run's makespan
MARK_BEGIN, MARK_END = "<!-- tables:begin -->", "<!-- tables:end -->"


def measure(run, prefix, workload, wall):
    """A run's row of ``summary.csv`` and its curves: ``run`` (family, alpha,
    index, strategy, model) with the metrics of its outputs at ``prefix``."""
    summary = pm.summarize(prefix, workload, NB_HOSTS)
    jobs = pm.load_jobs(prefix, workload)
    end = summary["makespan"]
    edges = np.linspace(0, end, BINS + 1)
    usage = pm.resource_usage(jobs, NB_HOSTS, BANDWIDTH, edges, f"{prefix}_io.csv")
    curves = {"cumulative_utilisation": pm.cumulative_utilisation(jobs, NB_HOSTS, edges[1:]),
              "instant_utilisation": pm.instant_utilisation(jobs, NB_HOSTS, edges), **usage}
    return {**run, "alpha_realised": workload["alpha"], **summary, "wall_s": wall,
            "curves": {k: list(map(float, v)) for k, v in curves.items()}}


def read_sweeps(folders, strategies=None):
    """The results of ``batio sweep`` outputs (``results.csv`` + ``runs/``) of
    ``scripts/sweeps/periodic_*.yaml``, each run measured (``measure``), keeping the
    ``strategies`` (policy labels; None: all). Returns (results, number of failed runs)."""
    results, seen, failed = [], set(), 0
    for folder in map(Path, folders):
        ok, failed_runs = read_results(folder, "scripts/sweeps/periodic_*.yaml")
        unknown = (set(ok["policy"]) | set(failed_runs["policy"])) - set(ALL)
        if unknown:
            raise SystemExit(f"{folder / RESULTS_FILE}: policies {sorted(unknown)} are none of this script's "
                             f"strategies ({', '.join(ALL)}): label them as one of them in the sweep config")
        if strategies is not None:
            ok, failed_runs = (table[table["policy"].isin(strategies)] for table in (ok, failed_runs))
        failed += len(failed_runs)
        for row in ok.itertuples():
            where = f"{folder / RESULTS_FILE}, run {row.run_id}"
            workload = json.loads((folder / "workloads" / Path(row.workload_file).name).read_text())
            if "experiment" not in workload:
                raise SystemExit(f"{where}: its workload was not made by batio.workloads.periodic:sweep_workload")
            spec = json.loads((folder / row.run_dir / "out_run.json").read_text())["spec"]
            model = next(name for name, exclusive in MODELS.items() if exclusive == spec["io_exclusive"])
            run = {**workload["experiment"], "strategy": row.policy, "model": model}
            key = tuple(run.values())
            if key in seen:
                raise SystemExit(f"{where}: a second run of {run}")
            seen.add(key)
            results.append(measure(run, folder / row.run_dir / "out", workload, row.wall_time_s))
    return results, failed


# -- figures ------------------------------------------------------------------------

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _plot_strategies(ax, x, results, model, family, alpha, key):
    """One curve per strategy: the mean of ``key`` over the runs of this model, family and alpha."""
    for strategy in ALL:
        runs = [r for r in results if r["model"] == model and r["family"] == family
                and abs(r["alpha"] - alpha) < 1e-9 and r["strategy"] == strategy and key in r["curves"]]
        if runs:
            ax.plot(x, _mean_curve(runs, key), color=COLOURS[strategy], label=strategy)


def _mean_curve(results, key):
    curves = np.array([r["curves"][key] for r in results])
    return curves.mean(axis=0)


def _save(plt, fig, path, title=None):
    """Title, lay out, write and close a figure; return its path."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_utilisation(results, model, families, alphas, folder, key, what):
    plt = _plt()
    shown = [a for a in alphas if any(abs(a - x) < 1e-9 for x in (0.2, 0.4, 0.6, 0.8))] or alphas
    fig, axes = plt.subplots(len(families), len(shown), figsize=(3.2 * len(shown), 2.4 * len(families)),
                             sharex=True, sharey=True, squeeze=False)
    x = (np.arange(BINS) + (1.0 if key.startswith("cumulative") else 0.5)) / BINS
    for row, family in enumerate(families):
        for col, alpha in enumerate(shown):
            ax = axes[row][col]
            _plot_strategies(ax, x, results, model, family, alpha, key)
            ax.set_title(f"{family}, alpha={alpha:.1f}", fontsize=9)
            ax.grid(alpha=0.3)
            if row == len(families) - 1:
                ax.set_xlabel("time / makespan")
            if col == 0:
                ax.set_ylabel(what)
    axes[0][0].legend(fontsize=7)
    return _save(plt, fig, folder / f"fig4_5_{key}_{model}.png", f"{what} during the execution ({model} I/O)")


def plot_stretch(frame, model, families, folder, column, figure):
    plt = _plt()
    fig, axes = plt.subplots(1, len(families), figsize=(4 * len(families), 3.4), squeeze=False)
    for ax, family in zip(axes[0], families):
        data = frame[(frame["model"] == model) & (frame["family"] == family)]
        shown = [x for x in ALL if (data["strategy"] == x).any()]
        for offset, strategy in zip(np.linspace(-0.012, 0.012, len(shown)), shown):
            runs = data[data["strategy"] == strategy]
            if runs.empty:
                continue
            ax.scatter(runs["alpha"] + offset, runs[column], s=9, alpha=0.5, color=COLOURS[strategy])
            means = runs.groupby("alpha")[column].agg(["mean", "std", "count"])
            half = 1.96 * means["std"].fillna(0) / np.sqrt(means["count"])
            ax.plot(means.index, means["mean"], color=COLOURS[strategy], label=strategy)
            ax.fill_between(means.index, means["mean"] - half, means["mean"] + half,
                            color=COLOURS[strategy], alpha=0.12)
        ax.set_title(family)
        ax.set_xlabel("I/O load alpha")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(column.replace("_", " "))
    axes[0][0].legend(fontsize=8)
    return _save(plt, fig, folder / f"{figure}_{column}_{model}.png",
                 f"{column.replace('_', ' ')} against the I/O load ({model} I/O); lines: mean, 95% CI")


def plot_usage(results, model, folder, alpha):
    plt = _plt()
    keys = [("running_jobs", "running jobs"), ("hosts", "hosts allocated (fraction)"),
            ("bandwidth_measured", "bandwidth used, measured (fraction)"),
            ("bandwidth_planned", "sum of running averages / b")]
    families = ["M-BN", "M-No"]
    fig, axes = plt.subplots(len(families), len(keys), figsize=(3.6 * len(keys), 3 * len(families)),
                             sharex=True, squeeze=False)
    x = (np.arange(BINS) + 0.5) / BINS
    for row, family in enumerate(families):
        for col, (key, label) in enumerate(keys):
            ax = axes[row][col]
            _plot_strategies(ax, x, results, model, family, alpha, key)
            ax.set_title(f"{family}: {label}", fontsize=9)
            ax.grid(alpha=0.3)
            if row == len(families) - 1:
                ax.set_xlabel("time / makespan")
    axes[0][0].legend(fontsize=7)
    return _save(plt, fig, folder / f"fig8_usage_{model}.png", f"Resource usage over time, alpha={alpha} ({model} I/O)")


def plot_idle(frame, model, folder, family="M-BN"):
    plt = _plt()
    data = frame[(frame["model"] == model) & (frame["family"] == family)]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for strategy in ALL:
        runs = data[data["strategy"] == strategy].sort_values("idle_ratio")
        if runs.empty:
            continue
        ax.scatter(runs["idle_ratio"], runs["mean_stretch"], s=14, alpha=0.6, color=COLOURS[strategy],
                   label=strategy)
        if len(runs) >= 4:
            fit = np.polyfit(runs["idle_ratio"], runs["mean_stretch"], 1)
            xs = np.linspace(runs["idle_ratio"].min(), runs["idle_ratio"].max(), 20)
            ax.plot(xs, np.polyval(fit, xs), color=COLOURS[strategy], lw=1)
    ax.set_xlabel("idle ratio")
    ax.set_ylabel("mean stretch")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Mean stretch vs idle ratio, {family} ({model} I/O)", fontsize=10)
    return _save(plt, fig, folder / f"fig9_idle_stretch_{model}.png")


# -- tables ---------------------------------------------------------------------------

METRICS = [("mean_stretch", "mean stretch", "{:.3f}", min), ("max_stretch", "max stretch", "{:.2f}", min),
           ("utilisation", "utilisation U(makespan)", "{:.3f}", max),
           ("steady_utilisation", "steady-state utilisation (instantaneous, 0.1-0.5 of the makespan)",
            "{:.3f}", max),
           ("idle_ratio", "idle ratio", "{:.3f}", min),
           ("makespan_over_bound", "makespan / lower bound", "{:.3f}", min)]


def _table(table, fmt, best):
    """Markdown lines of ``table`` (index -> strategies), the best value of each row in bold."""
    keys = (key if isinstance(key, tuple) else (key,) for key in table.index)
    rows = [[*(f"{k:.1f}" if isinstance(k, float) else k for k in key), *bold_best(list(values), fmt.format, best)]
            for key, values in zip(keys, table.to_numpy())]
    return markdown_table([*table.index.names, *table.columns], rows).splitlines()


def tables(frame, header):
    lines = [header]
    for detail in (False, True):
        lines.append("\n## " + ("Per family and alpha (mean over the workloads of each point)" if detail else
                                 "Per alpha, mean over the four families and the workloads"))
        for model in MODELS:
            data = frame[frame["model"] == model]
            if data.empty:
                continue
            name = "engine option io_exclusive, the paper's model" if model == "exclusive" else "Batsim's fair sharing"
            lines.append(f"\n### {model} I/O ({name})")
            for column, title, fmt, best in METRICS:
                index = ["family", "alpha"] if detail else "alpha"
                table = data.pivot_table(index=index, columns="strategy", values=column, aggfunc="mean")
                table = table[[s for s in ALL if s in table.columns]]
                lines.append(f"\n**{title}**\n")
                lines += _table(table, fmt, best)
    return "\n".join(lines) + "\n"


def write_tables(frame, md_path, header=""):
    text = md_path.read_text() if md_path.exists() else f"# Periodic experiments\n\n{MARK_BEGIN}\n{MARK_END}\n"
    if MARK_BEGIN not in text:
        text += f"\n{MARK_BEGIN}\n{MARK_END}\n"
    head, rest = text.split(MARK_BEGIN, 1)
    _, tail = rest.split(MARK_END, 1)
    md_path.write_text(head + MARK_BEGIN + "\n" + tables(frame, header) + MARK_END + tail)


@exits_on_error
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-sweep", nargs="+", metavar="DIR", required=True,
                        help="output folders of `batio sweep scripts/sweeps/periodic_*.yaml`")
    parser.add_argument("--strategies", nargs="+", choices=ALL,
                        help="the policies to table and draw (default: every one the folders hold)")
    parser.add_argument("--results", default=str(ROOT / "scripts" / "results"),
                        help="folder of periodic.md and periodic/ (figures, summary.csv)")
    args = parser.parse_args(argv)

    results, failed = read_sweeps(args.from_sweep, args.strategies)
    families = [family for family in FAMILIES if any(r["family"] == family for r in results)]
    alphas = sorted({r["alpha"] for r in results})
    workloads = len({r["index"] for r in results})
    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "curves"} for r in results])
    folder = Path(args.results) / "periodic"
    folder.mkdir(parents=True, exist_ok=True)
    frame.sort_values(["model", "family", "alpha", "index", "strategy"]).to_csv(folder / "summary.csv", index=False)
    figures = []
    for model in MODELS:
        if frame.empty or (frame["model"] == model).sum() == 0:
            continue
        figures.append(plot_utilisation(results, model, families, alphas, folder,
                                        "cumulative_utilisation", "utilisation U(t)"))
        figures.append(plot_utilisation(results, model, families, alphas, folder,
                                        "instant_utilisation", "instantaneous utilisation"))
        figures.append(plot_stretch(frame, model, families, folder, "max_stretch", "fig6"))
        figures.append(plot_stretch(frame, model, families, folder, "mean_stretch", "fig7"))
        if {"M-BN", "M-No"} <= set(families):
            alpha = 0.6 if any(abs(a - 0.6) < 1e-9 for a in alphas) else alphas[-1]
            figures.append(plot_usage(results, model, folder, alpha))
        if "M-BN" in families:
            figures.append(plot_idle(frame, model, folder))
    command = " ".join(argv if argv is not None else sys.argv[1:])
    count = {column: frame[column].nunique() if len(frame) else 0
             for column in ("family", "alpha", "strategy", "model")}
    header = (f"Generated by `scripts/periodic_experiments.py {command}` from the outputs of `batio sweep`: "
              f"{len(results)} runs ({count['family']} families x {count['alpha']} alphas x {workloads} workloads x "
              f"{count['strategy']} strategies x {count['model']} I/O models). Best value of each row in bold.")
    write_tables(frame, Path(args.results) / "periodic.md", header)
    print(f"{len(results)} results, {failed} failed runs; figures: {', '.join(str(f.name) for f in figures)}",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
