"""The list-versus-pack experiments of seed 001 (Jeannot, Pallez, Vidal,
IJHPCA 2023), on the embedded engine.

For each workload family (M-BN, M-No, U-BN, U-No), I/O load alpha in
0.2..0.8 and ``--workloads`` seeded workloads of ``--jobs`` periodic jobs
(``workloads/periodic.py``) on ``platforms/periodic_rack.xml``, runs I/O-aware
list scheduling (LS, ``schedulers/list_vs_pack/ioList.py``, conservative backfilling) and
pack scheduling (``schedulers/list_vs_pack/ioPack.py``: Random, Max, Char, with
backfilling) under both I/O models of the engine: Batsim's fair sharing (the
default) and ``io_exclusive`` (one transfer at a time, FIFO: the paper's
model). Then it draws the paper's figures as PNG files:

* Fig. 4-5: utilisation during the execution (the paper's cumulative U(t)
  and the instantaneous one), per family and alpha;
* Fig. 6-7: max and mean stretch against alpha;
* Fig. 8: resource usage over time (running jobs, hosts, bandwidth) on M-BN
  and M-No;
* Fig. 9: mean stretch against the idle ratio (M-BN);

and writes ``summary.csv`` (one row per run) and the tables of
``scripts/results/periodic.md`` (between its ``tables`` markers).

Controls beyond the paper: ``--strategies`` may add ``LS-LJF`` (LS, queue
longest first) and ``LS-noIO`` (LS with a bandwidth that never binds);
``--volume-scaling none`` makes I/O volumes independent of job sizes (see
``workloads/periodic.py``); ``--models`` restricts the I/O models. Use
another ``--results`` folder for them: the defaults reproduce
``scripts/results/periodic.md``.

Each simulation runs in a forked child (``batio.engine.run.run_here``: one
SimGrid engine per process) with ``--workers`` at a time; a run whose
``result.json`` exists is not run again (``--force`` reruns).

``--from-sweep DIR ...`` simulates nothing: it makes the same figures and
tables from the outputs of ``batio sweep scripts/sweeps/periodic_*.yaml``
(whose workloads come from ``sweep_workload``, this script's workloads).

    .venv/bin/python scripts/periodic_experiments.py            # the default scale
    .venv/bin/python scripts/periodic_experiments.py --jobs 20 --workloads 1 --alphas 0.2 0.8   # a smoke test
"""
from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import multiprocessing.connection
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from batio.schedulers.list_vs_pack import metrics as pm  # noqa: E402
from batio.engine.run import RunSpec  # noqa: E402
from batio.workloads import periodic  # noqa: E402

PLATFORM = ROOT / "platforms" / "periodic_rack.xml"
NB_HOSTS = periodic.DEFAULT_HOSTS
BANDWIDTH = periodic.DEFAULT_BANDWIDTH
FAMILIES = ["M-BN", "M-No", "U-BN", "U-No"]
ALPHAS = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
STRATEGIES = ["LS", "Random", "Max", "Char"]  # the paper's four
# Controls, not in the paper: LS with the queue sorted longest first, and LS
# blind to I/O (the same planning, with an I/O bandwidth that never binds).
EXTRA_STRATEGIES = ["LS-LJF", "LS-noIO"]
ALL = STRATEGIES + EXTRA_STRATEGIES
MODELS = {"fair": False, "exclusive": True}
COLOURS = {"LS": "tab:blue", "Random": "tab:green", "Max": "tab:orange", "Char": "tab:red",
           "LS-LJF": "tab:purple", "LS-noIO": "tab:gray"}
BINS = 40  # time bins over each run's makespan
SAMPLES_PER_RUN = 2000  # I/O throughput samples per lower bound of the run
MARK_BEGIN, MARK_END = "<!-- tables:begin -->", "<!-- tables:end -->"


