"""First-come first-served on free hosts, with no planning: the cheapest
correct scheduler, to measure the engine alone (scripts/bench_engine.py)."""

from collections import deque

from batsim.batsim import BatsimScheduler
from procset import ProcSet


class Greedy(BatsimScheduler):
    def onSimulationBegins(self):
        self.free = ProcSet(*self.bs.compute_resources)
        self.queue: deque = deque()

    def onJobSubmission(self, job):
        self.queue.append(job)

    def onJobCompletion(self, job):
        self.free |= job.allocation

    def onJobsKilled(self, jobs):
        pass

    def onNoMoreEvents(self):
        started = []
        while self.queue and self.queue[0].requested_resources <= len(self.free):
            job = self.queue.popleft()
            job.allocation = ProcSet(*self.free[:job.requested_resources])
            self.free -= job.allocation
            started.append(job)
        if started:
            self.bs.execute_jobs(started)
