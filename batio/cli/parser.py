"""The `batio` command line: one function per group of sub-commands, each naming its handler."""

import argparse

from batio.cli.grids import command_compare, command_matrix, command_parity, command_report, command_sweep
from batio.cli.iomodel import command_iomodel
from batio.cli.options import count, number
from batio.cli.run import command_run
from batio.cli.tools import (
    command_calibrate,
    command_describe,
    command_import,
    command_list,
    command_platform,
    command_twin,
    command_validate,
)
from batio.engines import DEFAULT_ENGINE, ENGINES, engines_help
from batio.inputs.spec import (
    DEFAULT_IO_SAMPLE_PERIOD_S,
    DEFAULT_MAX_IDLE_S,
    MODES,
)
from batio.report import metrics
from batio.sweep.config import MAX_SEEDS

DESCRIPTION = "`batio`: run pybatsim schedulers on SimGrid platforms and Batsim workloads."
ALLOW_UNFIT_HELP = ("run policies whose needs the inputs do not meet (see `batio describe NAME`), "
                    "their results marked degraded")
TIMEOUT_HELP = ("embedded engine: wall-clock seconds one scheduler decision may take before the run stops "
                "(default 60 in socket mode, 600 in-process)")
MAX_IDLE_HELP = ("embedded engine: simulated seconds the scheduler may let pass with jobs waiting and none running "
                 f"(or calling itself back with nothing left to do) before the run stops as stuck "
                 f"(default {DEFAULT_MAX_IDLE_S:g})")
GRID_FORCE_HELP = ("replace the results of another comparison or sweep in --out (rerunning the same one "
                   "resumes it without --force)")
# A twin's recalibration window: ten years (TOKIO-ABC's records span one); the engine check
# simulates one run per configuration, of which a file has tens.
MAX_DAYS, MAX_ENGINE_CHECK = 3650, 1000
BSLD_TAU_HELP = (f"the bounded slowdown's threshold: max(1, turnaround / max(execution time, tau)) "
                 f"(default {metrics.DEFAULT_BSLD_TAU:g} s)")


class OneLineParser(argparse.ArgumentParser):
    """argparse's own refusals (an unknown option, a value missing) as batio's: one line, no usage
    block (``--help`` shows it); the sub-commands' parsers are of this class too."""

    def error(self, message):
        self.exit(2, f"batio: error: {message} (see: {self.prog} --help)\n")


def parser():
    top = OneLineParser(prog="batio", description=DESCRIPTION)
    commands = top.add_subparsers(dest="command", required=True)
    _add_run(commands)
    _add_compare(commands)
    _add_grids(commands)
    _add_models(commands)
    _add_import(commands)
    _add_checks(commands)
    _add_iomodel(commands)
    _add_pages(commands)
    return top


def _add_run(commands):
    run = commands.add_parser("run", help="simulate one scheduler on one platform and workload(s)")
    run.add_argument("--platform", required=True, help="platform XML file or bundled name (see `batio list`)")
    run.add_argument("--workload", required=True, action="append",
                     help="workload JSON file or bundled name; repeat for several workloads (w0, w1...)")
    run.add_argument("--scheduler", required=True, help="pybatsim scheduler file, or a batio/pybatsim name")
    run.add_argument("--options", default="{}", help="scheduler options as JSON (pybatsim's -o)")
    run.add_argument("--engine", choices=list(ENGINES), default=DEFAULT_ENGINE, help=engines_help())
    run.add_argument("--mode", choices=MODES, default="inprocess",
                     help="embedded engine: drive the scheduler in-process (default) or over ZeroMQ")
    run.add_argument("--out", required=True, help="output folder (files out_jobs.csv, ...)")
    run.add_argument("--port", type=count("--port"),
                     help="local TCP port for socket mode / Batsim (default: a free one)")
    run.add_argument("--timeout", type=number("--timeout"), help=TIMEOUT_HELP)
    run.add_argument("--max-idle", type=number("--max-idle"), default=DEFAULT_MAX_IDLE_S, help=MAX_IDLE_HELP)
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
    run.add_argument("--io-sample-period", type=number("--io-sample-period"), default=DEFAULT_IO_SAMPLE_PERIOD_S,
                     help="seconds between samples of the storage throughput written to out_io.csv")
    run.add_argument("--io-exclusive", action="store_true",
                     help="beyond Batsim: each storage host serves one transfer at a time, first come first "
                          "served (the model of seed paper 001); default: fair sharing, as in Batsim")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--bsld-tau", type=number("--bsld-tau"),
                     default=metrics.DEFAULT_BSLD_TAU, metavar="SECONDS", help=BSLD_TAU_HELP)
    run.add_argument("--force", action="store_true",
                     help="replace the earlier run's outputs (out_*, report.html) in a non-empty --out folder")
    run.add_argument("--allow-unfit", action="store_true", help=ALLOW_UNFIT_HELP)
    run.set_defaults(handler=command_run)


