"""The cross-paper matrix: every catalog policy on every input that fits it,
ranked per input on one page.

Design notes: docs/internals.md.
"""

from dataclasses import dataclass, field
import json
import math
from pathlib import Path

import pandas as pd

from batio import catalog, requirements, sweep
from batio.errors import InputError
from batio.inputs.workload import load_workload
from batio.outfiles import markdown_table, write_text
from batio.parity import truncated_workload
from batio.report.shown import SHOWN, shown_value

# The metrics each input's policies are ranked on (lower is better for all);
# the I/O slowdown only where the input's jobs do I/O (elsewhere it is 1 by construction).
RANKED = ("makespan", "mean_wait", "mean_slowdown", "max_slowdown", "mean_io_slowdown")
CONFIG_KEYS = {
    "inputs": "a list of {platform: NAME, workload: NAME, jobs: N, options: {...}}",
    "schedulers": "'catalog' (every catalog scheduler) or a list of catalog names",
    "jobs": "an integer >= 1: keep each input's first N jobs by submission time",
    "small": "{jobs: N, schedulers: [...]}: what --small changes",
    "run_options": "as a sweep's run_options (docs/sweeps.md)",
}
INPUT_KEYS = ("platform", "workload", "jobs", "options")
SMALL_KEYS = ("jobs", "schedulers")


@dataclass
class MatrixInput:
    platform: tuple            # (label, path)
    workload: str              # workload label (its file's name)
    workload_path: str
    jobs: int | None = None    # keep the first N jobs; None: all
    options: dict = field(default_factory=dict)


@dataclass
class Matrix:
    source: str
    inputs: list               # [MatrixInput]
    schedulers: list           # catalog names
    run_options: dict = field(default_factory=dict)


@dataclass
class Skip:
    platform: str
    workload: str
    policy: str
    reason: str


@dataclass
class InputSummary:
    """One input as planned: its labels, job count, whether its jobs do I/O."""
    platform: str
    workload: str
    source_workload: str
    jobs: int
    jobs_in_file: int
    does_io: bool


# -- the config ---------------------------------------------------------------------------
def _jobs_count(value, source, where):
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise InputError(source, f"expected {CONFIG_KEYS['jobs']}, got {value!r}", field=where)


def _scheduler_names(value, source, where):
    if value == "catalog":
        return list(catalog.SCHEDULERS)
    if not isinstance(value, list) or not value or not all(isinstance(name, str) for name in value):
        raise InputError(source, f"expected {CONFIG_KEYS['schedulers']}, got {value!r}", field=where)
    unknown = [name for name in value if name not in catalog.SCHEDULERS]
    if unknown:
        raise InputError(source, f"not a catalog scheduler: {unknown[0]!r} (the matrix runs catalog names, "
                                 "whose requirements the catalog declares; see `batio list`)", field=where)
    return list(dict.fromkeys(value))


def _input(entry, index, base, source, default_jobs):
    where = f"inputs[{index}]"
    if not isinstance(entry, dict):
        raise InputError(source, f"expected {{platform: NAME, workload: NAME}}, got {entry!r}", field=where)
    sweep.reject_unknown_keys(entry, INPUT_KEYS, source, where)
    for key in ("platform", "workload"):
        if not isinstance(entry.get(key), str):
            raise InputError(source, f"expected a {key} file or bundled name, got {entry.get(key)!r}",
                             field=f"{where}.{key}")
    platform = sweep.platform_entry(entry["platform"], base, source, f"{where}.platform")
    workload = sweep.workload_entry(entry["workload"], base, source, f"{where}.workload")
    if workload.path is None:
        raise InputError(source, "the matrix takes workload files or bundled names, not generators",
                         field=f"{where}.workload")
    try:  # checked before it is cut or its jobs' fields are read
        load_workload(workload.path, "w0")
    except InputError as error:
        raise InputError(source, str(error), field=f"{where}.workload") from None
    jobs = _jobs_count(entry["jobs"], source, f"{where}.jobs") if "jobs" in entry else default_jobs
    options = entry.get("options", {})
    if not isinstance(options, dict):
        raise InputError(source, f"expected a mapping of scheduler options, got {options!r}", field=f"{where}.options")
    return MatrixInput(platform, workload.label, workload.path, jobs, options)


