"""The simulated Batsim: actors, their messages, and the scheduling protocol.

Design notes: docs/internals.md.
"""

import ctypes
from dataclasses import dataclass
import heapq

import simgrid as sg

from batio.engines.embedded.decisions import MIN_WAIT, Decisions, JobRecord, check_event, field_of
from batio.engines.embedded.execution import KILLED, WALLTIME_REACHED
from batio.engines.embedded.outputs import MachineStates
from batio.engines.embedded.wire import as_batsim_writes
from batio.errors import EngineError, SchedulerError
from batio.inputs.workload import Job, Workload, profiles_reached

SUCCESS_STATE = "COMPLETED_SUCCESSFULLY"
SERVER_MAILBOX = "server"
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


class Simulation(Decisions):
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
        self.to_scheduler: dict | None = None
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
            assert message is not None  # set before scheduler_called is released
            self._request_reply(message)
            if message["events"] and message["events"][-1]["type"] == "SIMULATION_ENDS":
                return

    def _request_reply(self, message):
        reply = self.transport.request(message)
        if self.on_progress:
            self.on_progress(self)
        # As Batsim: events apply in array order; one dated in the past applies now.
        for index, event in enumerate(reply["events"]):
            timestamp, kind, data = check_event(event, index)
            if timestamp > reply["now"]:
                raise SchedulerError(f"event {index} ({kind}) is dated {timestamp}, after the reply's "
                                     f"'now' {reply['now']}")
            if kind == "CALL_ME_LATER":
                # Checked against the date of the decision, not the time the server handles it: each
                # message takes simulated time, so in a long reply a date still in the future when
                # asked may have passed when handled (the waiter then fires at once).
                target = field_of(data, "timestamp", (int, float), "CALL_ME_LATER")
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
            assert record.execution is not None  # a running job's, since _job_started
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
