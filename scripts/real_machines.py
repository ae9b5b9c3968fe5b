"""Theta's recorded weeks held against batio (issue 43): validation, headroom, what-if.

For each Theta week of the joined job + I/O records (``jobs.csv`` and
``darshan_runs.csv`` of ../shared/data/theta2022, or ``--data``):

1. import it (``batio import jobsio --nodes 4392 --runs ...``);
2. fit the per-client bandwidth of ``platforms/theta.xml`` on the training
   week alone (``--train``): the value minimising the median absolute % error
   of the jobs' transfer times alone, bytes / min(nodes x b, file system);
3. validate every week with I/O times on ``platforms/theta.xml`` (``batio
   validate``, baseline bandwidth from the training week);
4. the headroom of each week (``batio.validate.headroom``);
5. the what-if: every catalog policy that fits the input on each week, and
   EquilibrIO at alpha = 0 (the poster's FCFS baseline), each week's
   validation error beside it; on the full machine, and for the weeks whose
   jobs hold at least ``--scaled-from`` of Theta's node-hours, on a Theta of
   that share of its nodes (the records hold only jobs with Darshan logs,
   which alone rarely queue on the full machine).

Writes ``results/real_machines/{fit,validation,headroom,whatif}.csv`` beside
this script (``--results`` elsewhere); runs, and the per-job validation
pairs (``validate/validation_jobs.csv``: job records, not committed), go to
``--out``, and a rerun resumes them.

    .venv/bin/python scripts/real_machines.py [--weeks theta_2022-01-15,...] [--no-whatif]
"""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
import time

import numpy as np
import pandas as pd

from batio.accuracy import error_stats
from batio.compare import compare, comparison_grid
from batio.errors import InputError, exits_on_error
from batio.importers import dumps, import_trace
from batio.metrics import read_jobs
from batio.validate import PLATFORM, headroom, measured_jobs, validate

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".." / "shared" / "data" / "theta2022"
THETA = ROOT / "platforms" / "theta.xml"
NODES = 4392
# theta-fs0's published read and write bandwidths (platforms/theta.md), bytes/s.
READ_BW, WRITE_BW = 240e9, 172e9
TRAIN = "theta_2022-01-15"
# The I/O-aware policies' own knowledge of the machine (Batsim does not tell link bandwidths):
# R_limit (GiB/s) and the I/O node's bandwidth (bytes/s) are the file system's write bandwidth.
POLICY_OPTIONS = {"io_aware": {"limit": WRITE_BW / 2 ** 30}, "adaptive": {"limit": WRITE_BW / 2 ** 30},
                  "iolist": {"bandwidth": WRITE_BW}, "iopack": {"bandwidth": WRITE_BW}}
BASELINES = ("fcfs", "easy", "conservative")
IO_POLICIES = ("io_aware", "adaptive", "iolist", "iopack", "equilibrio")
log = logging.getLogger("real_machines")


def import_weeks(data, weeks, out):
    paths = {}
    for week in weeks:
        workload = import_trace("jobsio", data / "jobs.csv", week=week, nodes=NODES, runs=data / "darshan_runs.csv")
        paths[week] = out / f"{week}.json"
        paths[week].write_text(dumps(workload))
    return paths


def alone_transfer(jobs, bandwidth):
    """Seconds the jobs' transfers take alone on theta.xml with a client bandwidth (B/s)."""
    return (jobs["read_bytes"] / np.minimum(jobs["res"] * bandwidth, READ_BW)
            + jobs["written_bytes"] / np.minimum(jobs["res"] * bandwidth, WRITE_BW))


def fit_client_bandwidth(workload_path):
    """(bandwidth B/s, median % error in sample) minimising the median % error, on a log grid."""
    workload = json.loads(Path(workload_path).read_text())
    jobs = measured_jobs(workload)
    fields = pd.DataFrame(workload["jobs"])[["read_bytes", "written_bytes"]]
    jobs = pd.concat([jobs, fields], axis=1)
    jobs = jobs[(jobs["bytes"] > 0) & (jobs["measured"] > 0)]
    grid = np.logspace(5, 11, 601)
    errors = [error_stats(alone_transfer(jobs, b), jobs["measured"])["median_ape"] for b in grid]
    best = int(np.argmin(errors))
    return float(grid[best]), float(errors[best])


def io_times_known(path):
    return all("measured_transfer_s" in job for job in json.loads(Path(path).read_text())["jobs"])


def scaled_platform(nodes, out):
    """theta.xml with ``nodes`` compute hosts, everything else unchanged."""
    path = out / f"theta_{nodes}.xml"
    path.write_text(THETA.read_text().replace('radical="0-4391"', f'radical="0-{nodes - 1}"'))
    return path


def io_slowdowns(prefix, reference_prefix, delays):
    """Paper 003's I/O slowdown of each job with I/O, in %: its transfer time in the run (execution
    minus delay) over that alone (the reference run), minus 1; jobs completed in both only."""
    run, alone = read_jobs(prefix), read_jobs(reference_prefix)
    done = [frame[frame["final_state"] == "COMPLETED_SUCCESSFULLY"].set_index("job_id")["execution_time"]
            for frame in (run, alone)]
    both = pd.concat(done + [delays], axis=1, keys=["run", "alone", "delay"], join="inner")
    transfer_alone = both["alone"] - both["delay"]
    keep = transfer_alone > 1e-6  # jobs that move bytes (a phase of under a microsecond is rounding)
    return ((both["run"] - both["delay"])[keep] / transfer_alone[keep] - 1) * 100


