"""Darshan logs: the bytes each job read and wrote, attached to an imported workload.

Design notes: docs/internals.md.
"""

from collections import defaultdict
from contextlib import contextmanager
import gc
import logging
import os
from pathlib import Path
import tempfile

from batio.errors import InputError
from batio.importers.common import as_number
from batio.inputs.workload import DEFAULT_STORAGE_LABEL, profiles_reached

log = logging.getLogger(__name__)

LAYERS = ("POSIX", "STDIO")
EXAMPLE_IDS = 10


def log_files(paths):
    """Every .darshan file named or found (recursively) in the folders named, sorted."""
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(path.rglob("*.darshan"))
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(path, "no such Darshan log or folder", field="--darshan")
    return files


@contextmanager
def _c_stderr_into(said):
    """What C code (libdarshan-util) writes on file descriptor 2 in the block, appended to ``said``
    instead of reaching the terminal: batio reports it in its own one line."""
    saved = os.dup(2)
    with tempfile.TemporaryFile("w+") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            said.append(capture.read())


def read_log(path):
    """{jobid, nprocs, read, written, io_seconds} of one Darshan log."""
    try:
        import darshan
        from darshan.backend.cffi_backend import accumulate_records
    except ImportError:
        raise InputError("--darshan", "needs PyDarshan: .venv/bin/pip install -e '.[darshan]'") from None
    said: list[str]
    said, failure = [], None
    with _c_stderr_into(said):
        try:
            report = darshan.DarshanReport(str(path), read_all=False)
        except RuntimeError as error:
            failure = str(error).splitlines()[0] if str(error) else "unreadable"
        gc.collect()  # the half-made report complains on fd 2 when collected: here, not later
    if failure is not None:
        detail = next((line.removeprefix("Error: ") for line in said[0].splitlines() if line.strip()), failure)
        raise InputError(path, f"not a Darshan log PyDarshan can read: {detail}")
    with report:
        job = report.metadata["job"]
        result = {"jobid": job["jobid"], "nprocs": job["nprocs"], "read": 0, "written": 0, "io_seconds": 0.0}
        for layer in LAYERS:
            if layer not in report.modules:
                continue
            report.mod_read_all_records(layer)
            records = report.records[layer].to_df()
            if records["counters"].empty:
                continue
            counters = records["counters"]
            result["read"] += int(counters[f"{layer}_BYTES_READ"].clip(lower=0).sum())
            result["written"] += int(counters[f"{layer}_BYTES_WRITTEN"].clip(lower=0).sum())
            metrics = accumulate_records(records, layer, job["nprocs"]).derived_metrics
            result["io_seconds"] += max(0.0, float(metrics.agg_time_by_slowest))
    return result


def _logs_by_job(paths):
    """(the Darshan log files named, job id -> [(log file, what ``read_log`` found in it)])."""
    files = log_files(paths)
    if not files:
        raise InputError(", ".join(map(str, paths)), "no .darshan file", field="--darshan")
    by_job = defaultdict(list)
    for path in files:
        entry = read_log(path)
        by_job[str(entry["jobid"])].append((path, entry))
    return files, by_job


def _split_profile(job, job_id, read, written, runtime, io_seconds, profiles):
    """Make the job's delay (``runtime``) compute then a PFS transfer of its bytes (spread over its
    hosts), the transfer alone when its I/O takes its whole run time; record its bytes and I/O time on it."""
    transfer = {"type": "parallel_homogeneous_pfs", "storage": DEFAULT_STORAGE_LABEL}
    if read:
        transfer["bytes_to_read"] = round(read / job["res"])
    if written:
        transfer["bytes_to_write"] = round(written / job["res"])
    io_name = f"darshan_io_{job_id}"
    profiles[io_name] = transfer
    compute = as_number(round(runtime - io_seconds, 6))
    if compute > 0:
        compute_name = f"delay{compute}"
        profiles.setdefault(compute_name, {"type": "delay", "delay": compute})
        profiles[f"darshan_{job_id}"] = {"type": "composed", "seq": [compute_name, io_name]}
        job["profile"] = f"darshan_{job_id}"
    else:
        job["profile"] = io_name
    job["darshan_bytes_read"], job["darshan_bytes_written"] = read, written
    job["darshan_io_seconds"] = round(io_seconds, 6)


def _give_io(job, job_id, entries, profiles):
    """Give one job the I/O of its logs (summed); (bytes read, bytes written, whether its I/O time
    was cut to its run time). A job whose logs show no bytes keeps its profile."""
    read = sum(entry["read"] for _, entry in entries)
    written = sum(entry["written"] for _, entry in entries)
    runtime = profiles[job["profile"]]["delay"]
    io_seconds = sum(entry["io_seconds"] for _, entry in entries)
    clamped = io_seconds > runtime
    if clamped:
        io_seconds = runtime
    if read or written:
        _split_profile(job, job_id, read, written, runtime, io_seconds, profiles)
    return read, written, clamped


def _drop_unused_profiles(workload):
    profiles = workload["profiles"]
    used = profiles_reached([job["profile"] for job in workload["jobs"]], profiles)
    for name in [name for name in profiles if name not in used]:
        del profiles[name]  # a delay profile only the jobs given I/O used


def _darshan_block(files, by_job, workload, jobs, counts):
    """The workload trace's ``darshan`` block: what was matched, what was not, the bytes attached."""
    matched, clamped, total_read, total_written = counts
    unmatched = sorted(job_id for job_id in by_job if job_id not in jobs)
    with_io = sum("darshan_bytes_read" in job for job in workload["jobs"])
    return {"logs": len(files), "logs_matched": matched,
            "logs_unmatched": sum(len(by_job[job_id]) for job_id in unmatched),
            "unmatched_job_ids": unmatched[:EXAMPLE_IDS], "jobs_with_io": with_io,
            "jobs_without_log": len(workload["jobs"]) - len({job_id for job_id in by_job if job_id in jobs}),
            "jobs_with_log_but_no_bytes": len({job_id for job_id in by_job if job_id in jobs}) - with_io,
            "io_time_above_run_time": clamped, "bytes_read": total_read, "bytes_written": total_written,
            "default": "a job without a log keeps its delay profile: no I/O"}


def attach_io(workload, paths):
    """Give the workload's jobs the I/O of their Darshan logs (in place); add a ``darshan``
    block to its ``trace`` block and return it."""
    files, by_job = _logs_by_job(paths)
    jobs = {str(job["id"]): job for job in workload["jobs"]}
    matched = clamped = total_read = total_written = 0
    for job_id, entries in sorted(by_job.items()):
        if job_id not in jobs:
            continue
        read, written, cut = _give_io(jobs[job_id], job_id, entries, workload["profiles"])
        matched, clamped = matched + len(entries), clamped + cut
        total_read, total_written = total_read + read, total_written + written
    _drop_unused_profiles(workload)
    block = _darshan_block(files, by_job, workload, jobs, (matched, clamped, total_read, total_written))
    workload["trace"]["darshan"] = block
    log.info("darshan: %d logs, %d matched to jobs, %d jobs with I/O, %d jobs without a log", block["logs"],
             matched, block["jobs_with_io"], block["jobs_without_log"])
    return block
