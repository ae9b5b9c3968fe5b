"""Joined job + I/O records: a batch system's accounting with each job's Darshan totals, one CSV row a job.

The format is that of the Theta 2022 / Blue Waters 2019 records the Fives
authors published (``jobs.csv``), which a centre can produce by joining its
scheduler's accounting with its Darshan logs; ``darshan_runs.csv`` (one row
per Darshan log) may come with it. docs/formats.md ("Joined job + I/O
records") states the columns and how bytes and measured times become
profile phases; ``read`` and ``job_io`` follow it.
"""

import csv
from datetime import UTC, datetime
import logging
import math

from batio.errors import InputError, listed
from batio.importers.common import LEAST_DELAY_S, Record, Tally, TraceClock, as_number
from batio.inputs.workload import DEFAULT_STORAGE_LABEL
from batio.readings import (
    MAX_BYTES,
    MAX_COUNT,
    MAX_TRACE_SECONDS,
    in_order,
    is_decimal,
    trace_date,
    trace_id,
    trace_label,
    trace_number,
)

REQUIRED = ("id", "submissionTime", "startTime", "waitingTimeSeconds", "runtimeSeconds", "walltimeSeconds",
            "nodesUsed", "readBytes", "writtenBytes")
TIMES = ("readTimeSeconds", "writeTimeSeconds", "metaTimeSeconds")
OPTIONAL = ("week", "sum_nprocs", *TIMES, "runsCount")
RUN_COLUMNS = ("week", "job_id", "nprocs", "dStartTime", "dEndTime")


def _date(text, where, column):
    """Seconds since 1970 of a local date string (read as UTC: only differences matter),
    or None when the cell is a bare number (Blue Waters' start times)."""
    return None if is_decimal(text) else trace_date(text, where, column, example="2022-01-15 01:01:03")


def _number(row, column, where, *, high, low=0.0, optional=False):
    """A cell's number in ASCII decimal digits within [low, high] (None for an empty optional cell)."""
    text = (row.get(column) or "").strip()
    if not text:
        if optional:
            return None
        raise InputError(where, "empty value", field=column)
    return trace_number(text, where, column, low=low, high=high)


