"""The workload jobs as the locality policies read them (``UserJob``) and
the queue that keeps them in order (``WaitingQueue``).
"""
from __future__ import annotations

import bisect
from collections.abc import Hashable
from dataclasses import dataclass, field
import operator

from batsim.batsim import Job

from batio.schedulers.backfill import job_id_key


@dataclass(slots=True)
class UserJob:
    """A workload job with the fields the policies read."""

    job: Job
    cores: int
    walltime: float
    file: Hashable
    size: float
    history_node: int | None    # node index a category -2 job is pinned to, None once free
    history_start: float | None = None   # category -2 jobs: when history started them
    id: str = field(init=False, repr=False, compare=False)   # the job's, read often
    kind: tuple = field(init=False, repr=False, compare=False)
    """Cores, walltime, file and size: alike jobs (a run) share it."""
    queue_key: tuple = field(init=False, repr=False, compare=False)
    """Submission order; category -2 jobs (already running) first, in order
    of history start. Kept: ``WaitingQueue`` orders the jobs by it."""

    def __post_init__(self):
        self.id = self.job.id
        self.kind = (self.cores, self.walltime, self.file, self.size)
        if self.history_start is not None:
            self.queue_key = (False, self.history_start, job_id_key(self.id))
        else:
            self.queue_key = (True, self.job.submit_time, job_id_key(self.id))

    requested_resources = 1
    """Hosts, as ``backfill`` asks: one node (``read_job`` checks res 1)."""


queue_key = operator.attrgetter("queue_key")
"""A job's ``UserJob.queue_key``, as ``sorted`` and ``bisect`` take it."""


class WaitingQueue:
    """The queued jobs: by id, and in queue order (``UserJob.queue_key``,
    unique per job), kept in order as jobs come and leave instead of
    sorted again in every round (a round's queue has thousands of jobs)."""

    def __init__(self):
        self.by_id: dict[str, UserJob] = {}
        self.in_order: list[UserJob] = []

    def add(self, job: UserJob) -> None:
        self.by_id[job.id] = job
        bisect.insort(self.in_order, job, key=queue_key)

    def remove(self, job: UserJob) -> None:
        del self.by_id[job.id]
        index = bisect.bisect_left(self.in_order, job.queue_key, key=queue_key)
        assert self.in_order[index] is job, "queue keys are unique"
        del self.in_order[index]

    def __contains__(self, job_id: str) -> bool:
        return job_id in self.by_id

    def __len__(self) -> int:
        return len(self.by_id)

    def ordered(self) -> list[UserJob]:
        """The jobs in queue order (a copy)."""
        return list(self.in_order)

