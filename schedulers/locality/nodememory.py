"""Per-node model of the locality-aware schedulers (paper 004, Sections 3-4):
which input files are in each node's memory, when a job's file is available
there, what loading it evicts, and each node's cores over time.

Real state (what has happened)
------------------------------
``NodeMemory`` holds, per node, the copies of files in its memory: loaded or
being loaded (since when), the started jobs using each, and cached copies
(no user left). ``CoreLedger`` holds which cores of which node each started
job occupies, until its planned end t_k + WallTime(J) (Section 3: the window
[t_k, t_k + WallTime] holds the load and the run).

Eviction (Section 3). A file is shared by two jobs of a node only if they run
in parallel, or consecutively with no job started on the node in between;
otherwise "memory operations of jobs scheduled between J_i and J_j cause the
file to be evicted". So a copy stays in memory while a started job uses it
(running, or waiting for its load) and, once cached, until the next job of
another file is started on the node: that start evicts every cached copy of
another file. With the paper's file sizes (Size = Cores/m x M), memory never
overflows under this rule: cached copies only shrink between two starts.
Fact from the authors' simulator (``src/basic_functions.c``,
``add_data_in_node`` and ``remove_data_from_node``, built without
DATA_PERSISTENCE as in their Makefile): there a file whose last user ended is
valid only for a job started at that very instant; the paper's rule also
keeps it across idle time until another job starts. ``NodeMemory`` follows
the paper by default and the authors' code with ``retain_cached=False``.

The three cases of Section 4.1 for a job started on a node at t_k:
1. ``IN_MEMORY``: its file is loaded there, t'_k = t_k;
2. ``NOT_IN_MEMORY``: it is loaded, t'_k = t_k + Size / Bandwidth;
3. ``BEING_LOADED``: a job J_j started at StartTime(J_j) < t_k loads it, the
   job waits for that load only, t'_k = StartTime(J_j) + Size / Bandwidth.

Plan (what a scheduling round builds)
-------------------------------------
A round plans the queued jobs in turn on a copy of the real state (the
copies are mirrored as arrays, ``Slots``, for that):
``CoreAvailability`` (without backfilling: the time each core is next
available, Algorithm 1 line 3) or ``CoreProfile`` (conservative backfilling:
each node's free-core count over time, line 3'), and ``FilePlan`` (each
node's copies over time: real ones and those loads planned for earlier jobs
of the queue will make). All three answer for the P nodes at once with numpy
arrays: a round scores every node for each job.

Cores are counted, not named: Batsim shares a host between jobs and never
sees cores, and a set of time windows whose overlap never exceeds m can
always be given m distinct cores (interval graphs are perfect).
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from enum import IntEnum
import math

from numba import njit
import numpy as np

from batio.schedulers.reservation import OVERRUN_GRACE


class LoadCase(IntEnum):
    """Section 4.1's three cases, numbered as in the paper."""

    IN_MEMORY = 1
    NOT_IN_MEMORY = 2
    BEING_LOADED = 3


# -- real state ----------------------------------------------------------------

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


