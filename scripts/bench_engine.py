"""Benchmark of the embedded engine: jobs per second and peak memory.

Two cases, each in both protocol modes, on a 1,098-host platform with a
storage host: 10,000 one-host delay jobs, and 2,000 jobs that alternate
compute and PFS phases. The scheduler is the cheapest correct one
(tests/schedulers/greedy.py: FCFS on free hosts, no planning), so the
figures are the engine's; scripts/bench_sched.py measures batio's policies.
Goals (issue 2): in-process >= 1,000 delay jobs/s, socket >= 300 jobs/s.

    .venv/bin/python scripts/bench_engine.py [--delay-jobs 10000] [--pfs-jobs 2000]
"""

import argparse
import json
from pathlib import Path
import tempfile
import time

from batio.engine.run import RunSpec, simulate
from bench_inputs import NB_HOSTS, delay_workload, pfs_workload, platform_xml

GREEDY = Path(__file__).resolve().parents[1] / "tests" / "schedulers" / "greedy.py"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay-jobs", type=int, default=10000)
    parser.add_argument("--pfs-jobs", type=int, default=2000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "platform.xml").write_text(platform_xml(NB_HOSTS))
        cases = {f"{args.delay_jobs} delay jobs": delay_workload(args.delay_jobs),
                 f"{args.pfs_jobs} pfs jobs": pfs_workload(args.pfs_jobs)}
        for name, work in cases.items():
            path = folder / f"{len(rows)}.json"
            path.write_text(json.dumps(work))
            for mode in ("inprocess", "socket"):
                started = time.perf_counter()
                result = simulate(RunSpec(str(folder / "platform.xml"), [str(path)], str(GREEDY),
                                          str(folder / name.replace(" ", "_") / mode / "out"),
                                          mode=mode, timeout_s=600))
                wall = time.perf_counter() - started
                rows.append((name, mode, len(work["jobs"]) / wall, result["peak_rss_mb"], wall,
                             result["simulated_time"]))
    print(f"{'case':<20} {'mode':<10} {'jobs/s':>8} {'peak MB':>8} {'wall s':>7} {'simulated s':>12}")
    for name, mode, rate, memory, wall, simulated in rows:
        print(f"{name:<20} {mode:<10} {rate:>8.0f} {memory:>8.0f} {wall:>7.1f} {simulated:>12.0f}")


if __name__ == "__main__":
    main()
