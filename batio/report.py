"""The report of a comparison or a sweep: a folder that opens without batio.

    OUT/report/report.md     tables, figures, failed runs, inputs and definitions
    OUT/report/summary.csv   one row per (platform, workload, engine) x policy:
                             metrics averaged over replicas with their 95 % intervals, their
                             ratios to the baseline and paired differences (batio.uncertainty)
    OUT/report/results.csv   one row per run (a copy of OUT/results.csv)
    OUT/report/figures/      PNG figures (one sub-folder per group when there are several)
    OUT/report/report.html   the same as a page that opens offline (batio.html_report)

``write_reports`` writes them all; ``write_page`` writes the page of any output folder again.

Runs are grouped by platform, workload and engine; within a group the
policies are compared on the same inputs, over replicas: the seeds of a
generated workload, or the windows of a trace (seed k is window k).
"""

from dataclasses import dataclass
from datetime import UTC, datetime
import math
from pathlib import Path
import shutil

import pandas as pd

from batio import __version__, html_report, plots, uncertainty
from batio.errors import InputError
from batio.metrics import DEFINITIONS, METRICS, per_job_values
from batio.names import slug
from batio.outfiles import markdown_table, write_text, written

GROUP_KEYS = ["platform", "workload", "engine"]
# metric -> (heading, how a value is shown)
SHOWN = {
    "makespan": ("makespan (s)", "{:.1f}"),
    "mean_wait": ("mean wait (s)", "{:.1f}"),
    "max_wait": ("max wait (s)", "{:.1f}"),
    "mean_slowdown": ("mean slowdown", "{:.3f}"),
    "max_slowdown": ("max slowdown", "{:.3f}"),
    "mean_bounded_slowdown": ("mean bounded slowdown", "{:.3f}"),
    "max_bounded_slowdown": ("max bounded slowdown", "{:.3f}"),
    "utilisation": ("utilisation", "{:.1%}"),
    "bytes_moved": ("bytes moved (GB)", "{:.2f}"),
    "mean_io_slowdown": ("mean I/O slowdown", "{:.3f}"),
    "max_io_slowdown": ("max I/O slowdown", "{:.3f}"),
}
SCALE = {"bytes_moved": 1e-9}
# The metrics whose paired differences get a verdict, and those where higher is better.
JUDGED = ("makespan", "mean_wait", "mean_slowdown", "mean_bounded_slowdown", "utilisation", "mean_io_slowdown")
HIGHER_IS_BETTER = {"utilisation", "succeeded"}


# -- tables -------------------------------------------------------------------------------
def summary_table(results, baseline=None):
    """One row per group x policy: runs, replicas, mean of each metric over the successful runs
    with ``METRIC_ci`` (95 % half-width), and when a baseline is given ``METRIC_ratio`` (policy /
    baseline) and the paired difference to it (``METRIC_diff``, ``_diff_ci``, ``_p_t``,
    ``_p_wilcoxon``, ``_verdict``; see batio.uncertainty)."""
    rows = []
    for keys, group in results.groupby(GROUP_KEYS, sort=False, dropna=False):
        for policy, runs in group.groupby("policy", sort=False):
            ok = runs[runs["status"] == "ok"]
            seeds = sorted({int(seed) for seed in runs["seed"].dropna()})
            windows = ok["window"].dropna().unique() if "window" in ok else []
            row = dict(zip(GROUP_KEYS, keys), policy=policy, runs=len(runs), runs_ok=len(ok),
                       seeds=" ".join(map(str, seeds)), window=", ".join(map(str, windows)),
                       degraded=degradation(runs))
            for metric in METRICS:
                row[metric], row[f"{metric}_ci"] = uncertainty.interval(_values(ok, metric))
            rows.append(row)
    summary = pd.DataFrame(rows)
    if baseline is not None and len(summary):
        # Each row next to its group's baseline row (NaN where the group has none).
        base = summary[summary["policy"] == baseline][GROUP_KEYS + list(METRICS)]
        aligned = summary[GROUP_KEYS].merge(base, on=GROUP_KEYS, how="left")
        for metric in METRICS:
            reference = aligned[metric].where(aligned[metric] != 0).to_numpy(dtype=float)
            summary[f"{metric}_ratio"] = summary[metric].to_numpy(dtype=float) / reference
        differences = [_paired(results, row, baseline) for row in summary.itertuples(index=False)]
        summary = pd.concat([summary, pd.DataFrame(differences, index=summary.index)], axis=1)
    return summary


