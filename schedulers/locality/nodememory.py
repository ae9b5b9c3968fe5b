"""What has happened on each node (paper 004, Section 3): the files in its
memory (``NodeMemory``, with the eviction rule), the cores its started jobs
hold (``CoreLedger``), Section 4.1's load cases and a load's duration.
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from enum import IntEnum
import math

import numpy as np

from batio.schedulers.reservation import OVERRUN_GRACE


class LoadCase(IntEnum):
    """Section 4.1's three cases, numbered as in the paper."""

    IN_MEMORY = 1
    NOT_IN_MEMORY = 2
    BEING_LOADED = 3


@dataclass
class Copy:
    """One file in one node's memory."""

    file: Hashable
    size: float
    load_start: float
    ready_estimate: float          # load_start + size / bandwidth (case 3's t'_k)
    loaded: bool
    slot: int
    users: dict = field(default_factory=dict)   # started job id -> planned end
    last_end: float = -math.inf    # when its last user ended (cached copies)
    stale_end: float = -math.inf   # NodeMemory's stale_use_end: the latest planned end of a user since it was loaded

    @property
    def cached(self) -> bool:
        return self.loaded and not self.users

    def last_use(self) -> float:
        """Latest planned use: its users' planned ends, or its last end."""
        return max(max(self.users.values()), self.stale_end) if self.users else self.last_end


class Slots:
    """Copies as rows of arrays, one row per node, one column per copy
    (``file`` is -1 in unused columns), so a round reads every node at once.

    ``ready`` is -inf once loaded; ``last_use`` the latest planned use;
    ``evict_at`` (plans only) the first planned start of a job of another
    file at or after ``last_use``.
    """

    FIELDS = (("file", -1), ("size", 0.0), ("load_start", math.inf), ("ready", math.inf),
              ("last_use", -math.inf), ("evict_at", math.inf))
    # The arrays FIELDS names, set by __init__ and free_column.
    file: np.ndarray
    size: np.ndarray
    load_start: np.ndarray
    ready: np.ndarray
    last_use: np.ndarray
    evict_at: np.ndarray

    def __init__(self, nb_nodes: int, width: int):
        for name, fill in self.FIELDS:
            setattr(self, name, np.full((nb_nodes, width), fill, dtype=np.int64 if name == "file" else float))
        self.row_bytes = np.zeros(nb_nodes)   # sum of sizes per node, bounds EvictionPenalty
        # Per node, one past the last column it ever used: a loop over a node's
        # copies stops there (rows are as wide as the fullest node's).
        self.top = np.zeros(nb_nodes, dtype=np.int64)   # an array: alike_runs reads and extends it

    def copy(self) -> Slots:
        twin = Slots.__new__(Slots)
        for name, _ in self.FIELDS:
            setattr(twin, name, getattr(self, name).copy())
        twin.row_bytes = self.row_bytes.copy()
        twin.top = self.top.copy()
        return twin

    def free_column(self, node: int) -> int:
        """A free column of the node's row, which the caller fills."""
        row = self.file[node].tolist()
        if -1 in row:
            column = row.index(-1)
        else:
            column = len(row)
            self.grow()
        self.top[node] = max(int(self.top[node]), column + 1)
        return column

    def grow(self) -> None:
        """Twice as many columns."""
        for name, fill in self.FIELDS:
            array = getattr(self, name)
            setattr(self, name, np.hstack([array, np.full_like(array, fill)]))

    def clear(self, node: int, slot: int) -> None:
        self.row_bytes[node] -= self.size[node, slot]
        for name, fill in self.FIELDS:
            getattr(self, name)[node, slot] = fill


def load_seconds(bandwidth: float):
    """Size / Bandwidth, the time to load a file (Section 3)."""
    return lambda size: size / bandwidth


def truncated_load_seconds(bandwidth: float):
    """Size / Bandwidth as the authors' simulator counts it: in single
    precision, in GB and GB/s, truncated to whole seconds (``transfer_time``
    is an ``int`` in ``src/basic_functions.c``): a 83.2 GB file at 0.1 GB/s
    takes 831 s there."""
    rate = np.float32(bandwidth / 1e9)
    return lambda size: float(int(np.float32(size / 1e9) / rate))


