"""`batio`: run pybatsim schedulers on SimGrid platforms and Batsim workloads.

    batio run --platform P --workload W --scheduler S [--options JSON] --out DIR
    batio compare --platform P --workload W --schedulers A,B,C --out DIR
    batio sweep CONFIG.yaml [--workers N] [--scheduler-address ADDR]
    batio matrix CONFIG.yaml [--small] [--workers N] [--page PAGE.md]
    batio calibrate MEASURED.csv --out DIR [--unit GB/s] [--platform P --element ID]
    batio twin SUMMARIES.csv.gz --out DIR [--system NAME] [--fit-until YYYY-MM-DD] [--engine-check N]
    batio import swf|sacct|jobsio TRACE --out WORKLOAD.json [--from T --to T --warmup D --cooldown D ...]
    batio validate --platform P --workload W.json [--train T.json] [--out DIR]
    batio validate --benchmarks SUMMARIES.csv.gz [--platform TWIN.xml] [--fit-until YYYY-MM-DD] [--out DIR]
    batio platform --nodes N --cores C --speed FLOPS --node-link BW --pfs-bandwidth BW --out PLATFORM.xml
    batio list
    batio describe NAME
"""

import argparse
import json
import logging
import math
from pathlib import Path
import signal
import sys
import threading
import time

from batio import catalog, engines, fit, metrics
from batio.engines import ENGINES
from batio.engines.embedded.sgconfig import check_sg_config
from batio.errors import BatioError, InputError, Interrupted
from batio.inputs.platform import read_platform
from batio.inputs.spec import (
    DEFAULT_IO_SAMPLE_PERIOD_S,
    DEFAULT_MAX_IDLE_S,
    MODES,
    RunSpec,
    check_option_flag,
)
from batio.inputs.workload import json_problem
from batio.outfiles import check_destination, fresh_folder, make_folder, write_text
from batio.progress import JobProgress

# Local Dask workers are processes of a few hundred MB each, with an engine process
# per run: past this many a machine runs out of memory (a cluster can take more).
MAX_WORKERS = 256
ALLOW_UNFIT_HELP = ("run policies whose needs the inputs do not meet (see `batio describe NAME`), "
                    "their results marked degraded")
TIMEOUT_HELP = ("embedded engine: wall-clock seconds one scheduler decision may take before the run stops "
                "(default 60 in socket mode, 600 in-process)")
MAX_IDLE_HELP = ("embedded engine: simulated seconds the scheduler may let pass with jobs waiting and none running "
                 f"(or calling itself back with nothing left to do) before the run stops as stuck "
                 f"(default {DEFAULT_MAX_IDLE_S:g})")
BSLD_TAU_HELP = (f"the bounded slowdown's threshold: max(1, turnaround / max(execution time, tau)) "
                 f"(default {metrics.DEFAULT_BSLD_TAU:g} s)")


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


def run_spec(args, given=None):
    """The RunSpec of `batio run`'s arguments; ``given``: its --options, parsed."""
    given = _options(args.options) if given is None else given
    roles = _roles(args.role)
    scheduler, options = catalog.scheduler_file_and_options(args.scheduler, given)
    needed = catalog.batsim_features(args.scheduler)
    platform = catalog.platform_path(args.platform)
    workloads = [str(catalog.workload_path(w)) for w in args.workload]
    return RunSpec(
        platform=str(platform), workloads=workloads,
        scheduler=str(scheduler), out_prefix=str(Path(args.out) / "out"), options=options, mode=args.mode,
        forward_profiles=args.forward_profiles,
        dynamic_jobs=args.enable_dynamic_jobs or "dynamic_jobs" in needed,
        acknowledge_dynamic_jobs=args.acknowledge_dynamic_jobs, profile_reuse=args.enable_profile_reuse,
        compute_sharing=args.enable_compute_sharing or "compute_sharing" in needed,
        storage_sharing=not args.disable_storage_sharing, master_host=args.master_host,
        roles=roles, port=args.port, timeout_s=args.timeout, max_idle_s=args.max_idle,
        io_sample_period=args.io_sample_period,
        io_exclusive=args.io_exclusive, sg_config=args.sg_cfg)


