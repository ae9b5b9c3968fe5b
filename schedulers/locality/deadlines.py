"""The CALL_ME_LATERs that wake the locality scheduler at the deadlines
t_k + WallTime(J) of jobs that wait for a load (paper 004, Section 3).
"""
from __future__ import annotations

from collections.abc import Callable
import heapq
import math

CALL_MARGIN = 1e-3
"""Seconds: a CALL_ME_LATER must be after the time Batsim receives it, which
is the decision's time plus its messages' (sub-millisecond) latency; a
wake-up nearer than this is handled at once instead."""


class DeadlineCalls:
    """The deadlines t_k + WallTime(J) of the jobs that wait or waited for a
    load (Section 3), and the CALL_ME_LATERs that wake the scheduler at them.

    Batsim 4.2 cannot cancel a CALL_ME_LATER, and each one pending is a
    sleeping actor that every simulated event visits (under ptask_L07; in the
    embedded engine on SimGrid 3.32 also an OS thread). Asked at each job's
    start, they would mostly come for jobs long ended: on the 2022-09-10 day
    about 3,000 were pending on average, 2.6 times the jobs running. So a deadline
    is asked for only once it is within ``ASK_AHEAD`` of the earliest call
    pending; each call that comes lets the next ones be asked. A deadline not
    asked for is then more than ``ASK_AHEAD`` away, so its call is always
    asked well after the time Batsim receives it (``CALL_MARGIN``).
    """

    ASK_AHEAD = 1.0   # seconds; far above a call's message latency (microseconds) and CALL_MARGIN

    def __init__(self, ask: Callable[[float], None]):
        self.ask = ask                       # Batsim's CALL_ME_LATER
        self.of: dict[str, float] = {}       # job id -> deadline
        self.not_asked: list[tuple[float, str]] = []   # heap; entries of ended jobs dropped lazily
        self.pending: list[float] = []       # heap of the calls asked that have not come yet (a few)

    def add(self, job_id: str, deadline: float) -> None:
        self.of[job_id] = deadline
        heapq.heappush(self.not_asked, (deadline, job_id))
        self._ask_near()

    def due(self, job_id: str, now: float) -> bool:
        """The job's deadline is ``now`` (within CALL_MARGIN): it is dropped."""
        if self.of.get(job_id, math.inf) <= now + CALL_MARGIN:
            del self.of[job_id]
            return True
        return False

    def drop(self, job_id: str) -> None:
        self.of.pop(job_id, None)

    def came(self, now: float) -> list[str]:
        """A call came at ``now``: the jobs whose deadline has passed (dropped)."""
        while self.pending and self.pending[0] <= now:
            heapq.heappop(self.pending)
        overdue = [job_id for job_id, deadline in self.of.items() if deadline <= now]
        for job_id in overdue:
            del self.of[job_id]
        self._ask_near()
        return overdue

    def _ask_near(self) -> None:
        """Ask for every live deadline within ASK_AHEAD of the earliest call pending."""
        heap = self.not_asked
        while heap:
            deadline, job_id = heap[0]
            if self.of.get(job_id) != deadline:
                heapq.heappop(heap)   # the job ended before its deadline
                continue
            if self.pending and deadline > self.pending[0] + self.ASK_AHEAD:
                return
            heapq.heappop(heap)
            if deadline not in self.pending:   # two jobs with one deadline share its call
                heapq.heappush(self.pending, deadline)
                self.ask(deadline)
