"""The report of a comparison or a sweep: a folder that opens without batio.

    OUT/report/report.md     tables, figures, failed runs, inputs and definitions
    OUT/report/summary.csv   one row per (platform, workload, engine) x policy:
                             metrics averaged over seeds, and their ratios to the baseline
    OUT/report/results.csv   one row per run (a copy of OUT/results.csv)
    OUT/report/figures/      PNG figures (one sub-folder per group when there are several)

Runs are grouped by platform, workload and engine; within a group the
policies are compared on the same inputs, averaged over seeds.
"""

from datetime import UTC, datetime
import math
from pathlib import Path
import shutil

import pandas as pd

from batio import __version__, metrics, plots
from batio.metrics import METRICS, job_io_slowdowns
from batio.names import slug
from batio.outfiles import write_text, written
from batio.tables import markdown_table

GROUP_KEYS = ["platform", "workload", "engine"]
# metric -> (heading, how a value is shown)
SHOWN = {
    "makespan": ("makespan (s)", "{:.1f}"),
    "mean_wait": ("mean wait (s)", "{:.1f}"),
    "max_wait": ("max wait (s)", "{:.1f}"),
    "mean_slowdown": ("mean slowdown", "{:.3f}"),
    "max_slowdown": ("max slowdown", "{:.3f}"),
    "utilisation": ("utilisation", "{:.1%}"),
    "bytes_moved": ("bytes moved (GB)", "{:.2f}"),
    "mean_io_slowdown": ("mean I/O slowdown", "{:.3f}"),
    "max_io_slowdown": ("max I/O slowdown", "{:.3f}"),
}
SCALE = {"bytes_moved": 1e-9}
DEFINITIONS = """\
- **makespan**: the last job's finish time, from time 0 (Batsim's definition).
- **wait**: starting time - submission time; mean and max over the jobs that ran.
- **slowdown**: Batsim's stretch, turnaround time / execution time, per job; mean and max.
- **utilisation**: sum over jobs of execution time x hosts, over compute hosts x makespan.
- **bytes moved**: bytes read plus written on the storage hosts, from `out_io.csv`
  (measured by batio's embedded engine; empty for runs on real Batsim).
- **I/O slowdown**: per job, its execution time in the run over its execution time
  when it runs alone on the machine, taken from a reference run of the same jobs
  submitted one after the other (FCFS, each after the previous one's walltime).
  Compute hosts are never shared between jobs, so this is the slowdown caused by
  sharing the storage and the network: 1.0 means no interference. Mean and max
  over the jobs that succeeded in both runs; empty when a job has no walltime.
- **ratios** (x): the policy's value over the baseline's, both averaged over the
  seeds whose runs succeeded. Lower is better except for utilisation.
"""


# -- tables -------------------------------------------------------------------------------
def summary_table(results, baseline=None):
    """One row per group x policy: runs, seeds, mean of each metric over the successful runs,
    and ``METRIC_ratio`` columns (policy / baseline) when a baseline is given."""
    rows = []
    for keys, group in results.groupby(GROUP_KEYS, sort=False, dropna=False):
        for policy, runs in group.groupby("policy", sort=False):
            ok = runs[runs["status"] == "ok"]
            seeds = sorted({int(seed) for seed in runs["seed"].dropna()})
            row = dict(zip(GROUP_KEYS, keys), policy=policy, runs=len(runs), runs_ok=len(ok),
                       seeds=" ".join(map(str, seeds)))
            for metric in METRICS:
                values = pd.to_numeric(ok[metric], errors="coerce") if metric in ok else pd.Series(dtype=float)
                row[metric] = float(values.mean()) if values.notna().any() else math.nan
            rows.append(row)
    summary = pd.DataFrame(rows)
    if baseline is not None and len(summary):
        # Each row next to its group's baseline row (NaN where the group has none).
        base = summary[summary["policy"] == baseline][GROUP_KEYS + list(METRICS)]
        aligned = summary[GROUP_KEYS].merge(base, on=GROUP_KEYS, how="left")
        for metric in METRICS:
            reference = aligned[metric].where(aligned[metric] != 0).to_numpy(dtype=float)
            summary[f"{metric}_ratio"] = summary[metric].to_numpy(dtype=float) / reference
    return summary