def command_run(args):
    given = _options(args.options)
    spec = run_spec(args, given)
    engines.check_engine(args.engine, spec.scheduler)
    degraded = fit.check_run(args.scheduler, given, spec, args.allow_unfit, strict=args.engine == "embedded")
    fresh_folder(args.out, args.force)
    progress = JobProgress(enabled=args.engine == "embedded" and not args.quiet and sys.stderr.isatty())
    try:
        result = engines.run(spec, args.engine, progress)
    finally:
        progress.close()
        fit.mark_record(spec.out_prefix, args.scheduler, degraded)
    print_summary(spec, args.engine, result["nb_compute"], name=args.scheduler, degraded=degraded, tau=args.bsld_tau)
    from batio.html_report import write_run_page
    print(f"page:    {write_run_page(Path(spec.out_prefix).parent, tau=args.bsld_tau)}")
    return 0


def print_summary(spec, engine, nb_compute=None, *, name=None, degraded=(), tau=metrics.DEFAULT_BSLD_TAU):
    """What `batio run` prints of a finished run (also the compose services', batio.compose);
    ``name``: the scheduler as the user typed it."""
    if nb_compute is None:
        nb_compute = len(read_platform(spec).compute)
    summary = metrics.summarize(spec.out_prefix, nb_compute, tau=tau)
    name = name or Path(spec.scheduler).stem
    print(f"{name} ({Path(spec.scheduler).name} {json.dumps(spec.options)}) on {Path(spec.platform).name} "
          f"with {', '.join(Path(w).name for w in spec.workloads)} ({engine} engine)")
    if degraded:
        print(f"DEGRADED: {name} does not fit these inputs (run with --allow-unfit): {'; '.join(degraded)}")
    print(metrics.format_summary(summary))
    print(f"outputs: {spec.out_prefix}_jobs.csv, _schedule.csv, _machine_states.csv"
          + (", _io.csv" if engine == "embedded" else ""))


def command_report(args):
    from batio.html_report import write_page
    for folder in args.folders:
        print(f"page: {write_page(folder, args.baseline)}")
    return 0


def _print_tables(table, baseline):
    from batio import report
    summary = report.summary_table(table, baseline)
    for (platform, workload, engine), group in report.groups_of(summary):
        print(f"{workload} on {platform} ({engine} engine)"
              + (f", ratios to {baseline}" if baseline else "") + ":")
        print(report.format_text(group, baseline))


def _runs_outcome(table, counts, out, report_path, skipped_pairs=None):
    """Where the results are, and exit status 1 when a run failed. `skipped_pairs`: a matrix's, said on its page."""
    on_page = "" if skipped_pairs is None else f"; {skipped_pairs} pairs skipped (see the page)"
    print(f"runs: {counts['planned']} planned (reference runs included), {counts['ran']} run now, "
          f"{counts['skipped']} already finished{on_page}")
    print(f"results: {Path(out).resolve() / 'results.csv'}")
    print(f"{'report:' if skipped_pairs is None else 'page:':<8} {report_path}")
    from batio.sweep import INTERRUPTED
    interrupted = int((table["status"] == INTERRUPTED).sum()) if len(table) else 0
    failed = int((table["status"] != "ok").sum()) - interrupted if len(table) else 0
    if interrupted:
        print(f"batio: {interrupted} of {len(table)} runs were interrupted (their engine or worker was killed): "
              "run the same command again to redo them", file=sys.stderr)
    if failed:
        print(f"batio: {failed} of {len(table)} runs failed: see the error column of results.csv", file=sys.stderr)
    return 1 if failed or interrupted else 0


def command_compare(args):
    from batio.compare import compare, comparison_grid
    make_folder(args.out)
    run_options = {"mode": args.mode, "io_sample_period": args.io_sample_period}
    run_options.update({key: value for key, value in (("timeout", args.timeout), ("max_idle", args.max_idle))
                        if value is not None})
    window_options = {"count": args.window_count, "warmup": args.window_warmup, "cooldown": args.window_cooldown}
    grid = comparison_grid(args.platform, args.workload, args.schedulers, args.options_of, args.seeds,
                           args.baseline, args.engine, io_slowdown=not args.no_io_slowdown, run_options=run_options,
                           windows=args.windows, window_options=window_options, bsld_tau=args.bsld_tau,
                           allow_unfit=args.allow_unfit)
    table, counts, report_path = compare(grid, args.out, workers=args.workers, progress=not args.quiet)
    _print_tables(table, grid.baseline)
    return _runs_outcome(table, counts, args.out, report_path)