def load_matrix(path, small=False):
    """Read and check a matrix config; ``small`` applies its ``small`` section."""
    path = Path(path)
    config = sweep.read_yaml(path, "matrix config")
    if not isinstance(config, dict):
        raise InputError(path, "must be a YAML mapping with keys inputs and schedulers")
    sweep.reject_unknown_keys(config, CONFIG_KEYS, path, "")
    for key in ("inputs", "schedulers"):
        if key not in config:
            raise InputError(path, f"missing: expected {CONFIG_KEYS[key]}", field=key)
    smaller = config.get("small", {})
    if not isinstance(smaller, dict):
        raise InputError(path, f"expected {CONFIG_KEYS['small']}, got {smaller!r}", field="small")
    sweep.reject_unknown_keys(smaller, SMALL_KEYS, path, "small")
    if small and not smaller:
        raise InputError(path, "--small needs a `small` section saying what it changes", field="small")
    jobs = _jobs_count(config["jobs"], path, "jobs") if "jobs" in config else None
    schedulers = _scheduler_names(config["schedulers"], path, "schedulers")
    small_jobs = _jobs_count(smaller["jobs"], path, "small.jobs") if "jobs" in smaller else None
    small_schedulers = (_scheduler_names(smaller["schedulers"], path, "small.schedulers")
                        if "schedulers" in smaller else None)
    inputs = config["inputs"]
    if not isinstance(inputs, list) or not inputs:
        raise InputError(path, f"expected {CONFIG_KEYS['inputs']}, got {inputs!r}", field="inputs")
    base = path.resolve().parent
    items = [_input(entry, index, base, path, jobs) for index, entry in enumerate(inputs)]
    seen = set()
    for index, item in enumerate(items):
        input_key = (item.platform[0], item.workload, item.jobs)
        if input_key in seen:  # their rows and sections could not be told apart
            raise InputError(path, f"the same input twice: {item.workload} on {item.platform[0]}"
                                   + (f", first {item.jobs} jobs" if item.jobs else ""), field=f"inputs[{index}]")
        seen.add(input_key)
    if small:
        schedulers = small_schedulers or schedulers
        if small_jobs:  # --small's job count bounds every input, its own `jobs` included
            for item in items:
                item.jobs = min(item.jobs or small_jobs, small_jobs)
    return Matrix(str(path), items, schedulers, sweep.run_options_entry(config.get("run_options", {}), path))


# -- planning and running -------------------------------------------------------------------
def plan_matrix(matrix, out):
    """(planned runs, skipped pairs, input summaries); sliced workloads go to OUT/workloads."""
    out = Path(out)
    (out / "workloads").mkdir(parents=True, exist_ok=True)
    runs, skipped, summaries = [], [], []
    for item in matrix.inputs:
        workload_file, label = item.workload_path, item.workload
        jobs_in_file = len(json.loads(Path(workload_file).read_text())["jobs"])
        if item.jobs is not None and item.jobs < jobs_in_file:
            workload_file = str(truncated_workload(workload_file, item.jobs, out / "workloads"))
            label = f"{item.workload}-first{item.jobs}"
        workload = json.loads(Path(workload_file).read_text())
        facts = requirements.InputFacts.of(item.platform[1], workload)
        platform = item.platform[0]
        summaries.append(InputSummary(platform, label, item.workload, len(workload["jobs"]), jobs_in_file,
                                      facts.does_io))
        policies = []
        for name in matrix.schedulers:
            declared = catalog.declaration(name, {})
            wanted = declared.requires.get("options", ())
            options = {key: value for key, value in item.options.items() if key in wanted}
            reasons = requirements.unmet(declared, facts, options)
            if reasons:
                skipped.append(Skip(platform, label, name, "; ".join(reasons)))
                continue
            policies.append(sweep.Policy(name, name, options))
        if not policies:
            continue
        # A reference run (jobs alone) only where there is I/O to slow jobs down.
        grid = sweep.Grid(source=matrix.source, platforms=[item.platform],
                          workloads=[sweep.WorkloadSource(label, path=workload_file)], policies=policies,
                          io_slowdown=facts.does_io, run_options=matrix.run_options)
        sweep.check_grid(grid)
        runs += sweep.plan(grid, out)
    return runs, skipped, summaries


