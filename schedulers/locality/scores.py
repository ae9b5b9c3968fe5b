"""A policy's scores of every node for one job (paper 004, Algorithms 1-5,
lines 2-9), kept and brought up to date job after job of a burst.
"""
from __future__ import annotations

import functools
import heapq
import math

import numpy as np

from batio.schedulers.locality.authorsholes import AuthorsHoles
from batio.schedulers.locality.fileplan import FilePlan
from batio.schedulers.locality.jobs import UserJob
from batio.schedulers.locality.plan import Plan

HEAP_AFTER = 8
"""Rescores of one burst after which ``NodeScores`` keeps heaps of its
scores (building one costs about ten argmins); a rough choice, not tuned."""


class NodeScores:
    """Lines 2-9 of a policy for one job on every node: t_k, t'_k and the
    score, whose smallest value picks the node (ties: the first node, as the
    authors' strict ``<``). A job pinned to its history node has one node
    only and is not scored (``Placement.pinned_start``).

    Planning a job changes one node's cores and files only. The next job of
    the queue, if alike (same cores, walltime, file and policy: a burst of a
    user's jobs on one input file), is therefore scored again on that node
    only (``rescore``): an exact shortcut. The scores of the other nodes are
    kept, not rebuilt for each job of the burst; so are the smallest score
    without EvictionPenalty and LEO's switch (below), which one node moves.

    EvictionPenalty (LEA, LEO) cannot exceed a bound (``FilePlan.
    eviction_penalty_bound``), so it is only computed on nodes whose score
    without it is within that bound of the smallest (the threshold;
    with the authors' integer scores, one second more, lest a node left out
    tie the smallest after the floor): the others cannot win. It is computed
    up to ``reach``, one bound beyond that, since a burst raises the
    smallest score job after job and each rise past ``reach`` looks at every
    node. Every node whose score without the penalty is
    at most ``reach`` has its penalty known; a node left out stays out until
    the threshold passes ``reach`` or its own score changes, so after
    ``rescore`` the other nodes are only looked at again when it has.
    """

    # Per node: t_k, t'_k, the score without EvictionPenalty, EvictionPenalty
    # (where ``known``) and the score.
    t_k: np.ndarray
    t_prime: np.ndarray
    base: np.ndarray
    EvictionPenalty: np.ndarray
    known: np.ndarray
    scores: np.ndarray

    def __init__(self, scheduler, plan: Plan, job: UserJob, now: float, policy: str,
                 compiled: bool = False, replaced: NodeScores | None = None):
        """``compiled``: the arrays are left for ``alike_runs.plan_run`` to
        fill, those of ``replaced`` if it was compiled too (it is not used again).
        ``scheduler``: the ``Locality`` scheduler (not annotated: that would import its module back)."""
        self.plan, self.job, self.now, self.policy = plan, job, now, policy
        self.W, self.eviction_weight = scheduler.W, scheduler.eviction_weight
        self.model = scheduler.model
        self.floored = self.model.rounded_one   # a method read once: rescore_one calls it per job
        self.penalised = policy in ("lea", "leo") and self.eviction_weight > 0
        nb_nodes = len(plan.busy)
        self.every_node = _every_node(nb_nodes)
        # A burst's rescores change one node at a time: past its first
        # HEAP_AFTER jobs, the smallest score and base are read off heaps of
        # (value, node), stale entries skipped (None: argmin and min).
        self.rescores = 0
        # Every node scored by ``alike_runs.plan_run``, in place (``adopt_compiled_run``).
        self.compiled_current = False
        self.ranked: list[tuple[float, int]] | None = None
        self.base_ranked: list[tuple[float, int]] | None = None
        if compiled:
            if replaced is not None and replaced.compiled_current and len(replaced.known) == nb_nodes:
                self.t_k, self.t_prime, self.base = replaced.t_k, replaced.t_prime, replaced.base
                self.EvictionPenalty, self.scores = replaced.EvictionPenalty, replaced.scores
                self.known = replaced.known
            else:
                self.t_k, self.t_prime, self.base, self.EvictionPenalty, self.scores = np.empty((5, nb_nodes))
                self.known = np.empty(nb_nodes, dtype=bool)
            self.switch = nb_nodes   # LEO's: alike_runs follows the paper, whose switch is not sticky
            return
        self.t_k = plan.cores.earliest(job.cores, job.walltime)                         # line 3 (3')
        self.t_prime = plan.files.availability(job.file, job.size, self.t_k)           # line 4
        self.switch = self.first_start_now()
        self.base = self.score_without_penalty(self.every_node)
        self.base_min = float(self.base.min())
        # Computed where it can decide (``known``), 0 elsewhere.
        self.EvictionPenalty = np.zeros(nb_nodes)
        self.known = np.zeros(nb_nodes, dtype=bool)
        self.reach = -math.inf
        self.add_penalties(self.every_node)
        self.scores = self.score(self.every_node)

    def adopt_compiled_run(self, planned: int) -> None:
        """``alike_runs.plan_run`` scored every node afresh in place, with
        EvictionPenalty wherever it can count: no bound is left to widen, and
        the heaps are stale."""
        self.rescores += planned
        self.compiled_current = True
        self.reach = math.inf
        self.base_min = float(self.base.min())
        self.ranked = self.base_ranked = None

    def alike(self, job: UserJob, policy: str) -> bool:
        return policy == self.policy and job.kind == self.job.kind

    def score_without_penalty(self, nodes: np.ndarray) -> np.ndarray:
        t_k, t_prime = self.t_k[nodes], self.t_prime[nodes]
        if self.policy == "fcfs":   # Algorithm 1
            return t_k
        if self.policy == "eft":    # Algorithm 2
            return t_prime
        reachable = t_k < math.inf  # nodes without a window keep an infinite score
        LoadOverhead = np.subtract(t_prime, t_k, out=np.zeros_like(t_k), where=reachable)      # line 5
        score = t_k + self.W * LoadOverhead                                             # line 8 (11)
        if self.policy == "leo":    # Algorithm 4, lines 8-11
            score = np.where(self.eft_scored(nodes), t_prime, score)
        return score

    def first_start_now(self) -> int:
        """LEO's sticky switch, the first node scored t'_k whatever its own
        t_k (``PaperModel.leo_switch``); the number of nodes if none."""
        return self.model.leo_switch(self)

    def starts_now(self, nodes: np.ndarray) -> np.ndarray:
        """LEO's test, the nodes where the job starts now; with the authors'
        backfilling, on the Cores(J)-th earliest core, not in a hole
        (``src/basic_functions.c``)."""
        cores = self.plan.cores
        if isinstance(cores, AuthorsHoles) and not cores.holes_only:
            return cores.earliest_core(self.job.cores)[nodes] <= self.now
        return self.t_k[nodes] == self.now

    def eft_scored(self, nodes: np.ndarray) -> np.ndarray:
        """LEO: the nodes scored t'_k, those where the job can start now. In
        the authors' code (``src/scheduler.c``, ``LEA``) the switch sticks:
        every node after the first such one in node order is scored t'_k too."""
        return self.starts_now(nodes) | (nodes >= self.switch)

    @property
    def file_plan(self) -> FilePlan:
        """The plan's files, which EvictionPenalty reads: only LEA's and
        LEO's, never FCFS's ``NoFiles``."""
        files = self.plan.files
        assert isinstance(files, FilePlan), "EvictionPenalty is computed for LEA and LEO only"
        return files

    def add_penalties(self, candidates: np.ndarray) -> np.ndarray:
        """EvictionPenalty (line 7) where it can decide the choice, looked
        for on ``candidates`` (on every node if ``reach`` rose); returns
        the nodes where it became known."""
        if not self.penalised:
            return candidates[:0]
        return self.penalise(self.every_node if self.widen_reach() else candidates)

    def penalise(self, candidates: np.ndarray) -> np.ndarray:
        """EvictionPenalty on the ``candidates`` up to ``reach`` not known yet;
        returns the nodes where it became known."""
        wanted = (self.t_k[candidates] < math.inf) & ~self.known[candidates] & (self.base[candidates] <= self.reach)
        if self.policy == "leo":
            wanted &= ~self.eft_scored(candidates)
        nodes = candidates[wanted]
        if len(nodes):
            self.EvictionPenalty[nodes] = self.file_plan.eviction_penalty(self.job.file, self.job.size, self.t_k, nodes)
            self.known[nodes] = True
        return nodes

    def widen_reach(self) -> bool:
        """Move ``reach`` one bound beyond the threshold if the threshold
        passed it; True if it moved (every node is then looked at)."""
        bound = self.eviction_weight * self.file_plan.eviction_penalty_bound(self.job.size)
        # No node whose score without EvictionPenalty exceeds this can have the smallest score.
        threshold = self.base_min + bound + self.model.score_margin
        if threshold <= self.reach:
            return False
        self.reach = threshold + bound
        return True

    def score(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """The scores of ``nodes`` (default: every node), exact wherever they
        can be the smallest."""
        if nodes is None:
            nodes = self.every_node
        score = self.base[nodes]
        if self.penalised:
            EvictionPenalty = self.EvictionPenalty[nodes]
            if self.policy == "leo":
                EvictionPenalty = np.where(self.eft_scored(nodes), 0, EvictionPenalty)
            score = score + self.eviction_weight * EvictionPenalty
        return self.model.rounded(score)

    def best(self):
        """Line 9: (node, t_k, t'_k) of the smallest score, or Nones."""
        ranked = self.ranked
        if ranked is None:
            node = int(np.argmin(self.scores))
        else:   # (score, node) orders ties by node, as argmin
            node = _smallest(ranked, self.scores)[1]
        if self.scores[node] == math.inf:
            return None, None, None
        return node, float(self.t_k[node]), float(self.t_prime[node])

    def rescore(self, node: int | None) -> None:
        """Bring the scores up to date after a job was planned on ``node``."""
        if node is None:
            return
        job, plan = self.job, self.plan
        t_k = float(plan.cores.earliest_on(node, job.cores, job.walltime))
        t_prime = float(plan.files.availability_on(node, job.file, job.size, t_k))
        self.t_k[node], self.t_prime[node] = t_k, t_prime
        if self.penalised:
            self.EvictionPenalty[node] = 0
            self.known[node] = False
        switch = self.first_start_now()
        if switch == self.switch:
            self.rescore_one(node, t_k, t_prime)
            return
        # LEO's sticky switch moved: the nodes in between change score.
        changed = np.union1d(node, np.arange(min(switch, self.switch), max(switch, self.switch)))
        self.switch = switch
        self.base[changed] = self.score_without_penalty(changed)
        self.base_min = float(self.base.min())
        penalised = self.add_penalties(changed)
        self.scores[changed] = self.score(changed)
        if len(penalised):
            self.scores[penalised] = self.score(penalised)
        self.ranked = self.base_ranked = None

    def smallest_base(self) -> float:
        if self.base_ranked is None:
            if self.rescores < HEAP_AFTER:
                return float(self.base.min())
            self.base_ranked = _ranked(self.base)
        return _smallest(self.base_ranked, self.base)[0]

    def set_score(self, node: int, score: float) -> None:
        self.scores[node] = score
        if self.ranked is not None:
            heapq.heappush(self.ranked, (score, node))
        elif self.rescores >= HEAP_AFTER:
            self.ranked = _ranked(self.scores)

    def rescore_one(self, node: int, t_k: float, t_prime: float) -> None:
        """``rescore`` when only ``node`` changed, to (t_k, t'_k): the same
        arithmetic as the vector methods, on Python floats. A burst's job
        costs what its numpy calls cost, and on one node each costs more
        than its work."""
        self.rescores += 1
        eft_scored = self.policy == "leo" and self.eft_scored_on(node)   # LEO: scored t'_k, no penalty
        base = self.base_on(t_k, t_prime, eft_scored)
        if not self.penalised:   # base_min only bounds EvictionPenalty's reach
            self.base[node] = base
            self.set_score(node, self.floored(base))
            return
        before, self.base[node] = self.base[node], base
        if self.base_ranked is not None:
            heapq.heappush(self.base_ranked, (base, node))
        if base <= self.base_min:
            self.base_min = base
        elif before == self.base_min:   # the smallest may have left this node
            self.base_min = self.smallest_base()
        if self.widen_reach():   # every node may need its penalty: the vector way
            penalised = self.penalise(self.every_node)
            self.scores[penalised] = self.score(penalised)
            if self.ranked is not None:
                for score, changed in zip(self.scores[penalised].tolist(), penalised.tolist()):
                    heapq.heappush(self.ranked, (score, changed))
        elif not (self.known[node] or eft_scored) and t_k < math.inf and base <= self.reach:
            self.EvictionPenalty[node] = self.file_plan.eviction_penalty_on(node, self.job.file, self.job.size, t_k)
            self.known[node] = True
        EvictionPenalty = 0.0 if eft_scored else self.EvictionPenalty[node]
        self.set_score(node, self.floored(base + self.eviction_weight * EvictionPenalty))

    def base_on(self, t_k: float, t_prime: float, eft_scored: bool) -> float:
        """``score_without_penalty`` on one node; ``eft_scored``: LEO scores it t'_k."""
        if self.policy == "fcfs":
            return t_k
        if self.policy == "eft" or eft_scored:
            return t_prime
        return t_k + self.W * (t_prime - t_k if t_k < math.inf else 0.0)

    def eft_scored_on(self, node: int) -> bool:
        """``eft_scored`` on one node."""
        if node >= self.switch:
            return True
        cores = self.plan.cores
        if isinstance(cores, AuthorsHoles) and not cores.holes_only:
            return bool(cores.sorted_avail[node, self.job.cores - 1] <= self.now)
        return bool(self.t_k[node] == self.now)


@functools.cache
def _every_node(nb_nodes: int) -> np.ndarray:
    """0 .. nb_nodes - 1, read-only: one array for every ``NodeScores``."""
    nodes = np.arange(nb_nodes)
    nodes.flags.writeable = False
    return nodes


def _ranked(values: np.ndarray) -> list[tuple[float, int]]:
    """A heap of (value, index) over ``values``."""
    ranked = list(zip(values.tolist(), range(len(values))))
    heapq.heapify(ranked)
    return ranked


def _smallest(ranked: list[tuple[float, int]], values: np.ndarray) -> tuple[float, int]:
    """The heap's smallest (value, index) still equal to ``values``; the
    stale entries above it are dropped."""
    while ranked[0][0] != values[ranked[0][1]]:
        heapq.heappop(ranked)
    return ranked[0]
