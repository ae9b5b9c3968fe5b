"""The report of a comparison or a sweep: a folder that opens without batio.

    OUT/report/report.md     tables, figures, failed runs, inputs and definitions
    OUT/report/summary.csv   one row per (platform, workload, engine) x policy:
                             metrics averaged over replicas with their 95 % intervals, their
                             ratios to the baseline and paired differences (batio.report.uncertainty)
    OUT/report/results.csv   one row per run (a copy of OUT/results.csv)
    OUT/report/figures/      PNG figures (one sub-folder per group when there are several)
    OUT/report/report.html   the same as a page that opens offline (batio.report.html_report)

``write_reports`` writes them all; ``write_page`` writes the page of any output folder again.

Runs are grouped by platform, workload and engine; within a group the
policies are compared on the same inputs, over replicas: the seeds of a
generated workload, or the windows of a trace (seed k is window k).
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
import math
from pathlib import Path
import shutil

import pandas as pd

from batio import __version__
from batio.errors import InputError
from batio.names import slug
from batio.outfiles import markdown_table, write_text, written
from batio.report import html_report, plots, uncertainty, verdict
from batio.report.metrics import DEFAULT_BSLD_TAU, METRICS, definitions, per_job_values
from batio.report.output_check import check_results, check_run
from batio.report.shown import (
    DEGRADED,
    HIGHER_IS_BETTER,
    JUDGED,
    SHOWN,
    policy_label,
    shown_difference,
    shown_interval,
)

GROUP_KEYS = ["platform", "workload", "engine"]
COMMAND_FILE = "command.txt"


# -- tables -------------------------------------------------------------------------------
def summary_table(results, baseline=None):
    """One row per group x policy: runs, replicas, mean of each metric over the successful runs
    with ``METRIC_ci`` (95 % half-width), and when a baseline is given ``METRIC_ratio`` (policy /
    baseline) and the paired difference to it (``METRIC_diff``, ``_diff_ci``, ``_p_t``,
    ``_p_wilcoxon``, ``_verdict``; see batio.report.uncertainty)."""
    rows = []
    for keys, group in results.groupby(GROUP_KEYS, sort=False, dropna=False):
        for policy, runs in group.groupby("policy", sort=False):
            ok = runs[runs["status"] == "ok"]
            seeds = sorted({int(seed) for seed in runs["seed"].dropna()})
            windows = ok["window"].dropna().unique() if "window" in ok else []
            row = dict(zip(GROUP_KEYS, keys), policy=policy, runs=len(runs), runs_ok=len(ok),
                       seeds=" ".join(map(str, seeds)), window=", ".join(map(str, windows)),
                       degraded=degradation(runs), bsld_tau=verdict.tau_of(group))
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
    """Why the runs' policy did not fit its inputs (run anyway, batio.requirements), "" when it did."""
    reasons = runs["degraded"].astype(object).fillna("") if "degraded" in runs else []
    return "; ".join(dict.fromkeys(reason for reason in reasons if reason))


def evaluated_cell(row):
    """The evaluated window of a summary row, e.g. "777 of 930 (category 1)" (means over replicas)."""
    if math.isnan(row["evaluated_jobs"]):
        return "-"
    return f"{row['evaluated_jobs']:.0f} of {row['jobs']:.0f} ({row['window'] or '?'})"


def table_cells(group, baseline=None):
    """(header, rows) of one group's summary: one row per metric, one column per policy;
    values are means over replicas ± their 95 % half-width, with the ratio to the baseline."""
    header = ["metric"] + [policy_label(row.policy, row.degraded, baseline) for row in group.itertuples()]
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


def tested(group, baseline):
    """Whether a policy of ``group`` has paired differences to the baseline (2 pairs or more): a policy
    without a successful run leaves every other policy's tests in place."""
    others = group[group["policy"] != baseline]
    return baseline is not None and "pairs" in others and bool((others["pairs"].fillna(0) >= 2).any())


