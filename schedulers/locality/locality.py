"""Locality-aware batch scheduling of jobs sharing large input files (paper
004, Sections 3-4): FCFS, EFT, LEA, LEO and LEM (Algorithms 1-5), each with
or without conservative backfilling (Section 4.3, the "-BF" variants).

Options (pybatsim ``-o`` JSON):

* ``policy``: ``fcfs`` | ``eft`` | ``lea`` | ``leo`` | ``lem`` (default ``lea``);
* ``backfill``: conservative backfilling (line 3'), default false;
* ``W``: LEA's weight of the load overhead, default 500 (Section 4.2);
* ``eviction_weight``: factor of EvictionPenalty, default 1; 0 disables it;
* ``busy_threshold``: LEM applies LEA from this fraction of nodes running
  at least one job, EFT below it; default 0.8 (Algorithm 5);
* ``cores``, ``memory_bytes``, ``link_bandwidth``: override the platform's
  host properties of the same names (cores per node, node memory M in
  bytes, node-to-storage bandwidth in bytes/s);
* ``stats_path``: if set, the time and number of jobs examined of every
  round, and ``split_instants`` (below), are written there as JSON when the
  simulation ends.
* ``load_model``: ``link`` (default) reads a file through the node's link
  in the simulator, so concurrent loads on a node share it; ``fixed`` gives
  every load size / ``link_bandwidth``, however many run at once, as the
  paper's model and the authors' simulator have it (Section 3);
* ``file_retention``: ``memory`` (default) keeps a file whose last user
  ended until a job of another file starts on the node (Section 3's rule);
  ``in_use`` keeps it only while a job uses it, or for a job started in the
  very second its last user ends (the authors' code, ``add_data_in_node``
  in ``src/basic_functions.c``);
* ``history_pinning``: category -2 jobs (running at the window's start) are
  placed on their history node ``always`` (default), or ``until_replan``:
  only until the first job completes, after which those not started yet
  are placed by the policy like any job (the authors' code);
* ``authors_code``: false (default) follows the paper's text; true follows
  the authors' simulator where its code differs: load times truncated to
  whole seconds in single precision and scores to integers, LEO's switch to
  t'_k sticking for every later node of the job, case 3's overhead counted
  from now instead of t_k, a file in use on a node in use until the latest
  planned end of any job that used it since its load (even one that ended
  early), and, when only new jobs are planned, files that
  jobs planned in an earlier round would load not seen; and their loop
  (``src/main.c``): one round per whole second (below), the jobs an earlier
  round planned for this second started before planning again
  (``start_jobs``), planning stopped once every core free now is taken
  (not at the last job that could start now: the later t_k then differ),
  and the files of jobs pinned to their history node not seen until they
  start (``get_state_before_day_0_scheduler`` records none);
* ``compiled_runs``: outside ``authors_code``, with or without
  backfilling, a job and the alike jobs after it (same cores, walltime
  and file) are planned in compiled code (``alike_runs``), default true;
  false plans every job in Python, with the same decisions;
* ``round_interval``: at least this many seconds between two rounds,
  default 0 (a round after every event that changes something, as the
  CCGrid version of the authors' simulator does at its one-second
  resolution). Their later ICPP version calls its scheduler at most once per
  30 s (``last_scheduler_call`` in ``src/main.c`` from commit 8e2d66c on).
  On slices of 2022-09-10, 30-s rounds multiply every variant's mean
  stretch by 1.1 to 4 (``scripts/results/locality.md``).

``AUTHORS_MODEL`` below gathers the options of the authors' model; with a
workload converted with ``--running-at-cut restart`` it reproduces their
simulator (``tests/test_locality_authors.py``).

Mechanism (runs unchanged on Batsim 4.2, which must be started with
``--enable-dynamic-jobs --enable-compute-sharing``, without
``--disable-storage-sharing``): each node is one Batsim compute host shared by
its jobs; cores and memory are tracked here (``batio.schedulers.locality.nodememory``). A job
decided at t_k on node k either runs at once (its file is in k's memory,
case 1), or first waits for a load: this scheduler registers a dynamic job
``loads!N`` whose profile is ``parallel_homogeneous_pfs`` reading the file's
bytes from the storage host ``pfs`` onto k (its own profile ``read_N``:
Batsim 4.2.1 drops a profile once a job using it has ended, so a name is
never registered twice), and executes it on k; concurrent loads on a node share the node's link in
the simulator. A job started while its file is being loaded on k waits for
that load only (case 3). The user job is executed on k when its load
completes. Its Batsim profile is a ``delay``; Batsim's own walltime counts
from that execution, so a job that waits for a load is killed by this
scheduler at t_k + WallTime(J), the end of the window the paper gives it
(Section 3), executed and killed at once if its load is not over by then.
A CALL_ME_LATER wakes the scheduler at each such deadline; only the nearest
are asked ahead (``DeadlineCalls``), since Batsim cannot cancel the calls of
jobs that end early. Once every workload job is submitted and started, no load can be needed any
more and the scheduler sends NOTIFY registration_finished.

Each user job gets, with SET_JOB_METADATA (Batsim's ``metadata`` column of
``_jobs.csv``): ``node=<host id>;decided=<t_k>;case=<1|2|3>;load=<id of the
load job it waited for, empty if none>;reused=<1 if cases 1 or 3, else 0>``
("re-used" counted as the authors' simulator does, ``start_jobs`` in
``src/basic_functions.c``: no transfer, or waiting for another job's load).

Workload fields read on each job (besides Batsim's): ``cores`` (1..cores per
node), ``file``, ``file_bytes`` (rounded to whole bytes), ``category`` (optional), and for category
-2 ``history_node`` (a compute host id): such a job was already running at
the start of the replayed window; it is planned before every other job, on
that node only, at the earliest time its cores are free (normally at once).
Fact from the authors' simulator (``get_state_before_day_0_scheduler`` in
``src/scheduler.c``): they too are placed on their historical node at its
earliest available time, and load their file like any started job.

Rounds. A round plans the queue (in submission order) from the state of the
started jobs, as the authors' simulator does (``src/main.c``): after a job
completes (or is killed) everything is replanned; when only new jobs
arrived, the previous plan is kept and the new jobs are planned after it
(reservations of earlier jobs do not depend on later ones). Exact
shortcuts keep rounds short: a job is only planned while some job left in
the queue could still start now (without backfilling: it needs no more than
the largest number of cores free now on a node; with backfilling: its
window fits in a hole open now), since planning the rest cannot start
anything now and is redone at the next completion; and the unplanned rest is
planned first when only new jobs arrive. That last job is found before the
jobs ahead of it take what is free now, so the walk to it is cut once no
job left could start now, and the jobs it skipped are planned, as that
round would have, only if the next round keeps the plan (``QueueWalk``).
Loads completing change no reservation and trigger no round.

Facts from the authors' simulator used here (``src/scheduler.c``,
``fcfs_with_a_score_scheduler`` and ``..._conservativebf_scheduler``):
ties go to the first node in id order (strict ``<`` on the score); LEM's load
is the number of nodes running at least one started job (a job loading its
file counts), updated within a round as jobs are started on idle nodes
(``temp_running_nodes``), compared as ``nodes * 100 / 486 < threshold``.
Where they differ from the paper, ``authors_code`` follows them.

Seconds. The authors' loop handles all that happens in one second
(completions, then submissions) in one round. Batsim calls the scheduler as
soon as one message has arrived, and a job's completion arrives a message
latency (about 1e-6 s per hop) after its second: a job submitted in that
second would be planned before the completion, and of two jobs ending in
the same second the first handled alone (``split_instants`` counts the
rounds that follow one of the same second that started jobs). With
``authors_code`` the scheduler reads each job's delay (its profile, which
Batsim lists in SIMULATION_BEGINS), expects its completion
(``ExpectedCompletions``) and holds the round until the last completion
expected in that second has arrived; its clock is the whole second. This
uses the run times only to group events, never to choose.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
import functools
import heapq
import itertools
import json
import math
import operator
import time

from batsim.batsim import Job
import numpy as np
from procset import ProcSet

from batio.errors import InputError, SchedulerError
from batio.schedulers.backfill import QueueScheduler, backfill, job_id_key, time_limit
from batio.schedulers.locality import alike_runs
from batio.schedulers.locality.nodememory import (
    AuthorsHoles,
    CoreAvailability,
    CoreLedger,
    CoreProfile,
    FilePlan,
    HoleGate,
    LoadCase,
    NodeMemory,
    load_seconds,
    plan_cores,
    truncated_load_seconds,
)
from batio.schedulers.options import Option
from batio.schedulers.reservation import Slot

LOADS_WORKLOAD = "loads"
STORAGE_LABEL = "pfs"
HISTORY_CATEGORY = -2


@dataclass(slots=True)
class UserJob:
    """A workload job with the fields the policies read."""

    job: Job
    cores: int
    walltime: float
    file: Hashable
    size: float
    history_node: int | None    # node index a category -2 job is pinned to, None once free
    history_start: float | None = None   # category -2 jobs: when history started them
    id: str = field(init=False, repr=False, compare=False)   # the job's, read often
    kind: tuple = field(init=False, repr=False, compare=False)
    """Cores, walltime, file and size: alike jobs (a run) share it."""
    queue_key: tuple = field(init=False, repr=False, compare=False)
    """Submission order; category -2 jobs (already running) first, in order
    of history start. Kept: ``WaitingQueue`` orders the jobs by it."""

    def __post_init__(self):
        self.id = self.job.id
        self.kind = (self.cores, self.walltime, self.file, self.size)
        if self.history_start is not None:
            self.queue_key = (False, self.history_start, job_id_key(self.id))
        else:
            self.queue_key = (True, self.job.submit_time, job_id_key(self.id))

    requested_resources = 1
    """Hosts, as ``backfill`` asks: one node (``read_job`` checks res 1)."""


SAME_INSTANT = 1e-3
"""Seconds: events closer than this belong to one second of the authors'
whole-second clock."""

AUTHORS_MODEL = {"load_model": "fixed", "file_retention": "in_use", "history_pinning": "until_replan",
                 "authors_code": True}
"""The options that follow the model of the authors' simulator (userccgrid/
Locality-aware-batch-scheduling at 1f47b38), on a workload converted with
``--running-at-cut restart`` (``scripts/results/locality.md``)."""

HEAP_AFTER = 8
"""Rescores of one burst after which ``NodeScores`` keeps heaps of its
scores (building one costs about ten argmins); a rough choice, not tuned."""

FIRST_CHECK = 8
"""A cut walk's first ``last_candidate`` check comes this many jobs past
where it began (after the pinned jobs), each later one where the walk's
index has doubled; a rough choice, not tuned."""

CALL_MARGIN = 1e-3
"""Seconds: a CALL_ME_LATER must be after the time Batsim receives it, which
is the decision's time plus its messages' (sub-millisecond) latency; a
wake-up nearer than this is handled at once instead."""


class Plan:
    """One round's plan: the cores (``nodememory.CoreAvailability`` or
    ``CoreProfile``), the files (``FilePlan``), the nodes running a job, and
    the queued jobs not planned yet (in queue order)."""

    def __init__(self, cores, files: FilePlan | NoFiles, busy: np.ndarray, pending: list[UserJob]):
        self.cores, self.files, self.busy, self.pending = cores, files, busy, pending
        self.busy_count = int(busy.sum())   # LEM reads it for every job
        # Jobs planned to start later: id -> (job, node, t_k, core ids or
        # None), in plan order.
        self.later: dict[str, tuple[UserJob, int, float, list | None]] = {}
        self.cut_walk: QueueWalk | None = None   # a walk cut where none could start now, its rest not planned

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


class DeadlineCalls:
    """The deadlines t_k + WallTime(J) of the jobs that wait or waited for a
    load (Section 3), and the CALL_ME_LATERs that wake the scheduler at them.

    Batsim 4.2 cannot cancel a CALL_ME_LATER, and each one pending is a
    sleeping actor that every simulated event visits (under ptask_L07; in the
    embedded engine on SimGrid 3.32 also an OS thread). Asked at each job's
    start, they would mostly come for jobs long ended: on the 2022-09-10 day
    about 3,000 were pending on average, 2.6 times the jobs running. So a deadline
    is asked for only once it is within ``ASK_AHEAD`` of the earliest call
    pending; each call that comes lets the next ones be asked. A deadline not
    asked for is then more than ``ASK_AHEAD`` away, so its call is always
    asked well after the time Batsim receives it (``CALL_MARGIN``).
    """

    ASK_AHEAD = 1.0   # seconds; far above a call's message latency (microseconds) and CALL_MARGIN

    def __init__(self, ask: Callable[[float], None]):
        self.ask = ask                       # Batsim's CALL_ME_LATER
        self.of: dict[str, float] = {}       # job id -> deadline
        self.not_asked: list[tuple[float, str]] = []   # heap; entries of ended jobs dropped lazily
        self.pending: list[float] = []       # heap of the calls asked that have not come yet (a few)

    def add(self, job_id: str, deadline: float) -> None:
        self.of[job_id] = deadline
        heapq.heappush(self.not_asked, (deadline, job_id))
        self._ask_near()

    def due(self, job_id: str, now: float) -> bool:
        """The job's deadline is ``now`` (within CALL_MARGIN): it is dropped."""
        if self.of.get(job_id, math.inf) <= now + CALL_MARGIN:
            del self.of[job_id]
            return True
        return False

    def drop(self, job_id: str) -> None:
        self.of.pop(job_id, None)

    def came(self, now: float) -> list[str]:
        """A call came at ``now``: the jobs whose deadline has passed (dropped)."""
        while self.pending and self.pending[0] <= now:
            heapq.heappop(self.pending)
        overdue = [job_id for job_id, deadline in self.of.items() if deadline <= now]
        for job_id in overdue:
            del self.of[job_id]
        self._ask_near()
        return overdue

    def _ask_near(self) -> None:
        """Ask for every live deadline within ASK_AHEAD of the earliest call pending."""
        heap = self.not_asked
        while heap:
            deadline, job_id = heap[0]
            if self.of.get(job_id) != deadline:
                heapq.heappop(heap)   # the job ended before its deadline
                continue
            if self.pending and deadline > self.pending[0] + self.ASK_AHEAD:
                return
            heapq.heappop(heap)
            if deadline not in self.pending:   # two jobs with one deadline share its call
                heapq.heappush(self.pending, deadline)
                self.ask(deadline)


