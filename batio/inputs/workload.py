"""Batsim workload JSON: reading and checking jobs and profiles.

A workload is ``{"nb_res": N, "jobs": [...], "profiles": {...}}``; every job
has ``id``, ``subtime``, ``res``, ``profile`` and optionally ``walltime``
(absent or -1: no limit) plus any extra fields, which are forwarded to the
scheduler untouched. Each profile type and its fields are described in
``docs/formats.md``. Every problem is reported with the file, the job or
profile and the field, before the simulation starts.
"""

from dataclasses import dataclass, field
import json
import math
from pathlib import Path

from batio.errors import InputError

NO_WALLTIME = -1.0

# type -> {field: kind}; kinds: "number" (>= 0), "label", "names", "vector",
# "matrix". Fields not listed here are allowed and ignored, as in Batsim.
PROFILE_FIELDS = {
    "delay": {"delay": "positive"},
    "parallel": {"cpu": "vector", "com": "matrix"},
    "parallel_homogeneous": {"cpu": "number", "com": "number"},
    "parallel_homogeneous_total": {"cpu": "number", "com": "number"},
    "parallel_homogeneous_pfs": {},
    "data_staging": {"nb_bytes": "number", "from": "label", "to": "label"},
    "composed": {"seq": "names"},
}
OPTIONAL_PROFILE_FIELDS = {
    "parallel_homogeneous_pfs": {"bytes_to_read": "number", "bytes_to_write": "number",
                                 "storage": "label", "host": "label"},
    "composed": {"repeat": "count"},
}
DEFAULT_STORAGE_LABEL = "pfs"
# Bounds on composed profiles: nesting levels, and sub-profiles one job runs in all.
MAX_COMPOSED_DEPTH = 100
MAX_COMPOSED_STEPS = 1_000_000


@dataclass
class Job:
    id: str                # "workload!id", as Batsim names jobs
    workload: str
    subtime: float
    walltime: float        # NO_WALLTIME when the job has no limit
    res: int
    profile: str
    description: dict      # the job's JSON as the scheduler receives it

    @property
    def has_walltime(self) -> bool:
        return self.walltime != NO_WALLTIME


def profiles_reached(roots, profiles):
    """The names of ``roots`` and of every profile reached from them through
    composed profiles' ``seq``."""
    reached, pending = set(), list(roots)
    while pending:
        name = pending.pop()
        if name not in reached:
            reached.add(name)
            if profiles[name]["type"] == "composed":
                pending.extend(profiles[name]["seq"])
    return reached


@dataclass
class Workload:
    name: str
    path: Path | None  # None: one the scheduler registers (dynamic jobs)
    jobs: list[Job]
    profiles: dict[str, dict]
    raw_jobs: list[dict] = field(default_factory=list)  # the jobs as the file gives them, every field kept

    def referenced_profiles(self):
        """The profiles jobs use, directly or through composed ones (Batsim
        drops the others before SIMULATION_BEGINS)."""
        used = profiles_reached((job.profile for job in self.jobs), self.profiles)
        return {name: profile for name, profile in self.profiles.items() if name in used}


def _is_number(value):
    """A finite JSON number (an integer too large for a double is not)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


# Batsim writes ids and profile names into its CSV files unquoted.
CSV_BREAKERS = (",", '"', "\n", "\r")
# Batsim reads nb_res and res as C ints (rapidjson's GetInt).
INT_MAX = 2**31 - 1


def check_name(source, name, what, **where):
    """A job id or profile name must survive Batsim's unquoted CSV output."""
    if any(breaker in name for breaker in CSV_BREAKERS):
        raise InputError(source, f"{what} {name!r} contains a comma, a double quote or a line break, which "
                                 "Batsim writes unquoted into out_jobs.csv (rename it)", **where)


def _non_negative(value):
    return _is_number(value) and value >= 0


def _number_problem(value, profile, profiles):
    return None if _non_negative(value) else f"must be a number >= 0, got {value!r}"


def _positive_problem(value, profile, profiles):
    return None if _is_number(value) and value > 0 else f"must be a number > 0, got {value!r}"


def _count_problem(value, profile, profiles):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        return f"must be an integer >= 1, got {value!r}"
    return None


def _label_problem(value, profile, profiles):
    return None if isinstance(value, str) and value else f"must be a non-empty string, got {value!r}"


def _vector_problem(value, profile, profiles):
    if not isinstance(value, list) or not value or not all(_non_negative(v) for v in value):
        return "must be a non-empty list of numbers >= 0"
    return None


def _matrix_problem(value, profile, profiles):
    """A matrix is of the size of the profile's 'cpu' vector squared."""
    size = len(profile.get("cpu") or [])
    if not isinstance(value, list) or len(value) != size * size or not all(_non_negative(v) for v in value):
        return f"must be a list of {size}x{size} numbers >= 0 (the size of 'cpu' squared)"
    return None


