"""Benchmark of how a run's cost grows with its number of jobs.

One-host delay jobs arriving every 0.05 s for 60 s each, scheduled by a
batio policy (default ``fcfs``) on the embedded engine, in-process. On the
default 100 compute hosts the platform is full from the 100th job on,
whatever the job count, and the queue grows to nearly every job (99,900
waiting at 100,000 jobs): what changes between counts is the number of
jobs, not how many run at once. ``--hosts 1098`` is the platform of
``bench_inputs`` that the first hardening measured on: there the 1,000-job point never
fills the platform (about 500 jobs run at once, 1,098 from 1,100 jobs on),
and each simulated event costs in proportion to the jobs running, in real
Batsim too (docs/performance.md).

Prints, per job count, the wall time, the scheduler's share
(``scheduling_time`` of ``_schedule.csv``; the rest is the engine's) and the
wall and CPU time per 1,000 jobs, then the largest ratio of two
per-1,000-job times. Goal: flat within 25 % from 1,000 to 100,000 jobs.
Not a test: ratios measured in one run on one machine.

    .venv/bin/python scripts/bench_scaling.py [--jobs 1000,10000,100000] [--hosts 100] [--scheduler fcfs] [--batsim]

``--batsim`` runs each count on real Batsim too (ZeroMQ, the scheduler in
pybatsim), to tell the simulator's own growth from batio's.

Measured 2026-11-25 (commit 222a297, quiet machine), one run each;
docs/performance.md has the tables and what they mean:

    jobs      s per 1,000 (CPU), 100 hosts    s per 1,000 (CPU), 1,098 hosts
    1,000          3.79 (3.15)                     4.42 (3.84)
    10,000         3.35 (2.67)                     5.72 (4.90)
    100,000        3.26 (2.60)                     5.45 (4.68)
    largest / smallest: 1.16 wall (goal <= 1.25: met) 1.29 wall (not met)

With ``--scheduler easy`` (100 hosts, commit bd642fd): 3.27, 3.34 and 3.29 s
per 1,000 jobs (1.02); before bd642fd, EASY looked at every waiting job on
a full machine, and 10,000 jobs took 146 s.
"""

import argparse
import csv
import json
import logging
from pathlib import Path
import resource
import shutil
import tempfile
import time

from bench_inputs import delay_workload, platform_xml

from batio import engines
from batio.engines import IN_PROCESS, WALL_TIMEOUT
from batio.errors import exits_on_error
from batio.resolve import resolve

log = logging.getLogger("bench_scaling")


@exits_on_error
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", default="1000,10000,100000", help="comma-separated job counts")
    parser.add_argument("--scheduler", default="fcfs")
    parser.add_argument("--hosts", type=int, default=100,
                        help="compute hosts of the platform: as many jobs run at once, once it is full")
    parser.add_argument("--batsim", action="store_true",
                        help="also run each count on real Batsim (a `batsim` binary on PATH), same scheduler")
    args = parser.parse_args()
    if args.hosts < 1:
        parser.error(f"--hosts must be at least 1, got {args.hosts}")
    if args.batsim and shutil.which("batsim") is None:
        parser.error("--batsim needs a `batsim` binary (Batsim 4.2) on PATH")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    counts = [int(count) for count in args.jobs.split(",")]
    kinds = ["embedded"] + (["batsim"] if args.batsim else [])
    per_thousand: dict[str, list[float]] = {engine: [] for engine in kinds}
    cpu_per_thousand = []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        (out / "platform.xml").write_text(platform_xml(args.hosts))
        for count in counts:
            workload = out / f"delay{count}.json"
            workload.write_text(json.dumps(delay_workload(count, nb_hosts=args.hosts)))
            for engine in kinds:
                supports = engines.ENGINES[engine].supports
                spec = resolve(args.scheduler, {}, str(out / "platform.xml"), [str(workload)], out / f"{engine}{count}",
                               engine, mode="inprocess" if IN_PROCESS in supports else "socket").spec
                cpu_before = child_cpu_seconds()
                started = time.perf_counter()
                engines.run(spec, engine, wall_timeout_s=7200 if WALL_TIMEOUT in supports else None)
                wall = time.perf_counter() - started
                cpu = child_cpu_seconds() - cpu_before
                with open(f"{spec.out_prefix}_schedule.csv") as stream:
                    scheduling = float(next(csv.DictReader(stream))["scheduling_time"])
                per_thousand[engine].append(wall / count * 1000)
                if engine == "embedded":
                    cpu_per_thousand.append(cpu / count * 1000)
                log.info("%-8s %7d jobs: %8.1f s wall, scheduler %7.1f s, rest %7.1f s, %6.2f s per 1,000 jobs%s",
                         engine, count, wall, scheduling, wall - scheduling, per_thousand[engine][-1],
                         f" (CPU {cpu_per_thousand[-1]:.2f} s)" if engine == "embedded" else "")
    for engine, times in per_thousand.items():
        log.info("%s: largest / smallest time per 1,000 jobs: %.2f wall%s", engine, max(times) / min(times),
                 f", {max(cpu_per_thousand) / min(cpu_per_thousand):.2f} CPU (goal <= 1.25)"
                 if engine == "embedded" else "")


def child_cpu_seconds():
    """CPU time of the finished simulation processes: unlike wall time, not
    stretched by other work on the machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