def shown_value(metric, value):
    """A metric's value as tables show it ("-" when unknown)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return SHOWN[metric][1].format(value * SCALE.get(metric, 1))


def table_cells(group, baseline=None):
    """(header, rows) of one group's summary: one row per metric, one column per policy."""
    header = ["metric"] + [f"{policy} (baseline)" if policy == baseline else policy for policy in group["policy"]]
    rows = [["runs ok"] + [f"{row.runs_ok}/{row.runs}" for row in group.itertuples()]]
    for metric, (heading, _) in SHOWN.items():
        cells = [heading]
        for _, row in group.iterrows():
            cell = shown_value(metric, row[metric])
            ratio = row.get(f"{metric}_ratio", math.nan)
            if baseline is not None and row["policy"] != baseline and cell != "-" and not math.isnan(ratio):
                cell += f" ({ratio:.2f}x)"
            cells.append(cell)
        rows.append(cells)
    return header, rows


def format_text(group, baseline=None):
    header, rows = table_cells(group, baseline)
    widths = [max(len(str(line[i])) for line in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
                       for i, (cell, width) in enumerate(zip(line, widths))) for line in [header] + rows]
    return "\n".join(lines)


def groups_of(summary):
    return [(tuple(keys), group) for keys, group in summary.groupby(GROUP_KEYS, sort=False, dropna=False)]


