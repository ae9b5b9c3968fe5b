"""The two models the locality scheduler follows, chosen once by its
``authors_code`` option: the paper's text (``PaperModel``) and the authors'
simulator where its code differs from that text (``AuthorsCode``). Each
implements the few hooks where they differ.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from batio.errors import SchedulerError
from batio.schedulers.backfill import RoundPlan, backfill
from batio.schedulers.locality.authorsholes import AuthorsHoles
from batio.schedulers.locality.coreplan import plan_cores
from batio.schedulers.locality.jobs import UserJob, queue_key
from batio.schedulers.locality.nodememory import load_seconds, truncated_load_seconds
from batio.schedulers.locality.placement import Placement, job_need, job_walltime
from batio.schedulers.locality.plan import Plan
from batio.schedulers.locality.scores import NodeScores
from batio.schedulers.locality.walk import AuthorsWalk, QueueWalk

SAME_INSTANT = 1e-3
"""Seconds: events closer than this belong to one second of the authors'
whole-second clock."""


class ExpectedCompletions:
    """The completions the scheduler expects, from the jobs' delay profiles
    (listed by Batsim in SIMULATION_BEGINS), so that a round can wait
    for those of the same second: the authors' loop handles all that happens
    in one second in one round, where Batsim hands a completion over a
    message latency (about 1e-6 s per hop) after its second."""

    def __init__(self):
        self.end_of: dict[str, float] = {}
        self.heap: list[tuple[float, str]] = []

    def expect(self, job_id: str, end: float) -> None:
        self.end_of[job_id] = end
        heapq.heappush(self.heap, (end, job_id))

    def ended(self, job_id: str) -> None:
        self.end_of.pop(job_id, None)

    def due_this_second(self, second: float) -> bool:
        """A completion expected in this (whole) second has not arrived yet."""
        heap = self.heap
        while heap:
            end, job_id = heap[0]
            if self.end_of.get(job_id) != end or round(end) < second:   # stale, or a wrong guess
                heapq.heappop(heap)
                continue
            return round(end) == second
        return False


class PaperModel:
    """The paper's text (Sections 3-4): loads of Size / Bandwidth, real-valued
    scores, case 3's overhead counted from t_k, rounds at Batsim's events."""

    load_time = staticmethod(load_seconds)
    """A load's seconds, given the bandwidth (``NodeMemory``)."""
    stale_use_end = False
    """``NodeMemory``'s: a copy in use until its users' planned ends only."""
    overhead_from_now = False
    """``FilePlan``'s: case 3's overhead counted from t_k."""
    score_margin = 0.0
    """Seconds added to the bound of the scores EvictionPenalty can decide
    (``NodeScores.widen_reach``)."""
    compiled_runs = True
    """``alike_runs`` plans runs of alike jobs as this model does."""
    plans_pinned_first = True
    """Category -2 jobs are planned ahead of the walk, on the rows kept for
    their nodes (``Locality.plan_pinned``)."""

    def __init__(self, scheduler) -> None:
        self.scheduler = scheduler   # the ``Locality`` scheduler (not annotated: that would import its module back)

    def clock(self, time: float) -> float:
        """The scheduler's time at Batsim's ``time``."""
        return time

    def holds_round(self, now: float) -> bool:
        """A round due now waits for a later event."""
        return False

    def expect_end(self, job_id: str, deadline: float) -> None:
        """A job that waits for a load ends by ``deadline``."""

    def expect_run(self, job: UserJob, now: float) -> None:
        """A started job runs from ``now``."""

    def ended(self, job_id: str) -> None:
        """The job completed or was killed."""

    def begin_round(self, plan: Plan | None, now: float) -> None:
        """Before a round plans, given the last round's plan."""

    def extend_plan(self, plan: Plan, new_jobs: list[UserJob], now: float) -> None:
        """The plan is kept and only ``new_jobs`` came: they are planned
        after the jobs it has not planned yet."""
        plan.pending = sorted(plan.pending + new_jobs, key=queue_key)

    def core_plan(self, now: float):
        """A new plan of the cores (``plan_cores``)."""
        scheduler = self.scheduler
        return plan_cores(scheduler.ledger, now, scheduler.backfill)

    def walk(self, plan: Plan, runs) -> QueueWalk:
        """The round's walk over ``plan.pending``."""
        return QueueWalk(plan, runs)

    def finish_walk(self, plan: Plan, placement: Placement, walk: QueueWalk, walked: RoundPlan,
                    now: float) -> bool:
        """After the walk's ``backfill`` (``walked``, its result); True if
        every job of the queue has been planned since."""
        return False

    def records_file(self, job: UserJob, t_k: float, now: float) -> bool:
        """The policies see the file ``job`` will load at ``t_k``."""
        return True

    def leo_switch(self, scores: NodeScores) -> int:
        """The first node from which LEO scores every node t'_k (the number
        of nodes: none)."""
        return len(scores.t_k)

    def rounded(self, scores: np.ndarray) -> np.ndarray:
        """The scores as the model compares them."""
        return scores

    def rounded_one(self, score: float) -> float:
        """``rounded`` on one value."""
        return score


