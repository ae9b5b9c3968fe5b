"""The scheduler's decisions (EXECUTE_JOB, KILL_JOB, CALL_ME_LATER, REGISTER_JOB...) as the
simulated Batsim carries them out: the ``_do_KIND`` methods of ``server.Simulation``."""

from collections.abc import Callable
from dataclasses import dataclass, field
import heapq
from typing import Any

from procset import ProcSet

from batio.engines.embedded.execution import JobExecution
from batio.errors import InputError, SchedulerError
from batio.inputs.workload import Job, Workload, check_job, check_profile

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
    job: Job
    state: str = "NOT_SUBMITTED"
    start: float | None = None
    runtime: float | None = None
    allocation: ProcSet = field(default_factory=ProcSet)
    return_code: int = 0
    execution: JobExecution | None = None
    actor: Any = None  # a SimGrid actor
    kill_requested: bool = False
    metadata: str = ""

    @property
    def complete(self):
        return self.state.startswith("COMPLETED") or self.state == "REJECTED"


_FINAL_STATES = {"COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED"}


class Decisions:
    """The handlers of the scheduler's events, one ``_do_KIND`` method each, mixed into ``server.Simulation``."""

    # What server.Simulation holds and does, as these handlers use it: declared for the type checker.
    config: Any  # a server.Config (not imported: server imports this module)
    platform: Any
    workloads: dict[str, Workload]
    records: dict[str, JobRecord]
    resources: dict[int, Any]
    master: Any  # SimGrid hosts, actors, semaphores: Any
    shared_waiter: Any
    new_call: Any
    dropped_profiles: dict[str, set[str]]
    jobs_on_machine: dict[int, int]
    calls: list[tuple[float, int]]
    calls_asked: int
    calls_since_activity: int
    nb_submitted: int
    nb_completed: int
    nb_running: int
    nb_waiters: int
    nb_killers: int
    nb_waiter_actors: int
    now: Callable[[], float]
    host: Callable[[str], Any]
    profile: Callable[[str, str], dict]
    _event: Callable[[str, dict], None]
    _spawn: Callable[..., Any]
    _active: Callable[[], None]
    _completed: Callable[[JobRecord], None]
    _job_started: Callable[[JobRecord], None]
    _job_actor: Callable[[JobRecord], None]
    _killer: Callable[[list[str]], None]
    _waiter: Callable[[float], None]
    _shared_waiter: Callable[[], None]

    def _record(self, data, kind):
        job_id = field_of(data, "job_id", str, kind)
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
        allocation = _parse_allocation(field_of(data, "alloc", str, "EXECUTE_JOB"), job.id)
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
        ids = field_of(data, "job_ids", list, "KILL_JOB")
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
        target = field_of(data, "timestamp", (int, float), "CALL_ME_LATER")  # checked by _request_reply
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
        workload_name = field_of(data, "workload_name", str, "REGISTER_PROFILE")
        name = field_of(data, "profile_name", str, "REGISTER_PROFILE")
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
        job_id = field_of(data, "job_id", str, "REGISTER_JOB")
        workload_name, _, local_id = job_id.partition("!")
        if not local_id or workload_name not in self.workloads:
            raise SchedulerError(f"REGISTER_JOB: job id {job_id!r} must be 'workload!id' with a workload that "
                                 "exists or has registered profiles")
        if job_id in self.records:
            raise SchedulerError(f"REGISTER_JOB: job '{job_id}' already exists")
        description = dict(field_of(data, "job", dict, "REGISTER_JOB"), id=local_id)
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
        kind = field_of(data, "type", str, "NOTIFY")
        if kind == "registration_finished":
            self.registration_finished = True
        elif kind == "continue_registration":
            self.registration_finished = False
        else:
            raise SchedulerError(f"NOTIFY of unknown type {kind!r} (known: registration_finished, "
                                 "continue_registration)")

    def _do_set_job_metadata(self, data):
        record = self._record(data, "SET_JOB_METADATA")
        metadata = field_of(data, "metadata", str, "SET_JOB_METADATA")
        if '"' in metadata:
            raise SchedulerError(f"SET_JOB_METADATA: job '{record.job.id}': metadata must not contain "
                                 "double quotes (Batsim writes it quoted in _jobs.csv)")
        record.metadata = metadata

    def _do_change_job_state(self, data):
        record = self._record(data, "CHANGE_JOB_STATE")
        state = field_of(data, "job_state", str, "CHANGE_JOB_STATE")
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
            "workloads": {w.name: str(w.path.resolve()) for w in self.workloads.values()
                          if w.path is not None},  # all of them: none is registered before this
            "profiles": {w.name: w.referenced_profiles() for w in self.workloads.values()},
        }


def _compute_range(platform):
    return str(ProcSet(*(r.id for r in platform.compute)))


def field_of(data, key, kinds, event):
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise SchedulerError(f"{event}: field '{key}' is missing or malformed (got {value!r})")
    return value


def check_event(event, index):
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
