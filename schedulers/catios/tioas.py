"""TIOAS, the traditional I/O-aware scheduler CATIOS is compared with (seed
002, "Compared methods"; the poster's references [1, 2]: schedulers that
"use average I/O bandwidth").

Design notes (the model, its sources, the choices made): this folder's README.md, section tioas.py.
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