class WaitingQueue:
    """The queued jobs: by id, and in queue order (``UserJob.queue_key``,
    unique per job), kept in order as jobs come and leave instead of
    sorted again in every round (a round's queue has thousands of jobs)."""

    def __init__(self):
        self.by_id: dict[str, UserJob] = {}
        self.in_order: list[UserJob] = []

    def add(self, job: UserJob) -> None:
        self.by_id[job.id] = job
        bisect.insort(self.in_order, job, key=_queue_key)

    def remove(self, job: UserJob) -> None:
        del self.by_id[job.id]
        index = bisect.bisect_left(self.in_order, job.queue_key, key=_queue_key)
        assert self.in_order[index] is job, "queue keys are unique"
        del self.in_order[index]

    def __contains__(self, job_id: str) -> bool:
        return job_id in self.by_id

    def __len__(self) -> int:
        return len(self.by_id)

    def ordered(self) -> list[UserJob]:
        """The jobs in queue order (a copy)."""
        return list(self.in_order)


class Locality(QueueScheduler):
    PAPER = "paper 004 (locality-aware scheduling of jobs sharing input files), Sections 3-4, Algorithms 1-5"
    # Each job's `file` is loaded onto its one node, through the node's link, into its memory.
    REQUIRES = {"storage": True, "host_properties": ("cores", "memory_bytes", "link_bandwidth"),
                "job_fields": ("cores", "file", "file_bytes"), "single_host_jobs": True}
    PERFORMS = ("file",)
    OPTIONS = {
        "policy": Option(str, "lea", choices=("fcfs", "eft", "lea", "leo", "lem"),
                         help="Algorithms 1-5: FCFS, EFT, LEA, LEO, LEM"),
        "backfill": Option(bool, False, help="conservative backfilling (the -BF variants)"),
        "W": Option(float, 500.0, minimum=0, help="LEA's weight of the load overhead"),
        "eviction_weight": Option(float, 1.0, minimum=0, help="factor of EvictionPenalty; 0 disables it"),
        "busy_threshold": Option(float, 0.8, minimum=0, maximum=1,
                                 help="LEM: fraction of busy nodes from which LEA replaces EFT"),
        "cores": Option(int, None, minimum=1, aliases={None: None}, help="cores per node"),
        "memory_bytes": Option(float, None, minimum=0, aliases={None: None}, unit="bytes",
                               help="node memory M"),
        "link_bandwidth": Option(float, None, minimum=0, aliases={None: None}, unit="bytes/s",
                                 help="node-to-storage bandwidth"),
        "stats_path": Option(str, "", help="file to write per-round times to"),
        "round_interval": Option(float, 0.0, minimum=0,
                                 unit="s", help="time at least between rounds (the authors' ICPP code: 30)"),
        "load_model": Option(str, "link", choices=("link", "fixed"),
                             help="link: a load reads through the node's link in the simulator, concurrent loads "
                                  "share it; fixed: every load takes size / link_bandwidth, the paper's model"),
        "file_retention": Option(str, "memory", choices=("memory", "in_use"),
                                 help="memory: a file stays until another file's job starts on the node (the "
                                      "paper); in_use: only while a job uses it (the authors' code)"),
        "history_pinning": Option(str, "always", choices=("always", "until_replan"),
                                  help="category -2 jobs: always on their history node, or only until the first "
                                       "job completes (the authors' code)"),
        "authors_code": Option(bool, False,
                               help="the authors' simulator's arithmetic and its deviations from the paper's "
                                    "text: whole-second loads and scores, LEO's sticky switch, case 3's "
                                    "overhead counted from now, one round for all that happens in a second"),
        "compiled_runs": Option(bool, True,
                                help="plan runs of alike jobs in compiled code (alike_runs.py); false plans "
                                     "every job in Python, the same decisions"),
    }

    @classmethod
    def requirements(cls, settings):
        """A host property given as an option (``cores``, ...) need not be on the hosts."""
        needs = dict(cls.REQUIRES)
        needs["host_properties"] = tuple(key for key in needs["host_properties"] if settings[key] is None)
        return needs

    def __init__(self, options: Mapping | None = None):
        super().__init__(options)
        settings = self.settings
        self.policy = settings["policy"]
        self.backfill = settings["backfill"]
        self.W = settings["W"]
        self.eviction_weight = settings["eviction_weight"]
        self.busy_threshold = settings["busy_threshold"]
        self.overrides = {key: settings[key] for key in ("cores", "memory_bytes", "link_bandwidth")}
        self.stats_path = settings["stats_path"]
        self.round_interval = settings["round_interval"]
        self.load_model = settings["load_model"]
        self.file_retention = settings["file_retention"]
        self.history_pinning = settings["history_pinning"]
        self.authors_code = settings["authors_code"]
        self.compiled_runs = settings["compiled_runs"]
        self.pinned: list[UserJob] = []   # queued jobs pinned until the first completion
        self.last_round = -math.inf
        self.round_call: float | None = None   # CALL_ME_LATER asked for a postponed round
        self.queue = WaitingQueue()
        self.new_jobs: list[UserJob] = []
        self.started: dict[str, tuple[UserJob, int, float]] = {}   # id -> (job, node, t_k)
        self.waiting_for_load: dict[str, UserJob] = {}
        self.loads: dict[str, tuple[int, Hashable]] = {}           # load job id -> (node, file)
        self.load_of: dict[tuple[int, Hashable], str] = {}
        self.deadlines = DeadlineCalls(lambda date: self.bs.wake_me_up_at(date))   # bs comes after __init__
        self.load_count = 0
        self.plan: Plan | None = None
        self.replan = True
        self.all_submitted = False
        self.registration_finished = False
        self.round_seconds: list[float] = []
        self.round_examined: list[int] = []
        # Completions handled in a round of their own after a round of the
        # same instant that started jobs (module docstring).
        self.split_instants: list[float] = []   # their times
        self.last_round_started = (-math.inf, 0)   # (time, jobs it started)
        self.expected = ExpectedCompletions()
        self.hole_gate = HoleGate()   # authors_code with backfilling
        self.pinned_rows = PinnedRows()   # batio's category -2 jobs: their nodes' rows, kept between rounds

    # -- set-up ------------------------------------------------------------------

    def onSimulationBegins(self):
        super().onSimulationBegins()
        bs = self.bs
        if not (bs.dynamic_job_registration_enabled and bs.allow_compute_sharing
                and bs.allow_storage_sharing):
            raise SchedulerError(
                "Locality needs Batsim's dynamic jobs and compute sharing: run Batsim with "
                "--enable-dynamic-jobs --enable-compute-sharing (and without --disable-storage-sharing); "
                f"this run has dynamic jobs {'on' if bs.dynamic_job_registration_enabled else 'off'}, "
                f"compute sharing {'on' if bs.allow_compute_sharing else 'off'}, storage sharing "
                f"{'on' if bs.allow_storage_sharing else 'off'}")
        self.host_ids = sorted(bs.compute_resources)
        self.node_of_host = {host: node for node, host in enumerate(self.host_ids)}
        self.m = int(self.host_property("cores"))
        memory_bytes = self.host_property("memory_bytes")
        bandwidth = self.host_property("link_bandwidth")
        load_time = (truncated_load_seconds if self.authors_code else load_seconds)(bandwidth)
        self.memory = NodeMemory(len(self.host_ids), memory_bytes, bandwidth, load_time,
                                 retain_cached=self.file_retention == "memory", stale_use_end=self.authors_code)
        self.ledger = CoreLedger(len(self.host_ids), self.m)
        storage = {resource["name"]: rid for rid, resource in bs.storage_resources.items()}
        if STORAGE_LABEL in storage:
            self.storage_id = storage[STORAGE_LABEL]
        elif len(storage) == 1:
            self.storage_id = next(iter(storage.values()))
        else:
            raise InputError("platform", f"Locality loads files from a storage host named "
                             f"'{STORAGE_LABEL}' (or the only storage host); storage hosts: {sorted(storage)}")

    @functools.cached_property
    def node_hosts(self) -> list[ProcSet]:
        """Each node's host as a ProcSet, built once: a round looks at
        thousands of jobs, and building a ProcSet costs more than a slot."""
        return [ProcSet(host) for host in self.host_ids]

    def now(self) -> float:
        """Batsim's time; with ``authors_code``, the second it belongs to
        (the nearest integer: the authors' clock counts whole seconds, and
        Batsim's message latency adds about 1e-6 s per hop to theirs)."""
        return float(round(self.bs.time())) if self.authors_code else self.bs.time()

    def host_property(self, name: str) -> float:
        """A property every compute host carries with the same value (the
        paper's nodes are identical), unless the option of that name is set."""
        if self.overrides[name] is not None:
            return self.overrides[name]
        values = set()
        for host in self.host_ids:
            resource = self.bs.compute_resources[host]
            raw = resource.get("properties", {}).get(name)
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise InputError("platform", f"host '{resource.get('name', host)}' needs a numeric property "
                                 f"'{name}' (got {raw!r}), or give the option '{name}'") from None
            if not value > 0:
                raise InputError("platform", f"host '{resource.get('name', host)}': property '{name}' "
                                 f"must be > 0, got {raw!r}")
            values.add(value)
        if len(values) > 1:
            raise InputError("platform", f"compute hosts disagree on property '{name}' ({sorted(values)}); "
                             "the locality policies assume identical nodes")
        return values.pop()

    # -- events --------------------------------------------------------------------

    def onJobSubmission(self, job):
        if job.workload == LOADS_WORKLOAD:   # our own load, acknowledged
            return
        user_job = self.read_job(job)
        self.queue.add(user_job)
        self.new_jobs.append(user_job)
        self.needs_round = True

    def read_job(self, job: Job) -> UserJob:
        """The job's workload fields, checked (contract of issue 8)."""
        fields = job.json_dict
        source = self.bs.workloads.get(job.workload, job.workload)

        def fail(field, problem):
            raise InputError(source, problem, job=job.id, field=field)

        cores = fields.get("cores")
        if isinstance(cores, bool) or not isinstance(cores, int) or not 1 <= cores <= self.m:
            fail("cores", f"must be an integer from 1 to {self.m} (cores per node), got {cores!r}")
        if job.requested_resources != 1:
            fail("res", f"each job runs on one node (res 1), got {job.requested_resources!r}")
        if "file" not in fields:
            fail("file", "missing: the job's input file")
        size = fields.get("file_bytes")
        if isinstance(size, bool) or not isinstance(size, (int, float)) or not 0 <= size <= self.memory.memory_bytes:
            fail("file_bytes", f"must be a number from 0 to the node memory {self.memory.memory_bytes:g}, "
                               f"got {size!r}")
        category = fields.get("category", 0)
        history_node = history_start = None
        if category == HISTORY_CATEGORY:
            host = fields.get("history_node")
            if host not in self.node_of_host or isinstance(host, bool):
                fail("history_node", f"category -2 jobs need the id of a compute host "
                                     f"({ProcSet(*self.host_ids)}), got {host!r}")
            history_node = self.node_of_host[host]
            history_start = fields.get("history_start", job.submit_time)
            if isinstance(history_start, bool) or not isinstance(history_start, (int, float)):
                fail("history_start", f"must be a time in seconds, got {history_start!r}")
        # Whole bytes: the policies' sums of sizes are then exact in any order (FilePlan.eviction_penalty).
        user_job = UserJob(job, cores, time_limit(job), str(fields["file"]), float(round(size)), history_node,
                           history_start)
        if history_node is not None and self.history_pinning == "until_replan":
            self.pinned.append(user_job)
        return user_job

    def onJobCompletion(self, job):
        if job.id in self.loads:
            self.load_completed(job.id)
        else:
            self.user_job_ended(job)

    # A killed job is also reported by JOB_COMPLETED (state COMPLETED_KILLED),
    # so QueueScheduler's onJobsKilled has nothing left to do here.

    def onRequestedCall(self):
        """A deadline t_k + WallTime(J) of a job that waits or waited for a
        load. One still waiting ends now too, as in the authors' simulator
        (a job ends at t_k + min(load + run time, WallTime)): Batsim starts
        and kills it at once."""
        now = self.now()
        overdue = self.deadlines.came(now)
        waiting = [self.waiting_for_load.pop(job_id) for job_id in overdue if job_id in self.waiting_for_load]
        if waiting:
            for job in waiting:
                self.running[job.id] = (job.job, now)
            self.bs.execute_jobs([job.job for job in waiting])
        if overdue:
            self.bs.kill_jobs([self.started[job_id][0].job for job_id in overdue])

    def onNoMoreJobsInWorkloads(self):
        self.all_submitted = True
        self.finish_registration()

    def onNoMoreEvents(self):
        """A round if something changed, but at most one per round_interval:
        postponed rounds are merged into one at the end of the interval."""
        if not self.needs_round:
            return
        now = self.now()
        if now < self.last_round + self.round_interval - CALL_MARGIN:
            if self.round_call is None:
                self.round_call = self.last_round + self.round_interval
                self.bs.wake_me_up_at(self.round_call)
            return
        if self.round_call is not None and now >= self.round_call:
            self.round_call = None
        if self.authors_code and self.expected.due_this_second(now):
            return   # the round comes with the last completion of this second
        self.needs_round = False
        self.last_round = now
        self.schedule()

    def onSimulationEnds(self):
        if self.stats_path:
            with open(self.stats_path, "w") as stream:
                json.dump({"seconds": self.round_seconds, "examined": self.round_examined,
                           "split_instants": self.split_instants}, stream)

    def user_job_ended(self, job: Job) -> None:
        user_job, node, _ = self.started.pop(job.id)
        self.expected.ended(job.id)
        self.memory.end_job(node, job.id, user_job.file, self.now())
        self.ledger.end(job.id)
        self.deadlines.drop(job.id)
        self.job_left(job)
        for pinned in self.pinned:   # the first re-plan places them like any job
            pinned.history_node = None
        self.pinned.clear()
        self.replan = True
        self.needs_round = True

    def load_completed(self, load_id: str) -> None:
        node, file = self.loads.pop(load_id)
        del self.load_of[(node, file)]
        now = self.now()
        ready = [self.waiting_for_load.pop(job_id) for job_id in self.memory.load_finished(node, file)
                 if job_id in self.waiting_for_load]
        self.execute(ready, now)

    # -- one round -------------------------------------------------------------------

    def schedule(self):
        began = time.perf_counter()
        now = self.now()
        new_jobs, self.new_jobs = self.new_jobs, []
        if self.authors_code and self.plan is not None:
            self.start_planned_now(self.plan, now)
        # A category -2 job goes before every planned job: replan.
        last_time, last_started = self.last_round_started
        if self.replan and last_started and now - last_time < SAME_INSTANT:
            self.split_instants.append(now)
        keep = not (self.replan or self.plan is None or any(job.history_node is not None for job in new_jobs))
        rest = 0
        if keep and self.plan.cut_walk is not None and self.plan.can_advance(now):
            rest = self.plan_rest(self.plan)   # its reservations may end before now: advance checks them
        if not (keep and self.plan.advance(now)):
            self.plan = Plan(self.core_plan(now), self.file_plan(now), self.ledger.busy_nodes(),
                             self.queue.ordered())
            self.replan = False
        else:
            if self.authors_code:
                # The authors' code rebuilds the files' intervals from the
                # started jobs at every call (``get_current_intervals``):
                # files that jobs planned in an earlier call would load are
                # not seen when only new jobs are planned.
                self.plan.files = self.file_plan(now)
            # The authors' call after submissions only plans the new jobs.
            pending = [] if self.authors_code else self.plan.pending
            self.plan.pending = sorted(pending + new_jobs, key=_queue_key)
        examined, to_start = self.plan_queue(self.plan, now)
        if self.plan.cut_walk is not None and to_start:
            self.plan.files.freeze([node for _, (node, _) in to_start], [job.file for job, _ in to_start])
        self.last_round_started = (now, len(to_start))
        for user_job, (node, core_ids) in to_start:
            self.launch(user_job, node, now, core_ids)
        self.finish_registration()
        self.round_seconds.append(time.perf_counter() - began)
        self.round_examined.append(rest + examined)

    def start_planned_now(self, plan: Plan, now: float) -> None:
        """The authors' loop (``src/main.c``) starts the jobs an earlier call
        planned for this second (``start_jobs``) before it plans again, so a
        re-plan cannot move them: they start where they were planned, if
        their cores are free (the job ahead of them may end a message later,
        see ``split_instants``)."""
        for job, node, t_k, core_ids in list(plan.later.values()):
            if (abs(t_k - now) < SAME_INSTANT and job.id in self.queue
                    and self.ledger.free_cores(node, core_ids) >= job.cores):
                del plan.later[job.id]
                plan.mark_busy(node)
                self.launch(job, node, now, core_ids)

    def core_plan(self, now: float):
        """A new plan of the cores: the authors' holes with ``authors_code``
        and backfilling, else batio's (``plan_cores``)."""
        if self.authors_code and self.backfill:
            return AuthorsHoles(self.ledger.held, now, self.hole_gate)
        return plan_cores(self.ledger, now, self.backfill)

    def file_plan(self, now: float) -> FilePlan | NoFiles:
        if self.policy == "fcfs":
            return NoFiles()
        return FilePlan(self.memory, now, overhead_from_now=self.authors_code)

    def plan_queue(self, plan: Plan, now: float) -> tuple[int, list[tuple[UserJob, tuple[int, list | None]]]]:
        """Algorithms 1-5, line 1: each queued job in turn, while one left
        could still start now (module docstring), planned where its policy
        scores best: ``backfill``'s Algorithm 1 with every job reserved
        (BackfillMax unbounded) on the round's ``Placement``. Returns the
        number of jobs examined, and the jobs to start now with their
        (node, core ids)."""
        placement = Placement(self, plan, now)
        walk = QueueWalk(plan, authors_stop=self.authors_code, runs=placement.run_planner())
        rounds, pinned_planned = [], 0
        if walk.pinned and not self.authors_code:
            pinned_planned = self.plan_pinned(plan, placement, walk.queue[:walk.pinned], now, rounds)
            walk.index = walk.pinned
        first = walk.index
        rounds.append(backfill(placement, walk, now, math.inf, L=_walltime, r=_itself, on_start=placement.mark_busy))
        examined, planned_to = pinned_planned + walk.index - first, walk.index
        if self.authors_code and self.backfill:
            # The authors' second phase once every core free now is taken
            # (``only_check_conservative_backfill``): each job left that
            # fits wholly in a hole, and needs no more cores than the stale
            # ``biggest_hole``, starts now in it; the others are not planned.
            plan.cores.holes_only = True
            holes = Placement(self, plan, now, second_phase=True)
            rounds.append(backfill(holes, walk.queue[walk.index:], now, 0, L=_walltime, r=_itself,
                                   eligible=lambda job: job.cores <= self.hole_gate.biggest,
                                   on_start=holes.mark_busy, first_fit=True))
            plan.cores.holes_only = False
            placement.placed.update(holes.placed)
            placement.started += holes.started
            examined = planned_to = len(walk.queue)
        if walk.cut:
            plan.cut_walk = walk
        if self.authors_code:   # start_planned_now reads them
            for job, slot in rounds[0].reserved:
                node, core_ids = placement.placed[job.id]
                plan.later[job.id] = (job, node, slot.start, core_ids)
        plan.pending = walk.queue[planned_to:]
        return examined, [(job, placement.placed[job.id]) for job in placement.started]

    def plan_pinned(self, plan: Plan, placement: Placement, pinned: list[UserJob], now: float,
                    rounds: list) -> int:
        """batio's leading category -2 jobs, each on its history node
        (``Placement.pinned_start``), but on a node whose row is kept
        (``PinnedRows``): the row is put back. Appends the ``backfill`` round
        to ``rounds``; returns the number of jobs planned."""
        by_node = self.pinned_rows.group(pinned)
        reused = self.pinned_rows.put_back(plan, by_node, self.ledger, self.memory)
        block = [job for job in pinned if job.history_node not in reused]
        result = backfill(placement, block, now, math.inf, L=_walltime, r=_itself, on_start=placement.mark_busy)
        rounds.append(result)
        started = {placement.placed[job.id][0] for job, _ in result.started}
        self.pinned_rows.keep(plan, {node: ids for node, ids in by_node.items()
                                     if node not in reused and node not in started}, self.ledger, self.memory)
        return len(block)

    def plan_rest(self, plan: Plan) -> int:
        """Plan the jobs the last round's walk was cut before (``QueueWalk``)
        as that round would have: at its now, on what it saw (the real
        copies' slots frozen when its jobs started). Nothing starts: the
        walk was cut where none could. Returns the number of jobs planned."""
        walk, plan.cut_walk = plan.cut_walk, None
        assert walk is not None
        examined_before, now = walk.index, plan.cores.now
        placement = Placement(self, plan, now)
        walk.runs = placement.run_planner()
        backfill(placement, walk.rest(), now, math.inf, L=_walltime, r=_itself, on_start=placement.mark_busy)
        assert not placement.started, "a walk is cut only where no job left can start now"
        plan.files.thaw()
        plan.pending = walk.queue[walk.index:]
        return walk.index - examined_before

    def policy_now(self, plan: Plan) -> str:
        """The policy for the next job: LEM is EFT or LEA depending on the
        share of nodes running a job now (Algorithm 5, lines 2-6)."""
        if self.policy != "lem":
            return self.policy
        load = plan.busy_count / len(plan.busy)
        return "eft" if load < self.busy_threshold else "lea"

    # -- starting jobs and loads ------------------------------------------------------

    def launch(self, job: UserJob, node: int, now: float, core_ids=None) -> None:
        """Start ``job`` on ``node`` at t_k = now (on the plan's ``core_ids``
        if it chose them): its cores are held until t_k + WallTime(J); it runs
        now or after its file's load."""
        planned_end = now + job.walltime
        self.ledger.start(job.id, node, job.cores, planned_end, core_ids)
        case, _ = self.memory.start_job(node, job.id, job.file, job.size, now, planned_end)
        self.queue.remove(job)
        self.started[job.id] = (job, node, now)
        job.job.allocation = ProcSet(self.host_ids[node])
        load_id = ""
        if case == LoadCase.NOT_IN_MEMORY:
            load_id = self.start_load(node, job.file, job.size)
        elif case == LoadCase.BEING_LOADED:
            load_id = self.load_of[(node, job.file)]
        self.bs.set_job_metadata(job.id, f"node={self.host_ids[node]};decided={now!r};case={int(case)};"
                                         f"load={load_id};reused={int(case != LoadCase.NOT_IN_MEMORY)}")
        if case == LoadCase.IN_MEMORY:
            self.execute([job], now)
        else:
            self.waiting_for_load[job.id] = job
            if planned_end < math.inf:
                self.deadlines.add(job.id, planned_end)
                if self.authors_code:
                    self.expected.expect(job.id, planned_end)

    def start_load(self, node: int, file: Hashable, size: float) -> str:
        self.load_count += 1
        load_id = f"{LOADS_WORKLOAD}!{self.load_count}"
        profile = f"read_{self.load_count}"
        if self.load_model == "fixed":  # the paper's S/B, whatever else loads at the same time
            definition = {"type": "delay", "delay": self.memory.load_time(size)}
        else:
            definition = {"type": "parallel_homogeneous_pfs", "bytes_to_read": size, "bytes_to_write": 0,
                          "storage": STORAGE_LABEL}
        self.bs.register_profiles(LOADS_WORKLOAD, {profile: definition})
        load = self.bs.register_job(load_id, 1, -1, profile)
        load.allocation = ProcSet(self.host_ids[node])
        if self.load_model == "link":
            load.storage_mapping = {STORAGE_LABEL: self.storage_id}
        self.bs.execute_jobs([load])
        self.loads[load_id] = (node, file)
        self.load_of[(node, file)] = load_id
        return load_id

    def execute(self, jobs: list[UserJob], now: float) -> None:
        """Run jobs whose file is in memory; one that waited for its load is
        killed at t_k + WallTime(J) (Section 3)."""
        if not jobs:
            return
        overdue = []
        for job in jobs:
            self.running[job.id] = (job.job, now)
            if self.authors_code:
                self.expected.expect(job.id, min(now + self.run_time(job), self.started[job.id][2] + job.walltime))
            # A job that waited for a load has its deadline called (launch).
            if self.deadlines.due(job.id, now):
                overdue.append(job.job)
        self.bs.execute_jobs([job.job for job in jobs])
        if overdue:
            self.bs.kill_jobs(overdue)

    def run_time(self, job: UserJob) -> float:
        """The job's delay, which ``authors_code`` reads to group a second's
        completions; ``inf`` for another profile type (never waited for)."""
        profile = job.job.profile_dict
        if not profile:   # pybatsim's {} for a profile Batsim neither listed nor forwarded
            raise SchedulerError(f"job {job.id}: authors_code groups each second's events from the jobs' delays, "
                                 f"and Batsim gave no profile '{job.job.profile}' for it (with Redis, run Batsim "
                                 "with --forward-profiles-on-submission)")
        return float(profile["delay"]) if profile.get("type") == "delay" else math.inf

    def finish_registration(self) -> None:
        """NOTIFY registration_finished once no load can be needed any more."""
        if self.all_submitted and not self.queue and not self.registration_finished:
            self.registration_finished = True
            self.bs.notify_registration_finished()