def difference_cells(group, baseline):
    """(header, rows): each policy's paired difference to the baseline on the judged metrics."""
    header = ["policy", "metric", "difference to baseline (95 % interval)", "pairs", "p (paired t)",
              "p (Wilcoxon)", "verdict"]
    base = group[group["policy"] == baseline]
    base_degraded = bool(len(base)) and bool(base["degraded"].iloc[0])
    rows = []
    for _, row in group[group["policy"] != baseline].iterrows():
        if not row.get("pairs", 0) >= 2:
            continue  # no test: the replica note and the findings say why
        label = policy_label(row["policy"], row["degraded"] or (base_degraded and "baseline"))
        for metric in JUDGED:
            if f"{metric}_diff" not in row or math.isnan(row[f"{metric}_diff"]):
                continue  # no value in the pairs (e.g. no I/O slowdown without reference runs)
            rows.append([label, SHOWN[metric][0],
                         shown_difference(metric, row[f"{metric}_diff"], row[f"{metric}_diff_ci"]),
                         f"{row['pairs']:.0f}", _p(row[f"{metric}_p_t"]), _p(row[f"{metric}_p_wilcoxon"]),
                         row[f"{metric}_verdict"]])
    return header, rows


def replica_note(group):
    """What the replicas are, or that there is no uncertainty estimate; which policies have no run."""
    ok = group[group["runs_ok"] > 0]
    failed = list(group.loc[group["runs_ok"] == 0, "policy"])
    if ok.empty:
        return "No policy has a successful run: no comparison and no uncertainty estimate."
    missing = (f" No successful run of {', '.join(failed)}: no values and no test (see Failed runs)."
               if failed else "")
    replicas = int(ok["runs_ok"].min())
    if replicas < 2:
        return ("One replica: no uncertainty estimate (no interval, no test). Replicas come from --seeds K "
                "(a workload generator) or --windows LENGTH (a trace)." + missing)
    seeds = ok["seeds"].iloc[0]
    return f"Means over {replicas} replicas (seeds or windows {seeds}) ± their 95 % Student t interval." + missing


def _aligned(header, rows):
    widths = [max(len(str(line[i])) for line in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
                                for i, (cell, width) in enumerate(zip(line, widths))) for line in [header] + rows)


def format_text(group, baseline=None):
    """The summary table as text, the replicas, and the paired differences to the baseline."""
    text = [_aligned(*table_cells(group, baseline)), replica_note(group)]
    if tested(group, baseline):
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
    cells: tuple[list, list]  # (header, rows) of a Markdown table, as the next
    differences: tuple[list, list] | None


@dataclass(frozen=True)
class ReportData:
    """A comparison's or a sweep's results (``results.gather``'s table) with their summary, group views,
    ``metrics.per_job_values`` of each successful run by run id, and what both reports open with
    (batio.report.verdict): the findings, the parameters, the windows, the failed and the degraded runs."""

    results: pd.DataFrame
    baseline: str | None
    summary: pd.DataFrame
    groups: list
    per_job: dict
    tau: float = DEFAULT_BSLD_TAU
    made_from: str | None = None
    findings: tuple[list, list] | None = None  # (header, rows)
    parameters: list = field(default_factory=list)
    windows: tuple | None = None
    failed: list = field(default_factory=list)
    degraded: list = field(default_factory=list)


