"""`batio parity`: every catalog policy on its bundled inputs, on the
embedded engine and on a real Batsim, job by job.

Design notes: docs/internals.md.
"""

from dataclasses import dataclass
import datetime
import json
import logging
from pathlib import Path
import shutil
import subprocess
import time

import pandas as pd

from batio import catalog, engines
from batio.engines import ENGINES, IN_PROCESS
from batio.errors import BatioError, EngineError
from batio.inputs.spec import RunSpec
from batio.inputs.workload import profiles_reached
from batio.outfiles import markdown_table
from batio.resolve import resolve

log = logging.getLogger(__name__)

TOLERANCE = 1e-3   # 0.1 % of Batsim's time
FLOOR_S = 1e-2     # deviations below this many seconds never count as off
SHIFT_S = 1e-9     # the self-sensitivity run's shift of every submission
EMBEDDED, BATSIM = "embedded", "batsim"  # the engines held against each other, each run in its own folder


@dataclass(frozen=True)
class Pair:
    policy: str
    platform: str
    workload: str


def pairs(policies=None):
    """(policy, its bundled platform and workload) for the named catalog policies, or all."""
    names = policies or list(catalog.SCHEDULERS)
    unknown = [name for name in names if name not in catalog.SCHEDULERS]
    if unknown:
        raise BatioError(f"--policies: not catalog names: {', '.join(unknown)} (see `batio list`)")
    return [Pair(name, *catalog.bundled_inputs(name)) for name in names]


def truncated_workload(path, max_jobs, folder):
    """The workload's first ``max_jobs`` jobs by submission time, with the profiles they use."""
    data = json.loads(Path(path).read_text())
    jobs = sorted(data["jobs"], key=lambda job: job["subtime"])[:max_jobs]
    used = profiles_reached((job["profile"] for job in jobs), data["profiles"])
    data["jobs"] = jobs
    data["profiles"] = {name: profile for name, profile in data["profiles"].items() if name in used}
    out = Path(folder) / f"{Path(path).stem}_first{max_jobs}.json"
    out.write_text(json.dumps(data))
    return out


def shifted_workload(path, folder):
    data = json.loads(Path(path).read_text())
    for job in data["jobs"]:
        job["subtime"] += SHIFT_S
    out = Path(folder) / f"{Path(path).stem}_shifted.json"
    out.write_text(json.dumps(data))
    return out


def spec_for(pair: Pair, workload: str | Path, prefix: str | Path, engine: str,
             sg_config: tuple | list = ()) -> RunSpec:
    """The RunSpec of ``pair``'s policy on ``workload`` for ``engine``: its scheduler in the engine's
    process when the engine can drive it there, else over its socket, as real Batsim does."""
    mode = "inprocess" if IN_PROCESS in ENGINES[engine].supports else "socket"
    return resolve(pair.policy, {}, pair.platform, [workload], prefix, engine, mode=mode,
                   sg_config=list(sg_config)).spec


def read_jobs(path):
    """A ``_jobs.csv`` for ``compare_jobs``: ids and allocations as written. Read
    as numbers, a file with a job never allocated (an empty cell) would give
    its allocations as floats ("37.0"), unequal to the other file's "37"."""
    return pd.read_csv(path, dtype={"job_id": str, "allocated_resources": str})


def compare_jobs(embedded, batsim):
    """The comparison columns of one run pair, from both ``_jobs.csv`` tables."""
    keys = ["workload_name", "job_id"]
    both = embedded.merge(batsim, on=keys, how="outer", suffixes=("_e", "_b"), indicator=True)
    alone = both["_merge"] != "both"
    same = both[~alone & (both["allocated_resources_e"].astype(str) == both["allocated_resources_b"].astype(str))]
    deviations = {}
    for column in ("starting_time", "finish_time"):
        absolute = (same[f"{column}_e"] - same[f"{column}_b"]).abs()
        deviations[column] = (absolute, absolute / same[f"{column}_b"].abs().clip(lower=FLOOR_S))
    absolute = pd.concat([deviations[c][0] for c in deviations], axis=1).max(axis=1)
    relative = pd.concat([deviations[c][1] for c in deviations], axis=1).max(axis=1)
    off = (relative > TOLERANCE) & (absolute > FLOOR_S)
    worst = absolute.idxmax() if len(absolute) else None
    return {
        "jobs_embedded": len(embedded), "jobs_batsim": len(batsim),
        "decisions_differ": int(alone.sum() + (len(both) - alone.sum() - len(same))),
        "jobs_off": int(off.sum()),
        "worst_deviation_s": float(absolute.max()) if len(absolute) else 0.0,
        "worst_relative": 0.0 if worst is None else float(relative[worst]),
        "worst_job": "" if worst is None else f"{same.loc[worst, 'workload_name']}!{same.loc[worst, 'job_id']}",
        "makespan_embedded": float(embedded["finish_time"].max()),
        "makespan_batsim": float(batsim["finish_time"].max()),
    }