def _values(runs, metric):
    return pd.to_numeric(runs[metric], errors="coerce") if metric in runs else pd.Series(dtype=float)


def _paired(results, row, baseline):
    """The paired differences of one summary row's policy to the baseline, replica by replica (same seed)."""
    if row.policy == baseline:
        return {}
    ok = results[results["status"] == "ok"]
    same_group = (ok[GROUP_KEYS] == pd.Series({key: getattr(row, key) for key in GROUP_KEYS})).all(axis=1)
    ok = ok[same_group]
    pairs = ok[ok["policy"] == row.policy].merge(ok[ok["policy"] == baseline], on="seed", suffixes=("", "_base"))
    columns = {"pairs": len(pairs)}
    for metric in METRICS:
        if metric not in pairs:
            continue
        result = uncertainty.paired(_values(pairs, metric), _values(pairs, f"{metric}_base"),
                                    lower_is_better=metric not in HIGHER_IS_BETTER)
        columns.update({f"{metric}_diff": result.mean, f"{metric}_diff_ci": result.half_width,
                        f"{metric}_p_t": result.p_t, f"{metric}_p_wilcoxon": result.p_wilcoxon,
                        f"{metric}_verdict": result.verdict})
    return columns


def degradation(runs):
    """Why the runs' policy did not fit its inputs (run anyway, batio.fit), "" when it did."""
    reasons = runs["degraded"].fillna("") if "degraded" in runs else []
    return "; ".join(dict.fromkeys(reason for reason in reasons if reason))


def shown_value(metric, value):
    """A metric's value as tables show it ("-" when unknown)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return SHOWN[metric][1].format(value * SCALE.get(metric, 1))


def shown_interval(metric, mean, half_width):
    """``mean ± half-width`` as tables show the metric (the mean alone without an interval)."""
    cell = shown_value(metric, mean)
    if cell != "-" and not (half_width is None or math.isnan(half_width)):
        cell += f" ± {shown_value(metric, half_width)}"
    return cell


def evaluated_cell(row):
    """The evaluated window of a summary row, e.g. "777 of 930 (category 1)" (means over replicas)."""
    if math.isnan(row["evaluated_jobs"]):
        return "-"
    return f"{row['evaluated_jobs']:.0f} of {row['jobs']:.0f} ({row['window'] or '?'})"


def table_cells(group, baseline=None):
    """(header, rows) of one group's summary: one row per metric, one column per policy;
    values are means over replicas ± their 95 % half-width, with the ratio to the baseline."""
    header = ["metric"] + [f"{row.policy}{' (baseline)' if row.policy == baseline else ''}"
                           f"{' (DEGRADED: does not fit)' if row.degraded else ''}" for row in group.itertuples()]
    rows = [["runs ok"] + [f"{row.runs_ok}/{row.runs}" for row in group.itertuples()],
            ["evaluated jobs"] + [evaluated_cell(row) for _, row in group.iterrows()]]
    for metric, (heading, _) in SHOWN.items():
        cells = [heading]
        for _, row in group.iterrows():
            cell = shown_interval(metric, row[metric], row[f"{metric}_ci"])
            ratio = row.get(f"{metric}_ratio", math.nan)
            if baseline is not None and row["policy"] != baseline and cell != "-" and not math.isnan(ratio):
                cell += f" ({ratio:.2f}x)"
            cells.append(cell)
        rows.append(cells)
    return header, rows


def _p(value):
    return "-" if value is None or math.isnan(value) else f"{value:.3g}"


def difference_cells(group, baseline):
    """(header, rows): each policy's paired difference to the baseline on the judged metrics."""
    header = ["policy", "metric", "difference to baseline (95 % interval)", "pairs", "p (paired t)",
              "p (Wilcoxon)", "verdict"]
    rows = []
    for _, row in group[group["policy"] != baseline].iterrows():
        for metric in JUDGED:
            if f"{metric}_diff" not in row or math.isnan(row[f"{metric}_diff"]):
                continue  # no value in the pairs (e.g. no I/O slowdown without reference runs)
            rows.append([row["policy"], SHOWN[metric][0],
                         shown_interval(metric, row[f"{metric}_diff"], row[f"{metric}_diff_ci"]),
                         f"{row['pairs']:.0f}", _p(row[f"{metric}_p_t"]), _p(row[f"{metric}_p_wilcoxon"]),
                         row[f"{metric}_verdict"]])
    return header, rows