_queue_key = operator.attrgetter("queue_key")


def _walltime(job: UserJob) -> float:
    return job.walltime


def _itself(job: UserJob) -> UserJob:
    """A job's need, as ``Placement`` reads it: its cores and file."""
    return job


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


class QueueWalk:
    """The round's queue (``plan.pending``, in queue order) as ``backfill``
    takes it, walked while a job left could still start now: category -2
    jobs always; then, in batio's rounds, up to the last job that fits in
    what is free now (``last_candidate``); in the authors', while a core
    free now is not yet taken by a planned job (``LEA`` in
    ``src/scheduler.c``). ``index``: how many jobs it has handed out.

    batio's last job is found before the jobs ahead of it take what is free
    now, so most jobs up to it start nothing now. The walk is ``cut`` once
    none left can (no core free now, or ``last_candidate`` finds none at a
    check): the jobs it would still plan up to its last only reserve
    cores and files for later, which matters only if the next round keeps
    this plan (when only new jobs came). ``rest`` then hands them out as
    the walk would have (``Locality.plan_rest``); a plan rebuilt at the next
    completion, most rounds', never plans them.
    """

    def __init__(self, plan: Plan, authors_stop: bool, runs: Callable[[list[UserJob], int, int, bool], int] | None):
        self.plan, self.queue, self.authors_stop = plan, plan.pending, authors_stop
        # Plans a run of alike jobs from an index, within a number of jobs
        # (``Placement.plan_run``); they never reach ``backfill``.
        self.runs = runs
        self.index = 0
        self.cut = False
        # The leading category -2 jobs are always planned.
        self.pinned = next((i for i, job in enumerate(self.queue) if job.history_node is None), len(self.queue))
        self.last = self.pinned - 1
        if not authors_stop:   # only batio's stop reads the cores and walltime of every job past the pinned ones
            after = self.queue[self.pinned:]
            self.needs = np.array([job.cores for job in after], dtype=np.int64)
            self.walltimes = np.array([job.walltime for job in after])

    def last_from(self, index: int) -> int:
        """The last job from ``index`` on that could still start now (``index`` - 1 if none)."""
        if self.authors_stop:
            return index if index < len(self.queue) and self.plan.cores.any_free_now() else index - 1
        assert index >= self.pinned, "the pinned jobs are always planned"
        start = index - self.pinned
        return index + self.plan.cores.last_candidate(self.needs[start:], self.walltimes[start:])

    def __iter__(self) -> Iterator[UserJob]:
        return self.walk(cut=not self.authors_stop)

    def rest(self) -> Iterator[UserJob]:
        """The jobs after the cut, up to the walk's last."""
        self.cut = False
        return self.walk(cut=False)

    def walk(self, cut: bool) -> Iterator[UserJob]:
        queue, cores = self.queue, self.plan.cores
        check = self.index + FIRST_CHECK
        while True:
            if self.index > self.last:   # looked at again after each planned job
                self.last = self.last_from(self.index)
                if self.index > self.last:
                    return
            if cut and self.index >= self.pinned:
                if self.index >= check:   # last_candidate costs a pass over the rest: ever less often (FIRST_CHECK)
                    check *= 2
                    if self.last_from(self.index) < self.index:
                        self.cut = True
                        return
                if not cores.any_free_now():
                    self.cut = True
                    return
            if self.runs is not None:
                stop_at_checks = cut and self.index >= self.pinned
                limit = min(self.last + 1, check if stop_at_checks else math.inf) - self.index
                planned = self.runs(queue, self.index, limit, stop_at_checks)
                if planned:
                    self.index += planned
                    continue   # the walk's tests again, as after each job
            self.index += 1
            yield queue[self.index - 1]


