"""A round's plan of the files in each node's memory (paper 004, Sections
3-4.1): when a job's file is available on each node (t'_k) and what its
start would evict (EvictionPenalty); ``NoFiles`` for FCFS, which reads neither.
"""
from __future__ import annotations

from collections.abc import Hashable
import math

from numba import njit
import numpy as np

from batio.schedulers.locality.nodememory import LoadCase, NodeMemory, Slots


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
        (``walk.QueueWalk``) then plans on what its round saw. A start
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


class NoFiles:
    """FCFS's file plan: its score is t_k alone (Algorithm 1), so nothing
    reads where planned jobs would load their files, and none is recorded
    (a third of FCFS's round was spent recording them)."""

    def advance(self, now: float) -> None:
        pass

    def availability(self, file: Hashable, size: float, t_k: np.ndarray) -> np.ndarray:
        return t_k

    def availability_on(self, node: int, file: Hashable, size: float, t_k: float) -> float:
        return t_k

    def record(self, node: int, file: Hashable, size: float, t_k: float, t_prime: float, end: float) -> None:
        pass

    def freeze(self, nodes: list[int], files: list[Hashable]) -> None:
        pass

    def row(self, node: int) -> None:
        return None

    @staticmethod
    def gather_rows(nodes: list[int], rows: list[None]) -> None:
        return None

    def put_rows(self, nodes: np.ndarray, gathered: None) -> None:
        pass

    def thaw(self) -> None:
        pass