def replica_note(group):
    """What the replicas are, or that there is no uncertainty estimate."""
    replicas = int(group["runs_ok"].min()) if len(group) else 0
    seeds = group["seeds"].iloc[0] if len(group) else ""
    if replicas == 0:
        return "A policy has no successful run: no comparison and no uncertainty estimate."
    if replicas < 2:
        return ("One replica: no uncertainty estimate (no interval, no test). Replicas come from --seeds K "
                "(a workload generator) or --windows LENGTH (a trace).")
    return f"Means over {replicas} replicas (seeds or windows {seeds}) ± their 95 % Student t interval."


def _aligned(header, rows):
    widths = [max(len(str(line[i])) for line in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
                                for i, (cell, width) in enumerate(zip(line, widths))) for line in [header] + rows)


def format_text(group, baseline=None):
    """The summary table as text, the replicas, and the paired differences to the baseline."""
    text = [_aligned(*table_cells(group, baseline)), replica_note(group)]
    if baseline is not None and int(group["runs_ok"].min()) >= 2:
        header, rows = difference_cells(group, baseline)
        if rows:
            text.append(_aligned(header, rows))
    return "\n".join(text)


def groups_of(summary):
    return [(tuple(keys), group) for keys, group in summary.groupby(GROUP_KEYS, sort=False, dropna=False)]


# -- what both reports show ------------------------------------------------------------------
@dataclass(frozen=True)
class GroupView:
    """One platform x workload x engine group as report.md and report.html show it, computed once:
    its summary rows and runs, the replica note, the summary cells, the paired-difference cells
    (None without a baseline or under 2 replicas)."""

    keys: tuple
    summary: pd.DataFrame
    runs: pd.DataFrame
    note: str
    cells: tuple
    differences: tuple | None


@dataclass(frozen=True)
class ReportData:
    """A comparison's or a sweep's results (``results.gather``'s table) with their summary, group views
    and ``metrics.per_job_values`` of each successful run by run id."""

    results: pd.DataFrame
    baseline: str | None
    summary: pd.DataFrame
    groups: list
    per_job: dict


def report_data(results, out, baseline=None):
    """The ReportData of ``results`` in the sweep folder ``out``; InputError when a successful run's outputs
    are incomplete (batio.metrics.check_outputs)."""
    out = Path(out)
    summary = summary_table(results, baseline)
    groups = []
    for keys, group in groups_of(summary):
        runs = results[(results[GROUP_KEYS] == pd.Series(dict(zip(GROUP_KEYS, keys)))).all(axis=1)]
        paired = baseline is not None and int(group["runs_ok"].min()) >= 2
        groups.append(GroupView(keys, group, runs, replica_note(group), table_cells(group, baseline),
                                difference_cells(group, baseline) if paired else None))
    per_job = {row.run_id: per_job_values(out, row) for row in results[results["status"] == "ok"].itertuples()}
    return ReportData(results, baseline, summary, groups, per_job)