class Placement:
    """The round's plan as ``backfill`` plans on it (its ``Capacity``): a
    job's earliest slot is the node its policy scores best (lines 2-9,
    ``NodeScores``), at that node's t_k; reserving it books Cores(J) cores
    of the node until t_k + WallTime(J) and the job's file there.
    ``placed``: job id -> (node, core ids) of each job reserved.

    Consecutive alike jobs are scored again on the last job's node only
    (``NodeScores.rescore``). Outside the authors' code, the walk hands
    each job and the alike jobs after it to ``plan_run``, which plans them
    in compiled code. The authors'
    ``second_phase`` scores each job anew, and leaves ``AuthorsHoles.pinned``
    as the first phase left it: their code sets it there only."""

    def __init__(self, scheduler: Locality, plan: Plan, now: float, second_phase: bool = False):
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
        if not (self.scheduler.authors_code and job.history_node is not None and t_k > self.now):
            # The authors place a job pinned to its history node without
            # noting its file (``get_state_before_day_0_scheduler``): the
            # policy does not see a file such a job will load later.
            self.plan.files.record(node, job.file, job.size, t_k, self.t_prime, t_k + duration)
        self.placed[key] = (node, core_ids)

    def mark_busy(self, job: UserJob, hosts: ProcSet) -> None:
        """``backfill``'s ``on_start``: LEM's load counts the node at once."""
        self.plan.mark_busy(self.placed[job.id][0])
        self.started.append(job)

    def run_planner(self) -> Callable[[list[UserJob], int, int, bool], int] | None:
        """``plan_run`` where ``alike_runs`` covers the round's plan, else None."""
        scheduler = self.scheduler
        if (scheduler.compiled_runs and not scheduler.authors_code and not self.second_phase
                and type(self.plan.cores) in (CoreAvailability, CoreProfile)):
            return self.plan_run
        return None

    def plan_run(self, queue: list[UserJob], index: int, limit: int, stop_when_none_free: bool) -> int:
        """Plan the job at ``index`` and those after it alike to it (at most
        ``limit`` in all), as ``backfill`` would one by one on this
        placement, in compiled code (``alike_runs.plan_run``); returns how
        many (0: ``backfill`` takes the job, pinned or beyond ``alike_runs``)."""
        scores, plan = self.scores, self.plan
        job = queue[index]
        policy = self.scheduler.policy_now(plan)
        cores, files = plan.cores, plan.files
        profile = isinstance(cores, CoreProfile)
        # A pinned job is placed unscored; a profile's reservation of an unbounded job ends at no breakpoint.
        if job.history_node is not None or not job.walltime > 0 or (profile and job.walltime == math.inf):
            return 0
        end, stop, kind = index, index + limit, job.kind
        while end < stop and queue[end].kind == kind and queue[end].history_node is None:
            end += 1
        alike = scores is not None and scores.alike(job, policy)
        # The scores a run of this kind left are current unless a job was planned since (``node``).
        score_all = not (alike and scores.compiled_current and self.node is None)
        if not alike:
            scores = self.scores = NodeScores(self.scheduler, plan, job, self.now, policy, compiled=True,
                                              replaced=scores)
        has_files = isinstance(files, FilePlan)
        fid = files.memory.file_id(job.file) if has_files else -1
        count = end - index
        if len(self.outputs[0]) < count:
            size = 2 * count
            self.outputs = (np.empty(size, dtype=np.int64), np.empty(size), np.empty(size, dtype=np.int64))
        out_node, out_t_k, out_new_column = self.outputs
        if has_files:
            col_of = np.full(len(plan.busy), -1, dtype=np.int64)
            columns = {**files.holders.get(fid, {}), **files.new_holders.get(fid, {})}   # FilePlan._slot's
            col_of[list(columns)] = list(columns.values())
            file_model = (files.retain_cached, files.memory_bytes, files.bandwidth)
            load_seconds = files.load_time(job.size)
        else:
            file_model, load_seconds = (False, 1.0, 1.0), 0.0
        planned = new_columns = 0
        while True:
            if has_files:
                slots, starts = files.slots, files.starts
                file_arrays = (slots.file, slots.size, slots.load_start, slots.ready, slots.last_use,
                               slots.evict_at, slots.top, slots.row_bytes, files.row_bytes_max, col_of,
                               starts.times, starts.files, starts.count)
            else:
                file_arrays = _NO_SLOTS
            core_arrays = ((_NO_AVAIL, cores.times, cores.free, cores.used, cores.reservations, cores.reserved_at)
                           if profile else (cores.avail, *_NO_PROFILE))
            done, need, cores.free_now, plan.busy_count, row_bytes_max, new, used, reservations = \
                alike_runs.plan_run(
                    count - planned, score_all, job.cores, job.walltime, job.size, load_seconds, fid, self.now,
                    stop_when_none_free, alike_runs.POLICY_CODES[policy], self.scheduler.policy == "lem",
                    self.scheduler.busy_threshold, scores.W, scores.eviction_weight, scores.penalised,
                    profile, *core_arrays, cores.free_now, plan.busy, plan.busy_count,
                    has_files, *file_model, *file_arrays,
                    scores.t_k, scores.t_prime, scores.base, scores.EvictionPenalty, scores.known, scores.scores,
                    out_node[planned:], out_t_k[planned:], out_new_column[planned:])
            planned, new_columns = planned + done, new_columns + new
            score_all = False
            if profile:
                cores.used, cores.reservations = used, reservations
            if has_files:
                files.row_bytes_max = row_bytes_max
            if need == alike_runs.NEEDS_NOTHING:
                break
            if need == alike_runs.NEEDS_CORE_COLUMNS:   # a row is full: widen it and go on
                cores.grow()
            elif need == alike_runs.NEEDS_SLOT_COLUMNS:
                files.slots.grow()
            else:
                files.starts.grow()
        scores.adopt_compiled_run(planned)
        self.node = None   # every node's score is up to date
        jobs, nodes, t_ks = queue[index:index + planned], out_node[:planned].tolist(), out_t_k[:planned].tolist()
        if new_columns:
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
        return planned


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

    def __init__(self, scheduler: Locality, plan: Plan, job: UserJob, now: float, policy: str,
                 compiled: bool = False, replaced: NodeScores | None = None):
        """``compiled``: the arrays are left for ``alike_runs.plan_run`` to
        fill, those of ``replaced`` if it was compiled too (it is not used again)."""
        self.plan, self.job, self.now, self.policy = plan, job, now, policy
        self.W, self.eviction_weight = scheduler.W, scheduler.eviction_weight
        self.authors_code = scheduler.authors_code
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
            self.switch = nb_nodes   # LEO's, outside the authors' code
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
        """LEO in the authors' code: the first node (in node order) where the
        job can start now; the number of nodes if none or otherwise."""
        if self.policy != "leo" or not self.authors_code:
            return len(self.t_k)
        now = np.flatnonzero(self.starts_now(self.every_node))
        return int(now[0]) if len(now) else len(self.t_k)

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
            self.EvictionPenalty[nodes] = self.plan.files.eviction_penalty(self.job.file, self.job.size,
                                                                           self.t_k, nodes)
            self.known[nodes] = True
        return nodes

    def widen_reach(self) -> bool:
        """Move ``reach`` one bound beyond the threshold if the threshold
        passed it; True if it moved (every node is then looked at)."""
        bound = self.eviction_weight * self.plan.files.eviction_penalty_bound(self.job.size)
        # No node whose score without EvictionPenalty exceeds this can have the smallest score.
        threshold = self.base_min + bound + (1.0 if self.authors_code else 0.0)
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
        # The authors' scores are C ints: ties, won by the first node, are more frequent.
        return np.floor(score) if self.authors_code else score

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
            self.EvictionPenalty[node] = self.plan.files.eviction_penalty_on(node, self.job.file, self.job.size, t_k)
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

    def floored(self, score: float) -> float:
        """``score``'s rounding on one value."""
        return float(math.floor(score)) if self.authors_code and score < math.inf else score


_NO_SLOTS = (np.full((0, 0), -1, dtype=np.int64), *(np.empty((0, 0)) for _ in range(5)), np.empty(0, dtype=np.int64),
             np.empty(0), 0.0, np.empty(0, dtype=np.int64), np.empty((0, 0)), np.full((0, 0), -1, dtype=np.int64),
             np.empty(0, dtype=np.int64))
"""``alike_runs.plan_run``'s file arrays for a plan without files (FCFS)."""
_NO_AVAIL = np.empty((0, 0))
"""``alike_runs.plan_run``'s ``CoreAvailability`` array for a ``CoreProfile`` plan."""
_NO_PROFILE = (np.empty((0, 0)), np.empty((0, 0), dtype=np.int32), 0, 0, np.empty(0, dtype=np.int64))
"""``alike_runs.plan_run``'s ``CoreProfile`` arrays and counts for a ``CoreAvailability`` plan."""


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
