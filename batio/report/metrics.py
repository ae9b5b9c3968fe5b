"""Metrics of one run, computed from its output files only.

Design notes: docs/internals.md.
"""

import json
import math
from pathlib import Path

import pandas as pd

from batio.errors import InputError
from batio.importers.common import EVALUATED

# The columns of a comparison's or a sweep's results, per run (summarize, and the I/O slowdown).
METRICS = ("jobs", "succeeded", "evaluated_jobs", "makespan", "mean_wait", "max_wait", "mean_slowdown",
           "max_slowdown", "mean_bounded_slowdown", "max_bounded_slowdown", "utilisation", "bytes_moved",
           "mean_io_slowdown", "max_io_slowdown")
# The bounded slowdown's threshold (seconds): the literature's usual 10 s.
DEFAULT_BSLD_TAU = 10.0
# What each metric of a report means, as report.md and report.html say it (``definitions``).
_DEFINITIONS = """\
- **makespan**: the last job's finish time, from time 0 (Batsim's definition).
- **wait**: starting time - submission time; mean and max over the jobs that ran.
- **evaluated**: when the workload marks its jobs' categories (`batio import --warmup/--cooldown`,
  or `--windows`), wait and (bounded) slowdown cover the evaluated jobs (category 1) only;
  the others load the machine. Makespan, utilisation and bytes moved cover the whole run.
- **slowdown**: Batsim's stretch, turnaround time / execution time, per job; mean and max.
- **bounded slowdown**: max(1, turnaround time / max(execution time, tau)), here tau = {tau:g} s
  (`--bsld-tau`; Feitelson et al., JSSPP 1997): jobs of a few seconds do not dominate it.
- **utilisation**: sum over jobs of execution time x hosts, over compute hosts x makespan.
- **bytes moved**: bytes read plus written to storage by the input jobs that succeeded, from
  their profiles: the same for every policy that completes the same jobs (empty for runs on
  real Batsim, which write no `out_io.csv`).
- **I/O slowdown**: per job, its execution time in the run over its execution time
  when it runs alone on the machine, taken from a reference run of the same jobs
  submitted one after the other (FCFS, each after the previous one's walltime).
  Compute hosts are never shared between jobs, so this is the slowdown caused by
  sharing the storage and the network: 1.0 means no interference. Mean and max
  over the jobs that succeeded in both runs; empty when a job has no walltime.
- **ratios** (x): the policy's value over the baseline's, both averaged over the
  replicas whose runs succeeded. Lower is better except for utilisation.
- **replicas**: the seeds of a generated workload (`--seeds K`), or consecutive windows of
  a trace (`--windows LENGTH`: window k is seed k; see `batio/windows.py`).
- **+- (95 % interval)**: mean +- t(0.975, n-1) x sd / sqrt(n) over the n replicas (Student t).
- **difference to the baseline**: the policy's value minus the baseline's on the same
  replica, with its 95 % Student t interval over the pairs and the paired t test's p;
  the Wilcoxon signed-rank test's p is given from 6 pairs on (below, it cannot reach 5 %).
  An interval that covers 0 reads "no significant difference". One replica gives no
  uncertainty estimate at all (see `batio/report/uncertainty.py`).
"""


def definitions(tau=None):
    """The report's definitions, naming the bounded slowdown threshold ``tau`` that was used."""
    return _DEFINITIONS.format(tau=DEFAULT_BSLD_TAU if tau is None else tau)


# Batsim leaves these empty for a rejected job; job ids and metadata keep
# their text as written (an id "NA" stays "NA").
_TIMES_OF_RUN_JOBS = ("starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time",
                      "stretch", "consumed_energy")


# The output files every run writes, whatever its engine.
REQUIRED_OUTPUTS = ("_jobs.csv", "_machine_states.csv", "_run.json")
# Text as written: an id "007" stays "007", not the number 7.
_TEXT_COLUMNS = ("job_id", "workload_name", "profile", "final_state", "allocated_resources", "metadata")


def check_outputs(prefix):
    """InputError naming the first output file a run folder lacks."""
    for suffix in REQUIRED_OUTPUTS:
        if not Path(f"{prefix}{suffix}").is_file():
            raise InputError(Path(prefix).parent, f"incomplete run outputs: no {Path(prefix).name}{suffix}")


def read_jobs(prefix):
    return pd.read_csv(f"{prefix}_jobs.csv", keep_default_na=False, encoding="utf-8",
                       dtype={column: str for column in _TEXT_COLUMNS},
                       na_values={column: [""] for column in _TIMES_OF_RUN_JOBS})