def _names_problem(value, profile, profiles):
    if not isinstance(value, list) or not value or not all(isinstance(name, str) for name in value):
        return f"must be a non-empty list of profile names (strings), got {value!r}"
    missing = [name for name in value if name not in profiles]
    return f"names unknown profile(s) {missing}" if missing else None


# kind (PROFILE_FIELDS) -> the problem of a field's value of that kind in a profile, or None.
FIELD_PROBLEMS = {"number": _number_problem, "positive": _positive_problem, "count": _count_problem,
                  "label": _label_problem, "vector": _vector_problem, "matrix": _matrix_problem,
                  "names": _names_problem}


def _check_field(source, profile_name, profile, key, kind, profiles):
    """InputError naming the profile and the field unless ``profile[key]`` is of ``kind``."""
    problem = FIELD_PROBLEMS[kind](profile.get(key), profile, profiles)
    if problem:
        raise InputError(source, problem, profile=profile_name, field=key)


def check_profile(source, name, profile, profiles):
    """Raise InputError unless ``profile`` is a valid Batsim profile."""
    if not isinstance(profile, dict):
        raise InputError(source, "must be a JSON object", profile=name)
    check_name(source, name, "profile name", profile=name)
    kind = profile.get("type")
    if not isinstance(kind, str) or kind not in PROFILE_FIELDS:
        raise InputError(source, f"unknown profile type {kind!r} (batio runs: "
                                 f"{', '.join(sorted(PROFILE_FIELDS))})", profile=name, field="type")
    for key, field_kind in PROFILE_FIELDS[kind].items():
        _check_field(source, name, profile, key, field_kind, profiles)
    for key, field_kind in OPTIONAL_PROFILE_FIELDS.get(kind, {}).items():
        if key in profile:
            _check_field(source, name, profile, key, field_kind, profiles)
    if kind == "parallel_homogeneous_pfs" and "bytes_to_read" not in profile and "bytes_to_write" not in profile:
        raise InputError(source, "needs 'bytes_to_read' or 'bytes_to_write'", profile=name)
    if "ret" in profile:
        ret = profile["ret"]
        if not isinstance(ret, int) or isinstance(ret, bool) or not 0 <= ret <= INT_MAX:
            raise InputError(source, f"must be an integer return code >= 0, got {ret!r} (Batsim 4.2.1 reads -1 as "
                                     "walltime reached and -2 as killed, and aborts on other negative codes)",
                             profile=name, field="ret")


def _chain(names):
    """A chain of profile names for a message, its middle left out when long."""
    shown = names if len(names) <= 6 else [*names[:3], f"... {len(names) - 5} more ...", *names[-2:]]
    return " -> ".join(shown)


def _check_compositions(source, profiles):
    """Composed profiles must be finite and bounded: no cycle, at most
    MAX_COMPOSED_DEPTH levels, and at most MAX_COMPOSED_STEPS sub-profiles
    run per job (``repeat`` multiplies through the levels). Walked
    iteratively, each profile once: a chain 2,000 deep or 40 levels of
    doubling cost no more than their size."""
    steps, depth = {}, {}

    def children(name):
        return iter(profiles[name]["seq"] if profiles[name]["type"] == "composed" else ())

    for root in profiles:
        stack, path = [(root, children(root))], [root]
        while stack and root not in steps:
            name, pending = stack[-1]
            child = next(pending, None)
            if child is not None and child not in steps:
                if child in path:
                    cycle = path[path.index(child):] + [child]
                    raise InputError(source, f"composed profiles form a cycle: {_chain(cycle)}", profile=child,
                                     field="seq")
                stack.append((child, children(child)))
                path.append(child)
                continue
            if child is not None:
                continue
            stack.pop()
            path.pop()
            profile = profiles[name]
            if profile["type"] != "composed":
                steps[name], depth[name] = 1, 0
                continue
            steps[name] = profile.get("repeat", 1) * sum(steps[c] for c in profile["seq"])
            depth[name] = 1 + max(depth[c] for c in profile["seq"])
            if depth[name] > MAX_COMPOSED_DEPTH:
                raise InputError(source, f"composed profiles nest more than {MAX_COMPOSED_DEPTH} levels deep",
                                 profile=name, field="seq")
            if steps[name] > MAX_COMPOSED_STEPS:
                raise InputError(source, f"a job running it would run more than {MAX_COMPOSED_STEPS:,} "
                                         "sub-profiles ('repeat' times the length of 'seq', through every level), "
                                         "the most batio runs per job", profile=name, field="repeat")


