"""CATIOS: Contention-Avoiding Temporal I/O-aware job Scheduling (seed 002,
Tseng, Kawai, Takahashi, Takizawa; poster "CATIOS: Time-Resolved I/O-Aware
Job Scheduling for HPC Systems").

Design notes (the model, its sources, the choices made): this folder's README.md, section catios.py.
"""
from __future__ import annotations

from collections.abc import Mapping
import logging
import math

from batsim.batsim import Job
import numpy as np

from batio.schedulers.backfill import QUEUE_ORDERS, QueueScheduler, RoundPlan, backfill, time_limit
from batio.schedulers.catios.demandload import DemandLoad, clip
from batio.schedulers.catios.iodemand import command_of, demand_of
from batio.schedulers.catios.matcher import BACKENDS, CommandMatcher
from batio.schedulers.options import Option, OptionError
from batio.schedulers.reservation import ReservationTracker, Slot

log = logging.getLogger(__name__)

DEMAND_OPTIONS = {
    "bandwidth": Option(float, None, minimum=0.0, aliases={None: None},
                        unit="bytes/s", help="storage bandwidth B, > 0; default: the platform "
                             "storage host's 'bandwidth' property"),
    "demand": Option(str, "predicted", choices=("predicted", "oracle"),
                     help="each job's per-second demand D: predicted from its command line, or its true one"),
    "history": Option(str, None, aliases={None: None},
                      help="for demand predicted: the history workload (file or bundled name)"),
    "matcher_backend": Option(str, "auto", choices=BACKENDS, help="how command lines are matched"),
}


class DemandAware(QueueScheduler):
    """What CATIOS and TIOAS share: the storage bandwidth B and each job's
    per-second demand D, predicted from its command line or read from its
    workload (``demand``)."""

    OPTIONS = DEMAND_OPTIONS

    @classmethod
    def requirements(cls, settings):
        """B from one storage host's property; D predicted from each job's ``command`` or the oracle's ``io_demand``."""
        fields = ("io_demand",) if settings["demand"] == "oracle" else ("command",)
        return {"storage": True, "io": True, "storage_property": ("bandwidth",), "job_fields": fields}

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        name = type(self).__name__
        settings = self.settings
        if settings["bandwidth"] is not None and not settings["bandwidth"] > 0:
            raise OptionError(f"{name}: option 'bandwidth' = {settings['bandwidth']} is not allowed: "
                              "expected a number > 0 (bytes/s)")
        self.B: float  # the option's, else the platform's: known once the simulation begins
        self.matcher = None
        if settings["demand"] == "predicted":
            if settings["history"] is None:
                raise OptionError(f"{name}: option 'history' is required with demand \"predicted\": "
                                  "the workload of past jobs the matcher predicts from")
            self.matcher = CommandMatcher.from_workload(settings["history"],
                                                        backend=settings["matcher_backend"])
        self.demands: dict[str, np.ndarray | None] = {}  # job id -> D (None: no prediction)
        self.nb_jobs = 0
        self.unpredicted: list[str] = []

    # -- B and D ---------------------------------------------------------

    def platform_bandwidth(self) -> float:
        """B from the storage host's ``bandwidth`` property (bytes/s)."""
        name = type(self).__name__
        given = [(resource.get("name", resource_id), (resource.get("properties") or {}).get("bandwidth"))
                 for resource_id, resource in self.bs.storage_resources.items()]
        carriers = [(host, value) for host, value in given if value is not None]
        if len(carriers) != 1:
            found = f"{len(carriers)} storage hosts have one" if carriers else "no storage host has one"
            raise OptionError(f"{name}: option 'bandwidth' (B, bytes/s) is required: the platform must give "
                              f"exactly one storage host a 'bandwidth' property, and {found}")
        host, value = carriers[0]
        try:
            bandwidth = float(value)
        except ValueError:
            bandwidth = math.nan
        if not bandwidth > 0 or not math.isfinite(bandwidth):
            raise OptionError(f"{name}: the platform's storage host {host!r} has bandwidth = {value!r}: "
                              "expected a number > 0 (bytes/s); or give option 'bandwidth'")
        return bandwidth

    def demand(self, job: Job) -> np.ndarray | None:
        """The job's D as the scheduler knows it; None: no prediction."""
        return self.demands[job.id]

    def runtime_estimate(self, job: Job) -> float:
        """n, the length of the job's D; its walltime without one."""
        demand = self.demands.get(job.id)
        return float(len(demand)) if demand is not None else time_limit(job)

    def _find_demand(self, job: Job) -> np.ndarray | None:
        source = f"workload {job.workload}"
        if self.matcher is None:
            return demand_of(job, source)
        predicted = self.matcher.predict(command_of(job, source), job.requested_resources)
        if predicted is None:
            self.unpredicted.append(job.id)
            log.warning("%s: no similar history for job %s (%d nodes): planned with no I/O demand, "
                        "runtime = walltime", type(self).__name__, job.id, job.requested_resources)
            return None
        return np.asarray(predicted, dtype=float)

    # -- pybatsim glue ---------------------------------------------------

    def onSimulationBegins(self):
        super().onSimulationBegins()
        given = self.settings["bandwidth"]
        self.B = given if given is not None else self.platform_bandwidth()

    def onJobSubmission(self, job):
        super().onJobSubmission(job)
        if self.waiting and self.waiting[-1] is job:  # not rejected
            self.nb_jobs += 1
            self.demands[job.id] = self._find_demand(job)

    def job_left(self, job: Job) -> None:
        super().job_left(job)
        self.demands.pop(job.id, None)

    def onSimulationEnds(self):
        if self.matcher is not None:
            log.warning("%s: %d of %d jobs had no prediction (planned with no I/O demand)",
                        type(self).__name__, len(self.unpredicted), self.nb_jobs)


