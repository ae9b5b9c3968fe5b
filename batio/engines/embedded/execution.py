"""Running one job's profile on SimGrid, as Batsim 4.2 does.

Design notes: docs/internals.md.
"""

import math

import simgrid as sg

from batio.engines.embedded.iotimeline import remaining_ratio
from batio.engines.embedded.wire import as_batsim_writes
from batio.errors import InputError, SchedulerError
from batio.inputs.contention import READ, WRITE
from batio.inputs.workload import DEFAULT_STORAGE_LABEL

WALLTIME_REACHED = -1
KILLED = -2


class ProfileError(SchedulerError):
    """A job cannot run as the scheduler allocated it (e.g. an unknown storage label)."""


class JobExecution:
    """Runs in its own actor; the server may cancel it with ``kill``."""

    def __init__(self, sim, record, hosts, storage_mapping):
        self.sim = sim
        self.record = record
        self.hosts = hosts  # SimGrid hosts in executor order (mapping applied)
        self.storage_mapping = storage_mapping
        self.remaining = record.job.walltime if record.job.has_walltime else math.inf
        self.ptask = None
        self.timed_out = None  # a ptask past the walltime, still running (see release)
        self.timed_out_locks = []
        self.timed_out_clients = None  # what the contention model counts for the timed-out ptask
        self.progress = []  # sub-task index at each depth of the composed profiles being run
        self.delay_started = None

    # -- progress, for JOB_KILLED (Batsim's BatTask JSON) ---------------------------
    def _progress_of(self, depth, profile_name, ratio_left):
        profile = self.sim.profile(self.record.job.workload, profile_name)
        if profile["type"] == "composed":
            if depth >= len(self.progress):
                return {"profile_name": profile_name, "current_task_index": -1}
            index = self.progress[depth]
            seq = profile["seq"]
            return {"profile_name": profile_name, "current_task_index": index,
                    "current_task": self._progress_of(depth + 1, seq[index % len(seq)], ratio_left)}
        if profile["type"] == "delay" and self.delay_started is not None:
            return {"profile_name": profile_name,
                    "progress": as_batsim_writes((sg.Engine.clock - self.delay_started) / profile["delay"])}
        if self.ptask is not None:
            return {"profile_name": profile_name, "progress": as_batsim_writes(1.0 - ratio_left)}
        return {"profile_name": profile_name, "current_task_index": -1}

    # -- execution -----------------------------------------------------------
    def run(self):
        return self._run_profile(self.record.job.profile, depth=0)

    def kill(self):
        """As Batsim's killer: the job's progress, then the running ptask
        cancelled. Returns (progress, whether a ptask was cancelled). The
        ptask's progress is read once, as Batsim reads it (``iotimeline``
        says why no other SimGrid call may come before the cancel)."""
        ratio_left = remaining_ratio(self.ptask) if self.ptask is not None else None
        progress = self._progress_of(0, self.record.job.profile, ratio_left)
        if self.ptask is None:
            return progress, False
        self.sim.io.interrupted(self.ptask, ratio_left)
        self.ptask.cancel()
        return progress, True

    def release(self):
        """End a ptask left running past the walltime.

        SimGrid 3.32's wait_for does not cancel on timeout: in Batsim the
        ptask runs on until the job actor ends, after its JOB_COMPLETED.
        """
        if self.timed_out is not None:
            self.sim.io.interrupted(self.timed_out, remaining_ratio(self.timed_out))
            self.timed_out.cancel()
            self.timed_out = None
            _give_back(self.timed_out_locks)
            self._clients_leave(self.timed_out_clients)

    def _run_profile(self, name, depth):
        profile = self.sim.profile(self.record.job.workload, name)
        kind = profile["type"]
        if kind == "composed":
            seq = profile["seq"]
            for index in range(len(seq) * profile.get("repeat", 1)):
                del self.progress[depth:]
                self.progress.append(index)
                code = self._run_profile(seq[index % len(seq)], depth + 1)
                if code != 0:
                    return code
            return profile.get("ret", 0)
        if kind == "delay":
            return self._sleep(profile["delay"]) or profile.get("ret", 0)
        ptask = self._ptask_of(name, profile)
        self._check_routes(name, ptask[0], ptask[2])
        code = self._run_ptask(*ptask)
        return code or profile.get("ret", 0)

    def _sleep(self, duration):
        self.delay_started = sg.Engine.clock
        try:
            if duration < self.remaining:
                sg.this_actor.sleep_for(duration)
                self.remaining -= duration
                return 0
            sg.this_actor.sleep_for(self.remaining)
            self.remaining = 0.0
            return WALLTIME_REACHED
        finally:
            self.delay_started = None

    def _run_ptask(self, hosts, flops, bytes_matrix, traffic, streams):
        locks = self.sim.exclusive_io_locks(traffic)
        waited_from = sg.Engine.clock
        if not self._take(locks):
            return WALLTIME_REACHED
        self.remaining -= sg.Engine.clock - waited_from
        ptask = sg.this_actor.exec_init(hosts, flops, bytes_matrix)
        began = sg.Engine.clock
        self.ptask = ptask
        self.sim.io.start(ptask, traffic)
        # The contention model (a platform property, beyond Batsim) resets the
        # storage links' bandwidth before this transfer joins them; without it
        # the path is Batsim's.
        clients = self.sim.contention.started(streams) if self.sim.contention and streams else None
        code = 0
        try:
            self._start(ptask)
            if math.isinf(self.remaining):
                ptask.wait()
            else:
                ptask.wait_for(self.remaining)
        except sg.TimeoutException:
            self.timed_out, self.timed_out_locks, self.timed_out_clients = ptask, locks, clients
            code = WALLTIME_REACHED
        except sg.CancelException:
            code = KILLED
        finally:
            self.ptask = None
            if code != WALLTIME_REACHED:  # a ptask past its walltime runs on until release
                _give_back(locks)
                self._clients_leave(clients)
        if code == 0:
            self.sim.io.completed(ptask)
        if not math.isinf(self.remaining):
            self.remaining -= sg.Engine.clock - began
        return code

    def _start(self, ptask):
        try:
            ptask.start()
        except ValueError as error:  # a Floyd or Dijkstra zone that declares no route between the job's hosts
            raise InputError(self.sim.platform.path, f"job '{self.record.job.id}' cannot run: {error} (declare a "
                                                     "<route> between them)", field="route") from None

    def _clients_leave(self, clients):
        if clients is not None:
            self.sim.contention.ended(clients)

    def _take(self, locks):
        """Wait for exclusive use of the storage hosts (the ``io_exclusive``
        engine option), within the walltime; False if it runs out first."""
        deadline = sg.Engine.clock + self.remaining
        taken: list = []
        try:
            for lock in locks:
                if math.isinf(deadline):
                    lock.acquire()
                elif lock.acquire_timeout(max(0.0, deadline - sg.Engine.clock)):
                    _give_back(taken)  # acquire_timeout answers True on timeout
                    self.remaining = 0.0
                    return False
                taken.append(lock)
        except sg.ActorKilled:
            _give_back(taken)
            raise
        return True

    def _storage_host(self, label, default_to_single, name, field):
        if label in self.storage_mapping:
            resource = self.storage_mapping[label]
        elif default_to_single and not self.storage_mapping and len(self.sim.platform.storage) == 1:
            resource = self.sim.platform.storage[0]
        else:
            raise ProfileError(f"job '{self.record.job.id}', profile '{name}', field '{field}': needs storage label "
                               f"'{label}', which the EXECUTE_JOB storage_mapping {sorted(self.storage_mapping)} "
                               "does not name"
                               + ("" if default_to_single else " (data_staging has no default storage)"))
        return resource.name, self.sim.host(resource.name)

    def _check_routes(self, name, hosts, matrix):
        """Bytes between two hosts of a Full zone that declares no route
        between them would move in no time (SimGrid charges no link)."""
        zones = self.sim.platform.full_zones
        if not zones or not matrix:
            return
        inside = [index for index, host in enumerate(hosts) if host.name in zones]
        size = len(hosts)
        for i in inside if len(inside) > 1 else ():
            for j in inside:
                if i != j and matrix[i * size + j] > 0:
                    zone = self.sim.platform.missing_route(hosts[i].name, hosts[j].name)
                    if zone is not None:
                        raise InputError(self.sim.platform.path, f"zone '{zone}' (routing Full) has no route from "
                                         f"'{hosts[i].name}' to '{hosts[j].name}', so the bytes of job "
                                         f"'{self.record.job.id}' (profile '{name}') would move in no time",
                                         field="route")

    def _ptask_of(self, name, profile):
        """(hosts, flops, bytes matrix, storage traffic, storage clients) of a parallel profile.

        The clients, [(source host, destination host, READ or WRITE)], are what
        the contention model counts: one per job host and direction with bytes.
        """
        kind = profile["type"]
        hosts = list(self.hosts)
        n = len(hosts)
        if kind == "parallel":
            if len(profile["cpu"]) != n:
                raise ProfileError(f"job '{self.record.job.id}': profile '{name}' describes "
                                   f"{len(profile['cpu'])} hosts but the job runs on {n}")
            return hosts, list(map(float, profile["cpu"])), list(map(float, profile["com"])), [], []
        if kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
            cpu, com = float(profile["cpu"]), float(profile["com"])
            if kind == "parallel_homogeneous_total":
                cpu, com = cpu / n, com / n
            matrix = [0.0 if i == j else com for i in range(n) for j in range(n)] if com > 0 else []
            return hosts, [cpu] * n, matrix, [], []
        if kind == "parallel_homogeneous_pfs":
            field = "storage" if "storage" in profile else "host"
            label = profile.get("storage", profile.get("host", DEFAULT_STORAGE_LABEL))
            storage_name, storage = self._storage_host(label, True, name, field)
            read, write = float(profile.get("bytes_to_read", 0)), float(profile.get("bytes_to_write", 0))
            size = n + 1
            matrix = []
            if read > 0 or write > 0:
                matrix = [0.0] * (size * size)
                for i in range(n):
                    matrix[i * size + n] = write
                    matrix[n * size + i] = read
            streams = ([(storage, host, READ) for host in hosts] if read > 0 else []) \
                + ([(host, storage, WRITE) for host in hosts] if write > 0 else [])
            return hosts + [storage], [0.0] * size, matrix, [(storage_name, read * n, write * n)], streams
        if kind == "data_staging":
            source_name, source = self._storage_host(profile["from"], False, name, "from")
            target_name, target = self._storage_host(profile["to"], False, name, "to")
            nb_bytes = float(profile["nb_bytes"])
            matrix = [0.0, nb_bytes, 0.0, 0.0] if nb_bytes > 0 else []
            return [source, target], [0.0, 0.0], matrix, [(source_name, nb_bytes, 0.0), (target_name, 0.0, nb_bytes)], \
                [(source, target, WRITE)] if nb_bytes > 0 else []
        raise ProfileError(f"profile type '{kind}' cannot run")  # workload checks make this unreachable


def _give_back(locks):
    for lock in locks:
        lock.release()
