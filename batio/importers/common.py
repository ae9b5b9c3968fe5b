"""What every trace importer shares: records, skip counts, the time window, the workload.

A format's reader turns each line of its trace into a ``Record`` (or counts
it as skipped, with a reason, in a ``Tally``); ``build_workload`` then
applies what the user chose (machine size, time window with warm-up and
cool-down, sampling, a job cap) the same way for every format, and returns
the Batsim workload with a top-level ``trace`` block that says what was
read, kept and skipped, and why. ``dumps`` writes a workload one job a line.

Times inside this module are *trace seconds*: seconds on the trace's own
clock (``TraceClock``), which a format's reader defines.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
import hashlib
import json
import logging
import math
import re

from batio.errors import InputError
from batio.inputs.workload import INT_MAX
from batio.readings import MAX_TRACE_SECONDS

log = logging.getLogger(__name__)

# How many line numbers per skip reason the ``trace`` block lists.
EXAMPLE_LINES = 10
# Categories of paper 004's Fig. 1, as workloads/memcluster486.py names them
# (-2, running at the cut, is not made by importers: a trace replayed from
# its submissions has no scheduler state to restore).
BEFORE_QUEUED, WARMUP, EVALUATED, COOLDOWN = -1, 0, 1, 2
CATEGORIES = (BEFORE_QUEUED, WARMUP, EVALUATED, COOLDOWN)
# Batsim and batio refuse a delay of 0 s: a job whose I/O fills its run time keeps a microsecond of it.
LEAST_DELAY_S = 1e-6


def read_text(path, what):
    """The text of a UTF-8 trace file; one line naming the file if it cannot be read or is not UTF-8."""
    try:
        data = open(path, "rb").read()
    except OSError as error:
        raise InputError(path, f"cannot read the {what}: {error.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(path, f"not UTF-8 text (byte {data[error.start]:#x} at offset {error.start}); a {what} "
                               "is UTF-8 or ASCII text (UTF-16 files start with byte 0xff or 0xfe)") from None


@dataclass
class Record:
    """One job of a trace, as a reader understood it."""
    line: int
    id: object             # int or str; unique in the trace
    submit: float          # trace seconds
    runtime: float         # seconds, > 0: becomes the job's delay profile
    walltime: float        # seconds > 0, or -1 for no limit
    res: int               # compute hosts, >= 1
    start: float | None = None    # when the trace's own scheduler started it (trace seconds), if known
    fields: dict = field(default_factory=dict)  # extra job fields, forwarded to the scheduler
    oddities: tuple = ()   # names of what is odd but kept (counted over the jobs written)


class Tally:
    """Counts of records left out, per reason, with the first line numbers of each."""

    def __init__(self):
        self.counts: Counter[str] = Counter()
        self.lines = {}

    def add(self, reason, line):
        self.counts[reason] += 1
        examples = self.lines.setdefault(reason, [])
        if len(examples) < EXAMPLE_LINES:
            examples.append(line)

    def total(self):
        return sum(self.counts.values())


@dataclass(frozen=True)
class TraceClock:
    """The trace's clock: trace seconds are seconds since ``epoch``; dates
    without a time zone are read in ``zone``. ``epoch`` None: the trace
    gives no date, so options take seconds only. ``unzoned``: the trace's
    dates are local times of an unknown zone (read as UTC), and are
    written back without an offset."""
    epoch: datetime | None = None
    zone: tzinfo = UTC
    unzoned: bool = False

    def date(self, seconds):
        if self.epoch is None:
            return None
        moment = (self.epoch + timedelta(seconds=seconds)).astimezone(self.zone)
        return (moment.replace(tzinfo=None) if self.unzoned else moment).isoformat()


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([smhdw]?)\s*$", re.ASCII)
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text, option):
    """Seconds from '3600', '90m', '12h', '2d' or '1w'."""
    match = _DURATION.match(str(text))
    if not match:
        raise InputError(option, f"expected a duration in seconds or with a unit s, m, h, d, w (e.g. '12h'), "
                                 f"got {text!r}")
    value = float(match.group(1)) * _DURATION_UNITS[match.group(2)]
    if not value <= MAX_TRACE_SECONDS:
        raise InputError(option, f"must be at most {MAX_TRACE_SECONDS:g} seconds, got {text!r}")
    return value


def parse_instant(text, option, clock):
    """Trace seconds from a number of trace seconds or, when the trace is dated, a date
    ('1996-10-01', '1996-10-01T08:00', with an optional UTC offset); at most
    MAX_TRACE_SECONDS from the trace's time 0."""
    try:
        value = float(text) if text.isascii() else math.nan
    except ValueError:
        value = None
    if value is None and clock.epoch is None:
        raise InputError(option, f"{text!r} is not a number of seconds, and this trace has no date to "
                                 "count from (an SWF trace needs a UnixStartTime header line)")
    if value is None:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise InputError(option, f"expected trace seconds or a date such as 1996-10-01 or "
                                     f"1996-10-01T08:00, got {text!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=clock.zone)
        value = (moment - clock.epoch).total_seconds()
    if not abs(value) <= MAX_TRACE_SECONDS:
        raise InputError(option, f"expected trace seconds or a date within {MAX_TRACE_SECONDS:g} s (about 317 "
                                 f"years) of the trace's start, got {text!r}")
    return value


@dataclass(frozen=True)
class Selection:
    """What to keep of a trace (trace seconds; None: not given)."""
    start: float | None = None     # --from: first submission of the evaluated window
    end: float | None = None       # --to: end of the evaluated window (excluded)
    warmup: float | None = None    # --warmup: seconds before the evaluated window, kept as category 0
    cooldown: float | None = None  # --cooldown: seconds after it, kept as category 2
    max_jobs: int | None = None
    sample: float | None = None    # fraction of jobs kept, chosen by a hash of (seed, job id)
    seed: int = 0

    def check(self):
        for option, value in (("--warmup", self.warmup), ("--cooldown", self.cooldown)):
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise InputError(option, f"must be a duration >= 0, got {value}")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise InputError("--to", f"must be after --from ({self.end:g} <= {self.start:g} trace seconds)")
        if self.max_jobs is not None and self.max_jobs < 1:
            raise InputError("--max-jobs", f"must be at least 1, got {self.max_jobs}")
        if self.sample is not None and not 0 < self.sample <= 1:
            raise InputError("--sample", f"must be a fraction in (0, 1], got {self.sample}")

    @property
    def categorised(self):
        return self.warmup is not None or self.cooldown is not None


def sampled(seed, job_id, fraction):
    """Whether the job is in a sample of this fraction: a hash of (seed, id), so
    a job's fate depends on nothing else (not on the window nor on other jobs)."""
    digest = hashlib.sha256(f"{seed}:{job_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64 < fraction


def _windows(records, selection):
    """(cut, evaluated start, evaluated end, tail end) in trace seconds; ends may be inf."""
    first = min(r.submit for r in records)
    last = max(r.submit for r in records)
    warmup = selection.warmup or 0.0
    cooldown = selection.cooldown or 0.0
    start = first + warmup if selection.start is None else selection.start
    if selection.end is not None:
        end, tail_end = selection.end, selection.end + cooldown
    elif cooldown:
        end, tail_end = last - cooldown, math.inf
    else:
        end = tail_end = math.inf
    return start - warmup, start, end, tail_end


def _category(record, cut, start, end, tail_end):
    """(category, reason it is left out): one of the two is None."""
    if record.submit < cut:
        if record.start is not None and record.start >= cut:
            return BEFORE_QUEUED, None
        return None, "before_window"
    if record.submit < start:
        return WARMUP, None
    if record.submit < end:
        return EVALUATED, None
    if record.submit < tail_end:
        return COOLDOWN, None
    return None, "after_window"


def _fitting(records, tally, nb_nodes, machine_from_jobs, info):
    """The records that fit a machine of ``nb_nodes`` compute hosts (the others tallied)."""
    if nb_nodes is not None and not 1 <= nb_nodes <= INT_MAX:
        source = "largest job" if machine_from_jobs else info.get("machine_nodes_from", "--nodes")
        raise InputError(info["file"], f"the machine would have {nb_nodes:.4g} nodes ({source}); batio run and "
                                       f"Batsim read nb_res as a C int, from 1 to {INT_MAX}: give --nodes")
    kept = []
    for record in records:
        if record.res > nb_nodes:
            tally.add("larger_than_machine", record.line)
        else:
            kept.append(record)
    if not kept:
        raise InputError(info["file"], f"no job left to import (skipped: {_counts_text(tally.counts)})")
    return kept


def _selected(kept, tally, selection, windows, info):
    """(record, category) of the records in the user's window and sample, in submission order
    (the others tallied), at most ``selection.max_jobs``."""
    cut, start, end, tail_end = windows
    windowed = []
    for record in kept:
        if selection.categorised:
            category, reason = _category(record, cut, start, end, tail_end)
        else:
            category, reason = None, (
                "before_window" if record.submit < start else "after_window" if record.submit >= end else None)
        if reason:
            tally.add(reason, record.line)
        elif selection.sample is not None and not sampled(selection.seed, record.id, selection.sample):
            tally.add("not_sampled", record.line)
        else:
            windowed.append((record, category))
    windowed.sort(key=lambda rc: (cut if rc[1] == BEFORE_QUEUED else rc[0].submit, rc[0].line))
    if selection.max_jobs is not None:
        for record, _ in windowed[selection.max_jobs:]:
            tally.add("beyond_max_jobs", record.line)
        windowed = windowed[:selection.max_jobs]
    if not windowed:
        raise InputError(info["file"], f"no job in the selected window (skipped: {_counts_text(tally.counts)})")
    return windowed


def build_workload(records, tally, selection, *, nb_nodes, info, clock=TraceClock()):
    """The Batsim workload of the records a reader kept, after the user's selection.

    ``nb_nodes``: the machine's compute hosts (None: the largest job's);
    records asking more are skipped. ``info``: format-specific facts for the
    ``trace`` block, with at least ``format``, ``file`` and ``records`` (data
    records read).
    """
    selection.check()
    machine_from_jobs = nb_nodes is None
    if machine_from_jobs and records:
        nb_nodes = max(r.res for r in records)
    kept = _fitting(records, tally, nb_nodes, machine_from_jobs, info)
    cut, start, end, tail_end = _windows(kept, selection)
    windowed = _selected(kept, tally, selection, (cut, start, end, tail_end), info)
    # Time 0: the window's start if the user placed one, else the first job kept.
    if selection.categorised or selection.start is not None:
        origin = cut
    else:
        origin = min(record.submit for record, _ in windowed)
    oddities: Counter[str]
    jobs, profiles, oddities = [], {}, Counter()
    for record, category in windowed:
        oddities.update(record.oddities)
        runtime = as_number(record.runtime)
        profile = f"delay{runtime}"
        profiles[profile] = {"type": "delay", "delay": runtime}
        entry = {"id": record.id, "subtime": as_number((cut if category == BEFORE_QUEUED else record.submit) - origin),
                 "walltime": as_number(record.walltime), "res": record.res, "profile": profile, **record.fields}
        if category is not None:
            entry["category"] = category
        jobs.append(entry)

    def relative(seconds):
        return None if math.isinf(seconds) else as_number(seconds - origin)

    trace = {**info, "origin": as_number(origin), "origin_date": clock.date(origin),
             "machine_nodes": nb_nodes, "machine_nodes_from": "largest job" if machine_from_jobs else info.get(
                 "machine_nodes_from", "--nodes"),
             "evaluated_window": [relative(start), relative(end)],
             "jobs": len(jobs),
             "skipped": dict(sorted(tally.counts.items())), "skipped_lines": dict(sorted(tally.lines.items())),
             "oddities": dict(sorted(oddities.items()))}
    if selection.categorised:
        trace["warmup_window"] = [relative(cut), relative(start)]
        trace["cooldown_window"] = [relative(end), relative(tail_end)]
        trace["jobs_per_category"] = {str(c): sum(j["category"] == c for j in jobs) for c in CATEGORIES}
    if selection.sample is not None:
        trace["sample"] = {"fraction": selection.sample, "seed": selection.seed}
    _log_outcome(trace)
    return {"nb_res": nb_nodes, "jobs": jobs,
            "profiles": dict(sorted(profiles.items(), key=lambda item: item[1]["delay"])), "trace": trace}


def as_number(value):
    """An integral float as an int (the JSON stays as the trace wrote it)."""
    return int(value) if float(value).is_integer() else value


def _counts_text(counts):
    return ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items())) or "none"