def _rows(path, required, read):
    """(header, [(line number, row dict)]) of a CSV file, checked for its required columns, for
    columns it reads (``read``) given once, and for rows with as many fields as the header."""
    try:
        with open(path, newline="") as handle:
            reader = csv.reader(handle)
            header = [name.strip() for name in next(reader, [])]
            repeated = sorted({name for name in header if header.count(name) > 1 and name in read})
            if repeated:  # the last would silently win
                raise InputError(f"{path}, line 1", "column given twice", field=repeated[0])
            missing = [name for name in required if name not in header]
            if missing:
                raise InputError(f"{path}, line 1", f"the header lacks {', '.join(missing)}", field=missing[0])
            rows = []
            for fields in reader:
                if not fields:
                    continue
                if len(fields) != len(header):
                    raise InputError(f"{path}, line {reader.line_num}", f"{len(fields)} fields for the header's "
                                     f"{len(header)}", field=header[min(len(fields), len(header) - 1)])
                rows.append((reader.line_num, dict(zip(header, fields))))
    except OSError as error:
        raise InputError(path, f"cannot read the file: {error.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(path, "not a UTF-8 text file") from None
    except csv.Error as error:
        raise InputError(path, f"not a CSV file the csv module can read ({error})") from None
    return header, rows


def read_runs(path, week):
    """{job id: (launches, concurrency)} from ``darshan_runs.csv``: concurrency is the
    launches' summed durations over the length of their union (1: one after the
    other; k: k at once), plus the count of rows of other weeks. A file with no
    run of the week is taken, with a warning line."""
    header, rows = _rows(path, RUN_COLUMNS, RUN_COLUMNS)
    if not any(week is None or row["week"].strip() == week for _, row in rows):
        logging.getLogger(__name__).warning(
            "%s: no Darshan run%s: every job's launches are taken as running at once", path,
            f" of week {week} ({len(rows)} of other weeks)" if rows else " (a header only)")
    intervals: dict[str, list[tuple[float, float]]]
    intervals, other_weeks = {}, 0
    for line, row in rows:
        where = f"{path}, line {line}"
        if week is not None and row["week"].strip() != week:
            other_weeks += 1
            continue
        job_id = trace_id(row["job_id"], where, "job_id")
        ranks = _number(row, "nprocs", where, low=1, high=MAX_COUNT)
        if not ranks.is_integer():
            raise InputError(where, f"{row['nprocs'].strip()!r} is not a whole number of processes", field="nprocs")
        start = _number(row, "dStartTime", where, high=MAX_TRACE_SECONDS)
        end = _number(row, "dEndTime", where, high=MAX_TRACE_SECONDS)
        in_order(where, start, end, ("dStartTime", "dEndTime"))
        intervals.setdefault(job_id, []).append((start, end + 1))  # Darshan's runtime = end - start + 1
    runs = {}
    for job_id, spans in intervals.items():
        spans.sort()
        union, reach = 0.0, -math.inf
        for start, end in spans:
            union += max(0.0, end - max(start, reach))
            reach = max(reach, end)
        runs[job_id] = (len(spans), sum(end - start for start, end in spans) / union)
    return runs, other_weeks


def _weeks(path, header, rows, week):
    """The week to keep (None: the file has one, or no week column), checked as a label."""
    if week is not None:
        week = trace_label(week, "--week", None, "week")
    if "week" not in header:
        if week is not None:
            raise InputError("--week", f"{path} has no week column")
        return None, []
    for line, row in rows:
        trace_label(row["week"].strip(), f"{path}, line {line}", "week", "week")
    weeks = sorted({row["week"].strip() for _, row in rows})
    if week is None and len(weeks) > 1:
        raise InputError(path, f"holds {len(weeks)} weeks ({listed(weeks)}): choose one with --week", field="week")
    if week is not None and week not in weeks:
        raise InputError("--week", f"{week!r} is not a week of {path} (weeks: {listed(weeks) or 'none'})")
    return week, weeks


def read(path, *, week=None, nodes=None, runs=None):
    """(records, tally, info, clock, machine nodes) of a joined job + I/O CSV; each
    record's ``fields`` hold the job's recorded timings and measured I/O (``job_io``)."""
    header, rows = _rows(path, REQUIRED, (*REQUIRED, *OPTIONAL))
    week, weeks = _weeks(path, header, rows, week)
    launches, other_run_weeks = read_runs(runs, week) if runs else ({}, 0)
    seen: set[str]
    tally, records, seen = Tally(), [], set()
    for line, row in rows:
        where = f"{path}, line {line}"
        if week is not None and row["week"].strip() != week:
            tally.add("other_week", line)
            continue
        record, reason = _record(row, line, where, launches, seen)
        if reason:
            tally.add(reason, line)
        else:
            seen.add(record.id)
            records.append(record)
    info = {"format": "jobsio", "file": str(path), "records": len(rows), "week": week or (weeks[0] if weeks else None)}
    if runs:
        matched = sum(record.id in launches for record in records)
        info["darshan_runs"] = {"file": str(runs), "jobs_with_runs": matched, "other_weeks": other_run_weeks,
                                "jobs_not_imported": len(launches) - matched}
    return records, tally, info, TraceClock(epoch=datetime(1970, 1, 1, tzinfo=UTC), unzoned=True), nodes


def _record(row, line, where, launches, seen):
    """(the Record of a row, None) or (None, why it is skipped); every value is checked (a bad one
    is an error even on a row then skipped). ``seen``: the ids kept ('007' and '7' are one id)."""
    job_id = trace_id(row["id"], where, "id")
    submit = _date(row["submissionTime"], where, "submissionTime")
    if submit is None:
        raise InputError(where, f"{row['submissionTime']!r} is not a date", field="submissionTime")
    runtime = _number(row, "runtimeSeconds", where, high=MAX_TRACE_SECONDS)
    res = _number(row, "nodesUsed", where, high=MAX_COUNT)
    wait = _number(row, "waitingTimeSeconds", where, high=MAX_TRACE_SECONDS)
    walltime = _number(row, "walltimeSeconds", where, high=MAX_TRACE_SECONDS)
    oddities = []
    start = _date(row["startTime"], where, "startTime")
    if start is None:  # not a date (Blue Waters' rows): the recorded wait says when it started
        start, oddities = submit + wait, ["start_from_wait"]
    in_order(where, submit, start, ("submissionTime", "startTime"))
    if walltime < runtime:  # the batch system let it run past its limit: the replay must too
        walltime, oddities = runtime, oddities + ["ran_past_walltime"]
    reason = ("duplicate_id" if job_id in seen else "no_run_time" if runtime <= 0 else
              "no_whole_nodes" if res < 1 or not res.is_integer() else None)
    if reason:
        return None, reason
    io, odd = job_io(row, where, runtime, launches.get(job_id))
    return Record(line=line, id=job_id, submit=submit, runtime=runtime, walltime=walltime if walltime > 0 else -1,
                  res=int(res), start=start, fields={"recorded_start": start, "recorded_end": start + runtime, **io},
                  oddities=tuple(oddities + odd)), None


def job_io(row, where, runtime, launches):
    """(job fields, oddities) of a row's I/O: bytes, and the per-rank read, write and
    metadata seconds when the ranks are known (docs/formats.md)."""
    read_bytes = _number(row, "readBytes", where, high=MAX_BYTES)
    written = _number(row, "writtenBytes", where, high=MAX_BYTES)
    fields = {"read_bytes": as_number(read_bytes), "written_bytes": as_number(written)}
    nprocs = _number(row, "sum_nprocs", where, high=MAX_COUNT, optional=True)
    # Darshan's times summed over ranks: a rank's seconds times the ranks at most; -1 when unrecorded.
    times = [_number(row, column, where, low=-MAX_TRACE_SECONDS, high=MAX_TRACE_SECONDS * MAX_COUNT, optional=True)
             for column in TIMES]
    if not nprocs or any(value is None for value in times):
        return fields, ["io_time_unknown"]
    if any(value < 0 for value in times):  # Darshan's -1: a time it did not record
        return fields, ["io_time_unknown", "negative_io_time"]
    # Ranks doing I/O at once: a launch's mean ranks times the launches running at once
    # (darshan_runs.csv); without it every launch is taken as running at once.
    count = _number(row, "runsCount", where, high=MAX_COUNT, optional=True) or 1
    oddities = []
    if launches is not None:
        if launches[0] != count:
            oddities.append("runs_count_differs")
        count, concurrency = launches
        ranks = nprocs / count * concurrency
    else:
        ranks = nprocs
    read_s, write_s, meta_s = (value / ranks for value in times)
    if read_s + write_s + meta_s > runtime:  # per-rank I/O longer than the job: scaled to fit
        scale = runtime / (read_s + write_s + meta_s)
        read_s, write_s, meta_s = read_s * scale, write_s * scale, meta_s * scale
        oddities.append("io_time_above_run_time")
    io_s = read_s + write_s + meta_s
    # The time of the directions that move bytes is what their transfers stand for (and what
    # `batio validate` checks); a read or write time without bytes stays in the delay.
    transfer_s = (read_s if read_bytes else 0.0) + (write_s if written else 0.0)
    fields.update({"nprocs": int(nprocs), "io_ranks": round(ranks, 3), "measured_read_s": round(read_s, 6),
                   "measured_write_s": round(write_s, 6), "measured_meta_s": round(meta_s, 6),
                   "measured_transfer_s": round(transfer_s, 6),
                   # EquilibrIO's two numbers (schedulers/equilibrio): I/O share of the run time, and GB/s in I/O
                   "io_walltime_share": round(io_s / runtime, 9),
                   "average_bw": round((read_bytes + written) / io_s / 1e9, 9) if io_s > 0 else 0.0})
    return fields, oddities


def give_phases(workload):
    """Replace each job's delay profile by its I/O phases (in place): read, then the
    rest of the run time as a delay, then write; recorded times made relative to
    the workload's time 0."""
    origin = workload["trace"]["origin"]
    profiles = {}
    for job in workload["jobs"]:
        for key in ("recorded_start", "recorded_end"):
            job[key] = as_number(round(job[key] - origin, 6))
        runtime = workload["profiles"][job["profile"]]["delay"]
        seq = []
        for direction, key in (("read", "read_bytes"), ("write", "written_bytes")):
            if job[key]:
                name = f"{job['id']}_{direction}"
                profiles[name] = {"type": "parallel_homogeneous_pfs", "storage": DEFAULT_STORAGE_LABEL,
                                  f"bytes_to_{direction}": max(1, round(job[key] / job["res"]))}
                seq.append(name)
        # A job whose I/O fills its run time keeps the least delay `batio run` takes.
        delay = as_number(max(LEAST_DELAY_S, round(runtime - job.get("measured_transfer_s", 0.0), 6)))
        profiles[f"{job['id']}_rest"] = {"type": "delay", "delay": delay}
        seq.insert(1 if job["read_bytes"] else 0, f"{job['id']}_rest")
        profiles[f"{job['id']}"] = {"type": "composed", "seq": seq}
        job["profile"] = f"{job['id']}"
    workload["profiles"] = profiles
    return workload
