"""What a comparison found and what shaped it: the block report.md and report.html open with.

The findings are each policy's verdict against the baseline on the judged
metrics (comparison.py's paired differences); the parameters are everything that
decided them: the bounded slowdown's tau, the replicas (windows with their
dates), the engine, the I/O slowdown's reference runs and the exact command.
"""

from datetime import datetime, timedelta
import json
import math
from pathlib import Path

import pandas as pd

from batio.report.metrics import DEFAULT_BSLD_TAU
from batio.report.shown import JUDGED, SHOWN, policy_label, shown_difference

NO_RUN = "no successful run (see Failed runs)"
FAILED_HEADER = ["run", "workload", "seed", "platform", "engine", "error"]


def tau_of(results):
    """The bounded slowdown threshold the successful runs were summarised with (the default without any)."""
    if "bsld_tau" not in results:
        return DEFAULT_BSLD_TAU
    taus = pd.to_numeric(results.loc[results["status"] == "ok", "bsld_tau"], errors="coerce").dropna().unique()
    return float(taus[0]) if len(taus) else DEFAULT_BSLD_TAU


def _finding(row, baseline_ok, metric):
    if not baseline_ok:
        return "baseline has no successful run"
    if row["runs_ok"] == 0:
        return NO_RUN
    verdict = row.get(f"{metric}_verdict")
    if not isinstance(verdict, str) or verdict == "-":
        return "-"
    difference = shown_difference(metric, row[f"{metric}_diff"], row[f"{metric}_diff_ci"])
    return f"{verdict}: {difference}" if row.get("pairs", 0) >= 2 else verdict


def findings(groups, baseline):
    """(header, rows): each policy's verdict against ``baseline`` on the judged metrics that have values,
    per group (``groups``: [(keys, summary rows)]); None without a baseline or another policy."""
    judged = [m for m in JUDGED if any(f"{m}_verdict" in g and g[m].notna().any() for _, g in groups)]
    several = len(groups) > 1
    rows = []
    for (platform, workload, engine), group in groups:
        base = group[group["policy"] == baseline]
        baseline_ok = len(base) > 0 and int(base["runs_ok"].iloc[0]) > 0
        for _, row in group[group["policy"] != baseline].iterrows():
            cells = [policy_label(row["policy"], row["degraded"])]
            cells += [f"{row.get('pairs', 0):.0f}"] + [_finding(row, baseline_ok, m) for m in judged]
            rows.append(([f"{workload} on {platform} ({engine})"] if several else []) + cells)
    if baseline is None or not rows:
        return None
    header = (["group"] if several else []) + ["policy", "pairs"] + [SHOWN[m][0] for m in judged]
    return header, rows


def _window(path):
    """(window number, 'seconds A-B', 'date - date' or '') of a window workload file, None for other files."""
    try:
        workload = json.loads(Path(path).read_text())
    except (OSError, ValueError, TypeError):
        return None
    window = workload.get("window") if isinstance(workload, dict) else None
    if not isinstance(window, dict):
        return None
    start, end = window["trace_seconds"]
    trace = workload.get("trace") or {}
    dates = ""
    if trace.get("origin_date"):
        origin = datetime.fromisoformat(trace["origin_date"])
        dates = " to ".join((origin + timedelta(seconds=s)).isoformat(sep=" ") for s in (start, end))
    return window["window"], f"{start:g} to {end:g}", dates, Path(window["source"]).name


def windows(results):
    """(header, rows) of the windows the replicas are (``--windows``), None when they are not windows."""
    rows = {}
    for row in results.drop_duplicates(["workload", "seed"]).itertuples():
        found = _window(row.workload_file) if isinstance(row.workload_file, str) else None
        if found is not None:
            number, seconds, dates, source = found
            rows[(row.workload, number)] = [row.workload, number, source, seconds, dates or "(the trace has no dates)"]
    if not rows:
        return None
    return ["workload", "window (replica)", "trace", "trace seconds", "dates"], [rows[key] for key in sorted(rows)]


def parameters(results, baseline, tau, made_from):
    """[(name, value)]: what shaped the verdicts, as the reports list them first."""
    seeds = sorted({int(seed) for seed in results["seed"].dropna()}) if "seed" in results else []
    has_windows = windows(results) is not None
    plural = "s" * (len(seeds) != 1)
    replicas = (f"{len(seeds)} window{plural} of the trace (listed below)" if has_windows
                else f"{len(seeds)} seed{plural} of the workload generator ({' '.join(map(str, seeds))})" if seeds
                else "1 (a workload file: the same jobs on every run)")
    references = results["reference_run"].fillna("").astype(str) if "reference_run" in results else pd.Series([""])
    rows = [("baseline", baseline or "-"),
            ("bounded slowdown tau", f"{tau:g} s"),
            ("replicas", replicas),
            ("engine", ", ".join(dict.fromkeys(results["engine"].astype(str)))),
            ("I/O slowdown", "measured against reference runs of the jobs alone" if (references != "").any()
             else "not measured (no reference runs, --no-io-slowdown)")]
    return rows + ([("command", made_from)] if made_from else [])


def failed_rows(results):
    """The rows of the Failed runs table: each failed run with its error, and each reference run without
    which a policy run has no I/O slowdown."""
    failed = [(row.policy, row, row.error) for row in results.itertuples() if row.status != "ok"]
    failed += [("reference run (jobs alone): no I/O slowdown", row, row.reference_error)
               for row in results.drop_duplicates("reference_run").itertuples()
               if isinstance(getattr(row, "reference_error", ""), str) and row.reference_error]
    return [[what, row.workload, "-" if pd.isna(row.seed) else row.seed, row.platform, row.engine,
             _first_line(error)] for what, row, error in failed]


def _first_line(error):
    text = "" if error is None or (isinstance(error, float) and math.isnan(error)) else str(error).strip()
    return text.splitlines()[0] if text else "?"


def degraded_rows(summary):
    """[[policy, what its inputs lack]] of the policies run although they do not fit (--allow-unfit)."""
    if not len(summary):
        return []
    degraded = summary[summary["degraded"] != ""].drop_duplicates("policy")
    return [[row.policy, row.degraded] for row in degraded.itertuples()]
