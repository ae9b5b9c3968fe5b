"""One round's plan (``Plan``), and the rows of it kept per node after
category -2 jobs between rounds (``PinnedRows``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
import operator
from typing import Protocol

import numpy as np

from batio.schedulers.locality.fileplan import FilePlan, NoFiles
from batio.schedulers.locality.jobs import UserJob
from batio.schedulers.locality.nodememory import CoreLedger, NodeMemory


class CutWalk(Protocol):
    """What a round keeps of a walk it cut (``walk.QueueWalk``), for the
    next round to plan its rest (``Locality.plan_rest``)."""

    queue: list[UserJob]
    index: int
    runs: Callable[[list[UserJob], int, int, bool], int] | None

    def rest(self) -> Iterator[UserJob]: ...


class Plan:
    """One round's plan: the cores (``CoreAvailability``, ``CoreProfile`` or
    ``AuthorsHoles``), the files (``FilePlan``), the nodes running a job, and
    the queued jobs not planned yet (in queue order)."""

    def __init__(self, cores, files: FilePlan | NoFiles, busy: np.ndarray, pending: list[UserJob]):
        self.cores, self.files, self.busy, self.pending = cores, files, busy, pending
        self.busy_count = int(busy.sum())   # LEM reads it for every job
        # Jobs planned to start later: id -> (job, node, t_k, core ids or
        # None), in plan order (``AuthorsCode.begin_round`` starts them).
        self.later: dict[str, tuple[UserJob, int, float, list | None]] = {}
        self.cut_walk: CutWalk | None = None   # a walk cut where none could start now, its rest not planned

    def mark_busy(self, node: int) -> None:
        """A job starts now on ``node`` (LEM's load counts it at once)."""
        if not self.busy[node]:
            self.busy[node] = True
            self.busy_count += 1

    def can_advance(self, now: float) -> bool:
        return self.cores.can_advance(now)

    def advance(self, now: float) -> bool:
        """Go on planning at a later ``now``; False if something planned
        (a core freeing) happens in between: then the plan must be rebuilt."""
        if not self.cores.advance(now):
            return False
        self.files.advance(now)
        return True


class PinnedRows:
    """Rows of a plan kept per node, after its category -2 jobs (batio's
    model pins them to their history node for good).

    Such jobs wait at the head of the queue until their node has room, for
    days on the 2022-09-10 trace, and every re-plan planned each of them
    again: two thirds of the jobs examined over the day's first 7,000
    submissions. A node's row after them (its cores, and its files' slots)
    depends only on the node's started jobs and copies, on those jobs, and
    on now only through cores free now, which the first waiting job takes
    (a job that does not start needs more cores than are free). So when no
    job on the node started or ended and no copy changed there
    (``version``), the jobs are the same, none starts, and no started job
    on it reaches its planned end by now (its cores would then free at now
    + OVERRUN_GRACE), the kept row is the row planning them again would
    give, and is put back instead.
    """

    def __init__(self):
        self.kept: dict[int, tuple] = {}   # node -> (key, now it was made at, cores row, files row)
        # The pinned jobs ``group`` saw last, and node -> their ids there.
        self.grouped_jobs: list[UserJob] = []
        self.grouped: dict[int, tuple[str, ...]] = {}
        # The rows put back last, gathered (``gather_rows``): often the same
        # round after round. Keyed by (node, id of its kept row); holds the
        # kept rows, so no id is reused while it lives.
        self.gathered: tuple | None = None

    def group(self, pinned: list[UserJob]) -> dict[int, tuple[str, ...]]:
        """The ids of the ``pinned`` jobs (in queue order) per history node.
        The same jobs wait round after round (they leave only as they
        start), so the last grouping is reused while they are the same."""
        if len(pinned) != len(self.grouped_jobs) or not all(map(operator.is_, pinned, self.grouped_jobs)):
            by_node: dict[int, list[str]] = {}
            for job in pinned:
                assert job.history_node is not None, "a pinned job has its history node"
                by_node.setdefault(job.history_node, []).append(job.id)
            self.grouped_jobs = list(pinned)
            self.grouped = {node: tuple(ids) for node, ids in by_node.items()}
        return self.grouped

    @staticmethod
    def key(node: int, ids: tuple[str, ...], ledger: CoreLedger, memory: NodeMemory) -> tuple:
        return ledger.version[node], memory.version[node], ids

    def put_back(self, plan: Plan, by_node: dict[int, tuple[str, ...]], ledger: CoreLedger,
                 memory: NodeMemory) -> set[int]:
        """Put back the kept rows that hold; returns their nodes."""
        holding = [(node, self.kept[node]) for node, ids in by_node.items()
                   if node in self.kept and self.kept[node][0] == self.key(node, ids, ledger, memory)]
        if holding:
            ends = ledger.ends_by(plan.cores.now).tolist()
            holding = [(node, kept) for node, kept in holding if not ends[node]]
        if not holding:
            return set()
        key = [(node, id(kept)) for node, kept in holding]
        if self.gathered is None or self.gathered[0] != key:
            nodes = [node for node, _ in holding]
            self.gathered = (key, holding, np.array(nodes),
                             plan.cores.gather_rows([kept[2] for _, kept in holding], [kept[1] for _, kept in holding]),
                             plan.files.gather_rows(nodes, [kept[3] for _, kept in holding]))
        _, _, nodes, cores, files = self.gathered
        plan.cores.put_rows(nodes, cores)
        plan.files.put_rows(nodes, files)
        return {node for node, _ in holding}

    def keep(self, plan: Plan, by_node: dict[int, tuple[str, ...]], ledger: CoreLedger,
             memory: NodeMemory) -> None:
        """Keep the rows of the nodes whose jobs were just planned, none started."""
        for node, ids in by_node.items():
            self.kept[node] = (self.key(node, ids, ledger, memory), plan.cores.now, plan.cores.row(node),
                               plan.files.row(node))
