"""A round's plan of the cores (paper 004, Algorithm 1 line 3 and line 3'):
each core's next availability without backfilling (``CoreAvailability``),
each node's free-core count over time with it (``CoreProfile``).
"""
from __future__ import annotations

import math

from numba import njit
import numpy as np

from batio.schedulers.locality.nodememory import CoreLedger


class CoreTimes:
    """A plan of each core's next availability (``avail``, one row per node)
    seen from ``now``. ``free_now``: the nodes with a core free now and not
    taken by a planned job; ``reserve`` keeps it up to date node by node,
    since the authors' stop asks for it after every job planned."""

    avail: np.ndarray
    now: float
    free_now: int

    def can_advance(self, now: float) -> bool:
        """No core frees after the plan's now and by ``now``."""
        return not ((self.avail > self.now) & (self.avail <= now)).any()

    def advance(self, now: float) -> bool:
        """Move the plan to a later ``now`` when no core frees in between."""
        if not self.can_advance(now):
            return False
        self.now = now
        self.count_free_now()
        return True

    def count_free_now(self) -> None:
        self.free_now = int((self.earliest_core(1) <= self.now).sum())

    def any_free_now(self) -> bool:
        """Some core is free now and not taken by a planned job."""
        return self.free_now > 0

    def earliest_core(self, cores: int) -> np.ndarray:
        """Per node, the availability of the Cores(J)-th earliest core."""
        raise NotImplementedError


class CoreAvailability(CoreTimes):
    """Without backfilling (Algorithm 1, line 3): the time of next
    availability of each core; a job takes the Cores(J) earliest cores."""

    def __init__(self, availability: np.ndarray, now: float):
        self.avail = availability.copy()   # (P, m), sorted per row
        self.now = now
        self.count_free_now()

    def earliest_core(self, cores: int) -> np.ndarray:
        return self.avail[:, cores - 1]

    def earliest(self, cores: int, walltime: float) -> np.ndarray:
        """t_k per node: smallest time Cores(J) cores are available."""
        return np.maximum(self.earliest_core(cores), self.now)

    def earliest_on(self, node: int, cores: int, walltime: float) -> float:
        return max(float(self.avail[node, cores - 1]), self.now)

    def reserve(self, node: int, cores: int, start: float, end: float) -> None:
        row = self.avail[node]
        was_free = row[0] <= self.now
        row[:cores] = end
        row.sort()
        self.free_now += int(row[0] <= self.now) - int(was_free)

    def row(self, node: int) -> np.ndarray:
        """What the plan holds for ``node`` (``put_rows`` takes it back)."""
        return self.avail[node].copy()

    @staticmethod
    def gather_rows(rows: list[np.ndarray], sinces: list[float]) -> np.ndarray:
        """``rows`` (``row``) made at ``sinces``, as ``put_rows`` takes them back."""
        return np.stack(rows)

    def put_rows(self, nodes: np.ndarray, gathered: np.ndarray) -> None:
        """Take back rows (``gather_rows``) made after jobs that wait: the
        first took every core free then, so their times are all after now."""
        self.avail[nodes] = gathered
        self.count_free_now()

    def last_candidate(self, cores: np.ndarray, walltimes: np.ndarray) -> int:
        """Index of the last job that could still start now (-1 if none): one
        needing at most the most free cores a node has now. Reservations only
        take cores, so a job failing this test cannot start in this round."""
        free_now = np.max((self.avail <= self.now).sum(axis=1))
        fits = np.flatnonzero(cores <= free_now)
        return int(fits[-1]) if len(fits) else -1