def profile_bytes(profiles, name, hosts, seen=()):
    """Bytes a job of ``hosts`` hosts moves to or from storage with profile ``name``; NaN if unknown."""
    profile = profiles.get(name)
    if profile is None or name in seen:
        return math.nan
    kind = profile.get("type")
    if kind == "parallel_homogeneous_pfs":
        return hosts * (float(profile.get("bytes_to_read", 0)) + float(profile.get("bytes_to_write", 0)))
    if kind == "data_staging":
        return float(profile.get("nb_bytes", 0))
    if kind == "composed":
        parts = [profile_bytes(profiles, part, hosts, (*seen, name)) for part in profile.get("seq", [])]
        return int(profile.get("repeat", 1)) * sum(parts)
    if kind in ("delay", "parallel_homogeneous", "parallel_homogeneous_total", "parallel"):
        return 0.0  # compute and traffic between the job's own hosts: no storage
    return math.nan


def job_bytes(jobs, profiles_of):
    """Per job of ``jobs`` (rows of ``_jobs.csv``), the bytes of its profile; ``profiles_of``: {workload
    name (w0, w1, ...): its profiles}; NaN for the jobs of a workload not given."""
    values = pd.Series(math.nan, index=jobs.index)
    for name, profiles in profiles_of.items():
        mine = jobs["workload_name"] == name
        values[mine] = [profile_bytes(profiles, profile, hosts) for profile, hosts in
                        zip(jobs.loc[mine, "profile"], jobs.loc[mine, "requested_number_of_resources"])]
    return values


def bytes_moved(prefix):
    """Bytes the run's jobs that succeeded moved to or from storage, from their profiles: measured
    samples (``_io.csv``) would differ in the last digits between policies running the same jobs.
    NaN for engines that do not model storage traffic (no ``_io.csv``: real Batsim), without the
    run's record, or with a workload that cannot be read."""
    record = run_record(prefix)
    if record is None or not Path(f"{prefix}_io.csv").exists():
        return math.nan
    jobs, _ = input_jobs(prefix, record)
    profiles_of = {}
    for index, path in enumerate(record["spec"]["workloads"]):
        try:
            profiles_of[f"w{index}"] = json.loads(Path(path).read_text()).get("profiles", {})
        except (OSError, ValueError):
            return math.nan
    done = jobs[jobs["final_state"] == "COMPLETED_SUCCESSFULLY"]
    return float(job_bytes(done, profiles_of).sum(skipna=False))


def job_categories(workload_files):
    """{(workload name, job id): category} of the jobs of ``workload_files``
    (Batsim names them w0, w1, ... in order) that carry a ``category``."""
    categories = {}
    for index, path in enumerate(workload_files):
        try:
            jobs = json.loads(Path(path).read_text()).get("jobs", [])
        except (OSError, ValueError) as error:
            raise InputError(path, f"cannot read the run's workload for its jobs' categories: {error}") from None
        for job in jobs:
            if "category" in job:
                categories[(f"w{index}", str(job["id"]))] = job["category"]
    return categories


def bounded_slowdowns(jobs, tau=DEFAULT_BSLD_TAU):
    """Per job: max(1, turnaround / max(execution time, tau)) (see the module doc)."""
    return (jobs["turnaround_time"] / jobs["execution_time"].clip(lower=tau)).clip(lower=1.0)


def evaluated(jobs, categories):
    """(the evaluated jobs, the window's description): category 1 when the workloads mark categories."""
    if not categories:
        return jobs, "all jobs"
    keys = zip(jobs["workload_name"], jobs["job_id"].astype(str))
    kept = [categories.get(key, EVALUATED) == EVALUATED for key in keys]
    return jobs[kept], f"category {EVALUATED}"


def run_record(prefix):
    """The run's ``_run.json``, None for outputs without one."""
    path = Path(f"{prefix}_run.json")
    return json.loads(path.read_text()) if path.exists() else None


def input_jobs(prefix, record):
    """(the jobs of the input workloads, their categories) of the run's outputs."""
    jobs = read_jobs(prefix)
    if record is None:
        return jobs, {}
    inputs = {f"w{index}" for index in range(len(record["spec"]["workloads"]))}
    return jobs[jobs["workload_name"].isin(inputs)], job_categories(record["spec"]["workloads"])


def measured_jobs(prefix):
    """The jobs the per-job metrics cover: the evaluated input jobs that ran."""
    in_window, _ = evaluated(*input_jobs(prefix, run_record(prefix)))
    return in_window[in_window["final_state"] != "REJECTED"]


