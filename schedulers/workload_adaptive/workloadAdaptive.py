"""Workload-adaptive I/O-aware scheduling with the "two-group" approximation
(paper 000, Section VII and VII-A, eqs. 1-5, Algorithms 5-7).

Design notes (the model, its sources, the choices made): this folder's README.md, section workloadAdaptive.py.
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
import math
from typing import NamedTuple, cast

from batsim.batsim import Job
import numpy as np

from batio.schedulers.options import Option
from batio.schedulers.reservation import ReservationTracker, Slot
from batio.schedulers.workload_adaptive.ioAware import LUSTRE, R_NOW_KEY, IoAware

ADJUSTED = "lustre_adjusted"
"""Key of r_j' in a regular job's bandwidth need; AdaptiveTracker routes it to AT."""


class JobShare(NamedTuple):
    """A job as the target computation sees it: r_j (bytes/s), n_j, d_j (s),
    and b_j for a running job (None for a queued one)."""

    r: float
    n: int
    d: float
    b: float | None = None


# -- the pure computations (eqs. 1-5, Algorithm 5 lines 3-8) ---------------

def target_throughput(R: Sequence[JobShare], Q: Sequence[JobShare], t_now: float, N: int,
                      default: float) -> float:
    """R~, Algorithm 5 lines 3-5 [reconstructed, README.md]; ``default``
    when there is no node time to weigh."""
    V_IO = node_time = 0.0
    for j in R:
        end = math.inf if j.b is None else j.b + j.d
        if t_now < end < math.inf:                 # running jobs not yet past their estimate
            V_IO += j.r * (end - t_now)
            node_time += j.n * (end - t_now)
    for j in Q:
        if j.d < math.inf:
            V_IO += j.r * j.d
            node_time += j.n * j.d
    T_nodes = node_time / N
    return V_IO / T_nodes if T_nodes > 0 else default


def threshold(Q: Sequence[JobShare]) -> float:
    """r*, eq. 2: the minimum per-node throughput such that the zero jobs hold
    at least half the queued node-hours (0 for an empty queue)."""
    weighed = sorted(((j.r / j.n, j.n * j.d) for j in Q if j.d < math.inf), key=lambda pair: pair[0])
    total = sum(area for _, area in weighed)
    covered = 0.0
    for rate_per_node, area in weighed:
        covered += area
        if covered >= total / 2:
            return rate_per_node
    return 0.0


def is_zero_job(r_j: float, n_j: int, r_star: float) -> bool:
    """j in Zero Jobs: r_j <= n_j r* (tested per node)."""
    return r_j / n_j <= r_star


def zero_mean(Q: Sequence[JobShare], r_star: float) -> float:
    """r_zero_mean, eq. 3 [reconstructed, per node]."""
    volume = node_time = 0.0
    for j in Q:
        if j.d < math.inf and is_zero_job(j.r, j.n, r_star):
            volume += j.r * j.d
            node_time += j.n * j.d
    return volume / node_time if node_time > 0 else 0.0


def adjusted_target(R_target: float, N: int, r_zero_mean: float) -> float:
    """R~', eq. 4."""
    return R_target - N * r_zero_mean


def adjusted_rate(r_j: float, n_j: int, r_star: float, r_zero_mean: float) -> float:
    """r_j', eq. 5."""
    return 0.0 if is_zero_job(r_j, n_j, r_star) else r_j - n_j * r_zero_mean


def allowed_level(R_target_adjusted: float, r_adjusted: float, overshoot: float) -> float:
    """The highest AT level at which a regular job with r_j' = ``r_adjusted``
    may start (Algorithm 7 line 7, with theta = ``overshoot``; README.md):
    R~' - (1 - theta) min(r_j', R~'), never above R~'."""
    return R_target_adjusted - (1.0 - overshoot) * min(max(r_adjusted, 0.0), max(R_target_adjusted, 0.0))


# -- AT: the adjusted throughput tracker ----------------------------------

