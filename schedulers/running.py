"""The running jobs of a policy kept across rounds: a reservation tracker of
them made in O(1) per round instead of rebuilt (``RunningJobsTracker``)."""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable
import math
import weakref

from procset import ProcSet

from batio.errors import InvalidValue
from batio.schedulers.reservation import OverAllocation, ReservationTracker, RunningJob


class RunningJobsTracker:
    """InitializeReservationTracker kept up to date across rounds instead of
    rebuilt in each: running jobs are added as they start (``start``) and
    removed as they end (``end``), and ``at(now)`` returns a tracker equal to
    ``ReservationTracker.from_running(hosts, {}, <the running jobs>, now)``:
    same segments, free hosts and reservations.

    Costs, for S segments (at most one per distinct end): ``start`` and
    ``end`` O(S); ``at`` O(1) plus O(S) per running job whose reservation
    ends by ``now`` (past its estimate or walltime, re-planned by
    ``RunningJob.held_until``), and O(S) once if the round changes its
    tracker - against ``from_running``'s O(R log R) Python work over all R
    running jobs in every round; ``take_over`` O(1) per started job, no booking.

    Running jobs hold hosts only: bandwidth amounts added and subtracted
    round after round would drift, by rounding, from a rebuild's sums and
    could turn a fit decided at the tolerance.
    """

    def __init__(self, hosts: ProcSet, origin: float = 0.0):
        self._base = ReservationTracker(hosts, {}, origin)
        self._jobs: dict[Hashable, RunningJob] = {}
        self._ending: dict[float, set] = {}  # finite end time -> keys of the records ending then
        self._overdue: set = set()  # keys held only OVERRUN_GRACE past the origin
        # The last ``at`` copy, while the base is unchanged: it borrows the
        # base's data until it changes something (most rounds change nothing).
        self._lent: weakref.ref[ReservationTracker] | None = None

    def __len__(self) -> int:
        return len(self._jobs)

    def start(self, job: RunningJob) -> None:
        """``job`` runs from now on (it started at or before the origin)."""
        if job.bandwidth:
            raise InvalidValue(f"running job {job.key!r} has a bandwidth need; "
                             "RunningJobsTracker keeps hosts only")
        if job.key in self._jobs:
            raise InvalidValue(f"running job {job.key!r} listed twice")
        self._return_lent()
        base = self._base
        mask = base._mask(job.hosts)
        # Every running job holds the first segment, so a clash shows there.
        taken = mask & ~base._free[0]
        if taken:
            holders = sorted(repr(key) for key, record in base._records.items() if record.mask & taken)
            raise OverAllocation(f"running job {job.key!r} and {', '.join(holders)} both "
                                 f"hold hosts {base._hosts_of(taken)}")
        self._jobs[job.key] = job
        self._hold(job)

    def end(self, key: Hashable) -> None:
        """The job behind ``key`` no longer runs."""
        del self._jobs[key]
        self._return_lent()
        self._overdue.discard(key)
        self._let_go(key)

    def take_over(self, planned: ReservationTracker, jobs: list[RunningJob]) -> bool:
        """Start ``jobs`` at the origin when ``planned``, the ``at`` copy of
        the round that started them, already books them as ``start`` would
        and holds nothing else new (no delayed reservation, release or
        cancel): it then becomes the base, and the jobs are not booked a
        second time (each booking costs O(S)). Whether it did; if not,
        nothing changed and the caller starts them one by one."""
        base = self._base
        lent = self._lent() if self._lent is not None else None
        if (lent is None or planned is not lent or planned._version != len(jobs)
                or len(planned._records) != len(base._records) + len(jobs)):
            return False
        for job in jobs:
            record = planned._records.get(job.key)
            if (record is None or job.key in self._jobs or job.bandwidth or job.start != base.origin
                    or record.start != base.origin or record.end != job.held_until(base.origin)
                    or record.mask != base._mask(job.hosts)):
                return False
        planned._own()
        planned._found = {}
        self._base, self._lent = planned, None
        for job in jobs:
            self._jobs[job.key] = job
            self._note_end(job)
        return True

    def at(self, now: float) -> ReservationTracker:
        """The running jobs' tracker at origin ``now`` (not before the last
        one asked for), for one round to plan on; changing it leaves this
        object as it was, and the other way round. It shares this object's
        data until either changes, so a round that starts and plans nothing
        costs no copy."""
        now = float(now)
        base = self._base
        if now < base.origin:
            raise InvalidValue(f"time went back: tracker at {base.origin}, asked for {now}")
        self._return_lent()
        if now > base.origin:
            self._advance(now)
        copy = ReservationTracker.__new__(ReservationTracker)
        copy.__dict__.update(base.__dict__)
        copy._version, copy._found, copy._borrowed = 0, {}, True
        self._lent = weakref.ref(copy)
        return copy

    def _return_lent(self) -> None:
        """The base is about to change: the copy lent last, if still in use
        and unchanged, takes its own data."""
        lent = self._lent() if self._lent is not None else None
        if lent is not None:
            lent._own()
        self._lent = None

    def _advance(self, now: float) -> None:
        """Move the origin to ``now``: segments before it go, and so do the
        reservations ending by then, whose jobs are held anew from ``now``."""
        base, times = self._base, self._base._times
        current = bisect_right(times, now) - 1  # the segment holding now
        replan = set(self._overdue)
        for t in times[1:current + 1]:
            replan.update(self._ending.pop(t))
        for key in replan:
            if base._records[key].end > now:
                self._let_go(key)
            else:  # ended before the kept segments: holds nothing there
                del base._records[key]
        current = bisect_right(times, now) - 1  # letting go may have merged segments
        if current:
            size = len(times)
            del times[:current], base._free[:current]
            base._profile[:, :size + 1 - current] = base._profile[:, current:size + 1].copy()
        times[0] = base._profile[0, 0] = base.origin = now
        self._overdue.clear()
        for key in replan:
            self._hold(self._jobs[key])

    def _hold(self, job: RunningJob) -> None:
        base = self._base
        base._book(job.key, min(job.start, base.origin), self._note_end(job), base._mask(job.hosts), {})

    def _note_end(self, job: RunningJob) -> float:
        """The end of ``job``'s reservation from the origin, noted where the
        next ``_advance`` looks for the jobs to hold anew."""
        origin = self._base.origin
        if job.bound_after(origin) is None:
            self._overdue.add(job.key)
        end = job.held_until(origin)
        if end != math.inf:
            self._ending.setdefault(end, set()).add(job.key)
        return end

    def _let_go(self, key: Hashable) -> None:
        """Free what ``key`` holds and drop the breakpoint at its end if no
        other reservation ends there, as ``from_running`` would not make it."""
        base = self._base
        record = base._records.pop(key)
        base._give_back(record, base.origin)
        if record.end == math.inf:
            return
        keys = self._ending[record.end]
        keys.discard(key)
        if not keys:
            del self._ending[record.end]
            base._merge(bisect_left(base._times, record.end))
