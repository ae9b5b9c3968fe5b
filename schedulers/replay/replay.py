"""Replay as recorded: every job starts at the time the real machine started it.

Each job carries ``recorded_start`` (seconds on the workload's clock, as
``batio import jobsio`` writes it). A job submitted before that time waits
for it (a ``CALL_ME_LATER`` at that date, so the scheduler runs on real
Batsim too); one submitted at or after it starts at once. Jobs due together
start in recorded order on the lowest-numbered free hosts; a due job that
finds too few hosts free (the simulated machine ran earlier jobs longer
than the real one, or is smaller) starts as soon as enough are, and its
delay shows in ``_jobs.csv`` (starting_time after recorded_start). A job
without ``recorded_start`` is rejected: it has no recorded schedule.
"""
from __future__ import annotations

import heapq
import logging

from batsim.batsim import BatsimScheduler, Job
from procset import ProcSet

from batio.schedulers.jobio import job_storage_mapping
from batio.schedulers.options import Declared

log = logging.getLogger(__name__)


class Replay(Declared, BatsimScheduler):
    PAPER = ("no paper: batio's check of its model against a real machine, every job at its recorded start "
             "(`batio validate`, docs/formats.md)")
    REQUIRES = {"job_fields": ("recorded_start",)}

    def onSimulationBegins(self):
        self.free = ProcSet(*self.bs.compute_resources)
        self.due: list[tuple[float, int, Job]] = []  # (recorded start, arrival order, job)
        self.arrivals = 0

    def onJobSubmission(self, job):
        start = (job.json_dict or {}).get("recorded_start")
        if start is None or job.requested_resources > len(self.bs.compute_resources):
            log.warning("replay: job %s rejected: %s", job.id, "no recorded_start" if start is None
                        else "more hosts than the platform has")
            self.bs.reject_jobs([job])
            return
        heapq.heappush(self.due, (float(start), self.arrivals, job))
        self.arrivals += 1
        if start > self.bs.time():
            self.bs.wake_me_up_at(float(start))

    def onJobCompletion(self, job):
        self.free |= job.allocation

    def onJobsKilled(self, jobs):
        for job in jobs:
            self.free |= job.allocation

    def onRequestedCall(self):
        pass  # the jobs due now start in onNoMoreEvents, which follows every message

    def onNoMoreEvents(self):
        now = self.bs.time()
        started, waiting = [], []
        while self.due and self.due[0][0] <= now:
            entry = heapq.heappop(self.due)
            job = entry[2]
            if job.requested_resources <= len(self.free):
                # the lowest-numbered free hosts: the record says how many, not which
                job.allocation = ProcSet(*list(self.free)[:job.requested_resources])
                self.free -= job.allocation
                mapping = job_storage_mapping(job, self.bs)
                if mapping:
                    job.storage_mapping = mapping
                started.append(job)
            else:
                waiting.append(entry)
        for entry in waiting:  # still due: tried again when a completion frees hosts
            heapq.heappush(self.due, entry)
        if started:
            self.bs.execute_jobs(started)
