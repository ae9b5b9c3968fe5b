"""`batio run`: one scheduler on one platform and workload(s), on any engine."""

import argparse
import json
from pathlib import Path
import sys

from batio import engines, requirements
from batio.engines import CHECKED_WORKLOADS, IO_TIMELINE
from batio.errors import InputError
from batio.inputs.spec import RunSpec
from batio.inputs.workload import json_problem
from batio.outfiles import fresh_folder
from batio.report import metrics
from batio.resolve import Resolved, resolve


def _options(text):
    try:
        options = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise InputError("--options", f"malformed JSON: {json_problem(error)}") from None
    if not isinstance(options, dict):
        raise InputError("--options", "must be a JSON object, e.g. '{\"backfill_max\": 2}'")
    return options


def _roles(pairs):
    roles = {}
    for pair in pairs:
        hosts, sep, role = pair.partition(":")
        if not sep or not hosts or not role:
            raise InputError("--role", f"expected HOST[,HOST...]:ROLE, got {pair!r}")
        for host in hosts.split(","):
            roles[host] = role
    return roles


def resolved_run(args: argparse.Namespace) -> Resolved:
    """`batio run`'s arguments resolved (batio.resolve) and checked against its engine."""
    given, roles = _options(args.options), _roles(args.role)
    return resolve(args.scheduler, given, args.platform, args.workload, Path(args.out) / "out", args.engine,
                   roles=roles, mode=args.mode, forward_profiles=args.forward_profiles,
                   dynamic_jobs=args.enable_dynamic_jobs, acknowledge_dynamic_jobs=args.acknowledge_dynamic_jobs,
                   profile_reuse=args.enable_profile_reuse, compute_sharing=args.enable_compute_sharing,
                   storage_sharing=not args.disable_storage_sharing, master_host=args.master_host,
                   port=args.port, timeout_s=args.timeout, max_idle_s=args.max_idle,
                   io_sample_period=args.io_sample_period, io_exclusive=args.io_exclusive, sg_config=args.sg_cfg)


def checked_run(args: argparse.Namespace) -> tuple[RunSpec, list]:
    """Every check `batio run` makes before any engine starts, whichever way in (this command, and
    the compose services: batio.compose): the inputs read and validated, an engine that can run the
    scheduler and honour every option given, and the policy's fit (refused, or marked degraded under
    --allow-unfit). Returns the RunSpec and why its results are degraded (empty when they are not);
    the output folder is the caller's (``fresh_folder``). Raises an InputError, one line."""
    resolved = resolved_run(args)
    degraded = requirements.check_run(resolved.declaration, resolved.given, resolved.spec, args.allow_unfit,
                                      strict=CHECKED_WORKLOADS in engines.ENGINES[args.engine].supports)
    return resolved.spec, degraded


def run_marks(args, degraded):
    """What a run's out_run.json records beside its spec: the scheduler as typed, and why its
    results are degraded."""
    return {"scheduler_name": args.scheduler, "degraded": list(degraded)}


def report_run(args, spec, degraded, engine=None):
    """What `batio run` prints and writes once a run has ended: its summary and its page."""
    print_summary(spec, engine or args.engine, name=args.scheduler, degraded=degraded, tau=args.bsld_tau)
    from batio.report.html_report import write_run_page
    print(f"page:    {write_run_page(Path(spec.out_prefix).parent, tau=args.bsld_tau)}")


def command_run(args):
    spec, degraded = checked_run(args)
    fresh_folder(args.out, args.force)
    engines.run(spec, args.engine, progress=not args.quiet and sys.stderr.isatty(),
                marks=run_marks(args, degraded))
    report_run(args, spec, degraded)
    return 0


def print_summary(spec, engine, *, name=None, degraded=(), tau=metrics.DEFAULT_BSLD_TAU):
    """What `batio run` prints of a finished run;
    ``name``: the scheduler as the user typed it."""
    summary = metrics.summarize(spec.out_prefix, tau=tau)
    name = name or Path(spec.scheduler).stem
    print(f"{name} ({Path(spec.scheduler).name} {json.dumps(spec.options)}) on {Path(spec.platform).name} "
          f"with {', '.join(Path(w).name for w in spec.workloads)} ({engine} engine)")
    if degraded:
        print(f"DEGRADED: {name} does not fit these inputs (run with --allow-unfit): {'; '.join(degraded)}")
    print(metrics.format_summary(summary))
    print(f"outputs: {spec.out_prefix}_jobs.csv, _schedule.csv, _machine_states.csv"
          + (", _io.csv" if IO_TIMELINE in engines.ENGINES[engine].supports else ""))