class AdjustedTracker:
    """AT of Algorithms 5-7: a step function over [origin, inf) of signed
    amounts reserved over half-open windows. Segment k is
    [times[k], times[k+1]) (the last one ends at infinity); the arrays keep
    spare capacity so that a new breakpoint shifts in place (as in
    ``ReservationTracker``)."""

    def __init__(self, origin: float = 0.0):
        self.origin = float(origin)
        self._t = np.full(64, math.inf)   # segment starts; [size] holds inf as a sentinel
        self._v = np.zeros(64)            # level of each segment
        self._t[0] = self.origin
        self._size = 1
        self._scale = 0.0   # largest |amount|, for the comparison tolerance
        self.records: dict[Hashable, tuple[float, float, float]] = {}

    def reserve(self, key: Hashable, start: float, end: float, amount: float) -> None:
        """``key`` holds ``amount`` (any sign) over [start, end) (clipped to the origin)."""
        if key in self.records:
            raise KeyError(f"reservation {key!r} already exists in AT")
        start = max(float(start), self.origin)
        self.records[key] = (start, end, amount)
        if not end > start or amount == 0:
            return
        first, stop = self._split(start), self._split(end)
        self._v[first:stop] += amount
        self._scale = max(self._scale, abs(amount))

    def _segment(self, at: float) -> int:
        return max(int(self._t[:self._size].searchsorted(at, "right")) - 1, 0)

    def level(self, at: float) -> float:
        """The AT level at instant ``at`` (>= origin)."""
        return float(self._v[self._segment(at)])

    def peak(self, start: float, end: float) -> float:
        """The highest level over [start, end)."""
        first = self._segment(start)
        stop = max(int(self._t[:self._size].searchsorted(end, "left")), first + 1)
        return float(np.max(self._v[first:stop]))

    def earliest_at_most(self, level: float, t_min: float, duration: float,
                         latest: float | None = None) -> float | None:
        """The earliest t >= t_min such that no more than ``level`` is
        reserved over [t, t + duration); None if never (or not by ``latest``)."""
        t_min = max(float(t_min), self.origin)
        size, times = self._size, self._t
        first = self._segment(t_min)
        cap = level + 1e-9 * max(1.0, abs(level), self._scale)
        stop = max(int(times[:size].searchsorted(t_min + duration, "left")), first + 1)
        if np.max(self._v[first:stop]) <= cap:   # fits at t_min: the usual answer
            return t_min if latest is None or t_min <= latest else None
        blocked = np.flatnonzero(self._v[first:size] > cap) + first
        # Candidates: t_min, then the end of each blocked segment; each must
        # stay clear of the next blocked segment for the whole duration.
        candidates = np.concatenate(([t_min], times[blocked + 1]))
        next_blocked = np.append(times[blocked], math.inf)
        t = float(candidates[int(np.argmax(candidates + duration <= next_blocked))])
        if t == math.inf or (latest is not None and t > latest):
            return None
        return t

    def _split(self, t: float) -> int:
        """Index of the segment starting at ``t``, inserting a breakpoint if
        needed; ``t = inf`` gives one past the last segment."""
        size = self._size
        if t == math.inf:
            return size
        index = int(self._t[:size].searchsorted(t, "left"))
        if index < size and self._t[index] == t:
            return index
        if size + 2 > len(self._t):
            grown = len(self._t) * 2
            self._t = np.concatenate((self._t, np.full(grown - len(self._t), math.inf)))
            self._v = np.concatenate((self._v, np.zeros(grown - len(self._v))))
        self._t[index + 1:size + 2] = self._t[index:size + 1].copy()
        self._v[index + 1:size + 1] = self._v[index:size].copy()
        self._t[index] = t
        self._v[index] = self._v[index - 1]
        self._size = size + 1
        return index


# -- {RT, AT, r*, r_zero_mean, R~'}: Algorithms 6 and 7 ----------------------

