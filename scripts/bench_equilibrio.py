"""Decision time of one EquilibrIO invocation with 1,000 queued jobs.

Not a test: prints the median and 99th-percentile wall time of
``Equilibrio.schedule()`` (tracker initialisation, the admission loop with
its weighted priorities recomputed after every admission, the backfill
pass) on Theta scaled down 4x (1,098 nodes), for each backfill rule and a
few alphas.

Each round starts from the same state: the machine about 90 % busy with
running jobs (so about 110 nodes free), and a queue of jobs of 1-256 nodes
(mostly small), walltimes 10 min-24 h, with the I/O fields of
``workloads/equilibrio.py`` (4 % high-intensity). Alpha 0 ranks by arrival;
the others reorder, and then more of the small jobs fit and are admitted.

    .venv/bin/python scripts/bench_equilibrio.py [--queued N] [--rounds N] [--seed S]
"""
from __future__ import annotations

import argparse
import time

from batsim.batsim import Job
from bench_inputs import NB_HOSTS, NOW, FakeBatsim, machine_state, random_size_and_walltime
import numpy as np

from batio.schedulers.backfill import time_limit
from batio.schedulers.equilibrio.equilibrio import Equilibrio


def random_job(rng, name, submit_time):
    nb_hosts, walltime = random_size_and_walltime(rng)
    if rng.random() < 0.04:
        share, bw = rng.uniform(0.1, 0.3), rng.uniform(8, 12)
    else:
        share, bw = np.exp(rng.uniform(np.log(0.005), np.log(0.2))), np.exp(rng.uniform(np.log(0.2), np.log(8)))
    return Job(f"w0!{name}", submit_time, walltime, nb_hosts, "p",
               {"id": f"w0!{name}", "io_walltime_share": float(share), "average_bw": float(bw)})




def round_times(options, queued, rounds, seed):
    rng = np.random.default_rng(seed)
    running, waiting = machine_state(rng, queued, random_job)
    durations, started = [], 0
    for _ in range(rounds):
        sched = Equilibrio(options)
        sched.bs = FakeBatsim(NOW)
        sched.onSimulationBegins()
        for job in waiting:
            sched.add_job_to_workload_io_intensity(job)
        for job, start in running:
            sched.add_job_to_workload_io_intensity(job)
            sched.add_job_to_system_io_intensity(job)
            sched.reservations[job.id] = start + time_limit(job)
            sched.mark_running(job, job.allocation, start)
        sched.waiting = list(waiting)
        begin = time.perf_counter()
        sched.schedule()
        durations.append(time.perf_counter() - begin)
        started = sched.bs.started
    return np.array(durations) * 1e3, len(running), started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queued", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{NB_HOSTS} hosts, {args.queued} queued jobs, {args.rounds} rounds each")
    print(f"{'backfill':<14}{'alpha':>6}{'running':>9}{'started':>9}{'median ms':>11}{'p99 ms':>9}")
    for backfill in ("poster", "easy", "conservative"):
        for alpha in (0.0, 0.5, 1.0):
            times, nb_running, started = round_times({"alpha": alpha, "backfill": backfill}, args.queued,
                                                     args.rounds, args.seed)
            print(f"{backfill:<14}{alpha:>6.1f}{nb_running:>9}{started:>9}"
                  f"{np.median(times):>11.2f}{np.percentile(times, 99):>9.2f}")


if __name__ == "__main__":
    main()
