"""Conservative backfilling that also reserves storage bandwidth.

Each job holds, on the tracker's bandwidth resource "pfs", the bytes its
profile moves over its walltime; a job starts, or is planned, only where
the jobs' sum stays within the option ``bandwidth`` (bytes/s).
"""
from collections.abc import Mapping

from batsim.batsim import Job

from batio.schedulers.backfill import Backfill, time_limit
from batio.schedulers.jobio import bytes_moved
from batio.schedulers.options import Option


class BandwidthBackfill(Backfill):
    OPTIONS = {"bandwidth": Option(float, 1e9, minimum=1.0, help="storage bandwidth in bytes/s")}

    def __init__(self, options: Mapping | None = None) -> None:
        super().__init__(options)
        self.bandwidth = self.settings["bandwidth"]

    def bandwidth_limits(self, now: float) -> Mapping[str, float]:
        return {"pfs": self.bandwidth}

    def bandwidth_need(self, job: Job, now: float) -> Mapping[str, float]:
        profiles = self.bs.profiles[job.workload]
        moved = sum(bytes_moved(profiles[job.profile], profiles, job.requested_resources))
        # A job needing more than the whole link is planned alone rather than never.
        return {"pfs": min(moved / time_limit(job), self.bandwidth)}
