"""I/O-aware list scheduling (LS) of the list-versus-pack study (seed 001:
Jeannot, Pallez, Vidal, IJHPCA 2023), section "I/O-aware List-scheduling".

Design notes (the model, its sources, the choices made): this folder's README.md, section ioList.py.
"""
from __future__ import annotations

from collections.abc import Mapping
import math

from batsim.batsim import Job

from batio.schedulers.backfill import Backfill, time_limit
from batio.schedulers.jobio import bytes_moved
from batio.schedulers.options import Option, Requirements
from batio.schedulers.reservation import RunningJob

IO = "io"  # the tracker's bandwidth resource: the I/O node
DEFAULT_BANDWIDTH = 240e9  # bytes/s, platforms/periodic_rack.xml


def bandwidth_option():
    return Option(float, DEFAULT_BANDWIDTH, minimum=1.0, unit="bytes/s",
                  help="bandwidth of the I/O node (default: periodic_rack's)")


# The I/O node's bandwidth default describes periodic_rack (the bundled platform): elsewhere the input gives it.
REQUIRES: Requirements = {"storage": True, "io": True, "options": ("bandwidth",)}


class PeriodicJobInfo:
    """What I/O-aware policies read from a job: the paper's accumulated I/O
    information (average bandwidth) and predicted durations."""

    def __init__(self, profiles_of, bandwidth: float):
        self._profiles_of = profiles_of  # workload name -> profiles
        self.bandwidth = bandwidth
        self._cache: dict[str, tuple[float, float, float]] = {}

    def _info(self, job: Job) -> tuple[float, float, float]:
        """(planned duration, average bandwidth, period) of ``job``."""
        if job.id not in self._cache:
            fields = job.json_dict or {}
            duration = float(fields.get("alone_time", time_limit(job)))
            if "avg_bandwidth" in fields:
                average = float(fields["avg_bandwidth"])
            else:
                profiles = self._profiles_of(job.workload)
                moved = sum(bytes_moved(profiles[job.profile], profiles, job.requested_resources))
                average = moved / duration if math.isfinite(duration) and duration > 0 else 0.0
            period = float(fields.get("period", 1.0))
            self._cache[job.id] = (duration, average, period)
        return self._cache[job.id]

    def duration(self, job: Job) -> float:
        """Planned duration: T_i(b), the job's time alone."""
        return self._info(job)[0]

    def average_bandwidth(self, job: Job) -> float:
        return self._info(job)[1]

    def need(self, job: Job) -> float:
        """The average bandwidth as planned: at most the whole I/O node."""
        return min(self.average_bandwidth(job), self.bandwidth)

    def volume(self, job: Job) -> float:
        """All the bytes the job moves, as planned (average x duration)."""
        average = self.average_bandwidth(job)
        return average * self.duration(job) if average > 0 else 0.0

    def period(self, job: Job) -> float:
        return self._info(job)[2]

    def predicted_end(self, job: Job, start: float, now: float) -> float:
        """When a job running since ``start`` should end, seen at ``now``."""
        end = start + self.duration(job)
        return end if end > now else now + self.period(job)


class IoList(Backfill):
    PAPER = "seed 001 (Jeannot, Pallez, Vidal, IJHPCA 2023), section \"I/O-aware List-scheduling\""
    REQUIRES = REQUIRES
    OPTIONS = {"bandwidth": bandwidth_option()}

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        self.bandwidth = self.settings["bandwidth"]
        self.info = PeriodicJobInfo(lambda workload: self.bs.profiles[workload], self.bandwidth)

    # -- the strict constraint, as the tracker's bandwidth resource ------------

    def bandwidth_limits(self, now: float) -> Mapping[str, float]:
        return {IO: self.bandwidth}

    def bandwidth_need(self, job: Job, now: float) -> Mapping[str, float]:
        return {IO: self.info.need(job)}

    def running_jobs(self, now: float) -> list[RunningJob]:
        """Running jobs hold their hosts and average bandwidth until their
        predicted end (T_i(b) after their start; if late, one more period)."""
        return [RunningJob(job.id, start, job.allocation, time_limit(job),
                           estimate=self.info.predicted_end(job, start, now) - start,
                           bandwidth=self.bandwidth_need(job, now))
                for job, start in self.running.values()]

    # -- Backfill's rounds, with planned durations T_i(b) ---------------------

    def planned_duration(self, job: Job) -> float:
        """Section "I/O-aware List-scheduling (LS)": a job is planned for the
        time it takes alone, T_i(b), rather than its walltime."""
        return self.info.duration(job)
