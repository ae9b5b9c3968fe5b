"""Decision time of one Backfill scheduling round versus queue length.

Not a test: prints a table of the median and 99th-percentile wall time of
``Backfill.schedule()`` (tracker initialisation, queue sort, Algorithm 1),
for EASY and conservative backfill, on 1,098 hosts (Theta scaled down, as in
EquilibrIO) with one bandwidth resource. Goal: conservative with 1,000 queued
jobs under 20 ms median.

Each round starts from the same state: the machine about 90 % busy with
running jobs, and a queue of jobs with sizes 1-256 hosts (mostly small),
walltimes 10 min-24 h and, for a third of them, a bandwidth need.

Only the per-round cost is measured here; the scheduler's total CPU time
over a whole simulated run needs batio's engine.

    .venv/bin/python scripts/bench_sched.py [--rounds N] [--seed S]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from batsim.batsim import Job
from procset import ProcSet

from batio.schedulers.backfill import Backfill, time_limit

NB_HOSTS = 1098
BANDWIDTH_LIMIT = 43.0  # GB/s, EquilibrIO's scaled Theta file system
QUEUE_LENGTHS = (100, 1_000, 5_000)
NOW = 100_000.0


class BandwidthBackfill(Backfill):
    """Backfill reserving each job's ``pfs`` need, as an I/O-aware policy would."""

    def bandwidth_need(self, job, now):
        need = job.json_dict.get("pfs", 0.0)
        return {"pfs": need} if need else {}

    def bandwidth_limits(self, now):
        return {"pfs": BANDWIDTH_LIMIT}


class FakeBatsim:
    def __init__(self, now):
        self.now = now
        self.compute_resources = {host: {"id": host} for host in range(NB_HOSTS)}
        self.storage_resources = {NB_HOSTS: {"id": NB_HOSTS}}

    def time(self):
        return self.now

    def execute_jobs(self, jobs):
        pass

    def reject_jobs(self, jobs):
        pass


def random_job(rng, name, submit_time):
    nb_hosts = int(min(NB_HOSTS, 2 ** rng.integers(0, 9) if rng.random() < 0.3 else rng.integers(1, 9)))
    walltime = float(rng.choice([600, 1800, 3600, 7200, 14400, 43200, 86400]))
    pfs = float(rng.uniform(0.5, 10)) if rng.random() < 1 / 3 else 0.0
    return Job(f"w0!{name}", submit_time, walltime, nb_hosts, "p",
               {"id": f"w0!{name}", "pfs": pfs})


def machine_state(rng, queue_length):
    """Running jobs packed on ~90 % of the hosts, and the waiting queue."""
    running, next_host, name = [], 0, 0
    while True:
        job = random_job(rng, name, NOW - 90_000)
        if next_host + job.requested_resources > 0.9 * NB_HOSTS:
            break
        job.allocation = ProcSet((next_host, next_host + job.requested_resources - 1))
        elapsed = rng.uniform(0, 0.95) * time_limit(job)
        running.append((job, NOW - elapsed))
        next_host += job.requested_resources
        name += 1
    waiting = [random_job(rng, name + i, NOW - queue_length + i) for i in range(queue_length)]
    return running, waiting


def round_times(backfill_max, queue_length, rounds, seed):
    rng = np.random.default_rng(seed)
    running, waiting = machine_state(rng, queue_length)
    durations, started = [], 0
    for _ in range(rounds):
        scheduler = BandwidthBackfill({"backfill_max": backfill_max})
        scheduler.bs = FakeBatsim(NOW)
        scheduler.onSimulationBegins()
        scheduler.running = {job.id: (job, start) for job, start in running}
        scheduler.waiting = list(waiting)
        begin = time.perf_counter()
        plan = scheduler.schedule()
        durations.append(time.perf_counter() - begin)
        started = len(plan.started)
    return np.array(durations) * 1e3, len(running), started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{NB_HOSTS} hosts, bandwidth limit {BANDWIDTH_LIMIT}; {args.rounds} rounds each")
    print(f"{'policy':<13}{'queued':>8}{'running':>9}{'started':>9}{'median ms':>11}{'p99 ms':>9}")
    for policy, backfill_max in (("EASY", 1), ("conservative", None)):
        for queue_length in QUEUE_LENGTHS:
            rounds = args.rounds if queue_length < 5_000 else max(5, args.rounds // 5)
            times, nb_running, started = round_times(backfill_max, queue_length, rounds, args.seed)
            print(f"{policy:<13}{queue_length:>8}{nb_running:>9}{started:>9}"
                  f"{np.median(times):>11.2f}{np.percentile(times, 99):>9.2f}")


if __name__ == "__main__":
    main()