def scheduler_of(strategy, index):
    if strategy == "LS":
        return ROOT / "schedulers" / "list_vs_pack" / "ioList.py", {}
    if strategy == "LS-LJF":
        return ROOT / "schedulers" / "list_vs_pack" / "ioList.py", {"order": "ljf"}
    if strategy == "LS-noIO":
        return ROOT / "schedulers" / "list_vs_pack" / "ioList.py", {"bandwidth": 1e30}
    return ROOT / "schedulers" / "list_vs_pack" / "ioPack.py", {"packs": strategy, "seed": index}


def workload_seed(family, alpha, index):
    return 1000 * FAMILIES.index(family) + 10 * round(alpha * 10) + index + 1


def sweep_workload(seed, family, alpha, jobs, volume_scaling="hosts"):
    """This script's workload number ``seed`` (0, 1, ...) of ``family`` at
    ``alpha``, as a ``batio sweep`` generator (``scripts/sweeps/periodic_*.yaml``).
    It records what ``--from-sweep`` needs to place the run in the tables."""
    workload = periodic.generate(family, alpha, jobs, workload_seed(family, alpha, seed),
                                 volume_scaling=volume_scaling)
    workload["experiment"] = {"family": family, "alpha": alpha, "index": seed}
    return workload


# -- one run, in a forked child ---------------------------------------------------

def run_task(task):
    """Simulate, then compute the run's metrics and curves into result.json."""
    from batio.engine.run import run_here
    prefix = Path(task["prefix"])
    prefix.parent.mkdir(parents=True, exist_ok=True)
    workload = json.loads(Path(task["workload"]).read_text())
    bound = pm.lower_bound(workload, NB_HOSTS)
    spec = RunSpec(str(PLATFORM), [task["workload"]], str(task["scheduler"]), str(prefix),
                   options=task["options"], io_exclusive=task["exclusive"],
                   io_sample_period=max(1.0, bound / SAMPLES_PER_RUN))
    started = time.perf_counter()
    with open(f"{prefix}_scheduler.log", "w") as log, contextlib.redirect_stdout(log), \
            contextlib.redirect_stderr(log):
        run_here(spec)
    wall = time.perf_counter() - started
    result = measure({k: task[k] for k in ("family", "alpha", "index", "strategy", "model")}, prefix, workload, wall)
    Path(task["result"]).write_text(json.dumps(result))


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


def _child(task):
    try:
        run_task(task)
    except BaseException:  # noqa: BLE001 - reported by the parent
        Path(task["result"] + ".error").write_text(traceback.format_exc())
        raise SystemExit(1)