# -- figures ------------------------------------------------------------------------------
def _figures(results, out, keys, figures_dir, report_dir):
    """Figures of one group; returns Markdown lines linking them."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    ok = results[results["status"] == "ok"]
    if ok.empty:
        return ["No successful run: no figures."]
    # One run per policy for the time-based figures: the smallest seed.
    shown = ok.sort_values("seed", na_position="first").groupby("policy", sort=False).head(1)
    prefixes = {row.policy: out / row.run_dir / "out" for row in shown.itertuples()}
    end = float(pd.to_numeric(shown["makespan"], errors="coerce").max() or 1.0)
    seed_note = "" if shown["seed"].isna().all() else f" (seed {shown['seed'].dropna().min()})"
    lines = []
    for policy, prefix in prefixes.items():
        path = figures_dir / f"gantt-{slug(policy)}.png"
        plots.allocation_and_throughput(prefix, path, f"{policy} on {keys[1]} / {keys[0]}{seed_note}", end)
        lines.append(f"![{policy}: node allocation and storage throughput]({path.relative_to(report_dir)})")
    path = plots.utilisation_over_time(prefixes, figures_dir / "utilisation.png",
                                       f"utilisation over time, {keys[1]} / {keys[0]}{seed_note}", end)
    lines.append(f"![utilisation over time]({path.relative_to(report_dir)})")
    slowdowns, io_slowdowns = {}, {}
    for policy, runs in ok.groupby("policy", sort=False):
        stretch, io = [], []
        for row in runs.itertuples():
            jobs = metrics.read_jobs(out / row.run_dir / "out")
            stretch += list(jobs.loc[jobs["final_state"] != "REJECTED", "stretch"].dropna())
            reference = _reference_dir(out, row.reference_run)
            if reference is not None:
                io += list(job_io_slowdowns(out / row.run_dir / "out", reference / "out"))
        slowdowns[policy], io_slowdowns[policy] = stretch, io
    path = plots.slowdown_distributions(slowdowns, io_slowdowns, figures_dir / "slowdown.png",
                                        f"per-job slowdowns, {keys[1]} / {keys[0]} (all seeds)")
    lines.append(f"![per-job slowdown distributions]({path.relative_to(report_dir)})")
    return lines


def _reference_dir(out, reference_run):
    if not isinstance(reference_run, str) or not reference_run:
        return None
    folder = out / "runs" / reference_run
    return folder if (folder / "out_jobs.csv").exists() else None


# -- the report ----------------------------------------------------------------------------
def _inputs_section(results):
    rows = set()
    for row in results.itertuples():
        rows.add(("platform", row.platform, row.platform_file, row.platform_sha256))
        rows.add(("workload", f"{row.workload}" + ("" if pd.isna(row.seed) else f" (seed {row.seed})"),
                  row.workload_file, row.workload_sha256))
    for scheduler, runs in results.groupby("scheduler", sort=False):
        sha = runs["scheduler_sha256"].iloc[0]
        rows.add(("scheduler", ", ".join(dict.fromkeys(runs["policy"])), scheduler,
                  sha if isinstance(sha, str) else "-"))
    return markdown_table(["input", "used by", "file", "SHA-256"], sorted(rows, key=lambda r: (r[0], str(r[1]))))


def write_report(results, out, baseline=None, title="comparison", made_from=None):
    """Write OUT/report (see the module doc); return the path of report.md."""
    out = Path(out)
    report_dir = out / "report"
    shutil.rmtree(report_dir / "figures", ignore_errors=True)  # no figure of an earlier report survives
    report_dir.mkdir(parents=True, exist_ok=True)
    summary = summary_table(results, baseline)
    for name, table in (("summary.csv", summary), ("results.csv", results)):
        with written(report_dir / name):
            table.to_csv(report_dir / name, index=False)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# batio {title}", "",
             f"Made by batio {__version__} on {now}" + (f" from `{made_from}`" if made_from else "") + ".",
             f"{len(results)} run{'s' if len(results) != 1 else ''}, "
             f"{int((results['status'] == 'ok').sum())} succeeded."
             + (f" Ratios (x) are to **{baseline}**." if baseline else ""), ""]
    groups = groups_of(summary)
    for keys, group in groups:
        platform, workload, engine = keys
        lines += [f"## {workload} on {platform} ({engine} engine)", ""]
        seeds = group["seeds"].iloc[0]
        if seeds:
            lines += [f"Mean over seeds {seeds}.", ""]
        lines += [markdown_table(*table_cells(group, baseline), align_right_from=1), ""]
        in_group = results[(results[GROUP_KEYS] == pd.Series(dict(zip(GROUP_KEYS, keys)))).all(axis=1)]
        figures_dir = report_dir / "figures" / (slug(f"{workload}-{platform}-{engine}") if len(groups) > 1 else "")
        lines += [line + "\n" for line in _figures(in_group, out, keys, figures_dir, report_dir)]
    failed = [(row.policy, row, row.error) for row in results.itertuples() if row.status != "ok"]
    failed += [("reference run (jobs alone): no I/O slowdown", row, row.reference_error)
               for row in results.drop_duplicates("reference_run").itertuples()
               if isinstance(getattr(row, "reference_error", ""), str) and row.reference_error]
    if failed:
        lines += ["## Failed runs", "",
                  markdown_table(["run", "workload", "seed", "platform", "engine", "error"],
                                 [[what, row.workload, "-" if pd.isna(row.seed) else row.seed, row.platform,
                                   row.engine, str(error).splitlines()[0] if str(error) else "?"]
                                  for what, row, error in failed]), ""]
    lines += ["## Inputs", "", _inputs_section(results), "", "## Definitions", "", DEFINITIONS,
              "## Files", "",
              "- `summary.csv`: the tables above, one row per group and policy, with `*_ratio` columns.",
              "- `results.csv`: one row per run: inputs, options, seed, metrics, status, error, input hashes.",
              "- `figures/`: the figures above.",
              "- `../runs/RUN_ID/`: each run's Batsim output files, `out_run.json` and `result.json`.", ""]
    path = report_dir / "report.md"
    write_text(path, "\n".join(lines))
    return path
