"""EquilibrIO: taming the I/O tides (seed 003, Özden, Tarraf, Wolf, CLUSTER 2025).

Design notes (the model, its sources, the choices made): this folder's README.md, section equilibrio.py.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
import hashlib
import math

from batsim.batsim import Job
import numpy as np
from procset import ProcSet

from batio.errors import InvalidValue
from batio.schedulers.backfill import QUEUE_ORDERS, Backfill, RoundPlan, backfill, time_limit
from batio.schedulers.options import Option

BACKFILL_MAX = {"none": 0, "easy": 1, "conservative": math.inf}
IO_FIELDS = ("io_walltime_share", "average_bw")


# -- pure computations (slides "I/O intensity", "Fairness priority value", "Weighted priority") --

def io_intensity(io_walltime_share: float, average_bw: float) -> float:
    """io_intensity_j := io_walltime_j / total_walltime_j x average_bw_j."""
    return io_walltime_share * average_bw


def mean_io_intensity(total: float, count: int) -> float:
    """io_intensity of a set of jobs from its sum and size; 0 for an empty set."""
    return total / count if count else 0.0


def normalise(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """(v - min) / (max - min) for each value; all 0 when max == min (no
    division by zero: nothing tells the values apart). Values equal but for
    rounding (relative difference below 1e-9, e.g. |0.3 - 0.1| and |0.3 -
    0.5|) count as equal: rounding noise must not be stretched to [0, 1]."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if math.isclose(low, high, rel_tol=1e-9, abs_tol=1e-12):
        return np.zeros_like(values)
    return (values - low) / (high - low)


def fairness_priority(arrival_times: Sequence[float]) -> np.ndarray:
    """lambda_c for every candidate: its normalised arrival time in QJ."""
    return normalise(arrival_times)


def system_io_intensity_with(candidates: np.ndarray, running_total: float, running_count: int) -> np.ndarray:
    """io_intensity(S)_c: the system's intensity if candidate c were admitted."""
    return (running_total + np.asarray(candidates, dtype=float)) / (running_count + 1)


def intensity_delta(candidates: Sequence[float], workload_intensity: float, running_total: float,
                    running_count: int, versus: str = "system") -> np.ndarray:
    """delta_c for candidates of known intensities (normalised among them).

    ``versus="system"``: delta'_c = |io_intensity(W) - io_intensity(S)_c|;
    ``versus="job"``: delta'_c = |io_intensity(W) - io_intensity_c| (the slide's formula as printed).
    """
    values = np.asarray(candidates, dtype=float)
    if versus == "system":
        compared = system_io_intensity_with(values, running_total, running_count)
    elif versus == "job":
        compared = values
    else:
        raise InvalidValue(f"versus must be 'system' or 'job', got {versus!r}")
    return normalise(np.abs(workload_intensity - compared))


def weighted_priority(alpha: float, lam, delta):
    """wp(alpha, lambda, delta) = (1 - alpha) lambda + alpha delta."""
    return (1 - alpha) * np.asarray(lam, dtype=float) + alpha * np.asarray(delta, dtype=float)


def candidate_priorities(alpha: float, arrival_times: Sequence[float], intensities: Sequence[float | None],
                         workload_intensity: float, running_total: float, running_count: int,
                         versus: str = "system") -> np.ndarray:
    """wp of every candidate; ``None`` intensity = hidden I/O: delta_c = lambda_c."""
    lam = fairness_priority(arrival_times)
    known = np.array([value is not None for value in intensities], dtype=bool)
    delta = lam.copy()
    if known.any():
        values = [value for value in intensities if value is not None]
        delta[known] = intensity_delta(values, workload_intensity, running_total, running_count, versus)
    return weighted_priority(alpha, lam, delta)


def knowledge_draw(job_id: str, seed: int = 0) -> float:
    """u_j in [0, 1), a fixed hash of ``seed`` and the job's id within its
    workload (``w0!12`` -> ``12``): job j's I/O information is visible when
    u_j < knowledge."""
    name = job_id.rpartition("!")[2]
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def job_io_intensity(job: Job, knowledge: float = 1.0, seed: int = 0) -> float | None:
    """The job's io_intensity as the scheduler sees it; None when hidden."""
    fields = job.json_dict or {}
    if knowledge <= 0 or any(not _is_number(fields.get(key)) for key in IO_FIELDS):
        return None
    if knowledge < 1 and knowledge_draw(job.id, seed) >= knowledge:
        return None
    return io_intensity(float(fields["io_walltime_share"]), float(fields["average_bw"]))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class IntensitySet:
    """Sum and count of the known intensities of a set of jobs (S or W)."""

    def __init__(self):
        self.members: dict[str, float] = {}
        self.total = 0.0

    def add(self, job_id: str, value: float | None) -> None:
        if value is not None and job_id not in self.members:
            self.members[job_id] = value
            self.total += value

    def remove(self, job_id: str) -> None:
        value = self.members.pop(job_id, None)
        if value is not None:
            self.total = self.total - value if self.members else 0.0  # no rounding drift once empty

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def io_intensity(self) -> float:
        return mean_io_intensity(self.total, self.count)