def command_sweep(args):
    from batio.sweep import load_config, run_grid
    grid = load_config(args.config)
    grid.allow_unfit = grid.allow_unfit or args.allow_unfit
    out = Path(args.out) if args.out else Path("out") / "sweeps" / Path(args.config).stem
    make_folder(out)
    table, counts, report_path = run_grid(grid, out, workers=args.workers, scheduler_address=args.scheduler_address,
                                          retry_failed=args.retry_failed, progress=not args.quiet,
                                          title=f"sweep {Path(args.config).name}")
    if table["platform"].nunique() * table["workload"].nunique() * table["engine"].nunique() <= 4:
        _print_tables(table, grid.baseline)
    return _runs_outcome(table, counts, out, report_path)


def command_matrix(args):
    from batio import __version__
    from batio.matrix import load_matrix, run_matrix, write_page
    started = time.perf_counter()
    matrix = load_matrix(args.config, small=args.small)
    variant = "-small" if args.small else ""
    out = Path(args.out) if args.out else Path("out") / "matrix" / f"{Path(args.config).stem}{variant}"
    make_folder(out)
    table, skipped, summaries, counts = run_matrix(matrix, out, workers=args.workers,
                                                   retry_failed=args.retry_failed, progress=not args.quiet)
    elapsed = time.perf_counter() - started
    command = " ".join(["batio matrix", args.config] + (["--small"] if args.small else [])
                       + [f"--workers {args.workers}"] + ([f"--out {args.out}"] if args.out else [])
                       + ([f"--page {args.page}"] if args.page else []))
    simulated = float(table["wall_time_s"].fillna(0).sum()) if "wall_time_s" in table else 0.0
    made_by = (f"Made by `{command}` (batio {__version__}): {elapsed:.0f} s wall time, {counts['ran']} of "
               f"{counts['planned']} runs (reference runs included) simulated by it, "
               f"{counts['skipped']} reused from its output folder; the policy runs took {simulated:.0f} s "
               "of simulation wall time in all (sum of the policy runs' own wall times).")
    page = write_page(Path(args.page) if args.page else Path(out) / "matrix.md", table, skipped, summaries, made_by)
    return _runs_outcome(table, counts, out, page, skipped_pairs=len(skipped))


def command_parity(args):
    from batio.parity import parity
    make_folder(args.out)
    policies = [name.strip() for name in args.policies.split(",")] if args.policies else None
    table = parity(args.out, policies, args.max_jobs, args.sg_cfg)
    print((Path(args.out) / "parity.md").read_text())
    failed = int((table["error"].astype(str) != "").sum())
    if failed:
        print(f"batio: {failed} of {len(table)} policies failed on one engine: see {args.out}/parity.csv",
              file=sys.stderr)
        return 1
    return 0


def command_calibrate(args):
    from batio.calibrate import calibrate
    make_folder(args.out)
    platform = str(catalog.platform_path(args.platform)) if args.platform else None
    rows, line = calibrate(args.measurement, args.out, args.unit, args.direction, platform, args.element)
    print(f"{'clients':>8} {'measured GB/s':>14} {'simulated GB/s':>15} {'error %':>8}")
    for row in rows:
        print(f"{row['clients']:>8} {row['measured_GBps']:>14.4g} {row['simulated_GBps']:>15.4g} "
              f"{row['error_percent']:>8.2f}")
    print(f"property: {line}")
    print(f"written: {Path(args.out) / 'property.xml'}, calibration.csv, calibration.png"
          + (f", {Path(platform).stem}_calibrated.xml" if platform else ""))
    return 0


