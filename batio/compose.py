"""The compose services' entry point: `python -m batio.compose scheduler|batsim`.

Both services of docker-compose.yml read the same environment and build the
run as `batio run --engine batsim` does, so that Batsim gets the same
command line as there: PLATFORM, WORKLOAD (comma-separated), SCHEDULER
(a batio or pybatsim name, a file, or batsched:VARIANT), OPTIONS (JSON),
RUN_ARGS (more `batio run` flags, e.g. --role pfs0:storage), OUT (the
output folder) and PORT. The scheduler binds on all interfaces; Batsim
connects to SCHEDULER_HOST. Either may start first: Batsim's ZeroMQ socket
connects whenever the scheduler binds, so no health check is needed.
Before anything else, each refuses in one line an image built from another
pyproject.toml than the checkout's (batio/image_check.py).
"""

import argparse
import logging
import os
import shlex
import subprocess
import sys
import time

from batio.errors import BatioError, EngineError
from batio.image_check import image_error

# batio's other modules are imported where used, after `image_error`: in an image built from
# another pyproject.toml, importing them could fail on a missing package before it says why.

DEFAULTS = {"PLATFORM": "cluster16_pfs", "WORKLOAD": "demo", "SCHEDULER": "easy", "OPTIONS": "{}",
            "RUN_ARGS": "", "OUT": "out/compose", "PORT": "28000", "SCHEDULER_HOST": "127.0.0.1"}


def settings(environ):
    """The services' settings: the environment's non-empty values over DEFAULTS."""
    return {key: environ.get(key) or default for key, default in DEFAULTS.items()}


def run_arguments(values):
    """The `batio run` arguments the settings stand for."""
    argv = ["run", "--platform", values["PLATFORM"], "--scheduler", values["SCHEDULER"],
            "--options", values["OPTIONS"], "--out", values["OUT"], "--engine", "batsim"]
    for workload in values["WORKLOAD"].split(","):
        argv += ["--workload", workload]
    return argv + shlex.split(values["RUN_ARGS"])


def serve(spec, port):
    """Run the scheduler bound on all interfaces until Batsim ends the simulation."""
    from batio.engines.batsim import start_scheduler
    scheduler = start_scheduler(spec, f"tcp://*:{port}", sys.stdout)
    return scheduler.wait()


def run_batsim(spec, host, port):
    """Run Batsim against the scheduler at host:port, then write the run record and summary."""
    from batio import cli
    from batio.engines.batsim import batsim_command, write_run_record
    started = time.perf_counter()
    log_path = f"{spec.out_prefix}_batsim.log"  # where `batio run --engine batsim` writes Batsim's log
    with open(log_path, "w") as log:
        code = subprocess.call(batsim_command(spec, f"tcp://{host}:{port}"), stdin=subprocess.DEVNULL,
                               stdout=log, stderr=subprocess.STDOUT)
    error = f"batsim exited with code {code}; see {log_path}" if code else None
    write_run_record(spec, "compose", time.perf_counter() - started, error=error)
    if error:
        raise EngineError(error)
    cli.print_summary(spec, "batsim")
    return 0


def main(argv=None, environ=os.environ):
    parser = argparse.ArgumentParser(prog="python -m batio.compose", description=__doc__.split("\n")[0])
    parser.add_argument("service", choices=("scheduler", "batsim"))
    service = parser.parse_args(argv).service
    stale = image_error(environ)
    if stale:
        print(f"batio: error: {stale}", file=sys.stderr)
        return 2
    from batio import cli
    from batio.outfiles import make_folder
    logging.basicConfig(format="batio: %(levelname)s: %(message)s", level=logging.WARNING)
    values = settings(environ)
    try:
        args = cli.parser().parse_args(run_arguments(values))
        spec = cli.run_spec(args)
        make_folder(args.out)
        if service == "scheduler":
            return serve(spec, values["PORT"])
        return run_batsim(spec, values["SCHEDULER_HOST"], values["PORT"])
    except BatioError as error:
        print(f"batio: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