def planned(job_id: str) -> tuple:
    """Key of a reserved (not started) job's demand in ``load``."""
    return ("planned", job_id)


class Catios(DemandAware):
    holds_hosts_only = True  # running jobs hold hosts for their walltime; I/O is in `load`
    PAPER = ("seed 002 (Tseng, Kawai, Takahashi, Takizawa), poster \"CATIOS\": \"The Design of CATIOS\", "
             "\"Queue action\"")

    OPTIONS = {
        "priority": Option(str, "fcfs", choices=("fcfs", "ljf", "mix"),
                           help="queue order: submission, longest runtime first, or Mix's weighted priority"),
        "alpha": Option(float, 0.95, minimum=0.0, help="Mix: weight of norm_wait"),
        "beta": Option(float, 0.05, minimum=0.0, help="Mix: weight of norm_runtime"),
        "priority_period": Option(float, 30.0, minimum=0.0,
                                  unit="s", help="time between rounds while jobs wait, > 0"),
        "clip": Option(float, 0.75, minimum=0.0, maximum=1.0,
                       help="each D[i] is clipped to clip x B, in (0, 1]"),
        "reserve_first": Option(bool, True, help="reserve hosts and I/O for the first deferred job"),
    }

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        name = type(self).__name__
        settings = self.settings
        for key in ("priority_period", "clip"):
            if not settings[key] > 0:
                raise OptionError(f"{name}: option {key!r} = {settings[key]} is not allowed: expected a number > 0")
        self.priority = settings["priority"]
        self.alpha, self.beta = settings["alpha"], settings["beta"]
        self.priority_period = settings["priority_period"]
        self.clip = settings["clip"]
        self.reserve_first = settings["reserve_first"]
        self.load = DemandLoad()
        self.clipped: dict[str, np.ndarray] = {}  # job id -> D clipped to clip x B
        self.calls: set[float] = set()  # CALL_ME_LATER times not yet answered

    # -- the poster's names ----------------------------------------------

    def D(self, job: Job) -> np.ndarray:
        """The job's demand as planned: D clipped to clip·B (no prediction: none)."""
        demand = self.clipped.get(job.id)
        if demand is None:
            known = self.demand(job)
            demand = self.clipped[job.id] = np.zeros(0) if known is None else clip(known, self.B, self.clip)
        return demand

    def prioritised(self, now: float) -> list[Job]:
        """Configurable scheduling policy: the waiting queue, highest priority first."""
        if self.priority == "fcfs":
            return sorted(self.waiting, key=QUEUE_ORDERS["fcfs"])
        runtime = [self.runtime_estimate(job) for job in self.waiting]
        if self.priority == "ljf":
            P = [-value for value in runtime]
        else:
            wait = [now - job.submit_time for job in self.waiting]
            P = [-(self.alpha * w + self.beta * r)
                 for w, r in zip(normalised(wait), normalised(runtime))]
        order = sorted(range(len(self.waiting)),
                       key=lambda i: (P[i], QUEUE_ORDERS["fcfs"](self.waiting[i])))
        return [self.waiting[i] for i in order]

    # -- one round -------------------------------------------------------

    def schedule(self) -> RoundPlan:
        """The queue action: in priority order, start each job that passes
        the resource availability check now, else defer it; with
        ``reserve_first``, the first deferred job gets a reservation
        (BackfillMax 1), without, the poster's greedy pass goes on past it
        (BackfillMax 0, first fit)."""
        now = self.bs.time()
        self.load.advance(now)
        RT = self.running_tracker_at(now)
        plan = backfill(HostsAndDemand(RT, self.load, self.B), self.prioritised(now), now,
                        1 if self.reserve_first else 0, time_limit, self.D, first_fit=True)
        for j, _ in plan.reserved:  # replanned next round
            self.load.remove(planned(j.id))
        self.start(plan, now, RT)
        self.call_back(now, plan)
        return plan

    def call_back(self, now: float, plan: RoundPlan) -> None:
        """While jobs wait, ask for the next round within priority_period
        seconds, or when the first deferred job's reservation begins."""
        if not self.waiting:
            return
        at = now + self.priority_period
        for _, slot in plan.reserved:
            if now < slot.start < at:
                at = slot.start
        if not any(now < pending <= at for pending in self.calls):
            self.calls.add(at)
            self.bs.wake_me_up_at(at)

    # -- pybatsim glue ---------------------------------------------------

    def onRequestedCall(self):
        now = self.bs.time()
        self.calls = {pending for pending in self.calls if pending > now}
        super().onRequestedCall()

    def job_left(self, job: Job) -> None:
        super().job_left(job)
        self.clipped.pop(job.id, None)
        if job.id in self.load:
            self.load.remove(job.id, at=self.bs.time())


