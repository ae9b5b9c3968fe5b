"""Batsim's output files, with its names, columns and number formats.

``PREFIX_jobs.csv`` (one row per job, in completion order),
``PREFIX_schedule.csv`` (one row of aggregates) and
``PREFIX_machine_states.csv`` (machine counts at each change) are written
as Batsim 4.2's ``export.cpp`` writes them: C++ ``std::to_string`` numbers
(six decimals), ``%g`` dates in machine states. ``PREFIX_io.csv`` is batio's
own (see ``iotimeline``).
"""

from batio import __version__
from batio.outfiles import writing

JOBS_COLUMNS = ["job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
                "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
                "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata"]
MACHINE_STATES_COLUMNS = ["time", "nb_sleeping", "nb_switching_on", "nb_switching_off", "nb_idle", "nb_computing"]


def _num(value):
    """C++ std::to_string of a double."""
    return f"{value:f}"


def _g(value):
    """printf's %g."""
    return f"{value:g}"


class MachineStates:
    """Machine counts over time and time spent per state, as Batsim tracks them.

    A machine's time in a state is added when it leaves that state, so idle
    time after a machine's last job is not counted (Batsim 4.2 does the same).
    Rows are written at each job start and end; the counts cover the compute
    machines.
    """

    def __init__(self, nb_compute, nb_machines):
        self.nb_compute = nb_compute
        self.nb_machines = nb_machines
        self.nb_computing = 0
        self.since = {}  # machine -> time of its last state change
        self.time_computing = 0.0
        self.time_idle = 0.0
        self.rows = []  # (time, computing, idle)

    def jobs_started(self, now, machines):
        """``machines``: the ones that went from idle to computing."""
        for machine in machines:
            self.time_idle += now - self.since.get(machine, 0.0)
            self.since[machine] = now
        self.nb_computing += len(machines)
        self.rows.append((now, self.nb_computing, self.nb_compute - self.nb_computing))

    def jobs_ended(self, now, machines):
        """``machines``: the ones that went from computing to idle."""
        for machine in machines:
            self.time_computing += now - self.since[machine]
            self.since[machine] = now
        self.nb_computing -= len(machines)
        self.rows.append((now, self.nb_computing, self.nb_compute - self.nb_computing))


def job_row(record):
    job = record.job
    rejected = record.state == "REJECTED"
    started = record.start is not None and not rejected
    row = {
        "job_id": job.id.split("!", 1)[1],
        "workload_name": job.workload,
        "profile": job.profile,
        "submission_time": _num(job.subtime),
        "requested_number_of_resources": str(job.res),
        "requested_time": _num(job.walltime),
        "success": "1" if record.state == "COMPLETED_SUCCESSFULLY" else "0",
        "final_state": record.state,
        "starting_time": "",
        "execution_time": "",
        "finish_time": "",
        "waiting_time": "",
        "turnaround_time": "",
        "stretch": "",
        "consumed_energy": "" if rejected else _num(-1),
        "allocated_resources": str(record.allocation),
        "metadata": record.metadata,
    }
    if started:
        finish = record.start + record.runtime
        row.update(starting_time=_num(record.start), execution_time=_num(record.runtime),
                   finish_time=_num(finish), waiting_time=_num(record.start - job.subtime),
                   turnaround_time=_num(finish - job.subtime),
                   stretch=_num((finish - job.subtime) / record.runtime))
    return row


def write_jobs(path, records):
    with writing(path) as stream:
        stream.write(",".join(JOBS_COLUMNS) + "\n")
        for record in records:
            row = job_row(record)
            # Batsim always quotes the metadata field, and only it.
            stream.write(",".join(f'"{row[c]}"' if c == "metadata" else row[c] for c in JOBS_COLUMNS) + "\n")


def schedule_values(records, machine_states, scheduling_time, simulation_time):
    """Batsim's _schedule.csv aggregates over the completed and rejected jobs."""
    nb_jobs = len(records)
    finished = [r for r in records if r.state != "REJECTED"]
    waits = [r.start - r.job.subtime for r in finished]
    turnarounds = [r.start + r.runtime - r.job.subtime for r in finished]
    slowdowns = [t / r.runtime for t, r in zip(turnarounds, finished)]
    success = sum(r.state == "COMPLETED_SUCCESSFULLY" for r in finished)

    def mean(values):
        return sum(values) / nb_jobs if nb_jobs else float("nan")

    return {
        "batsim_version": f"batio-{__version__}",
        "consumed_joules": _num(0.0),
        "makespan": _num(max((r.start + r.runtime for r in finished), default=0.0)),
        "max_slowdown": _num(max(slowdowns, default=0.0)),
        "max_turnaround_time": _num(max(turnarounds, default=0.0)),
        "max_waiting_time": _num(max(waits, default=0.0)),
        "mean_slowdown": _num(mean(slowdowns)),
        "mean_turnaround_time": _num(mean(turnarounds)),
        "mean_waiting_time": _num(mean(waits)),
        "nb_computing_machines": str(machine_states.nb_machines),
        "nb_grouped_switches": "0",
        "nb_jobs": str(nb_jobs),
        "nb_jobs_finished": str(len(finished)),
        "nb_jobs_killed": str(len(finished) - success),
        "nb_jobs_rejected": str(nb_jobs - len(finished)),
        "nb_jobs_success": str(success),
        "nb_machine_switches": "0",
        "scheduling_time": _num(scheduling_time),
        "simulation_time": _num(simulation_time),
        "success_rate": _num(success / nb_jobs if nb_jobs else float("nan")),
        "time_computing": _num(machine_states.time_computing),
        "time_idle": _num(machine_states.time_idle),
        "time_sleeping": _num(0.0),
        "time_switching_off": _num(0.0),
        "time_switching_on": _num(0.0),
        "time_unavailable": _num(0.0),
    }


def write_schedule(path, values):
    with writing(path) as stream:
        stream.write(",".join(values) + "\n")
        stream.write(",".join(values.values()) + "\n")


def write_machine_states(path, machine_states):
    with writing(path) as stream:
        stream.write(",".join(MACHINE_STATES_COLUMNS) + "\n")
        for time, computing, idle in machine_states.rows:
            stream.write(f"{_g(time)},0,0,0,{idle},{computing}\n")
