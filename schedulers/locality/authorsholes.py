"""The authors' conservative backfilling (paper 004's simulator,
``src/backfill_functions.c``): a plan of each core's next availability
by core id, with the holes it leaves and the stale ``biggest_hole`` gate.
"""
from __future__ import annotations

import math

import numpy as np

from batio.schedulers.locality.coreplan import CoreTimes


class HoleGate:
    """The authors' ``biggest_hole``: the most cores in a hole on one node,
    which gates backfilling once every core free now is taken. It is reset
    to 0 at each re-plan and recomputed only when a job is placed on the
    node that held it (``biggest_hole_unique_id``, kept across re-plans), so
    it goes stale: holes made elsewhere do not raise it."""

    def __init__(self):
        self.biggest = 0
        self.node = 0


class AuthorsHoles(CoreTimes):
    """With ``authors_code`` and backfilling: the authors' conservative
    backfilling (``src/backfill_functions.c``, ``backfill_mode`` 2), a plan
    of each core's next availability by core id. A job's t_k on a node is
    the availability of the Cores(J)-th earliest core (no window search),
    or now if it fits in the node's hole: cores free now but taken by a
    later reservation (``start_time_of_the_hole``), enough of them free
    until t_k + WallTime(J), the rest free now and outside the hole. A job
    planned later takes the lowest-id cores free by its t_k, and those free
    now join the hole."""

    def __init__(self, held: np.ndarray, now: float, gate: HoleGate):
        self.avail = np.where(held == -math.inf, now, np.maximum(held, now))   # (P, m) by core id
        self.sorted_avail = np.sort(self.avail, axis=1)   # kept per node: t_k, LEO's switch and holes read it
        self.holes: dict[int, list[tuple[float, int]]] = {}   # node -> [(hole start, core)], the authors' order
        self.now = now
        self.count_free_now()
        self.gate = gate
        gate.biggest = 0
        self.holes_only = False   # the authors' second phase: only jobs fitting in a hole
        # A job pinned to its history node takes the Cores(J) earliest cores,
        # no hole (``schedule_job_specific_node_at_earliest_available_time``).
        self.pinned = False

    def _sorted(self, node: int) -> list[tuple[float, int]]:
        """(availability, core) of a node's cores, earliest first (ties: core id)."""
        row = self.avail[node]
        return sorted((float(row[core]), core) for core in range(len(row)))

    def _eat(self, node: int, cores: int) -> float:
        return max(float(self.sorted_avail[node, cores - 1]), self.now)

    def split(self, node: int, cores: int, walltime: float) -> tuple[int, int] | None:
        """(cores from the hole, cores from outside) if the job can start now
        in the node's hole (``can_it_get_backfilled``; in the second phase,
        ``only_check_conservative_backfill``: wholly in the hole)."""
        holes = self.holes.get(node)
        if not holes:
            return None
        if self.holes_only and cores > len(holes):
            return None
        in_order = self.sorted_avail[node].tolist()
        if not (cores <= len(holes) or in_order[cores - 1 - len(holes)] <= self.now):
            return None
        from_hole = 0
        for start, _ in holes:
            if self.now + walltime <= start:
                from_hole += 1
            if from_hole == cores:
                break
        if self.holes_only:
            return (cores, 0) if from_hole == cores else None
        outside = cores - from_hole
        if all(t <= self.now for t in in_order[:outside]):
            return from_hole, outside
        return None

    def earliest_core(self, cores: int) -> np.ndarray:
        return self.sorted_avail[:, cores - 1]

    def earliest(self, cores: int, walltime: float) -> np.ndarray:
        if self.holes_only:
            t_k = np.full(len(self.avail), math.inf)
        else:
            t_k = np.maximum(self.earliest_core(cores), self.now)
        for node in self.holes:
            if self.split(node, cores, walltime) is not None:
                t_k[node] = self.now
        return t_k

    def earliest_on(self, node: int, cores: int, walltime: float) -> float:
        if not self.pinned and self.split(node, cores, walltime) is not None:
            return self.now
        return math.inf if self.holes_only else self._eat(node, cores)

    def reserve(self, node: int, cores: int, start: float, end: float) -> list[int]:
        """Plan a job on ``node`` over [start, end); returns the core ids."""
        row = self.avail[node]
        was_free = self.sorted_avail[node, 0] <= self.now
        if self.pinned:
            chosen = [core for _, core in self._sorted(node)[:cores]]
            row[chosen] = end
        elif start == self.now and (self.holes_only or self._eat(node, cores) > self.now):
            chosen = self._backfill(node, cores, end)
        else:   # fill_cores_minimize_holes
            times = row.tolist()   # Python floats: numpy's scalar reads cost more than the loop
            chosen = [core for core, time in enumerate(times) if time <= start][:cores]
            holes = self.holes.setdefault(node, [])
            if self.now < start:   # a core free now left idle until start is a hole
                for core in chosen:
                    if times[core] <= self.now:
                        _insert_hole(holes, (start, core))
            row[chosen] = end
        self.sorted_avail[node] = np.sort(row)
        self.free_now += int(self.sorted_avail[node, 0] <= self.now) - int(was_free)
        if node == self.gate.node:   # get_new_biggest_hole: the first node with the most (node 0 if none has one)
            self.gate.biggest = max(map(len, self.holes.values()), default=0)
            self.gate.node = min((other for other, holes in self.holes.items() if len(holes) == self.gate.biggest),
                                 default=0) if self.gate.biggest else 0
        return chosen

    def _backfill(self, node: int, cores: int, end: float) -> list[int]:
        """``update_cores_for_backfilled_job``: the first cores of the hole
        free until ``end``, which keep their later reservation, then the
        earliest cores outside it, held until ``end``."""
        split = self.split(node, cores, end - self.now)
        assert split is not None, "reserve() backfills only where split() found a hole"
        from_hole, outside = split
        holes = self.holes[node]
        taken = [entry for entry in holes if end <= entry[0]][:from_hole]
        for entry in taken:
            holes.remove(entry)
        others = [core for _, core in self._sorted(node)[:outside]]
        self.avail[node, others] = end
        return [core for _, core in taken] + others


def _insert_hole(holes: list[tuple[float, int]], entry: tuple[float, int]) -> None:
    """``insert_cores_in_a_hole_list_sorted_increasing_order``: by hole
    start; an equal start goes first only at the head and with a lower core
    id, after the equal ones elsewhere."""
    start, core = entry
    if not holes or holes[0][0] > start or (holes[0][0] == start and holes[0][1] > core):
        holes.insert(0, entry)
        return
    index = 1
    while index < len(holes) and holes[index][0] <= start:
        index += 1
    holes.insert(index, entry)