def command_twin(args):
    from batio.fstwin import make_twin
    if args.days < 1:
        raise InputError("--days", f"must be at least 1, got {args.days}")
    make_folder(args.out)
    table = make_twin(args.summaries, args.out, system=args.system, fit_until=args.fit_until, days=args.days)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    fit = json.loads((Path(args.out) / "fit.json").read_text())
    print(f"runs: {fit['runs_used']} used ({fit['runs_fitted']} fitted, before {fit['fit_until']}; "
          f"{fit['runs_held_out']} held out); skipped: "
          + ("; ".join(f"{count} {reason}" for reason, count in fit["skipped"].items()) or "none"))
    if args.engine_check:
        from batio.fstwin import read_platform, read_runs
        from batio.fstwin_engine import engine_check
        platform = next(Path(args.out).glob("*.xml"))
        check = engine_check(read_platform(platform), read_runs(args.summaries)[0], sample=args.engine_check)
        check.to_csv(Path(args.out) / "engine_check.csv", index=False, float_format="%.6g")
        print(check.to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    print(f"written: {Path(args.out)}: the platform (.xml), fit.json, validation.csv"
          + (", engine_check.csv" if args.engine_check else ""))
    return 0


def command_import(args):
    from batio.importers import dumps, import_trace, summary_lines
    check_destination(args.out)
    workload = import_trace(args.format, args.trace, start=args.start, end=args.end, warmup=args.warmup,
                            cooldown=args.cooldown, max_jobs=args.max_jobs, sample=args.sample, seed=args.seed,
                            nodes=args.nodes, cores_per_node=args.cores_per_node,
                            keep_cancelled=args.keep_cancelled, darshan=args.darshan, week=args.week,
                            runs=args.runs)
    out = Path(args.out)
    write_text(out, dumps(workload))
    for line in summary_lines(workload):
        print(line)
    print(f"written: {out} (what was skipped and why, line by line: its \"trace\" block)")
    return 0


def command_validate(args):
    from batio.validate import format_table, validate
    if args.benchmarks:
        return validate_benchmark_runs(args)
    if not (args.platform and args.workload):
        raise BatioError("validate: give --platform and --workload (jobs from `batio import jobsio`), "
                         "or --benchmarks (TOKIO-ABC runs)")
    make_folder(args.out)
    table, jobs = validate(catalog.platform_path(args.platform), args.workload, args.out, args.train)
    print(format_table(table))
    late = int((jobs["start_delay"] > 1).sum())
    killed = int((jobs["final_state"] != "COMPLETED_SUCCESSFULLY").sum())
    print(f"replay: {len(jobs)} jobs, {late} started over 1 s after their recorded start, {killed} not completed "
          f"(killed at their walltime: left out of the pairs)")
    print(f"written: {Path(args.out) / 'validation.csv'}, validation_jobs.csv")
    return 0


def validate_benchmark_runs(args):
    from batio.fstwin import validate_benchmarks
    from batio.validate import format_table
    if args.workload or args.train:
        raise BatioError("validate: --benchmarks takes no --workload or --train (the runs before --fit-until train)")
    make_folder(args.out)
    platform = catalog.platform_path(args.platform) if args.platform else None
    print(format_table(validate_benchmarks(args.benchmarks, platform=platform, out=args.out,
                                           fit_until=args.fit_until)))
    print(f"written: {Path(args.out) / 'validation.csv'}")
    return 0


def command_platform(args):
    from batio.platform_builder import contention_value, platform_xml
    check_destination(args.out)
    contention = None if args.contention is None else contention_value(args.contention, args.contention_unit)
    text = platform_xml(args.nodes, args.cores, args.speed, args.node_link, args.pfs_bandwidth, args.latency,
                        contention, args.memory)
    out = Path(args.out)
    write_text(out, text)
    print(f"{args.nodes} compute hosts node0..node{args.nodes - 1} ({args.cores} cores each"
          + (f", {args.memory} of memory" if args.memory else "") + "), storage host pfs "
          "behind pfs_link, master_host" + (f"; contention curve {contention}" if contention else ""))
    print(f"written: {out}")
    return 0


def command_list(_args):
    from batio.describe import list_lines
    print("platforms:  " + ", ".join(sorted(catalog.bundled_platforms())))
    print("workloads:  " + ", ".join(sorted(catalog.bundled_workloads())))
    print("schedulers (batio describe NAME says more):")
    for line in list_lines():
        print(f"  {line}")
    return 0


def command_describe(args):
    from batio.describe import describe_lines
    for line in describe_lines(args.name):
        print(line)
    return 0


def parser():
    top = argparse.ArgumentParser(prog="batio", description=__doc__.split("\n")[0])
    commands = top.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="simulate one scheduler on one platform and workload(s)")
    run.add_argument("--platform", required=True, help="platform XML file or bundled name (see `batio list`)")
    run.add_argument("--workload", required=True, action="append",
                     help="workload JSON file or bundled name; repeat for several workloads (w0, w1...)")
    run.add_argument("--scheduler", required=True, help="pybatsim scheduler file, or a batio/pybatsim name")
    run.add_argument("--options", default="{}", help="scheduler options as JSON (pybatsim's -o)")
    run.add_argument("--engine", choices=ENGINES, default="embedded",
                     help="embedded: batio's SimGrid engine (default); batsim: a `batsim` binary on PATH; "
                          "docker: the Batsim image of docker-compose.yml, started by batio")
    run.add_argument("--mode", choices=MODES, default="inprocess",
                     help="embedded engine: drive the scheduler in-process (default) or over ZeroMQ")
    run.add_argument("--out", required=True, help="output folder (files out_jobs.csv, ...)")
    run.add_argument("--port", type=int, help="local TCP port for socket mode / Batsim (default: a free one)")
    run.add_argument("--timeout", type=float, help=TIMEOUT_HELP)
    run.add_argument("--max-idle", type=float, default=DEFAULT_MAX_IDLE_S, help=MAX_IDLE_HELP)
    run.add_argument("--forward-profiles", action="store_true", help="Batsim's --forward-profiles-on-submission")
    run.add_argument("--enable-dynamic-jobs", action="store_true")
    run.add_argument("--acknowledge-dynamic-jobs", action="store_true")
    run.add_argument("--enable-profile-reuse", action="store_true",
                     help="Batsim's: dynamic jobs may name the profiles of ended jobs (needs --enable-dynamic-jobs)")
    run.add_argument("--enable-compute-sharing", action="store_true")
    run.add_argument("--disable-storage-sharing", action="store_true")
    run.add_argument("--master-host", default="master_host", help="Batsim's -m")
    run.add_argument("--role", action="append", default=[], metavar="HOSTS:ROLE", help="Batsim's -r")
    run.add_argument("--sg-cfg", action="append", default=[], metavar="OPT:VALUE",
                     help="a SimGrid option, as Batsim's --sg-cfg (e.g. maxmin/precision:1e-9)")
    run.add_argument("--io-sample-period", type=float, default=DEFAULT_IO_SAMPLE_PERIOD_S,
                     help="seconds between samples of the storage throughput written to out_io.csv")
    run.add_argument("--io-exclusive", action="store_true",
                     help="beyond Batsim: each storage host serves one transfer at a time, first come first "
                          "served (the model of seed paper 001); default: fair sharing, as in Batsim")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--bsld-tau", type=float, default=metrics.DEFAULT_BSLD_TAU, metavar="SECONDS", help=BSLD_TAU_HELP)
    run.add_argument("--force", action="store_true", help="write into a non-empty --out folder")
    run.add_argument("--allow-unfit", action="store_true", help=ALLOW_UNFIT_HELP)
    run.set_defaults(handler=command_run)

    comparison = commands.add_parser("compare", help="several schedulers on one platform and workload: "
                                                     "table with ratios to a baseline, plots, report")
    comparison.add_argument("--platform", required=True, help="platform XML file or bundled name")
    comparison.add_argument("--workload", required=True,
                            help="workload JSON file or bundled name, or a generator MODULE:FUNCTION "
                                 "(e.g. batio.workloads.demo:demo_workload) called with seed=1..K")
    comparison.add_argument("--schedulers", required=True,
                            help="comma-separated schedulers: batio/pybatsim names, .py files, batsched:VARIANT")
    comparison.add_argument("--options-of", action="append", default=[], metavar="NAME=JSON",
                            help="options of one scheduler, e.g. --options-of easy='{\"order\": \"sjf\"}'")
    comparison.add_argument("--seeds", type=int, help="K: run on the generator's workloads for seeds 1..K")
    comparison.add_argument("--windows", metavar="LENGTH",
                            help="replicas of a trace: cut the workload file's evaluated span into consecutive "
                                 "windows of LENGTH (e.g. 7d), each one replica (see batio/windows.py)")
    comparison.add_argument("--window-count", type=int, metavar="N", help="only the first N windows (default: all)")
    comparison.add_argument("--window-warmup", metavar="DURATION",
                            help="jobs submitted this long before a window load the machine, unevaluated (default 0)")
    comparison.add_argument("--window-cooldown", metavar="DURATION",
                            help="jobs submitted this long after a window load the machine, unevaluated (default 0)")
    comparison.add_argument("--bsld-tau", type=float, default=metrics.DEFAULT_BSLD_TAU, metavar="SECONDS",
                            help=BSLD_TAU_HELP)
    comparison.add_argument("--baseline", help="the scheduler the ratios are to (default: the first)")
    comparison.add_argument("--engine", choices=ENGINES, default="embedded")
    comparison.add_argument("--out", required=True, help="output folder: report/, results.csv, runs/")
    comparison.add_argument("--workers", type=int, default=0,
                            help="runs at once on a local Dask cluster (default 0: one after the other)")
    comparison.add_argument("--no-io-slowdown", action="store_true",
                            help="skip the reference run (jobs alone) the I/O slowdown needs")
    comparison.add_argument("--mode", choices=MODES, default="inprocess", help="embedded engine's protocol mode")
    comparison.add_argument("--timeout", type=float, help=TIMEOUT_HELP)
    comparison.add_argument("--max-idle", type=float, help=MAX_IDLE_HELP)
    comparison.add_argument("--io-sample-period", type=float, default=DEFAULT_IO_SAMPLE_PERIOD_S,
                            help="seconds between _io.csv samples")
    comparison.add_argument("--quiet", action="store_true", help="no progress bar")
    comparison.add_argument("--allow-unfit", action="store_true", help=ALLOW_UNFIT_HELP)
    comparison.set_defaults(handler=command_compare)

    sweep = commands.add_parser("sweep", help="a grid of runs from a YAML file (docs/sweeps.md), in parallel on Dask")
    sweep.add_argument("config", help="the sweep's YAML file")
    sweep.add_argument("--out", help="output folder (default out/sweeps/CONFIG_NAME); rerunning resumes")
    sweep.add_argument("--workers", type=int,
                       help="local Dask worker processes (default: one per CPU; 0: one run after the other, no Dask)")
    sweep.add_argument("--scheduler-address", help="run on an existing Dask cluster, e.g. tcp://10.0.0.1:8786")
    sweep.add_argument("--retry-failed", action="store_true", help="run the runs that failed before again")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    sweep.add_argument("--allow-unfit", action="store_true", help=ALLOW_UNFIT_HELP + " (or allow_unfit: true)")
    sweep.set_defaults(handler=command_sweep)

    matrix = commands.add_parser("matrix", help="every catalog policy on every input of a YAML file that fits it: "
                                                "one page ranking the policies per input, with the skipped pairs")
    matrix.add_argument("config", help="the matrix's YAML file (e.g. scripts/sweeps/matrix.yaml)")
    matrix.add_argument("--small", action="store_true", help="the config's `small` variant (fewer jobs), for CI")
    matrix.add_argument("--out", help="output folder (default out/matrix/CONFIG_NAME[-small]); rerunning resumes")
    matrix.add_argument("--page", help="where to write the page (default OUT/matrix.md)")
    matrix.add_argument("--workers", type=int, default=0,
                        help="runs at once on a local Dask cluster (default 0: one after the other, without Dask)")
    matrix.add_argument("--retry-failed", action="store_true", help="run the runs that failed before again")
    matrix.add_argument("--quiet", action="store_true", help="no progress bar")
    matrix.set_defaults(handler=command_matrix)

    check = commands.add_parser("parity", help="every catalog policy on its bundled inputs on the embedded engine "
                                               "and on a real `batsim` binary: a job-by-job table")
    check.add_argument("--out", required=True, help="output folder: parity.csv, parity.md, one folder per policy")
    check.add_argument("--policies", help="comma-separated catalog names (default: all)")
    check.add_argument("--max-jobs", type=int, help="keep each workload's first N jobs by submission time")
    check.add_argument("--sg-cfg", action="append", default=[], metavar="OPT:VALUE",
                       help="a SimGrid option for both engines (e.g. maxmin/precision:1e-9)")
    check.set_defaults(handler=command_parity)

    calibration = commands.add_parser("calibrate", help="a contention curve (batio:contention) from a measured "
                                                        "clients x aggregate throughput CSV, checked on the engine")
    calibration.add_argument("measurement", help="CSV rows 'clients,aggregate throughput' (IOR's; header allowed)")
    calibration.add_argument("--out", required=True, help="output folder: property.xml, calibration.csv/.png")
    calibration.add_argument("--unit", default="GB/s", help="unit of the throughput column: B/s, MB/s, GB/s "
                                                            "(default), MiB/s, GiB/s")
    calibration.add_argument("--direction", default="both", choices=["both", "read", "write"],
                             help="which transfers the curve is for (default both: batio:contention)")
    calibration.add_argument("--platform", help="also write a copy of this platform with the property added")
    calibration.add_argument("--element", help="id of the <link>, <host> or <cluster> to add it to")
    calibration.set_defaults(handler=command_calibrate)

    twin = commands.add_parser("twin", help="a file-system twin fitted on TOKIO-ABC benchmark runs, validated on "
                                            "the runs after --fit-until beside two baselines")
    twin.add_argument("summaries", help="a TOKIO-ABC summaries file (.csv or .csv.gz, one row per benchmark run)")
    twin.add_argument("--out", required=True, help="output folder: SYSTEM.xml, fit.json, validation.csv")
    twin.add_argument("--system", help="name of the platform file (default: the file name up to its first '-')")
    twin.add_argument("--fit-until", help="fit on the runs before this date (default: the middle of the file)")
    twin.add_argument("--days", type=int, default=28, help="window of the recalibrated twin (default 28)")
    twin.add_argument("--engine-check", type=int, default=0, metavar="N",
                      help="also simulate N runs on the embedded engine and compare with the analytic model")
    twin.set_defaults(handler=command_twin)

    importing = commands.add_parser("import", help="a Batsim workload from a job trace (SWF, Slurm sacct); "
                                                   "docs/formats.md states the mapping")
    importing.add_argument("format", choices=["swf", "sacct", "jobsio"],
                           help="swf: Parallel Workloads Archive; sacct: `sacct --parsable2` with a header line; "
                                "jobsio: jobs joined with their Darshan I/O (docs/formats.md)")
    importing.add_argument("trace", help="the trace file")
    importing.add_argument("--out", required=True, help="the workload JSON file to write")
    importing.add_argument("--from", dest="start", metavar="T",
                           help="first submission of the evaluated window: trace seconds, or a date "
                                "(1996-10-01T08:00) when the trace is dated")
    importing.add_argument("--to", dest="end", metavar="T", help="end of the evaluated window (excluded)")
    importing.add_argument("--warmup", metavar="DURATION",
                           help="also keep the jobs submitted this long before the window as category 0 "
                                "(and the ones still queued then as -1); seconds or 30m, 12h, 2d")
    importing.add_argument("--cooldown", metavar="DURATION",
                           help="also keep the jobs submitted this long after the window as category 2")
    importing.add_argument("--max-jobs", type=int, help="keep the first N jobs (by submission) of the selection")
    importing.add_argument("--sample", type=float, metavar="FRACTION",
                           help="keep this fraction of the jobs, chosen by a hash of (seed, job id)")
    importing.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    importing.add_argument("--nodes", type=int,
                           help="the machine's compute hosts: larger jobs are skipped (default: SWF header "
                                "MaxProcs / cores per node, else MaxNodes, else the largest job)")
    importing.add_argument("--cores-per-node", type=int,
                           help="SWF: processors per node; a job's nodes are ceil(processors / this) (default 1)")
    importing.add_argument("--keep-cancelled", action="store_true",
                           help="keep cancelled jobs that ran (default: skip every cancelled job, as the "
                                "Parallel Workloads Archive's cleaning does)")
    importing.add_argument("--darshan", action="append", metavar="LOG|FOLDER",
                           help="Darshan logs (or folders of them; repeatable): each job whose id is a log's job "
                                "id gets its bytes read and written as a file-system phase (needs PyDarshan)")
    importing.add_argument("--week", help="jobsio: the week to import (its `week` column)")
    importing.add_argument("--runs", metavar="DARSHAN_RUNS_CSV",
                           help="jobsio: one row per Darshan log, for the ranks doing I/O at once (docs/formats.md)")
    importing.set_defaults(handler=command_import)

    checking = commands.add_parser("validate", help="replay jobs imported with `batio import jobsio` at their "
                                                    "recorded starts (simulated vs measured I/O time per job), or "
                                                    "a file-system twin against TOKIO-ABC runs (bandwidth per run)")
    checking.add_argument("--platform", help="platform XML file or bundled name (with --benchmarks: a twin "
                                             "from `batio twin`; default: fitted on the runs before --fit-until)")
    checking.add_argument("--workload", action="append",
                          help="workload from `batio import jobsio` (repeat: one group each)")
    checking.add_argument("--benchmarks", metavar="SUMMARIES_CSV",
                          help="TOKIO-ABC summaries (.csv or .csv.gz): validate bandwidths instead of jobs")
    checking.add_argument("--fit-until", help="with --benchmarks: the held-out runs start at this date "
                                              "(default: the middle of the file)")
    checking.add_argument("--train", help="workload whose median per-job bandwidth the baseline uses "
                                          "(default: each validated workload's own, in-sample)")
    checking.add_argument("--out", default="out/validate", help="output folder (default out/validate)")
    checking.set_defaults(handler=command_validate)

    machine = commands.add_parser("platform", help="a SimGrid platform (compute nodes, one parallel file system, "
                                                   "a master host) from a short description")
    machine.add_argument("--nodes", type=int, required=True, help="compute hosts")
    machine.add_argument("--cores", type=int, default=1, help="cores per compute host (default 1)")
    machine.add_argument("--speed", required=True, help="flop/s per core: a number or with a unit, e.g. 1Gf")
    machine.add_argument("--node-link", required=True, help="each node's link: bytes/s or e.g. 10GBps, 100Gbps")
    machine.add_argument("--pfs-bandwidth", required=True,
                         help="the file system's link, which all storage traffic shares: e.g. 5GBps")
    machine.add_argument("--memory", help="memory per compute host, e.g. 128GB: its memory_bytes property, which "
                                          "the locality policies need (with cores and link_bandwidth, always written)")
    machine.add_argument("--latency", default="50us", help="latency of every link (default 50us)")
    machine.add_argument("--contention", metavar="CURVE|CSV|XML",
                         help="beyond Batsim: pfs_link's throughput per number of clients, as a curve "
                              "'1:1GBps 8:6GBps', a measured CSV (batio calibrate's input) or the "
                              "property.xml batio calibrate writes")
    machine.add_argument("--contention-unit", default="GB/s", help="unit of a --contention CSV (default GB/s)")
    machine.add_argument("--out", required=True, help="the platform XML file to write")
    machine.set_defaults(handler=command_platform)

    reporting = commands.add_parser("report", help="the HTML report page (report.html) of run, comparison or "
                                                   "sweep folders, from their output files")
    reporting.add_argument("folders", nargs="+", metavar="OUT", help="a `batio run`, `compare` or `sweep` --out folder")
    reporting.add_argument("--baseline", help="a comparison's or sweep's policy to compare with (default: the first)")
    reporting.set_defaults(handler=command_report)

    listing = commands.add_parser("list", help="list bundled platforms, workloads and schedulers")
    listing.set_defaults(handler=command_list)
    describing = commands.add_parser("describe", help="a policy's paper, what it needs of its inputs, its options")
    describing.add_argument("name", help="a scheduler name (see `batio list`) or .py file")
    describing.set_defaults(handler=command_describe)
    return top