# -- figures ------------------------------------------------------------------------------
def _figures(view, per_job, out, report_dir, several):
    """Figures of one group, in its own folder when there are ``several``; returns (the path of its
    intervals figure, None without paired differences; Markdown lines linking the others)."""
    platform, workload, engine = view.keys
    workload_platform = f"{workload} / {platform}"
    figures_dir = report_dir / "figures" / (slug(f"{workload}-{platform}-{engine}") if several else "")
    intervals = None
    if view.differences is not None:
        figures_dir.mkdir(parents=True, exist_ok=True)
        intervals = plots.metric_intervals(view.summary, JUDGED, {m: SHOWN[m][0] for m in JUDGED},
                                           figures_dir / "intervals.png", f"{workload} on {platform}: means "
                                           "and 95 % intervals over replicas")
    figures_dir.mkdir(parents=True, exist_ok=True)
    ok = view.runs[view.runs["status"] == "ok"]
    if ok.empty:
        return intervals, ["No successful run: no figures."]
    # One run per policy for the time-based figures: the smallest seed.
    shown = ok.sort_values("seed", na_position="first").groupby("policy", sort=False).head(1)
    prefixes = {row.policy: out / row.run_dir / "out" for row in shown.itertuples()}
    end = float(pd.to_numeric(shown["makespan"], errors="coerce").max() or 1.0)
    seed_note = "" if shown["seed"].isna().all() else f" (seed {shown['seed'].dropna().min()})"
    lines = []
    for policy, prefix in prefixes.items():
        path = figures_dir / f"gantt-{slug(policy)}.png"
        plots.allocation_and_throughput(prefix, path, f"{policy} on {workload_platform}{seed_note}", end)
        lines.append(f"![{policy}: node allocation and storage throughput]({path.relative_to(report_dir)})")
    path = plots.utilisation_over_time(prefixes, figures_dir / "utilisation.png",
                                       f"utilisation over time, {workload_platform}{seed_note}", end)
    lines.append(f"![utilisation over time]({path.relative_to(report_dir)})")
    slowdowns, io_slowdowns = {}, {}
    for policy, runs in ok.groupby("policy", sort=False):
        values = [per_job[row.run_id] for row in runs.itertuples()]
        slowdowns[policy] = [v for stretch, _, _ in values for v in stretch]
        io_slowdowns[policy] = [v for _, _, io in values for v in io]
    path = plots.slowdown_distributions(slowdowns, io_slowdowns, figures_dir / "slowdown.png",
                                        f"per-job slowdowns, {workload_platform} (evaluated jobs, all replicas)")
    lines.append(f"![per-job slowdown distributions]({path.relative_to(report_dir)})")
    return intervals, lines


# -- the report ----------------------------------------------------------------------------
def _input_rows(results):
    """The rows of the Inputs table: each platform, workload and scheduler with its file and SHA-256."""
    rows = set()
    for row in results.itertuples():
        rows.add(("platform", row.platform, row.platform_file, row.platform_sha256))
        rows.add(("workload", f"{row.workload}" + ("" if pd.isna(row.seed) else f" (seed {row.seed})"),
                  row.workload_file, row.workload_sha256))
    for scheduler, runs in results.groupby("scheduler", sort=False):
        sha = runs["scheduler_sha256"].iloc[0]
        rows.add(("scheduler", ", ".join(dict.fromkeys(runs["policy"])), scheduler,
                  sha if isinstance(sha, str) else "-"))
    return sorted(rows, key=lambda r: (r[0], str(r[1])))


def _failed_rows(results):
    """The rows of the Failed runs table: each failed run, and each reference run without which a
    policy run has no I/O slowdown."""
    failed = [(row.policy, row, row.error) for row in results.itertuples() if row.status != "ok"]
    failed += [("reference run (jobs alone): no I/O slowdown", row, row.reference_error)
               for row in results.drop_duplicates("reference_run").itertuples()
               if isinstance(getattr(row, "reference_error", ""), str) and row.reference_error]
    return [[what, row.workload, "-" if pd.isna(row.seed) else row.seed, row.platform, row.engine,
             str(error).splitlines()[0] if str(error) else "?"] for what, row, error in failed]


