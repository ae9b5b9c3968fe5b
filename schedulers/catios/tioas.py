"""TIOAS, the traditional I/O-aware scheduler CATIOS is compared with (seed
002, "Compared methods"; the poster's references [1, 2]: schedulers that
"use average I/O bandwidth").

It is paper 000's I/O-aware backfilling (``schedulers/workload_adaptive/ioAware.py``, Section
VI) with one change: a job's bandwidth need r_j is the average of its
per-second demand, mean(D), instead of the estimator's history of app
rates. D is the same as CATIOS's (``demand``: predicted from the command
line, or the oracle's true profile; ``schedulers/catios/catios.py``) and so is
the storage bandwidth B. Every running or planned job holds r_j over its
walltime window next to its hosts in the reservation tracker, so the sum of
the averages never exceeds B at any planned instant; the rest is
``Backfill`` (options ``backfill_max``, ``order``).

As in ``IoAware``, a need above B is planned at B (the job can still run
alone), and a job without a prediction, or whose D is all zeros, reserves no
bandwidth. D is not clipped: the clip is CATIOS's robustness rule, not part
of an average-based scheduler.
"""
from __future__ import annotations

from collections.abc import Mapping

from batsim.batsim import Job

from batio.schedulers.backfill import Backfill
from batio.schedulers.catios.catios import DemandAware

IO = "io"  # the tracker's bandwidth resource: the storage, limited to B


class Tioas(DemandAware, Backfill):
    PAPER = "seed 002, \"Compared methods\": paper 000's I/O-aware backfill with r_j = mean(D)"

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        self.averages: dict[str, float] = {}  # job id -> mean(D)

    def average_demand(self, job: Job) -> float:
        """r_j = mean(D) in bytes/s; 0 without a prediction."""
        average = self.averages.get(job.id)
        if average is None:
            D = self.demand(job)
            average = self.averages[job.id] = float(D.mean()) if D is not None and len(D) else 0.0
        return average

    # -- Backfill hooks --------------------------------------------------

    def bandwidth_limits(self, now: float) -> Mapping[str, float]:
        return {IO: self.B}

    def bandwidth_need(self, job: Job, now: float) -> Mapping[str, float]:
        r_j = self.average_demand(job)
        return {IO: min(r_j, self.B)} if r_j > 0 else {}

    def job_left(self, job: Job) -> None:
        super().job_left(job)
        self.averages.pop(job.id, None)
