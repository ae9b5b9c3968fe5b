"""A per-job I/O model learned from a centre's own records: each job's transfer time alone.

Trained on weeks written by ``batio import jobsio``, it predicts the *low
end* of a job's transfer time (Darshan's read and write seconds per rank,
all ranks at once), raised to the file system's floor (its bytes at the
file system's bandwidth). The high end of a job, one rank after the other,
follows as the low end times its ranks, capped by its run time.

Two predictors, the first that applies:

* **recurrence**: training jobs of the same shape (same nodes, same ranks,
  bytes read and written each within 10 %) predict the job: the median of
  their times (the records hold no user or application: shape is all);
* **learned**: scikit-learn's ``HistGradientBoostingRegressor`` on FEATURES,
  fitted to log10 seconds with the absolute error (a median regression: the
  statistics it is scored by are medians and fold errors).

The model file (JSON, FORMAT) states its training weeks, its features, how
the training weeks counted ranks, the file system's bandwidths and the
training rows themselves; loading refits the regressor from them with a
fixed seed, so the file does not depend on a pickled library version.
It also holds the held-out errors (each training week predicted by the
others), the distribution a what-if draws each job's I/O from.
"""

from dataclasses import dataclass, field
import hashlib
import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from batio.errors import InputError, quoted
from batio.readings import MAX_BYTES, MAX_COUNT, MAX_TRACE_SECONDS, in_order, json_number, json_value, trace_label

log = logging.getLogger(__name__)

FORMAT = "batio-iomodel/1"
FEATURES = ("log_read_bytes", "log_written_bytes", "read_share", "log_nodes", "log_ranks", "log_runtime",
            "log_walltime")
RECURRENCE_TOLERANCE = 0.10
# Fixed: no hyper-parameter search (a search on four weeks would fit the weeks, not the machine).
REGRESSOR = {"loss": "absolute_error", "max_iter": 300, "learning_rate": 0.05, "min_samples_leaf": 10,
             "random_state": 0}
TRAINING_COLUMNS = ("week", "res", "ranks", "read_bytes", "written_bytes", "runtime", "walltime", "log_target")


# The fields of a job that `batio import jobsio` records and iomodel, iophases and validate read:
# (bounds, whole number). Times are seconds on the workload's clock, counts of a C int; io_ranks
# is rounded to 3 decimals on import.
RECORDED = {"res": ((1, MAX_COUNT), True), "recorded_start": ((-MAX_TRACE_SECONDS, MAX_TRACE_SECONDS), False),
            "recorded_end": ((-MAX_TRACE_SECONDS, MAX_TRACE_SECONDS), False)}
MEASURED = {"read_bytes": ((0, MAX_BYTES), False), "written_bytes": ((0, MAX_BYTES), False),
            "nprocs": ((1, MAX_COUNT), True), "io_ranks": ((1e-3, MAX_COUNT), False),
            **{key: ((0, MAX_TRACE_SECONDS), False) for key in
               ("measured_read_s", "measured_write_s", "measured_meta_s", "measured_transfer_s")}}


def week_of(workload, path):
    """A workload's week: its trace block's, else its file's name; a plain name, as a week of
    `batio import jobsio` is (a number is a fair name: week 5)."""
    trace = workload.get("trace", {})
    if not isinstance(trace, dict):
        raise InputError(path, f"the trace block is not an object: got {json_value(trace)}", field="trace")
    week = trace.get("week")
    if week is None or week == "":
        return trace_label(Path(path).stem, path, "trace.week", "week (the file's name)")
    if isinstance(week, bool) or not isinstance(week, str | int):
        raise InputError(path, f"a week is a name or a number, got {json_value(week)}", field="trace.week")
    return trace_label(str(week), path, "trace.week", "week")


def check_jobs(workload, path):
    """Every job's recorded and measured fields, as `batio import jobsio` writes them: a job id,
    numbers within RECORDED and MEASURED (optional ones where given), an end not before its start."""
    for index, job in enumerate(workload["jobs"]):
        if not isinstance(job, dict):
            raise InputError(path, f"job {index + 1} is not an object: got {json_value(job)}", field="jobs")
        job_id = job.get("id")
        if isinstance(job_id, bool) or not isinstance(job_id, str | int):
            raise InputError(path, f"job {index + 1} has no id (a name or a number): got {json_value(job_id)}",
                             field="id")
        for key, ((low, high), whole) in RECORDED.items():
            if key in job or key != "recorded_start" and "recorded_start" in job:
                json_number(job.get(key), path, key, low=low, high=high, job=job_id, whole=whole)
        for key, ((low, high), whole) in MEASURED.items():
            if key in job:
                json_number(job[key], path, key, low=low, high=high, job=job_id, whole=whole)
        if "recorded_start" in job and job["recorded_end"] < job["recorded_start"]:
            in_order(f"{path}, job {quoted(job_id)}", job["recorded_start"], job["recorded_end"],
                     ("recorded_start", "recorded_end"))


