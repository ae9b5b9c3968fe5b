"""The papers' headlines with and without throughput loss under contention.

Each paper's experiment, on reduced grids, under its platform's fair sharing
(Batsim's), under the published loss curve of scripts/contention_platforms.py
(Xie et al. 2020 Fig. 9, steepness s = 1), and under steeper and gentler
versions of that loss (the sweep over s). The runs go through batio's sweep
machinery (resumable, one folder per paper; no report, whose Gantt charts
would cost more than the runs). Then the paper's own metrics are computed
from the runs' outputs: tables as markdown (OUT/PAPER/tables.md) and one
figure per paper (the headline against s) into scripts/results/.

    .venv/bin/python scripts/contention_experiments.py stria periodic catios equilibrio \
        [--workers 2] [--out out/contention]

What is reduced, against each paper's full experiment (see each results file):
stria: one workload seed (with the contention curves, volume placement no
longer sets throughput), three policies; periodic: alpha 0.2 / 0.5 / 0.8, one
workload per family and alpha; catios: io_x2, seed 1, oracle demand only;
equilibrio: 1,290 jobs, seed 1, alpha 0 and 0.5.
"""

import argparse
from dataclasses import dataclass
import json
from pathlib import Path
import sys
import time

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import contention_platforms as cp  # noqa: E402

from batio import sweep  # noqa: E402
from batio.errors import exits_on_error  # noqa: E402
from batio.inputs.contention import Curve  # noqa: E402
from batio.outfiles import markdown_table  # noqa: E402

RESULTS = ROOT / "scripts" / "results"
STRIA_HISTORY = ROOT / "scripts" / "sweeps" / "history-stria15_lustre.json"

# Steepness values per paper. Stria has 15 clients, where Xie's loss is still
# small (15 % at s = 1), so its sweep goes further.
STEEPNESS: dict[str, list[float]] = {
    "stria": [0, 1, 2, 3.5, 4.5, 5.5, 6], "stria_w2": [0, 1], "periodic": [0, 1, 2],
    "periodic_exclusive": [0, 1], "catios": [0, 1, 1.5, 2], "equilibrio": [0, 1, 2]}


def platform_file(out, base, steepness):
    """The platform at steepness s; s = 0 is the platform itself (no curve), except Stria's,
    where s = 0 is the Fig. 4 curve without loss."""
    if steepness == 0 and base != "stria15_lustre_fig4":
        return str(ROOT / "platforms" / f"{base}.xml")
    path = Path(out) / "platforms" / f"{base}_loss_s{steepness:g}.xml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cp.variant(base, steepness, f"{base}.xml, Xie et al. 2020 Fig. 9 loss x {steepness:g}"))
    return str(path)


def steepness_of(platform_label):
    return float(platform_label.rsplit("_loss_s", 1)[1]) if "_loss_s" in platform_label else 0.0


