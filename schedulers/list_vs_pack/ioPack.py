"""I/O-aware pack scheduling of the list-versus-pack study (seed 001:
Jeannot, Pallez, Vidal, IJHPCA 2023), sections "I/O-aware Pack-Scheduling",
"Variants for building packs" and "Backfilling".

Design notes (the model, its sources, the choices made): this folder's README.md, section ioPack.py.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
import random

from batsim.batsim import Job
from procset import ProcSet

from batio.schedulers.backfill import QueueScheduler, RoundPlan, backfill, job_id_key, time_limit
from batio.schedulers.list_vs_pack.ioList import REQUIRES, PeriodicJobInfo, bandwidth_option
from batio.schedulers.options import Option

VARIANTS = ("Random", "Max", "Char")
_TOLERANCE = 1e-9  # relative, for sums of float volumes


@dataclass
class Pack:
    """Jobs started together; ``volume`` (bytes) and ``duration`` (s, the
    longest planned job) give its average bandwidth."""

    jobs: list = field(default_factory=list)
    hosts: int = 0
    volume: float = 0.0
    duration: float = 0.0

    @property
    def average_bandwidth(self) -> float:
        return self.volume / self.duration if self.duration > 0 else 0.0

    def admits(self, hosts: int, volume: float, duration: float, nb_hosts: int, bandwidth: float) -> bool:
        """(i) enough compute hosts; (ii) the average constraint with the job."""
        return (self.hosts + hosts <= nb_hosts
                and self.volume + volume <= bandwidth * max(self.duration, duration) * (1 + _TOLERANCE))

    def add(self, job, hosts: int, volume: float, duration: float) -> None:
        self.jobs.append(job)
        self.hosts += hosts
        self.volume += volume
        self.duration = max(self.duration, duration)


def build_packs(jobs: Sequence, nb_hosts: int, bandwidth: float, hosts: Callable, volume: Callable,
                duration: Callable) -> list[Pack]:
    """First fit of ``jobs`` (already in the variant's order) into packs, in
    the order the packs will run. A job alone in a new pack is always
    accepted (even one whose own average exceeds ``bandwidth``)."""
    packs: list[Pack] = []
    for job in jobs:
        q, v, d = hosts(job), volume(job), duration(job)
        # "To add an application in a pack, we check (i) if there are enough
        # available compute nodes; (ii) if the average pack I/O bandwidth with
        # this additional job is not greater than the total bandwidth. If
        # there are no solutions, we create a new pack to be scheduled after
        # the existing packs." (section "I/O-aware Pack-Scheduling")
        for pack in packs:
            if pack.admits(q, v, d, nb_hosts, bandwidth):
                pack.add(job, q, v, d)
                break
        else:
            pack = Pack()
            pack.add(job, q, v, d)
            packs.append(pack)
    return packs


def random_key(seed: int, job_id: str) -> float:
    """A job's place in the Random order: fixed for a seed and a job."""
    return random.Random(f"{seed}:{job_id}").random()


class IoPack(QueueScheduler):
    holds_hosts_only = True  # running jobs hold their hosts: the free ones are read from the tracker
    PAPER = ("seed 001 (Jeannot, Pallez, Vidal, IJHPCA 2023), sections \"I/O-aware Pack-Scheduling\", "
             "\"Variants for building packs\", \"Backfilling\"")
    REQUIRES = REQUIRES

    OPTIONS = {
        "packs": Option(str, "Max", choices=VARIANTS,
                        aliases={name.lower(): name for name in VARIANTS} | {name.upper(): name for name in VARIANTS},
                        help="how jobs are sorted before building packs"),
        "seed": Option(int, 0, help="seed of the Random order"),
        "backfill": Option(bool, True, help="backfill jobs of later packs into a pack's idle hosts"),
        "bandwidth": bandwidth_option(),
    }

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        settings = self.settings
        self.variant = settings["packs"]
        self.seed = settings["seed"]
        self.backfill_enabled = settings["backfill"]
        self.bandwidth = settings["bandwidth"]
        self.info = PeriodicJobInfo(lambda workload: self.bs.profiles[workload], self.bandwidth)
        self.current_pack: set[str] = set()  # ids of the running pack's own jobs
        self.pack_number = 0
        self.packs: list[Pack] = []  # the plan of the last round, for inspection

    # -- building packs ----------------------------------------------------

    def sort_key(self, job: Job) -> tuple:
        fcfs = (job.submit_time, job_id_key(job.id))
        if self.variant == "Max":
            return (-self.info.duration(job), *fcfs)
        if self.variant == "Char":
            return (-self.info.period(job), *fcfs)
        return (random_key(self.seed, job.id), *fcfs)

    def build(self, jobs: Sequence[Job]) -> list[Pack]:
        return build_packs(sorted(jobs, key=self.sort_key), len(self.hosts), self.bandwidth,
                           lambda job: job.requested_resources, self.info.volume, self.info.duration)

    # -- one round ---------------------------------------------------------

    def schedule(self) -> RoundPlan:
        now = self.bs.time()
        self.packs = self.build(self.waiting)
        plan = RoundPlan()
        if not self.running and self.packs:
            # "The next pack cannot start as long as the last application of
            # the previous pack has not finished" (Introduction): it has; the
            # next pack starts, all its jobs at once (it fits: its hosts are
            # at most the platform's, all free).
            self.pack_number += 1
            pack = self.packs.pop(0)
            self.current_pack = {job.id for job in pack.jobs}
            plan = self.admit(pack.jobs, now, backfilled=False)
        if self.backfill_enabled and self.packs and self.current_pack & set(self.running):
            backfilled = self.fill_idle_hosts(now)
            plan = self.last_plan = RoundPlan(plan.started + backfilled.started)  # the whole round's
        return plan

    def fill_idle_hosts(self, now: float) -> RoundPlan:
        """Fill the running pack's idle hosts with jobs of later packs, in
        pack order (section "Backfilling": "we can see if an application
        fits in the free space"): free hosts now, planned to end before the
        pack, and within the pack's average constraint for the time it has
        left."""
        info = self.info
        pack_end = max(info.predicted_end(job, start, now)
                       for job, start in self.running.values() if job.id in self.current_pack)
        left = pack_end - now
        # The average constraint over what is left of the pack.
        planned_io = sum(info.need(job) * max(0.0, min(info.predicted_end(job, start, now), pack_end) - now)
                         for job, start in self.running.values())
        budget = self.bandwidth * left - planned_io

        def fits_the_pack(job: Job) -> bool:
            return info.duration(job) <= left and info.volume(job) <= budget * (1 + _TOLERANCE)

        def spend(job: Job, hosts) -> None:
            nonlocal budget
            budget -= info.volume(job)

        plan = self.admit([job for pack in self.packs for job in pack.jobs], now, backfilled=True,
                          eligible=fits_the_pack, on_start=spend)
        started = {job.id for job, _ in plan.started}
        for pack in self.packs:
            pack.jobs = [job for job in pack.jobs if job.id not in started]
        self.packs = [pack for pack in self.packs if pack.jobs]
        return plan

    def admit(self, jobs: list[Job], now: float, backfilled: bool,
              eligible: Callable[[Job], bool] | None = None,
              on_start: Callable[[Job, ProcSet], None] | None = None) -> RoundPlan:
        """Start, in order, those of ``jobs`` that are ``eligible`` and fit
        on the free hosts now, each on the lowest-numbered ones (Algorithm 1
        with BackfillMax 0, first fit), marked with their pack."""
        def tag(job: Job, hosts: ProcSet) -> None:
            self.bs.set_job_metadata(job.id, f"pack={self.pack_number};backfilled={int(backfilled)}")
            if on_start is not None:
                on_start(job, hosts)

        RT = self.running_tracker_at(now)
        plan = backfill(RT, jobs, now, 0, time_limit, lambda job: {}, eligible=eligible, on_start=tag,
                        first_fit=True)
        self.start(plan, now, RT)
        return plan

    def job_left(self, job: Job) -> None:
        super().job_left(job)
        self.current_pack.discard(job.id)
