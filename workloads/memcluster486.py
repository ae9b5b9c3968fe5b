"""The 486-node memory-cluster trace of paper 004 (Section 5.1, Fig. 1) as a Batsim workload.

    python -m batio.workloads.memcluster486 TRACE [--slice START,WARMUP,EVALUATED,TAIL] > out.json

``TRACE`` is ``../shared/data/memcluster486/2022-09-10_V10000_anonymous.txt``
(its README describes the format): one job a line,
``{ id: 3 subtime: 4643237 delay: 1362 walltime: 864000 cores: 1 user: scirpmqd
data: 2 data_size: 6.400000 workload: -1 start_time_from_history: 6347449
start_node_from_history: 338 }``. The platform is
``platforms/memcluster486.xml``. The shipped slice was made with

    python -m batio.workloads.memcluster486 ../shared/data/memcluster486/2022-09-10_V10000_anonymous.txt \\
        --slice 12,2,1,1 > workloads/memcluster486_slice.json

How the authors' simulator treats the trace (facts read in
github.com/userccgrid/Locality-aware-batch-scheduling at 1f47b38, the CCGrid
version the paper's numbers come from, ``src/``):

- Time origin (``main.c``, ``main``; ``read_input_files.c``,
  ``get_first_time_day_0``): the simulation starts at t0, the subtime of the
  first category-0 job in file order, and stops when every category-1 job
  has started. Time advances in whole seconds; the scheduler is called in
  every second where a job ended (whole queue) or was submitted (new jobs).
- Category -1 (``main.c``): these jobs sit in the job list with
  subtime < t0, so all become available at t0, in file (= subtime) order.
- Category -2 (``read_input_files.c``, ``read_workload``; ``scheduler.c``,
  ``get_state_before_day_0_scheduler``): kept aside, then placed one by
  one, in order of history start, on node index
  ``(start_node_from_history - 1) % 486`` (the trace numbers nodes 1..1250
  though the cluster has 486), with delay and walltime shortened by the
  time they already ran since ``start_time_from_history`` (at least 1 s),
  at the earliest time >= t0 when that node has the cores
  (``basic_functions.c``,
  ``schedule_job_specific_node_at_earliest_available_time``). Like every
  job, they load their file when they start (``start_jobs`` calls
  ``add_data_in_node``), so all their files are loaded again at t0. Those
  that do not fit at t0 (904 of 2,041 on 2022-09-10) stay at the head of the
  queue and are placed again by the policy under test at the first
  re-plan.
- A job holds its cores for min(delay + load overhead, walltime): the
  walltime covers the load (``start_jobs``).
- What is evaluated (``print_functions.c``, ``to_print_job_csv``): category-1
  jobs only, with the reference time delay + data_size / 0.1 of the stretch.
- ``read_workload`` reads 24 whitespace-separated tokens per job and does
  not check them; the 486 nodes are ``inputs/clusters/*.txt``.

What this converter does (the issue-8 contract; times in seconds):

- Category -2 jobs enter in one of two ways (``--running-at-cut``):
  ``replay`` (default, batio's choice) or ``restart`` (the authors').
  Either way they carry ``history_node`` = ``(start_node_from_history - 1)
  % 486``, the authors' node, and ``history_start``, their history start
  in simulated time, which orders them at the head of the queue.
- ``restart``: simulated time 0 is t0 above (the first category-0
  submission, which is the cut for the whole trace); -2 jobs are submitted
  at 0 with what is left of their delay and walltime (at least 1 s each),
  and load their file when they start, as in the authors' simulator.
- ``replay``: simulated time 0 is the trace time ``trace.origin``: the
  earliest history start of a category -2 job (or the cut, if earlier). The
  cut (t0 above, or a slice's start) is at simulated time ``trace.cut``.
  Category -2 jobs are REPLAYED rather than shortened: subtime = their
  history start, with their whole delay and walltime. Started
  when submitted, they have run at the cut exactly as long as in the
  authors' model (the load of their file, if the scheduler makes one,
  delays them by up to 1,280 s), and their files are then in memory
  instead of being loaded again at the cut.
  The trace uses 604 node numbers, within 1-484, 1001-1072 and 1179-1250:
  no history node holds more than 20 cores of -2 jobs at t0, but through
  the modulo 134 hosts do (up to 36 cores). The scheduler must then wait
  for free cores on that node, as the authors' simulator does; the -2 jobs
  that start where earlier -2 jobs leave too few cores are counted in
  ``trace.oddities.history_starts_without_free_cores``.
- Category -1 jobs are submitted at the cut, as in the authors'
  simulator; jobs sharing a subtime are listed by id, which is trace order.
- Categories 0, 1, 2 keep their subtimes. Metrics are computed on
  category 1 only; ``trace.evaluated_window`` is [first category-1
  subtime, first category-2 subtime) in simulated time, and
  ``trace.jobs_per_category`` counts the jobs.
- Each job: ``id`` (trace id), ``subtime``, ``walltime``, ``res`` 1,
  ``profile`` (a ``delay`` profile of the actual duration, shared by all
  jobs of that duration), ``cores``, ``file`` ("f" + data id),
  ``file_bytes`` (data_size GB x 1e9), ``user``, ``category``.
- Oddities, decided and counted in ``trace.oddities``: a duration of 0
  becomes 1 s (a delay profile needs > 0; none in the 2022-09-10 trace);
  durations above the walltime are kept (the job is killed at its
  walltime, as the authors' min(...) does); -1 jobs whose history start is
  before the cut and -2 jobs whose history ends before it are kept in their
  category, as the trace labels them.
- Bad lines (missing, unknown, repeated or malformed field, cores outside
  1..20, a file id with two sizes, a repeated job id) raise ``InputError``
  naming the file, the line number and the field.

A slice (``--slice START,WARMUP,EVALUATED,TAIL``, hours) keeps the
structure of Fig. 1 on a few hours. Its evaluated window starts START
hours after the first category-1 submission; the cut is WARMUP hours
before. Categories are derived again from the history, as the authors
built them around their day: -2 = historically running at the cut, -1 =
submitted before the cut and started after it, 0 = submitted during the
warm-up, 1 = during the evaluated window, 2 = during the tail. Other jobs
are left out. The cut must not be before t0, where the trace is complete.
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
    running_on = {}
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
    (module docstring)."""
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