def report_data(results, out, baseline=None, made_from=None):
    """The ReportData of ``results`` in the sweep folder ``out``; InputError when a successful run's outputs
    are incomplete (batio.report.metrics.check_outputs)."""
    out = Path(out)
    summary = summary_table(results, baseline)
    groups = []
    for keys, group in groups_of(summary):
        runs = results[(results[GROUP_KEYS] == pd.Series(dict(zip(GROUP_KEYS, keys)))).all(axis=1)]
        groups.append(GroupView(keys, group, runs, replica_note(group), table_cells(group, baseline),
                                difference_cells(group, baseline) if tested(group, baseline) else None))
    per_job = {row.run_id: per_job_values(out, row) for row in results[results["status"] == "ok"].itertuples()}
    tau = verdict.tau_of(results)
    return ReportData(results, baseline, summary, groups, per_job, tau, made_from,
                      verdict.findings(groups_of(summary), baseline) if baseline is not None else None,
                      verdict.parameters(results, baseline, tau, made_from), verdict.windows(results),
                      verdict.failed_rows(results), verdict.degraded_rows(summary))


# -- figures ------------------------------------------------------------------------------
def _figures(view, per_job, out, report_dir, several, replica="seed"):
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
    degraded = dict(zip(view.summary["policy"], view.summary["degraded"]))
    ok = view.runs[view.runs["status"] == "ok"]
    if ok.empty:
        return intervals, ["No successful run: no figures."]
    # One run per policy for the time-based figures: the smallest seed.
    shown = ok.sort_values("seed", na_position="first").groupby("policy", sort=False).head(1)
    prefixes = {row.policy: out / row.run_dir / "out" for row in shown.itertuples()}
    end = float(pd.to_numeric(shown["makespan"], errors="coerce").max() or 1.0)
    seed_note = "" if shown["seed"].isna().all() else f" ({replica} {shown['seed'].dropna().min()})"
    lines = []
    for policy, prefix in prefixes.items():
        path = figures_dir / f"gantt-{slug(policy)}.png"
        plots.allocation_and_throughput(prefix, path, f"{policy_label(policy, degraded.get(policy))} on "
                                                      f"{workload_platform}{seed_note}", end)
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
def _input_rows(results, replica="seed"):
    """The rows of the Inputs table: each platform, workload and scheduler with its file and SHA-256."""
    rows = set()
    for row in results.itertuples():
        rows.add(("platform", row.platform, row.platform_file, row.platform_sha256))
        rows.add(("workload", f"{row.workload}" + ("" if pd.isna(row.seed) else f" ({replica} {row.seed})"),
                  row.workload_file, row.workload_sha256))
    for scheduler, runs in results.groupby("scheduler", sort=False):
        sha = runs["scheduler_sha256"].iloc[0]
        rows.add(("scheduler", ", ".join(dict.fromkeys(runs["policy"])), scheduler,
                  sha if isinstance(sha, str) else "-"))
    return sorted(rows, key=lambda r: (r[0], str(r[1])))


def _group_lines(view: GroupView, baseline, intervals, figures, report_dir):
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


def opening_lines(data: ReportData):
    """The Markdown report's opening: the findings first, then every parameter that shaped them."""
    lines = []
    if data.findings is not None:
        lines += ["## Findings", "", f"Each policy against **{data.baseline}**, on the same replicas: the verdict of "
                  "its paired difference (95 % interval; see the paired differences below).", "",
                  markdown_table(*data.findings, align_right_from=1), ""]
    if data.degraded:
        lines += [f"**{DEGRADED}**: " + "; ".join(f"{policy} was run on inputs it does not fit ({why})"
                                                   for policy, why in data.degraded) + ".", ""]
    if data.failed:
        lines += [f"**{len(data.failed)} failed run{'s' if len(data.failed) != 1 else ''}**: see Failed runs.", ""]
    lines += ["## Parameters", "", markdown_table(["parameter", "value"], [
        [name, f"`{value}`" if name == "command" else value] for name, value in data.parameters]), ""]
    if data.windows is not None:
        lines += ["Windows (the replicas):", "", markdown_table(*data.windows), ""]
    return lines