def _add_compare(commands):
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
    comparison.add_argument("--seeds", type=count("--seeds", 1, MAX_SEEDS),
                            help=f"K: run on the generator's workloads for seeds 1..K (K at most {MAX_SEEDS})")
    comparison.add_argument("--windows", metavar="LENGTH",
                            help="replicas of a trace: cut the workload file's evaluated span into consecutive "
                                 "windows of LENGTH (e.g. 7d), each one replica (see batio/windows.py)")
    comparison.add_argument("--window-count", type=count("--window-count", 1),
                            metavar="N", help="only the first N windows (default: all)")
    comparison.add_argument("--window-warmup", metavar="DURATION",
                            help="jobs submitted this long before a window load the machine, unevaluated (default 0)")
    comparison.add_argument("--window-cooldown", metavar="DURATION",
                            help="jobs submitted this long after a window load the machine, unevaluated (default 0)")
    comparison.add_argument("--bsld-tau", type=number("--bsld-tau"),
                            default=metrics.DEFAULT_BSLD_TAU, metavar="SECONDS",
                            help=BSLD_TAU_HELP)
    comparison.add_argument("--baseline", help="the scheduler the ratios are to (default: the first)")
    comparison.add_argument("--engine", choices=list(ENGINES), default=DEFAULT_ENGINE)
    comparison.add_argument("--out", required=True, help="output folder: report/, results.csv, runs/")
    comparison.add_argument("--workers", type=count("--workers"), default=0,
                            help="runs at once on a local Dask cluster (default 0: one after the other)")
    comparison.add_argument("--no-io-slowdown", action="store_true",
                            help="skip the reference run (jobs alone) the I/O slowdown needs")
    comparison.add_argument("--mode", choices=MODES, default="inprocess", help="embedded engine's protocol mode")
    comparison.add_argument("--timeout", type=number("--timeout"), help=TIMEOUT_HELP)
    comparison.add_argument("--max-idle", type=number("--max-idle"), help=MAX_IDLE_HELP)
    comparison.add_argument("--io-sample-period", type=number("--io-sample-period"), default=DEFAULT_IO_SAMPLE_PERIOD_S,
                            help="seconds between _io.csv samples")
    comparison.add_argument("--quiet", action="store_true", help="no progress bar")
    comparison.add_argument("--allow-unfit", action="store_true", help=ALLOW_UNFIT_HELP)
    comparison.add_argument("--force", action="store_true", help=GRID_FORCE_HELP)
    comparison.set_defaults(handler=command_compare)


def _add_grids(commands):
    sweep = commands.add_parser("sweep", help="a grid of runs from a YAML file (docs/sweeps.md), in parallel on Dask")
    sweep.add_argument("config", help="the sweep's YAML file")
    sweep.add_argument("--out", help="output folder (default out/sweeps/CONFIG_NAME); rerunning resumes")
    sweep.add_argument("--workers", type=count("--workers"),
                       help="local Dask worker processes (default: one per CPU; 0: one run after the other, no Dask)")
    sweep.add_argument("--scheduler-address", help="run on an existing Dask cluster, e.g. tcp://10.0.0.1:8786")
    sweep.add_argument("--retry-failed", action="store_true", help="run the runs that failed before again")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    sweep.add_argument("--allow-unfit", action="store_true", help=ALLOW_UNFIT_HELP + " (or allow_unfit: true)")
    sweep.add_argument("--force", action="store_true", help=GRID_FORCE_HELP)
    sweep.set_defaults(handler=command_sweep)

    matrix = commands.add_parser("matrix", help="every catalog policy on every input of a YAML file that fits it: "
                                                "one page ranking the policies per input, with the skipped pairs")
    matrix.add_argument("config", help="the matrix's YAML file (e.g. scripts/sweeps/matrix.yaml)")
    matrix.add_argument("--small", action="store_true", help="the config's `small` variant (fewer jobs), for CI")
    matrix.add_argument("--out", help="output folder (default out/matrix/CONFIG_NAME[-small]); rerunning resumes")
    matrix.add_argument("--page", help="where to write the page (default OUT/matrix.md)")
    matrix.add_argument("--workers", type=count("--workers"), default=0,
                        help="runs at once on a local Dask cluster (default 0: one after the other, without Dask)")
    matrix.add_argument("--retry-failed", action="store_true", help="run the runs that failed before again")
    matrix.add_argument("--quiet", action="store_true", help="no progress bar")
    matrix.set_defaults(handler=command_matrix)

    check = commands.add_parser("parity", help="every catalog policy on its bundled inputs on the embedded engine "
                                               "and on a real `batsim` binary: a job-by-job table")
    check.add_argument("--out", required=True, help="output folder: parity.csv, parity.md, one folder per policy")
    check.add_argument("--policies", help="comma-separated catalog names (default: all)")
    check.add_argument("--max-jobs", type=count("--max-jobs"),
                       help="keep each workload's first N jobs by submission time")
    check.add_argument("--sg-cfg", action="append", default=[], metavar="OPT:VALUE",
                       help="a SimGrid option for both engines (e.g. maxmin/precision:1e-9)")
    check.set_defaults(handler=command_parity)


