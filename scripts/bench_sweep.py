"""Benchmark of `batio sweep`: wall time of one sweep config with 1 and 2 local Dask workers.

Each worker count runs the whole sweep from scratch in its own temporary
folder (nothing is resumed), and the time is split into the runs (the
LocalCluster's start included) and the report (table and figures).
Worker count 0 runs one simulation after the other in this process, without Dask.

    .venv/bin/python scripts/bench_sweep.py scripts/sweeps/demo.yaml [--workers 1,2]
"""

import argparse
import os
from pathlib import Path
import sys
import tempfile
import time

from batio.errors import exits_on_error
from batio.report import comparison
from batio.sweep import gather, load_config, plan, run_all


@exits_on_error
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", help="a sweep YAML file (docs/sweeps.md)")
    parser.add_argument("--workers", default="1,2", help="worker counts to compare, comma-separated (default 1,2)")
    args = parser.parse_args()
    grid = load_config(args.config)
    rows = []
    for workers in [int(count) for count in args.workers.split(",")]:
        with tempfile.TemporaryDirectory(prefix="batio-bench-sweep-") as folder:
            out = Path(folder)
            started = time.perf_counter()
            runs = plan(grid, out)
            counts = run_all(runs, out, workers=workers, progress=False)
            ran = time.perf_counter()
            table = gather(runs, out)
            comparison.write_report(comparison.report_data(table, out, grid.baseline), out, title="benchmark")
            done = time.perf_counter()
            failed = int((table["status"] != "ok").sum())
            rows.append((workers, counts["ran"], failed, ran - started, done - ran, done - started))
    print(f"{Path(args.config).name}: {len(grid.policies)} policies; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'workers':>7} {'runs':>5} {'failed':>6} {'runs s':>7} {'report s':>8} {'total s':>7} {'s/run':>6}")
    for workers, nb_runs, failed, running, reporting, total in rows:
        print(f"{workers:>7} {nb_runs:>5} {failed:>6} {running:>7.1f} {reporting:>8.1f} {total:>7.1f} "
              f"{running / max(nb_runs, 1):>6.2f}")
    return 1 if any(row[2] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