def ranks_from(workload):
    """How an import counted the ranks doing I/O at once: ``darshan_runs`` (``--runs``) or ``sum_nprocs``."""
    return "darshan_runs" if "darshan_runs" in (workload.get("trace") or {}) else "sum_nprocs"


def io_table(workload, fs):
    """One row per job that moves bytes: its shape, its run time, and its measured ends.

    ``fs``: the platform's routes.Bandwidths. ``low`` is the measured per-rank transfer time
    raised to ``floor`` (the bytes at the file system's bandwidths); ``high`` is the time
    summed over the ranks doing I/O, capped by the run time (NaN when unmeasured)."""
    rows = []
    for job in workload["jobs"]:
        read, written = float(job.get("read_bytes", 0)), float(job.get("written_bytes", 0))
        if read + written <= 0 or "recorded_start" not in job:
            continue
        runtime = float(job["recorded_end"]) - float(job["recorded_start"])
        walltime = float(job.get("walltime", -1))
        measured = float(job.get("measured_transfer_s", math.nan))
        rows.append({"job_id": str(job["id"]), "res": int(job["res"]),
                     "ranks": float(job.get("nprocs", math.nan)), "io_ranks": float(job.get("io_ranks", math.nan)),
                     "read_bytes": read, "written_bytes": written, "runtime": runtime,
                     "walltime": walltime if walltime > 0 else runtime, "measured": measured})
    numbers = ["res", "ranks", "io_ranks", "read_bytes", "written_bytes", "runtime", "walltime", "measured"]
    # Typed even when empty (a workload not written by `batio import jobsio`): the checks then say so.
    table = pd.DataFrame(rows, columns=["job_id", *numbers]).astype(dict.fromkeys(numbers, float))
    table["floor"] = read_write_floor(table, fs)
    table["low"] = np.maximum(table["measured"], table["floor"])
    table["high"] = np.minimum(np.maximum(table["measured"] * table["io_ranks"], table["low"]), table["runtime"])
    return table


def high_end(table, low):
    """The high end that follows from low-end seconds: times the job's ranks doing I/O (1 where
    unknown), capped by its run time (never below the low end)."""
    ranks = table["io_ranks"].where(np.isfinite(table["io_ranks"]), 1.0).to_numpy()
    return np.minimum(low * ranks, np.maximum(table["runtime"].to_numpy(), low))


def read_write_floor(table, fs):
    """Seconds the jobs' bytes take at the file system's bandwidths (the whole machine's, not a client's)."""
    return table["read_bytes"] / fs.fs_read + table["written_bytes"] / fs.fs_write


def features(table):
    moved = table["read_bytes"] + table["written_bytes"]
    return pd.DataFrame({"log_read_bytes": np.log10(table["read_bytes"] + 1),
                         "log_written_bytes": np.log10(table["written_bytes"] + 1),
                         "read_share": table["read_bytes"] / moved, "log_nodes": np.log10(table["res"]),
                         "log_ranks": np.log10(table["ranks"]), "log_runtime": np.log10(table["runtime"]),
                         "log_walltime": np.log10(table["walltime"])})[list(FEATURES)]


def _close(a, b):
    return np.abs(a - b) <= RECURRENCE_TOLERANCE * np.maximum(b, 1.0)


def recurrence(training, table):
    """log10 seconds of each job's recurring training jobs (their median), NaN where none recurs."""
    groups = {key: frame for key, frame in training.groupby(["res", "ranks"])}
    found = np.full(len(table), np.nan)
    for i, row in enumerate(table.itertuples(index=False)):
        same = groups.get((row.res, row.ranks))
        if same is None:
            continue
        match = _close(same["read_bytes"].to_numpy(), row.read_bytes) & _close(
            same["written_bytes"].to_numpy(), row.written_bytes)
        if match.any():
            found[i] = float(np.median(same["log_target"].to_numpy()[match]))
    return found


def _regressor(training):
    from sklearn.ensemble import HistGradientBoostingRegressor
    regressor = HistGradientBoostingRegressor(**REGRESSOR)
    regressor.fit(features(training), training["log_target"])
    return regressor