def run_matrix(matrix, out, workers=0, retry_failed=False, progress=True):
    """Plan, run (resuming) and gather; returns (results table, skipped, summaries, counts)."""
    out = Path(out).resolve()
    runs, skipped, summaries = plan_matrix(matrix, out)
    counts = sweep.run_all(runs, out, workers, retry_failed=retry_failed, progress=progress)
    table = sweep.gather(runs, out)
    return table, skipped, summaries, counts


# -- the page -------------------------------------------------------------------------------
def ranked_metrics(summary):
    return [metric for metric in RANKED if metric != "mean_io_slowdown" or summary.does_io]


def rank_policies(rows, metrics):
    """The successful runs of one input, ranked: a column ``METRIC_rank`` per metric
    (1 = lowest; equal values as shown share the best rank), ``mean_rank`` over the
    metrics a policy has, sorted by it, then by policy name."""
    ranked = rows.copy()
    ranks = []
    for metric in metrics:
        # Rank the values as the page shows them, so that two equal-looking values tie.
        shown = pd.to_numeric(ranked[metric], errors="coerce").map(
            lambda value, metric=metric: math.nan if pd.isna(value) else float(shown_value(metric, value)))
        ranked[f"{metric}_rank"] = shown.rank(method="min")
        ranks.append(f"{metric}_rank")
    ranked["mean_rank"] = ranked[ranks].mean(axis=1, skipna=True)
    return ranked.sort_values(["mean_rank", "policy"], kind="stable").reset_index(drop=True)


def _ranking_table(ranked, metrics):
    header = ["#", "policy"] + [SHOWN[metric][0] for metric in metrics] + ["mean rank"]
    rows = []
    for position, row in enumerate(ranked.itertuples(), start=1):
        cells = [str(position), row.policy]
        for metric in metrics:
            value = getattr(row, metric)
            rank = getattr(row, f"{metric}_rank")
            cells.append("-" if pd.isna(value) else f"{shown_value(metric, value)} ({int(rank)})")
        cells.append("-" if pd.isna(row.mean_rank) else f"{row.mean_rank:.2f}")
        rows.append(cells)
    return markdown_table(header, rows, align_right_from=2)


def _best(ranked, metric, limit=3):
    if ranked.empty or ranked[f"{metric}_rank"].isna().all():
        return "-"
    best = list(ranked.loc[ranked[f"{metric}_rank"] == 1, "policy"])
    if len(best) == len(ranked) > 1:
        return f"all {len(best)} tied"
    return ", ".join(best[:limit]) + (f" (+{len(best) - limit} tied)" if len(best) > limit else "")


PAGE_NOTES = """\
- **Ranks**: per input, each policy's rank on each metric among the policies that
  ran there (1 = lowest; values equal as shown share the better rank, e.g. 1, 1, 3).
  Rows are ordered by the mean of a policy's ranks, then by name. A policy's
  rank says nothing across inputs: each input has its own set of policies.
- **makespan**: the last job's finish time, from time 0. **wait**: start - submission.
- **slowdown**: Batsim's stretch, turnaround / execution time, per job (not the
  bounded slowdown: very short jobs can have a large one); mean and max over the jobs.
- **I/O slowdown**: per job, execution time in the run / execution time alone on the
  machine (a reference run: the same jobs one after the other, FCFS); mean over the
  jobs. Shown only for inputs whose jobs move bytes to storage: elsewhere it is 1.
- **Fit**: what each catalog scheduler needs of its input is declared on its
  class (`REQUIRES`, `batio describe NAME`) and checked on the platform's hosts and
  the workload's jobs (`batio/requirements.py`, the check `batio run`, `compare` and `sweep`
  make too); a pair that lacks something is not run and is listed under *Skipped*
  with every unmet requirement. Conversely, a job field that stands for work some
  schedulers carry out themselves (`PERFORMS`: the locality policies load each
  job's `file`) makes its input fit those schedulers only. The requirements:
"""


@dataclass
class InputRanking:
    """One input's ranked policies, as its section shows them."""
    summary: InputSummary
    metrics: list           # the metrics ranked on
    ranked: pd.DataFrame    # rank_policies' table of its successful runs
    failures: pd.DataFrame  # its runs that did not succeed
    skips: list             # [Skip]

    @property
    def name(self):
        return f"{self.summary.source_workload} on {self.summary.platform}"