def _add_models(commands):
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
    twin.add_argument("--days", type=count("--days", 1, MAX_DAYS), default=28,
                      help=f"window of the recalibrated twin, 1 to {MAX_DAYS} days (default 28)")
    twin.add_argument("--engine-check", type=count("--engine-check", 0, MAX_ENGINE_CHECK), default=0, metavar="N",
                      help="also simulate N runs on the embedded engine and compare with the analytic model")
    twin.set_defaults(handler=command_twin)


def _add_import(commands):
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
    importing.add_argument("--max-jobs", type=count("--max-jobs"),
                           help="keep the first N jobs (by submission) of the selection")
    importing.add_argument("--sample", type=number("--sample"), metavar="FRACTION",
                           help="keep this fraction of the jobs, chosen by a hash of (seed, job id)")
    importing.add_argument("--seed", type=count("--seed"), default=0, help="the sample's seed (default 0)")
    importing.add_argument("--nodes", type=count("--nodes"),
                           help="the machine's compute hosts: larger jobs are skipped (default: SWF header "
                                "MaxProcs / cores per node, else MaxNodes, else the largest job)")
    importing.add_argument("--cores-per-node", type=count("--cores-per-node"),
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


def _add_iomodel(commands):
    model = commands.add_parser("iomodel", help="a per-job I/O model learned from weeks of `batio import jobsio`, "
                                                "and a week given its jobs' own I/O (docs/traces.md)")
    model.add_argument("action", choices=["train", "apply"],
                       help="train: fit on the weeks given; apply: write the one week given with each job's own I/O")
    model.add_argument("weeks", nargs="+", metavar="W.json", help="workloads from `batio import jobsio`")
    model.add_argument("--platform", required=True, help="platform XML file or bundled name (its file system's "
                                                         "bandwidths set each job's floor)")
    model.add_argument("--model", help="apply: the model file from `batio iomodel train`")
    model.add_argument("--end", choices=["low", "high"], default="low",
                       help="apply: each job's I/O all ranks at once (low, default) or one rank after the other, "
                            "capped by its run time and lowered to end within it (high)")
    model.add_argument("--seed", type=count("--seed"),
                       help="apply: draw each job's I/O around its own from the model's "
                                                "held-out errors (a replica)")
    model.add_argument("--out", required=True, help="train: the model file; apply: the workload file")
    model.set_defaults(handler=command_iomodel)


def _add_checks(commands):
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
    checking.add_argument("--train", nargs="+", metavar="T.json",
                          help="weeks from `batio import jobsio` that train the per-job I/O model (never the scored "
                               "week); the model is written to OUT/iomodel.json")
    checking.add_argument("--model", help="a saved I/O model (`batio iomodel train`) instead of --train")
    checking.add_argument("--out", default="out/validate", help="output folder (default out/validate)")
    checking.set_defaults(handler=command_validate)

    machine = commands.add_parser("platform", help="a SimGrid platform (compute nodes, one parallel file system, "
                                                   "a master host) from a short description")
    machine.add_argument("--nodes", type=count("--nodes"), required=True, help="compute hosts")
    machine.add_argument("--cores", type=count("--cores"), default=1, help="cores per compute host (default 1)")
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


def _add_pages(commands):
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
