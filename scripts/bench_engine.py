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
machine.

Two cases of real traces, when their files are there: the whole
KTH SP2 trace (``--swf``, 28,467 jobs on the README's 100-node platform)
under batio's ``easy``, in-process against real Batsim driving the same
scheduler over ZeroMQ; and a Theta week of jobs with I/O (``--theta-week``,
``batio import jobsio`` of ../shared/data/theta2022 on
platforms/theta_perjob.xml, as scripts/real_machines.py imports it) under
``easy``, in-process only, with where its time goes: the scheduler's share
(Batsim's ``scheduling_time``) and the engine's.

This machine's speed drifts by tens of percent from minute to minute, so
``--repeat N`` runs every engine N times, alternating them, and reports the
median wall time with the range; the ratio is that of the medians, with the
range of the ratios of the runs made one after the other.

    .venv/bin/python scripts/bench_engine.py [--delay-jobs 10000] [--delay 60] [--pfs-jobs 2000]
                                     [--swf FILE | --swf ''] [--theta-week WEEK | --theta-week '']
                                     [--repeat 1] [--no-batsim] [--no-socket] [--keep DIR]

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
from batio.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]
GREEDY = ROOT / "tests" / "schedulers" / "greedy.py"
KTH = ROOT / ".." / "shared" / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf"
THETA = ROOT / ".." / "shared" / "data" / "theta2022" / "jobs.csv"
THETA_NODES = 4392  # scripts/real_machines.py


# engine row -> (how it runs, scheduler); real Batsim always talks over its socket
ENGINES = {"inprocess": ("inprocess", str(GREEDY)), "socket": ("socket", str(GREEDY)),
           "batsim": ("batsim", str(GREEDY)), "batsched": ("batsim", "batsched:fcfs_fast")}


class Case:
    """A platform, a workload and a scheduler (file, options), and the engines that run them."""

    def __init__(self, name, platform, workload, engines, scheduler=str(GREEDY), options=None):
        self.name, self.platform, self.workload, self.engines = name, platform, workload, engines
        self.scheduler, self.options = scheduler, options or {}
        self.nb_jobs = len(json.loads(Path(workload).read_text())["jobs"])

    def spec(self, engine, prefix):
        how, scheduler = ENGINES[engine]
        scheduler = scheduler if scheduler != str(GREEDY) else self.scheduler
        inputs = (self.options, self.platform, [self.workload], prefix)
        if how == "batsim":
            return resolve(scheduler, *inputs, "batsim", mode="socket").spec
        return resolve(scheduler, *inputs, mode=how, timeout_s=600).spec


def run(engine, spec):
    """Wall time and peak memory (MB, embedded engine only) of one run."""
    started = time.perf_counter()
    if ENGINES[engine][0] == "batsim":
        engines.run(spec, "batsim", wall_timeout_s=3600)
        return time.perf_counter() - started, None
    result = engines.run(spec)
    return time.perf_counter() - started, result["peak_rss_mb"]


def synthetic_cases(args, folder, kinds):
    (folder / "platform.xml").write_text(platform_xml(NB_HOSTS))
    works = {}
    if args.delay_jobs:
        works[f"{args.delay_jobs} delay jobs"] = delay_workload(args.delay_jobs, delay=args.delay)
    if args.pfs_jobs:
        works[f"{args.pfs_jobs} pfs jobs"] = pfs_workload(args.pfs_jobs)
    cases = []
    for index, (name, work) in enumerate(works.items()):
        path = folder / f"{index}.json"
        path.write_text(json.dumps(work))
        cases.append(Case(name, str(folder / "platform.xml"), str(path), kinds))
    return cases


def trace_cases(args, folder, with_batsim):
    from batio.catalog import platform_path
    from batio.importers import dumps, import_trace
    from batio.platform_builder import platform_xml as built_platform
    cases = []
    if args.swf:
        (folder / "kth.xml").write_text(built_platform(100, 1, "1Gf", "10GBps", "1GBps"))  # README's recipe
        (folder / "kth.json").write_text(dumps(import_trace("swf", args.swf)))
        cases.append(Case(f"{Path(args.swf).stem[:16]} easy", str(folder / "kth.xml"), str(folder / "kth.json"),
                          ["inprocess"] + (["batsim"] if with_batsim else []), "easy"))
    if args.theta_week:
        (folder / "theta.json").write_text(dumps(import_trace("jobsio", THETA, week=args.theta_week,
                                                              nodes=THETA_NODES)))
        cases.append(Case(f"{args.theta_week[6:]} I/O easy", str(platform_path("theta_perjob")),
                          str(folder / "theta.json"), ["inprocess"], "easy"))
    return cases


def where_time_goes(prefix, wall):
    """The scheduler's share of an in-process run's wall time, from its _schedule.csv."""
    with open(f"{prefix}_schedule.csv") as stream:
        row = dict(zip(*(line.strip().split(",") for line in stream)))
    scheduling = float(row["scheduling_time"])
    return f"scheduler {scheduling:.1f} s ({scheduling / wall:.0%}), engine {wall - scheduling:.1f} s"


@exits_on_error
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay-jobs", type=int, default=10000)
    parser.add_argument("--delay", type=float, default=60.0, help="seconds each delay job runs (default 60)")
    parser.add_argument("--pfs-jobs", type=int, default=2000)
    parser.add_argument("--swf", default=str(KTH) if KTH.exists() else "",
                        help="an SWF trace run whole under easy ('' skips; default: KTH SP2 if present)")
    parser.add_argument("--theta-week", default="theta_2022-09-17" if THETA.exists() else "",
                        help="a Theta week of jobs with I/O under easy ('' skips)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each engine, alternated (default 1)")
    parser.add_argument("--no-batsim", action="store_true", help="skip real Batsim even if it is on PATH")
    parser.add_argument("--no-socket", action="store_true", help="skip the embedded engine's socket mode")
    parser.add_argument("--keep", type=Path, help="write the runs' inputs and outputs here, kept (default: a "
                                                 "temporary folder, removed)")
    args = parser.parse_args()
    if args.delay_jobs < 0 or args.pfs_jobs < 0:
        parser.error("--delay-jobs and --pfs-jobs are counts >= 0")
    if not 0 < args.delay < float("inf"):
        parser.error(f"--delay is a number of seconds > 0, got {args.delay}")
    if args.repeat < 1:
        parser.error(f"--repeat is a number of runs >= 1, got {args.repeat}")
    kinds = ["inprocess"] + ([] if args.no_socket else ["socket"])
    with_batsim = not args.no_batsim and shutil.which("batsim") is not None
    if with_batsim:
        kinds += ["batsim"] + (["batsched"] if shutil.which("batsched") else [])
    # Which SimGrid the embedded engine loads decides its speed (docs/performance.md):
    # Debian's thread contexts, or a build whose Python actors run on raw contexts.
    # None: the first embedded run says, in one line, what to install.
    print(f"embedded engine's SimGrid module: {getattr(importlib.util.find_spec('simgrid'), 'origin', None)}")
    wall_header = "wall s" if args.repeat == 1 else f"median wall s of {args.repeat} (range)"
    print(f"{'case':<22} {'engine':<10} {'jobs/s':>8} {'peak MB':>8} {wall_header:>{max(7, len(wall_header))}} "
          f"{'/ batsim (range)':>17}")
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.keep or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        cases = synthetic_cases(args, folder, kinds) + trace_cases(args, folder, with_batsim)
        if not cases:
            parser.error("no case to run")
        for index, case in enumerate(cases):
            walls: dict[str, list[float]]
            walls, memories, notes = {engine: [] for engine in case.engines}, {}, {}
            for repetition in range(args.repeat):
                for engine in case.engines:
                    prefix = str(folder / f"{index}_{engine}_{repetition}" / "out")
                    wall, memories[engine] = run(engine, case.spec(engine, prefix))
                    walls[engine].append(wall)
                    if case.name.endswith("I/O easy"):
                        notes[engine] = where_time_goes(prefix, wall)
            medians = {engine: statistics.median(times) for engine, times in walls.items()}
            for engine, wall in medians.items():
                ratio = "-"
                if "batsim" in medians:
                    pairs = [mine / theirs for mine, theirs in zip(walls[engine], walls["batsim"])]
                    ratio = f"{wall / medians['batsim']:.2f}" + (
                        f" ({min(pairs):.2f}-{max(pairs):.2f})" if args.repeat > 1 else "")
                memory_text = "-" if memories[engine] is None else f"{memories[engine]:.0f}"
                spread = "" if args.repeat == 1 else f" ({min(walls[engine]):.1f}-{max(walls[engine]):.1f})"
                print(f"{case.name:<22} {engine:<10} {case.nb_jobs / wall:>8.0f} {memory_text:>8} "
                      f"{f'{wall:.1f}{spread}':>{max(7, len(wall_header))}} {ratio:>17}"
                      + (f"  {notes[engine]}" if engine in notes else ""), flush=True)


if __name__ == "__main__":
    main()
