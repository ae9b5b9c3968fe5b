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

from batio.errors import InputError
from batio.importers.common import Record, Tally, TraceClock, as_number
from batio.inputs.workload import DEFAULT_STORAGE_LABEL

REQUIRED = ("id", "submissionTime", "startTime", "waitingTimeSeconds", "runtimeSeconds", "walltimeSeconds",
            "nodesUsed", "readBytes", "writtenBytes")
TIMES = ("readTimeSeconds", "writeTimeSeconds", "metaTimeSeconds")
RUN_COLUMNS = ("week", "job_id", "nprocs", "dStartTime", "dEndTime")


def _date(text, where, column):
    """Seconds since 1970 of a local date string (read as UTC: only differences matter),
    or None when the cell is not a date (e.g. a bare number)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        try:
            float(text)
        except ValueError:
            raise InputError(where, f"{text!r} is not a date such as 2022-01-15 01:01:03", field=column) from None
        return None
    return moment.replace(tzinfo=UTC).timestamp() if moment.tzinfo is None else moment.timestamp()


def _number(row, column, where, *, optional=False, signed=False):
    text = (row.get(column) or "").strip()
    if not text:
        if optional:
            return None
        raise InputError(where, "empty value", field=column)
    try:
        value = float(text)
    except ValueError:
        raise InputError(where, f"{text!r} is not a number", field=column) from None
    if not math.isfinite(value) or (value < 0 and not signed):
        raise InputError(where, f"must be a finite number >= 0, got {text!r}", field=column)
    return value


def _rows(path, required):
    """(header, [(line number, row dict)]) of a CSV file, checked for its required columns
    and for rows with as many fields as the header."""
    try:
        with open(path, newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, [])
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
    header, rows = _rows(path, RUN_COLUMNS)
    if not any(week is None or row["week"] == week for _, row in rows):
        logging.getLogger(__name__).warning(
            "%s: no Darshan run%s: every job's launches are taken as running at once", path,
            f" of week {week} ({len(rows)} of other weeks)" if rows else " (a header only)")
    intervals, other_weeks = {}, 0
    for line, row in rows:
        where = f"{path}, line {line}"
        if week is not None and row["week"] != week:
            other_weeks += 1
            continue
        start, end = _number(row, "dStartTime", where), _number(row, "dEndTime", where)
        if end < start:
            raise InputError(where, f"ends ({end:g}) before it starts ({start:g})", field="dEndTime")
        intervals.setdefault(row["job_id"].strip(), []).append((start, end + 1))  # Darshan's runtime = end - start + 1
    runs = {}
    for job_id, spans in intervals.items():
        spans.sort()
        union, reach = 0.0, -math.inf
        for start, end in spans:
            union += max(0.0, end - max(start, reach))
            reach = max(reach, end)
        runs[job_id] = (len(spans), sum(end - start for start, end in spans) / union)
    return runs, other_weeks


def read(path, *, week=None, nodes=None, runs=None):
    """(records, tally, info, clock, machine nodes) of a joined job + I/O CSV; each
    record's ``fields`` hold the job's recorded timings and measured I/O (``job_io``)."""
    header, rows = _rows(path, REQUIRED)
    weeks = sorted({row.get("week", "") for _, row in rows}) if "week" in header else []
    if week is None and len(weeks) > 1:
        raise InputError(path, f"holds {len(weeks)} weeks ({', '.join(weeks)}): choose one with --week",
                         field="week")
    if week is not None and week not in weeks:
        raise InputError("--week", f"{week!r} is not a week of {path} (weeks: {', '.join(weeks) or 'none'})")
    launches, other_run_weeks = read_runs(runs, week) if runs else ({}, 0)
    tally, records, seen = Tally(), [], set()
    for line, row in rows:
        where = f"{path}, line {line}"
        if week is not None and row["week"] != week:
            tally.add("other_week", line)
            continue
        job_id = row["id"].strip()
        if not job_id or "!" in job_id:
            raise InputError(where, "a job id is not empty and has no '!' (Batsim's workload separator)", field="id")
        submit = _date(row["submissionTime"], where, "submissionTime")
        if submit is None:
            raise InputError(where, f"{row['submissionTime']!r} is not a date", field="submissionTime")
        runtime, res = _number(row, "runtimeSeconds", where), _number(row, "nodesUsed", where)
        wait, walltime = _number(row, "waitingTimeSeconds", where), _number(row, "walltimeSeconds", where)
        if job_id in seen:
            tally.add("duplicate_id", line)
            continue
        if runtime <= 0:
            tally.add("no_run_time", line)
            continue
        if res < 1 or not res.is_integer():
            tally.add("no_whole_nodes", line)
            continue
        seen.add(job_id)
        oddities = []
        start = _date(row["startTime"], where, "startTime")
        if start is None:  # not a date (Blue Waters' rows): the recorded wait says when it started
            start, oddities = submit + wait, ["start_from_wait"]
        elif start < submit:
            raise InputError(where, "starts before its submission", field="startTime")
        if walltime < runtime:  # the batch system let it run past its limit: the replay must too
            walltime, oddities = runtime, oddities + ["ran_past_walltime"]
        io, odd = job_io(row, where, runtime, launches.get(job_id))
        records.append(Record(line=line, id=int(job_id) if job_id.isdigit() else job_id, submit=submit,
                              runtime=runtime, walltime=walltime if walltime > 0 else -1, res=int(res), start=start,
                              fields={"recorded_start": start, "recorded_end": start + runtime, **io},
                              oddities=tuple(oddities + odd)))
    info = {"format": "jobsio", "file": str(path), "records": len(rows), "week": week or (weeks[0] if weeks else None)}
    if runs:
        matched = sum(str(record.id) in launches for record in records)
        info["darshan_runs"] = {"file": str(runs), "jobs_with_runs": matched, "other_weeks": other_run_weeks,
                                "jobs_not_imported": len(launches) - matched}
    return records, tally, info, TraceClock(epoch=datetime(1970, 1, 1, tzinfo=UTC), unzoned=True), nodes


def job_io(row, where, runtime, launches):
    """(job fields, oddities) of a row's I/O: bytes, and the per-rank read, write and
    metadata seconds when the ranks are known (docs/formats.md)."""
    read_bytes, written = _number(row, "readBytes", where), _number(row, "writtenBytes", where)
    fields = {"read_bytes": as_number(read_bytes), "written_bytes": as_number(written)}
    nprocs = _number(row, "sum_nprocs", where, optional=True)
    times = [_number(row, column, where, optional=True, signed=True) for column in TIMES]
    if not nprocs or any(value is None for value in times):
        return fields, ["io_time_unknown"]
    if any(value < 0 for value in times):  # Darshan's -1: a time it did not record
        return fields, ["io_time_unknown", "negative_io_time"]
    # Ranks doing I/O at once: a launch's mean ranks times the launches running at once
    # (darshan_runs.csv); without it every launch is taken as running at once.
    count = _number(row, "runsCount", where, optional=True) or 1
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
        delay = as_number(round(runtime - job.get("measured_transfer_s", 0.0), 6))
        profiles[f"{job['id']}_rest"] = {"type": "delay", "delay": delay}
        seq.insert(1 if job["read_bytes"] else 0, f"{job['id']}_rest")
        profiles[f"{job['id']}"] = {"type": "composed", "seq": seq}
        job["profile"] = f"{job['id']}"
    workload["profiles"] = profiles
    return workload