def _timed(run):
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def run_pair(pair, out, max_jobs=None, timeout_s=3600, sg_config=()):
    """Both engines on one pair; returns the table row (an ``error`` column if one failed)."""
    folder = Path(out) / pair.policy
    folder.mkdir(parents=True, exist_ok=True)
    workload = catalog.workload_path(pair.workload)
    if max_jobs:
        workload = truncated_workload(workload, max_jobs, folder)
    row = {"policy": pair.policy, "platform": pair.platform, "workload": pair.workload,
           "max_jobs": max_jobs or "", "error": ""}
    try:
        embedded = spec_for(pair, workload, folder / EMBEDDED / "out", EMBEDDED, sg_config)
        row["wall_embedded_s"] = _timed(lambda: engines.run(embedded, EMBEDDED))
        batsim = spec_for(pair, workload, folder / BATSIM / "out", BATSIM, sg_config)
        row["wall_batsim_s"] = _timed(lambda: engines.run(batsim, BATSIM, wall_timeout_s=timeout_s))
        embedded_jobs = read_jobs(f"{embedded.out_prefix}_jobs.csv")
        row.update(compare_jobs(embedded_jobs, read_jobs(f"{batsim.out_prefix}_jobs.csv")))
        if row["jobs_off"] or row["decisions_differ"]:
            shifted = spec_for(pair, shifted_workload(workload, folder), folder / "shifted" / "out", EMBEDDED,
                               sg_config)
            engines.run(shifted, EMBEDDED)
            itself = compare_jobs(read_jobs(f"{shifted.out_prefix}_jobs.csv"), embedded_jobs)
            row.update(self_decisions_differ=itself["decisions_differ"], self_jobs_off=itself["jobs_off"],
                       self_worst_s=itself["worst_deviation_s"])
    except BatioError as error:
        row["error"] = str(error).splitlines()[0]
    return row


def batsim_version():
    try:
        return subprocess.run(["batsim", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return "unknown"


MARKDOWN_COLUMNS = ["policy", "workload", "jobs_batsim", "decisions_differ", "jobs_off", "worst_deviation_s",
                    "worst_relative", "self_decisions_differ", "self_jobs_off", "self_worst_s", "makespan_embedded",
                    "makespan_batsim", "wall_embedded_s", "wall_batsim_s", "error"]


COUNT_COLUMNS = {"jobs_batsim", "decisions_differ", "jobs_off", "self_decisions_differ", "self_jobs_off"}


def _cell(column, value):
    number = pd.to_numeric(value, errors="coerce")
    if pd.isna(number):
        return "" if pd.isna(value) else str(value)
    if column in COUNT_COLUMNS:
        return f"{int(number):,}"
    return f"{number:.2e}" if "worst" in column else f"{number:,.1f}"


def markdown(table, header):
    shown = table.reindex(columns=MARKDOWN_COLUMNS)
    rows = [[_cell(column, row[column]) for column in MARKDOWN_COLUMNS] for _, row in shown.iterrows()]
    return f"{header}\n\n{markdown_table(MARKDOWN_COLUMNS, rows)}\n"


def parity(out, policies=None, max_jobs=None, sg_config=()):
    """Run every pair, write ``parity.csv`` and ``parity.md``; return the table.

    Rows already in ``parity.csv`` without an error are kept (a rerun resumes)."""
    if shutil.which("batsim") is None:
        raise EngineError("batio parity needs a `batsim` binary (Batsim 4.2.1) on PATH")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    done = {}
    if (out / "parity.csv").exists():
        previous = pd.read_csv(out / "parity.csv", keep_default_na=False)
        done = {row["policy"]: row for row in previous.to_dict("records")
                if not row["error"] and str(row["max_jobs"]) == str(max_jobs or "")}
    rows = []
    for pair in pairs(policies):
        if pair.policy in done:
            rows.append(done[pair.policy])
            continue
        log.info("parity: %s on %s with %s", pair.policy, pair.platform, pair.workload)
        rows.append(run_pair(pair, out, max_jobs, sg_config=sg_config))
        pd.DataFrame(rows).to_csv(out / "parity.csv", index=False)  # nothing simulated is lost
    table = pd.DataFrame(rows)
    table.to_csv(out / "parity.csv", index=False)
    header = (f"Parity of the embedded engine with `{batsim_version()}`, "
              f"{datetime.date.today().isoformat()}: off = start or finish more than "
              f"{TOLERANCE:.1%} (and {FLOOR_S} s) from Batsim's, on jobs with the same resources; self = the "
              f"embedded engine against itself with every submission {SHIFT_S:g} s later (rows with jobs off)"
              + (f"; SimGrid options {', '.join(sg_config)} on both engines." if sg_config else "."))
    (out / "parity.md").write_text(markdown(table, header))
    return table