class AdaptiveTracker:
    """The object {RT, AT, r*, r_zero_mean, R~'} of Algorithms 5-7, usable by
    ``backfill`` in place of a ReservationTracker.

    A request's bandwidth mapping says which group the job is in: a regular
    job's carries r_j' under ``ADJUSTED`` (and r_j, capped, under ``lustre``),
    a zero job's has no ``ADJUSTED``.
    """

    def __init__(self, RT: ReservationTracker, AT: AdjustedTracker, r_star: float,
                 r_zero_mean: float, R_target_adjusted: float, overshoot: float = 0.5):
        self.RT, self.AT = RT, AT
        self.r_star, self.r_zero_mean = r_star, r_zero_mean
        self.R_target_adjusted = R_target_adjusted
        self.overshoot = overshoot

    @property
    def origin(self) -> float:
        return self.RT.origin

    def earliest_start(self, nb_hosts: int, duration: float,
                       bandwidth: Mapping[str, float] | None = None,
                       after: float | None = None, latest: float | None = None) -> Slot | None:
        """EarliestStartTime, Algorithm 7."""
        needs = dict(bandwidth or {})
        r_adjusted = needs.pop(ADJUSTED, None)
        if r_adjusted is None:
            # Lines 1-2: a "zero job".
            return self.RT.earliest_start(nb_hosts, duration, needs, after, latest)
        # Lines 3-8: a "regular job".
        level = allowed_level(self.R_target_adjusted, r_adjusted, self.overshoot)
        t: float | None = self.RT.origin if after is None else after            # line 4
        while True:                                                             # line 5
            slot = self.RT.earliest_start(nb_hosts, duration, needs, after=t, latest=latest)
            if slot is None:
                return None
            t_RT = slot.start                                                   # line 6
            t = self.AT.earliest_at_most(level, t_RT, duration, latest)         # line 7
            if t is None:
                return None
            if t == t_RT:                                                       # line 8
                return slot

    def reserve(self, key: Hashable, slot: Slot, duration: float,
                bandwidth: Mapping[str, float] | None = None) -> None:
        """ReserveResources, Algorithm 6."""
        needs = dict(bandwidth or {})
        r_adjusted = needs.pop(ADJUSTED, None)
        self.RT.reserve(key, slot, duration, needs)                             # line 1
        if r_adjusted is not None:                                              # line 2: regular
            self.AT.reserve(key, slot.start, slot.start + duration, r_adjusted)  # line 3

    def reservations(self):
        return self.RT.reservations()

    def free_host_count(self, at: float) -> int:
        return self.RT.free_host_count(at)


# -- the scheduler ----------------------------------------------------------

class WorkloadAdaptive(IoAware):
    PAPER = "paper 000 (workload-adaptive I/O-aware scheduling), Sections VII and VII-A, Algorithms 5-7"
    OPTIONS = {
        "two_group": Option(bool, True, help="the two-group approximation (false: naive, r* = 0)"),
        "target_overshoot": Option(float, 0.5, minimum=0.0, maximum=1.0,
                                   help="theta of Algorithm 7 line 7: 1 as printed, 0.5 as the prototype"),
    }

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        self.two_group = self.settings["two_group"]
        self.overshoot = self.settings["target_overshoot"]
        # The last round's parameters (Algorithm 5's outputs).
        self.R_target = self.R_target_adjusted = math.inf
        self.r_star = self.r_zero_mean = 0.0

    def shares(self, now: float) -> tuple[list[JobShare], list[JobShare]]:
        """Algorithm 5 line 1: the latest r_j and d_j of R and Q."""
        R = [self.share(job, b_j) for job, b_j in self.running.values()]
        Q = [self.share(job) for job in self.waiting]
        return R, Q

    def share(self, job: Job, b_j: float | None = None) -> JobShare:
        estimate = self.estimate(job)
        return JobShare(estimate.rate, job.requested_resources, estimate.runtime, b_j)

    def initialize_reservation_tracker(self, now: float) -> AdaptiveTracker:
        """InitializeReservationTracker, Algorithm 5."""
        N = len(self.hosts)
        R, Q = self.shares(now)                                                        # line 1
        RT = self.reservation_tracker(now)                                             # line 2
        self.R_target = target_throughput(R, Q, now, N, default=self.R_limit)          # lines 3-5
        self.r_star = threshold(Q) if self.two_group else 0.0                          # line 6
        self.r_zero_mean = zero_mean(Q, self.r_star)                                   # line 7
        self.R_target_adjusted = adjusted_target(self.R_target, N, self.r_zero_mean)   # line 8
        AT = AdjustedTracker(now)                                                      # line 9
        for running in self.running_jobs(now):                                         # line 10
            if running.key == R_NOW_KEY:
                continue
            job, _ = self.running[cast(str, running.key)]   # Backfill.running_jobs keys jobs by id
            r_j = running.bandwidth.get(LUSTRE, 0.0)
            AT.reserve(running.key, running.start, running.held_until(now),            # line 11
                       r_j - job.requested_resources * self.r_zero_mean)
        return AdaptiveTracker(RT, AT, self.r_star, self.r_zero_mean, self.R_target_adjusted,
                               self.overshoot)

    def bandwidth_need(self, job: Job, now: float) -> Mapping[str, float]:
        """What a queued job reserves: r_j in RT (capped, as IoAware) and, for
        a regular job, r_j' in AT (Algorithm 6, eq. 5)."""
        r_j, n_j = self.estimate(job).rate, job.requested_resources
        need = {LUSTRE: min(r_j, self.R_limit)} if r_j > 0 else {}   # as IoAware
        if not is_zero_job(r_j, n_j, self.r_star):
            need[ADJUSTED] = adjusted_rate(r_j, n_j, self.r_star, self.r_zero_mean)
        return need
