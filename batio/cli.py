"""`batio`: run pybatsim schedulers on SimGrid platforms and Batsim workloads.

    batio run --platform P --workload W --scheduler S [--options JSON] --out DIR
    batio compare --platform P --workload W --schedulers A,B,C --out DIR
    batio sweep CONFIG.yaml [--workers N] [--scheduler-address ADDR]
    batio matrix CONFIG.yaml [--small] [--workers N] [--page PAGE.md]
    batio calibrate MEASURED.csv --out DIR [--unit GB/s] [--platform P --element ID]
    batio import swf|sacct TRACE --out WORKLOAD.json [--from T --to T --warmup D --cooldown D ...]
    batio platform --nodes N --cores C --speed FLOPS --node-link BW --pfs-bandwidth BW --out PLATFORM.xml
    batio list
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

from batio import catalog, metrics
from batio.engine.run import DEFAULT_MAX_IDLE_S, MODES, RunSpec, simulate
from batio.engine.workload import json_problem
from batio.errors import BatioError, InputError

ENGINES = ("embedded", "batsim", "docker")
TIMEOUT_HELP = ("embedded engine: wall-clock seconds one scheduler decision may take before the run stops "
                "(default 60 in socket mode, 600 in-process)")
MAX_IDLE_HELP = ("embedded engine: simulated seconds the scheduler may let pass with jobs waiting and none running "
                 f"(or calling itself back with nothing left to do) before the run stops as stuck "
                 f"(default {DEFAULT_MAX_IDLE_S:g})")


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


def make_folder(path, option="--out"):
    """Create an output folder, or say in one line why it cannot be."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(option, f"{path} exists and is not a folder") from None
    except OSError as error:
        raise InputError(option, f"cannot create folder {str(path)[:200]}"
                                  f"{'...' if len(str(path)) > 200 else ''}: {error.strerror}") from None


def run_spec(args):
    scheduler, options = catalog.scheduler_file_and_options(args.scheduler, _options(args.options))
    needed = catalog.batsim_features(args.scheduler)
    out = Path(args.out)
    return RunSpec(
        platform=str(catalog.platform_path(args.platform)),
        workloads=[str(catalog.workload_path(w)) for w in args.workload],
        scheduler=str(scheduler), out_prefix=str(out / "out"), options=options, mode=args.mode,
        forward_profiles=args.forward_profiles,
        dynamic_jobs=args.enable_dynamic_jobs or "dynamic_jobs" in needed,
        acknowledge_dynamic_jobs=args.acknowledge_dynamic_jobs, profile_reuse=args.enable_profile_reuse,
        compute_sharing=args.enable_compute_sharing or "compute_sharing" in needed,
        storage_sharing=not args.disable_storage_sharing, master_host=args.master_host,
        roles=_roles(args.role), port=args.port, timeout_s=args.timeout, max_idle_s=args.max_idle,
        io_sample_period=args.io_sample_period,
        io_exclusive=args.io_exclusive, sg_config=args.sg_cfg)