# -- the scheduler -------------------------------------------------------------

class Equilibrio(Backfill):
    PAPER = ("seed 003 (Özden, Tarraf, Wolf, CLUSTER 2025), slides \"I/O intensity\", \"Scheduling algorithm\", "
             "\"Weighted priority\", \"Algorithm\"")
    # I/O intensity is io_walltime_share x average_bw, Darshan's coarse numbers the workload carries.
    REQUIRES = {"storage": True, "io": True, "job_fields": ("io_walltime_share", "average_bw")}
    OPTIONS = {
        "alpha": Option(float, 0.5, minimum=0.0, maximum=1.0,
                        help="reordering intensity: 0 FCFS, 1 I/O intensity only"),
        "knowledge": Option(float, 1.0, minimum=0.0, maximum=1.0,
                            help="fraction of jobs whose I/O information is visible"),
        "knowledge_seed": Option(int, 0, minimum=0, help="seed of the hash choosing the visible jobs"),
        "backfill": Option(str, "poster", choices=("poster", *BACKFILL_MAX),
                           help="BackfillMax: the poster's, or that of a named backfill"),
        "delta": Option(str, "system", choices=("system", "job"),
                        help="delta' against io_intensity(S)_c (system) or io_intensity_c (job)"),
        "backfill_order": Option(str, "recomputed", choices=("recomputed", "fixed"),
                                 help="backfill pass: wp order recomputed after each start, or C as computed"),
        "backfill_guard": Option(bool, True,
                                 help="backfill pass (alpha > 0): skip visible candidates that move "
                                      "io_intensity(S) away from io_intensity(W)"),
    }

    # The BackfillMax is the one option ``backfill`` names, and the order the weighted priority.
    WITHDRAWN_OPTIONS = ("backfill_max", "order")

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        settings = self.settings
        self.backfill_max = BACKFILL_MAX.get(settings["backfill"], 0)
        self.alpha = settings["alpha"]
        self.knowledge = settings["knowledge"]
        self.knowledge_seed = settings["knowledge_seed"]
        self.backfill_rule = settings["backfill"]
        self.delta_versus = settings["delta"]
        self.backfill_order = settings["backfill_order"]
        self.backfill_guard = settings["backfill_guard"]
        self.intensity: dict[str, float | None] = {}  # job id -> io_intensity_j (None: hidden)
        self.system = IntensitySet()      # io_intensity(S): RJ
        self.workload = IntensitySet()    # io_intensity(W): RJ u QJ
        self.reservations: dict[str, float] = {}  # running job -> current_time + walltime at admission
        self._arrival_rank: dict[str, int] = {}

    # -- the slide's table: events and the metrics they affect --------------

    def add_job_to_workload_io_intensity(self, job: Job) -> None:
        self.intensity[job.id] = job_io_intensity(job, self.knowledge, self.knowledge_seed)
        self.workload.add(job.id, self.intensity[job.id])

    def add_job_to_system_io_intensity(self, job: Job) -> None:
        self.system.add(job.id, self.intensity.get(job.id))

    def remove_job_from_system_io_intensity(self, job: Job) -> None:
        self.system.remove(job.id)

    def remove_job_from_workload_io_intensity(self, job: Job) -> None:
        self.workload.remove(job.id)
        self.intensity.pop(job.id, None)

    # -- get_best_candidates -------------------------------------------------

    def get_best_candidates(self, QJ: Sequence[Job]) -> list[Job]:
        """QJ sorted by weighted priority, best (minimum) first; ties by
        arrival time, then job id (``QUEUE_ORDERS["fcfs"]``)."""
        wp = candidate_priorities(
            self.alpha, [job.submit_time for job in QJ], [self.intensity.get(job.id) for job in QJ],
            self.workload.io_intensity, self.system.total, self.system.count, self.delta_versus)
        ranks = self._arrival_rank
        if not all(job.id in ranks for job in QJ):
            ranks = {job.id: i for i, job in enumerate(sorted(QJ, key=QUEUE_ORDERS["fcfs"]))}
        return [QJ[i] for i in np.lexsort((np.asarray([ranks[job.id] for job in QJ]), wp))]

    # -- one invocation (slide "Algorithm", lines 7-23) -----------------------

    def schedule(self) -> RoundPlan:
        current_time = self.bs.time()
        RT = self.initialize_reservation_tracker(current_time)
        QJ = sorted(self.waiting, key=QUEUE_ORDERS["fcfs"])
        self._arrival_rank = {job.id: i for i, job in enumerate(QJ)}  # ties in wp: arrival order
        walk = CandidateWalk(self, QJ, RT.free_host_count(current_time), current_time)
        # Algorithm 1 over the walk: with "none" it stops at the blocked candidate,
        # with "easy" and "conservative" it reserves for it, with "poster" it goes on.
        plan = backfill(RT, walk, current_time, self.backfill_max, self.planned_duration,
                        lambda job: self.bandwidth_need(job, current_time), eligible=walk.eligible,
                        on_start=walk.admit, first_fit=self.backfill_rule == "poster")
        self.start(plan, current_time, RT)
        return plan

    def keeps_balance(self, c: Job) -> bool:
        """Whether admitting c leaves |io_intensity(W) - io_intensity(S)| no
        larger (always true for a hidden job)."""
        value = self.intensity.get(c.id)
        if value is None:
            return True
        W, S = self.workload.io_intensity, self.system.io_intensity
        S_c = system_io_intensity_with(np.array([value]), self.system.total, self.system.count)[0]
        return abs(W - S_c) <= abs(W - S) + 1e-12

    # -- invocation triggers (lines 1-6) ---------------------------------------

    def onJobSubmission(self, job):
        super().onJobSubmission(job)
        if job.requested_resources <= len(self.hosts):  # not rejected
            self.add_job_to_workload_io_intensity(job)                                    # line 2

    def job_left(self, job: Job) -> None:
        """Completion or kill."""
        super().job_left(job)
        self.remove_job_from_system_io_intensity(job)                                     # line 4
        self.remove_job_from_workload_io_intensity(job)                                   # line 5
        self.reservations.pop(job.id, None)                                               # line 6

    # -- inspection ------------------------------------------------------------

    def io_intensities(self) -> tuple[float, float]:
        """(io_intensity(S), io_intensity(W)) as the scheduler sees them now."""
        return self.system.io_intensity, self.workload.io_intensity


