"""The reservation tracker shared by every batio policy: hosts and any number of
cluster-wide bandwidth-type resources, reserved over time.

Design notes (the model, its sources, the choices made): this folder's README.md, section reservation.py.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import accumulate
import math

import numpy as np
from procset import ProcSet

from batio.errors import InvalidValue

OVERRUN_GRACE = 1.0
"""Seconds a running job already past its walltime still holds its hosts.

Batsim kills a job at its walltime, so such a job is being killed and its
completion (which triggers a new round) is imminent: holding its hosts a
little longer only keeps them out of "now"; the next round replans anyway.
"""

_TOLERANCE = 1e-9  # relative: sums of float amounts may overshoot an exact fill


class OverAllocation(InvalidValue):
    """A reservation would double-book a host or exceed a bandwidth limit."""


class Slot:
    """Where and when to run: a start time and the hosts (a ProcSet or host
    ids); unpacks as ``start, hosts = slot``.

    Slots returned by ``earliest_start`` build their ``hosts`` ProcSet only
    when asked: most planned reservations never need one.
    """

    __slots__ = ("_start", "_hosts", "_tracker", "_mask", "_query")
    _hosts: ProcSet | None
    _tracker: ReservationTracker | None  # with _mask (its host bitset), when hosts are built on demand
    _mask: int
    _query: tuple

    def __init__(self, start: float, hosts: ProcSet):
        self._start = float(start)
        self._hosts = _as_procset(hosts)
        self._tracker = None

    @property
    def start(self) -> float:
        return self._start

    @property
    def hosts(self) -> ProcSet:
        if self._hosts is None:
            assert self._tracker is not None  # a slot without hosts comes from a tracker
            self._hosts = self._tracker._hosts_of(self._mask)
        return self._hosts

    def __iter__(self):
        return iter((self.start, self.hosts))

    def __repr__(self):
        return f"Slot(start={self.start!r}, hosts={self.hosts})"


@dataclass(frozen=True)
class Reservation:
    """What ``key`` holds over ``[start, end)``, as seen from the origin."""

    key: Hashable
    start: float
    end: float
    hosts: ProcSet
    bandwidth: Mapping[str, float]


@dataclass(frozen=True)
class RunningJob:
    """A running job as InitializeReservationTracker sees it.

    ``estimate`` is a policy's predicted runtime d_j; without one the job is
    held for its walltime L_j (``math.inf`` when it has none).
    """

    key: Hashable
    start: float
    hosts: ProcSet
    walltime: float = math.inf
    estimate: float | None = None
    bandwidth: Mapping[str, float] = field(default_factory=dict)

    def held_until(self, now: float) -> float:
        """End of the job's reservation as seen at ``now``.

        A job that outlives its estimate falls back to its walltime, the one
        bound it cannot pass; past that too (a kill in flight), it holds for
        ``OVERRUN_GRACE`` more seconds.
        """
        bound = self.bound_after(now)
        return float(now + OVERRUN_GRACE if bound is None else bound)

    def bound_after(self, now: float) -> float | None:
        """The first of the job's estimated and walltime ends that is after
        ``now``; None once it is past both. It changes only when ``now``
        reaches it, so a reservation up to it stays right until then."""
        bounds = [self.start + self.walltime]
        if self.estimate is not None:
            bounds.insert(0, self.start + self.estimate)
        return next((end for end in bounds if end > now), None)


@dataclass(slots=True)
class _Record:
    """A reservation's window and holdings. ``start`` may precede the origin
    (a running job kept across rounds by ``RunningJobsTracker``): the tracker
    reads it as the origin. Never changed in place, so trackers can share it."""

    start: float
    end: float
    mask: int
    bandwidth: dict


class ReservationTracker:
    """Hosts ``hosts`` and the resources of ``bandwidth_limits`` ({name:
    limit}) over ``[origin, inf)``; reservations are keyed by any hashable
    (batio uses job ids). See README.md for semantics and costs."""

    def __init__(self, hosts: ProcSet, bandwidth_limits: Mapping[str, float] | None = None,
                 origin: float = 0.0):
        self.hosts = _as_procset(hosts)
        self.origin = float(origin)
        self.bandwidth_limits = dict(bandwidth_limits or {})
        self._intervals = [(interval.inf, interval.sup) for interval in self.hosts.intervals()]
        self._first_index = list(accumulate((sup - inf + 1 for inf, sup in self._intervals), initial=0))
        self.nb_hosts = len(self.hosts)
        self._all = (1 << self.nb_hosts) - 1
        self._names = list(self.bandwidth_limits)
        self._row_of = {name: 2 + i for i, name in enumerate(self._names)}
        self._caps = [limit + _TOLERANCE * max(1.0, abs(limit))
                      for limit in self.bandwidth_limits.values()]
        self._times = [self.origin]
        self._free = [self._all]
        # Rows: segment start times, free-host counts, one row per bandwidth
        # resource. Column len(self._times) holds time = inf as a sentinel.
        self._profile = np.zeros((2 + len(self._names), 64))
        self._profile[:2, 0] = self.origin, self.nb_hosts
        self._profile[0, 1] = math.inf
        self._records: dict[Hashable, _Record] = {}
        # No reservation starts after this time (an upper bound): from there
        # on, reservations only end, so free hosts only grow.
        self._last_start = self.origin
        self._version = 0  # bumped by every change, to trust fresh slots
        # True while the step function and the records are another tracker's
        # (a ``RunningJobsTracker.at`` copy that changed nothing yet).
        self._borrowed = False
        # Earliest start found per request while the tracker only gained
        # reservations: the same request cannot start earlier any more.
        self._found: dict[tuple, float] = {}

    # -- InitializeReservationTracker -----------------------------------

    @classmethod
    def from_running(cls, hosts: ProcSet, bandwidth_limits: Mapping[str, float] | None,
                     running: Iterable[RunningJob], now: float) -> ReservationTracker:
        """A tracker at origin ``now`` where each running job holds its hosts
        and bandwidth until ``RunningJob.held_until(now)``.

        Running jobs are facts: their bandwidth may exceed a limit (it then
        blocks that resource until it drains). A host held by two running
        jobs can only be a caller bug and raises ``OverAllocation``.
        """
        tracker = cls(hosts, bandwidth_limits, now)
        held = 0
        for job in running:
            if job.key in tracker._records:
                raise InvalidValue(f"running job {job.key!r} listed twice")
            mask = tracker._mask(job.hosts)
            if held & mask:
                raise OverAllocation(f"running job {job.key!r} and another running job both "
                                     f"hold hosts {tracker._hosts_of(held & mask)}")
            held |= mask
            tracker._checks(job.bandwidth)  # validates the names and needs
            tracker._records[job.key] = _Record(
                tracker.origin, job.held_until(now), mask, dict(job.bandwidth))
        records = sorted(tracker._records.values(), key=lambda record: record.end)
        times = [now] + sorted({record.end for record in records} - {math.inf})
        free, amounts = [], []
        busy, in_use, ending = 0, [0.0] * len(tracker._names), len(records)
        # Sweep segments from the last: a job holds segment k iff it ends after t_k.
        for t in reversed(times):
            while ending and records[ending - 1].end > t:
                ending -= 1
                busy |= records[ending].mask
                for name, amount in records[ending].bandwidth.items():
                    in_use[tracker._row_of[name] - 2] += amount
            free.append(tracker._all & ~busy)
            amounts.append(list(in_use))
        tracker._times, tracker._free = times, free[::-1]
        size = len(times)
        tracker._grow(size + 1)
        tracker._profile[0, :size + 1] = times + [math.inf]
        tracker._profile[1, :size] = [mask.bit_count() for mask in tracker._free]
        tracker._profile[2:, :size] = np.array(amounts[::-1]).reshape(size, -1).T
        return tracker

    # -- EarliestStartTime ----------------------------------------------

    def earliest_start(self, nb_hosts: int, duration: float,
                       bandwidth: Mapping[str, float] | None = None,
                       after: float | None = None, latest: float | None = None) -> Slot | None:
        """EarliestStartTime (Algorithm 4): the earliest t' >= ``after``
        (default: the origin) at which the request fits over
        ``[t', t' + duration)``, with its hosts; ``None`` when it never fits
        (more hosts than tracked, a need above a limit, infinite reservations
        blocking forever) or, if ``latest`` is given, not by ``latest``.

        Algorithm 4 alternates between the node and the bandwidth tracker
        until both agree; one vectorised pass intersecting the segments where
        the count and every named bandwidth fit lists the same candidates,
        which are then checked on the actual hosts.
        """
        _check_duration(duration)
        checks = self._checks(bandwidth)
        if nb_hosts > self.nb_hosts or (checks and min(cap for _, cap in checks) < 0):
            return None
        t = self.origin if after is None else max(float(after), self.origin)
        if latest is not None and latest < t:
            return None
        needs = tuple(bandwidth.items()) if bandwidth else ()
        request = (nb_hosts, duration, needs, t)
        t = self._found.get(request, t)
        if latest is not None and latest < t:
            return None
        first = bisect_right(self._times, t) - 1
        query = (self._version, duration, needs)
        # Most calls of a round are settled at t itself (a job starts now or,
        # past BackfillMax, cannot): spare them the vectorised pass.
        free, blocking = self._window(first, t + duration, nb_hosts)
        if blocking is None and self._bandwidth_fits(first, t + duration, checks):
            return self._slot(t, _lowest(free, nb_hosts), query, request)
        if latest is not None and latest <= t:
            return None
        times = self._times
        skip_to = first + 1 if blocking is None else blocking + 1
        for k, end_of_run in self._runs(first, nb_hosts, duration, checks, latest):
            k = max(k, skip_to)
            while k < len(times) and times[k] + duration <= end_of_run:
                if latest is not None and times[k] > latest:
                    return None
                free, blocking = self._window(k, times[k] + duration, nb_hosts)
                if blocking is None:
                    return self._slot(times[k], _lowest(free, nb_hosts), query, request)
                k = skip_to = blocking + 1
        return None

    def _runs(self, first, nb_hosts, duration, checks, latest):
        """(first candidate segment, end time), in time order, of the runs of
        segments after segment ``first`` (whose start was settled; up to
        ``latest``) where the free-host count and every checked bandwidth
        fit, skipping runs too short for ``duration``."""
        times = self._times
        stop = len(times) if latest is None else bisect_left(times, latest + duration, first)
        profile = self._profile
        blocked = profile[1, first:stop] < nb_hosts
        for row, cap in checks:
            blocked |= profile[row, first:stop] > cap
        blocked = blocked.nonzero()[0]
        # Runs go from segment `first` to the first blocked segment, from the
        # end of each blocked segment to the start of the next, and from the
        # end of the last one to the end of the range.
        range_end = profile[0, stop]
        if not len(blocked):
            yield first + 1, range_end
            return
        blocked_start = profile[0, first:stop][blocked]
        blocked_end = profile[0, first + 1:stop + 1][blocked]
        yield first + 1, blocked_start[0]
        # Same float expression as the windows' ends, so both agree.
        for i in (blocked_end[:-1] + duration <= blocked_start[1:]).nonzero()[0].tolist():
            yield first + int(blocked[i]) + 1, blocked_start[i + 1]
        yield first + int(blocked[-1]) + 1, range_end

    # -- ReserveResources -----------------------------------------------

    def reserve(self, key: Hashable, slot: Slot, duration: float,
                bandwidth: Mapping[str, float] | None = None) -> None:
        """ReserveResources (Algorithm 3): book ``slot.hosts`` and the
        ``bandwidth`` amounts over ``[slot.start, slot.start + duration)``.

        Raises ``OverAllocation`` if a host is already booked or a named limit
        would be exceeded at some instant of the window; a slot that
        ``earliest_start`` just returned for the same duration and bandwidth,
        with no change since, fits by construction and is not checked again.
        """
        if key in self._records:
            raise InvalidValue(f"reservation {key!r} already exists")
        bandwidth = dict(bandwidth or {})
        start, end = max(slot.start, self.origin), slot.start + duration
        if slot._tracker is self and slot._query == (self._version, duration, tuple(bandwidth.items())):
            mask = slot._mask
        else:
            _check_duration(duration)
            if end <= start:
                raise InvalidValue(f"reservation {key!r} ends at {end}, before the origin {self.origin}")
            mask = slot._mask if slot._tracker is self else self._mask(slot.hosts)
            self._check_fits(key, start, end, mask, bandwidth)
        self._book(key, start, end, mask, bandwidth)
        self._version += 1

    def release(self, key: Hashable, at: float) -> None:
        """The job behind ``key`` ended (or will end) at ``at``: free what it
        holds from then on. Releasing at or before its start removes it."""
        record = self._records[key]
        at = max(float(at), self.origin)
        if at >= record.end:
            return
        if at <= max(record.start, self.origin):
            self.cancel(key)
            return
        self._give_back(record, at)
        # A new record, not an update: records may be shared with the
        # RunningJobsTracker this tracker was copied from.
        self._records[key] = _Record(record.start, at, record.mask, record.bandwidth)
        self._version += 1
        self._found.clear()

    def cancel(self, key: Hashable) -> None:
        """Remove the reservation of ``key`` (e.g. a queued job withdrawn)."""
        self._own()
        record = self._records.pop(key)
        self._give_back(record, max(record.start, self.origin))
        self._version += 1
        self._found.clear()

    # -- inspection ------------------------------------------------------

    def free_hosts(self, start: float, duration: float) -> ProcSet:
        """Hosts free over the whole window ``[start, start + duration)``."""
        _check_duration(duration)
        start = max(float(start), self.origin)
        return self._hosts_of(self._window(self._segment(start), start + duration, 0)[0])

    def free_host_count(self, at: float) -> int:
        """Number of hosts free at instant ``at`` (>= origin)."""
        return self._free[self._segment(at)].bit_count()

    def bandwidth_in_use(self, name: str, at: float) -> float:
        """Amount of resource ``name`` reserved at instant ``at`` (>= origin)."""
        return float(self._profile[self._row_of[name], self._segment(at)])

    def reservation(self, key: Hashable) -> Reservation:
        record = self._records[key]
        return Reservation(key, max(record.start, self.origin), record.end,
                           self._hosts_of(record.mask), dict(record.bandwidth))

    def reservations(self) -> dict[Hashable, Reservation]:
        return {key: self.reservation(key) for key in self._records}

    def __contains__(self, key: Hashable) -> bool:
        return key in self._records

    # -- internals -------------------------------------------------------

    def _segment(self, at: float) -> int:
        return max(bisect_right(self._times, at) - 1, 0)

    def _window(self, first: int, end: float, nb_hosts: int) -> tuple[int, int | None]:
        """(hosts free in every segment from ``first`` up to time ``end``,
        None), or, when fewer than ``nb_hosts`` are, (some hosts, j) for a
        segment j where they fall short: every later window that still holds
        j and the last segment fails too, so the next candidate is after j."""
        if self._free[first].bit_count() < nb_hosts:  # often so at "now": a cheap early no
            return self._free[first], first
        if self._times[first] >= self._last_start:  # past every reservation's start, as FCFS's windows are
            return self._free[first], None
        free = self._all
        for j in range(bisect_left(self._times, end, first + 1) - 1, first - 1, -1):
            narrowed = free & self._free[j]
            if narrowed != free:  # cheaper than counting again
                free = narrowed
                if free.bit_count() < nb_hosts:
                    return free, j
        return free, None

    def _bandwidth_fits(self, first: int, end: float, checks: list) -> bool:
        stop = bisect_left(self._times, end, first + 1)
        return all(np.max(self._profile[row, first:stop]) <= cap for row, cap in checks)

    def _check_fits(self, key, start, end, mask, bandwidth) -> None:
        taken = mask & ~self._window(self._segment(start), end, 0)[0]
        if taken:
            holders = sorted(repr(other) for other, record in self._records.items()
                             if record.start < end and record.end > start and record.mask & taken)
            raise OverAllocation(f"cannot reserve {key!r} over [{start}, {end}): hosts "
                                 f"{self._hosts_of(taken)} already reserved by {', '.join(holders)}")
        first, stop = self._segment(start), bisect_left(self._times, end)
        for row, cap in self._checks(bandwidth):
            peak = np.max(self._profile[row, first:stop])
            if peak > cap:
                name = self._names[row - 2]
                raise OverAllocation(
                    f"cannot reserve {key!r} over [{start}, {end}): {name} would reach "
                    f"{peak + bandwidth[name]} > limit {self.bandwidth_limits[name]}")

    def _book(self, key: Hashable, start: float, end: float, mask: int, bandwidth: dict) -> None:
        """Take ``mask`` and ``bandwidth`` over ``[start, end)`` (from the
        origin if ``start`` precedes it), unchecked."""
        self._own()
        first, stop = self._split(max(start, self.origin)), self._split(end)
        keep = ~mask
        self._free[first:stop] = [free & keep for free in self._free[first:stop]]
        self._profile[1, first:stop] -= mask.bit_count()
        for name, amount in bandwidth.items():
            self._profile[self._row_of[name], first:stop] += amount
        self._records[key] = _Record(start, end, mask, bandwidth)
        self._last_start = max(self._last_start, start)

    def _give_back(self, record: _Record, at: float) -> None:
        self._own()
        first, stop = self._split(at), self._split(record.end)
        self._free[first:stop] = [free | record.mask for free in self._free[first:stop]]
        self._profile[1, first:stop] += record.mask.bit_count()
        for name, amount in record.bandwidth.items():
            self._profile[self._row_of[name], first:stop] -= amount

    def _checks(self, bandwidth: Mapping[str, float] | None) -> list:
        """(profile row, highest reserved level that still fits) per named resource."""
        if not bandwidth:
            return []
        for name, need in bandwidth.items():
            if name not in self._row_of:
                raise InvalidValue(f"unknown bandwidth resource {name!r}; known: {sorted(self._row_of)}")
            if not need >= 0:
                raise InvalidValue(f"bandwidth need for {name!r} must be >= 0, got {need!r}")
        return [(self._row_of[name], self._caps[self._row_of[name] - 2] - need)
                for name, need in bandwidth.items()]

    def _split(self, t: float) -> int:
        """Index of the segment starting at ``t``, inserting a breakpoint if
        needed; ``t = inf`` gives one past the last segment."""
        times = self._times
        index = bisect_left(times, t)
        if t == math.inf or (index < len(times) and times[index] == t):
            return index
        size = len(times)
        self._grow(size + 2)
        profile = self._profile
        profile[:, index + 1:size + 2] = profile[:, index:size + 1]
        profile[1:, index] = profile[1:, index - 1]
        profile[0, index] = t
        times.insert(index, t)
        self._free.insert(index, self._free[index - 1])
        return index

    def _merge(self, index: int) -> None:
        """Remove the breakpoint at segment ``index`` > 0, whose segment
        holds the same as the one before it."""
        self._own()
        times, size = self._times, len(self._times)
        self._profile[:, index:size] = self._profile[:, index + 1:size + 1].copy()
        del times[index], self._free[index]

    def _own(self) -> None:
        """Copy what is borrowed before the first change."""
        if self._borrowed:
            self._times, self._free = list(self._times), list(self._free)
            self._profile = self._profile[:, :len(self._times) + 1].copy()
            self._records = dict(self._records)
            self._borrowed = False

    def _grow(self, columns: int) -> None:
        capacity = self._profile.shape[1]
        if columns > capacity:
            grown = np.zeros((len(self._profile), max(columns, 2 * capacity)))
            grown[:, :capacity] = self._profile
            self._profile = grown

    def _slot(self, start: float, mask: int, query: tuple, request: tuple) -> Slot:
        self._found[request] = start
        slot = Slot.__new__(Slot)
        slot._start, slot._hosts, slot._tracker, slot._mask = float(start), None, self, mask
        slot._query = query
        return slot

    def _mask(self, hosts: ProcSet) -> int:
        mask = 0
        # ProcSet intervals are maximal, so each interval of tracked hosts
        # lies in one tracked interval, where ids and bit indices run together.
        for interval in _as_procset(hosts).intervals():
            block = bisect_right(self._intervals, (interval.inf, math.inf)) - 1
            if block < 0 or interval.sup > self._intervals[block][1]:
                raise InvalidValue(f"hosts {_as_procset(hosts) - self.hosts} are not tracked "
                                 f"(tracked: {self.hosts})")
            index = self._first_index[block] + interval.inf - self._intervals[block][0]
            mask |= ((1 << len(interval)) - 1) << index
        return mask

    def _hosts_of(self, mask: int) -> ProcSet:
        runs = []
        for block, (inf, sup) in enumerate(self._intervals):
            bits = (mask >> self._first_index[block]) & ((1 << (sup - inf + 1)) - 1)
            while bits:
                low = (bits & -bits).bit_length() - 1
                length = (~(bits >> low) & ((bits >> low) + 1)).bit_length() - 1
                runs.append((inf + low, inf + low + length - 1))
                bits &= ~(((1 << length) - 1) << low)
        return ProcSet(*runs)


def _lowest(mask: int, count: int) -> int:
    """The ``count`` lowest set bits of ``mask`` (which has at least that many)."""
    if count == 0:
        return 0
    # Free hosts mostly come in blocks: try the block at the lowest bit first.
    low = (mask & -mask).bit_length() - 1 + count
    if (mask & ((1 << low) - 1)).bit_count() == count:
        return mask & ((1 << low) - 1)
    high = mask.bit_length()
    while low < high:  # smallest width whose prefix holds `count` bits
        middle = (low + high) // 2
        if (mask & ((1 << middle) - 1)).bit_count() >= count:
            high = middle
        else:
            low = middle + 1
    return mask & ((1 << low) - 1)


def _as_procset(hosts) -> ProcSet:
    """``hosts`` as a ProcSet, without copying one (copies are slow)."""
    return hosts if isinstance(hosts, ProcSet) else ProcSet(*hosts)


def _check_duration(duration: float) -> None:
    if not duration > 0:
        raise InvalidValue(f"duration must be > 0 (math.inf for no walltime), got {duration!r}")
