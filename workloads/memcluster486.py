"""The 486-node memory-cluster trace of paper 004 (Section 5.1, Fig. 1) as a Batsim workload.

Design notes (the model, its sources, the choices made): this folder's README.md, section memcluster486.py.
"""

import argparse
from dataclasses import dataclass
import math
from pathlib import Path
import sys

from batio.errors import BatioError, InputError
from batio.importers.common import dumps  # noqa: F401  (the module's writer, as before)

NB_NODES = 486
CORES_PER_NODE = 20
BYTES_PER_GB = 10 ** 9
HOUR = 3600
CATEGORIES = (-2, -1, 0, 1, 2)

# The trace's fields, in line order, and how each is read.
FIELDS = {"id": int, "subtime": int, "delay": int, "walltime": int, "cores": int, "user": str, "data": int,
          "data_size": float, "workload": int, "start_time_from_history": int, "start_node_from_history": int}


@dataclass(frozen=True)
class TraceJob:
    line: int
    id: int
    subtime: int
    delay: int
    walltime: int
    cores: int
    user: str
    data: int
    data_size: float
    workload: int
    start_time_from_history: int
    start_node_from_history: int

    @property
    def history_end(self):
        """When the real scheduler's run of the job ended (killed at its walltime)."""
        return self.start_time_from_history + min(self.delay, self.walltime)


def _value(text, kind, where, field):
    try:
        value = kind(text)
    except ValueError:
        raise InputError(where, f"{text!r} is not {'an integer' if kind is int else 'a number'}",
                         field=field) from None
    if kind is float and not math.isfinite(value):
        raise InputError(where, f"{text!r} is not a finite number", field=field)
    return value


def parse_line(text, source, number):
    """The TraceJob of one trace line ``{ key: value ... }``, or None for a blank line."""
    where = f"{source}, line {number}"
    tokens = text.split()
    if not tokens:
        return None
    if tokens[0] != "{" or tokens[-1] != "}":
        raise InputError(where, "a job line is '{ id: ... start_node_from_history: ... }' between braces")
    pairs = tokens[1:-1]
    values = {}
    for position in range(0, len(pairs), 2):
        key = pairs[position]
        if not key.endswith(":"):
            raise InputError(where, f"expected 'name:' where {key!r} is", field=key)
        field = key[:-1]
        if field not in FIELDS:
            raise InputError(where, f"unknown field (known: {', '.join(FIELDS)})", field=field)
        if field in values:
            raise InputError(where, "given twice", field=field)
        if position + 1 == len(pairs) or pairs[position + 1].endswith(":"):
            raise InputError(where, "has no value", field=field)
        values[field] = _value(pairs[position + 1], FIELDS[field], where, field)
    for field in FIELDS:
        if field not in values:
            raise InputError(where, "missing", field=field)
    job = TraceJob(line=number, **values)
    _check_ranges(job, where)
    return job


def _check_ranges(job, where):
    if not 1 <= job.cores <= CORES_PER_NODE:
        raise InputError(where, f"{job.cores} cores: a job runs on 1 to {CORES_PER_NODE} cores of one node",
                         field="cores")
    if job.workload not in CATEGORIES:
        raise InputError(where, f"category {job.workload} is none of {CATEGORIES}", field="workload")
    for field in ("subtime", "delay", "start_time_from_history"):
        if getattr(job, field) < 0:
            raise InputError(where, f"{getattr(job, field)} is negative", field=field)
    if job.walltime <= 0:
        raise InputError(where, f"walltime {job.walltime} is not > 0", field="walltime")
    if job.data_size <= 0:
        raise InputError(where, f"file size {job.data_size} GB is not > 0", field="data_size")
    if job.start_node_from_history < 1:
        raise InputError(where, f"history node {job.start_node_from_history}: the trace numbers nodes from 1",
                         field="start_node_from_history")


