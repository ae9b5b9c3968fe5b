"""Benchmark of the embedded engine against real Batsim: wall time, jobs per second, peak memory.

Two cases on a 1,098-host platform with a storage host: 10,000 one-host
delay jobs, and 2,000 jobs that alternate compute and PFS phases. The
scheduler is the cheapest correct one (tests/schedulers/greedy.py: FCFS on
free hosts, no planning), so the figures are the engines'; scripts/bench_sched.py
measures batio's policies. Each case runs on the embedded engine in both
protocol modes and, when a ``batsim`` binary is on PATH, on real Batsim with
the same pybatsim scheduler; the last column is the wall-time ratio to real
Batsim, measured in this run. When ``batsched`` is on PATH too, a last
row runs real Batsim with batsched's ``fcfs_fast`` (C++, the same decisions
as the greedy scheduler): the fastest any Batsim run of the case gets on this
machine. Goals (issue 16): in-process >= 1,000 delay jobs/s and a ratio <= 1.0.

This machine's speed drifts by tens of percent from minute to minute, so
``--repeat N`` runs every engine N times, alternating them, and reports the
median wall time with the range; the ratio is that of the medians.

    .venv/bin/python scripts/bench_engine.py [--delay-jobs 10000] [--delay 60] [--pfs-jobs 2000]
                                     [--repeat 1] [--no-batsim]

A delay job arrives every 0.05 s, so ``--delay`` sets how many run at once
(delay / 0.05; 1,200 by default). SimGrid's model updates every running
job's action at each step, in Batsim as here, so its share grows with that
number (docs/performance.md, "What SimGrid's model costs"). A count of 0
skips a case.
"""

import argparse
import importlib.util
import json
from pathlib import Path
import shutil
import statistics
import tempfile
import time

from bench_inputs import NB_HOSTS, delay_workload, pfs_workload, platform_xml

from batio import engines
from batio.errors import exits_on_error
from batio.inputs.spec import RunSpec

GREEDY = Path(__file__).resolve().parents[1] / "tests" / "schedulers" / "greedy.py"


# engine row -> (how it runs, scheduler); real Batsim always talks over its socket
ENGINES = {"inprocess": ("inprocess", str(GREEDY)), "socket": ("socket", str(GREEDY)),
           "batsim": ("batsim", str(GREEDY)), "batsched": ("batsim", "batsched:fcfs_fast")}


def run(engine, spec):
    """Wall time and peak memory (MB, embedded engine only) of one run."""
    started = time.perf_counter()
    if ENGINES[engine][0] == "batsim":
        engines.run(spec, "batsim", wall_timeout_s=3600)
        return time.perf_counter() - started, None
    result = engines.run(spec)
    return time.perf_counter() - started, result["peak_rss_mb"]


@exits_on_error
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay-jobs", type=int, default=10000)
    parser.add_argument("--delay", type=float, default=60.0, help="seconds each delay job runs (default 60)")
    parser.add_argument("--pfs-jobs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each engine, alternated (default 1)")
    parser.add_argument("--no-batsim", action="store_true", help="skip real Batsim even if it is on PATH")
    args = parser.parse_args()
    if args.delay_jobs < 0 or args.pfs_jobs < 0 or not args.delay_jobs + args.pfs_jobs:
        parser.error("--delay-jobs and --pfs-jobs are counts >= 0, and at least one must be > 0")
    if not 0 < args.delay < float("inf"):
        parser.error(f"--delay is a number of seconds > 0, got {args.delay}")
    if args.repeat < 1:
        parser.error(f"--repeat is a number of runs >= 1, got {args.repeat}")
    kinds = ["inprocess", "socket"]
    if not args.no_batsim and shutil.which("batsim"):
        kinds += ["batsim"] + (["batsched"] if shutil.which("batsched") else [])
    # Which SimGrid the embedded engine loads decides its speed (docs/performance.md):
    # Debian's thread contexts, or a build whose Python actors run on raw contexts.
    # None: the first embedded run says, in one line, what to install.
    print(f"embedded engine's SimGrid module: {getattr(importlib.util.find_spec('simgrid'), 'origin', None)}")
    wall_header = "wall s" if args.repeat == 1 else f"median wall s of {args.repeat} (range)"
    print(f"{'case':<20} {'engine':<10} {'jobs/s':>8} {'peak MB':>8} {wall_header:>{max(7, len(wall_header))}} "
          f"{'/ batsim':>9}")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "platform.xml").write_text(platform_xml(NB_HOSTS))
        cases = {}
        if args.delay_jobs:
            cases[f"{args.delay_jobs} delay jobs"] = delay_workload(args.delay_jobs, delay=args.delay)
        if args.pfs_jobs:
            cases[f"{args.pfs_jobs} pfs jobs"] = pfs_workload(args.pfs_jobs)
        for index, (name, work) in enumerate(cases.items()):
            path = folder / f"{index}.json"
            path.write_text(json.dumps(work))
            walls, memories = {engine: [] for engine in kinds}, {}
            for repetition in range(args.repeat):
                for engine in kinds:
                    how, scheduler = ENGINES[engine]
                    spec = RunSpec(str(folder / "platform.xml"), [str(path)], scheduler,
                                   str(folder / f"{index}_{engine}_{repetition}" / "out"),
                                   mode="socket" if how == "batsim" else how, timeout_s=600)
                    wall, memories[engine] = run(engine, spec)
                    walls[engine].append(wall)
            medians = {engine: statistics.median(times) for engine, times in walls.items()}
            for engine, wall in medians.items():
                ratio = f"{wall / medians['batsim']:.2f}" if "batsim" in medians else "-"
                memory_text = "-" if memories[engine] is None else f"{memories[engine]:.0f}"
                spread = "" if args.repeat == 1 else f" ({min(walls[engine]):.1f}-{max(walls[engine]):.1f})"
                print(f"{name:<20} {engine:<10} {len(work['jobs']) / wall:>8.0f} {memory_text:>8} "
                      f"{f'{wall:.1f}{spread}':>{max(7, len(wall_header))}} {ratio:>9}", flush=True)


if __name__ == "__main__":
    main()
