"""Seed 002 (CATIOS): the poster's comparison from the outputs of
``batio sweep scripts/sweeps/catios.yaml``. Simulates nothing.

    .venv/bin/python scripts/catios_experiments.py --from-sweep out/sweeps/catios [--results DIR]

For every workload of the sweep (an I/O intensity level) it writes

* ``calibration``: how I/O-bound each generated workload is, from its file:
  bytes moved, the share of the jobs' node-seconds spent transferring when
  each job runs alone (a job alone moves at R = min(nodes x node link, B)),
  and rho, the mean demand over B if the machine ran the work back to back
  (bytes / (B x node-seconds / nodes of the machine));
* per policy, makespan and mean wait divided by FCFS-BF's on the same
  workload and seed: the mean over seeds with min-max; utilisation and the
  mean I/O slowdown (execution time over time alone) and the jobs killed at
  their walltime (slowed down past it: their work is lost, and their early
  end shortens the makespan) beside them;
* the poster's trade-off ratio, wait increase over makespan reduction
  (W/W_FCFS - 1) / (1 - M/M_FCFS), from the mean ratios; "n/a" where the
  makespan is reduced by less than 1 % (the seeds' spread; a ratio over a
  near-zero reduction means nothing); the poster reports about 1.3;

as Markdown tables on stdout, ``summary.csv`` (one row per workload x
policy), ``runs.csv`` (one row per run) and ``catios_normalised.png`` (the
poster's two bar charts, one group of bars per intensity) in ``--results``.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
import sys

import numpy as np
import pandas as pd

from batio.errors import exits_on_error
from batio.outfiles import markdown_table
from batio.schedulers.catios.iodemand import alone_rate, decode
from batio.sweep import RESULTS_FILE, read_results
from batio.workloads.catios import NB_NODES, NODE_BW, STORAGE_BW

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "FCFS-BF"
# The poster's methods in its order; "-oracle" is the same policy on the true demand.
POLICIES = ["LJF-BF", "TIOAS", "CATIOS-FCFS", "CATIOS-LJF", "CATIOS-Mix"]
ORACLE = "-oracle"
# Below this makespan reduction the trade-off ratio is not given: the
# seeds' min-max of policies that do not differ from FCFS-BF spans about 1 %.
SMALLEST_REDUCTION = 0.01


def calibration(workload: dict) -> dict:
    """How I/O-bound a CATIOS workload is (see the module docstring)."""
    moved = node_seconds = transferring = 0.0
    for job in workload["jobs"]:
        D, nodes = decode(job["io_demand"]), job["res"]
        moved += D.sum()
        node_seconds += nodes * D.size
        transferring += nodes * D.sum() / alone_rate(nodes, NODE_BW, STORAGE_BW)
    return {"bytes_TB": moved / 1e12, "io_share_alone": transferring / node_seconds,
            "rho": moved / (STORAGE_BW * node_seconds / NB_NODES)}


def from_sweep(folders) -> pd.DataFrame:
    """One row per successful run, with its workload's calibration and its
    makespan and mean wait over FCFS-BF's on the same workload instance."""
    frames = []
    for folder in map(Path, folders):
        runs, _ = read_results(folder, "scripts/sweeps/catios.yaml")
        unknown = set(runs["policy"]) - {BASELINE, *POLICIES, *(p + ORACLE for p in POLICIES)}
        if unknown:
            raise SystemExit(f"{folder / RESULTS_FILE}: policies {sorted(unknown)} are none of this script's: "
                             "label them as scripts/sweeps/catios.yaml does")
        measured = {name: calibration(json.loads((folder / "workloads" / Path(name).name).read_text()))
                    for name in runs["workload_file"].unique()}
        runs = runs.join(pd.DataFrame([measured[name] for name in runs["workload_file"]], index=runs.index))
        frames.append(runs)
    runs = pd.concat(frames, ignore_index=True)
    instance = ["workload", "seed"]
    if runs.duplicated(instance + ["policy"]).any():
        raise SystemExit("a policy ran twice on one workload instance: give each sweep its own workloads")
    baseline = runs[runs["policy"] == BASELINE].set_index(instance)[["makespan", "mean_wait"]]
    missing = set(map(tuple, runs[instance].values)) - set(baseline.index)
    if missing:
        raise SystemExit(f"no successful {BASELINE} run for workload instances {sorted(missing)}")
    base = baseline.reindex(pd.MultiIndex.from_frame(runs[instance]))
    runs["makespan_ratio"] = runs["makespan"].values / base["makespan"].values
    runs["wait_ratio"] = runs["mean_wait"].values / base["mean_wait"].values
    return runs