def run_all(tasks, workers):
    context = multiprocessing.get_context("fork")
    pending = [task for task in tasks]
    running = {}
    done = failed = 0
    began = time.perf_counter()
    while pending or running:
        while pending and len(running) < workers:
            task = pending.pop(0)
            process = context.Process(target=_child, args=(task,))
            process.start()
            running[process.sentinel] = (process, task)
        ready = multiprocessing.connection.wait(list(running))
        for sentinel in ready:
            process, task = running.pop(sentinel)
            process.join()
            if process.exitcode == 0:
                done += 1
            else:
                failed += 1
                print(f"FAILED {task['prefix']}: see {task['result']}.error", file=sys.stderr)
        print(f"\r{done + failed}/{len(tasks)} runs, {failed} failed, {time.perf_counter() - began:.0f} s",
              end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return failed


# -- the experiment plan ---------------------------------------------------------

def plan(args):
    out = Path(args.out)
    (out / "workloads").mkdir(parents=True, exist_ok=True)
    tasks = []
    for family in args.families:
        for alpha in args.alphas:
            for index in range(args.workloads):
                name = f"{family}_a{alpha:.1f}_{index}" + ("" if args.volume_scaling == "hosts" else "_vnone")
                path = out / "workloads" / f"{name}.json"
                if not path.exists() or args.force:
                    workload = periodic.generate(family, alpha, args.jobs, workload_seed(family, alpha, index),
                                                 volume_scaling=args.volume_scaling)
                    path.write_text(json.dumps(workload))
                for strategy in args.strategies:
                    scheduler, options = scheduler_of(strategy, index)
                    for model in args.models:
                        exclusive = MODELS[model]
                        run = out / runs_folder(args) / model / strategy / name
                        result = str(run / "result.json")
                        if Path(result).exists() and not args.force:
                            continue
                        tasks.append({"family": family, "alpha": alpha, "index": index, "strategy": strategy,
                                      "model": model, "exclusive": exclusive, "workload": str(path),
                                      "scheduler": str(scheduler), "options": options,
                                      "prefix": str(run / "out"), "result": result})
    return tasks


def runs_folder(args):
    return "runs" if args.volume_scaling == "hosts" else "runs_vnone"


def collect(args):
    results = []
    for path in sorted(Path(args.out, runs_folder(args)).glob("*/*/*/result.json")):
        result = json.loads(path.read_text())
        if (result["family"] in args.families and any(abs(result["alpha"] - a) < 1e-9 for a in args.alphas)
                and result["index"] < args.workloads and result["strategy"] in args.strategies
                and result["model"] in args.models):
            results.append(result)
    return results


def from_sweep(folders):
    """The results of ``batio sweep`` outputs (``results.csv`` + ``runs/``) of
    ``scripts/sweeps/periodic_*.yaml``, measured as ``run_task`` measures its
    own runs. Returns (results, number of failed runs)."""
    results, seen, failed = [], set(), 0
    for folder in map(Path, folders):
        table_path = folder / "results.csv"
        if not table_path.is_file():
            raise SystemExit(f"--from-sweep {folder}: no results.csv (run `batio sweep CONFIG --out {folder}` first)")
        table = pd.read_csv(table_path, keep_default_na=False)
        for row in table.itertuples():
            if row.status != "ok":
                failed += 1
                print(f"FAILED {row.run_id}: {row.error}", file=sys.stderr)
                continue
            where = f"{table_path}, run {row.run_id}"
            if row.policy not in ALL:
                raise SystemExit(f"{where}: policy {row.policy!r} is none of this script's strategies "
                                 f"({', '.join(ALL)}): label it as one of them in the sweep config")
            workload = json.loads((folder / "workloads" / Path(row.workload_file).name).read_text())
            if "experiment" not in workload:
                raise SystemExit(f"{where}: its workload was not made by this script's sweep_workload generator")
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
           ("steady_utilisation", "steady-state utilisation (instantaneous, 0.1-0.5 of the makespan)", "{:.3f}", max),
           ("idle_ratio", "idle ratio", "{:.3f}", min), ("makespan_over_bound", "makespan / lower bound", "{:.3f}", min)]


def _table(table, fmt, best, label):
    """Markdown rows of ``table`` (index -> strategies), the best value in bold."""
    lines = [f"| {label} | " + " | ".join(table.columns) + " |", "|---|" + "---|" * len(table.columns)]
    for key, row in table.iterrows():
        target = best(row[s] for s in table.columns)
        cells = [f"**{fmt.format(row[s])}**" if row[s] == target else fmt.format(row[s]) for s in table.columns]
        key = " | ".join(f"{k:.1f}" if isinstance(k, float) else str(k) for k in (key if isinstance(key, tuple) else (key,)))
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return lines


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
                lines += _table(table, fmt, best, "family | alpha" if detail else "alpha")
    return "\n".join(lines) + "\n"


