"""Locality-aware batch scheduling of jobs sharing large input files (paper
004, Sections 3-4): the pybatsim scheduler running FCFS, EFT, LEA, LEO and
LEM (Algorithms 1-5), with or without conservative backfilling.
How it works: ``README.md`` beside this file.
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping
import functools
import json
import math
import time

from batsim.batsim import Job
from procset import ProcSet

from batio.errors import InputError, SchedulerError
from batio.schedulers.backfill import QueueScheduler, time_limit
from batio.schedulers.locality.authorsholes import HoleGate
from batio.schedulers.locality.deadlines import CALL_MARGIN, DeadlineCalls
from batio.schedulers.locality.fileplan import FilePlan, NoFiles
from batio.schedulers.locality.jobs import UserJob, WaitingQueue
from batio.schedulers.locality.models import SAME_INSTANT, AuthorsCode, PaperModel
from batio.schedulers.locality.nodememory import CoreLedger, LoadCase, NodeMemory
from batio.schedulers.locality.placement import Placement
from batio.schedulers.locality.plan import PinnedRows, Plan
from batio.schedulers.options import Option

LOADS_WORKLOAD = "loads"
STORAGE_LABEL = "pfs"
HISTORY_CATEGORY = -2


AUTHORS_MODEL = {"load_model": "fixed", "file_retention": "in_use", "history_pinning": "until_replan",
                 "authors_code": True}
"""The options that follow the model of the authors' simulator (userccgrid/
Locality-aware-batch-scheduling at 1f47b38), on a workload converted with
``--running-at-cut restart`` (``scripts/results/locality.md``)."""


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
        needs = cls.REQUIRES.copy()
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
        # same instant that started jobs (``README.md``, "Seconds").
        self.split_instants: list[float] = []   # their times
        self.last_round_started = (-math.inf, 0)   # (time, jobs it started)
        self.hole_gate = HoleGate()   # AuthorsHoles' gate, which outlives a plan
        self.pinned_rows = PinnedRows()   # batio's category -2 jobs: their nodes' rows, kept between rounds
        # The paper's text or the authors' code, where they differ.
        self.model = (AuthorsCode if settings["authors_code"] else PaperModel)(self)

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
        self.memory = NodeMemory(len(self.host_ids), memory_bytes, bandwidth, self.model.load_time(bandwidth),
                                 retain_cached=self.file_retention == "memory",
                                 stale_use_end=self.model.stale_use_end)
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
        """Batsim's time, as the model counts it (``PaperModel.clock``)."""
        return self.model.clock(self.bs.time())

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
        """The job's workload fields, checked (README.md, "Mechanism", lists them)."""
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
        if self.model.holds_round(now):
            return
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
        self.model.ended(job.id)
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
        self.execute_ready(ready, now)

    # -- one round -------------------------------------------------------------------

    def schedule(self) -> None:
        began = time.perf_counter()
        now = self.now()
        new_jobs, self.new_jobs = self.new_jobs, []
        self.model.begin_round(self.plan, now)
        # A category -2 job goes before every planned job: replan.
        last_time, last_started = self.last_round_started
        if self.replan and last_started and now - last_time < SAME_INSTANT:
            self.split_instants.append(now)
        kept = None if self.replan or any(job.history_node is not None for job in new_jobs) else self.plan
        rest = 0
        if kept is not None and kept.cut_walk is not None and kept.can_advance(now):
            rest = self.plan_rest(kept)   # its reservations may end before now: advance checks them
        if kept is None or not kept.advance(now):
            plan = self.plan = Plan(self.core_plan(now), self.file_plan(now), self.ledger.busy_nodes(),
                                    self.queue.ordered())
            self.replan = False
        else:
            plan = kept
            self.model.extend_plan(plan, new_jobs, now)
        examined, to_start = self.plan_queue(plan, now)
        if plan.cut_walk is not None and to_start:
            plan.files.freeze([node for _, (node, _) in to_start], [job.file for job, _ in to_start])
        self.last_round_started = (now, len(to_start))
        for user_job, (node, core_ids) in to_start:
            self.launch(user_job, node, now, core_ids)
        self.finish_registration()
        self.round_seconds.append(time.perf_counter() - began)
        self.round_examined.append(rest + examined)

    def core_plan(self, now: float):
        """A new plan of the cores, as the model makes it."""
        return self.model.core_plan(now)

    def file_plan(self, now: float) -> FilePlan | NoFiles:
        if self.policy == "fcfs":
            return NoFiles()
        return FilePlan(self.memory, now, overhead_from_now=self.model.overhead_from_now)

    def plan_queue(self, plan: Plan, now: float) -> tuple[int, list[tuple[UserJob, tuple[int, list | None]]]]:
        """Algorithms 1-5, line 1: each queued job in turn, while one left
        could still start now (``README.md``, "Rounds"), planned where its policy
        scores best: ``backfill``'s Algorithm 1 with every job reserved
        (BackfillMax unbounded) on the round's ``Placement``. Returns the
        number of jobs examined, and the jobs to start now with their
        (node, core ids)."""
        placement = Placement(self, plan, now)
        walk = self.model.walk(plan, placement.run_planner())
        pinned_planned = 0
        if walk.pinned and self.model.plans_pinned_first:
            pinned_planned = self.plan_pinned(plan, placement, walk.queue[:walk.pinned])
            walk.index = walk.pinned
        first = walk.index
        walked = placement.plan_jobs(walk)
        examined, planned_to = pinned_planned + walk.index - first, walk.index
        if self.model.finish_walk(plan, placement, walk, walked, now):
            examined = planned_to = len(walk.queue)
        if walk.cut:
            plan.cut_walk = walk
        plan.pending = walk.queue[planned_to:]
        return examined, [(job, placement.placed[job.id]) for job in placement.started]

    def plan_pinned(self, plan: Plan, placement: Placement, pinned: list[UserJob]) -> int:
        """batio's leading category -2 jobs, each on its history node
        (``Placement.pinned_start``), but on a node whose row is kept
        (``PinnedRows``): the row is put back. Returns the number of jobs
        planned."""
        by_node = self.pinned_rows.group(pinned)
        reused = self.pinned_rows.put_back(plan, by_node, self.ledger, self.memory)
        block = [job for job in pinned if job.history_node not in reused]
        result = placement.plan_jobs(block)
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
        placement.plan_jobs(walk.rest())
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
            self.execute_ready([job], now)
        else:
            self.waiting_for_load[job.id] = job
            if planned_end < math.inf:
                self.deadlines.add(job.id, planned_end)
                self.model.expect_end(job.id, planned_end)

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

    def execute_ready(self, jobs: list[UserJob], now: float) -> None:
        """Run jobs whose file is in memory; one that waited for its load is
        killed at t_k + WallTime(J) (Section 3)."""
        if not jobs:
            return
        overdue = []
        for job in jobs:
            self.running[job.id] = (job.job, now)
            self.model.expect_run(job, now)
            # A job that waited for a load has its deadline called (launch).
            if self.deadlines.due(job.id, now):
                overdue.append(job.job)
        self.bs.execute_jobs([job.job for job in jobs])
        if overdue:
            self.bs.kill_jobs(overdue)

    def finish_registration(self) -> None:
        """NOTIFY registration_finished once no load can be needed any more."""
        if self.all_submitted and not self.queue and not self.registration_finished:
            self.registration_finished = True
            self.bs.notify_registration_finished()