def _rankings(table, skipped, summaries):
    rankings = []
    for summary in summaries:
        of_input = table[(table["platform"] == summary.platform) & (table["workload"] == summary.workload)]
        metrics = ranked_metrics(summary)
        skips = [skip for skip in skipped if (skip.platform, skip.workload) == (summary.platform, summary.workload)]
        rankings.append(InputRanking(summary, metrics, rank_policies(of_input[of_input["status"] == "ok"], metrics),
                                     of_input[of_input["status"] != "ok"], skips))
    return rankings


def _input_section(item):
    summary, ranked, skips, failures = item.summary, item.ranked, item.skips, item.failures
    jobs = (f"first {summary.jobs} of {summary.jobs_in_file} jobs" if summary.jobs < summary.jobs_in_file
            else f"all {summary.jobs} jobs")
    lines = [f"## {item.name}", "",
             f"Workload `{summary.source_workload}` ({jobs}), platform `{summary.platform}`; "
             f"{len(ranked)} policies ranked, {len(skips)} skipped, {len(failures)} failed."
             + ("" if summary.does_io else " Its jobs do no I/O: no I/O slowdown."), ""]
    if len(ranked):
        lines += [_ranking_table(ranked, item.metrics), ""]
    if skips:
        by_reason: dict[str, list[str]] = {}
        for skip in skips:
            by_reason.setdefault(skip.reason, []).append(skip.policy)
        lines += ["Skipped:", "", markdown_table(
            ["policies", "why they do not fit this input"],
            [[", ".join(policies), reason] for reason, policies in by_reason.items()]), ""]
    if len(failures):
        lines += ["Failed:", "", markdown_table(
            ["policy", "error"], [[row.policy, str(row.error).splitlines()[0] if str(row.error) else "?"]
                                  for row in failures.itertuples()]), ""]
    return lines


def _overview(rankings):
    header = ["input", "jobs", "ranked", "skipped", "failed"] + [f"best {SHOWN[m][0]}" for m in RANKED]
    rows = [[item.name, str(item.summary.jobs), str(len(item.ranked)), str(len(item.skips)), str(len(item.failures))]
            + [_best(item.ranked, metric) if metric in item.metrics else "n/a (no I/O)" for metric in RANKED]
            for item in rankings]
    return markdown_table(header, rows, align_right_from=1)


# -- the findings: what the tables below say, in a few lines ------------------------------------
# The policy whose values the findings measure the best ones against, on the inputs where it ran.
REFERENCE = "fcfs"
GAINED_ON = ("makespan", "mean_wait")


def _first(ranked):
    """The policies first by mean rank (several when tied)."""
    return list(ranked.loc[ranked["mean_rank"] == ranked["mean_rank"].min(), "policy"])


def _most_often_first(contested):
    counts: dict[str, list[int]] = {}   # policy -> [inputs where it is first, alone or tied; inputs where it ran]
    for item in contested:
        first = _first(item.ranked)
        for policy in item.ranked["policy"]:
            counts.setdefault(policy, [0, 0])
            counts[policy][0] += policy in first
            counts[policy][1] += 1
    most = max(first for first, _ in counts.values())
    leaders = sorted(policy for policy, (first, _) in counts.items() if first == most)
    return ("**Most often first by mean rank** (alone or tied, of the inputs where the policy ran with "
            "others): " + ", ".join(f"{policy} ({counts[policy][0]} of {counts[policy][1]})" for policy in leaders)
            + ".")


def _first_alone(contested):
    alone = [(item, _first(item.ranked)[0]) for item in contested if len(_first(item.ranked)) == 1]
    if not alone:
        return "**First alone by mean rank**: none; on every input two or more policies share first place."
    shared = len(contested) - len(alone)
    return ("**First alone by mean rank**: "
            + "; ".join(f"{policy} on {item.name} (mean rank {item.ranked['mean_rank'].min():.2f}, next "
                        f"{item.ranked['mean_rank'].iloc[1]:.2f})" for item, policy in alone)
            + (f"; on the other {shared} inputs two or more policies share first place." if shared else "."))


