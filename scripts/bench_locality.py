"""Whole-day benchmark of the locality-aware policies (paper 004,
``schedulers/locality/locality.py``) on the 486-node memory cluster.

Not a test: for each variant, simulates the whole trace of
``../shared/data/memcluster486/2022-09-10_V10000_anonymous.txt`` (converted
by ``batio.workloads.memcluster486``; about 22,000 jobs) on
``platforms/memcluster486.xml`` with the embedded engine, one variant at a
time, each in a fresh process, and reports: wall time, peak resident memory
and CPU time of the engine process (which runs the scheduler in-process;
``getrusage(RUSAGE_CHILDREN)``; on a shared machine CPU time varies less than
wall time, and two schedulers that decide alike differ in it by their
scheduler's share only), the scheduler's time per round (median, 99th
percentile, max, total), the jobs examined (planned) per round, and what was decided
(loads, re-used files, killed jobs), with digests that tell whether two
commits decided alike (``decisions_sha256``, ``examined_sha256``). Under
batio's model a category -2 job whose node's row is put back
(``PinnedRows``) is not examined, and a job after a cut walk is counted in
the round that plans it (``QueueWalk``).

    .venv/bin/python scripts/bench_locality.py [--variants fcfs,fcfs-bf,lea,lea-bf] \\
        [--trace PATH | --workload JSON] [--options JSON | --authors-model] [--out DIR] \\
        [--engine batsim] [--against DIR]

``--engine batsim`` runs the same scheduler on a real ``batsim`` binary found
on PATH (Batsim 4.2.1, over ZeroMQ) instead of the embedded engine, with
the same measures (CPU time then counts Batsim's process and the
scheduler's). ``--against DIR`` compares each variant's jobs with those of
an earlier run of this script in DIR (``batio.parity.compare_jobs``: jobs
on another node or missing, jobs whose start or finish differ beyond
parity's tolerance, the largest difference), e.g. the embedded engine's
day against real Batsim's.

Variants are ``POLICY`` or ``POLICY-bf`` for POLICY in fcfs, eft, lea, leo,
lem. ``--options`` adds scheduler options to every variant (e.g.
``'{"round_interval": 30}'``); ``--authors-model`` adds ``locality.AUTHORS_MODEL``.
Results go to ``DIR/bench.json`` and a table on stdout.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
import resource
import shutil
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from batio import engines
from batio.engines import DEFAULT_ENGINE
from batio.errors import exits_on_error
from batio.parity import compare_jobs, read_jobs
from batio.resolve import resolve
from batio.schedulers.locality import locality
from batio.workloads import memcluster486

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = ROOT / "platforms" / "memcluster486.xml"
TRACE = ROOT.parent / "shared" / "data" / "memcluster486" / "2022-09-10_V10000_anonymous.txt"


def options_of(variant: str) -> dict:
    policy, _, suffix = variant.partition("-")
    if policy not in ("fcfs", "eft", "lea", "leo", "lem") or suffix not in ("", "bf"):
        raise SystemExit(f"unknown variant {variant!r}: expected POLICY or POLICY-bf, POLICY in "
                         "fcfs, eft, lea, leo, lem")
    return {"policy": policy, "backfill": suffix == "bf"}


def run_one(variant: str, workload: Path, out: Path, extra_options: dict, engine: str = DEFAULT_ENGINE) -> dict:
    """Simulate one variant here; returns its measures."""
    stats = out / f"{variant}_rounds.json"
    options = dict(extra_options, **options_of(variant), stats_path=str(stats))
    began = time.perf_counter()
    engines.run(resolve(locality.__file__, options, str(PLATFORM), [str(workload)], out / variant / "out", engine,
                        dynamic_jobs=True, compute_sharing=True).spec, engine)
    wall = time.perf_counter() - began
    rounds = json.loads(stats.read_text())
    seconds, examined = np.array(rounds["seconds"]), np.array(rounds["examined"])
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    jobs = pd.read_csv(out / variant / "out_jobs.csv", keep_default_na=False, dtype=str)
    users = jobs[jobs.workload_name != locality.LOADS_WORKLOAD]
    # A job id is unique within its workload only (user job 3 and load 3).
    decided = jobs[["workload_name", "job_id", "final_state", "starting_time", "finish_time",
                    "allocated_resources", "metadata"]]
    return {
        "variant": variant,
        "engine": engine,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_MB": usage.ru_maxrss / 1024,
        "rounds": len(seconds),
        "sched_total_s": float(seconds.sum()),
        "round_median_ms": float(np.median(seconds) * 1e3),
        "round_p99_ms": float(np.percentile(seconds, 99) * 1e3),
        "round_max_ms": float(seconds.max() * 1e3),
        "examined_mean": float(examined.mean()),
        "examined_max": int(examined.max()),
        "jobs": len(users),
        "loads": int((jobs.workload_name == locality.LOADS_WORKLOAD).sum()),
        "reused": int(users.metadata.str.contains("reused=1").sum()),
        "killed": int((users.final_state == "COMPLETED_KILLED").sum()),
        "makespan_s": float(users.finish_time.astype(float).max()),
        # Two commits decided alike when both digests are equal: every job's
        # times, node and metadata, and the jobs each round examined.
        "decisions_sha256": _digest(decided.sort_values(["workload_name", "job_id"]).to_csv(index=False)),
        "examined_sha256": _digest(json.dumps(rounds["examined"])),
    }


def against(run: Path, earlier: Path) -> dict:
    """``compare_jobs`` of a variant's jobs (this run first) with an earlier run's."""
    compared = compare_jobs(read_jobs(run / "out_jobs.csv"), read_jobs(earlier / "out_jobs.csv"))
    return {"against": str(earlier), **{key: compared[key] for key in (
        "decisions_differ", "jobs_off", "worst_deviation_s", "worst_job")}}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@exits_on_error
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="fcfs,fcfs-bf,lea,lea-bf")
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--workload", type=Path, help="a converted workload JSON (skips the conversion)")
    parser.add_argument("--options", default="{}", help="scheduler options (JSON) added to every variant")
    parser.add_argument("--authors-model", action="store_true", help="add locality.AUTHORS_MODEL's options")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench_locality")
    parser.add_argument("--engine", choices=list(engines.ENGINES), default=DEFAULT_ENGINE)
    parser.add_argument("--against", type=Path, help="an earlier --out of this script: compare each variant's jobs")
    parser.add_argument("--one", help=argparse.SUPPRESS)   # internal: run one variant in this process
    args = parser.parse_args(argv)
    try:
        extra_options = json.loads(args.options)
    except json.JSONDecodeError as error:
        raise SystemExit(f"--options: not JSON ({error})") from None
    if not isinstance(extra_options, dict):
        raise SystemExit(f"--options: expected a JSON object, got {args.options!r}")
    if args.authors_model:
        extra_options = {**locality.AUTHORS_MODEL, **extra_options}
    if args.engine == "batsim" and shutil.which("batsim") is None:
        raise SystemExit("--engine batsim: no `batsim` binary on PATH (Batsim 4.2.1)")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one:
        print(json.dumps(run_one(args.one, args.workload, args.out, extra_options, args.engine)))
        return
    workload = args.workload
    if workload is None:
        workload = args.out / "memcluster486_day.json"
        workload.write_text(memcluster486.dumps(memcluster486.convert(args.trace)))
    variants = args.variants.split(",")
    for variant in variants:
        options_of(variant)
        if args.against and not (args.against / variant / "out_jobs.csv").is_file():
            raise SystemExit(f"--against: {args.against / variant / 'out_jobs.csv'} is missing")
    results = []
    for variant in variants:   # one at a time: the machine is shared
        child = subprocess.run([sys.executable, __file__, "--one", variant, "--workload", str(workload),
                                "--options", json.dumps(extra_options), "--out", str(args.out),
                                "--engine", args.engine], capture_output=True, text=True)
        if child.returncode:
            sys.stderr.write(child.stderr)   # the child's one line for a BatioError, else its traceback
            raise SystemExit(f"variant {variant} failed")
        results.append(json.loads(child.stdout.strip().splitlines()[-1]))
        if args.against:
            results[-1].update(against(args.out / variant, args.against / variant))
        print(json.dumps(results[-1]), flush=True)
    (args.out / "bench.json").write_text(json.dumps(results, indent=1))
    print(pd.DataFrame(results).set_index("variant").round(2).to_string())


if __name__ == "__main__":
    main()