def summarize(prefix, nb_compute=None, tau=DEFAULT_BSLD_TAU):
    """Return the summary of the run whose outputs start with ``prefix``; ``tau``: the bounded slowdown's."""
    record = run_record(prefix)
    if nb_compute is None:
        nb_compute = record["nb_compute_resources"]
    jobs, categories = input_jobs(prefix, record)
    ran = jobs[jobs["final_state"] != "REJECTED"]
    makespan = float(ran["finish_time"].max()) if len(ran) else 0.0
    busy = float((ran["execution_time"] * ran["requested_number_of_resources"]).sum())
    in_window, window = evaluated(jobs, categories)
    measured = in_window[in_window["final_state"] != "REJECTED"]
    bounded = bounded_slowdowns(measured, tau)

    def mean_max(values):
        return (float(values.mean()), float(values.max())) if len(values) else (0.0, 0.0)

    (mean_wait, max_wait), (mean_slowdown, max_slowdown), (mean_bounded, max_bounded) = (
        mean_max(measured["waiting_time"]), mean_max(measured["stretch"]), mean_max(bounded))
    return {
        "jobs": int(len(jobs)),
        "succeeded": int((jobs["final_state"] == "COMPLETED_SUCCESSFULLY").sum()),
        "evaluated_jobs": int(len(in_window)),
        "window": window,
        "makespan": makespan,
        "mean_wait": mean_wait,
        "max_wait": max_wait,
        "mean_slowdown": mean_slowdown,
        "max_slowdown": max_slowdown,
        "mean_bounded_slowdown": mean_bounded,
        "max_bounded_slowdown": max_bounded,
        "bsld_tau": float(tau),
        "utilisation": busy / (nb_compute * makespan) if makespan > 0 else 0.0,
        "bytes_moved": bytes_moved(prefix),
    }


def window_text(summary):
    """The evaluated window in words, e.g. "777 of 930 jobs (category 1)"."""
    if summary["window"] == "all jobs":
        return f"all {summary['jobs']} jobs (no categories in the workload)"
    return f"{summary['evaluated_jobs']} of {summary['jobs']} jobs ({summary['window']})"


def format_summary(summary):
    rows = [
        ("jobs (succeeded)", f"{summary['jobs']} ({summary['succeeded']})"),
        ("evaluated", window_text(summary)),
        ("makespan", f"{summary['makespan']:.1f} s"),
        ("mean wait", f"{summary['mean_wait']:.1f} s"),
        ("mean / max slowdown", f"{summary['mean_slowdown']:.3f} / {summary['max_slowdown']:.3f}"),
        (f"mean / max bounded slowdown (tau {summary['bsld_tau']:g} s)",
         f"{summary['mean_bounded_slowdown']:.3f} / {summary['max_bounded_slowdown']:.3f}"),
        ("utilisation", f"{100 * summary['utilisation']:.1f} %"),
        ("bytes moved", "unknown" if summary["bytes_moved"] != summary["bytes_moved"]
         else f"{summary['bytes_moved'] / 1e9:.3f} GB"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name:<{width}}  {value}" for name, value in rows)


def job_io_slowdowns(prefix, reference_prefix):
    """Per job: its execution time in the run over its execution time alone on
    the machine (the reference run), for jobs that succeeded in both. Compute
    is never shared between jobs (unless --enable-compute-sharing), so what
    slows a job down is the links and storage it shares: its I/O. Over the
    evaluated jobs when the run's workloads mark categories."""
    run, alone = measured_jobs(prefix), read_jobs(reference_prefix)
    keys = ["workload_name", "job_id"]
    run = run[run["final_state"] == "COMPLETED_SUCCESSFULLY"].astype({"job_id": str})
    alone = alone[alone["final_state"] == "COMPLETED_SUCCESSFULLY"].astype({"job_id": str})
    both = run.merge(alone[keys + ["execution_time"]], on=keys, suffixes=("", "_alone"))
    both = both[both["execution_time_alone"] > 0]
    return pd.Series((both["execution_time"] / both["execution_time_alone"]).to_numpy(),
                     index=both["job_id"].to_numpy(), name="io_slowdown")


def per_job_values(out, row):
    """(slowdowns, bounded slowdowns, I/O slowdowns by job id) of the evaluated jobs of one run, a row of
    a sweep's results table (batio.sweep.results) in the folder ``out``; no I/O slowdown without a reference run.
    InputError when the run's outputs are incomplete."""
    prefix = out / row.run_dir / "out"
    check_outputs(prefix)
    jobs = measured_jobs(prefix)
    tau = getattr(row, "bsld_tau", DEFAULT_BSLD_TAU)
    bounded = bounded_slowdowns(jobs, DEFAULT_BSLD_TAU if pd.isna(tau) else float(tau))
    reference = _reference_dir(out, row.reference_run)
    io = job_io_slowdowns(prefix, reference / "out") if reference is not None else pd.Series(dtype=float)
    return jobs["stretch"].dropna(), bounded.dropna(), io


def _reference_dir(out, reference_run):
    if not isinstance(reference_run, str) or not reference_run:
        return None
    folder = out / "runs" / reference_run
    return folder if (folder / "out_jobs.csv").exists() else None
