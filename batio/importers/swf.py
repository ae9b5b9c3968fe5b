"""The Standard Workload Format (SWF) of the Parallel Workloads Archive.

Format (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): header
lines start with ';' (``; MaxProcs: 100``); every other non-blank line is a
job of 18 whitespace-separated numbers, -1 where a value is missing. The
mapping to Batsim, the archive's cleaning conventions and every skip reason
are in docs/formats.md ("Importing a trace"); ``read`` follows them.
"""

from collections import Counter
from datetime import UTC, datetime, tzinfo
import logging
import math
from pathlib import Path
import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from batio.errors import InputError
from batio.importers.common import Record, Tally, TraceClock, read_text
from batio.readings import MAX_TRACE_SECONDS, trace_number

log = logging.getLogger(__name__)

# The 18 fields in line order: (name used in messages and job fields, job field or None).
FIELDS = (
    ("job_number", None), ("submit_time", None), ("wait_time", "wait_time"), ("run_time", None),
    ("allocated_processors", "allocated_processors"), ("average_cpu_time", "average_cpu_time"),
    ("used_memory", "used_memory"), ("requested_processors", "requested_processors"),
    ("requested_time", "requested_time"), ("requested_memory", "requested_memory"), ("status", "status"),
    ("user_id", "user"), ("group_id", "group"), ("executable_number", "executable"),
    ("queue_number", "queue"), ("partition_number", "partition"), ("preceding_job_number", "preceding_job"),
    ("think_time", "think_time"),
)
NAMES = [name for name, _ in FIELDS]
MISSING = -1
COMPLETED, FAILED, CANCELLED = 1, 0, 5
PARTIAL = (2, 3, 4)  # records of one part of a checkpointed or swapped job


def _field_name(index):
    return f"{NAMES[index]} (field {index + 1})"


_HEADER = re.compile(r"^;\s*([A-Za-z][A-Za-z0-9_]*)\s*:(?:\s+(.*))?$")


def parse_header(line, header):
    """Add '; Key: value' to header (first value of a key wins); other comment
    lines, such as continuations of a value, are ignored."""
    match = _HEADER.match(line)
    if match:
        header.setdefault(match.group(1), (match.group(2) or "").strip())


def parse_line(text, where):
    """The 18 numbers of a job line (ints where integral)."""
    tokens = text.split()
    if len(tokens) != len(FIELDS):
        raise InputError(where, f"an SWF job line has {len(FIELDS)} fields, this one has {len(tokens)}",
                         field=_field_name(min(len(tokens), len(FIELDS) - 1)))
    values = []
    for index, token in enumerate(tokens):
        value = trace_number(token, where, _field_name(index))
        values.append(int(value) if value.is_integer() else value)
    return values


def _header_number(header, key, path, low=-MAX_TRACE_SECONDS):
    if key not in header:
        return None
    return trace_number(header[key], f"{path}, header '; {key}'", key, low=low)


def clock_of(header, path):
    """The trace's clock: submit times count from UnixStartTime, dates in TimeZoneString's zone."""
    start = _header_number(header, "UnixStartTime", path, low=0)
    if start is None:
        return TraceClock()
    zone: tzinfo = UTC
    if header.get("TimeZoneString"):
        try:
            zone = ZoneInfo(header["TimeZoneString"])
        except (ZoneInfoNotFoundError, ValueError):
            log.warning("%s: unknown TimeZoneString %r: dates are read in UTC", path, header["TimeZoneString"])
    return TraceClock(datetime.fromtimestamp(start, UTC), zone)


def machine_nodes(header, cores_per_node, nodes, path):
    """(compute hosts, where the number comes from): --nodes, else MaxProcs / cores per node,
    else MaxNodes, else None (the largest job's)."""
    if nodes is not None:
        return nodes, "--nodes"
    procs = _header_number(header, "MaxProcs", path)
    if procs is not None and procs >= 1:
        return int(procs // cores_per_node), f"header MaxProcs {procs:g} / {cores_per_node} cores per node"
    node_count = _header_number(header, "MaxNodes", path)
    if node_count is not None and node_count >= 1:
        return int(node_count), f"header MaxNodes {node_count:g}"
    return None, None


def read(path, *, cores_per_node=1, nodes=None, keep_cancelled=False):
    """(records, tally of skipped lines, info, clock, machine nodes) of an SWF file."""
    if cores_per_node < 1:
        raise InputError("--cores-per-node", f"must be at least 1, got {cores_per_node}")
    text = read_text(path, "trace")
    header: dict[str, str]
    header, records, tally = {}, [], Tally()
    missing: Counter[str] = Counter()
    lines_of_id: dict[int, int] = {}
    read_count = 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            parse_header(stripped, header)
            continue
        where = f"{path}, line {number}"
        values = parse_line(stripped, where)
        read_count += 1
        for index, value in enumerate(values):
            missing[NAMES[index]] += value == MISSING
        record = _record(values, number, where, cores_per_node, keep_cancelled, tally)
        if record is None:
            continue
        if record.id in lines_of_id:
            raise InputError(where, f"job number {record.id} already on line {lines_of_id[record.id]}",
                             field=_field_name(0))
        lines_of_id[record.id] = number
        records.append(record)
    if not read_count:
        raise InputError(path, "no job line in the trace (an SWF job line has 18 numbers)")
    nb_nodes, nodes_from = machine_nodes(header, cores_per_node, nodes, path)
    info = {"format": "swf", "file": Path(path).name, "records": read_count, "cores_per_node": cores_per_node,
            "header": header, "missing_values": {name: missing[name] for name in NAMES if missing[name]}}
    if nodes_from:
        info["machine_nodes_from"] = nodes_from
    return records, tally, info, clock_of(header, path), nb_nodes


def _record(values, number, where, cores_per_node, keep_cancelled, tally):
    """The Record of one job line, or None when it is skipped (counted in tally under its first reason)."""
    job, submit, wait, runtime, allocated, _, _, requested, requested_time, _, status = values[:11]
    if status in PARTIAL:
        tally.add("partial_execution_record", number)
        return None
    if status == CANCELLED and not (keep_cancelled and runtime > 0):
        tally.add("cancelled", number)
        return None
    if runtime == MISSING:
        tally.add("missing_run_time", number)
        return None
    if runtime <= 0:
        tally.add("zero_or_negative_run_time", number)
        return None
    oddities = []
    if allocated >= 1:
        processors = allocated
    elif requested >= 1:
        processors = requested
        oddities.append("processors_from_request")
    else:
        tally.add("missing_processors", number)
        return None
    if submit < 0:
        raise InputError(where, f"submit time {submit} is negative", field=_field_name(1))
    if requested_time > 0:
        walltime = requested_time
        if runtime > requested_time:
            oddities.append("run_time_above_requested_time")
    else:
        # The run time itself would end the job as COMPLETED_WALLTIME_REACHED on Batsim 4.2.1 and on the
        # embedded engine (a delay equal to the walltime is a timeout): one second more.
        walltime = runtime + 1
        oddities.append("walltime_from_run_time")
    if status == CANCELLED:
        oddities.append("cancelled_kept")
    fields = {"processors": processors}
    fields.update({key: value for (_, key), value in zip(FIELDS, values) if key and value != MISSING})
    return Record(line=number, id=job, submit=submit, runtime=runtime, walltime=walltime,
                  res=math.ceil(processors / cores_per_node), start=submit + wait if wait >= 0 else None,
                  fields=fields, oddities=tuple(oddities))
