"""Where a job goes (paper 004, Algorithms 1-5, lines 2-9): the round's plan
as ``backfill``'s capacity, each job on the node its policy scores best,
runs of alike jobs planned in compiled code (``alike_runs``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
import itertools
import math

import numpy as np
from procset import ProcSet

from batio.schedulers.backfill import RoundPlan, backfill
from batio.schedulers.locality import alike_runs
from batio.schedulers.locality.authorsholes import AuthorsHoles
from batio.schedulers.locality.coreplan import CoreAvailability, CoreProfile
from batio.schedulers.locality.fileplan import FilePlan
from batio.schedulers.locality.jobs import UserJob
from batio.schedulers.locality.plan import Plan
from batio.schedulers.locality.scores import NodeScores
from batio.schedulers.reservation import Slot


class Placement:
    """The round's plan as ``backfill`` plans on it (its ``Capacity``): a
    job's earliest slot is the node its policy scores best (lines 2-9,
    ``NodeScores``), at that node's t_k; reserving it books Cores(J) cores
    of the node until t_k + WallTime(J) and the job's file there.
    ``placed``: job id -> (node, core ids) of each job reserved.

    Consecutive alike jobs are scored again on the last job's node only
    (``NodeScores.rescore``). Where ``alike_runs`` follows the model
    (``PaperModel.compiled_runs``), the walk hands each job and the alike
    jobs after it to ``plan_run``, which plans them in compiled code. The
    authors' ``second_phase`` scores each job anew, and leaves ``AuthorsHoles.pinned``
    as the first phase left it: their code sets it there only."""

    def __init__(self, scheduler, plan: Plan, now: float, second_phase: bool = False):
        # The ``Locality`` scheduler (not annotated: that would import its module back).
        self.scheduler, self.plan, self.now = scheduler, plan, now
        self.second_phase = second_phase
        self.scores: NodeScores | None = None
        self.node: int | None = None   # the last job's node: its scores changed
        self.t_prime = math.inf
        self.placed: dict[str, tuple[int, list | None]] = {}
        self.started: list[UserJob] = []   # in the order they start
        # plan_run's outputs (node, t_k, new column per job), reused from run to run.
        self.outputs = (np.empty(0, dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int64))

    def earliest_start(self, nb_hosts: int, duration: float, job: UserJob, after: float,
                       latest: float | None = None) -> Slot | None:
        plan, scores = self.plan, self.scores
        if not self.second_phase and isinstance(plan.cores, AuthorsHoles):
            plan.cores.pinned = job.history_node is not None
        policy = self.scheduler.policy_now(plan)
        if job.history_node is not None:
            return self.pinned_start(job, latest)
        if scores is not None and not self.second_phase and scores.alike(job, policy):
            scores.rescore(self.node)   # only the node just planned scores differently
        else:
            scores = self.scores = NodeScores(self.scheduler, plan, job, self.now, policy)
        self.node, t_k, self.t_prime = scores.best()
        if self.node is None or (latest is not None and t_k > latest):   # no window, or none by latest
            return None
        return Slot(t_k, self.scheduler.node_hosts[self.node])

    def pinned_start(self, job: UserJob, latest: float | None) -> Slot | None:
        """A category -2 job's only node is its history node (every other t_k
        is infinite): whatever its score, it wins there if it has a window.
        So no node is scored; the next job is scored afresh, since the
        kept scores do not know this job's reservation."""
        node = job.history_node
        assert node is not None, "earliest_start hands pinned jobs only"
        t_k = self.plan.cores.earliest_on(node, job.cores, job.walltime)
        self.scores = None
        if t_k == math.inf or (latest is not None and t_k > latest):
            self.node = None
            return None
        self.node, self.t_prime = node, self.plan.files.availability_on(node, job.file, job.size, t_k)
        return Slot(t_k, self.scheduler.node_hosts[node])

    def reserve(self, key: str, slot: Slot, duration: float, job: UserJob) -> None:
        node, t_k = self.node, slot.start
        assert node is not None, "backfill reserves the slot earliest_start just found"
        core_ids = self.plan.cores.reserve(node, job.cores, t_k, t_k + duration)
        if self.scheduler.model.records_file(job, t_k, self.now):
            self.plan.files.record(node, job.file, job.size, t_k, self.t_prime, t_k + duration)
        self.placed[key] = (node, core_ids)

    def plan_jobs(self, jobs: Iterable[UserJob]) -> RoundPlan:
        """``backfill``'s Algorithm 1 on this placement with every job of
        ``jobs`` reserved (BackfillMax unbounded)."""
        return backfill(self, jobs, self.now, math.inf, L=job_walltime, r=job_need, on_start=self.mark_busy)

    def mark_busy(self, job: UserJob, hosts: ProcSet) -> None:
        """``backfill``'s ``on_start``: LEM's load counts the node at once."""
        self.plan.mark_busy(self.placed[job.id][0])
        self.started.append(job)

    def run_planner(self) -> Callable[[list[UserJob], int, int, bool], int] | None:
        """``plan_run`` where ``alike_runs`` covers the round's plan, else None."""
        scheduler = self.scheduler
        if (scheduler.compiled_runs and scheduler.model.compiled_runs and not self.second_phase
                and type(self.plan.cores) in (CoreAvailability, CoreProfile)):
            return self.plan_run
        return None

    def plan_run(self, queue: list[UserJob], index: int, limit: int, stop_when_none_free: bool) -> int:
        """Plan the job at ``index`` and those after it alike to it (at most
        ``limit`` in all), as ``backfill`` would one by one on this
        placement, in compiled code (``alike_runs.plan_run``); returns how
        many (0: ``backfill`` takes the job, pinned or beyond ``alike_runs``)."""
        kept, plan = self.scores, self.plan
        job = queue[index]
        policy = self.scheduler.policy_now(plan)
        profile = isinstance(plan.cores, CoreProfile)
        # A pinned job is placed unscored; a profile's reservation of an unbounded job ends at no breakpoint.
        if job.history_node is not None or not job.walltime > 0 or (profile and job.walltime == math.inf):
            return 0
        end, stop, kind = index, index + limit, job.kind
        while end < stop and queue[end].kind == kind and queue[end].history_node is None:
            end += 1
        scores = kept if kept is not None and kept.alike(job, policy) else None
        # The scores a run of this kind left are current unless a job was planned since (``node``).
        score_all = not (scores is not None and scores.compiled_current and self.node is None)
        if scores is None:
            scores = self.scores = NodeScores(self.scheduler, plan, job, self.now, policy, compiled=True,
                                              replaced=kept)
        count = end - index
        if len(self.outputs[0]) < count:
            size = 2 * count
            self.outputs = (np.empty(size, dtype=np.int64), np.empty(size), np.empty(size, dtype=np.int64))
        planned, new_columns, fid = self.run_compiled(job, count, score_all, stop_when_none_free, policy, scores)
        scores.adopt_compiled_run(planned)
        self.node = None   # every node's score is up to date
        self.take_outputs(queue[index:index + planned], fid, new_columns)
        return planned

    def run_compiled(self, job: UserJob, count: int, score_all: bool, stop_when_none_free: bool, policy: str,
                     scores: NodeScores) -> tuple[int, int, int]:
        """``alike_runs.plan_run`` on the plan's arrays, called again after
        widening a full row; returns the jobs planned, the columns given to
        the file, and the file's id (-1 without files)."""
        plan = self.plan
        cores, files = plan.cores, plan.files
        profile = isinstance(cores, CoreProfile)
        fid, file_model, col_of = self.file_inputs(job)
        out_node, out_t_k, out_new_column = self.outputs
        planned = new_columns = 0
        while True:
            file_arrays: tuple = _NO_SLOTS
            if isinstance(files, FilePlan):
                slots, starts = files.slots, files.starts
                file_arrays = (slots.file, slots.size, slots.load_start, slots.ready, slots.last_use,
                               slots.evict_at, slots.top, slots.row_bytes, files.row_bytes_max, col_of,
                               starts.times, starts.files, starts.count)
            core_arrays = ((_NO_AVAIL, cores.times, cores.free, cores.used, cores.reservations, cores.reserved_at)
                           if profile else (cores.avail, *_NO_PROFILE))
            done, need, cores.free_now, plan.busy_count, row_bytes_max, new, used, reservations = \
                alike_runs.plan_run(   # type: ignore[call-arg, unused-ignore]  # numba: Dispatcher
                    count - planned, score_all, job.cores, job.walltime, job.size, file_model[-1], fid, self.now,
                    stop_when_none_free, alike_runs.POLICY_CODES[policy], self.scheduler.policy == "lem",
                    self.scheduler.busy_threshold, scores.W, scores.eviction_weight, scores.penalised,
                    profile, *core_arrays, cores.free_now, plan.busy, plan.busy_count,
                    *file_model[:-1], *file_arrays,
                    scores.t_k, scores.t_prime, scores.base, scores.EvictionPenalty, scores.known, scores.scores,
                    out_node[planned:], out_t_k[planned:], out_new_column[planned:])
            planned, new_columns = planned + done, new_columns + new
            score_all = False
            if profile:
                cores.used, cores.reservations = used, reservations
            if isinstance(files, FilePlan):
                files.row_bytes_max = row_bytes_max
            if need == alike_runs.NEEDS_NOTHING:
                return planned, new_columns, fid
            if need == alike_runs.NEEDS_CORE_COLUMNS:   # a row is full: widen it and go on
                cores.grow()
                continue
            assert isinstance(files, FilePlan), "only a file plan has file rows to widen"
            if need == alike_runs.NEEDS_SLOT_COLUMNS:
                files.slots.grow()
            else:
                files.starts.grow()

    def file_inputs(self, job: UserJob) -> tuple[int, tuple, np.ndarray]:
        """``alike_runs.plan_run``'s view of the job's file: its id (-1
        without files), (has_files, retain_cached, M, bandwidth, the load's
        seconds), and its column on each node (-1 where it has none)."""
        files = self.plan.files
        if not isinstance(files, FilePlan):
            return -1, (False, False, 1.0, 1.0, 0.0), _NO_COLUMNS
        fid = files.memory.file_id(job.file)
        col_of = np.full(len(self.plan.busy), -1, dtype=np.int64)
        columns = {**files.holders.get(fid, {}), **files.new_holders.get(fid, {})}   # FilePlan._slot's
        col_of[list(columns)] = list(columns.values())
        return fid, (True, files.retain_cached, files.memory_bytes, files.bandwidth, files.load_time(job.size)), col_of

    def take_outputs(self, jobs: list[UserJob], fid: int, new_columns: int) -> None:
        """Note what ``alike_runs.plan_run`` planned for ``jobs``: the file's
        new columns, each job's node, the jobs that start now."""
        out_node, out_t_k, out_new_column = self.outputs
        planned = len(jobs)
        nodes, t_ks = out_node[:planned].tolist(), out_t_k[:planned].tolist()
        if new_columns:
            files = self.plan.files
            assert isinstance(files, FilePlan), "only a file plan gives a file columns"
            for node, column in zip(nodes, out_new_column[:planned].tolist()):
                if column >= 0:
                    files.new_slots[(node, fid)] = column
                    files.new_holders.setdefault(fid, {})[node] = column
                    files.holder_arrays.pop(fid, None)
        if min(nodes, default=0) >= 0:   # every job planned: the common case
            self.placed.update(zip([job.id for job in jobs], zip(nodes, itertools.repeat(None))))
        else:
            self.placed.update((job.id, (node, None)) for job, node in zip(jobs, nodes) if node >= 0)
        self.started += [job for job, t_k in zip(jobs, t_ks) if t_k == self.now]   # a job not planned has t_k inf