def trade_off(makespan_ratio: float, wait_ratio: float) -> float:
    """Wait increase per unit of makespan reduction; NaN when the makespan is
    reduced by less than SMALLEST_REDUCTION."""
    reduction = 1 - makespan_ratio
    return (wait_ratio - 1) / reduction if reduction >= SMALLEST_REDUCTION else float("nan")


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (workload, policy), group in runs.groupby(["workload", "policy"]):
        row = {"workload": workload, "policy": policy, "seeds": len(group),
               "rho": group["rho"].mean(), "io_share_alone": group["io_share_alone"].mean(),
               "bytes_TB": group["bytes_TB"].mean()}
        for metric in ("makespan_ratio", "wait_ratio"):
            row.update({metric: group[metric].mean(), f"{metric}_min": group[metric].min(),
                        f"{metric}_max": group[metric].max()})
        row.update({"killed": (group["jobs"] - group["succeeded"]).mean(),
                    "utilisation": group["utilisation"].mean(),
                    "mean_io_slowdown": group["mean_io_slowdown"].mean(),
                    "trade_off": trade_off(row["makespan_ratio"], row["wait_ratio"])})
        rows.append(row)
    order = {policy: rank for rank, policy in enumerate(policy_order(runs))}
    summary = pd.DataFrame(rows)
    return summary.sort_values(["rho", "policy"], key=lambda column: column.map(order)
                               if column.name == "policy" else column).reset_index(drop=True)


def policy_order(runs) -> list[str]:
    present = set(runs["policy"])
    return [p for p in [BASELINE] + [q for p in POLICIES for q in (p, p + ORACLE)] if p in present]


TABLE_COLUMNS = ["policy", "makespan / FCFS-BF", "mean wait / FCFS-BF", "wait incr. : makespan red.", "utilisation",
                 "mean I/O slowdown", "jobs killed"]


def markdown(summary: pd.DataFrame) -> str:
    lines = []
    for workload, group in summary.groupby("workload", sort=False):
        first = group.iloc[0]
        rows = [[row.policy,
                 f"{row.makespan_ratio:.3f} ({row.makespan_ratio_min:.3f}-{row.makespan_ratio_max:.3f})",
                 f"{row.wait_ratio:.2f} ({row.wait_ratio_min:.2f}-{row.wait_ratio_max:.2f})",
                 "n/a" if np.isnan(row.trade_off) else f"1 : {row.trade_off:.2f}",
                 f"{row.utilisation:.3f}", f"{row.mean_io_slowdown:.3f}", f"{row.killed:.1f}"]
                for row in group.itertuples()]
        lines += [f"\n### {workload}: {first['bytes_TB']:.0f} TB moved, I/O share alone "
                  f"{first['io_share_alone']:.3f}, rho {first['rho']:.2f} (means over {first['seeds']} seeds)\n",
                  markdown_table(TABLE_COLUMNS, rows)]
    return "\n".join(lines) + "\n"


def plot(summary: pd.DataFrame, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(summary["workload"]))
    policies = [p for p in dict.fromkeys(summary["policy"]) if p != BASELINE]
    width = 0.8 / len(policies)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    colours = plt.get_cmap("tab10")
    for axis, metric, title in ((axes[0], "makespan_ratio", "Makespan / FCFS-BF"),
                                (axes[1], "wait_ratio", "Average wait time / FCFS-BF")):
        for rank, policy in enumerate(policies):
            rows = summary[summary["policy"] == policy].set_index("workload").reindex(workloads)
            x = np.arange(len(workloads)) + (rank - (len(policies) - 1) / 2) * width
            mean = rows[metric].to_numpy()
            errors = [mean - rows[f"{metric}_min"].to_numpy(), rows[f"{metric}_max"].to_numpy() - mean]
            base = policy.removesuffix(ORACLE)
            axis.bar(x, mean, width, yerr=errors, capsize=2, label=policy,
                     color=colours(POLICIES.index(base)), hatch="//" if policy.endswith(ORACLE) else None,
                     edgecolor="white" if policy.endswith(ORACLE) else None)
        axis.axhline(1, color="black", linewidth=0.8)
        rho = summary.groupby("workload", sort=False)["rho"].first()
        axis.set_xticks(np.arange(len(workloads)), [f"{w}\nrho {rho[w]:.2f}" for w in workloads])
        axis.set_title(title + " (mean, min-max over seeds)")
    axes[1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


@exits_on_error
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-sweep", nargs="+", metavar="DIR", required=True,
                        help="output folders of `batio sweep scripts/sweeps/catios.yaml`")
    parser.add_argument("--results", default=str(ROOT / "scripts" / "results" / "catios"),
                        help="folder of summary.csv, runs.csv and the figure")
    args = parser.parse_args(argv)
    runs = from_sweep(args.from_sweep)
    summary = summarise(runs)
    folder = Path(args.results)
    folder.mkdir(parents=True, exist_ok=True)
    columns = ["workload", "seed", "policy", "rho", "io_share_alone", "bytes_TB", "jobs", "succeeded",
               "makespan", "mean_wait",
               "makespan_ratio", "wait_ratio", "utilisation", "mean_io_slowdown", "max_io_slowdown",
               "wall_time_s"]
    runs[columns].sort_values(["rho", "seed", "policy"]).to_csv(folder / "runs.csv", index=False, float_format="%.6g")
    summary.to_csv(folder / "summary.csv", index=False, float_format="%.6g")
    figure = plot(summary, folder / "catios_normalised.png")
    print(markdown(summary))
    print(f"{len(runs)} runs; wrote {folder / 'runs.csv'}, {folder / 'summary.csv'}, {figure}", file=sys.stderr)


if __name__ == "__main__":
    main()