@dataclass
class IoModel:
    """A fitted model: its training rows and what it states about them (see the module doc)."""

    weeks: list
    ranks_from: str
    fs: dict
    training: pd.DataFrame
    held_out: list = field(default_factory=list)  # log10(predicted / measured low end), other weeks'
    sources: list = field(default_factory=list)  # the training files and their SHA-256
    _fitted: Any = None  # the fitted regressor (scikit-learn: no types), once predict needs it

    def predict(self, table):
        """(seconds alone at the low end, source of each: "recurrence" or "learned"); within [floor, run time]."""
        if table.empty:
            return np.array([]), np.array([], dtype=object)
        if self._fitted is None:
            self._fitted = _regressor(self.training)
        recurring = recurrence(self.training, table)
        learned = self._fitted.predict(features(table))
        log_seconds = np.where(np.isnan(recurring), learned, recurring)
        floor = table["floor"].to_numpy()
        seconds = np.clip(10 ** log_seconds, floor, np.maximum(table["runtime"].to_numpy(), floor))
        return seconds, np.where(np.isnan(recurring), "learned", "recurrence")

    def to_json(self):
        return {"format": FORMAT, "weeks": self.weeks, "sources": self.sources, "ranks_from": self.ranks_from,
                "file_system_Bps": self.fs, "features": list(FEATURES), "target": "log10 of the measured per-rank "
                "transfer seconds (read + write), raised to the bytes at the file system's bandwidths",
                "recurrence": f"same res and ranks, bytes read and written each within {RECURRENCE_TOLERANCE:.0%}",
                "regressor": {"class": "sklearn.ensemble.HistGradientBoostingRegressor", **REGRESSOR},
                "held_out_log10_errors": [round(value, 6) for value in self.held_out],
                "training": {column: self.training[column].tolist() for column in TRAINING_COLUMNS}}

    def save(self, path):
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n")


def _training_rows(table, week):
    known = table[np.isfinite(table["measured"]) & np.isfinite(table["ranks"])]
    return known.assign(week=week, log_target=np.log10(known["low"]))[list(TRAINING_COLUMNS)]


def read_week(path):
    """A workload written by ``batio import jobsio``: (workload, week)."""
    try:
        workload = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise InputError(path, f"cannot read the workload: {error}") from None
    if not isinstance(workload, dict) or not isinstance(workload.get("jobs"), list) or not workload["jobs"]:
        raise InputError(path, "no jobs (a workload written by `batio import jobsio` is needed)")
    week = week_of(workload, path)
    check_jobs(workload, path)
    return workload, week


def train(paths, fs):
    """The IoModel of the weeks in ``paths`` (workloads of ``batio import jobsio``) on a platform's Bandwidths."""
    weeks: list[str]
    tables, weeks, ways, sources = {}, [], set(), []
    for path in paths:
        workload, week = read_week(path)
        if week in tables:
            raise InputError(path, f"week {week!r} is given twice for training")
        rows = _training_rows(io_table(workload, fs), week)
        if rows.empty:
            raise InputError(path, "no job with bytes and a measured transfer time to learn from (records "
                                   "without rank counts import as io_time_unknown)")
        tables[week], weeks = rows, weeks + [week]
        ways.add(ranks_from(workload))
        sources.append({"file": Path(path).name, "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()})
    if len(ways) > 1:
        raise InputError(", ".join(map(str, paths)), "the training weeks count ranks two ways (some imported with "
                                                     "--runs, some without): import them the same way")
    training = pd.concat(tables.values(), ignore_index=True)
    fs_values = {"read": fs.fs_read, "write": fs.fs_write}
    model = IoModel(weeks, ways.pop(), fs_values, training, sources=sources)
    model.held_out = held_out_errors(tables, fs_values)
    log.info("I/O model: %d jobs of %d weeks (%s); %d held-out errors", len(training), len(weeks),
             ", ".join(weeks), len(model.held_out))
    return model


def held_out_errors(tables, fs):
    """log10(predicted / measured) of each training week's jobs, predicted by the other weeks alone."""
    errors = []
    for week, rows in tables.items():
        others = [frame for name, frame in tables.items() if name != week]
        if not others:
            continue
        model = IoModel([], "", fs, pd.concat(others, ignore_index=True))
        table = rows.assign(floor=rows["read_bytes"] / fs["read"] + rows["written_bytes"] / fs["write"])
        predicted, _ = model.predict(table)
        errors += list(np.log10(predicted) - rows["log_target"].to_numpy())
    return errors


def load(path):
    """The IoModel of a model file written by ``IoModel.save``."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise InputError(path, f"cannot read the I/O model: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(path, f"not a batio I/O model (expected \"format\": \"{FORMAT}\"; write one with "
                               "`batio iomodel train`)", field="format")
    if data.get("features") != list(FEATURES):
        raise InputError(path, f"its features {data.get('features')} are not this batio's {list(FEATURES)}: "
                               "train it again", field="features")
    try:
        training = pd.DataFrame(data["training"])[list(TRAINING_COLUMNS)]
        return IoModel(list(data["weeks"]), str(data["ranks_from"]), dict(data["file_system_Bps"]),
                       training.astype({column: float for column in TRAINING_COLUMNS if column != "week"}),
                       [float(value) for value in data.get("held_out_log10_errors", [])], list(data["sources"]))
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(path, f"a damaged I/O model ({error}): train it again") from None
