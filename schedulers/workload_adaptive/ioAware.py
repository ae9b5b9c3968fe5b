"""I/O-aware backfill scheduling (paper 000, Section VI, Algorithms 2-4).

Design notes (the model, its sources, the choices made): this folder's README.md, section ioAware.py.
"""
from __future__ import annotations

from collections.abc import Mapping
import logging

from batsim.batsim import Job
from procset import ProcSet

from batio.schedulers.backfill import Backfill, time_limit
from batio.schedulers.jobio import delay_seconds
from batio.schedulers.options import Option, OptionError
from batio.schedulers.reservation import RunningJob
from batio.schedulers.workload_adaptive.estimator import (
    DEFAULT_DECAY,
    MODES,
    Estimate,
    Estimator,
    EstimatorError,
    job_bytes,
    job_key,
    stated_estimate,
)

log = logging.getLogger(__name__)

GIB = 2.0 ** 30
LUSTRE = "lustre"
"""Name of the file-system throughput resource in the reservation tracker."""
R_NOW_KEY = "R_now"
"""Key of Algorithm 2's line-8 reservation in the tracker."""


class IoAware(Backfill):
    PAPER = "paper 000 (I/O-aware backfill), Section VI, Algorithms 2-4"
    # R_limit's default describes Stria's file system (its bundled platform): elsewhere the input gives it.
    REQUIRES = {"storage": True, "io": True, "options": ("limit",)}
    OPTIONS = {
        "limit": Option(float, 20.0, minimum=0.0, unit="GiB/s",
                        help="R_limit, the file-system throughput the reservations may not exceed, > 0"),
        "estimator": Option(str, "untrained", choices=MODES,
                            help="how a job's throughput r_j is estimated: from what similar jobs achieved"),
        "history": Option(object, None, help="for estimator pretrained: a history file path or "
                                             "{app: {\"rate\": bytes/s, \"runtime\": s}}"),
        "decay": Option(float, DEFAULT_DECAY, minimum=0.0, maximum=1.0,
                        help="weight of the previous history at each completion"),
    }

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        name = type(self).__name__
        settings = self.settings
        if not settings["limit"] > 0:
            raise OptionError(f"{name}: option 'limit' = {settings['limit']} is not allowed: "
                              "expected a number > 0 (GiB/s)")
        self.R_limit = settings["limit"] * GIB
        try:
            self.estimator = Estimator.from_options(settings["estimator"], settings["history"],
                                                    settings["decay"])
        except EstimatorError as error:
            raise OptionError(f"{name}: {error}") from None
        self.keys: dict[str, str] = {}  # job id -> its similarity key
        self.estimates: dict[str, Estimate] = {}  # job id -> its estimate, until the history changes
        self.stated: dict[str, Estimate | None] = {}  # job id -> the estimate its own fields give
        self.pretrained = settings["estimator"] == "pretrained"
        self.unknown: set[str] = set()  # job types without history, reported once

    # -- estimates -------------------------------------------------------

    def estimate(self, job: Job) -> Estimate:
        """r_j (bytes/s) and d_j (s) of ``job`` now (Algorithm 2 line 1,
        Algorithm 5 line 1)."""
        estimate = self.estimates.get(job.id)
        if estimate is None:
            key = self.keys.get(job.id)
            if key is None:
                key = self.keys[job.id] = job_key(job)
            estimate = self.estimates[job.id] = self.estimator.estimate(key, time_limit(job), self.stated_estimate(job))
        return estimate

    def stated_estimate(self, job: Job) -> Estimate | None:
        """r_j and d_j from ``job``'s own I/O fields, used where its type has
        no history (README.md, "A job's own I/O"); None without them."""
        if job.id not in self.stated:
            profiles = self.bs.profiles[job.workload]
            self.stated[job.id] = stated_estimate(job.json_dict or {}, delay_seconds(profiles[job.profile], profiles),
                                                  time_limit(job))
        return self.stated[job.id]

    def measured_throughput(self, now: float) -> float | None:
        """R_now in bytes/s, or None when not measured (always, under Batsim:
        see README.md)."""
        return None

    # -- Backfill hooks --------------------------------------------------

    def bandwidth_limits(self, now: float) -> Mapping[str, float]:
        return {LUSTRE: self.R_limit}

    def bandwidth_need(self, job: Job, now: float) -> Mapping[str, float]:
        """What a queued job reserves (Algorithm 3 line 2): r_j, capped at
        R_limit; nothing when r_j = 0."""
        r_j = self.estimate(job).rate
        return {LUSTRE: min(r_j, self.R_limit)} if r_j > 0 else {}

    def running_jobs(self, now: float) -> list[RunningJob]:
        """Algorithm 2, lines 3-8: running jobs with their hosts and full r_j
        over [b_j, b_j + L_j), plus the unexplained measured throughput.
        ``Backfill.reservation_tracker`` builds Algorithm 2's
        tracker from them (it holds both NT and LT)."""
        running = []
        for job, b_j in self.running.values():
            r_j = self.estimate(job).rate
            running.append(RunningJob(job.id, b_j, job.allocation, time_limit(job),
                                      bandwidth={LUSTRE: r_j} if r_j > 0 else {}))
        # Lines 7-8.
        R_now = self.measured_throughput(now)
        sum_r = sum(job.bandwidth.get(LUSTRE, 0.0) for job in running)
        if R_now is not None and running and sum_r < R_now:
            until = max(job.start + job.walltime for job in running)
            if until > now:
                running.append(RunningJob(R_NOW_KEY, now, ProcSet(), until - now,
                                          bandwidth={LUSTRE: R_now - sum_r}))
        return running

    # -- pybatsim glue ---------------------------------------------------

    def onJobSubmission(self, job):
        key = self.keys[job.id] = job_key(job)  # a bad 'app' field stops the run here
        stated = self.stated_estimate(job)  # so do bad I/O fields
        if self.pretrained and stated is None and not self.estimator.knows(key) and key not in self.unknown:
            self.unknown.add(key)
            log.warning("%s: no history for job type %r (job %s): estimated at r = 0 and d = walltime "
                        "until one completes", type(self).__name__, key, job.id)
        super().onJobSubmission(job)
        if job.requested_resources > len(self.hosts):  # rejected
            del self.keys[job.id]
            del self.stated[job.id]

    def onJobCompletion(self, job):
        entry = self.running.get(job.id)
        if entry is not None and job.job_state == Job.State.COMPLETED_SUCCESSFULLY:
            _, b_j = entry
            nb_bytes = job_bytes(job, self.bs.profiles[job.workload])
            self.estimator.observe(self.keys.get(job.id) or job_key(job), nb_bytes, b_j, self.bs.time())
            self.estimates.clear()
        self.forget(job)
        super().onJobCompletion(job)

    def onJobsKilled(self, jobs):
        for job in jobs:
            self.forget(job)
        super().onJobsKilled(jobs)

    def forget(self, job: Job) -> None:
        """Drop what is kept about a job that ended."""
        self.keys.pop(job.id, None)
        self.estimates.pop(job.id, None)
        self.stated.pop(job.id, None)
