"""Windows of a trace as replicas: ``batio compare --windows 7d`` over an imported trace.

Design notes: docs/internals.md.
"""

import json
import logging
import math
from pathlib import Path

from batio.errors import InputError
from batio.importers.common import COOLDOWN, EVALUATED, WARMUP, as_number
from batio.inputs.workload import profiles_reached

log = logging.getLogger(__name__)


def _read(path):
    try:
        workload = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise InputError(path, f"cannot read the workload to cut into windows: {error}") from None
    if not isinstance(workload, dict) or not workload.get("jobs"):
        raise InputError(path, "a workload with jobs is needed to cut into windows")
    return workload


def evaluated_submissions(workload):
    """Submission times of the jobs the trace evaluates (category 1, or all when it marks none)."""
    marked = any("category" in job for job in workload["jobs"])
    return [float(job["subtime"]) for job in workload["jobs"]
            if not marked or job.get("category", EVALUATED) == EVALUATED]


def window_count(path, length, count=None):
    """How many whole windows of ``length`` seconds the trace's evaluated span holds
    (at most ``count``); an error naming the file when it holds none."""
    if not (math.isfinite(length) and length > 0):
        raise InputError("--windows", f"expected a window length > 0, got {length:g} s")
    workload = _read(path)
    evaluated = evaluated_submissions(workload)
    first, last = min(evaluated), max(evaluated)
    whole = math.floor((last - first) / length)
    if whole < 1:
        raise InputError(path, f"its evaluated span is {last - first:g} s, shorter than one window of {length:g} s")
    if count is not None and not 1 <= count <= whole:
        raise InputError("--window-count", f"expected 1 to {whole} (the trace's whole windows of {length:g} s), "
                                           f"got {count}")
    count = count or whole
    covered = sum(first <= submit < first + count * length for submit in evaluated)
    log.info("%s: %d windows of %g s evaluate %d of the trace's %d evaluated jobs (the rest are submitted later)",
             path, count, length, covered, len(evaluated))
    return count


def _profiles_used(path, jobs, profiles):
    """The profiles the window's jobs reach: those they name and, through
    composed profiles, their phases (a jobsio import's ID_read, ID_rest,
    ID_write), which a window without them could not run."""
    try:
        return profiles_reached((job["profile"] for job in jobs), profiles)
    except KeyError as error:
        raise InputError(path, f"profile {error.args[0]!r} is named by a job or a composed profile "
                               "but not defined") from None
    except TypeError as error:  # a profile that is not an object, a seq that is not a list
        raise InputError(path, f"a profile the window's jobs reach is malformed ({error})") from None


def trace_window(seed, path, length, warmup=0.0, cooldown=0.0, count=None):
    """The workload of window ``seed`` (1-based) of the trace ``path``: see the module doc."""
    workload = _read(path)
    start = min(evaluated_submissions(workload)) + (seed - 1) * length
    end = start + length
    origin = start - warmup
    jobs = []
    for job in workload["jobs"]:
        submit = float(job["subtime"])
        if not origin <= submit < end + cooldown:
            continue
        category = WARMUP if submit < start else EVALUATED if submit < end else COOLDOWN
        jobs.append({**job, "subtime": as_number(submit - origin), "category": category})
    if not any(job["category"] == EVALUATED for job in jobs):
        raise InputError(path, f"window {seed} [{start:g}, {end:g}) s has no job submitted: choose longer windows")
    used = _profiles_used(path, jobs, workload["profiles"])
    window = {"window": seed, "of": count, "length_s": length, "warmup_s": warmup, "cooldown_s": cooldown,
              "trace_seconds": [as_number(start), as_number(end)], "source": str(path),
              "evaluated_window": [as_number(warmup), as_number(warmup + length)]}
    return {**{key: value for key, value in workload.items() if key not in ("jobs", "profiles")},
            "jobs": jobs, "profiles": {name: spec for name, spec in workload["profiles"].items() if name in used},
            "window": window}