class _Progress:
    """A progress bar over jobs finished, showing simulated time."""

    def __init__(self, enabled):
        self.bar = None
        self.enabled = enabled

    def __call__(self, now, finished, total):
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm import tqdm
            self.bar = tqdm(total=total, unit="job", desc="simulating", file=sys.stderr, leave=False)
        self.bar.total = total
        self.bar.set_postfix_str(f"t={now:,.0f} s", refresh=False)
        self.bar.update(finished - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def command_run(args):
    spec = run_spec(args)
    if catalog.is_batsched(spec.scheduler) and args.engine == "embedded":
        raise InputError("--scheduler", f"{spec.scheduler} is batsched's C++ scheduler: it runs only against real "
                                        "Batsim (--engine batsim, or --engine docker)")
    make_folder(args.out)
    if args.engine == "batsim":
        from batio.real_batsim import run_with_batsim_binary
        run_with_batsim_binary(spec)
        nb_compute = None
    elif args.engine == "docker":
        from batio.docker_engine import run_with_docker
        run_with_docker(spec)
        nb_compute = None
    else:
        progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
        try:
            result = simulate(spec, progress)
        finally:
            progress.close()
        nb_compute = result["nb_compute"]
    print_summary(spec, args.engine, nb_compute)
    return 0


def print_summary(spec, engine, nb_compute=None):
    """What `batio run` prints of a finished run (also the compose services', batio.compose)."""
    if nb_compute is None:
        from batio.engine.platform import classify, read_properties
        properties, _ = read_properties(spec.platform)
        nb_compute = len(classify(spec.platform, list(properties), spec.roles, spec.master_host).compute)
    summary = metrics.summarize(spec.out_prefix, nb_compute)
    print(f"{Path(spec.scheduler).stem} {json.dumps(spec.options)} on {Path(spec.platform).name} "
          f"with {', '.join(Path(w).name for w in spec.workloads)} ({engine} engine)")
    print(metrics.format_summary(summary))
    print(f"outputs: {spec.out_prefix}_jobs.csv, _schedule.csv, _machine_states.csv"
          + (", _io.csv" if engine == "embedded" else ""))


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
    failed = int((table["status"] != "ok").sum()) if len(table) else 0
    if failed:
        print(f"batio: {failed} of {len(table)} runs failed: see the error column of results.csv", file=sys.stderr)
        return 1
    return 0


def command_compare(args):
    from batio.compare import compare, comparison_grid
    make_folder(args.out)
    run_options = {"mode": args.mode, "io_sample_period": args.io_sample_period}
    run_options.update({key: value for key, value in (("timeout", args.timeout), ("max_idle", args.max_idle))
                        if value is not None})
    grid = comparison_grid(args.platform, args.workload, args.schedulers, args.options_of, args.seeds,
                           args.baseline, args.engine, io_slowdown=not args.no_io_slowdown, run_options=run_options)
    table, counts, report_path = compare(grid, args.out, workers=args.workers,
                                         progress=not args.quiet and sys.stderr.isatty())
    _print_tables(table, grid.baseline)
    return _runs_outcome(table, counts, args.out, report_path)


def command_sweep(args):
    from batio.sweep import load_config, run_grid
    grid = load_config(args.config)
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


def command_import(args):
    from batio.importers import dumps, import_trace, summary_lines
    workload = import_trace(args.format, args.trace, start=args.start, end=args.end, warmup=args.warmup,
                            cooldown=args.cooldown, max_jobs=args.max_jobs, sample=args.sample, seed=args.seed,
                            nodes=args.nodes, cores_per_node=args.cores_per_node,
                            keep_cancelled=args.keep_cancelled, darshan=args.darshan)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(workload))
    for line in summary_lines(workload):
        print(line)
    print(f"written: {out} (what was skipped and why, line by line: its \"trace\" block)")
    return 0


def command_platform(args):
    from batio.platform_builder import contention_value, platform_xml
    contention = None if args.contention is None else contention_value(args.contention, args.contention_unit)
    text = platform_xml(args.nodes, args.cores, args.speed, args.node_link, args.pfs_bandwidth, args.latency,
                        contention)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"{args.nodes} compute hosts node0..node{args.nodes - 1} ({args.cores} cores each), storage host pfs "
          f"behind pfs_link, master_host" + (f"; contention curve {contention}" if contention else ""))
    print(f"written: {out}")
    return 0


