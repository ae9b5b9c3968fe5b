"""Theta's recorded weeks held against batio: the per-job I/O model, the headroom, the what-if at both ends.

For each Theta week of the joined job + I/O records (``jobs.csv`` of
../shared/data/theta2022, or ``--data``), imported without ``--runs`` (as
the held-back weeks are scored):

1. validation: each week with I/O times scored by ``batio validate`` on
   ``platforms/theta_perjob.xml`` with the per-job I/O model trained on the
   *other* weeks (leave one week out);
2. the headroom of each week, both ends (``batio.twin.validate.headroom``);
3. the what-if of ``--whatif-weeks``: at the low end and at the high end of
   each job's measured I/O (``batio iomodel apply``; the model of the other
   weeks predicts the jobs without measurements), ``--replicas`` replicas
   drawing each job's I/O from the model's held-out errors, every policy run
   with the ``batio compare`` machinery (intervals, paired tests against
   conservative backfilling).

Writes ``results/real_machines/{validation,headroom}.csv`` and
``whatif_{low,high}_summary.csv`` beside this script (``--results``
elsewhere); runs and per-job pairs (job records, not committed) go to ``--out``.

    .venv/bin/python scripts/real_machines.py [--whatif-weeks theta_2022-09-17] [--replicas 3] [--only ...]
"""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
import shutil
import time

import pandas as pd

from batio.compare import compare
from batio.engines.embedded.routes import bandwidths
from batio.errors import InputError, exits_on_error
from batio.importers import dumps, import_trace
from batio.sweep.config import Grid, Policy, WorkloadSource, check_grid
from batio.twin.iomodel import read_week, train
from batio.twin.iophases import own_io, write
from batio.twin.validate import headroom, replayer, validate

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".." / "shared" / "data" / "theta2022"
PLATFORM = ROOT / "platforms" / "theta_perjob.xml"
NODES = 4392
WRITE_BW = 172e9  # theta-fs0's write bandwidth (platforms/theta.md), bytes/s
# The I/O-aware policies' own knowledge of the machine (Batsim does not tell link bandwidths):
# R_limit (GiB/s) and the I/O node's bandwidth (bytes/s) are the file system's write bandwidth.
POLICIES = [Policy("conservative", "conservative"), Policy("easy", "easy"),
            Policy("io_aware", "io_aware", {"limit": WRITE_BW / 2 ** 30}),
            Policy("adaptive", "adaptive", {"limit": WRITE_BW / 2 ** 30}),
            Policy("iopack", "iopack", {"bandwidth": WRITE_BW}), Policy("equilibrio", "equilibrio")]
log = logging.getLogger("real_machines")


def import_weeks(data, weeks, out):
    paths = {}
    for week in weeks:
        paths[week] = out / f"{week}.json"
        paths[week].write_text(dumps(import_trace("jobsio", data / "jobs.csv", week=week, nodes=NODES)))
    return paths


def io_times_known(path):
    return any("measured_transfer_s" in job for job in json.loads(Path(path).read_text())["jobs"])


def leave_one_week_out(paths, out):
    """The validation table of every week scored by a model of the other weeks."""
    tables = []
    for week, path in paths.items():
        others = [other for name, other in paths.items() if name != week]
        table, _ = validate(PLATFORM, [path], out / week, train=others)
        tables.append(table[table["group"] != "all"])
    return pd.concat(tables, ignore_index=True)


def end_workload(week, path, others, end, folder):
    """The week at one end of its jobs' measured I/O (the model of the other weeks for the rest)."""
    fs = bandwidths(PLATFORM)
    model = train(others, fs)
    model_path = folder / "iomodel.json"
    model.save(model_path)
    workload, _ = read_week(path)
    counts = own_io(workload, model, fs, end, replay=replayer(PLATFORM, folder, "record"))
    log.info("%s, %s end: %s", week, end, counts)
    return write(workload, folder / f"{week}_{end}.json"), model_path


def what_if(week, path, others, end, replicas, folder):
    """The comparison of POLICIES on the week at ``end``, over replicas; its report's summary table."""
    folder.mkdir(parents=True, exist_ok=True)
    base, model = end_workload(week, path, others, end, folder)
    source = WorkloadSource(f"{week}_{end}", generator="batio.twin.iophases:replica",
                            args={"path": str(base), "model": str(model)})
    grid = Grid(source="scripts/real_machines.py", platforms=[("theta_perjob", str(PLATFORM))], workloads=[source],
                policies=POLICIES, seeds=list(range(1, replicas + 1)), baseline="conservative",
                run_options={"max_idle": 10 * 86400.0},
                made_from=f"scripts/real_machines.py --whatif-weeks {week} --replicas {replicas} ({end} end)")
    check_grid(grid)
    compare(grid, folder / "compare", progress=False)
    return pd.read_csv(folder / "compare" / "report" / "summary.csv").assign(week=week, end=end)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with jobs.csv")
    parser.add_argument("--weeks", default="theta_2022-01-15,theta_2022-01-22,theta_2022-01-29,theta_2022-09-17,"
                                           "theta_2022-10-01")
    parser.add_argument("--whatif-weeks", default="theta_2022-09-17")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "real_machines")
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results" / "real_machines")
    parser.add_argument("--only", choices=["validation", "whatif"],
                        help="only the validation and the headroom, or only the what-if")
    args = parser.parse_args()
    logging.basicConfig(format="real_machines: %(message)s", level=logging.INFO)
    if not (args.data / "jobs.csv").is_file():
        raise InputError(args.data, "no jobs.csv here (the Theta 2022 records: give --data)")
    if not 1 <= args.replicas <= 100:
        raise InputError("--replicas", f"expected 1 to 100, got {args.replicas}")
    for folder in (args.out / "weeks", args.results):
        folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    paths = import_weeks(args.data, args.weeks.split(","), args.out / "weeks")
    measured = {week: path for week, path in paths.items() if io_times_known(path)}
    if args.only != "whatif":
        table = leave_one_week_out(measured, args.out / "validate")
        table.to_csv(args.results / "validation.csv", index=False)
        log.info("validation done at %.0f s", time.perf_counter() - started)
        bounds = [{"week": week, **headroom(json.loads(path.read_text()), NODES)} for week, path in paths.items()]
        pd.DataFrame(bounds).to_csv(args.results / "headroom.csv", index=False)
    if args.only == "validation":
        return
    for end in ("low", "high"):
        summaries = []
        for week in args.whatif_weeks.split(","):
            others = [path for name, path in measured.items() if name != week]
            folder = args.out / "whatif" / week / end
            shutil.rmtree(folder, ignore_errors=True)
            summaries.append(what_if(week, paths[week], others, end, args.replicas, folder))
            log.info("what-if of %s at the %s end done at %.0f s", week, end, time.perf_counter() - started)
        pd.concat(summaries).to_csv(args.results / f"whatif_{end}_summary.csv", index=False)


if __name__ == "__main__":
    exits_on_error(main)()