def read_trace(path):
    """Every job of a trace file, checked line by line and for consistency across lines."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise InputError(path, f"cannot read the trace: {error.strerror}") from None
    lines_of_id: dict[str, int]
    size_of_file: dict[str, TraceJob]
    jobs, lines_of_id, size_of_file = [], {}, {}
    for number, line in enumerate(text.splitlines(), start=1):
        job = parse_line(line, path, number)
        if job is None:
            continue
        where = f"{path}, line {number}"
        if job.id in lines_of_id:
            raise InputError(where, f"job id {job.id} already on line {lines_of_id[job.id]}", field="id")
        lines_of_id[job.id] = number
        first = size_of_file.setdefault(job.data, job)
        if first.data_size != job.data_size:
            raise InputError(where, f"file {job.data} is {job.data_size} GB here but {first.data_size} GB "
                                    f"on line {first.line}", field="data_size")
        jobs.append(job)
    if not jobs:
        raise InputError(path, "no job in the trace")
    return jobs


def history_node(job):
    """The host id the authors replay a category -2 job on."""
    return (job.start_node_from_history - 1) % NB_NODES


@dataclass(frozen=True)
class Slice:
    """Windows in hours: the evaluated one starts ``start`` hours into the evaluated day."""
    start: float
    warmup: float
    evaluated: float
    tail: float

    @classmethod
    def parse(cls, text):
        try:
            hours = [float(part) for part in text.split(",")]
        except ValueError:
            hours = []
        if len(hours) != 4 or not all(math.isfinite(h) for h in hours) or min(hours) < 0 or hours[2] == 0:
            raise InputError("--slice", f"expected START,WARMUP,EVALUATED,TAIL in hours (>= 0, EVALUATED > 0), "
                                        f"got {text!r}")
        return cls(*hours)


def categories_at(jobs, cut, evaluated_start, evaluated_end, tail_end):
    """(job, category) of the jobs a cut keeps, categories as Fig. 1 builds them around a day."""
    kept = []
    for job in jobs:
        if job.subtime < cut:
            if job.start_time_from_history < cut < job.history_end:
                kept.append((job, -2))
            elif job.start_time_from_history >= cut:
                kept.append((job, -1))
        elif job.subtime < evaluated_start:
            kept.append((job, 0))
        elif job.subtime < evaluated_end:
            kept.append((job, 1))
        elif job.subtime < tail_end:
            kept.append((job, 2))
    return kept


def _first_subtime(jobs, category, path):
    subtimes = [job.subtime for job in jobs if job.workload == category]
    if not subtimes:
        raise InputError(path, f"no job of category {category}: cannot place the day of Fig. 1", field="workload")
    return min(subtimes)


def _seconds(hours):
    return round(hours * HOUR)


def _selection(jobs, path, window):
    """(cut, evaluated window [start, end), [(job, category)]) of the whole trace or of a slice."""
    day0 = _first_subtime(jobs, 0, path)
    if window is None:
        return day0, (_first_subtime(jobs, 1, path), _first_subtime(jobs, 2, path)), \
            [(job, job.workload) for job in jobs]
    evaluated_start = _first_subtime(jobs, 1, path) + _seconds(window.start)
    cut = evaluated_start - _seconds(window.warmup)
    if cut < day0:
        raise InputError("--slice", f"the warm-up starts {(day0 - cut) / HOUR:g} h before the first day of the "
                                    "trace, whose earlier jobs are not all in it")
    evaluated_end = evaluated_start + _seconds(window.evaluated)
    selected = categories_at(jobs, cut, evaluated_start, evaluated_end, evaluated_end + _seconds(window.tail))
    if not any(category == 1 for _, category in selected):
        raise InputError("--slice", "no job of the trace is submitted in the evaluated window")
    return cut, (evaluated_start, evaluated_end), selected


def history_starts_without_free_cores(selected):
    """How many category -2 jobs start on a node where -2 jobs already hold more than 20 cores with them."""
    running_on: dict[int, list[TraceJob]] = {}
    overcommits = 0
    for job, _ in sorted(((job, c) for job, c in selected if c == -2), key=lambda jc: jc[0].start_time_from_history):
        node = history_node(job)
        running = [other for other in running_on.get(node, []) if other.history_end > job.start_time_from_history]
        running.append(job)
        running_on[node] = running
        overcommits += sum(other.cores for other in running) > CORES_PER_NODE
    return overcommits


RUNNING_AT_CUT = ("replay", "restart")


def convert(trace_path, window=None, running_at_cut="replay"):
    """The Batsim workload (a dict) of the trace at ``trace_path``, whole or
    sliced (a ``Slice``); ``running_at_cut`` is how category -2 jobs enter it
    (README.md)."""
    if running_at_cut not in RUNNING_AT_CUT:
        raise InputError("running_at_cut", f"must be one of {', '.join(RUNNING_AT_CUT)}, got {running_at_cut!r}")
    jobs = read_trace(trace_path)
    cut, (evaluated_start, evaluated_end), selected = _selection(jobs, trace_path, window)
    if running_at_cut == "restart":
        # The authors' t0: the first category-0 submission (the cut itself for the whole trace).
        cut = min(job.subtime for job, category in selected if category == 0)
        origin = cut
    else:
        origin = min([cut] + [job.start_time_from_history for job, category in selected if category == -2])
    oddities = {"zero_duration_raised_to_1s": 0, "duration_above_walltime": 0,
                "queued_jobs_started_before_cut": 0, "running_jobs_ended_before_cut": 0,
                "history_starts_without_free_cores": history_starts_without_free_cores(selected)}
    batsim_jobs, profiles = [], {}
    for job, category in selected:
        duration, walltime = job.delay, job.walltime
        if duration == 0:
            duration = 1
            oddities["zero_duration_raised_to_1s"] += 1
        oddities["duration_above_walltime"] += job.delay > job.walltime
        if category == -2 and running_at_cut == "restart":
            subtime = cut
            already_ran = cut - job.start_time_from_history
            duration, walltime = max(1, duration - already_ran), max(1, walltime - already_ran)
        elif category == -2:
            subtime = job.start_time_from_history
            oddities["running_jobs_ended_before_cut"] += job.history_end <= cut
        elif category == -1:
            subtime = cut
            oddities["queued_jobs_started_before_cut"] += job.start_time_from_history < cut
        else:
            subtime = job.subtime
        profile = f"delay{duration}"
        profiles[profile] = {"type": "delay", "delay": duration}
        entry = {"id": job.id, "subtime": subtime - origin, "walltime": walltime, "res": 1, "profile": profile,
                 "cores": job.cores, "file": f"f{job.data}", "file_bytes": round(job.data_size * BYTES_PER_GB),
                 "user": job.user, "category": category}
        if category == -2:
            entry["history_node"] = history_node(job)
            entry["history_start"] = job.start_time_from_history - origin
        batsim_jobs.append(entry)
    batsim_jobs.sort(key=lambda entry: (entry["subtime"], entry["id"]))
    counts = {str(category): sum(entry["category"] == category for entry in batsim_jobs) for category in CATEGORIES}
    return {
        "nb_res": NB_NODES,
        "jobs": batsim_jobs,
        "profiles": dict(sorted(profiles.items(), key=lambda item: item[1]["delay"])),
        "trace": {"file": Path(trace_path).name, "origin": origin, "cut": cut - origin,
                  "evaluated_window": [evaluated_start - origin, evaluated_end - origin],
                  "slice_hours": None if window is None else vars(window), "running_at_cut": running_at_cut,
                  "jobs_per_category": counts, "oddities": oddities},
    }


def sweep_workload(seed, trace, slice=None, running_at_cut="replay"):
    """``convert`` for ``batio sweep`` (``generator: batio.workloads.memcluster486:sweep_workload``,
    ``args: {trace: PATH, slice: "12,2,1,1", running_at_cut: restart}``): a trace has no seed; the
    sweep's is ignored."""
    return convert(trace, None if slice is None else Slice.parse(slice), running_at_cut)