class PlannedStarts:
    """The starts a plan has planned on each node, for ``evict_at``: a row of
    times per node, sorted (a new start after the equal ones), with the file
    id of each; ``count`` per node. Arrays, so that compiled code
    (``alike_runs``) reads and extends them."""

    def __init__(self, nb_nodes: int, width: int = 8):
        self.times = np.full((nb_nodes, width), math.inf)
        self.files = np.full((nb_nodes, width), -1, dtype=np.int64)
        self.count = np.zeros(nb_nodes, dtype=np.int64)

    def grow(self) -> None:
        """Twice as many columns."""
        self.times = np.hstack([self.times, np.full_like(self.times, math.inf)])
        self.files = np.hstack([self.files, np.full_like(self.files, -1)])

    def insert(self, node: int, t_k: float, file_id: int) -> None:
        if self.count[node] == self.times.shape[1]:
            self.grow()
        insert_start(self.times, self.files, self.count, node, t_k, file_id)

    def first_other(self, node: int, after: float, file_id: int) -> float:
        return first_other_start(self.times, self.files, self.count, node, after, file_id)

    def row(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        used = int(self.count[node])
        return self.times[node, :used].copy(), self.files[node, :used].copy()

    @staticmethod
    def gather_rows(nodes: list[int], rows: list[tuple[np.ndarray, np.ndarray]]) -> tuple | None:
        """The ``rows`` of these nodes that hold a start, as ``put_rows``
        takes them back (None if none does)."""
        kept = [(node, row) for node, row in zip(nodes, rows) if len(row[0])]
        if not kept:
            return None
        return (np.array([node for node, _ in kept]), np.concatenate([times for _, (times, _) in kept]),
                np.concatenate([files for _, (_, files) in kept]), np.array([len(times) for _, (times, _) in kept]))

    def put_rows(self, gathered: tuple | None) -> None:
        """Take back rows (``gather_rows``) made on the same real copies."""
        if gathered is None:
            return
        nodes, times, files, widths = gathered
        while self.times.shape[1] < widths.max():
            self.grow()
        _put_start_rows(self.times, self.files, self.count, nodes, times, files, widths)


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
    """Files in each node's memory, and the eviction rule (module docstring).
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


# -- plan: cores -----------------------------------------------------------------

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
        free_now = (self.avail <= self.now).sum(axis=1).max()
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


def _stacked(rows: list[np.ndarray], width: int, fill) -> np.ndarray:
    """``rows`` (arrays whose last axis may be shorter than ``width``) one
    under the other, each filled up to ``width`` with ``fill`` (a value, or
    one per row of a 2-D row)."""
    if all(row.shape[-1] == width for row in rows):   # the common case: one call instead of one per row
        return np.stack(rows)
    stacked = np.empty((len(rows), *rows[0].shape[:-1], width), dtype=rows[0].dtype)
    stacked[...] = fill
    for index, row in enumerate(rows):
        stacked[index, ..., :row.shape[-1]] = row
    return stacked


SLOT_FILLS = np.array([[fill] for _, fill in Slots.FIELDS], dtype=float)
"""``Slots.FIELDS``' fills as a column, for a block of a node's fields (``FilePlan.row``)."""


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
def insert_start(times, files, count, node, t, file_id):
    """``PlannedStarts.insert`` (and ``alike_runs``'): a start at ``t``
    after the equal ones. The caller leaves a spare column."""
    used = count[node]
    at = np.searchsorted(times[node, :used], t, side="right")
    times[node, at + 1:used + 1] = times[node, at:used].copy()
    files[node, at + 1:used + 1] = files[node, at:used].copy()
    times[node, at] = t
    files[node, at] = file_id
    count[node] = used + 1


@njit(cache=True)
def first_other_start(times, files, count, node, after, file_id):
    """The first start on ``node`` at or after ``after`` of a job of
    another file than ``file_id`` (inf if none): a copy's ``evict_at``."""
    for index in range(np.searchsorted(times[node, :count[node]], after), count[node]):
        if files[node, index] != file_id:
            return times[node, index]
    return math.inf


@njit(cache=True)
def _put_start_rows(times, files, count, nodes, row_times, row_files, widths):
    """``PlannedStarts.put_rows``: row i, ``widths[i]`` long in the
    concatenated ``row_times`` and ``row_files``, onto node ``nodes[i]``."""
    offset = 0
    for index in range(len(nodes)):
        node, width = nodes[index], widths[index]
        times[node, :] = math.inf
        files[node, :] = -1
        times[node, :width] = row_times[offset:offset + width]
        files[node, :width] = row_files[offset:offset + width]
        count[node] = width
        offset += width


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


# -- plan: files -------------------------------------------------------------------

FEW_NODES = 16
"""EvictionPenalty is computed node by node on at most this many nodes, in one
numpy call on more. One numpy call cost about 100 µs whatever its nodes
(measured on LEA's slices), the loop a few µs per node of 8-16 slots: 16 is
a rough break-even, not a tuned value."""


class FilePlan:
    """The copies of files in each node's memory over a round's plan: the
    real copies (``NodeMemory``) and those the planned jobs load.

    Each (node, file) has one slot: load start, ready time (real, or
    StartTime + Size / Bandwidth while loading), last planned use (started
    and planned jobs' t_k + WallTime), and ``evict_at``, the first planned
    start on the node of a job of another file at or after that last use.
    The copy is in memory at x when ``load_start <= x`` and ``x <= last use``
    (in use) or ``x < evict_at`` (cached, not evicted yet). A load planned
    for a job whose copy is absent replaces the slot: only the latest copy of
    a file on a node is remembered, which can only matter to backfilled jobs
    planned between two uses of it.
    """

    def __init__(self, memory: NodeMemory, now: float, overhead_from_now: bool = False):
        self.overhead_from_now = overhead_from_now
        self.memory = memory
        self.bandwidth = memory.bandwidth
        self.load_time = memory.load_time
        self.retain_cached = memory.retain_cached
        self.memory_bytes = memory.memory_bytes
        self.slots = memory.slots.copy()
        # The real copies' slots, file id -> {node: column}: the memory's own,
        # read as it changes, but while a cut walk waits for its rest (``freeze``).
        self.holders = memory.holders
        self.count_row_bytes()   # row_bytes_max, kept: every job's scores read it
        self.advance(now)
        self.new_slots: dict[tuple[int, int], int] = {}          # (node, file id) -> column
        self.new_holders: dict[int, dict[int, int]] = {}
        self.holder_arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.starts = PlannedStarts(len(self.slots.top))

    def advance(self, now: float) -> None:
        """Plan from ``now`` on (nothing planned happens in between)."""
        self.now = now

    def row(self, node: int) -> tuple:
        """What the plan holds for ``node`` beyond the real copies
        (``put_rows`` takes it back): its slots, and the files given a slot
        of their own there (a column free in the memory's row)."""
        slots = self.slots
        real = self.memory.slots.file[node].tolist()
        planned = slots.file[node].tolist()
        new = [(file_id, column) for column, file_id in enumerate(planned)
               if file_id >= 0 and (column >= len(real) or real[column] < 0)]
        # The fields as one block, file ids as floats (exact): put_rows stacks the nodes' blocks in one call.
        block = np.array([getattr(slots, name)[node] for name, _ in slots.FIELDS], dtype=float)
        return block, float(slots.row_bytes[node]), int(slots.top[node]), new, self.starts.row(node)

    @staticmethod
    def gather_rows(nodes: list[int], rows: list[tuple]) -> tuple:
        """The ``rows`` (``row``) of these nodes as ``put_rows`` takes them
        back: the slots' blocks stacked, the files' own slots merged."""
        width = max(row[0].shape[1] for row in rows)
        new_slots: dict[tuple[int, int], int] = {}
        new_holders: dict[int, dict[int, int]] = {}
        for node, (_, _, _, new, _) in zip(nodes, rows):
            for file_id, column in new:
                new_slots[(node, file_id)] = column
                new_holders.setdefault(file_id, {})[node] = column
        return (width, _stacked([row[0] for row in rows], width, SLOT_FILLS), np.array([row[1] for row in rows]),
                np.array([row[2] for row in rows]), new_slots, new_holders,
                PlannedStarts.gather_rows(nodes, [row[4] for row in rows]))

    def put_rows(self, nodes: np.ndarray, gathered: tuple) -> None:
        """Take back rows (``gather_rows``) made on the same real copies."""
        width, blocks, row_bytes, tops, new_slots, new_holders, starts = gathered
        slots = self.slots
        while slots.file.shape[1] < width:
            slots.grow()
        for index, (name, fill) in enumerate(slots.FIELDS):
            array = getattr(slots, name)
            array[nodes, width:] = fill
            array[nodes, :width] = blocks[:, index]
        slots.row_bytes[nodes] = row_bytes
        slots.top[nodes] = np.maximum(slots.top[nodes], tops)
        self.new_slots.update(new_slots)
        for file_id, holders in new_holders.items():
            self.new_holders.setdefault(file_id, {}).update(holders)
            self.holder_arrays.pop(file_id, None)
        self.starts.put_rows(starts)
        self.count_row_bytes()

    def count_row_bytes(self) -> None:
        self.row_bytes_max = float(self.slots.row_bytes.max())

    def freeze(self, nodes: list[int], files: list[Hashable]) -> None:
        """Keep the real copies' slots as they are now while jobs of ``files``
        start on ``nodes``, until ``thaw``: the rest of a cut walk
        (``locality.QueueWalk``) then plans on what its round saw. A start
        changes only the slots of its file and of the files it evicts from
        its node."""
        memory = self.memory
        touched = [file for node in nodes for file in memory.copies[node]] + files
        self.holders = dict(memory.holders)
        for file in touched:
            file_id = memory.file_id(file)
            self.holders[file_id] = dict(memory.holders.get(file_id, {}))

    def thaw(self) -> None:
        self.holders = self.memory.holders

    def _evictable_bytes(self, nodes: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Bytes of the copies on ``nodes`` at times ``x`` that are in memory
        but not in use (a copy's load starts before its last use)."""
        slots, x = self.slots, x[:, None]
        evictable = (slots.file[nodes] >= 0) & self._unused(slots.last_use[nodes], slots.evict_at[nodes], x)
        return (slots.size[nodes] * evictable).sum(axis=1)

    def _unused(self, last_use, evict_at, x):
        """Copies in memory at ``x`` but not in use then (arrays, or one copy's floats). Without
        ``retain_cached``, as the authors' EvictionPenalty counts them: every
        copy whose known use ends by ``x`` and not before now (a copy whose
        last user ended before now is gone; ``NodeMemory`` drops it at the
        node's next start)."""
        if self.retain_cached:
            return (last_use <= x) & (x < evict_at)
        return (self.now <= last_use) & (last_use <= x)

    def _slot(self, node: int, file_id: int) -> int | None:
        column = self.new_slots.get((node, file_id))
        if column is None:
            column = self.holders.get(file_id, {}).get(node)
        return column

    def _holders(self, file_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, columns) of the slots of a file."""
        arrays = self.holder_arrays.get(file_id)
        if arrays is None:
            pairs = {**self.holders.get(file_id, {}), **self.new_holders.get(file_id, {})}
            arrays = (np.fromiter(pairs.keys(), dtype=np.int64, count=len(pairs)),
                      np.fromiter(pairs.values(), dtype=np.int64, count=len(pairs)))
            self.holder_arrays[file_id] = arrays
        return arrays

    def _present(self, nodes, columns, x):
        slots = self.slots
        in_use = (slots.load_start[nodes, columns] <= x) & (x <= slots.last_use[nodes, columns])
        if not self.retain_cached:
            return in_use
        return in_use | ((slots.load_start[nodes, columns] <= x) & (x < slots.evict_at[nodes, columns]))

    def availability(self, file: Hashable, size: float, t_k: np.ndarray) -> np.ndarray:
        """t'_k per node for a job of ``file`` started at t_k (Section 4.1).
        With ``overhead_from_now`` (the authors' code, ``is_my_file_on_node_
        at_certain_time_and_transfer_time`` in ``src/basic_functions.c``),
        case 3's overhead t'_k - t_k is counted from now, not from t_k."""
        t_prime = t_k + self.load_time(size)
        file_id = self.memory.file_ids.get(file)
        if file_id is not None:
            nodes, columns = self._holders(file_id)
            if len(nodes):
                x = t_k[nodes]
                present = self._present(nodes, columns, x)
                nodes, columns, x = nodes[present], columns[present], x[present]
                t_prime[nodes] = self._ready(x, self.slots.ready[nodes, columns])
        return t_prime

    def _ready(self, t_k, ready):
        """t'_k where the file is in memory at t_k or being loaded."""
        if self.overhead_from_now:
            return np.where(ready > t_k, t_k + ready - self.now, t_k)
        return np.maximum(t_k, ready)

    def availability_on(self, node: int, file: Hashable, size: float, t_k: float) -> float:
        """t'_k on one node."""
        case = self.case(node, file, t_k)
        if case == LoadCase.NOT_IN_MEMORY:
            return t_k + self.load_time(size)
        ready = float(self.slots.ready[node, self._slot(node, self.memory.file_ids[file])])
        # ``_ready`` on one value, without numpy's cost per call.
        if self.overhead_from_now:
            return t_k + ready - self.now if ready > t_k else t_k
        return max(t_k, ready)

    def case(self, node: int, file: Hashable, t_k: float) -> LoadCase:
        column = self._slot(node, self.memory.file_ids.get(file, -2))
        if column is None or not self._present(node, column, t_k):
            return LoadCase.NOT_IN_MEMORY
        return LoadCase.IN_MEMORY if self.slots.ready[node, column] <= t_k else LoadCase.BEING_LOADED

    def eviction_penalty_bound(self, size: float) -> float:
        """No node's EvictionPenalty exceeds this: its files cannot weigh more
        than all its slots."""
        return self.row_bytes_max * (size / self.memory_bytes) / self.bandwidth

    def eviction_penalty(self, file: Hashable, size: float, t_k: np.ndarray,
                         nodes: np.ndarray) -> np.ndarray:
        """EvictionPenalty on ``nodes`` (Algorithm 3, line 7):
        (sum of Size(F_j) over the files F_j in memory at t_k) x Size(File(J)) / M / Bandwidth.

        Which files count is the fact from the authors' simulator
        (``time_to_reload_percentage_of_files_ended_at_certain_time`` in
        ``src/basic_functions.c``): the files of the node other than the
        job's own whose last planned use ends by t_k, i.e. those the start
        may evict; files still in use at t_k cannot be evicted and do not
        count. The fraction Size(File(J)) / M is their Cores(J) / 20.

        On a few nodes, node by node in Python floats (``eviction_penalty_on``):
        there numpy's cost per call is most of the time. Sizes are whole
        bytes (``Locality.read_job``), so every sum of them is exact in any
        order and both ways give the same penalty to the last bit.
        """
        if len(nodes) <= FEW_NODES:
            return np.array([self.eviction_penalty_on(node, file, size, x)
                             for node, x in zip(nodes.tolist(), t_k[nodes].tolist())])
        x = t_k[nodes]
        evictable = self._evictable_bytes(nodes, x)
        file_id = self.memory.file_ids.get(file)
        if file_id is not None:   # the job's own file is not evicted
            holders, columns = self._holders(file_id)
            position = np.searchsorted(nodes, holders)
            inside = position < len(nodes)
            inside[inside] = nodes[position[inside]] == holders[inside]
            holders, columns, position = holders[inside], columns[inside], position[inside]
            y, slots = x[position], self.slots
            own = self._unused(slots.last_use[holders, columns], slots.evict_at[holders, columns], y)
            # A node holds one slot per file: each position comes once.
            evictable[position[own]] -= slots.size[holders[own], columns[own]]
        return evictable * (size / self.memory_bytes) / self.bandwidth

    def eviction_penalty_on(self, node: int, file: Hashable, size: float, t_k: float) -> float:
        """``eviction_penalty`` on one node: the bytes of the copies of the
        node's row in memory but not in use at t_k, the job's own file left out."""
        slots, own = self.slots, self.memory.file_ids.get(file)
        evictable, top = 0.0, int(slots.top[node])
        for file_id, bytes_, last_use, evict_at in zip(slots.file[node, :top].tolist(), slots.size[node, :top].tolist(),
                                                      slots.last_use[node, :top].tolist(),
                                                      slots.evict_at[node, :top].tolist()):
            if file_id >= 0 and file_id != own and self._unused(last_use, evict_at, t_k):
                evictable += bytes_
        return evictable * (size / self.memory_bytes) / self.bandwidth

    def record(self, node: int, file: Hashable, size: float, t_k: float, t_prime: float,
               end: float) -> None:
        """Plan a job of ``file`` on ``node`` over [t_k, end)."""
        slots = self.slots
        file_id = self.memory.file_id(file)
        column = self._slot(node, file_id)
        if column is not None and self._present(node, column, t_k):
            slots.last_use[node, column] = max(slots.last_use[node, column], end)
        else:
            if column is None:
                column = slots.free_column(node)
                self.new_slots[(node, file_id)] = column
                self.new_holders.setdefault(file_id, {})[node] = column
                self.holder_arrays.pop(file_id, None)
                slots.file[node, column] = file_id
            before = slots.row_bytes[node]
            slots.row_bytes[node] += size - slots.size[node, column]
            if slots.row_bytes[node] >= self.row_bytes_max:
                self.row_bytes_max = float(slots.row_bytes[node])
            elif before == self.row_bytes_max:   # the largest may have left this node
                self.row_bytes_max = float(slots.row_bytes.max())
            slots.size[node, column] = size
            slots.load_start[node, column] = t_k
            slots.ready[node, column] = t_prime
            slots.last_use[node, column] = end
        if self.retain_cached:
            # The start evicts the other files then cached (Section 3); on
            # one row of a few slots, a Python loop costs less than numpy's calls.
            evict_at, top = slots.evict_at[node], int(slots.top[node])
            for other, (other_file, other_use, other_evict_at) in enumerate(zip(
                    slots.file[node, :top].tolist(), slots.last_use[node, :top].tolist(), evict_at[:top].tolist())):
                if other_file >= 0 and other_file != file_id and other_use <= t_k < other_evict_at:
                    evict_at[other] = t_k
            self.starts.insert(node, t_k, file_id)
            evict_at[column] = self.starts.first_other(node, float(slots.last_use[node, column]), file_id)