class AuthorsCode(PaperModel):
    """The authors' simulator (userccgrid/Locality-aware-batch-scheduling at
    1f47b38) where its code differs from the paper's text: loads truncated to
    whole seconds in single precision and scores to integers, LEO's sticky
    switch, case 3's overhead counted from now, a copy in use until the
    latest planned end of any job that used it since its load, and their
    loop (``src/main.c``): one round per whole second, the jobs an earlier
    round planned for this second started first, planning stopped once every
    core free now is taken, a second backfilling phase, and the files of jobs
    pinned to their history node not seen until they start."""

    load_time = staticmethod(truncated_load_seconds)
    stale_use_end = True
    overhead_from_now = True
    score_margin = 1.0   # integer scores: a node left out could tie the smallest after the floor
    compiled_runs = False
    plans_pinned_first = False

    def __init__(self, scheduler) -> None:
        super().__init__(scheduler)
        self.expected = ExpectedCompletions()

    def clock(self, time: float) -> float:
        """The second ``time`` belongs to (the nearest integer: the authors'
        clock counts whole seconds, and Batsim's message latency adds about
        1e-6 s per hop to theirs)."""
        return float(round(time))

    def holds_round(self, now: float) -> bool:
        """The round comes with the last completion expected in this second."""
        return self.expected.due_this_second(now)

    def expect_end(self, job_id: str, deadline: float) -> None:
        self.expected.expect(job_id, deadline)

    def expect_run(self, job: UserJob, now: float) -> None:
        t_k = self.scheduler.started[job.id][2]
        self.expected.expect(job.id, min(now + self.run_time(job), t_k + job.walltime))

    def ended(self, job_id: str) -> None:
        self.expected.ended(job_id)

    @staticmethod
    def run_time(job: UserJob) -> float:
        """The job's delay, read to group a second's completions; ``inf``
        for another profile type (never waited for)."""
        profile = job.job.profile_dict
        if not profile:   # pybatsim's {} for a profile Batsim neither listed nor forwarded
            raise SchedulerError(f"job {job.id}: authors_code groups each second's events from the jobs' delays, "
                                 f"and Batsim gave no profile '{job.job.profile}' for it (with Redis, run Batsim "
                                 "with --forward-profiles-on-submission)")
        return float(profile["delay"]) if profile.get("type") == "delay" else math.inf

    def begin_round(self, plan: Plan | None, now: float) -> None:
        """The authors' loop (``src/main.c``) starts the jobs an earlier call
        planned for this second (``start_jobs``) before it plans again, so a
        re-plan cannot move them: they start where they were planned, if
        their cores are free (the job ahead of them may end a message later,
        see ``Locality.split_instants``)."""
        if plan is None:
            return
        scheduler = self.scheduler
        for job, node, t_k, core_ids in list(plan.later.values()):
            if (abs(t_k - now) < SAME_INSTANT and job.id in scheduler.queue
                    and scheduler.ledger.free_cores(node, core_ids) >= job.cores):
                del plan.later[job.id]
                plan.mark_busy(node)
                scheduler.launch(job, node, now, core_ids)

    def extend_plan(self, plan: Plan, new_jobs: list[UserJob], now: float) -> None:
        """The authors' call after submissions only plans the new jobs, and
        rebuilds the files' intervals from the started jobs
        (``get_current_intervals``): files that jobs planned in an earlier
        call would load are not seen."""
        plan.files = self.scheduler.file_plan(now)
        plan.pending = sorted(new_jobs, key=queue_key)

    def core_plan(self, now: float):
        """The authors' holes with backfilling, else ``plan_cores``."""
        scheduler = self.scheduler
        if scheduler.backfill:
            return AuthorsHoles(scheduler.ledger.held, now, scheduler.hole_gate)
        return super().core_plan(now)

    def walk(self, plan: Plan, runs) -> QueueWalk:
        return AuthorsWalk(plan, runs)

    def finish_walk(self, plan: Plan, placement: Placement, walk: QueueWalk, walked: RoundPlan,
                    now: float) -> bool:
        """With backfilling, the authors' second phase; then the jobs planned
        for later noted (``begin_round`` starts them)."""
        second_phase = self.scheduler.backfill
        if second_phase:
            self.second_phase(plan, placement, walk, now)
        for job, slot in walked.reserved:
            node, core_ids = placement.placed[job.id]
            plan.later[job.id] = (job, node, slot.start, core_ids)
        return second_phase

    def second_phase(self, plan: Plan, placement: Placement, walk: QueueWalk, now: float) -> None:
        """Once every core free now is taken (``only_check_conservative_
        backfill``): each job left that fits wholly in a hole, and needs no
        more cores than the stale ``biggest_hole``, starts now in it; the
        others are not planned."""
        gate = self.scheduler.hole_gate
        plan.cores.holes_only = True
        holes = Placement(self.scheduler, plan, now, second_phase=True)
        backfill(holes, walk.queue[walk.index:], now, 0, L=job_walltime, r=job_need,
                 eligible=lambda job: job.cores <= gate.biggest, on_start=holes.mark_busy, first_fit=True)
        plan.cores.holes_only = False
        placement.placed.update(holes.placed)
        placement.started += holes.started

    def records_file(self, job: UserJob, t_k: float, now: float) -> bool:
        """The authors place a job pinned to its history node without
        noting its file (``get_state_before_day_0_scheduler``): the policy
        does not see a file such a job will load later."""
        return job.history_node is None or t_k <= now

    def leo_switch(self, scores: NodeScores) -> int:
        """LEO in the authors' code (``src/scheduler.c``, ``LEA``): the switch
        sticks, every node after the first where the job can start now (in
        node order) is scored t'_k too."""
        if scores.policy != "leo":
            return len(scores.t_k)
        now = np.flatnonzero(scores.starts_now(scores.every_node))
        return int(now[0]) if len(now) else len(scores.t_k)

    def rounded(self, scores: np.ndarray) -> np.ndarray:
        """The authors' scores are C ints: ties, won by the first node, are more frequent."""
        return np.floor(scores)

    def rounded_one(self, score: float) -> float:
        return float(math.floor(score)) if score < math.inf else score