def check_job(source, workload_name, raw, profiles) -> Job:
    """Build a Job from its JSON, raising InputError on any bad field."""
    if not isinstance(raw, dict):
        raise InputError(source, f"every job must be a JSON object, got {raw!r}", field="jobs")
    job_id = raw.get("id")
    if isinstance(job_id, bool) or not isinstance(job_id, (str, int)) or job_id == "":
        raise InputError(source, f"job id must be a string or an integer, got {job_id!r}", field="id")
    job_id = str(job_id)
    check_name(source, job_id, "job id", job=job_id, field="id")
    if "!" in job_id:
        raise InputError(source, "a job id must not contain '!' (Batsim's workload separator)",
                         job=job_id, field="id")
    for key in ("subtime", "res", "profile"):
        if key not in raw:
            raise InputError(source, "missing required field", job=job_id, field=key)
    if not _is_number(raw["subtime"]) or raw["subtime"] < 0:
        raise InputError(source, f"must be a number >= 0, got {raw['subtime']!r}", job=job_id, field="subtime")
    if not isinstance(raw["res"], int) or isinstance(raw["res"], bool) or not 1 <= raw["res"] <= INT_MAX:
        raise InputError(source, f"must be an integer from 1 to {INT_MAX}, got {raw['res']!r}", job=job_id,
                         field="res")
    walltime = raw.get("walltime", NO_WALLTIME)
    if not _is_number(walltime) or (walltime <= 0 and walltime != NO_WALLTIME):
        raise InputError(source, f"must be a number > 0, or -1 for none, got {walltime!r}",
                         job=job_id, field="walltime")
    if not isinstance(raw["profile"], str):
        raise InputError(source, f"must be a profile name (a string), got {raw['profile']!r}", job=job_id,
                         field="profile")
    if raw["profile"] not in profiles:
        raise InputError(source, f"unknown profile {raw['profile']!r}", job=job_id, field="profile")
    profile = profiles[raw["profile"]]
    if profile.get("type") == "parallel" and len(profile["cpu"]) != raw["res"]:
        raise InputError(source, f"requests {raw['res']} hosts but its 'parallel' profile "
                                 f"'{raw['profile']}' describes {len(profile['cpu'])}", job=job_id, field="res")
    full_id = f"{workload_name}!{job_id}"
    description = dict(raw, id=full_id)
    return Job(full_id, workload_name, float(raw["subtime"]), float(walltime), raw["res"],
               raw["profile"], description)


def json_problem(error):
    """What is wrong with a JSON text json.loads refused, in one line."""
    if isinstance(error, RecursionError):
        return "nested too deeply"
    if isinstance(error, (json.JSONDecodeError, TypeError)):
        return str(error)
    # int() refuses integers of more than 4300 digits (CVE-2020-10735)
    return f"a number is too long ({str(error).split(':')[0]})"


def trace_hint(path):
    """What to do with a file given as a workload that looks like a job trace, else ''."""
    try:
        with open(path, errors="replace") as stream:
            head = stream.read(4096).lstrip()
    except OSError:
        return ""
    first = head.splitlines()[0] if head else ""
    if Path(path).suffix.lower() == ".swf" or head.startswith(";") or (first and all(
            field.lstrip("-").replace(".", "", 1).isdigit() for field in first.split()) and len(first.split()) >= 10):
        kind, command = "an SWF trace", "swf"
    elif "|" in first and "jobid" in first.lower():
        kind, command = "a Slurm sacct trace", "sacct"
    else:
        return ""
    return (f"not a Batsim workload (JSON) but what looks like {kind}: make a workload of it with "
            f"`batio import {command} {path} --out W.json`")


def load_workload(path, name) -> Workload:
    """Read and check one workload file; ``name`` is Batsim's w0, w1..."""
    path = Path(path)
    try:
        with open(path) as stream:
            data = json.load(stream)
    except FileNotFoundError:
        raise InputError(path, "no such workload file") from None
    except OSError as error:
        raise InputError(path, f"cannot read the workload file: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise InputError(path, f"not UTF-8 text (byte {error.object[error.start]:#x} at offset {error.start}); "
                               "JSON files are UTF-8") from None
    except (ValueError, RecursionError) as error:
        raise InputError(path, trace_hint(path) or f"malformed JSON: {json_problem(error)}") from None
    if not isinstance(data, dict):
        raise InputError(path, "a workload must be a JSON object with 'jobs' and 'profiles'")
    for key in ("jobs", "profiles"):
        if key not in data:
            raise InputError(path, "missing required field", field=key)
    if not isinstance(data["jobs"], list):
        raise InputError(path, "must be a list of jobs", field="jobs")
    if not isinstance(data["profiles"], dict):
        raise InputError(path, "must be an object mapping profile names to profiles", field="profiles")
    nb_res = data.get("nb_res")
    if not isinstance(nb_res, int) or isinstance(nb_res, bool) or not 0 < nb_res <= INT_MAX:
        raise InputError(path, f"must be an integer from 1 to {INT_MAX} (Batsim reads it as a C int), got "
                               f"{nb_res!r}", field="nb_res")
    profiles = data["profiles"]
    for profile_name, profile in profiles.items():
        check_profile(path, profile_name, profile, profiles)
    _check_compositions(path, profiles)
    jobs, seen = [], set()
    for raw in data["jobs"]:
        job = check_job(path, name, raw, profiles)
        if job.id in seen:
            raise InputError(path, "duplicate job id", job=job.id.split("!", 1)[1], field="id")
        seen.add(job.id)
        jobs.append(job)
    return Workload(name, path, jobs, profiles, data["jobs"])
