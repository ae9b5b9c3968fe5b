"""The round's queue as ``backfill`` walks it, cut where no job left can
start now (``QueueWalk``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
import functools

import numpy as np

from batio.schedulers.locality.jobs import UserJob
from batio.schedulers.locality.plan import Plan

FIRST_CHECK = 8
"""A cut walk's first ``last_candidate`` check comes this many jobs past
where it began (after the pinned jobs), each later one where the walk's
index has doubled; a rough choice, not tuned."""


class QueueWalk:
    """The round's queue (``plan.pending``, in queue order) as ``backfill``
    takes it, walked while a job left could still start now: category -2
    jobs always, then up to the last job that fits in what is free now
    (``last_candidate``). ``index``: how many jobs it has handed out.

    The last job is found before the jobs ahead of it take what is free
    now, so most jobs up to it start nothing now. The walk is ``cut`` once
    none left can (no core free now, or ``last_candidate`` finds none at a
    check): the jobs it would still plan up to its last only reserve
    cores and files for later, which matters only if the next round keeps
    this plan (when only new jobs came). ``rest`` then hands them out as
    the walk would have (``Locality.plan_rest``); a plan rebuilt at the next
    completion, most rounds', never plans them.
    """

    cuts = True
    """The walk is cut once no job left can start now."""

    def __init__(self, plan: Plan, runs: Callable[[list[UserJob], int, int, bool], int] | None):
        self.plan, self.queue = plan, plan.pending
        # Plans a run of alike jobs from an index, within a number of jobs
        # (``Placement.plan_run``); they never reach ``backfill``.
        self.runs = runs
        self.index = 0
        self.cut = False
        # The leading category -2 jobs are always planned.
        self.pinned = next((i for i, job in enumerate(self.queue) if job.history_node is None), len(self.queue))
        self.last = self.pinned - 1

    @functools.cached_property
    def after_pinned(self) -> tuple[np.ndarray, np.ndarray]:
        """The cores and walltimes of the jobs past the pinned ones."""
        after = self.queue[self.pinned:]
        return np.array([job.cores for job in after], dtype=np.int64), np.array([job.walltime for job in after])

    def last_from(self, index: int) -> int:
        """The last job from ``index`` on that could still start now (``index`` - 1 if none)."""
        assert index >= self.pinned, "the pinned jobs are always planned"
        start = index - self.pinned
        needs, walltimes = self.after_pinned
        return index + self.plan.cores.last_candidate(needs[start:], walltimes[start:])

    def __iter__(self) -> Iterator[UserJob]:
        return self.walk(cut=self.cuts)

    def rest(self) -> Iterator[UserJob]:
        """The jobs after the cut, up to the walk's last."""
        self.cut = False
        return self.walk(cut=False)

    def walk(self, cut: bool) -> Iterator[UserJob]:
        queue, cores = self.queue, self.plan.cores
        check = self.index + FIRST_CHECK
        while True:
            if self.index > self.last:   # looked at again after each planned job
                self.last = self.last_from(self.index)
                if self.index > self.last:
                    return
            if cut and self.index >= self.pinned:
                if self.index >= check:   # last_candidate costs a pass over the rest: ever less often (FIRST_CHECK)
                    check *= 2
                    if self.last_from(self.index) < self.index:
                        self.cut = True
                        return
                if not cores.any_free_now():
                    self.cut = True
                    return
            if self.runs is not None:
                stop_at_checks = cut and self.index >= self.pinned
                limit = (min(self.last + 1, check) if stop_at_checks else self.last + 1) - self.index
                planned = self.runs(queue, self.index, limit, stop_at_checks)
                if planned:
                    self.index += planned
                    continue   # the walk's tests again, as after each job
            self.index += 1
            yield queue[self.index - 1]


class AuthorsWalk(QueueWalk):
    """The authors' walk (``LEA`` in ``src/scheduler.c``): while a core free
    now is not yet taken by a planned job; never cut."""

    cuts = False

    def last_from(self, index: int) -> int:
        return index if index < len(self.queue) and self.plan.cores.any_free_now() else index - 1
