"""The simulated Batsim: actors, their messages, and the scheduling protocol.

Design notes: docs/internals.md.
"""

import ctypes
from dataclasses import dataclass, field
import heapq

from procset import ProcSet
import simgrid as sg

from batio.engines.embedded.execution import KILLED, WALLTIME_REACHED, JobExecution
from batio.engines.embedded.outputs import MachineStates
from batio.engines.embedded.wire import as_batsim_writes
from batio.errors import EngineError, InputError, SchedulerError
from batio.inputs.workload import Job, Workload, check_job, check_profile, profiles_reached

SUCCESS_STATE = "COMPLETED_SUCCESSFULLY"
SERVER_MAILBOX = "server"
# Batsim sleeps at least this long for a CALL_ME_LATER (waiter_process).
MIN_WAIT = 1e-5
# Up to this many pending CALL_ME_LATERs have a waiter actor each, as in Batsim:
# at one instant SimGrid wakes actors in the order their waits began, which
# decides which messages share a scheduler call. Past it, a shared waiter
# fires the others at their dates, without a thread each (the order at an
# instant may then differ from Batsim's).
WAITER_ACTORS = 1000
# A scheduler asking for more than this many at once is looping: an error.
MAX_PENDING_CALLS = 100_000


@dataclass
class JobRecord:
    job: "object"
    state: str = "NOT_SUBMITTED"
    start: float | None = None
    runtime: float | None = None
    allocation: ProcSet = field(default_factory=ProcSet)
    return_code: int = 0
    execution: JobExecution | None = None
    actor: "object" = None
    kill_requested: bool = False
    metadata: str = ""

    @property
    def complete(self):
        return self.state.startswith("COMPLETED") or self.state == "REJECTED"


@dataclass
class Config:
    forward_profiles: bool = False
    dynamic_jobs: bool = False
    acknowledge_dynamic_jobs: bool = False
    compute_sharing: bool = False
    storage_sharing: bool = True
    io_exclusive: bool = False  # beyond Batsim: one transfer at a time per storage host, FIFO
    profile_reuse: bool = False  # Batsim's --enable-profile-reuse
    # Beyond Batsim: simulated seconds the scheduler may let pass with jobs
    # waiting (or with nothing left to do) and none running, before batio
    # calls it stuck; Batsim would wait forever. run.DEFAULT_MAX_IDLE_S in runs.
    max_idle: float = float("inf")


