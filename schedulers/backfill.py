"""Slurm's backfill scheduler (paper 000, Section II-A, Algorithm 1).

Design notes (the model, its sources, the choices made): this folder's README.md, section backfill.py.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
import math
from typing import Any, Protocol, TypeVar

from batsim.batsim import BatsimScheduler, Job
from procset import ProcSet

from batio.schedulers.jobio import job_storage_mapping
from batio.schedulers.options import Declared, Option
from batio.schedulers.reservation import ReservationTracker, RunningJob, Slot
from batio.schedulers.running import RunningJobsTracker


def time_limit(job: Job) -> float:
    """L_j: the job's walltime; Batsim's -1 (or any non-positive value, which
    bounds nothing) means no walltime, i.e. infinite."""
    walltime = job.requested_time
    return math.inf if walltime is None or walltime <= 0 else float(walltime)


def job_id_key(job_id: str) -> tuple:
    """Job ids (``workload!name``) in natural order: ``w!2`` before ``w!10``."""
    workload, _, name = job_id.rpartition("!")
    return (workload, int(name), "") if name.isdigit() else (workload, math.inf, name)


QUEUE_ORDERS: dict[str, Callable[[Job], tuple]] = {
    "fcfs": lambda job: (job.submit_time, job_id_key(job.id)),
    "sjf": lambda job: (time_limit(job), job.submit_time, job_id_key(job.id)),
    "ljf": lambda job: (-time_limit(job), job.submit_time, job_id_key(job.id)),
}


def as_running(job: Job, hosts: ProcSet, start: float) -> RunningJob:
    """A job started on ``hosts`` at ``start`` as the running jobs' tracker
    holds it: its hosts, for its time limit."""
    return RunningJob(job.id, start, hosts, time_limit(job))


class KeyCache(dict):
    """job -> key(job), computed on first use."""

    def __init__(self, key: Callable[[Job], tuple]):
        super().__init__()
        self.key = key

    def __missing__(self, job: Job) -> tuple:
        value = self[job] = self.key(job)
        return value


@dataclass
class RoundPlan:
    """What one round decided: jobs to start now on their hosts, and the
    reservations made for delayed jobs."""

    started: list[tuple[Job, ProcSet]] = field(default_factory=list)
    reserved: list[tuple[Job, Slot]] = field(default_factory=list)


Need = TypeVar("Need")
Need_contra = TypeVar("Need_contra", contravariant=True)


class Capacity(Protocol[Need_contra]):
    """What ``backfill`` asks of its tracker: ``ReservationTracker``, a
    policy's tracker that adds a resource to it (``AdaptiveTracker``,
    ``HostsAndDemand``), or one whose hosts are nodes shared core by core
    (the locality policies' ``Placement``). ``Need_contra`` is the type of a
    job's need, what the policy's ``r(j)`` returns: ``{resource: rate}``
    for a ``ReservationTracker``, a demand curve for ``HostsAndDemand``..."""

    def earliest_start(self, nb_hosts: int, duration: float, need: Need_contra, /,
                       after: float, latest: float | None = None) -> Slot | None:
        """The earliest slot from ``after`` (no later than ``latest``, if
        given) where ``nb_hosts`` hosts and ``need`` fit for ``duration``."""

    def reserve(self, key: str, slot: Slot, duration: float, need: Need_contra, /) -> None:
        """Book ``slot`` (just returned by ``earliest_start``) for job ``key``."""


class RoundTracker(Capacity[Mapping[str, float]], Protocol):
    """What ``Backfill``'s round plans on, as its hook
    ``initialize_reservation_tracker`` returns it: a ``Capacity`` for the
    needs of its hook ``bandwidth_need``, that counts the hosts free at a
    time (a ``ReservationTracker``, or a policy's tracker built on one)."""

    def free_host_count(self, at: float) -> int:
        """How many hosts no reservation holds at ``at``."""


def backfill(RT: Capacity[Need], Q: Iterable[Job], t_now: float, backfill_max: float,
             L: Callable[[Job], float],
             r: Callable[[Job], Need],
             eligible: Callable[[Job], bool] | None = None,
             on_start: Callable[[Job, ProcSet], None] | None = None,
             first_fit: bool = False, full: Callable[[], bool] | None = None) -> RoundPlan:
    """Algorithm 1, lines 3-14, on an initialised tracker ``RT`` and the
    sorted waiting queue ``Q``; ``L(j)`` is the time limit and ``r(j)`` the
    bandwidth need of job j. Mutates ``RT``.

    For policies built on it: ``eligible(j)`` false skips j this round
    (line 11) before any search; ``on_start(j, hosts)`` follows each start
    before the next job is taken from ``Q`` (which may be an iterable that
    ranks the jobs left again); ``first_fit`` reads BackfillMax = 0 as
    Algorithm 1 does literally: past a job that cannot start, later jobs
    that fit still start (where FCFS stops); ``full()``, true when no
    later job of ``Q`` could start now (no host free, and every job needs
    one), ends the round once BackfillMax reservations are made: looking at
    each job left would cost the whole queue in every round."""
    plan = RoundPlan()
    backfill_count = 0
    for j in Q:
        if full is not None and backfill_count >= backfill_max and full():
            break
        if eligible is not None and not eligible(j):
            continue
        L_j, r_j = L(j), r(j)
        # Once BackfillMax reservations are made, only "can j start now?"
        # matters: searching further would be wasted time.
        latest = t_now if backfill_count >= backfill_max else None
        slot = RT.earliest_start(j.requested_resources, L_j, r_j, after=t_now, latest=latest)
        if slot is not None and slot.start == t_now:
            RT.reserve(j.id, slot, L_j, r_j)
            plan.started.append((j, slot.hosts))
            if on_start is not None:
                on_start(j, slot.hosts)
        elif backfill_max == 0 and not first_fit:
            break
        elif slot is not None and backfill_count < backfill_max:
            RT.reserve(j.id, slot, L_j, r_j)
            plan.reserved.append((j, slot))
            backfill_count += 1
        # Otherwise skip j until the next round (line 11); a job that can
        # never fit (slot is None) gets no reservation and uses no count.
    return plan


class QueueScheduler(Declared, BatsimScheduler):
    """The pybatsim glue batio's policies share: a waiting queue, the running
    jobs (id -> (job, start time)), and one ``schedule`` round per Batsim
    message in which something changed. Jobs asking for more hosts than the
    platform's compute hosts are rejected at submission; storage hosts never
    run jobs.

    A policy whose running jobs hold their hosts alone, for their time limit,
    sets ``holds_hosts_only``: ``running_tracker`` then keeps them across
    rounds, so a round starts from ``running_tracker.at(now)`` instead of
    rebuilding the tracker from every running job."""

    holds_hosts_only = False

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        # Parsed once for the whole class hierarchy: every level reads ``settings``.
        self.settings: dict[str, Any] = self.parse_settings(options)
        self.waiting: list[Job] = []
        self.running: dict[str, tuple[Job, float]] = {}
        self.running_tracker: RunningJobsTracker | None = None
        self.needs_round = False
        self.last_plan = RoundPlan()

    def schedule(self) -> RoundPlan | None:
        """One round: what starts now (a ``RoundPlan``; None for a policy
        that starts its jobs itself)."""
        raise NotImplementedError

    def storage_mapping(self, job: Job) -> dict[str, int]:
        """EXECUTE_JOB's storage_mapping (see ``batio.schedulers.jobio``)."""
        return job_storage_mapping(job, self.bs)

    def start(self, plan: RoundPlan, now: float, planned_on: RoundTracker | None = None) -> None:
        """Execute the jobs a round decided to start now. ``planned_on``, the
        tracker the round planned on, lets the running jobs' tracker take its
        bookings of these starts over rather than book them again, when it is
        that tracker's ``running_tracker_at`` (``RunningJobsTracker.take_over``)."""
        tracker = self.running_tracker
        if (tracker is not None and isinstance(planned_on, ReservationTracker) and plan.started
                and tracker.take_over(planned_on, [as_running(job, hosts, now) for job, hosts in plan.started])):
            for job, hosts in plan.started:
                self.note_running(job, hosts, now)
        else:
            for job, hosts in plan.started:
                self.mark_running(job, hosts, now)
        self.execute(plan)

    def execute(self, plan: RoundPlan) -> None:
        """EXECUTE_JOB, with their storage mapping, for the jobs of ``plan``
        (already marked running: a policy may mark them as it decides); they
        leave the waiting queue."""
        for job, _ in plan.started:
            mapping = self.storage_mapping(job)
            if mapping:
                job.storage_mapping = mapping
        if plan.started:
            started = {job.id for job, _ in plan.started}
            head = len(started)
            if all(job.id in started for job in self.waiting[:head]):  # FCFS starts the queue's head
                del self.waiting[:head]
            else:  # in place: what remains of a queue in order stays in order
                self.waiting[:] = [job for job in self.waiting if job.id not in started]
            self.bs.execute_jobs([job for job, _ in plan.started])
        self.last_plan = plan

    def mark_running(self, job: Job, hosts: ProcSet, start: float) -> None:
        """``job`` runs on ``hosts`` since ``start``."""
        self.note_running(job, hosts, start)
        if self.running_tracker is not None:
            self.running_tracker.start(as_running(job, hosts, start))

    def note_running(self, job: Job, hosts: ProcSet, start: float) -> None:
        """``job`` runs on ``hosts`` since ``start``, as the running jobs'
        tracker already knows."""
        job.allocation = hosts
        self.running[job.id] = (job, start)

    def running_tracker_at(self, now: float) -> ReservationTracker:
        """The running jobs' reservation tracker at origin ``now``."""
        tracker = self.running_tracker
        if tracker is None or len(tracker) != len(self.running):  # cheap guard against a bypassed mark_running
            raise RuntimeError(f"{type(self).__name__}: {len(self.running)} running jobs, "
                               f"{len(tracker or ())} tracked: add running jobs with mark_running")
        return tracker.at(now)

    def job_left(self, job: Job) -> None:
        """A running job completed or was killed."""
        if self.running.pop(job.id, None) is not None and self.running_tracker is not None:
            self.running_tracker.end(job.id)

    def onSimulationBegins(self) -> None:
        self.hosts = ProcSet(*self.bs.compute_resources)
        if self.holds_hosts_only:
            self.running_tracker = RunningJobsTracker(self.hosts, self.bs.time())

    def onJobSubmission(self, job: Job) -> None:
        if job.requested_resources > len(self.hosts):
            self.bs.reject_jobs([job])
            return
        self.waiting.append(job)
        self.needs_round = True

    def onJobCompletion(self, job: Job) -> None:
        self.job_left(job)
        self.needs_round = True

    def onJobsKilled(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.job_left(job)
        self.needs_round = True

    def onRequestedCall(self) -> None:
        self.needs_round = True

    def onNoMoreEvents(self) -> None:
        if self.needs_round:
            self.needs_round = False
            self.schedule()


class Backfill(QueueScheduler):
    PAPER = "paper 000 (Slurm's backfill), Section II-A, Algorithm 1"
    OPTIONS = {
        "backfill_max": Option(int, math.inf, minimum=0,
                               aliases={None: math.inf, "inf": math.inf},
                               help="reservations per round: 0 FCFS, 1 EASY, unbounded conservative"),
        "order": Option(str, "fcfs", choices=tuple(QUEUE_ORDERS),
                        help="queue order: by submission, or shortest / longest walltime first"),
    }

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        self.backfill_max = self.settings["backfill_max"]
        self.order = self.settings["order"]
        # When the order is a function of the job alone (this class's
        # priority_key), each job's key is computed once: sorting the queue
        # every round then costs no Python call per waiting job.
        self.static_order = type(self).priority_key is Backfill.priority_key
        self.queue_keys = KeyCache(QUEUE_ORDERS[self.order])
        # Jobs mostly arrive in queue order (FCFS always, but for ties): while
        # they do, the waiting queue is Q as it stands, and a round costs no
        # work per waiting job (sorting it cost O(queue) per round). Checked
        # at each submission; a queue set from outside is checked once.
        self.waiting_in_order = True
        self.checked_queue = self.waiting
        # Waiting jobs asking for no host (Batsim accepts res = 0): they can
        # start on a full machine, so a round may stop early only without them.
        self.hostless: set[str] = set()
        # Unless a policy changes what running jobs hold (this class's hooks:
        # hosts alone, for their walltime), they are kept across rounds.
        self.holds_hosts_only = all(getattr(type(self), hook) is getattr(Backfill, hook) for hook in (
            "running_jobs", "bandwidth_need", "bandwidth_limits", "initialize_reservation_tracker",
            "reservation_tracker"))

    def job_left(self, job: Job) -> None:
        super().job_left(job)
        self.queue_keys.pop(job, None)

    stops_when_full = True
    """Whether a round ends once BackfillMax reservations are made and no host
    is free (``backfill``'s ``full``); false only for a reference."""

    def onJobSubmission(self, job: Job) -> None:
        super().onJobSubmission(job)
        if job.requested_resources == 0 and self.waiting and self.waiting[-1] is job:
            self.hostless.add(job.id)
        queued = self.waiting[-2:]
        if (self.static_order and len(queued) == 2 and queued[1] is job
                and self.queue_keys[job] < self.queue_keys[queued[0]]):
            self.waiting_in_order = False

    # -- policy hooks ----------------------------------------------------

    def priority_key(self, job: Job, now: float) -> tuple:
        """Sort key of the waiting queue, lowest first (Algorithm 1, line 2)."""
        return QUEUE_ORDERS[self.order](job)

    def bandwidth_need(self, job: Job, now: float) -> Mapping[str, float]:
        """r_j for each bandwidth resource the job must reserve; none here."""
        return {}

    def bandwidth_limits(self, now: float) -> Mapping[str, float]:
        """The limit of each bandwidth-type resource; none here."""
        return {}

    def planned_duration(self, job: Job) -> float:
        """L_j of Algorithm 1: how long a delayed job's reservation lasts."""
        return time_limit(job)

    def running_jobs(self, now: float) -> list[RunningJob]:
        """Algorithm 1's R as the tracker sees it: each running job holds its
        hosts and bandwidth need for its time limit."""
        return [RunningJob(job.id, start, job.allocation, time_limit(job),
                           bandwidth=self.bandwidth_need(job, now))
                for job, start in self.running.values()]

    def initialize_reservation_tracker(self, now: float) -> RoundTracker:
        """InitializeReservationTracker (Algorithm 1, line 1): what the round
        plans on; by default ``reservation_tracker``."""
        return self.reservation_tracker(now)

    def reservation_tracker(self, now: float) -> ReservationTracker:
        """The hosts and bandwidth limits with what ``running_jobs`` hold,
        from ``now``: Algorithm 1's tracker, or the base of a policy's own."""
        if self.running_tracker is not None:
            return self.running_tracker_at(now)
        return ReservationTracker.from_running(
            self.hosts, self.bandwidth_limits(now), self.running_jobs(now), now)

    # -- one round -------------------------------------------------------

    def schedule(self) -> RoundPlan:
        now = self.bs.time()
        RT = self.initialize_reservation_tracker(now)
        if self.waiting is not self.checked_queue:  # a queue set from outside: checked once
            self.hostless = {job.id for job in self.waiting if job.requested_resources == 0}
            if self.static_order:
                keys = [self.queue_keys[job] for job in self.waiting]
                self.waiting_in_order = all(a <= b for a, b in zip(keys, keys[1:]))
            self.checked_queue = self.waiting
        if self.static_order and self.waiting_in_order:
            Q = self.waiting
        elif self.static_order:
            Q = sorted(self.waiting, key=self.queue_keys.__getitem__)
        else:
            Q = sorted(self.waiting, key=lambda job: self.priority_key(job, now))
        plan = backfill(RT, Q, now, self.backfill_max, self.planned_duration,
                        lambda job: self.bandwidth_need(job, now),
                        full=(lambda: RT.free_host_count(now) == 0)
                        if self.stops_when_full and not self.hostless else None)
        if self.hostless:
            self.hostless.difference_update(job.id for job, _ in plan.started)
        self.start(plan, now, RT)
        if not self.waiting:
            self.waiting_in_order = True
        return plan