def run_grid(config, folder, workers):
    """Run a sweep config (a dict) into folder, without the report; the results table."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    grid = sweep.load_config(path)
    runs = sweep.plan(grid, folder.resolve())
    started = time.perf_counter()
    counts = sweep.run_all(runs, folder.resolve(), workers, progress=False)
    table = sweep.gather(runs, folder.resolve())
    print(f"{folder}: {counts['ran']} runs in {time.perf_counter() - started:.0f} s, {counts['skipped']} reused, "
          f"{counts['failed']} failed", file=sys.stderr)
    table["steepness"] = table["platform"].map(steepness_of)
    table["out"] = [str(folder / run_dir / "out") for run_dir in table["run_dir"]]
    return table


def _markdown(frame, digits=3):
    rows = [[f"{v:.{digits}f}" if isinstance(v, float) else v for v in row] for row in frame.itertuples(index=False)]
    return markdown_table(list(frame.columns), rows)


def _figure(path, xlabel, ylabel, lines, hlines=(), title="", clients=None):
    """Lines against s; with ``clients``, a top axis gives the loss at that many clients."""
    from matplotlib.figure import Figure
    figure = Figure(figsize=(6.4, 4.2))
    axis = figure.add_subplot()
    for label, (x, y) in lines.items():
        axis.plot(x, y, "o-", label=label)
    for value, label in hlines:
        axis.axhline(value, color="gray", linestyle="--", linewidth=0.8)
        axis.text(axis.get_xlim()[0], value, f" {label}", color="gray", fontsize=8, va="bottom")
    axis.set_xlabel(xlabel)
    if clients:
        per_s = 100 * (1 - cp.published_loss(clients))  # % lost per unit of s (below the 98 % floor)
        top = axis.secondary_xaxis("top", functions=(lambda s: s * per_s, lambda loss: loss / per_s))
        top.set_xlabel(f"throughput lost with {clients} clients (%)", fontsize=9)
    axis.set_ylabel(ylabel)
    axis.set_title(title, fontsize=10)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def loss_at(steepness, clients):
    return 1 - cp.scaled_loss(clients, steepness)


# -- paper 000: Stria ---------------------------------------------------------------------------
STRIA_POLICIES = [
    {"scheduler": "conservative", "label": "default"},
    {"scheduler": "io_aware", "label": "io_aware-15",
     "options": {"limit": 15, "estimator": "pretrained", "history": str(STRIA_HISTORY)}},
    {"scheduler": "adaptive", "label": "adaptive-20",
     "options": {"limit": 20, "estimator": "pretrained", "history": str(STRIA_HISTORY)}},
]
STRIA_PAPER = {("workload1", "io_aware-15"): 20, ("workload1", "adaptive-20"): 26,
               ("workload2", "io_aware-15"): 7, ("workload2", "adaptive-20"): 12}


def stria(out, workers):
    tables = []
    for workloads, key in (([1], "stria"), ([2], "stria_w2")):
        config = {"platforms": [platform_file(out, "stria15_lustre_fig4", s) for s in STEEPNESS[key]],
                  "workloads": [{"generator": "batio.workloads.stria:stria_workload", "args": {"number": n},
                                 "name": f"workload{n}"} for n in workloads],
                  "seeds": [1], "schedulers": STRIA_POLICIES, "baseline": "default", "io_slowdown": False}
        tables.append(run_grid(config, Path(out) / key, workers))
    runs = pd.concat(tables, ignore_index=True)
    runs = runs[runs["status"] == "ok"]
    makespan = runs.pivot_table(index=["workload", "steepness"], columns="policy", values="makespan")
    rows = []
    for (workload, s), row in makespan.iterrows():
        curve = cp.STRIA_FIG4
        at15 = Curve(curve)(15) * cp.scaled_loss(15, s)
        peak = max(Curve(curve)(k) * cp.scaled_loss(k, s) for k in range(1, 16))
        entry = {"workload": workload, "s": s, "loss at 15 jobs %": round(100 * loss_at(s, 15), 1),
                 "GiB/s with 15 writers": round(at15, 2), "peak GiB/s (jobs)": f"{peak:.2f} "
                 f"({max(range(1, 16), key=lambda k: Curve(curve)(k) * cp.scaled_loss(k, s))})",
                 "default makespan s": round(row["default"])}
        for policy in ("io_aware-15", "adaptive-20"):
            entry[f"{policy} gain %"] = round(100 * (1 - row[policy] / row["default"]), 1)
            entry[f"paper {policy} %"] = STRIA_PAPER[(workload, policy)]
        rows.append(entry)
    table = pd.DataFrame(rows)
    w1 = table[table["workload"] == "workload1"]
    _figure(RESULTS / "stria" / "contention_sweep.png", "steepness s of the loss (x Xie et al. 2020 Fig. 9)",
            "makespan gain over default backfill (%)",
            {"adaptive-20, Workload 1": (w1["s"], w1["adaptive-20 gain %"]),
             "I/O-aware 15, Workload 1": (w1["s"], w1["io_aware-15 gain %"])},
            [(26, "paper: adaptive 26 %"), (20, "paper: I/O-aware 15, 20 %")],
            "Paper 000, Workload 1 (Fig. 4 curve x loss); s = 1: published loss", clients=15)
    return table, runs


# -- paper 001: periodic ------------------------------------------------------------------------
PERIODIC_STRATEGIES = [{"scheduler": "iolist", "label": "LS"},
                       {"scheduler": "iopack", "label": "Random", "options": {"packs": "Random", "seed": 0}},
                       {"scheduler": "iopack", "label": "Max", "options": {"packs": "Max", "seed": 0}},
                       {"scheduler": "iopack", "label": "Char", "options": {"packs": "Char", "seed": 0}}]
PERIODIC_ALPHAS = [0.2, 0.5, 0.8]


def periodic(out, workers):
    from batio.schedulers.list_vs_pack import metrics as pm
    tables = []
    for exclusive, key in ((False, "periodic"), (True, "periodic_exclusive")):
        config = {"platforms": [platform_file(out, "periodic_rack", s) for s in STEEPNESS[key]],
                  "workloads": [{"generator": "batio.workloads.periodic:sweep_workload",
                                 "args": {"family": family, "alpha": alpha, "jobs": 60},
                                 "name": f"{family}_a{alpha}"}
                                for family in ("M-BN", "M-No", "U-BN", "U-No") for alpha in PERIODIC_ALPHAS],
                  "seeds": [0], "schedulers": PERIODIC_STRATEGIES, "baseline": "LS", "io_slowdown": False,
                  "run_options": {"io_exclusive": exclusive, "io_sample_period": 30}}
        table = run_grid(config, Path(out) / key, workers)
        table["model"] = ("exclusive" if exclusive else "fair")
        tables.append(table)
    runs = pd.concat(tables, ignore_index=True)
    runs = runs[runs["status"] == "ok"].copy()
    rows = []
    for run in runs.itertuples():
        workload = json.loads(Path(run.out).parent.parent.parent.joinpath("workloads", Path(run.workload_file).name)
                              .read_text())
        summary = pm.summarize(run.out, workload, 96)
        rows.append({"model": run.model, "s": run.steepness, "strategy": run.policy,
                     "family": workload["experiment"]["family"], "alpha": workload["experiment"]["alpha"],
                     **{k: summary[k] for k in ("utilisation", "steady_utilisation", "mean_stretch", "max_stretch",
                                                "makespan_over_bound")}})
    metrics = pd.DataFrame(rows)
    means = metrics.groupby(["model", "s", "alpha", "strategy"])[
        ["utilisation", "steady_utilisation", "mean_stretch", "max_stretch"]].mean().reset_index()
    fair = means[means["model"] == "fair"]
    lines = {}
    for strategy in ("LS", "Random", "Max", "Char"):
        at = fair[(fair["strategy"] == strategy) & (fair["alpha"] == 0.8)]
        lines[f"{strategy}, alpha 0.8"] = (at["s"], at["mean_stretch"])
    _figure(RESULTS / "periodic" / "contention_sweep.png", "steepness s of the loss (x Xie et al. 2020 Fig. 9)",
            "mean stretch (fair sharing, alpha 0.8)", lines, (),
            "Paper 001: list vs pack as the I/O node loses throughput", clients=96)
    return means, runs


# -- paper 002: CATIOS --------------------------------------------------------------------------
CATIOS_POLICIES = [{"scheduler": "easy", "label": "FCFS-BF"},
                   {"scheduler": "tioas-oracle", "label": "TIOAS-oracle"},
                   {"scheduler": "catios-oracle", "label": "CATIOS-FCFS-oracle"}]


def catios(out, workers):
    config = {"platforms": [platform_file(out, "catios_cluster", s) for s in STEEPNESS["catios"]],
              "workloads": [{"generator": "batio.workloads.catios:catios_workload", "args": {"io_scale": 2},
                             "name": "io_x2"}],
              "seeds": [1], "schedulers": CATIOS_POLICIES, "baseline": "FCFS-BF", "io_slowdown": False}
    runs = run_grid(config, Path(out) / "catios", workers)
    runs = runs[runs["status"] == "ok"].copy()
    base = runs[runs["policy"] == "FCFS-BF"].set_index("steepness")
    rows = []
    for run in runs.itertuples():
        rows.append({"s": run.steepness, "loss at 128 nodes %": round(100 * loss_at(run.steepness, 128), 1),
                     "policy": run.policy, "makespan h": round(run.makespan / 3600, 2),
                     "makespan / FCFS-BF": run.makespan / base.loc[run.steepness, "makespan"],
                     "mean wait / FCFS-BF": run.mean_wait / base.loc[run.steepness, "mean_wait"],
                     "utilisation": run.utilisation, "killed": int(run.jobs - run.succeeded)})
    table = pd.DataFrame(rows).sort_values(["s", "policy"])
    lines = {policy: (group["s"], group["makespan / FCFS-BF"]) for policy, group in table.groupby("policy")
             if policy != "FCFS-BF"}
    _figure(RESULTS / "catios" / "contention_sweep.png", "steepness s of the loss (x Xie et al. 2020 Fig. 9)",
            "makespan / FCFS-BF's (io_x2, seed 1)", lines, [(1.0, "FCFS-BF")],
            "Paper 002: does avoiding contention pay when contention loses throughput?", clients=128)
    return table, runs


# -- paper 003: EquilibrIO ----------------------------------------------------------------------
@dataclass(frozen=True)
class DegradingAlone:
    """What a job of n nodes gets alone on theta_quarter at steepness s: its n clients
    meet the curve, B x r_s(n)."""
    steepness: float

    def model(self, nodes):
        from batio.schedulers.equilibrio.metrics import THETA_QUARTER as T
        from batio.schedulers.equilibrio.metrics import AloneModel
        r = cp.scaled_loss(nodes, self.steepness)
        return AloneModel(T.node_speed, T.node_bw, T.read_bw * r, T.write_bw * r)

    def phase_times(self, profile, profiles, nodes):
        return self.model(nodes).phase_times(profile, profiles, nodes)


def equilibrio(out, workers):
    from batio.schedulers.equilibrio import metrics as em
    config = {"platforms": [platform_file(out, "theta_quarter", s) for s in STEEPNESS["equilibrio"]],
              "workloads": [{"generator": "batio.workloads.equilibrio:equilibrio_workload",
                             "args": {"nb_jobs": 1290}, "name": "equilibrio1290"}],
              "seeds": [1], "schedulers": [{"scheduler": "equilibrio", "grid": {"alpha": [0.0, 0.5]}}],
              "io_slowdown": False, "run_options": {"io_sample_period": 60}}
    runs = run_grid(config, Path(out) / "equilibrio", workers)
    runs = runs[runs["status"] == "ok"].copy()
    rows = []
    for run in runs.itertuples():
        workload = Path(out) / "equilibrio" / "workloads" / Path(run.workload_file).name
        alone = DegradingAlone(run.steepness)
        jobs = em.job_metrics(run.out, workload, alone)
        fair_jobs = em.job_metrics(run.out, workload)
        high = jobs[jobs["io_class"] == "high"]
        timeline = em.intensity_timeline(run.out, workload, alone)
        rows.append({"s": run.steepness, "loss from 128 nodes %": round(100 * loss_at(run.steepness, 128), 1),
                     "alpha": json.loads(run.options)["alpha"],
                     "median I/O slowdown % high (alone here)": high["io_slowdown"].median(),
                     "median I/O slowdown % high (alone, fair)": fair_jobs.loc[high.index, "io_slowdown"].median(),
                     "mean I/O slowdown % all (alone here)": jobs["io_slowdown"].mean(),
                     "mean distance": em.mean_distance(timeline),
                     "mean wait h": jobs["waiting_time"].mean() / 3600,
                     "makespan h": jobs["finish_time"].max() / 3600,
                     "killed": int((jobs["final_state"] != "COMPLETED_SUCCESSFULLY").sum())})
    table = pd.DataFrame(rows).sort_values(["s", "alpha"])
    lines = {f"alpha {alpha}": (group["s"], group["median I/O slowdown % high (alone here)"])
             for alpha, group in table.groupby("alpha")}
    _figure(RESULTS / "equilibrio_contention_sweep.png", "steepness s of the loss (x Xie et al. 2020 Fig. 9)",
            "median I/O slowdown of high-intensity jobs (%)", lines,
            [(64, "poster, alpha 0"), (3.6, "poster, alpha 0.5")],
            "Paper 003: EquilibrIO as the PFS loses throughput", clients=128)
    return table, runs


PAPERS = {"stria": stria, "periodic": periodic, "catios": catios, "equilibrio": equilibrio}


@exits_on_error
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("papers", nargs="+", choices=list(PAPERS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "out" / "contention"))
    args = parser.parse_args()
    for name in args.papers:
        started = time.perf_counter()
        table, runs = PAPERS[name](args.out, args.workers)
        text = _markdown(table)
        path = Path(args.out) / name / "tables.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        table.to_csv(Path(args.out) / name / "table.csv", index=False)
        print(f"## {name} ({len(runs)} runs, {time.perf_counter() - started:.0f} s)\n\n{text}\n")


if __name__ == "__main__":
    main()