class CoreProfile:
    """With conservative backfilling (Section 4.3, line 3'): the number of
    free cores of each node over time, as a step function per row:
    ``free[k, s]`` cores are free on node k over ``[times[k, s], times[k, s+1])``;
    unused columns have time inf. Equal times may repeat (zero-length
    segments), each then carries the count of the last of them."""

    def __init__(self, availability: np.ndarray, now: float):
        nb_nodes, cores = availability.shape
        self.cores = cores
        self.now = now
        width = 2 * cores + 2
        self.times = np.full((nb_nodes, width), math.inf)
        self.free = np.full((nb_nodes, width), cores, dtype=np.int32)
        self.times[:, 0] = now
        self.free[:, 0] = 0
        self.times[:, 1:cores + 1] = availability
        self.free[:, 1:cores + 1] = np.arange(1, cores + 1)
        _merge_equal_times(self.times, self.free, cores)
        self.used = cores + 1
        # Nodes with a core free now (column 0 is now): only a job starting now takes one.
        self.count_free_now()
        # earliest's answers kept per (cores, walltime), with the count of
        # reservations they saw; reserved_at: that count at a node's last one.
        self.windows: dict[tuple[int, float], tuple[np.ndarray, int]] = {}
        self.reservations = 0
        self.reserved_at = np.zeros(nb_nodes, dtype=np.int64)

    def earliest(self, cores: int, walltime: float) -> np.ndarray:
        """t_k per node: smallest time Cores(J) cores are free from t_k until
        t_k + WallTime(J); inf where no such window exists.

        Queued jobs repeat a few (Cores, WallTime) pairs and a reservation
        changes one node, so the answer is kept per pair and only the rows
        reserved since are searched again."""
        kept = self.windows.get((cores, walltime))
        if kept is None:
            t_k = _first_windows(self.times[:, :self.used], self.free[:, :self.used], cores, walltime)
        else:
            t_k, seen = kept
            stale = np.flatnonzero(self.reserved_at > seen)
            if len(stale):
                t_k[stale] = _first_windows(self.times[stale, :self.used], self.free[stale, :self.used],
                                            cores, walltime)
        self.windows[(cores, walltime)] = (t_k, self.reservations)
        return t_k.copy()

    def earliest_on(self, node: int, cores: int, walltime: float) -> float:
        """``earliest`` on one node, as ``_first_windows`` finds it, in plain
        Python: on one row numpy's cost per call is most of the time."""
        times, free = self.times[node, :self.used].tolist(), self.free[node, :self.used].tolist()
        next_bad = first = math.inf
        for t, available in zip(reversed(times), reversed(free)):   # times never increase
            if available < cores:
                next_bad = t
            elif t < math.inf and next_bad >= t + walltime:
                first = t
        return first

    def reserve(self, node: int, cores: int, start: float, end: float) -> None:
        self.reservations += 1
        self.reserved_at[node] = self.reservations
        first = self._breakpoint(node, start)
        stop = self._breakpoint(node, end) if end < math.inf else self.used
        was_free = self.free[node, 0] > 0
        self.free[node, first:stop] -= cores
        if first == 0:
            self.free_now += int(self.free[node, 0] > 0) - int(was_free)

    def any_free_now(self) -> bool:
        """Some core is free now and not taken by a planned job."""
        return self.free_now > 0

    def count_free_now(self) -> None:
        self.free_now = int((self.free[:, 0] > 0).sum())

    def row(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """What the plan holds for ``node`` (``put_rows`` takes it back)."""
        return self.times[node, :self.used].copy(), self.free[node, :self.used].copy()

    @staticmethod
    def gather_rows(rows: list[tuple[np.ndarray, np.ndarray]], sinces: list[float]) -> tuple:
        """``rows`` (``row``) made at ``sinces``, as ``put_rows`` takes them back."""
        return (np.concatenate([times for times, _ in rows]), np.concatenate([free for _, free in rows]),
                np.array([len(times) for times, _ in rows]), np.array(sinces))

    def put_rows(self, nodes: np.ndarray, gathered: tuple) -> None:
        """Take back rows (``gather_rows``) whose later times are all after
        now: their times at their ``since`` become now, as ``advance`` moves
        them."""
        times, free, widths, sinces = gathered
        width = int(widths.max())
        while self.times.shape[1] < width:
            self.grow()
        self.used = max(self.used, width)
        _put_profile_rows(self.times, self.free, nodes, times, free, widths, sinces, self.now, self.cores)
        self.reservations += 1
        self.reserved_at[nodes] = self.reservations
        self.count_free_now()

    def _breakpoint(self, node: int, t: float) -> int:
        if self.used == self.times.shape[1]:   # room for one more column
            self.grow()
        index, self.used = profile_breakpoint(self.times, self.free, node, t, self.used)
        return index

    def grow(self) -> None:
        """Twice as many columns."""
        nb_nodes, width = self.times.shape
        self.times = np.hstack([self.times, np.full((nb_nodes, width), math.inf)])
        self.free = np.hstack([self.free, np.full((nb_nodes, width), self.cores, dtype=np.int32)])

    def can_advance(self, now: float) -> bool:
        """No count changes after the plan's now and by ``now``."""
        times = self.times[:, :self.used]
        return not ((times > self.now) & (times <= now)).any()

    def advance(self, now: float) -> bool:
        """Move the plan to a later ``now`` when no count changes in between
        (so ``free_now`` holds)."""
        if not self.can_advance(now):
            return False
        times = self.times[:, :self.used]
        times[times == self.now] = now
        self.now = now
        self.windows.clear()   # windows starting at the former now start later
        return True

    def hole_lengths(self) -> np.ndarray:
        """``holes[c]``: the longest time, over nodes, that c cores stay free
        from now (0 where no node has them now)."""
        return _hole_lengths(self.times, self.free, self.used, self.cores, self.now)

    def last_candidate(self, cores: np.ndarray, walltimes: np.ndarray) -> int:
        """Index of the last job that could still start now (-1 if none): one
        whose window fits in a hole that is open now. Reservations only
        shrink holes, so a job failing this test cannot start in this round."""
        fits = np.flatnonzero(walltimes <= self.hole_lengths()[cores])
        return int(fits[-1]) if len(fits) else -1


@njit(cache=True)
def profile_breakpoint(times, free, node, t, used):
    """``CoreProfile._breakpoint`` (and ``alike_runs``'): the column of
    ``node``'s row starting at ``t``, inserted if none does; returns it and
    the new ``used``. The caller leaves a spare column."""
    index = np.searchsorted(times[node, :used], t)   # bisect_left
    if index < used and times[node, index] == t:
        return index, used
    times[node, index + 1:used + 1] = times[node, index:used].copy()
    free[node, index + 1:used + 1] = free[node, index:used].copy()
    times[node, index] = t
    free[node, index] = free[node, index - 1]
    if times[node, used] < math.inf:
        used += 1
    return index, used


@njit(cache=True)
def _merge_equal_times(times, free, cores):
    """``CoreProfile``'s first rows: equal times take the count of the last of them."""
    for node in range(times.shape[0]):
        for column in range(cores, -1, -1):
            if times[node, column] == times[node, column + 1]:
                free[node, column] = free[node, column + 1]


@njit(cache=True)
def _put_profile_rows(times, free, nodes, row_times, row_free, widths, sinces, now, cores):
    """``CoreProfile.put_rows``: row i, ``widths[i]`` long in the
    concatenated ``row_times`` and ``row_free``, onto node ``nodes[i]``."""
    offset = 0
    for index in range(len(nodes)):
        node, width, since = nodes[index], widths[index], sinces[index]
        times[node, :] = math.inf
        free[node, :] = cores
        for column in range(width):
            t = row_times[offset + column]
            times[node, column] = now if t == since else t
            free[node, column] = row_free[offset + column]
        offset += width


@njit(cache=True)
def _hole_lengths(times, free, used, cores, now):
    """``CoreProfile.hole_lengths``: per node, c cores stay free from now
    until the first column whose count, or an earlier one's, is short of c
    (inf if none is); the longest over nodes, for each c."""
    holes = np.zeros(cores + 1)
    for node in range(times.shape[0]):
        lowest = cores   # the fewest cores free from now up to this column
        for column in range(used):
            count = min(max(free[node, column], 0), cores)
            if count < lowest:
                end = times[node, column] - now
                for c in range(count + 1, lowest + 1):
                    holes[c] = max(holes[c], end)
                lowest = count
        for c in range(1, lowest + 1):
            holes[c] = math.inf
    holes[0] = 0.0
    return holes


def _first_windows(times: np.ndarray, free: np.ndarray, cores: int, walltime: float) -> np.ndarray:
    """Per row, the first segment start from which ``cores`` stay free for
    ``walltime``: the first segment with too few cores at or after a
    candidate must begin no earlier than the window's end."""
    bad_from = np.where(free < cores, times, math.inf)
    next_bad = np.minimum.accumulate(bad_from[:, ::-1], axis=1)[:, ::-1]
    fits = (free >= cores) & (next_bad >= times + walltime) & (times < math.inf)
    first = fits.argmax(axis=1)
    rows = np.arange(len(times))
    return np.where(fits[rows, first], times[rows, first], math.inf)


def plan_cores(ledger: CoreLedger, now: float, backfill: bool):
    """A round's core plan, from the cores held by started jobs."""
    availability = ledger.availability(now)
    return CoreProfile(availability, now) if backfill else CoreAvailability(availability, now)