class HostsAndDemand:
    """The resource availability check (poster, "Time-resolved I/O
    simulation") as ``backfill`` sees one tracker: the hosts of the running
    jobs' tracker ``RT`` over the walltime, and A[t] = load[t] + D[t - t0]
    <= B over the window of D; a request's need is its D. A job that starts
    adds its D to ``load`` under its id, a reserved one under
    ``planned(id)``."""

    def __init__(self, RT: ReservationTracker, load: DemandLoad, B: float):
        self.RT, self.load, self.B = RT, load, B

    def earliest_start(self, nb_hosts: int, duration: float, D: np.ndarray,
                       after: float, latest: float | None = None) -> Slot | None:
        """The earliest start from ``after`` where both hold (None if none
        by ``latest``), alternating between the two checks until they agree
        (as paper 000's Algorithm 4 does between nodes and bandwidth)."""
        RT, t = self.RT, after
        if latest is not None and latest <= t:
            # Can it start now? The I/O check goes before the search for
            # hosts: it refuses most candidates on a busy file system, and
            # costs less.
            if RT.free_host_count(t) >= nb_hosts and self.load.fits(D, t, self.B):
                return RT.earliest_start(nb_hosts, duration, after=t, latest=t)
            return None
        while True:
            slot = RT.earliest_start(nb_hosts, duration, after=t)
            if slot is None:
                return None
            t = self.load.earliest_fit(D, slot.start, self.B)
            if t == slot.start:
                return slot if latest is None or t <= latest else None
            if t == math.inf:
                return None

    def reserve(self, key: str, slot: Slot, duration: float, D: np.ndarray) -> None:
        self.RT.reserve(key, slot, duration)
        self.load.add(key if slot.start == self.RT.origin else planned(key), D, slot.start)


def normalised(values: list[float]) -> list[float]:
    """Each value over the largest (0 when all are 0); an infinite value
    (a job without walltime or prediction) counts as 1 and the rest as 0."""
    largest = max(values, default=0.0)
    if largest == math.inf:
        return [1.0 if value == math.inf else 0.0 for value in values]
    return [value / largest if largest > 0 else 0.0 for value in values]
