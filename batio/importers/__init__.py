"""``batio import FORMAT TRACE``: a Batsim workload from a real machine's job trace.

One reader per format (``swf``: the Parallel Workloads Archive's Standard
Workload Format; ``sacct``: Slurm's ``sacct --parsable2``; ``jobsio``: jobs
joined with their Darshan I/O totals, one CSV row a job) turns lines into
records; ``common.build_workload`` applies the user's window, sample and cap
the same way for all. Every record left out is counted with its reason in the
workload's ``trace`` block; every malformed line is a one-line ``InputError``
naming the file, the line and the field. docs/formats.md states the mapping.
"""

from batio.errors import InputError
from batio.importers import jobsio, sacct, swf
from batio.importers.common import Selection, build_workload, dumps, parse_duration, parse_instant, summary_lines
from batio.inputs.workload import INT_MAX

FORMATS = ("swf", "sacct", "jobsio")

__all__ = ["FORMATS", "import_trace", "dumps", "summary_lines"]


def import_trace(format, path, *, start=None, end=None, warmup=None, cooldown=None, max_jobs=None, sample=None,
                 seed=0, nodes=None, cores_per_node=None, keep_cancelled=False, darshan=None, week=None, runs=None):
    """The Batsim workload (a dict with a ``trace`` block) of a trace file.

    ``start``/``end`` (--from/--to) are trace seconds or dates as text;
    ``warmup``/``cooldown`` durations as text ('3600', '12h', '2d'); ``darshan``: Darshan
    logs or folders whose I/O the jobs get (``darshan_io``); ``week`` and ``runs``
    (``darshan_runs.csv``): the jobsio format's week and per-launch records."""
    if nodes is not None and not 1 <= nodes <= INT_MAX:
        raise InputError("--nodes", f"must be from 1 to {INT_MAX} (Batsim reads nb_res as a C int), got {nodes}")
    if format != "jobsio" and (week is not None or runs is not None):
        raise InputError("--week" if week is not None else "--runs", "applies to the jobsio format only")
    if format == "swf":
        read = swf.read(path, cores_per_node=1 if cores_per_node is None else cores_per_node, nodes=nodes,
                        keep_cancelled=keep_cancelled)
    elif format == "sacct":
        if cores_per_node is not None:
            raise InputError("--cores-per-node", "applies to SWF traces only: sacct's NNodes already counts nodes")
        read = sacct.read(path, nodes=nodes, keep_cancelled=keep_cancelled)
    elif format == "jobsio":
        if cores_per_node is not None or keep_cancelled or darshan:
            raise InputError(format, "takes neither --cores-per-node, --keep-cancelled nor --darshan: its rows "
                                     "already count nodes, hold only jobs that ran, and carry their I/O")
        read = jobsio.read(path, week=week, nodes=nodes, runs=runs)
    else:
        raise InputError(format, f"unknown trace format (known: {', '.join(FORMATS)})")
    records, tally, info, clock, nb_nodes = read
    selection = Selection(
        start=None if start is None else parse_instant(start, "--from", clock),
        end=None if end is None else parse_instant(end, "--to", clock),
        warmup=None if warmup is None else parse_duration(warmup, "--warmup"),
        cooldown=None if cooldown is None else parse_duration(cooldown, "--cooldown"),
        max_jobs=max_jobs, sample=sample, seed=seed)
    workload = build_workload(records, tally, selection, nb_nodes=nb_nodes, info=info, clock=clock)
    if format == "jobsio":
        jobsio.give_phases(workload)
    elif darshan:
        from batio.importers.darshan_io import attach_io
        attach_io(workload, darshan)
    return workload
