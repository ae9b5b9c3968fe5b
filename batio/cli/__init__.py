"""`batio`: run pybatsim schedulers on SimGrid platforms and Batsim workloads.

    batio run --platform P --workload W --scheduler S [--options JSON] --out DIR
    batio compare --platform P --workload W --schedulers A,B,C --out DIR
    batio sweep CONFIG.yaml [--workers N] [--scheduler-address ADDR]
    batio matrix CONFIG.yaml [--small] [--workers N] [--page PAGE.md]
    batio calibrate MEASURED.csv --out DIR [--unit GB/s] [--platform P --element ID]
    batio twin SUMMARIES.csv.gz --out DIR [--system NAME] [--fit-until YYYY-MM-DD] [--engine-check N]
    batio import swf|sacct|jobsio TRACE --out WORKLOAD.json [--from T --to T --warmup D --cooldown D ...]
    batio validate --platform P --workload W.json --train T.json [T2.json ...] | --model M.json [--out DIR]
    batio iomodel train|apply W.json ... --platform P [--model M.json] [--end low|high] [--seed S] --out OUT
    batio validate --benchmarks SUMMARIES.csv.gz [--platform TWIN.xml] [--fit-until YYYY-MM-DD] [--out DIR]
    batio platform --nodes N --cores C --speed FLOPS --node-link BW --pfs-bandwidth BW --out PLATFORM.xml
    batio list
    batio describe NAME
"""

import logging
import math
import shlex
import signal
import sys
import threading

from batio.cli.parser import parser
from batio.cli.run import checked_run, print_summary, report_run, resolved_run, run_marks
from batio.engines.embedded.sgconfig import check_sg_config
from batio.errors import BatioError, InputError, Interrupted
from batio.inputs.spec import check_option_flag

# Local Dask workers are processes of a few hundred MB each, with an engine process
# per run: past this many a machine runs out of memory (a cluster can take more).
MAX_WORKERS = 256
RESUMABLE = ("compare", "sweep", "matrix")  # their finished runs are kept: the same command resumes

__all__ = ["checked_run", "main", "parse_run", "parser", "print_summary", "report_run", "resolved_run", "run_marks"]


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


def parse_run(argv):
    """`batio run ARGV`'s arguments, parsed and checked as ``main`` checks them: with ``checked_run``,
    the way in for the compose services (batio.compose), which build the same command line."""
    args = parser().parse_args(argv)
    check_numbers(args)
    return args


def _terminate(signum, _frame):
    """SIGTERM or SIGHUP: unwind like Ctrl-C, so that every child process is ended."""
    raise Interrupted(signum)


def main(argv=None):
    logging.basicConfig(format="batio: %(levelname)s: %(message)s", level=logging.WARNING)
    logging.getLogger("batio.progress").setLevel(logging.INFO)  # progress lines off a terminal (batio.progress)
    try:  # batio's option types (batio.cli.options) refuse a bad value in one line
        args = parser().parse_args(argv)
    except BatioError as error:
        print(f"batio: error: {error}", file=sys.stderr)
        return 2
    # The command as typed, every flag included: a comparison's report names it.
    args.command_line = shlex.join(["batio", *(sys.argv[1:] if argv is None else argv)])
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
        resume = ": run the same command again to resume" if args.command in RESUMABLE else ""
        print(f"batio: interrupted by SIGINT{resume}", file=sys.stderr)
        return 128 + signal.SIGINT
    except Interrupted as stop:
        print(f"batio: {stop}", file=sys.stderr)
        return 128 + stop.signum
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