def command_list(_args):
    print("platforms:  " + ", ".join(sorted(catalog.bundled_platforms())))
    print("workloads:  " + ", ".join(sorted(catalog.bundled_workloads())))
    print("schedulers: " + ", ".join(catalog.SCHEDULERS) + " (batio); "
          + ", ".join(sorted(catalog.pybatsim_schedulers())) + " (pybatsim)")
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
    run.add_argument("--io-sample-period", type=float, default=1.0,
                     help="seconds between samples of the storage throughput written to out_io.csv")
    run.add_argument("--io-exclusive", action="store_true",
                     help="beyond Batsim: each storage host serves one transfer at a time, first come first "
                          "served (the model of seed paper 001); default: fair sharing, as in Batsim")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
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
    comparison.add_argument("--io-sample-period", type=float, default=1.0, help="seconds between _io.csv samples")
    comparison.add_argument("--quiet", action="store_true", help="no progress bar")
    comparison.set_defaults(handler=command_compare)

    sweep = commands.add_parser("sweep", help="a grid of runs from a YAML file (docs/sweeps.md), in parallel on Dask")
    sweep.add_argument("config", help="the sweep's YAML file")
    sweep.add_argument("--out", help="output folder (default out/sweeps/CONFIG_NAME); rerunning resumes")
    sweep.add_argument("--workers", type=int,
                       help="local Dask worker processes (default: one per CPU; 0: one run after the other, no Dask)")
    sweep.add_argument("--scheduler-address", help="run on an existing Dask cluster, e.g. tcp://10.0.0.1:8786")
    sweep.add_argument("--retry-failed", action="store_true", help="run the runs that failed before again")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
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

    importing = commands.add_parser("import", help="a Batsim workload from a job trace (SWF, Slurm sacct); "
                                                   "docs/formats.md states the mapping")
    importing.add_argument("format", choices=["swf", "sacct"],
                           help="swf: Parallel Workloads Archive; sacct: `sacct --parsable2` with a header line")
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
    importing.set_defaults(handler=command_import)

    machine = commands.add_parser("platform", help="a SimGrid platform (compute nodes, one parallel file system, "
                                                   "a master host) from a short description")
    machine.add_argument("--nodes", type=int, required=True, help="compute hosts")
    machine.add_argument("--cores", type=int, default=1, help="cores per compute host (default 1)")
    machine.add_argument("--speed", required=True, help="flop/s per core: a number or with a unit, e.g. 1Gf")
    machine.add_argument("--node-link", required=True, help="each node's link: bytes/s or e.g. 10GBps, 100Gbps")
    machine.add_argument("--pfs-bandwidth", required=True,
                         help="the file system's link, which all storage traffic shares: e.g. 5GBps")
    machine.add_argument("--latency", default="50us", help="latency of every link (default 50us)")
    machine.add_argument("--contention", metavar="CURVE|CSV|XML",
                         help="beyond Batsim: pfs_link's throughput per number of clients, as a curve "
                              "'1:1GBps 8:6GBps', a measured CSV (batio calibrate's input) or the "
                              "property.xml batio calibrate writes")
    machine.add_argument("--contention-unit", default="GB/s", help="unit of a --contention CSV (default GB/s)")
    machine.add_argument("--out", required=True, help="the platform XML file to write")
    machine.set_defaults(handler=command_platform)

    listing = commands.add_parser("list", help="list bundled platforms, workloads and schedulers")
    listing.set_defaults(handler=command_list)
    return top


def check_numbers(args):
    """Option values argparse's types let through but no run can use."""
    port = getattr(args, "port", None)
    if port is not None and not 1 <= port <= 65535:
        raise InputError("--port", f"must be a TCP port from 1 to 65535, got {port}")
    for option in ("timeout", "max_idle", "io_sample_period"):
        value = getattr(args, option, None)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"--{option.replace('_', '-')}", f"must be a finite number of seconds > 0, got {value}")
    workers = getattr(args, "workers", None)
    if workers is not None and workers < 0:
        raise InputError("--workers", f"must be >= 0 (0: one run after the other), got {workers}")
    max_jobs = getattr(args, "max_jobs", None)
    if max_jobs is not None and max_jobs < 1:
        raise InputError("--max-jobs", f"must be at least 1, got {max_jobs}")
    if getattr(args, "out", None) == "":
        raise InputError("--out", "must name a folder, got an empty string")


class Terminated(BaseException):
    """SIGTERM or SIGHUP: unwind like Ctrl-C, so that every child process is ended."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _terminate(signum, _frame):
    raise Terminated(signum)


def main(argv=None):
    logging.basicConfig(format="batio: %(levelname)s: %(message)s", level=logging.WARNING)
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
        print("batio: interrupted", file=sys.stderr)
        return 130
    except Terminated as signalled:
        print(f"batio: stopped by {signalled}", file=sys.stderr)
        return 128 + signalled.signum
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