class NodeMemory:
    """Files in each node's memory, and the eviction rule (``README.md``, "Eviction").
    The copies are also mirrored in ``slots`` for the plans.

    ``retain_cached``: a copy whose last user ended stays until another
    file's job starts on the node (the paper), or only for jobs started at
    that very instant (False: the authors' code). ``load_time(size)``: the
    seconds a load takes (default Size / Bandwidth). ``stale_use_end``: a
    copy in use stays in use until the latest planned end of every job that
    used it since it was loaded, even one that ended early (the authors'
    code: ``add_data_in_node`` in ``src/basic_functions.c`` only raises a
    file's ``end_time`` until its last user ends); False: of the jobs using
    it now."""

    def __init__(self, nb_nodes: int, memory_bytes: float, bandwidth: float, load_time=None,
                 retain_cached: bool = True, stale_use_end: bool = False):
        self.memory_bytes = float(memory_bytes)
        self.bandwidth = float(bandwidth)
        self.load_time = load_time or load_seconds(self.bandwidth)
        self.retain_cached = retain_cached
        self.stale_use_end = stale_use_end
        self.copies: list[dict[Hashable, Copy]] = [{} for _ in range(nb_nodes)]
        self.file_ids: dict[Hashable, int] = {}
        self.slots = Slots(nb_nodes, 8)
        self.holders: dict[int, dict[int, int]] = {}   # file id -> {node: column}
        self.version = [0] * nb_nodes   # per node, counts its changes: a plan's row kept for it holds while equal

    def file_id(self, file: Hashable) -> int:
        return self.file_ids.setdefault(file, len(self.file_ids))

    def start_job(self, node: int, job_id: str, file: Hashable, size: float, now: float,
                  planned_end: float) -> tuple[LoadCase, list[Hashable]]:
        """A job is started on ``node`` at ``now`` (t_k): returns its case and
        the files its start evicted."""
        copies = self.copies[node]
        self.version[node] += 1
        if self.retain_cached:
            evicted = [other for other, copy in copies.items() if other != file and copy.cached]
        else:
            evicted = [other for other, copy in copies.items() if copy.cached and copy.last_end < now]
        for other in evicted:
            self._forget(node, copies.pop(other))
        copy = copies.get(file)
        if copy is None:
            copy = Copy(file, size, now, now + self.load_time(size), loaded=size == 0,
                        slot=self.slots.free_column(node))
            copies[file] = copy
            self.holders.setdefault(self.file_id(file), {})[node] = copy.slot
            self.slots.row_bytes[node] += size
            case = LoadCase.IN_MEMORY if copy.loaded else LoadCase.NOT_IN_MEMORY
        else:
            case = LoadCase.IN_MEMORY if copy.loaded else LoadCase.BEING_LOADED
        copy.users[job_id] = planned_end
        if self.stale_use_end:
            copy.stale_end = max(copy.stale_end, planned_end)
        self._mirror(node, copy)
        return case, evicted

    def load_finished(self, node: int, file: Hashable) -> list[str]:
        """The load of ``file`` on ``node`` completed: the jobs that waited for it."""
        copy = self.copies[node][file]
        copy.loaded = True
        self.version[node] += 1
        self._mirror(node, copy)
        return list(copy.users)

    def end_job(self, node: int, job_id: str, file: Hashable, now: float) -> None:
        """A started job completed or was killed; its file stays cached."""
        copy = self.copies[node][file]
        del copy.users[job_id]
        self.version[node] += 1
        if not copy.users:
            copy.last_end, copy.stale_end = now, -math.inf
        self._mirror(node, copy)

    def bytes_used(self, node: int) -> float:
        return sum(copy.size for copy in self.copies[node].values())

    def files(self, node: int) -> set:
        return set(self.copies[node])

    def _mirror(self, node: int, copy: Copy) -> None:
        slots, column = self.slots, copy.slot
        slots.file[node, column] = self.file_id(copy.file)
        slots.size[node, column] = copy.size
        slots.load_start[node, column] = copy.load_start
        slots.ready[node, column] = -math.inf if copy.loaded else copy.ready_estimate
        slots.last_use[node, column] = copy.last_use()

    def _forget(self, node: int, copy: Copy) -> None:
        self.slots.clear(node, copy.slot)
        holders = self.holders[self.file_id(copy.file)]
        del holders[node]


class CoreLedger:
    """Cores held by started jobs: ``held[k, c]`` is the planned end of the job
    on core c of node k, -inf when the core is free."""

    def __init__(self, nb_nodes: int, cores: int):
        self.held = np.full((nb_nodes, cores), -math.inf)
        self.where: dict[str, tuple[int, np.ndarray]] = {}
        self.version = [0] * nb_nodes   # per node, counts its starts and ends

    def start(self, job_id: str, node: int, cores: int, planned_end: float, core_ids=None) -> None:
        """Hold ``cores`` free cores of ``node`` (the lowest, or ``core_ids``)."""
        free = np.flatnonzero(self.held[node] == -math.inf)[:cores]
        if core_ids is not None and (self.held[node, core_ids] == -math.inf).all():
            free = np.asarray(core_ids)
        if len(free) < cores:
            raise RuntimeError(f"job {job_id}: node {node} has {len(free)} free cores, needs {cores}")
        self.held[node, free] = planned_end
        self.where[job_id] = (node, free)
        self.version[node] += 1

    def end(self, job_id: str) -> None:
        node, cores = self.where.pop(job_id)
        self.held[node, cores] = -math.inf
        self.version[node] += 1

    def ends_by(self, now: float) -> np.ndarray:
        """Per node, whether a job on it reaches its planned end by ``now``
        (its cores are then seen free at now + OVERRUN_GRACE: see
        ``availability``)."""
        held = self.held
        return np.asarray(((held > -math.inf) & (held <= now)).any(axis=1))

    def free_cores(self, node: int, core_ids=None) -> int:
        free = self.held[node] == -math.inf
        return int(free[core_ids].sum() if core_ids is not None else free.sum())

    def busy_nodes(self) -> np.ndarray:
        """Nodes running at least one started job (Algorithm 5's load)."""
        return np.asarray((self.held > -math.inf).any(axis=1))

    def availability(self, now: float) -> np.ndarray:
        """Each core's next availability seen at ``now``, sorted per node; a
        job past its planned end (its kill in flight) holds its core for
        ``OVERRUN_GRACE`` more seconds."""
        held = self.held
        times = np.where(held == -math.inf, now, np.where(held > now, held, now + OVERRUN_GRACE))
        return np.sort(times, axis=1)
