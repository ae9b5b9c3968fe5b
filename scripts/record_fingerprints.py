"""Fingerprints of the schedules batio's policies make: the behaviour-identity
guard of restructurings: behaviour unchanged, shown by a test that runs each
sweep config's smallest grid point on both commits.

For every config in scripts/sweeps/ its smallest grid point is planned by
the sweep machinery itself (``batio.sweep.load_config`` and ``plan``): the
first platform, the first seed, the workload with the fewest jobs (the first
such in the config), every scheduler entry, the embedded engine. The matrix
config is planned as ``batio matrix --small`` plans it
(``batio.matrix.load_matrix(small=True)``, ``plan_matrix``): every catalog
policy on each input it fits, cut to the config's small job count; this is
what covers every catalog policy, those of the skipped configs included. Each run is executed as a sweep executes it
(``sweep.execute_run``) and its fingerprint is the SHA-256 of its schedule:
for every job of out_jobs.csv, sorted by workload and job id, its id, final
state, start, finish, hosts and Batsim metadata, as written.

    .venv/bin/python scripts/record_fingerprints.py            # record every point
    .venv/bin/python scripts/record_fingerprints.py --check    # re-run the quick set, compare
    .venv/bin/python scripts/record_fingerprints.py --check --all
    .venv/bin/python scripts/record_fingerprints.py --check --all --config equilibrio_alpha.yaml

Recording writes tests/data/sweep_fingerprints.json with the commit it ran
on, the seconds each run took, and which points form the quick set that
tests/test_fingerprints.py re-runs (the cheapest ones, within
``QUICK_BUDGET_S``). Configs whose smallest point is left out are listed
there with the reason.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
from pathlib import Path
import subprocess
import sys
import tempfile
import time

from batio import matrix, sweep
from batio.errors import BatioError
from batio.inputs.workload import load_workload

ROOT = Path(__file__).resolve().parent.parent
SWEEPS = ROOT / "scripts" / "sweeps"
FINGERPRINTS = ROOT / "tests" / "data" / "sweep_fingerprints.json"
MATRIX_CONFIG = "matrix.yaml"
# Seconds of runs (as measured when recording, on the 2-core machine) the
# test re-runs; the rest is checked by hand with --check --all.
QUICK_BUDGET_S = 170.0
# The schedule's columns of out_jobs.csv (batio.engines.embedded.outputs.JOBS_COLUMNS).
SCHEDULE_COLUMNS = ("workload_name", "job_id", "final_state", "starting_time", "finish_time",
                    "allocated_resources", "metadata")
# Configs whose smallest point is not recorded, and why.
# (Their policies are recorded on the matrix's memcluster486_slice input.)
_WHOLE_DAY = "its only workload is the whole day of the memcluster486 trace (../shared/data): hours per policy"
_SLICE = ("its only workload is a slice of the memcluster486 trace (../shared/data), {jobs} jobs: "
          "{seconds} s per policy, {policies} policies")
SKIPPED = {
    "locality_day.yaml": _WHOLE_DAY,
    "locality_authors_day.yaml": _WHOLE_DAY,
    "locality_ablation_day_restart.yaml": _WHOLE_DAY,
    "locality_ablation_day_replay.yaml": _WHOLE_DAY,
    "locality_ablation_morning.yaml": _SLICE.format(jobs=2420, seconds="~30", policies=10),
    "locality_ablation_replay.yaml": _SLICE.format(jobs=1667, seconds="~22", policies=20),
    "locality_ablation_restart.yaml": _SLICE.format(jobs=1667, seconds=22, policies=50),
}
log = logging.getLogger("record_fingerprints")


def schedule_fingerprint(jobs_csv: str | Path) -> str:
    """SHA-256 of the per-job schedule in an out_jobs.csv, as written (no float re-formatting)."""
    with open(jobs_csv, newline="", encoding="utf-8") as stream:
        rows = [tuple(row[column] for column in SCHEDULE_COLUMNS) for row in csv.DictReader(stream)]
    rows.sort(key=lambda row: (row[0], int(row[1]) if row[1].isdigit() else -1, row[1]))
    text = "\n".join(",".join(row) for row in rows)
    return hashlib.sha256(text.encode()).hexdigest()


def _job_count(path: str) -> int:
    return len(load_workload(path, "w0").jobs)


def smallest_point(config: Path, out: Path) -> list[sweep.PlannedRun]:
    """The planned policy runs of ``config``'s smallest grid point (workloads generated into ``out``)."""
    if config.name == MATRIX_CONFIG:
        runs, _, _ = matrix.plan_matrix(matrix.load_matrix(config, small=True), out)
        return [run for run in runs if run.kind == "policy"]
    grid = sweep.load_config(config)
    grid.platforms, grid.seeds = grid.platforms[:1], grid.seeds[:1]
    grid.engines, grid.io_slowdown = ["embedded"], False
    runs = sweep.plan(grid, out)
    sizes = {run.workload_file: _job_count(run.workload_file) for run in runs}  # in the config's order
    smallest = min(sizes, key=sizes.__getitem__)
    return [run for run in runs if run.workload_file == smallest]