def what_if(week, path, out, validation, platform=THETA, machine="full"):
    """One row per policy run on the week: its metrics, and the week's validation error."""
    delays = measured_jobs(json.loads(Path(path).read_text())).set_index("job_id")["delay"]
    names = list(BASELINES) + [name for name in IO_POLICIES if name != "equilibrio" or io_times_known(path)]
    rows = []
    for label, names_run, options in ((None, names, POLICY_OPTIONS), ("equilibrio alpha=0", ["equilibrio"],
                                                                       {"equilibrio": {"alpha": 0.0}})):
        if label and "equilibrio" not in names:
            continue
        folder = out / week / machine.replace(" ", "_") / ("alpha0" if label else "policies")
        pairs = [f"{name}={json.dumps(value)}" for name, value in options.items() if name in names_run]
        grid = comparison_grid(str(platform), str(path), names_run, pairs, baseline=names_run[0],
                               run_options={"max_idle": 10 * 86400.0})
        table, _, _ = compare(grid, folder, progress=False)
        for row in table.to_dict("records"):
            median_io = np.nan
            if row["status"] == "ok" and row.get("reference_run"):
                reference = folder / "runs" / row["reference_run"] / "out"
                slowdowns = io_slowdowns(folder / row["run_dir"] / "out", reference, delays)
                median_io = float(slowdowns.median()) if len(slowdowns) else np.nan
            rows.append({"week": week, "machine": machine, "jobs": row.get("jobs"),
                         "policy": label or row["policy"], "status": row["status"],
                         "mean_wait_h": row.get("mean_wait", np.nan) / 3600,
                         "mean_slowdown": row.get("mean_slowdown"), "makespan_h": row.get("makespan", np.nan) / 3600,
                         "utilisation": row.get("utilisation"), "median_io_slowdown_pct": median_io,
                         "validation_median_ape": validation})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with jobs.csv and darshan_runs.csv")
    parser.add_argument("--weeks", default="theta_2022-01-15,theta_2022-01-22,theta_2022-01-29,theta_2022-09-17,"
                                           "theta_2022-10-01")
    parser.add_argument("--train", default=TRAIN, help="the week the client bandwidth and the baseline come from")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "real_machines")
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results" / "real_machines")
    parser.add_argument("--no-whatif", action="store_true", help="stop after the validation and the headroom")
    parser.add_argument("--scaled-from", type=float, default=0.5, metavar="SHARE",
                        help="also run the what-if of the weeks whose jobs hold at least this share of Theta's "
                             "node-hours on a Theta of that share of its nodes (default 0.5)")
    args = parser.parse_args()
    logging.basicConfig(format="real_machines: %(message)s", level=logging.INFO)
    if not (args.data / "jobs.csv").is_file():
        raise InputError(args.data, "no jobs.csv here (the Theta 2022 records: give --data)")
    weeks = args.weeks.split(",")
    for folder in (args.out / "weeks", args.results):
        folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    paths = import_weeks(args.data, sorted(set(weeks) | {args.train}), args.out / "weeks")
    bandwidth, fit_error = fit_client_bandwidth(paths[args.train])
    pd.DataFrame([{"train": args.train, "client_bandwidth_Bps": bandwidth, "median_ape_in_sample": fit_error}]).to_csv(
        args.results / "fit.csv", index=False)
    log.info("client bandwidth fitted on %s: %.4g B/s (in-sample median error %.1f %%); theta.xml says 240MBps",
             args.train, bandwidth, fit_error)
    validated = [paths[week] for week in weeks if io_times_known(paths[week])]
    table, _ = validate(THETA, validated, args.out / "validate", train=paths[args.train])
    table.to_csv(args.results / "validation.csv", index=False)
    log.info("validation done at %.0f s", time.perf_counter() - started)
    errors = table[table["predictor"] == PLATFORM].set_index("group")["median_ape"]
    bounds = {week: headroom(json.loads(paths[week].read_text()), NODES) for week in weeks}
    pd.DataFrame([{"week": week, **bound} for week, bound in bounds.items()]).to_csv(
        args.results / "headroom.csv", index=False)
    if args.no_whatif:
        return
    rows = []
    for week in weeks:
        rows += what_if(week, paths[week], args.out / "whatif", errors.get(week, np.nan))
        pd.DataFrame(rows).to_csv(args.results / "whatif.csv", index=False)
        log.info("what-if of %s done at %.0f s", week, time.perf_counter() - started)
    # The records hold only the jobs that left Darshan logs; on the full machine they rarely
    # queue. A Theta scaled to their share of its node-hours is as full of them over the week
    # as the real one was of all its jobs (jobs larger than it are skipped, counted in its trace).
    for week in weeks:
        share = bounds[week]["jobs_share_of_machine"]
        if share < args.scaled_from:
            continue
        nodes = round(NODES * share)
        workload = import_trace("jobsio", args.data / "jobs.csv", week=week, nodes=nodes,
                                runs=args.data / "darshan_runs.csv")
        path = args.out / "weeks" / f"{week}_{nodes}.json"
        path.write_text(dumps(workload))
        rows += what_if(week, path, args.out / "whatif", errors.get(week, np.nan),
                        scaled_platform(nodes, args.out / "weeks"), f"{nodes} nodes")
        pd.DataFrame(rows).to_csv(args.results / "whatif.csv", index=False)
        log.info("scaled what-if of %s (%d nodes, %s) done at %.0f s", week, nodes,
                 workload["trace"]["skipped"], time.perf_counter() - started)


if __name__ == "__main__":
    exits_on_error(main)()