def _group_lines(view, baseline, intervals, figures, report_dir):
    """The Markdown section of one group: its tables and the links to its figures."""
    platform, workload, engine = view.keys
    lines = [f"## {workload} on {platform} ({engine} engine)", "",
             view.note, "", markdown_table(*view.cells, align_right_from=1), ""]
    if view.differences is not None:
        lines += [f"Paired differences to **{baseline}**, replica by replica:", "",
                  markdown_table(*view.differences, align_right_from=2), "",
                  f"![means and 95 % intervals]({intervals.relative_to(report_dir)})", "",
                  "Intervals of two policies' means may overlap while their paired difference "
                  "excludes 0: the verdicts come from the paired differences.", ""]
    return lines + [line + "\n" for line in figures]


def write_report(data, out, title="comparison", made_from=None):
    """Write OUT/report (see the module doc) from the ReportData of ``out``; return the path of report.md."""
    results, baseline, summary = data.results, data.baseline, data.summary
    report_dir = Path(out) / "report"
    shutil.rmtree(report_dir / "figures", ignore_errors=True)  # no figure of an earlier report survives
    report_dir.mkdir(parents=True, exist_ok=True)
    for name, table in (("summary.csv", summary), ("results.csv", results)):
        with written(report_dir / name):
            table.to_csv(report_dir / name, index=False)
    figures = [_figures(view, data.per_job, Path(out), report_dir, len(data.groups) > 1) for view in data.groups]
    degraded = summary[summary["degraded"] != ""].drop_duplicates("policy") if len(summary) else summary
    failed, inputs = _failed_rows(results), _input_rows(results)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# batio {title}", "",
             f"Made by batio {__version__} on {now}" + (f" from `{made_from}`" if made_from else "") + ".",
             f"{len(results)} run{'s' if len(results) != 1 else ''}, "
             f"{int((results['status'] == 'ok').sum())} succeeded."
             + (f" Ratios (x) are to **{baseline}**." if baseline else ""), ""]
    for view, (intervals, figure_lines) in zip(data.groups, figures):
        lines += _group_lines(view, baseline, intervals, figure_lines, report_dir)
    if len(degraded):
        lines += ["## Degraded: policies run on inputs they do not fit (--allow-unfit)", "",
                  markdown_table(["policy", "what the inputs lack"],
                                 [[row.policy, row.degraded] for row in degraded.itertuples()]), ""]
    if failed:
        lines += ["## Failed runs", "",
                  markdown_table(["run", "workload", "seed", "platform", "engine", "error"], failed), ""]
    lines += ["## Inputs", "", markdown_table(["input", "used by", "file", "SHA-256"], inputs), "",
              "## Definitions", "", DEFINITIONS,
              "## Files", "",
              "- `summary.csv`: the tables above, one row per group and policy, with `*_ratio` columns.",
              "- `results.csv`: one row per run: inputs, options, seed, metrics, status, error, input hashes.",
              "- `figures/`: the figures above.",
              "- `report.html`: this report as an interactive page that opens offline (zoom, a tooltip per job).",
              "- `../runs/RUN_ID/`: each run's Batsim output files, `out_run.json` and `result.json`.", ""]
    path = report_dir / "report.md"
    write_text(path, "\n".join(lines))
    return path


def write_reports(results, out, baseline=None, title="comparison", made_from=None):
    """OUT/report (report.md, report.html and the rest) from ``results.gather``'s table; returns report.md's path."""
    data = report_data(results, out, baseline)
    path = write_report(data, out, title=title, made_from=made_from)
    html_report.write_folder_page(data, out, title=title)
    return path


def write_page(folder, baseline=None):
    """The page of any output folder: a run (out_jobs.csv) or a comparison or sweep (results.csv)."""
    folder = Path(folder)
    if (folder / "results.csv").is_file():
        results = pd.read_csv(folder / "results.csv")
        if baseline is not None and baseline not in set(results["policy"]):
            raise InputError("--baseline", f"{baseline!r} is not a policy of {folder / 'results.csv'}")
        data = report_data(results, folder, baseline or results["policy"].iloc[0])
        return html_report.write_folder_page(data, folder, title=f"results of {folder.name}")
    if (folder / "out_jobs.csv").is_file() or (folder / "out_run.json").is_file():
        return html_report.write_run_page(folder)
    raise InputError(folder, "not a batio output folder: no out_jobs.csv (a run) and no results.csv "
                             "(a comparison or a sweep)")
