"""Slurm accounting exports: ``sacct --parsable2`` (fields separated by '|', a header line).

    sacct --allusers --parsable2 --starttime 2024-03-01 --endtime 2024-03-08 \\
        --format=JobID,JobName,User,Submit,Start,End,Elapsed,Timelimit,NNodes,State,SubmitLine > jobs.sacct

The fields read, what each becomes, the states kept and every skip reason
are in docs/formats.md ("Importing a trace"); ``read`` follows them.
"""

from datetime import UTC, datetime
import logging
from pathlib import Path
import re
from typing import NamedTuple

from batio.errors import InputError
from batio.importers.common import Record, Tally, TraceClock, read_text
from batio.inputs.workload import INT_MAX
from batio.quantities import fails_with, whole
from batio.readings import MAX_TRACE_SECONDS, in_order, trace_date, trace_id

log = logging.getLogger(__name__)

REQUIRED = ("JobID", "Submit", "Start", "End", "Elapsed", "Timelimit", "NNodes", "State")
# Optional columns -> the job field they become.
OPTIONAL = {"JobName": "name", "User": "user", "SubmitLine": "command", "Partition": "partition",
            "Account": "account", "QOS": "qos", "NCPUS": "cpus", "ExitCode": "exit_code"}
# Free text that may itself contain '|': when it is the last column, extra separators are its own.
FREE_TEXT = ("SubmitLine", "JobName")