def _log_outcome(trace):
    log.info("%s: %d records read, %d jobs kept", trace["file"], trace["records"], trace["jobs"])
    for reason, count in trace["skipped"].items():
        log.info("%s: skipped %d (%s), first lines %s", trace["file"], count, reason,
                 ", ".join(map(str, trace["skipped_lines"][reason])))
    for oddity, count in trace["oddities"].items():
        log.info("%s: kept %d with %s", trace["file"], count, oddity)


def summary_lines(workload):
    """What the CLI prints at the end: records, jobs, and each count of skipped records and oddities."""
    trace = workload["trace"]
    lines = [f"{trace['file']} ({trace['format']}): {trace['records']} records read, {trace['jobs']} jobs kept "
             f"on {workload['nb_res']} nodes ({trace['machine_nodes_from']})"]
    skipped = trace["skipped"]
    lines.append(f"skipped {sum(skipped.values())}: {_counts_text(skipped)}")
    lines.append(f"kept with oddities: {_counts_text(trace['oddities'])}")
    if "darshan" in trace:
        io = trace["darshan"]
        lines.append(f"darshan: {io['logs']} logs, {io['logs_matched']} matched; {io['jobs_with_io']} jobs with I/O "
                     f"({io['bytes_read']} bytes read, {io['bytes_written']} written), {io['jobs_without_log']} "
                     f"without a log (no I/O), {io['logs_unmatched']} logs of jobs not imported")
    if "jobs_per_category" in trace:
        lines.append("jobs per category: " + ", ".join(f"{c}: {n}" for c, n in trace["jobs_per_category"].items()))
    return lines


def dumps(workload):
    """The workload as JSON text, one job or profile a line (diffable, and a third of indent=1's size).
    Top-level entries other than ``jobs`` and ``profiles`` (e.g. ``trace``) take one line each."""
    def block(items, opening, closing):
        return opening + "\n" + ",\n".join(items) + "\n " + closing

    jobs = block([f"  {json.dumps(job)}" for job in workload["jobs"]], "[", "]")
    profiles = block([f"  {json.dumps(name)}: {json.dumps(profile)}"
                      for name, profile in workload["profiles"].items()], "{", "}")
    others = "".join(f" {json.dumps(key)}: {json.dumps(value)},\n" for key, value in workload.items()
                     if key not in ("nb_res", "jobs", "profiles"))
    return f'{{\n "nb_res": {workload["nb_res"]},\n{others} "jobs": {jobs},\n "profiles": {profiles}\n}}\n'
