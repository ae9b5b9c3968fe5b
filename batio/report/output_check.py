"""What ``batio report`` reads, checked before it draws: a damaged output folder is one line
naming the file, never a traceback, and never a partial run drawn as if whole.

A run's outputs (``out_run.json``, ``out_jobs.csv``, ``out_machine_states.csv``, and
``out_io.csv`` where the engine writes it) and a comparison's or sweep's ``results.csv``
are checked for what the report's readers rely on: readable text, every row as long as
the header (a file cut short is not), the columns read, numbers that are numbers, and,
for a run, one line per job of its input workloads, each once, none waiting less than
no time.
"""

import csv
import json
import math
from pathlib import Path

from batio.errors import InputError, listed
from batio.report import metrics

JOB_COLUMNS = ("job_id", "workload_name", "submission_time", "requested_number_of_resources", "final_state",
               "starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time", "stretch")
JOB_NUMBERS = ("submission_time", "requested_number_of_resources", "starting_time", "execution_time", "finish_time",
               "waiting_time", "turnaround_time", "stretch")
STATE_COLUMNS = ("time", "nb_sleeping", "nb_switching_on", "nb_switching_off", "nb_idle", "nb_computing")
IO_COLUMNS = ("time", "storage", "read_bytes_per_s", "write_bytes_per_s")
RESULT_COLUMNS = ("run_id", "status", "policy", "platform", "workload", "engine", "run_dir", *metrics.METRICS)
# A wait this far below 0 is no rounding of the engine's times (it prints microseconds).
LEAST_WAIT = -1e-6


def table(path, columns, numbers=(), *, rows_needed=True):
    """(header, rows as dicts) of a CSV output file, checked: readable, every row as long as
    the header, ``columns`` present, ``numbers`` finite numbers or blank; ``rows_needed``:
    a header alone is refused."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text: not a file batio wrote") from None
    except OSError as error:
        raise InputError(path, f"cannot read it: {error.strerror}") from None
    try:
        read = list(csv.reader(text.splitlines()))
    except csv.Error as error:
        raise InputError(path, f"not a CSV file batio wrote ({error})") from None
    lines = [(number, line) for number, line in enumerate(read, start=1) if line]
    if not lines:
        raise InputError(path, "empty file: no header line (the run did not write it, or it was cut)")
    header = lines[0][1]
    missing = [column for column in columns if column not in header]
    if missing:
        raise InputError(path, f"lacks column{'s' if len(missing) > 1 else ''} {listed(missing)}: not a file "
                               "batio wrote, or a damaged one", field=missing[0])
    rows = []
    for number, line in lines[1:]:
        if len(line) != len(header):
            raise InputError(f"{path}, line {number}", f"{len(line)} fields for the header's {len(header)}: the "
                                                       "file is cut short or damaged")
        row = dict(zip(header, line))
        for column in numbers:
            row[column] = _number(row[column], f"{path}, line {number}", column)
        rows.append((number, row))
    if rows_needed and not rows:
        raise InputError(path, "a header and no row: the run ended before writing any (interrupted?)")
    return header, rows


def _number(text, where, column):
    if text.strip() == "":
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError(where, f"{text!r} is not a finite number", field=column)
    return value


def run_record(prefix):
    """The run's ``_run.json``, checked to be the object batio writes."""
    path = Path(f"{prefix}_run.json")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise InputError(path, f"not the JSON batio writes (cut short?): {error}") from None
    except OSError as error:
        raise InputError(path, f"cannot read it: {error.strerror}") from None
    if not isinstance(record, dict):
        raise InputError(path, f"expected a JSON object, got a {type(record).__name__}")
    spec = record.get("spec")
    if not isinstance(spec, dict) or not all(isinstance(spec.get(key), str) for key in ("platform", "scheduler")) \
            or not isinstance(spec.get("workloads"), list):
        raise InputError(path, "its spec is not an object with platform, scheduler and workloads", field="spec")
    nodes = record.get("nb_compute_resources")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise InputError(path, f"expected a number of compute hosts >= 1, got {nodes!r}", field="nb_compute_resources")
    return record


def check_run(prefix):
    """Every output of the run ``PREFIX_*`` the report reads, checked (InputError naming the file)."""
    metrics.check_outputs(prefix)
    record = run_record(prefix)
    jobs_path = Path(f"{prefix}_jobs.csv")
    _, rows = table(jobs_path, JOB_COLUMNS, JOB_NUMBERS)
    seen: dict[tuple[str, str], int] = {}
    for number, row in rows:
        key = (row["workload_name"], row["job_id"])
        if key in seen:
            raise InputError(f"{jobs_path}, line {number}", f"job {key[0]}!{key[1]} already on line {seen[key]}: "
                                                            "a job ends once", field="job_id")
        seen[key] = number
        if row["waiting_time"] < LEAST_WAIT:
            raise InputError(f"{jobs_path}, line {number}", f"job {key[0]}!{key[1]} waited {row['waiting_time']:g} "
                                                            "s: no job starts before its submission",
                             field="waiting_time")
    _check_counts(jobs_path, record, seen)
    table(f"{prefix}_machine_states.csv", STATE_COLUMNS, STATE_COLUMNS)
    if Path(f"{prefix}_io.csv").exists():  # real Batsim writes none
        table(f"{prefix}_io.csv", IO_COLUMNS, ("time", "read_bytes_per_s", "write_bytes_per_s"), rows_needed=False)
    return record


def _check_counts(jobs_path, record, seen):
    """Each input workload's jobs all in out_jobs.csv (a run stopped part-way wrote fewer)."""
    for index, workload in enumerate(record["spec"]["workloads"]):
        try:
            expected = len(json.loads(Path(workload).read_text())["jobs"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # the workload moved or changed since: nothing to count against
        found = sum(name == f"w{index}" for name, _ in seen)
        if found != expected:
            raise InputError(jobs_path, f"holds {found} of the {expected} jobs of w{index} ({Path(workload).name}): "
                                        "the run did not end, or the file was cut")


def check_results(path):
    """A comparison's or sweep's ``results.csv``, checked, and each successful run's outputs."""
    _, rows = table(path, RESULT_COLUMNS, metrics.METRICS)
    for number, row in rows:
        if row["status"] == "ok":
            try:
                check_run(Path(path).parent / row["run_dir"] / "out")
            except InputError as error:
                raise InputError(f"{path}, line {number}", f"run {row['run_id']}: {error}") from None