# States (the first word of State: "CANCELLED by 1234" is CANCELLED).
RAN = ("COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "DEADLINE")
CANCELLED = "CANCELLED"
NOT_ENDED = ("PENDING", "RUNNING", "REQUEUED", "RESIZING", "SUSPENDED", "REQUEUE_FED", "REQUEUE_HOLD",
             "SPECIAL_EXIT", "STOPPED", "SIGNALING", "STAGE_OUT", "COMPLETING", "CONFIGURING")
NEVER_RAN = ("BOOT_FAIL", "REVOKED")
NO_LIMIT = ("UNLIMITED", "INFINITE")
PARTITION_LIMIT = "Partition_Limit"
UNKNOWN_DATES = ("", "Unknown", "None", "N/A")

_DURATION = re.compile(r"^(?:(\d+)-)?(\d+(?:\.\d+)?)(?::(\d+(?:\.\d+)?))?(?::(\d+(?:\.\d+)?))?$", re.ASCII)


def parse_duration(text, where, field):
    """Seconds from a Slurm time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS.

    None for UNLIMITED, INFINITE and Partition_Limit (no limit of its own)."""
    text = text.strip()
    if text in NO_LIMIT or text == PARTITION_LIMIT:
        return None
    match = _DURATION.match(text)
    if not match:
        raise InputError(where, f"{text!r} is not a Slurm time ([D-]HH:MM:SS, MM:SS, minutes, UNLIMITED or "
                                f"Partition_Limit)", field=field)
    days, first, second, third = match.groups()
    parts = [float(p) for p in (first, second, third) if p is not None]
    if days is not None:
        # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = (parts + [0, 0])[:3]
        value = float(days) * 86400 + hours * 3600 + minutes * 60 + seconds
    elif len(parts) == 3:
        value = parts[0] * 3600 + parts[1] * 60 + parts[2]
    elif len(parts) == 2:
        value = parts[0] * 60 + parts[1]
    else:
        value = parts[0] * 60
    if not value <= MAX_TRACE_SECONDS:
        raise InputError(where, f"{text!r} is more than {MAX_TRACE_SECONDS:g} seconds", field=field)
    return value


def parse_date(text, where, field):
    """Seconds since 1970 of a sacct date (the cluster's local time, read as UTC: only
    differences matter), or None when Slurm says Unknown/None."""
    return None if text.strip() in UNKNOWN_DATES else trace_date(text, where, field)


def _columns(header_line, path):
    names = header_line.rstrip("\n").split("|")
    missing = [name for name in REQUIRED if name not in names]
    if missing:
        raise InputError(f"{path}, line 1", f"the header lacks {', '.join(missing)}: export with sacct "
                                            f"--parsable2 --format={','.join(REQUIRED)},...", field=missing[0])
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(f"{path}, line 1", "column given twice", field=repeated[0])
    return names


def _split(line, names, where):
    values = line.split("|")
    if len(values) > len(names) and names[-1] in FREE_TEXT:
        values = values[:len(names) - 1] + ["|".join(values[len(names) - 1:])]
    if len(values) != len(names):
        raise InputError(where, f"{len(values)} fields for the header's {len(names)} (fields are separated by "
                                f"'|': export with --parsable2)", field=names[min(len(values), len(names)) - 1])
    return dict(zip(names, values))


def read(path, *, nodes=None, keep_cancelled=False):
    """(records, tally of skipped lines, info, clock, machine nodes) of a sacct export."""
    lines = read_text(path, "sacct export").splitlines()
    if not lines:
        raise InputError(path, "empty file: expected sacct --parsable2 output with its header line")
    # --parsable (not --parsable2) ends every line with a '|'
    trailing = lines[0].endswith("|")
    if trailing:
        lines = [line[:-1] if line.endswith("|") else line for line in lines]
    names = _columns(lines[0], path)
    records, tally = [], Tally()
    lines_of_id: dict[str, int] = {}
    read_count = 0
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        row = _split(line, names, where)
        read_count += 1
        job_id = trace_id(row["JobID"], where, "JobID")
        if isinstance(job_id, str) and "." in job_id:
            tally.add("job_step", number)
            continue
        if job_id in lines_of_id:
            raise InputError(where, f"job {job_id} already on line {lines_of_id[job_id]} (export without "
                                    "--duplicates)", field="JobID")
        lines_of_id[job_id] = number
        record = _record(row, job_id, number, where, keep_cancelled, tally)
        if record is not None:
            records.append(record)
    if not read_count:
        raise InputError(path, "no job line after the header")
    first = min((r.submit for r in records), default=0.0)
    # Trace seconds count from the first submission kept (dates 1970-2100 keep them within MAX_TRACE_SECONDS).
    for record in records:
        record.submit -= first
        record.start -= first
    info = {"format": "sacct", "file": Path(path).name, "records": read_count,
            "columns_ignored": [name for name in names if name not in REQUIRED and name not in OPTIONAL]}
    if nodes is not None:
        info["machine_nodes_from"] = "--nodes"
    clock = TraceClock(datetime.fromtimestamp(first, UTC), unzoned=True) if records else TraceClock()
    return records, tally, info, clock, nodes


class _Line(NamedTuple):
    """One job line's values, each checked."""
    state_text: str
    state: str                # State's first word
    submit: float | None
    start: float | None
    end: float | None
    elapsed: float | None
    limit: float | None       # None: no limit of its own (or none given)
    nodes: int


def _checked(row, where):
    """Every value a job line's kept record or skip reason depends on, checked (a bad one is an
    error even on a line that is then skipped)."""
    state_text = row["State"].strip()
    state = state_text.split(" ")[0].rstrip("+")
    if state not in RAN + NOT_ENDED + NEVER_RAN + (CANCELLED,):
        raise InputError(where, f"unknown job state {state_text!r}", field="State")
    submit = parse_date(row["Submit"], where, "Submit")
    start = parse_date(row["Start"], where, "Start")
    end = parse_date(row["End"], where, "End")
    elapsed = parse_duration(row["Elapsed"], where, "Elapsed")
    limit = parse_duration(row["Timelimit"], where, "Timelimit") if row["Timelimit"].strip() else None
    if limit is not None and limit <= 0:
        raise InputError(where, f"time limit {row['Timelimit']!r} is not > 0", field="Timelimit")
    nodes = whole(row["NNodes"], fails_with(where, field="NNodes"), low=0, high=INT_MAX, what="node count")
    if submit is not None and start is not None:
        in_order(where, submit, start, ("Submit", "Start"))
    if start is not None and end is not None:
        in_order(where, start, end, ("Start", "End"))
    return _Line(state_text, state, submit, start, end, elapsed, limit, nodes)


def _skip_reason(line, keep_cancelled):
    """Why a job line gives no record (the tally's key), or None when it gives one."""
    if line.state in NOT_ENDED:
        return "not_ended"
    if line.state in NEVER_RAN or line.start is None:
        return "never_started"
    if line.state == CANCELLED and not keep_cancelled:
        return "cancelled"
    if line.end is None:
        return "not_ended"
    if line.submit is None:
        return "missing_submit_time"
    if line.elapsed is None or line.elapsed <= 0:
        return "zero_or_negative_run_time"
    if line.nodes < 1:
        return "missing_processors"
    return None


def _walltime(row, line):
    """(walltime, -1 when the job has no limit of its own; the oddities of its limit and state)."""
    oddities = []
    if line.limit is None:
        text = row["Timelimit"].strip()
        oddities.append("partition_limit_no_walltime" if text == PARTITION_LIMIT else
                        "missing_time_limit_no_walltime" if not text else "unlimited_no_walltime")
        walltime = -1
    else:
        walltime = line.limit
        if line.elapsed > line.limit:
            oddities.append("run_time_above_time_limit")
        elif line.elapsed == line.limit:
            # Killed at its time limit (Slurm's TIMEOUT): its delay equals its walltime, and the
            # simulation kills it too; the job says so, for a metric that should leave it out.
            oddities.append("ended_at_time_limit")
    if line.state == CANCELLED:
        oddities.append("cancelled_kept")
    return walltime, oddities


def _fields(row, line, oddities, where):
    """The job fields a kept record carries: its state, the optional columns given, a command."""
    fields = {"state": line.state_text}
    if "ended_at_time_limit" in oddities:
        fields["ended_at_time_limit"] = True
    for column, key in OPTIONAL.items():
        if column in row and row[column] != "":
            fields[key] = row[column]
    if "command" not in fields and "name" in fields:
        fields["command"] = fields["name"]
    if "cpus" in fields:
        fields["cpus"] = whole(fields["cpus"], fails_with(where, field="NCPUS"), low=0, high=INT_MAX, what="CPU count")
    return fields


def _record(row, job_id, number, where, keep_cancelled, tally):
    """The record of one job line, or None when the line is skipped (counted in ``tally``)."""
    line = _checked(row, where)
    reason = _skip_reason(line, keep_cancelled)
    if reason is not None:
        tally.add(reason, number)
        return None
    walltime, oddities = _walltime(row, line)
    return Record(line=number, id=job_id, submit=line.submit, runtime=line.elapsed, walltime=walltime,
                  res=line.nodes, start=line.start, fields=_fields(row, line, oddities, where),
                  oddities=tuple(oddities))