def check_numbers(args):
    """Option values argparse's types let through but no run can use."""
    port = getattr(args, "port", None)
    if port is not None and not 1 <= port <= 65535:
        raise InputError("--port", f"must be a TCP port from 1 to 65535, got {port}")
    for option in ("timeout", "max_idle", "io_sample_period"):
        value = getattr(args, option, None)
        if value is not None:
            check_option_flag(option, value)
    tau = getattr(args, "bsld_tau", None)
    if tau is not None and not (math.isfinite(tau) and tau > 0):
        raise InputError("--bsld-tau", f"must be a finite number of seconds > 0, got {tau}")
    workers = getattr(args, "workers", None)
    if workers is not None and not 0 <= workers <= MAX_WORKERS:
        raise InputError("--workers", f"must be from 0 (one run after the other) to {MAX_WORKERS} local worker "
                                      f"processes, got {workers}; more belong on a Dask cluster "
                                      "(batio sweep --scheduler-address)")
    max_jobs = getattr(args, "max_jobs", None)
    if max_jobs is not None and max_jobs < 1:
        raise InputError("--max-jobs", f"must be at least 1, got {max_jobs}")
    check_sg_config(getattr(args, "sg_cfg", None) or [])
    if getattr(args, "out", None) == "":
        raise InputError("--out", "must name a folder, got an empty string")


def _terminate(signum, _frame):
    """SIGTERM or SIGHUP: unwind like Ctrl-C, so that every child process is ended."""
    raise Interrupted(signum)


def main(argv=None):
    logging.basicConfig(format="batio: %(levelname)s: %(message)s", level=logging.WARNING)
    logging.getLogger("batio.progress").setLevel(logging.INFO)  # progress lines off a terminal (batio.progress)
    args = parser().parse_args(argv)
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {signum: signal.signal(signum, _terminate) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        check_numbers(args)
        return args.handler(args)
    except BatioError as error:
        print(f"batio: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("batio: interrupted by SIGINT", file=sys.stderr)
        return 128 + signal.SIGINT
    except Interrupted as stop:
        print(f"batio: {stop}", file=sys.stderr)
        return 128 + stop.signum
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