def point_key(config: Path, run: sweep.PlannedRun) -> str:
    seed = "" if run.seed is None else f" seed {run.seed}"
    return f"{config.name}: {run.policy} on {run.workload}{seed} / {run.platform}"


def fingerprint_run(run: sweep.PlannedRun, out: Path) -> tuple[str, float]:
    """(fingerprint, wall seconds) of one planned run, executed as a sweep executes it."""
    row = sweep.execute_run(run, out)
    if row["status"] != "ok":
        raise BatioError(f"{run.run_id}: {row['error']}")
    return schedule_fingerprint(out / "runs" / run.run_id / "out_jobs.csv"), row["wall_time_s"]


def configs() -> list[Path]:
    return sorted(path for path in SWEEPS.glob("*.yaml") if path.name not in SKIPPED)


def planned_points(out: Path) -> dict[str, sweep.PlannedRun]:
    """Every recorded point's key -> its planned run, for the current configs."""
    points = {}
    for config in configs():
        for run in smallest_point(config, out):
            points[point_key(config, run)] = run
    return points


def current_commit() -> str:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no",
                            "--", "batio", "schedulers"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return head.stdout.strip() + (" (with uncommitted changes to batio/ or schedulers/)" if dirty else "")


def record(out: Path) -> dict:
    points = planned_points(out)
    recorded = {}
    for key, run in points.items():
        fingerprint, seconds = fingerprint_run(run, out)
        recorded[key] = {"sha256": fingerprint, "seconds": round(seconds, 1), "quick": False,
                         "scheduler": scheduler_name(run)}
        log.info("%s  %.1f s", key, seconds)
    mark_quick(recorded)
    return {"commit": current_commit(), "made_by": "scripts/record_fingerprints.py",
            "quick_budget_s": QUICK_BUDGET_S, "skipped": SKIPPED, "points": recorded}


def scheduler_name(run: sweep.PlannedRun) -> str:
    """The policy file a run loads, relative to the repository."""
    return Path(run.scheduler).resolve().relative_to(ROOT).as_posix()


def mark_quick(recorded: dict) -> None:
    """The quick set, within ``QUICK_BUDGET_S`` seconds: each policy file's
    cheapest point, then each config's, then the cheapest others."""
    def cost(key):
        return recorded[key]["seconds"]
    by_cost = sorted(recorded, key=cost)
    cheapest_of_file = {recorded[key]["scheduler"]: key for key in reversed(by_cost)}
    cheapest_of_config = {key.split(":")[0]: key for key in reversed(by_cost)}
    spent = 0.0
    for key in recorded:
        recorded[key]["quick"] = False
    for key in [*sorted(cheapest_of_file.values(), key=cost), *sorted(cheapest_of_config.values(), key=cost),
                *by_cost]:
        if not recorded[key]["quick"] and spent + cost(key) <= QUICK_BUDGET_S:
            recorded[key]["quick"] = True
            spent += cost(key)


def check(out: Path, everything: bool, only: list[str] | None = None) -> list[str]:
    """The points whose fingerprint differs from the recorded one (or that are no longer planned)."""
    recorded = json.loads(FINGERPRINTS.read_text())["points"]
    points = planned_points(out)
    differ = sorted(set(recorded) ^ set(points))
    for key, entry in recorded.items():
        if only and key.split(":")[0] not in only:
            continue
        if key in points and (everything or entry["quick"]):
            fingerprint, seconds = fingerprint_run(points[key], out)
            log.info("%s  %.1f s  %s", key, seconds, "same" if fingerprint == entry["sha256"] else "DIFFERS")
            if fingerprint != entry["sha256"]:
                differ.append(key)
    return differ


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the recorded fingerprints")
    parser.add_argument("--all", action="store_true", help="with --check: every recorded point, not the quick set")
    parser.add_argument("--config", action="append", help="with --check: only this config's points (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="batio-fingerprints-") as folder:
        if args.check:
            differ = check(Path(folder), args.all, args.config)
            print(f"{len(differ)} points differ" + "".join(f"\n  {key}" for key in differ))
            return 1 if differ else 0
        recorded = record(Path(folder))
    FINGERPRINTS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"{len(recorded['points'])} points recorded in {time.perf_counter() - started:.0f} s "
          f"({sum(entry['quick'] for entry in recorded['points'].values())} quick) -> {FINGERPRINTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
