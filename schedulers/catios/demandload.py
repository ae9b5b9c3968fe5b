"""The system-wide I/O demand over time of CATIOS (seed 002, "Time-resolved
I/O simulation"): ``load[t]``, the summed per-second demand D of the jobs
admitted so far, in bytes/s, and the admission check of a candidate job.

Design notes (the model, its sources, the choices made): this folder's README.md, section demandload.py.
"""
from __future__ import annotations

from collections.abc import Hashable
import math

import numpy as np

from batio.errors import InvalidValue

_TOLERANCE = 1e-9  # relative: add then remove may leave rounding residue in a bin


def clip(demand: np.ndarray, bandwidth: float, fraction: float = 0.75) -> np.ndarray:
    """D with every D[i] clipped to ``fraction``·B (the poster's robustness rule)."""
    return np.minimum(np.asarray(demand, dtype=float), fraction * bandwidth)


class DemandLoad:
    """``load[t]`` over whole seconds t >= ``origin`` (README.md)."""

    def __init__(self, origin: float = 0.0, capacity: int = 4096):
        self._base = math.floor(origin)  # the second of _buffer[0]
        self._head = 0                   # index of the origin's second in _buffer
        self._end = 0                    # index past the last bin any demand reaches
        self._buffer = np.zeros(max(int(capacity), 1))
        self._scratch = np.empty(0)
        self._jobs: dict[Hashable, tuple[int, np.ndarray]] = {}  # key -> (first bin's second, D)

    # -- inspection ------------------------------------------------------

    @property
    def origin(self) -> int:
        """The first second still modelled (``advance`` moves it)."""
        return self._base + self._head

    @property
    def horizon(self) -> int:
        """One past the last second with admitted demand (>= origin)."""
        return self._base + max(self._end, self._head)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._jobs

    def __len__(self) -> int:
        return len(self._jobs)

    def load(self, start: float, stop: float) -> np.ndarray:
        """A copy of load[t] for the seconds floor(start) .. floor(stop) - 1."""
        first, last = self._index(start), math.floor(stop) - self._base
        values = np.zeros(max(last - first, 0))
        known = self._buffer[first:min(last, self._end)]
        values[:len(known)] = known
        return values

    def ends_after(self, t: float) -> list[int]:
        """The seconds after ``t`` at which some admitted demand ends (its
        last second + 1), in increasing order: the times the load can only
        have dropped."""
        after = math.floor(t)
        return sorted({start + len(demand) for start, demand in self._jobs.values()
                       if start + len(demand) > after})

    # -- the admission check ---------------------------------------------

    def fits(self, demand: np.ndarray, t0: float, bandwidth: float) -> bool:
        """Whether A[t] = load[t] + D[t - t0] <= B for every t in
        [t0, t0 + n - 1] (n = len(D)); ``t0`` >= origin."""
        first = self._index(t0)
        n = len(demand)
        cap = bandwidth * (1 + _TOLERANCE)
        overlap = min(n, max(self._end - first, 0))
        if overlap:
            if len(self._scratch) < overlap:
                self._scratch = np.empty(max(overlap, 2 * len(self._scratch)))
            aggregate = np.add(self._buffer[first:first + overlap], demand[:overlap],
                               out=self._scratch[:overlap])
            if aggregate.max() > cap:
                return False
        return overlap == n or demand[overlap:].max() <= cap

    def earliest_fit(self, demand: np.ndarray, after: float, bandwidth: float) -> float:
        """The first of ``after`` and the later ends of admitted demands
        (``ends_after``) at which ``fits`` holds. Past the last end the load
        is 0, so a D within B fits there at the latest; a D that never fits
        (some D[i] > B) gives ``math.inf``. Starts between two ends are not
        tried: this is a planning bound, not the earliest second."""
        if self.fits(demand, after, bandwidth):
            return float(after)
        for end in self.ends_after(after):
            if self.fits(demand, end, bandwidth):
                return float(end)
        return math.inf

    # -- updates ---------------------------------------------------------

    def add(self, key: Hashable, demand: np.ndarray, t0: float) -> None:
        """Admit ``key``'s D from ``t0`` (>= origin): load[t0 + i] += D[i]."""
        if key in self._jobs:
            raise KeyError(f"demand {key!r} already added")
        demand = np.asarray(demand, dtype=float)
        first = self._index(t0)
        stop = first + len(demand)
        if stop > len(self._buffer):
            self._make_room(stop)
            first = self._index(t0)
            stop = first + len(demand)
        self._buffer[first:stop] += demand
        self._end = max(self._end, stop)
        self._jobs[key] = (self._base + first, demand)

    def remove(self, key: Hashable, at: float | None = None) -> None:
        """``key`` no longer loads the system from second floor(``at``) on
        (it ended then): subtract what remains of its D. ``at=None`` (or a
        time before its start) removes all of it, e.g. a withdrawn plan. A
        job that outlived its D has nothing left to subtract."""
        start, demand = self._jobs.pop(key)
        cut = start if at is None else max(math.floor(at), start)
        cut = max(cut, self.origin)
        stop = start + len(demand)
        if cut < stop:
            self._buffer[cut - self._base:stop - self._base] -= demand[cut - start:]

    def advance(self, now: float) -> None:
        """Drop the seconds before floor(``now``); they can no longer be used."""
        self._head = max(self._head, math.floor(now) - self._base)
        if self._head > len(self._buffer) // 2:
            self._compact()

    # -- internals -------------------------------------------------------

    def _index(self, t: float) -> int:
        index = math.floor(t) - self._base
        if index < self._head:
            raise InvalidValue(f"time {t} is before the load's origin {self.origin}")
        return index

    def _compact(self) -> None:
        """Move the modelled seconds to the front of the buffer."""
        live = max(self._end - self._head, 0)
        self._buffer[:live] = self._buffer[self._head:self._head + live]
        self._buffer[live:] = 0.0
        self._base += self._head
        self._end = live
        self._head = 0

    def _make_room(self, stop: int) -> None:
        """Room for the bins before index ``stop`` (of the current base)."""
        dropped = self._head
        self._compact()
        needed = stop - dropped
        if needed > len(self._buffer):
            grown = np.zeros(max(needed, 2 * len(self._buffer)))
            grown[:self._end] = self._buffer[:self._end]
            self._buffer = grown