def write_report(data, out, title="comparison", made_from=None):
    """Write OUT/report (see the module doc) from the ReportData of ``out``; return the path of report.md."""
    results, baseline, summary = data.results, data.baseline, data.summary
    report_dir = Path(out) / "report"
    shutil.rmtree(report_dir / "figures", ignore_errors=True)  # no figure of an earlier report survives
    report_dir.mkdir(parents=True, exist_ok=True)
    for name, table in (("summary.csv", summary), ("results.csv", results)):
        with written(report_dir / name):
            table.to_csv(report_dir / name, index=False)
    replica = "window" if data.windows is not None else "seed"
    figures = [_figures(view, data.per_job, Path(out), report_dir, len(data.groups) > 1, replica)
               for view in data.groups]
    made_from = made_from or data.made_from
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# batio {title}", "",
             f"Made by batio {__version__} on {now}" + (f" from `{made_from}`" if made_from else "") + ".",
             f"{len(results)} run{'s' if len(results) != 1 else ''}, "
             f"{int((results['status'] == 'ok').sum())} succeeded."
             + (f" Ratios (x) are to **{baseline}**." if baseline else ""), ""]
    lines += opening_lines(data)
    for view, (intervals, figure_lines) in zip(data.groups, figures):
        lines += _group_lines(view, baseline, intervals, figure_lines, report_dir)
    if data.degraded:
        lines += ["## Degraded: policies run on inputs they do not fit (--allow-unfit)", "",
                  markdown_table(["policy", "what the inputs lack"], data.degraded), ""]
    if data.failed:
        lines += ["## Failed runs", "", markdown_table(verdict.FAILED_HEADER, data.failed), ""]
    inputs = markdown_table(["input", "used by", "file", "SHA-256"], _input_rows(results, replica))
    lines += ["## Inputs", "", inputs, "",
              "## Definitions", "", definitions(data.tau),
              "## Files", "",
              "- `summary.csv`: the tables above, one row per group and policy, with `*_ratio` columns.",
              "- `results.csv`: one row per run: inputs, options, seed, metrics, status, error, input hashes.",
              "- `figures/`: the figures above.",
              f"- `{COMMAND_FILE}`: the command that made this report.",
              "- `report.html`: this report as an interactive page that opens offline (zoom, a tooltip per job).",
              "- `../runs/RUN_ID/`: each run's Batsim output files, `out_run.json` and `result.json`.", ""]
    path = report_dir / "report.md"
    write_text(path, "\n".join(lines))
    return path


def write_reports(results, out, baseline=None, title="comparison", made_from=None):
    """OUT/report (report.md, report.html and the rest) from ``results.gather``'s table; returns report.md's path."""
    data = report_data(results, out, baseline, made_from)
    path = write_report(data, out, title=title)
    write_text(path.parent / COMMAND_FILE, (made_from or "") + "\n")  # for the page `batio report` draws again
    html_report.write_folder_page(data, out, title=title)
    return path


def _made_from(folder):
    """The command a comparison or a sweep was made by, as write_reports kept it (None before it did)."""
    path = Path(folder) / "report" / COMMAND_FILE
    return path.read_text().strip() or None if path.is_file() else None


def write_page(folder, baseline=None):
    """The page of any output folder: a run (out_jobs.csv) or a comparison or sweep (results.csv)."""
    folder = Path(folder)
    if (folder / "results.csv").is_file():
        check_results(folder / "results.csv")  # a damaged table or run is one line, not a page drawn from it
        results = pd.read_csv(folder / "results.csv")
        if baseline is not None and baseline not in set(results["policy"]):
            raise InputError("--baseline", f"{baseline!r} is not a policy of {folder / 'results.csv'}")
        data = report_data(results, folder, baseline or results["policy"].iloc[0], _made_from(folder))
        return html_report.write_folder_page(data, folder, title=f"results of {folder.name}")
    if (folder / "out_jobs.csv").is_file() or (folder / "out_run.json").is_file():
        check_run(folder / "out")
        return html_report.write_run_page(folder)
    raise InputError(folder, "not a batio output folder: no out_jobs.csv (a run) and no results.csv "
                             "(a comparison or a sweep)")