def write_tables(frame, md_path, header=""):
    text = md_path.read_text() if md_path.exists() else f"# Periodic experiments\n\n{MARK_BEGIN}\n{MARK_END}\n"
    if MARK_BEGIN not in text:
        text += f"\n{MARK_BEGIN}\n{MARK_END}\n"
    head, rest = text.split(MARK_BEGIN, 1)
    _, tail = rest.split(MARK_END, 1)
    md_path.write_text(head + MARK_BEGIN + "\n" + tables(frame, header) + MARK_END + tail)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=60, help="jobs per workload")
    parser.add_argument("--workloads", type=int, default=3, help="workloads per (family, alpha) point")
    parser.add_argument("--alphas", type=float, nargs="+", default=ALPHAS)
    parser.add_argument("--families", nargs="+", default=FAMILIES, choices=FAMILIES)
    parser.add_argument("--strategies", nargs="+", default=STRATEGIES, choices=STRATEGIES + EXTRA_STRATEGIES)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--volume-scaling", default="hosts", choices=periodic.VOLUME_SCALINGS,
                        help="I/O volumes proportional to Q_i / P (the paper's formula) or independent of Q_i")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "out" / "periodic"), help="workloads and raw outputs")
    parser.add_argument("--results", default=str(ROOT / "scripts" / "results"),
                        help="folder of periodic.md and periodic/ (figures, summary.csv)")
    parser.add_argument("--force", action="store_true", help="regenerate and rerun everything")
    parser.add_argument("--from-sweep", nargs="+", metavar="DIR",
                        help="simulate nothing: make the figures and tables from the output folders of "
                             "`batio sweep scripts/sweeps/periodic_*.yaml` (the grid options are then ignored)")
    args = parser.parse_args(argv)

    began = time.perf_counter()
    if args.from_sweep:
        results, failed = from_sweep(args.from_sweep)
        args.families = [family for family in FAMILIES if any(r["family"] == family for r in results)]
        args.alphas = sorted({r["alpha"] for r in results})
        args.workloads = len({r["index"] for r in results})
        how = "measured from the outputs of `batio sweep`"
    else:
        tasks = plan(args)
        print(f"{len(tasks)} runs to do ({args.workers} at a time)", file=sys.stderr)
        failed = run_all(tasks, args.workers)
        results = collect(args)
        how = f"{len(tasks)} of them simulated by this invocation"
    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "curves"} for r in results])
    folder = Path(args.results) / "periodic"
    folder.mkdir(parents=True, exist_ok=True)
    frame.sort_values(["model", "family", "alpha", "index", "strategy"]).to_csv(folder / "summary.csv", index=False)
    figures = []
    for model in MODELS:
        if frame.empty or (frame["model"] == model).sum() == 0:
            continue
        figures.append(plot_utilisation(results, model, args.families, args.alphas, folder,
                                        "cumulative_utilisation", "utilisation U(t)"))
        figures.append(plot_utilisation(results, model, args.families, args.alphas, folder,
                                        "instant_utilisation", "instantaneous utilisation"))
        figures.append(plot_stretch(frame, model, args.families, folder, "max_stretch", "fig6"))
        figures.append(plot_stretch(frame, model, args.families, folder, "mean_stretch", "fig7"))
        if {"M-BN", "M-No"} <= set(args.families):
            alpha = 0.6 if any(abs(a - 0.6) < 1e-9 for a in args.alphas) else args.alphas[-1]
            figures.append(plot_usage(results, model, folder, alpha))
        if "M-BN" in args.families:
            figures.append(plot_idle(frame, model, folder))
    options = " ".join(a for a in (argv if argv is not None else sys.argv[1:]) if a not in ("--force",))
    header = (f"Generated by `scripts/periodic_experiments.py {options}`: "
              f"{len(results)} runs ({frame['family'].nunique() if len(frame) else 0} families x "
              f"{frame['alpha'].nunique() if len(frame) else 0} alphas x {args.workloads} workloads x "
              f"{frame['strategy'].nunique() if len(frame) else 0} strategies x {frame['model'].nunique() if len(frame) else 0} "
              f"I/O models), {how} in {time.perf_counter() - began:.0f} s with {args.workers} workers. "
              "Best value of each row in bold.")
    write_tables(frame, Path(args.results) / "periodic.md", header)
    print(f"{len(results)} results, {failed} failed runs, {time.perf_counter() - began:.0f} s; "
          f"figures: {', '.join(str(f.name) for f in figures)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