class Simulation:
    """One run: call ``start`` before ``simgrid.Engine.run``."""

    def __init__(self, engine, platform, workloads, transport, config, io, on_progress=None, contention=None):
        self.platform = platform
        self.workloads = {w.name: w for w in workloads}
        self.static_workloads = [w.name for w in workloads]
        self.transport = transport
        self.config = config
        self.io = io  # an IoTimeline
        self.contention = contention  # a ContentionModel when the platform declares curves, else None
        self.on_progress = on_progress  # called after each scheduler reply
        self._hosts = {h.name: h for h in engine.all_hosts}
        self.master = self._hosts[platform.master]
        self.resources = {r.id: r for r in platform.resources}
        self.mailbox_empty = _mailbox_empty_test(SERVER_MAILBOX)
        self.scheduler_called = sg.Semaphore(0)
        self.storage_locks = {r.name: sg.Semaphore(1) for r in platform.storage}
        self.to_scheduler = None
        self.records = {job.id: JobRecord(job) for w in workloads for job in w.jobs}
        self.completed_order = []  # records in the order Batsim writes _jobs.csv
        self.ended_since_call = []  # ended jobs whose profiles Batsim drops once the scheduler is told
        # Batsim 4.2.1 drops the profiles no job uses when it loads a workload
        # (Profiles::remove_unreferenced_profiles): later jobs cannot use them.
        self.dropped_profiles = {w.name: set(w.profiles) - set(w.referenced_profiles()) for w in workloads}
        self.jobs_on_machine = {r.id: 0 for r in platform.resources}
        self.events = []
        self.sched_ready = False
        self.end_sent = False
        self.end_acknowledged = False
        self.nb_submitters_finished = 0
        self.nb_submitted = self.nb_completed = self.nb_running = 0
        self.nb_waiters = self.nb_killers = 0
        self.nb_waiter_actors = 0
        self.calls = []  # the firing dates of the calls past WAITER_ACTORS, with their order, as a heap
        self.calls_asked = 0
        self.shared_waiter = None  # the actor that sends their WAITING_DONE, once there is one
        self.new_call = sg.Semaphore(0)
        self.registration_finished = False
        self.last_activity = 0.0  # when a job was last submitted, started, ended or rejected
        self.calls_since_activity = 0
        self.error = None
        self.machine_states = MachineStates(len(platform.compute), len(platform.resources))

    # -- helpers ---------------------------------------------------------------
    def host(self, name):
        return self._hosts[name]

    def exclusive_io_locks(self, traffic):
        """The locks a transfer must hold under ``io_exclusive`` (none otherwise)."""
        if not self.config.io_exclusive:
            return []
        return [self.storage_locks[name] for name in sorted({name for name, _, _ in traffic})]

    def profile(self, workload_name, profile_name):
        return self.workloads[workload_name].profiles[profile_name]

    def now(self):
        return sg.Engine.clock

    def _event(self, kind, data):
        self.events.append({"timestamp": as_batsim_writes(self.now()), "type": kind, "data": data})

    def send(self, kind, payload=None):
        """Batsim's send_message: a 1-byte message to the server's mailbox,
        looked up by name each time as Batsim does. The lookup is a SimGrid
        call, so it decides in which scheduling round the message is posted,
        and so whether the server, deciding in that round whether to call the
        scheduler, already sees it (``_mailbox_empty_test``)."""
        sg.Mailbox.by_name(SERVER_MAILBOX).put((kind, payload), 1)

    def send_last(self, kind, payload=None):
        """``send``, for a sender that ends once its message is received:
        it ends at once instead (a detached message). The message leaves and
        arrives when Batsim's would; the sender is not woken again only to
        end, which costs an OS thread switch here."""
        sg.Mailbox.by_name(SERVER_MAILBOX).put_init((kind, payload), 1).detach()

    def send_and_step_aside(self, kind, payload=None):
        """``send``, for a sender that sends again at once (a submitter).

        When a message arrives, Batsim's server handles it before its sender
        goes on (the captured 4.2.1 runs show it); under SimGrid's Python
        bindings the sender may run first, so it steps aside. Only matters
        when the sender's next message could reach the mailbox first.
        """
        self.send(kind, payload)
        sg.this_actor.yield_()

    def _guarded(self, body, *args):
        """Actor bodies must not raise: SimGrid would abort the process."""
        try:
            body(*args)
        except sg.ActorKilled:
            raise
        except BaseException as error:  # noqa: BLE001 - reported after the run
            if self.error is None:
                self.error = error
            sg.Actor.kill_all()

    def _spawn(self, name, host, body, *args):
        try:
            return sg.Actor.create(name, host, self._guarded, body, *args)
        except RuntimeError as error:  # SimGrid's Python actors are OS threads
            raise EngineError(
                f"SimGrid could not create actor {name} ({error}): every simulated job, waiter and load is a "
                f"thread, {len(self.records)} jobs are known so far, and the system's limit on threads is reached. "
                "Raise it (Linux: sysctl kernel.pid_max=4194304, ulimit -u, vm.max_map_count) or run fewer "
                "simulations at once") from None

    def start(self):
        for name in self.static_workloads:
            self._spawn(f"workload_submitter_{name}", self.master, self._submitter, self.workloads[name])
        self._spawn("server", self.master, self._server)
        self._spawn("Scheduler REQ-REP", self.master, self._request_reply_loop)

    # -- actors ----------------------------------------------------------------
    def _submitter(self, workload: Workload):
        self.send_and_step_aside("SUBMITTER_HELLO", workload.name)
        # Batsim's job_comparator_subtime_number compares full ids as strings.
        jobs = sorted(workload.jobs, key=lambda job: (job.subtime, job.id))
        date = self.now()
        batch: list[Job] = []
        for job in jobs:
            if job.subtime > date:
                if batch:
                    self.send_and_step_aside("JOB_SUBMITTED", batch)
                    batch = []
                sg.this_actor.sleep_for(job.subtime - date)
                date = self.now()
            batch.append(job)
        if batch:
            self.send_and_step_aside("JOB_SUBMITTED", batch)
        self.send("SUBMITTER_BYE", workload.name)

    def _server(self):
        self._event("SIMULATION_BEGINS", self._simulation_begins())
        self._call_scheduler()
        handlers = {
            "SUBMITTER_HELLO": lambda _name: None,
            "JOB_SUBMITTED": self._on_job_submitted,
            "SUBMITTER_BYE": self._on_submitter_bye,
            "JOB_COMPLETED": self._on_job_completed,
            "SCHED_EVENT": self._on_sched_event,
            "SCHED_READY": self._on_sched_ready,
            "WAITING_DONE": self._on_waiting_done,
            "KILLING_DONE": self._on_killing_done,
        }
        while not self.end_acknowledged:
            self.io.sample_if_due(self.now())   # where its SimGrid calls change no order (iotimeline)
            kind, payload = sg.Mailbox.by_name(SERVER_MAILBOX).get()
            handlers[kind](payload)
            if self.sched_ready and not self.end_acknowledged and self.mailbox_empty():
                if self.events:
                    self._call_scheduler()
                elif self._finished() and not self.end_sent:
                    self._event("SIMULATION_ENDS", {})
                    self._call_scheduler()
                    self.end_sent = True
                elif self._stuck():
                    raise SchedulerError(self._stuck_message())

    def _call_scheduler(self):
        """Hand the pending events to the request-reply actor.

        Batsim creates a new request-reply actor per call; one actor woken
        per call starts at the same simulated time and is cheaper.
        """
        self._check_idle()
        self.to_scheduler = {"now": as_batsim_writes(self.now()), "events": self.events}
        self.events = []
        self._drop_profiles_of_ended_jobs()
        self.sched_ready = False
        self.scheduler_called.release()

    def _request_reply_loop(self):
        while True:
            self.scheduler_called.acquire()
            message, self.to_scheduler = self.to_scheduler, None
            self._request_reply(message)
            if message["events"] and message["events"][-1]["type"] == "SIMULATION_ENDS":
                return

    def _request_reply(self, message):
        reply = self.transport.request(message)
        if self.on_progress:
            self.on_progress(self)
        # As Batsim: events apply in array order; one dated in the past applies now.
        for index, event in enumerate(reply["events"]):
            timestamp, kind, data = _check_event(event, index)
            if timestamp > reply["now"]:
                raise SchedulerError(f"event {index} ({kind}) is dated {timestamp}, after the reply's "
                                     f"'now' {reply['now']}")
            if kind == "CALL_ME_LATER":
                # Checked against the date of the decision, not the time the server handles it: each
                # message takes simulated time, so in a long reply a date still in the future when
                # asked may have passed when handled (the waiter then fires at once).
                target = _field(data, "timestamp", (int, float), "CALL_ME_LATER")
                decided = max(timestamp, message["now"])
                if not decided < target < float("inf"):
                    raise SchedulerError(f"event {index}: CALL_ME_LATER asks to be called at {target}, which is not "
                                         f"a finite date after the decision's ({decided})")
            self._sleep_until(timestamp)
            self.send("SCHED_EVENT", (kind, data))
        self._sleep_until(reply["now"])
        self.send("SCHED_READY")

    def _sleep_until(self, date):
        if date > self.now():
            sg.this_actor.sleep_for(date - self.now())

    def _waiter(self, target):
        """Batsim's waiter of one call."""
        wait = target - self.now()
        sg.this_actor.sleep_for(max(wait, MIN_WAIT))
        self.nb_waiter_actors -= 1
        if not self.end_sent:
            self.send_last("WAITING_DONE")

    def _shared_waiter(self):
        """Sends the WAITING_DONE of each call of ``calls`` at its date, as
        Batsim's waiter of that call would; a new call (``new_call``) may come first."""
        while True:
            if not self.calls:
                self.new_call.acquire()
                continue
            date = self.calls[0][0]
            if date > self.now() and not self.new_call.acquire_timeout(date - self.now()):
                continue  # woken by a new call, which may be due first
            # Due: ``date`` too, if the clock stopped a rounding error short of it.
            due = max(date, self.now())
            while self.calls and self.calls[0][0] <= due:
                heapq.heappop(self.calls)
                if not self.end_sent:
                    self.send_last("WAITING_DONE")

    def _job_actor(self, record):
        code = record.execution.run()
        record.return_code = code
        record.state = (SUCCESS_STATE if code == 0 else "COMPLETED_FAILED" if code > 0
                        else "COMPLETED_WALLTIME_REACHED" if code == WALLTIME_REACHED else "COMPLETED_KILLED")
        self._job_ended(record)
        if code == KILLED:  # a killed job is reported by the killer
            return
        if record.execution.timed_out is None:
            self.send_last("JOB_COMPLETED", record)
        else:   # Batsim's ptask past the walltime runs on until the job's actor ends, after the message
            self.send("JOB_COMPLETED", record)
            record.execution.release()

    def _killer(self, ids):
        progress = {}
        for job_id in ids:
            record = self.records[job_id]
            if record.state != "RUNNING":
                continue
            progress[job_id], cancelled = record.execution.kill()
            if not cancelled:
                # No ptask to cancel (a delay): end the actor; Batsim leaves
                # the return code at its initial -1 in this case.
                record.actor.kill()
                record.state = "COMPLETED_KILLED"
                record.return_code = -1
                self._job_ended(record)
        self.send_last("KILLING_DONE", (ids, progress))

    # -- state changes -------------------------------------------------------
    def _active(self):
        self.last_activity = self.now()
        self.calls_since_activity = 0

    def _check_idle(self):
        """Beyond Batsim, which would wait forever: a scheduler that lets
        ``max_idle`` simulated seconds pass, calling itself back, with jobs
        waiting and none running, or with nothing left but its own calls.
        Only calls asked since the last activity count: calls asked earlier
        (a deadline that a job's end made useless) only let time pass."""
        idle = self.now() - self.last_activity
        if self.nb_running or idle <= self.config.max_idle or self.calls_since_activity < 3:
            return
        waiting = [r.job.id for r in self.records.values() if r.state == "SUBMITTED"]
        if waiting:
            what = f"with {len(waiting)} job(s) waiting and none running, e.g. {', '.join(waiting[:5])}"
        elif self.nb_submitters_finished == len(self.static_workloads):
            what = "with every job ended, only calling itself back (CALL_ME_LATER)"
        else:
            return  # time passes toward the next submission
        raise SchedulerError(f"the scheduler let {idle:g} simulated seconds pass since t={self.last_activity:g} "
                             f"{what}; the bound is {self.config.max_idle:g} s (raise it with --max-idle)")

    def _job_started(self, record):
        self._active()
        became_busy = []
        for resource in record.allocation:
            self.jobs_on_machine[resource] += 1
            if self.jobs_on_machine[resource] == 1:
                became_busy.append(resource)
        self.machine_states.jobs_started(self.now(), became_busy)

    def _job_ended(self, record):
        self._active()
        record.runtime = self.now() - record.start
        if record.runtime == 0:
            record.runtime = 1e-5  # as Batsim: a job never runs in null time
        became_idle = []
        for resource in record.allocation:
            self.jobs_on_machine[resource] -= 1
            if self.jobs_on_machine[resource] == 0:
                became_idle.append(resource)
        self.machine_states.jobs_ended(self.now(), became_idle)

    def _quiet(self):
        """No submission, registration, running job, CALL_ME_LATER or kill is to come."""
        return (self.nb_submitters_finished == len(self.static_workloads)
                and (not self.config.dynamic_jobs or self.registration_finished)
                and self.nb_running == 0 and self.nb_waiters == 0 and self.nb_killers == 0)

    def _finished(self):
        """Batsim's is_simulation_finished."""
        return self._quiet() and self.nb_completed == self.nb_submitted

    def _stuck(self):
        """Nothing can ever happen again, yet some jobs are neither run nor rejected."""
        return self._quiet() and self.nb_completed < self.nb_submitted

    def _stuck_message(self):
        waiting = [r.job.id for r in self.records.values() if r.state == "SUBMITTED"]
        return (f"the scheduler left {len(waiting)} job(s) neither started nor rejected while nothing else "
                f"can happen (no job running, no submission or CALL_ME_LATER to come), e.g. "
                f"{', '.join(waiting[:5])}; Batsim would wait forever here")

    # -- messages from actors -----------------------------------------------------
    def _on_job_submitted(self, jobs):
        for job in jobs:
            self._submit(job)

    def _submit(self, job):
        record = self.records[job.id]
        record.state = "SUBMITTED"
        self._active()
        self.nb_submitted += 1
        data = {"job_id": job.id, "job": job.description}
        if self.config.forward_profiles:
            data["profile"] = self.profile(job.workload, job.profile)
        self._event("JOB_SUBMITTED", data)

    def _on_submitter_bye(self, _name):
        self.nb_submitters_finished += 1
        if self.nb_submitters_finished == len(self.static_workloads):
            self._event("NOTIFY", {"type": "no_more_static_job_to_submit"})

    def _on_job_completed(self, record):
        self.nb_running -= 1
        self.nb_completed += 1
        self._event("JOB_COMPLETED", {"job_id": record.job.id, "job_state": record.state,
                                      "return_code": record.return_code, "alloc": str(record.allocation)})
        self._completed(record)

    def _completed(self, record):
        self.completed_order.append(record)
        # SimGrid ends an actor's thread (and unmaps its stack) only once no
        # handle to the actor is left: keeping it would cost two memory
        # mappings per finished job, past Linux's default limit in a day's run.
        record.actor = None
        self.ended_since_call.append(record)

    def _drop_profiles_of_ended_jobs(self):
        """Batsim 4.2.1 deletes a job once its end is sent to the scheduler,
        and with it the job's profile and, for a composed one, its
        sub-profiles (Jobs::delete_job), whether other jobs use them or not;
        jobs that hold them still run, but no job registered later can name
        them, nor can REGISTER_PROFILE reuse the name. Not with
        --enable-profile-reuse."""
        if not self.config.profile_reuse:
            for record in self.ended_since_call:
                workload = record.job.workload
                self.dropped_profiles.setdefault(workload, set()).update(
                    profiles_reached([record.job.profile], self.workloads[workload].profiles))
        self.ended_since_call = []

    def _on_sched_ready(self, _payload):
        self.sched_ready = True
        if self.end_sent:
            self.end_acknowledged = True

    def _on_waiting_done(self, _payload):
        self._event("REQUESTED_CALL", {})
        self.nb_waiters -= 1

    def _on_killing_done(self, payload):
        ids, progress = payload
        for job_id in ids:
            record = self.records[job_id]
            if record.state == "COMPLETED_KILLED" and job_id in progress:
                self.nb_running -= 1
                self.nb_completed += 1
                self._event("JOB_COMPLETED", {"job_id": job_id, "job_state": record.state,
                                              "return_code": record.return_code, "alloc": str(record.allocation)})
                self._completed(record)
        self._event("JOB_KILLED", {"job_ids": list(ids), "job_progress": progress})
        self.nb_killers -= 1

    # -- decisions of the scheduler -------------------------------------------
    def _on_sched_event(self, payload):
        kind, data = payload
        handler = getattr(self, f"_do_{kind.lower()}", None)
        if handler is None:
            raise SchedulerError(f"the scheduler sent an event of unknown type {kind!r}")
        handler(data)

    def _record(self, data, kind):
        job_id = _field(data, "job_id", str, kind)
        if job_id not in self.records:
            raise SchedulerError(f"{kind}: unknown job {job_id!r}")
        return self.records[job_id]

    def _do_execute_job(self, data):
        record = self._record(data, "EXECUTE_JOB")
        job = record.job
        if record.state != "SUBMITTED":
            raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' cannot start, its state is {record.state}")
        extras = [key for key in ("mapping", "storage_mapping", "additional_io_job") if key in data]
        if len(extras) > 1:
            raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' gives {' and '.join(extras)}; Batsim 4.2 accepts "
                                 "at most one of mapping, storage_mapping and additional_io_job")
        if "additional_io_job" in data:
            raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' uses additional_io_job, which batio's engine does "
                                 "not run (Batsim 4.2 builds its hosts wrongly); use a pfs profile instead")
        allocation = _parse_allocation(_field(data, "alloc", str, "EXECUTE_JOB"), job.id)
        for resource in allocation:
            if resource not in self.resources:
                raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' is allocated resource {resource}, which does "
                                     f"not exist (resources are 0-{len(self.resources) - 1})")
            if self.resources[resource].role == "storage":
                raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' is allocated resource {resource} "
                                     f"('{self.resources[resource].name}'), a storage host; jobs run on compute "
                                     f"hosts ({_compute_range(self.platform)}) and reach storage through their profile")
            # Batsim 4.2 gives compute hosts the storage permission bits too, so
            # --disable-storage-sharing also forbids sharing compute hosts.
            sharing = self.config.compute_sharing and self.config.storage_sharing
            if not sharing and self.jobs_on_machine[resource]:
                busy = [r.job.id for r in self.records.values() if r.state == "RUNNING" and resource in r.allocation]
                raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' is allocated host {resource} "
                                     f"('{self.resources[resource].name}'), which is running {busy}, and compute "
                                     "sharing is off (it needs --enable-compute-sharing without "
                                     "--disable-storage-sharing)")
        executors = self._executors(data, allocation, job)
        storage_mapping = self._storage_mapping(data, job)
        record.state = "RUNNING"
        record.start = self.now()
        record.allocation = allocation
        self.nb_running += 1
        hosts = [self.host(self.resources[allocation[i]].name) for i in executors]
        record.execution = JobExecution(self, record, hosts, storage_mapping)
        self._job_started(record)
        record.actor = self._spawn(f"job_{job.id}", hosts[0], self._job_actor, record)

    def _executors(self, data, allocation, job):
        """Index in the allocation of each executor (Batsim's ``mapping``)."""
        mapping = data.get("mapping")
        if mapping:
            try:
                executors = [int(mapping[key]) for key in sorted(mapping, key=int)]
            except (TypeError, ValueError, AttributeError):
                raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' has a malformed 'mapping' {mapping!r} "
                                     "(expected {\"executor\": index in alloc})") from None
            if any(not 0 <= i < len(allocation) for i in executors):
                raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' maps executors outside its allocation")
            count = len(executors)
        else:
            executors = list(range(len(allocation)))
            count = len(allocation)
        if count != job.res and not self._spreads_total(job):
            raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' requests {job.res} host(s) but was given "
                                 f"{count} ('{allocation}')")
        return executors

    def _spreads_total(self, job):
        profile = self.profile(job.workload, job.profile)
        if profile["type"] == "composed":
            return all(self.profile(job.workload, name)["type"] == "parallel_homogeneous_total"
                       for name in profile["seq"])
        return profile["type"] == "parallel_homogeneous_total"

    def _storage_mapping(self, data, job):
        mapping = data.get("storage_mapping") or {}
        resolved = {}
        for label, resource in mapping.items():
            if not isinstance(resource, int) or self.resources.get(resource) is None \
                    or self.resources[resource].role != "storage":
                raise SchedulerError(f"EXECUTE_JOB: job '{job.id}' maps storage label '{label}' to {resource!r}, "
                                     "which is not a storage resource id")
            resolved[label] = self.resources[resource]
        return resolved

    def _do_reject_job(self, data):
        record = self._record(data, "REJECT_JOB")
        if record.state != "SUBMITTED":
            raise SchedulerError(f"REJECT_JOB: job '{record.job.id}' cannot be rejected in state {record.state}")
        record.state = "REJECTED"
        self._active()
        self.nb_completed += 1
        self._completed(record)

    def _do_kill_job(self, data):
        ids = _field(data, "job_ids", list, "KILL_JOB")
        to_kill = []
        for job_id in ids:
            if job_id not in self.records:
                raise SchedulerError(f"KILL_JOB: unknown job {job_id!r}")
            record = self.records[job_id]
            if record.kill_requested:
                continue
            if record.state != "RUNNING" and not record.complete:
                raise SchedulerError(f"KILL_JOB: job '{job_id}' is neither running nor completed ({record.state})")
            record.kill_requested = True
            to_kill.append(job_id)
        if to_kill:
            self.nb_killers += 1
            self._spawn("killer_process", self.master, self._killer, to_kill)

    def _do_call_me_later(self, data):
        target = _field(data, "timestamp", (int, float), "CALL_ME_LATER")  # checked by _request_reply
        if self.nb_waiters >= MAX_PENDING_CALLS:
            raise SchedulerError(f"CALL_ME_LATER at t={self.now():g} for t={target:g}: the scheduler has "
                                 f"{self.nb_waiters} calls pending already, the most that may wait at once; "
                                 "is it asking again on every call?")
        self.calls_since_activity += 1
        self.nb_waiters += 1
        if self.nb_waiter_actors < WAITER_ACTORS:
            self.nb_waiter_actors += 1
            self._spawn(f"waiter {target}", self.master, self._waiter, float(target))
            return
        # Batsim's waiter sleeps max(target - now, MIN_WAIT) from now.
        heapq.heappush(self.calls, (self.now() + max(float(target) - self.now(), MIN_WAIT), self.calls_asked))
        self.calls_asked += 1
        if self.shared_waiter is None:
            self.shared_waiter = self._spawn("shared waiter", self.master, self._shared_waiter)
            self.shared_waiter.daemonize()  # it waits for calls forever: it must not hold the simulation's end
        else:
            self.new_call.release()

    def _do_register_profile(self, data):
        self._require_dynamic("REGISTER_PROFILE")
        workload_name = _field(data, "workload_name", str, "REGISTER_PROFILE")
        name = _field(data, "profile_name", str, "REGISTER_PROFILE")
        workload = self.workloads.setdefault(workload_name, Workload(workload_name, None, [], {}))
        if name in workload.profiles:
            raise SchedulerError(f"REGISTER_PROFILE: profile '{name}' already exists in workload '{workload_name}'"
                                 + (" (Batsim 4.2.1 keeps the names of the profiles it dropped: register it under "
                                    "a new name)" if name in self.dropped_profiles.get(workload_name, ()) else ""))
        profile = data.get("profile")
        try:
            check_profile("REGISTER_PROFILE", name, profile, {**workload.profiles, name: profile})
        except InputError as error:
            raise SchedulerError(str(error)) from None
        workload.profiles[name] = profile

    def _do_register_job(self, data):
        self._require_dynamic("REGISTER_JOB")
        job_id = _field(data, "job_id", str, "REGISTER_JOB")
        workload_name, _, local_id = job_id.partition("!")
        if not local_id or workload_name not in self.workloads:
            raise SchedulerError(f"REGISTER_JOB: job id {job_id!r} must be 'workload!id' with a workload that "
                                 "exists or has registered profiles")
        if job_id in self.records:
            raise SchedulerError(f"REGISTER_JOB: job '{job_id}' already exists")
        description = dict(_field(data, "job", dict, "REGISTER_JOB"), id=local_id)
        profile = description.get("profile")
        if isinstance(profile, str) and profile in self.dropped_profiles.get(workload_name, ()):
            raise SchedulerError(
                f"REGISTER_JOB: job '{job_id}' names profile '{profile}' of workload '{workload_name}', which Batsim "
                "4.2.1 no longer holds: it drops a profile once a job using it has ended, and at start every "
                "profile no job uses (register a profile under a new name, or run with --enable-profile-reuse)")
        try:
            job = check_job("REGISTER_JOB", workload_name, description, self.workloads[workload_name].profiles)
        except InputError as error:
            raise SchedulerError(str(error)) from None
        self.workloads[workload_name].jobs.append(job)
        self.records[job.id] = JobRecord(job, state="SUBMITTED")
        self._active()
        self.nb_submitted += 1
        if self.config.acknowledge_dynamic_jobs:
            data = {"job_id": job.id, "job": job.description}
            if self.config.forward_profiles:
                data["profile"] = self.profile(job.workload, job.profile)
            self._event("JOB_SUBMITTED", data)

    def _require_dynamic(self, kind):
        if not self.config.dynamic_jobs:
            raise SchedulerError(f"{kind} needs dynamic jobs, which are off (run with --enable-dynamic-jobs)")

    def _do_notify(self, data):
        kind = _field(data, "type", str, "NOTIFY")
        if kind == "registration_finished":
            self.registration_finished = True
        elif kind == "continue_registration":
            self.registration_finished = False
        else:
            raise SchedulerError(f"NOTIFY of unknown type {kind!r} (known: registration_finished, "
                                 "continue_registration)")

    def _do_set_job_metadata(self, data):
        record = self._record(data, "SET_JOB_METADATA")
        metadata = _field(data, "metadata", str, "SET_JOB_METADATA")
        if '"' in metadata:
            raise SchedulerError(f"SET_JOB_METADATA: job '{record.job.id}': metadata must not contain "
                                 "double quotes (Batsim writes it quoted in _jobs.csv)")
        record.metadata = metadata

    def _do_change_job_state(self, data):
        record = self._record(data, "CHANGE_JOB_STATE")
        state = _field(data, "job_state", str, "CHANGE_JOB_STATE")
        if record.execution is not None and not record.complete:
            raise SchedulerError(f"CHANGE_JOB_STATE: job '{record.job.id}' is being executed by the engine (it was "
                                 f"started by EXECUTE_JOB), so it cannot go to {state}: its profile decides when it "
                                 "ends (use KILL_JOB to end it early)")
        self._active()
        if record.state == "SUBMITTED" and state == "RUNNING":
            record.start = self.now()
            self.nb_running += 1
        elif record.state == "SUBMITTED" and state == "REJECTED":
            self.nb_completed += 1
            self._completed(record)
        elif record.state == "RUNNING" and state.startswith("COMPLETED_") and state in _FINAL_STATES:
            record.runtime = self.now() - record.start
            self.nb_running -= 1
            self.nb_completed += 1
            self._completed(record)
        else:
            raise SchedulerError(f"CHANGE_JOB_STATE: job '{record.job.id}' cannot go from {record.state} to {state}")
        record.state = state

    def _do_to_job_msg(self, data):
        self._record(data, "TO_JOB_MSG")  # batio runs no profile that reads job messages

    def _do_query(self, data):
        raise SchedulerError("QUERY (consumed_energy) needs Batsim's energy model, which batio's engine does not "
                             "simulate; use --engine batsim with an energy platform")

    def _do_set_resource_state(self, data):
        raise SchedulerError("SET_RESOURCE_STATE (power states) needs Batsim's energy model, which batio's engine "
                             "does not simulate; use --engine batsim")

    # -- SIMULATION_BEGINS -------------------------------------------------------
    def _simulation_begins(self):
        def describe(resource):
            return {"id": resource.id, "name": resource.name, "state": "idle",
                    "properties": self.platform.properties.get(resource.name, {"role": ""}),
                    "zone_properties": self.platform.zone_properties.get(resource.name, {})}
        return {
            "nb_resources": len(self.platform.resources),
            "nb_compute_resources": len(self.platform.compute),
            "nb_storage_resources": len(self.platform.storage),
            "allow_compute_sharing": self.config.compute_sharing,
            "allow_storage_sharing": self.config.storage_sharing,
            "config": {
                "redis-enabled": False,
                "redis-hostname": "127.0.0.1",
                "redis-port": 6379,
                "redis-prefix": "default",
                "profiles-forwarded-on-submission": self.config.forward_profiles,
                "dynamic-jobs-enabled": self.config.dynamic_jobs,
                "dynamic-jobs-acknowledged": self.config.acknowledge_dynamic_jobs,
                "profile-reuse-enabled": self.config.profile_reuse,
                "sched-config": "",
                "forward-unknown-events": False,
            },
            "compute_resources": [describe(r) for r in self.platform.compute],
            "storage_resources": [describe(r) for r in self.platform.storage],
            "workloads": {w.name: str(w.path.resolve()) for w in self.workloads.values()},
            "profiles": {w.name: w.referenced_profiles() for w in self.workloads.values()},
        }


