"""I/O-aware list scheduling (LS) of the list-versus-pack study (seed 001:
Jeannot, Pallez, Vidal, IJHPCA 2023), section "I/O-aware List-scheduling".

Candidate jobs are taken first come, first served; a job starts when enough
compute hosts are free and its *average* I/O bandwidth fits under the
remaining bandwidth, the I/O node's bandwidth minus the averages of the
running jobs (the paper's *strict constraint*: at every instant the sum of
the running jobs' averages stays <= the bandwidth). Section "Backfilling":
durations are predictable, so a later job may start in free space ahead of
its turn; this is Slurm's backfill (``schedulers/backfill.py``), with the
I/O node as the reservation tracker's bandwidth resource ``"io"``: every
running or planned job holds its average bandwidth there over its planned
window, so the strict constraint also holds for the plan, and a backfilled
job can delay no earlier job's reservation, neither on hosts nor on I/O.

What a job brings (extra job fields, as ``workloads/periodic.py`` writes):

* ``avg_bandwidth`` (bytes/s), the paper's average I/O bandwidth: the job's
  whole I/O volume over its execution time alone. Without it: the bytes its
  profile moves (``batio.schedulers.jobio``) over its planned duration. A need above the
  limit is planned at the limit (the job then runs alone on the I/O node)
  rather than never starting.
* ``alone_time``, T_i(b) (eq. 1), the planned duration; without it, the
  walltime. A running job that outlives it is planned to end one
  ``period`` (w_i + v_i / b; else 1 s) from now.

Options (pybatsim ``-o`` JSON): ``backfill_max`` and ``order`` as in
``Backfill`` (default: conservative backfilling, FCFS), and ``bandwidth``,
the I/O node's bandwidth in bytes/s (default 240e9, that of
``platforms/periodic_rack.xml``; Batsim does not tell schedulers link
bandwidths).
"""
from __future__ import annotations

from collections.abc import Mapping
import math

from batsim.batsim import Job

from batio.schedulers.backfill import Backfill, time_limit
from batio.schedulers.jobio import bytes_moved
from batio.schedulers.options import Option
from batio.schedulers.reservation import RunningJob

IO = "io"  # the tracker's bandwidth resource: the I/O node
DEFAULT_BANDWIDTH = 240e9  # bytes/s, platforms/periodic_rack.xml


def bandwidth_option():
    return Option(float, DEFAULT_BANDWIDTH, minimum=1.0, unit="bytes/s",
                  help="bandwidth of the I/O node (default: periodic_rack's)")


# The I/O node's bandwidth default describes periodic_rack (the bundled platform): elsewhere the input gives it.
REQUIRES = {"storage": True, "io": True, "options": ("bandwidth",)}


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