_NO_SLOTS = (np.full((0, 0), -1, dtype=np.int64), *(np.empty((0, 0)) for _ in range(5)), np.empty(0, dtype=np.int64),
             np.empty(0), 0.0, np.empty(0, dtype=np.int64), np.empty((0, 0)), np.full((0, 0), -1, dtype=np.int64),
             np.empty(0, dtype=np.int64))
"""``alike_runs.plan_run``'s file arrays for a plan without files (FCFS)."""
_NO_AVAIL = np.empty((0, 0))
"""``alike_runs.plan_run``'s ``CoreAvailability`` array for a ``CoreProfile`` plan."""
_NO_PROFILE = (np.empty((0, 0)), np.empty((0, 0), dtype=np.int32), 0, 0, np.empty(0, dtype=np.int64))
"""``alike_runs.plan_run``'s ``CoreProfile`` arrays and counts for a ``CoreAvailability`` plan."""
_NO_COLUMNS = np.empty(0, dtype=np.int64)
"""``alike_runs.plan_run``'s columns of the file for a plan without files."""


def job_walltime(job: UserJob) -> float:
    """A job's walltime, as ``backfill`` reads it."""
    return job.walltime


def job_need(job: UserJob) -> UserJob:
    """A job's need, as ``Placement`` reads it: its cores and file."""
    return job
