"""Decision time of one Backfill scheduling round versus queue length.

Not a test: prints a table of the median and 99th-percentile wall time of
``Backfill.schedule()`` (tracker initialisation, queue sort, Algorithm 1),
for EASY and conservative backfill, on 1,098 hosts (Theta scaled down, as in
EquilibrIO) with one bandwidth resource. Goal: conservative with 1,000 queued
jobs under 20 ms median.

Each round starts from the same state: the machine about 90 % busy with
running jobs, and a queue of jobs with sizes 1-256 hosts (mostly small),
walltimes 10 min-24 h and, for a third of them, a bandwidth need.

Then, with ``--whole-run N`` (default 5,000), the scheduler's total time
over a whole simulated run of N jobs on the embedded engine (in-process, so
it is CPU time of the scheduler process), for EASY and conservative.

    .venv/bin/python scripts/bench_sched.py [--rounds N] [--seed S] [--whole-run N]
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
import json
from pathlib import Path
import tempfile
import time

from batsim.batsim import Job
from bench_inputs import (
    NB_HOSTS,
    NOW,
    FakeBatsim,
    backfill_workload,
    machine_state,
    platform_xml,
    random_size_and_walltime,
    timed_round,
)
import numpy as np
import pandas as pd

from batio import engines
from batio.errors import exits_on_error
from batio.resolve import resolve
from batio.schedulers.backfill import Backfill

BANDWIDTH_LIMIT = 43.0  # GB/s, EquilibrIO's scaled Theta file system
QUEUE_LENGTHS = (100, 1_000, 5_000)


class BandwidthBackfill(Backfill):
    """Backfill reserving each job's ``pfs`` need, as an I/O-aware policy would."""

    def bandwidth_need(self, job: Job, now: float) -> Mapping[str, float]:
        need = job.json_dict.get("pfs", 0.0)
        return {"pfs": need} if need else {}

    def bandwidth_limits(self, now: float) -> Mapping[str, float]:
        return {"pfs": BANDWIDTH_LIMIT}




def random_job(rng, name, submit_time):
    nb_hosts, walltime = random_size_and_walltime(rng)
    pfs = float(rng.uniform(0.5, 10)) if rng.random() < 1 / 3 else 0.0
    return Job(f"w0!{name}", submit_time, walltime, nb_hosts, "p",
               {"id": f"w0!{name}", "pfs": pfs})




def round_times(backfill_max, queue_length, rounds, seed):
    rng = np.random.default_rng(seed)
    running, waiting = machine_state(rng, queue_length, random_job)
    times = [timed_round(BandwidthBackfill({"backfill_max": backfill_max}), FakeBatsim(NOW), running, waiting)
             for _ in range(rounds)]
    return np.array([ms for ms, _ in times]), len(running), times[-1][1]


def whole_run(policy, count, seed):
    """(scheduler seconds, wall seconds, makespan) of a whole simulated run."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "p.xml").write_text(platform_xml())
        (folder / "w.json").write_text(json.dumps(backfill_workload(count, seed)))
        started = time.perf_counter()
        engines.run(resolve(policy, {}, str(folder / "p.xml"), [str(folder / "w.json")], folder / "out" / "out").spec)
        wall = time.perf_counter() - started
        schedule = pd.read_csv(folder / "out" / "out_schedule.csv")
        return float(schedule["scheduling_time"][0]), wall, float(schedule["makespan"][0])


@exits_on_error
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--whole-run", type=int, default=5000, help="jobs in the whole-run part (0: skip it)")
    args = parser.parse_args()
    print(f"{NB_HOSTS} hosts, bandwidth limit {BANDWIDTH_LIMIT}; {args.rounds} rounds each")
    print(f"{'policy':<13}{'queued':>8}{'running':>9}{'started':>9}{'median ms':>11}{'p99 ms':>9}")
    for policy, backfill_max in (("EASY", 1), ("conservative", None)):
        for queue_length in QUEUE_LENGTHS:
            rounds = args.rounds if queue_length < 5_000 else max(5, args.rounds // 5)
            times, nb_running, started = round_times(backfill_max, queue_length, rounds, args.seed)
            print(f"{policy:<13}{queue_length:>8}{nb_running:>9}{started:>9}"
                  f"{np.median(times):>11.2f}{np.percentile(times, 99):>9.2f}")
    if args.whole_run:
        print(f"\nwhole run: {args.whole_run} jobs on {NB_HOSTS} hosts, embedded engine, in-process")
        print(f"{'policy':<13}{'scheduler s':>12}{'run wall s':>11}{'makespan s':>12}")
        for policy in ("easy", "conservative"):
            scheduler_s, wall, makespan = whole_run(policy, args.whole_run, args.seed)
            print(f"{policy:<13}{scheduler_s:>12.1f}{wall:>11.1f}{makespan:>12.0f}")


if __name__ == "__main__":
    main()
