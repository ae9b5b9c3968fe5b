"""A sweep's results: the tidy table of its runs (``results.csv``), written and read back."""

import json
import logging
import math
import os
from pathlib import Path

import pandas as pd

from batio.errors import InputError
from batio.outfiles import writing
from batio.report import metrics
from batio.sweep.run import INTERRUPTED, RESULT_FILE, RESUME_HINT, read_result

logger = logging.getLogger(__name__)

RESULTS_FILE = "results.csv"


# -- the table ------------------------------------------------------------------------------
def gather(runs, out, tau=metrics.DEFAULT_BSLD_TAU):
    """The tidy table of the policy runs (one row each) with the I/O slowdown from their reference runs,
    written to ``OUT/results.csv`` and returned; a run summarised with another bounded slowdown threshold
    than ``tau`` is summarised again. A run not finished is a row marked interrupted."""
    out = Path(out)
    # A run without a result did not finish: a signal or a lost worker interrupted it.
    results = {run.run_id: read_result(run, out) or {**run.identity(), "status": INTERRUPTED,
                                                     "error": f"not finished; {RESUME_HINT}"}
               for run in runs}
    rows = []
    for run in runs:
        if run.kind != "policy":
            continue
        row = dict(results[run.run_id])
        if row["status"] == "ok" and row.get("bsld_tau") != tau:
            row.update(metrics.summarize(out / row["run_dir"] / "out", tau=tau))
        row["degraded"] = "; ".join(run.degraded)  # as this grid's check says, whenever the run was made
        row["mean_io_slowdown"] = row["max_io_slowdown"] = math.nan
        reference = results.get(run.reference_run)
        # Without its reference run a row has no I/O slowdown: say why.
        row["reference_error"] = reference["error"] if reference and reference["status"] != "ok" else ""
        if row["status"] == "ok" and reference and reference["status"] == "ok":
            ratios = metrics.job_io_slowdowns(out / row["run_dir"] / "out", out / reference["run_dir"] / "out")
            if len(ratios):
                row["mean_io_slowdown"], row["max_io_slowdown"] = float(ratios.mean()), float(ratios.max())
        for key, value in run.options.items():
            row[f"opt_{key}"] = json.dumps(value) if isinstance(value, (dict, list)) else value
        rows.append(row)
    table = pd.DataFrame(rows)
    first = ["run_id", "status", "error", "policy", "scheduler", "options", "platform", "workload", "seed", "engine"]
    metric_columns = [m for m in metrics.METRICS if m in table.columns or not rows]
    options = sorted(c for c in table.columns if c.startswith("opt_"))
    rest = [c for c in table.columns if c not in first + metric_columns + options and c != "kind"]
    table = table.reindex(columns=first + metric_columns + options + rest)
    table["seed"] = table["seed"].astype("Int64")
    temporary = out / f".{RESULTS_FILE}.tmp"  # a reader never sees half a table
    with writing(temporary, newline="") as stream:
        table.to_csv(stream, index=False)
    os.replace(temporary, out / RESULTS_FILE)
    return table


def read_results(out, config="CONFIG", *, partial=False):
    """The policy runs of the sweep output folder ``out`` as ``gather``
    tabulates them, split into (ok, failed) for a step that makes a paper's
    tables and figures; each failed run is logged. ``results.csv``, or with
    ``partial`` every run's ``result.json`` (a sweep writes ``results.csv``
    only at its end: a partial sweep is then usable, without the reference
    runs' I/O slowdown). ``seed`` is empty (<NA>) for a workload file;
    ``error`` is "" for a run that did not fail. InputError, naming the
    folder and the command to run, when it holds no run."""
    out = Path(out)
    if partial:
        rows = [json.loads(path.read_text()) for path in sorted(out.glob(f"runs/*/{RESULT_FILE}"))]
        table = pd.DataFrame([row for row in rows if row.get("kind") == "policy"])
    elif (out / RESULTS_FILE).is_file():
        table = pd.read_csv(out / RESULTS_FILE)
    else:
        table = pd.DataFrame()
    if table.empty:
        what = f"runs/*/{RESULT_FILE} of a policy run" if partial else RESULTS_FILE
        raise InputError(out, f"no {what}: run `batio sweep {config} --out {out}` first")
    # An all-empty column reads as floats (NaN): make it text.
    table["error"] = [error if isinstance(error, str) else "" for error in table.get("error", [None] * len(table))]
    table["seed"] = pd.array(table["seed"].where(table["seed"].notna(), None), dtype="Int64")
    failed = table["status"] != "ok"
    for row in table[failed].itertuples():
        logger.warning("run %s (%s) failed: %s", row.run_id, row.policy, row.error)
    return table[~failed].reset_index(drop=True), table[failed].reset_index(drop=True)
