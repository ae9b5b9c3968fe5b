"""Paper 004's evaluation (Section 5) from a `batio sweep` of the ten variants.

    batio sweep scripts/sweeps/locality_day.yaml --workers 2
    python scripts/locality_experiments.py out/sweeps/locality_day --out scripts/results/locality

Writes, in --out: ``summary.csv`` (per variant: mean stretch, total load wait,
jobs that re-used a file, maximum queue time, all over the evaluated jobs,
and the mean-stretch improvement over FCFS, or over FCFS-BF for the -BF
variants, as the paper's Figures 13 and 16 measure it: stretch(FCFS) /
stretch(variant), above 1 is better; and each run's wall time and peak
memory), ``summary.md`` (the same as a table),
the cluster-usage figure of each variant (Figures 3-4, 7-8, 10) and the
per-job stretch ratio of each variant against its baseline (Figures 5, 11).
"""
import argparse
import json
from pathlib import Path
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from batio.errors import exits_on_error  # noqa: E402
from batio.inputs.platform import read_properties  # noqa: E402
from batio.outfiles import markdown_table  # noqa: E402
from batio.schedulers.locality import metrics as lm  # noqa: E402
from batio.sweep import read_results  # noqa: E402

BASELINES = {False: "fcfs", True: "fcfs-bf"}


def link_bandwidth(platform_file):
    properties, _ = read_properties(platform_file)
    rates = {float(p["link_bandwidth"]) for p in properties.values() if "link_bandwidth" in p}
    if len(rates) != 1:
        sys.exit(f"{platform_file}: expected one link_bandwidth host property, found {sorted(rates)}")
    return rates.pop()


def load_runs(sweep_dir):
    # A partial sweep is usable: each run's own row (result.json).
    ok, _ = read_results(sweep_dir, "scripts/sweeps/locality_day.yaml", partial=True)
    tables, costs = {}, {}
    for row in ok.itertuples():
        prefix = Path(sweep_dir) / row.run_dir / "out"
        tables[row.policy] = lm.job_table(prefix, row.workload_file, link_bandwidth(row.platform_file))
        record = json.loads(Path(f"{prefix}_run.json").read_text())
        costs[row.policy] = {"wall_time_s": row.wall_time_s, "peak_rss_mb": record.get("peak_rss_mb")}
    return tables, costs


def _cell(value):
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def is_backfilling(policy):
    return policy.endswith("-bf")


def summarize(tables, costs):
    rows = []
    for policy, table in tables.items():
        row = {"policy": policy, **lm.summary(table), **costs[policy]}
        baseline = BASELINES[is_backfilling(policy)]
        if baseline in tables:
            row["improvement"] = lm.summary(tables[baseline])["mean_stretch"] / row["mean_stretch"]
            row["baseline"] = baseline
        rows.append(row)
    return pd.DataFrame(rows).set_index("policy")


def usage_figure(policy, table, path):
    start, end = lm.evaluated_window(table)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for category, style in ((None, "tab:blue"), (lm.EVALUATED, "tab:red")):
        usage = lm.cluster_usage(table, category)
        label = "all jobs" if category is None else "evaluated jobs"
        ax.step(usage["time"] / 3600, usage["running"], where="post", color=style, label=f"cores running, {label}")
        ax.step(usage["time"] / 3600, -usage["queued"], where="post", color=style, linestyle=":",
                label=f"cores queued (below 0), {label}")
    loading = lm.cluster_usage(table)
    ax.step(loading["time"] / 3600, loading["loading"], where="post", color="tab:gray", label="cores loading a file")
    for edge in (start, end):
        ax.axvline(edge / 3600, color="tab:orange", linestyle="--")
    ax.axhline(0, color="black", linewidth=0.5)
    # Around the evaluated window, as the paper's figures: the tail of 10-day jobs would squash it.
    margin = max(2 * 3600, end - start)
    ax.set_xlim((start - margin) / 3600, (end + margin) / 3600)
    ax.set_xlabel("simulated time (h)")
    ax.set_ylabel("cores")
    ax.set_title(f"Cluster usage, {policy}")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def ratio_figure(policy, baseline, ratios, path):
    fig, ax = plt.subplots(figsize=(8, 4))
    sizes = 2 + 60 * ratios["duration"] / ratios["duration"].max()
    ax.scatter(ratios["subtime"] / 3600, ratios["ratio"], s=sizes, alpha=0.4)
    ax.axhline(1, color="black", linestyle=":")
    ax.set_yscale("log")
    ax.set_xlabel("submission time (h)")
    ax.set_ylabel(f"stretch {baseline} / stretch {policy}")
    ax.set_title(f"Per-job stretch ratio ({policy} vs {baseline}; circle size ~ duration)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@exits_on_error
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", help="the sweep's output folder (results.csv, runs/)")
    parser.add_argument("--out", required=True, help="where the tables and figures go")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tables, costs = load_runs(args.sweep)
    if not tables:
        sys.exit(f"{args.sweep}: no successful run")
    summary = summarize(tables, costs)
    summary.to_csv(out / "summary.csv")
    rows = [[policy] + [_cell(value) for value in row] for policy, row in zip(summary.index, summary.values)]
    (out / "summary.md").write_text(markdown_table(["policy", *summary.columns], rows, align_right_from=1) + "\n")
    print(summary.to_string(float_format=lambda value: f"{value:.3f}"))
    for policy, table in tables.items():
        usage_figure(policy, table, out / f"usage_{policy}.png")
        baseline = BASELINES[is_backfilling(policy)]
        if baseline in tables and baseline != policy:
            ratios = lm.stretch_ratio(tables[baseline], table)
            ratio_figure(policy, baseline, ratios, out / f"stretch_ratio_{policy}.png")
            ratios["ratio"].describe().to_frame().T.to_csv(out / f"stretch_ratio_{policy}.csv")


if __name__ == "__main__":
    main()
