"""The compose services' entry point: `python -m batio.compose scheduler|batsim`.

Both services of docker-compose.yml read the same environment and build the
run as `batio run --engine batsim` does, so that Batsim gets the same
command line as there: PLATFORM, WORKLOAD (comma-separated), SCHEDULER
(a batio or pybatsim name, a file, or batsched:VARIANT), OPTIONS (JSON),
RUN_ARGS (more `batio run` flags, e.g. --role pfs0:storage, --allow-unfit,
--force), OUT (the output folder) and PORT. The scheduler binds on all
interfaces; Batsim connects to SCHEDULER_HOST. Either may start first:
Batsim's ZeroMQ socket connects whenever the scheduler binds, so no health
check is needed.

Both make every check of `batio run` before any engine starts, by the same
code (batio.cli.run.checked_run): an image built from another pyproject.toml
(batio/image_check.py), the inputs, the engine's capabilities, the policy's
fit (refused, or DEGRADED under --allow-unfit). The batsim service speaks
for the run: it alone says a refusal, in the CLI's one line, and exits 2
(the code `up --exit-code-from batsim` passes on); it alone owns OUT,
refused when an earlier run's outputs are there unless RUN_ARGS has --force,
which removes them first (batio.outfiles.fresh_folder), as `batio run` does.
The scheduler service writes nothing in OUT (its log is the service's
output), so the two cannot race on it; once Batsim has ended it waits for
the batsim service's page before it exits, since compose stops every service
when one exits. When the scheduler service cannot serve, it says nothing and
waits to be stopped, as it would wait for a Batsim that never connects:
compose stops it once the batsim service has said why. Run alone (`run
scheduler`), it says the same line itself after QUIET_WAIT_S.
"""

import argparse
import contextlib
import io
import logging
import os
from pathlib import Path
import shlex
import signal
import subprocess
import sys
import time

from batio.errors import BatioError, EngineError
from batio.image_check import image_error

# batio's other modules are imported where used, after `image_error`: in an image built from
# another pyproject.toml, importing them could fail on a missing package before it says why.

DEFAULTS = {"PLATFORM": "cluster16_pfs", "WORKLOAD": "demo", "SCHEDULER": "easy", "OPTIONS": "{}",
            "RUN_ARGS": "", "OUT": "out/compose", "PORT": "28000", "SCHEDULER_HOST": "127.0.0.1"}
# How long a scheduler service that cannot serve waits, quiet, for compose to stop it: the batsim
# service makes the same checks and says why. Long enough for a loaded machine's two imports.
QUIET_WAIT_S = 60.0


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


def checked(values):
    """`batio run`'s parsed arguments, its RunSpec and why it is degraded, checked as `batio run`
    checks them (InputError; argparse's usage and SystemExit for an unknown flag in RUN_ARGS)."""
    from batio import cli
    args = cli.parse_run(run_arguments(values))
    spec, degraded = cli.checked_run(args)
    return args, spec, degraded


def serve(spec, port):
    """Run the scheduler bound on all interfaces until Batsim ends the simulation, then until the
    batsim service has written the run's page (``outlive_batsim``)."""
    from batio.engines.batsim import start_scheduler
    started = time.time()
    scheduler = start_scheduler(spec, f"tcp://*:{port}", sys.stdout)
    code = scheduler.wait()
    if code == 0:  # a scheduler that failed ends the run at once: Batsim may wait for its answer
        outlive_batsim(Path(spec.out_prefix).parent / "report.html", started, QUIET_WAIT_S)
    return code


def outlive_batsim(page, since, seconds):
    """Wait until ``page`` (the last thing the batsim service writes) is there, written after ``since``,
    for at most ``seconds``. `up --exit-code-from batsim` stops every service as soon as one exits: a
    scheduler that ended with the simulation would cut the batsim service's record, summary and exit
    status short. Reading OUT only: the batsim service alone writes there."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if page.stat().st_mtime >= since - 1:  # 1 s: coarse file system clocks
                return
        except OSError:
            pass
        time.sleep(0.2)


def run_batsim(spec, host, port, marks):
    """Run Batsim against the scheduler at host:port, then write the run record (with ``marks``,
    as `batio run` does)."""
    from batio.engines import mark_record
    from batio.engines.batsim import batsim_command, write_run_record
    started = time.perf_counter()
    log_path = f"{spec.out_prefix}_batsim.log"  # where `batio run --engine batsim` writes Batsim's log
    try:
        with open(log_path, "w") as log:
            code = subprocess.call(batsim_command(spec, f"tcp://{host}:{port}"), stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT)
        error = f"batsim exited with code {code}; see {log_path}" if code else None
    except OSError as problem:  # no batsim binary: the record says so like any failed run
        error = f"cannot start batsim: {problem.strerror or problem}"
    write_run_record(spec, "compose", time.perf_counter() - started, error=error)
    mark_record(spec.out_prefix, marks)
    if error:
        raise EngineError(error)


def batsim_service(values):
    from batio import cli
    from batio.outfiles import fresh_folder
    args, spec, degraded = checked(values)
    fresh_folder(args.out, args.force)
    run_batsim(spec, values["SCHEDULER_HOST"], values["PORT"], cli.run_marks(args, degraded))
    cli.report_run(args, spec, degraded, engine="batsim")
    return 0


def scheduler_service(values):
    """Serve the scheduler; when the checks refuse the run, wait quietly (``refused``)."""
    said = io.StringIO()
    try:
        # The batsim service says the checks' warnings (DEGRADED, --force) and argparse's usage.
        with contextlib.redirect_stderr(said):
            logging.disable(logging.WARNING)
            try:
                _, spec, _ = checked(values)
            finally:
                logging.disable(logging.NOTSET)
    except BatioError as error:
        return refused(f"batio: error: {error}\n")
    except SystemExit as stop:  # argparse, on a flag of RUN_ARGS it does not know
        return refused(said.getvalue(), stop.code if isinstance(stop.code, int) else 2)
    return serve(spec, values["PORT"])


def refused(line, code=2):
    """The scheduler service that cannot serve: quiet until compose stops it (SIGTERM, which PID 1
    would otherwise ignore for ten seconds), or it says ``line`` itself after QUIET_WAIT_S."""
    def stop(_signum, _frame):
        raise SystemExit(code)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        wait_to_be_stopped(QUIET_WAIT_S)
    finally:
        signal.signal(signal.SIGTERM, previous)
    sys.stderr.write(line)
    return code


def wait_to_be_stopped(seconds):
    time.sleep(seconds)


def main(argv=None, environ=os.environ):
    parser = argparse.ArgumentParser(prog="python -m batio.compose", description=__doc__.split("\n")[0])
    parser.add_argument("service", choices=("scheduler", "batsim"))
    service = parser.parse_args(argv).service
    stale = image_error(environ)
    if stale:
        if service == "scheduler":
            return refused(f"batio: error: {stale}\n")
        print(f"batio: error: {stale}", file=sys.stderr)
        return 2
    logging.basicConfig(format="batio: %(levelname)s: %(message)s", level=logging.WARNING)
    values = settings(environ)
    if service == "scheduler":
        try:
            return scheduler_service(values)
        except BatioError as error:  # the scheduler could not start: only it can say so
            print(f"batio: error: {error}", file=sys.stderr)
            return 2
    try:
        return batsim_service(values)
    except BatioError as error:
        print(f"batio: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
