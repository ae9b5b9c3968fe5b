"""Cost of CATIOS's time-resolved admission check (seed 002).

Not a test: prints two tables.

1. ``DemandLoad.fits`` per candidate against the length n of its profile
   (60 s, 1 h, 6 h, 24 h of one-second bins), on a realistic load: the
   running jobs CATIOS would have admitted among 150 with bursty profiles
   of 10 min to 24 h that started over the last day, so load[] reaches up
   to a day past now. Median and 99th
   percentile in microseconds over ``--calls`` checks at now.
2. The decision time of one round, ``schedule()``, with 500 queued jobs on
   the 1,098-host machine of ``scripts/bench_sched.py`` (about 90 % busy),
   every job with a bursty profile as long as 10-100 % of its walltime
   (10 min to 24 h): CATIOS with each priority, with and without the
   reservation of the first deferred job, TIOAS and EASY on the same state.
   Each round starts from the same state; median over ``--rounds``.

    .venv/bin/python scripts/bench_catios.py [--calls N] [--rounds N] [--seed S]
"""
from __future__ import annotations

import argparse
import gc
import time

from batsim.batsim import Job
from bench_inputs import NOW, FakeBatsim, machine_state, random_size_and_walltime, timed_round
import numpy as np

from batio.schedulers.backfill import Backfill
from batio.schedulers.catios.catios import Catios
from batio.schedulers.catios.demandload import DemandLoad, clip
from batio.schedulers.catios.iodemand import encode
from batio.schedulers.catios.tioas import Tioas

B = 43e9  # bytes/s: EquilibrIO's scaled Theta file system, as in bench_sched.py
LENGTHS = {"60 s": 60, "1 h": 3_600, "6 h": 21_600, "24 h": 86_400}
QUEUED = 500


def bursty_demand(rng, n: int) -> np.ndarray:
    """n seconds of a periodic writer: a burst of 5-60 s every 1-30 min (the
    first at a random second of the period) at 2-25 % of B, a light
    background (up to 0.5 % of B) otherwise."""
    period = int(rng.integers(60, 1_800))
    burst = int(rng.integers(5, 60))
    D = np.full(n, float(rng.uniform(0, 0.005)) * B)
    phase = (np.arange(n) + int(rng.integers(0, period))) % period
    D[phase < burst] = float(rng.uniform(0.02, 0.25)) * B
    return D


# -- 1. one admission check ---------------------------------------------------------

def realistic_load(rng) -> DemandLoad:
    """What CATIOS would have admitted: of 150 jobs that started over the
    last day (and are still running), those that fitted at their start."""
    load = DemandLoad(origin=NOW - 86_400)
    jobs = []
    for _ in range(150):
        n = int(rng.integers(600, 86_400))
        jobs.append((NOW - float(rng.uniform(0, n)), clip(bursty_demand(rng, n), B)))
    for key, (start, D) in enumerate(sorted(jobs, key=lambda job: job[0])):
        if load.fits(D, start, B):
            load.add(key, D, start)
    load.advance(NOW)
    return load


def fits_times(calls: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    load = realistic_load(rng)
    print(f"load[]: {len(load)} running jobs, horizon {load.horizon - load.origin} s past now\n")
    print(f"{'profile':>8} {'n (s)':>7} {'median µs':>10} {'p99 µs':>8} {'admitted':>9}")
    for label, n in LENGTHS.items():
        candidates = [clip(bursty_demand(rng, n), B) for _ in range(calls)]
        durations, admitted = [], 0
        for D in candidates:
            begin = time.perf_counter_ns()
            admitted += load.fits(D, NOW, B)
            durations.append(time.perf_counter_ns() - begin)
        micro = np.array(durations) / 1e3
        print(f"{label:>8} {n:>7} {np.median(micro):>10.1f} {np.percentile(micro, 99):>8.1f} "
              f"{admitted / calls:>8.0%}")


# -- 2. one round --------------------------------------------------------------------

class CallingBatsim(FakeBatsim):
    def wake_me_up_at(self, at):
        pass


def demand_job(rng, name, submit_time):
    nb_hosts, walltime = random_size_and_walltime(rng)
    n = max(1, int(walltime * rng.uniform(0.1, 1.0)))
    return Job(f"w0!{name}", submit_time, walltime, nb_hosts, "p",
               {"id": f"w0!{name}", "io_demand": encode(bursty_demand(rng, n))})


def round_time(cls, options, running, waiting) -> tuple[float, int]:
    """Wall time (ms) of one ``schedule()`` from the given state, and jobs started."""
    scheduler = cls({"bandwidth": B, "demand": "oracle", **options})
    scheduler.bs = CallingBatsim(NOW - 90_000)
    scheduler.onSimulationBegins()
    for job, _ in running:
        scheduler.onJobSubmission(job)
    for job in waiting:
        scheduler.onJobSubmission(job)
    scheduler.waiting = list(waiting)
    scheduler.bs.now = NOW
    for job, start in running:
        scheduler.mark_running(job, job.allocation, start)
        if isinstance(scheduler, Catios):
            scheduler.load.add(job.id, scheduler.D(job), start)
    if isinstance(scheduler, Catios):  # profiles of waiting jobs are clipped once, at their first round
        for job in waiting:
            scheduler.D(job)
    begin = time.perf_counter()
    plan = scheduler.schedule()
    return (time.perf_counter() - begin) * 1e3, len(plan.started)


def round_times(rounds: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    running, waiting = machine_state(rng, QUEUED, demand_job)
    lengths = [sum(seconds for seconds, _ in job.json_dict["io_demand"]) for job in waiting]
    print(f"\n{len(running)} running jobs, {len(waiting)} queued (profiles {min(lengths)}-{max(lengths)} s, "
          f"median {int(np.median(lengths))} s)\n")
    print(f"{'scheduler':<28} {'median ms':>10} {'max ms':>8} {'started':>8}")
    policies = [
        ("CATIOS fcfs", Catios, {"priority": "fcfs"}),
        ("CATIOS ljf", Catios, {"priority": "ljf"}),
        ("CATIOS mix 0.95:0.05", Catios, {"priority": "mix"}),
        ("CATIOS fcfs, no reservation", Catios, {"priority": "fcfs", "reserve_first": False}),
        ("TIOAS (EASY)", Tioas, {"backfill_max": 1}),
    ]
    for label, cls, options in policies:
        times = [round_time(cls, options, running, waiting) for _ in range(rounds)]
        ms = np.array([t for t, _ in times])
        print(f"{label:<28} {np.median(ms):>10.2f} {ms.max():>8.2f} {times[-1][1]:>8}")
    easy = [timed_round(Backfill({"backfill_max": 1}), CallingBatsim(NOW), running, waiting) for _ in range(rounds)]
    ms = np.array([t for t, _ in easy])
    print(f"{'EASY (no I/O)':<28} {np.median(ms):>10.2f} {ms.max():>8.2f} {easy[-1][1]:>8}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    gc.disable()  # a collection inside a timed call would be measured with it
    fits_times(args.calls, args.seed)
    round_times(args.rounds, args.seed)


if __name__ == "__main__":
    main()