def trace_lines(trace_path, window=None):
    """The jobs a conversion keeps, in the trace's own format with their
    categories (``workload:``) as the conversion derives them: the input of
    the authors' simulator for the same slice, to compare both."""
    jobs = read_trace(trace_path)
    _, _, selected = _selection(jobs, trace_path, window)
    lines = []
    for job, category in selected:
        fields = {name: getattr(job, name) for name in FIELDS}
        fields["workload"] = category
        fields["data_size"] = f"{job.data_size:.6f}"
        lines.append("{ " + " ".join(f"{name}: {value}" for name, value in fields.items()) + " }\n")
    return "".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m batio.workloads.memcluster486",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="the trace file, e.g. 2022-09-10_V10000_anonymous.txt")
    parser.add_argument("--slice", metavar="START,WARMUP,EVALUATED,TAIL",
                        help="hours: keep a warm-up, an evaluated window starting START hours into the "
                             "evaluated day, and a tail (default: the whole trace)")
    parser.add_argument("--running-at-cut", choices=RUNNING_AT_CUT, default="replay",
                        help="category -2 jobs: replay them from their history start (default), or restart "
                             "them at the cut with what is left of their run, as the authors' simulator does")
    parser.add_argument("--trace-format", action="store_true",
                        help="write the kept jobs in the trace's own format with their categories "
                             "(the authors' simulator's input) instead of a Batsim workload")
    args = parser.parse_args(argv)
    try:
        window = None if args.slice is None else Slice.parse(args.slice)
        if args.trace_format:
            sys.stdout.write(trace_lines(args.trace, window))
            return 0
        workload = convert(args.trace, window, args.running_at_cut)
    except BatioError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(dumps(workload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