def _gain(item, metric):
    """(how much lower the best shown value is than REFERENCE's, as a fraction; best; the reference's)."""
    ranked = item.ranked
    shown = ranked[metric].map(lambda value: float(shown_value(metric, value)))
    reference = float(shown[ranked["policy"] == REFERENCE].iloc[0])
    best = float(shown.min())
    return (reference - best) / reference if reference else 0.0, best, reference


def _percent(fraction):
    return f"{100 * fraction:.1f} %"


def _gains(contested):
    against = [item for item in contested if REFERENCE in set(item.ranked["policy"])]
    parts = []
    for metric in GAINED_ON:
        measured = [item for item in against if item.ranked[metric].notna().all()]
        if not measured:
            continue
        gains = [(_gain(item, metric), item) for item in measured]
        (most, best, reference), item = max(gains, key=lambda pair: pair[0][0])
        heading = SHOWN[metric][0]
        label, unit = heading.removesuffix(" (s)"), " s" if heading.endswith(" (s)") else ""
        spread = [gain for (gain, _, _), _ in gains]
        parts.append(f"{label} {_percent(min(spread))} to {_percent(most)} "
                     f"(median {_percent(float(pd.Series(spread).median()))}), "
                     f"most on {item.name} ({_best(item.ranked, metric)}: {shown_value(metric, best)}{unit} "
                     f"against {shown_value(metric, reference)}{unit})")
    if not parts:
        return None
    return (f"**Gain over {REFERENCE}** (the best policy's value below {REFERENCE}'s, over the "
            f"{len(against)} inputs where {REFERENCE} ran with others): " + "; ".join(parts) + ".")


def _no_difference(contested):
    tied = [item for item in contested
            if all((item.ranked[f"{metric}_rank"] == 1).all() for metric in item.metrics)]
    if not tied:
        return None
    return ("**No difference between policies** on " + ", ".join(
        f"{item.name} ({len(item.ranked)} policies)" for item in tied) + ": equal values on every metric.")


# What every finding rests on: said with them, not only in the definitions at the end.
RESTS_ON = ("**What these rest on**: one run per policy and input (one workload, one seed: no replicas, so "
            "no interval and no significance test; `batio compare --seeds` or `--windows` gives both), on "
            "batio's embedded engine. Against real Batsim 4.2.1 (docs/parity.md), each policy on its own "
            "bundled inputs takes Batsim's decisions, but for eight on `catios_bw` (CATIOS, TIOAS, easy-ljf), "
            "whose schedules differ from Batsim's as much as from their own with every submission 1 ns later: "
            "ranks on `catios_bw` are within that sensitivity. The other pairs were not compared with real "
            "Batsim.")


def findings(rankings):
    """The page's opening bullets, computed from the rankings: which policies come first and where, and how
    far the best values are below REFERENCE's. Only inputs where two policies or more ran count."""
    contested = [item for item in rankings if len(item.ranked) >= 2]
    if not contested:
        return ["- No input had two policies or more to compare."]
    lines = [_most_often_first(contested), _first_alone(contested), _gains(contested), _no_difference(contested),
             RESTS_ON]
    return [f"- {line}" for line in lines if line]


def write_page(path, table, skipped, summaries, made_by=""):
    """The matrix page: what was found, an overview, then per input its ranking and skipped
    policies, the definitions, and last how the page was made."""
    path = Path(path)
    ok, failed = table[table["status"] == "ok"], table[table["status"] != "ok"]
    rankings = _rankings(table, skipped, summaries)
    lines = ["# The cross-paper matrix: every catalog policy on every input that fits it", "",
             "## What was found", "", *findings(rankings), "",
             "## Overview", "",
             f"{len(ok)} runs ranked, {len(skipped)} pairs skipped, {len(failed)} runs failed, over "
             f"{len(summaries)} inputs.", "", _overview(rankings), ""]
    for item in rankings:
        lines += _input_section(item)
    lines += ["## Definitions", "", PAGE_NOTES]
    lines += [f"  - `{key}`: {meaning}" for key, meaning in requirements.REQUIREMENT_KEYS.items()] + [""]
    if made_by:
        lines += ["## How this page was made", "", made_by, ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, "\n".join(lines))
    return path