class CandidateWalk:
    """The order in which one invocation (slide "Algorithm") considers the
    queued jobs QJ, as Algorithm 1's waiting queue (``backfill``):

    * lines 7-21: the best candidate by weighted priority, ranked again after
      each admission, while nodes_free >= nodes_min; the first one that
      cannot start now is the blocked candidate (line 20);
    * lines 22-23, the backfill pass: the other candidates C in the order of
      the last ranking, ranked again after each start with ``backfill_order``
      "recomputed"; a candidate is ``eligible`` when the guard
      (``backfill_guard``) and, for the poster's rule, reservation_max let
      it start.
    """

    def __init__(self, scheduler: Equilibrio, QJ: list[Job], nodes_free: int, current_time: float):
        self.scheduler = scheduler
        self.QJ = QJ
        self.nodes_free = nodes_free
        self.current_time = current_time
        self.blocked: Job | None = None
        self.reservation_max = math.inf
        self.started_since_ranking = False

    def __iter__(self) -> Iterator[Job]:
        scheduler, C = self.scheduler, self.QJ
        while C:
            if self.blocked is None:
                if self.nodes_free < min(job.requested_resources for job in C):                 # lines 7-8, 18
                    return
                C = scheduler.get_best_candidates(C)                                            # line 9
            elif self.started_since_ranking and scheduler.backfill_order == "recomputed":
                C = scheduler.get_best_candidates(C)
            self.started_since_ranking = False
            c, C = C[0], C[1:]                                                                  # lines 10, 17
            yield c
            if self.blocked is None and not self.started_since_ranking:                        # lines 19-21
                self.blocked = c
                self.reservation_max = max(scheduler.reservations.values(), default=self.current_time)  # line 16

    def eligible(self, c: Job) -> bool:
        """Whether c may be considered: always before the backfill pass."""
        scheduler = self.scheduler
        if self.blocked is None:
            return True
        if scheduler.backfill_guard and scheduler.alpha > 0 and not scheduler.keeps_balance(c):
            return False
        # The poster's rule: by reservation_max every running and backfilled job has
        # ended, so the blocked candidate can start then at the latest.
        return scheduler.backfill_rule != "poster" or self.current_time + time_limit(c) <= self.reservation_max

    def admit(self, c: Job, hosts: ProcSet) -> None:
        """Lines 12-15: c starts now."""
        scheduler = self.scheduler
        scheduler.add_job_to_system_io_intensity(c)
        scheduler.reservations[c.id] = self.current_time + time_limit(c)
        self.nodes_free -= c.requested_resources                                              # line 13
        self.started_since_ranking = True


def visible_fraction(job_ids: Iterable[str], knowledge: float, seed: int = 0) -> float:
    """Fraction of ``job_ids`` whose I/O information is visible at ``knowledge``."""
    ids = list(job_ids)
    return sum(knowledge_draw(job_id, seed) < knowledge for job_id in ids) / len(ids) if ids else 0.0