_FINAL_STATES = {"COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED"}


def _mailbox_empty_test(name):
    """Batsim's ``mailbox_empty``: whether SimGrid's mailbox ``name`` holds
    no posted message (``Mailbox::by_name``, then ``empty``). The Python
    bindings lack ``empty``; SimGrid's C API has the same test for a mailbox
    without a permanent receiver, ``sg_mailbox_listen``, with the same
    ``by_name`` first, reached through the bindings' own module (dlsym
    searches the libraries it was linked with)."""
    try:
        listen = ctypes.CDLL(sg.__file__).sg_mailbox_listen
    except (OSError, AttributeError) as missing:
        raise EngineError(f"SimGrid's sg_mailbox_listen is not reachable from {sg.__file__}: {missing}") from None
    listen.argtypes, listen.restype = [ctypes.c_char_p], ctypes.c_int
    encoded = name.encode()
    return lambda: not listen(encoded)


def _compute_range(platform):
    return str(ProcSet(*(r.id for r in platform.compute)))


def _field(data, key, kinds, event):
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise SchedulerError(f"{event}: field '{key}' is missing or malformed (got {value!r})")
    return value


def _check_event(event, index):
    if not isinstance(event, dict):
        raise SchedulerError(f"event {index} of the scheduler's reply is not an object: {event!r}")
    timestamp, kind, data = event.get("timestamp"), event.get("type"), event.get("data", {})
    if not isinstance(timestamp, (int, float)) or isinstance(timestamp, bool):
        raise SchedulerError(f"event {index} of the scheduler's reply has no numeric 'timestamp': {event!r}")
    if not 0 <= timestamp < float("inf"):  # NaN too
        raise SchedulerError(f"event {index} ({kind}) is dated {timestamp!r}; simulated time is a finite number >= 0")
    if not isinstance(kind, str):
        raise SchedulerError(f"event {index} of the scheduler's reply has no 'type': {event!r}")
    if not isinstance(data, dict):
        raise SchedulerError(f"event {index} ({kind}) has a 'data' that is not an object")
    return float(timestamp), kind, data


def _parse_allocation(text, job_id):
    try:
        allocation = ProcSet.from_str(text)
    except (ValueError, TypeError):
        raise SchedulerError(f"EXECUTE_JOB: job '{job_id}' has an unreadable alloc {text!r} "
                             "(expected intervals like '0-3 8')") from None
    if not allocation:
        raise SchedulerError(f"EXECUTE_JOB: job '{job_id}' has an empty allocation")
    return allocation
