"""Running a scheduler against real Batsim: a local binary, or the Docker image.

The scheduler binds its socket first, then Batsim connects (Batsim's docs
prescribe this order). Schedulers are pybatsim files, or batsched's C++
variants named ``batsched:VARIANT`` (``batsched`` must be on PATH: it runs
on the host like every scheduler). Each run writes ``PREFIX_run.json`` like
the embedded engine's: the run specification, the inputs' SHA-256, the
batio version and the error, if any. ``batio.engines.docker`` runs Batsim in
Docker with the same pieces.
"""

from collections.abc import Callable
from dataclasses import asdict
import json
import logging
from pathlib import Path
import shutil
import subprocess
import time

from batio import __version__
from batio.catalog import BATSCHED_PREFIX, is_batsched
from batio.engines.processes import choose_port, listening, run_to_end, start, start_pybatsim
from batio.errors import BatioError, EngineError, SchedulerError
from batio.inputs.contention import declares_curve
from batio.inputs.platform import read_platform
from batio.inputs.spec import RunSpec, file_digest

# batsched options given as its own command-line flags; every other option
# goes to the variant as --variant_options JSON.
BATSCHED_FLAGS = {"queue_order": "--queue_order", "policy": "--policy", "rjms_delay": "--rjms_delay",
                  "verbosity": "--verbosity"}

logger = logging.getLogger(__name__)


# -- command lines ------------------------------------------------------------------------
def batsim_command(spec, endpoint):
    command = ["batsim", "-p", str(spec.platform), "-e", str(spec.out_prefix), "-s", endpoint,
               "-m", spec.master_host]
    for workload in spec.workloads:
        command += ["-w", str(workload)]
    flags = [(spec.forward_profiles, "--forward-profiles-on-submission"),
             (spec.dynamic_jobs, "--enable-dynamic-jobs"),
             (spec.acknowledge_dynamic_jobs, "--acknowledge-dynamic-jobs"),
             (spec.profile_reuse, "--enable-profile-reuse"),
             (spec.compute_sharing, "--enable-compute-sharing"),
             (not spec.storage_sharing, "--disable-storage-sharing")]
    command += [flag for enabled, flag in flags if enabled]
    for host, role in spec.roles.items():
        command += ["-r", f"{host}:{role}"]
    for option in spec.sg_config:
        command += ["--sg-cfg", option]
    return command



def batsched_command(scheduler, options, endpoint):
    """``batsched`` bound on ``endpoint`` for ``batsched:VARIANT`` with batio-style options."""
    variant = scheduler[len(BATSCHED_PREFIX):]
    if not is_batsched(scheduler) or not variant:
        raise EngineError(f"expected batsched:VARIANT (e.g. batsched:easy_bf), got {scheduler!r}")
    variant_options = dict(options)
    flags = {"verbosity": "quiet"}
    flags.update({key: variant_options.pop(key) for key in list(variant_options) if key in BATSCHED_FLAGS})
    command = ["batsched", "--variant", variant, "--socket-endpoint", endpoint]
    for key, value in flags.items():
        command += [BATSCHED_FLAGS[key], str(value)]
    return command + ["--variant_options", json.dumps(variant_options, sort_keys=True)]


# -- the scheduler on the host, then Batsim ------------------------------------------------
def start_scheduler(spec, endpoint, log):
    if is_batsched(spec.scheduler):
        if shutil.which("batsched") is None:
            raise EngineError(f"{spec.scheduler} needs a `batsched` binary on PATH (batsched 1.4, for Batsim 4)")
        return start(batsched_command(spec.scheduler, spec.options, endpoint), log)
    return start_pybatsim(spec.scheduler, spec.options, endpoint, log)


def run_against_scheduler(spec, engine, run_batsim, batsim_image=None):
    """Start the scheduler, let ``run_batsim(endpoint, log_path)`` run Batsim to its exit
    code, check both, and write the run record."""
    prefix = spec.out_prefix
    if declares_curve(spec.platform):
        logger.warning("%s declares batio:contention, which Batsim ignores: its storage links share bandwidth "
                       "fairly, without the throughput loss the embedded engine simulates", spec.platform)
    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    port = choose_port(spec.port)
    endpoint = f"tcp://127.0.0.1:{port}"
    started = time.perf_counter()
    try:
        with open(f"{prefix}_scheduler.log", "w") as log:
            with listening(start_scheduler(spec, endpoint, log), port, f"{prefix}_scheduler.log") as scheduler:
                batsim_code = run_batsim(endpoint, f"{prefix}_batsim.log")
                if batsim_code != 0:  # the scheduler may never hear from Batsim: do not wait for it
                    raise EngineError(f"batsim exited with code {batsim_code}; see {prefix}_batsim.log")
                try:
                    scheduler_code = scheduler.wait(30)  # Batsim's SIMULATION_ENDS makes it exit
                except subprocess.TimeoutExpired:
                    raise SchedulerError(f"the scheduler did not exit after Batsim ended; "
                                         f"see {prefix}_scheduler.log") from None
        if scheduler_code != 0:
            raise SchedulerError(f"the scheduler exited with code {scheduler_code}; see {prefix}_scheduler.log")
    except BatioError as error:
        write_run_record(spec, engine, time.perf_counter() - started, error=str(error), batsim_image=batsim_image)
        raise
    write_run_record(spec, engine, time.perf_counter() - started, batsim_image=batsim_image)


def run_with_batsim_binary(spec: RunSpec, on_progress: Callable | None = None,
                           wall_timeout_s: float | None = None) -> dict:
    """Run ``spec`` on a ``batsim`` binary found on PATH, within ``wall_timeout_s`` seconds when given;
    ``on_progress``: never called (Batsim does not report its jobs to batio: batio.engines)."""
    if shutil.which("batsim") is None:
        raise EngineError("--engine batsim needs a `batsim` binary on PATH (Batsim 4.2), or use --engine docker")

    def run_batsim(endpoint, log_path):
        with open(log_path, "w") as log:
            try:
                return run_to_end(batsim_command(spec, endpoint), log, wall_timeout_s)
            except subprocess.TimeoutExpired:
                raise EngineError(f"Batsim did not finish within {wall_timeout_s} s") from None

    run_against_scheduler(spec, "batsim", run_batsim)
    return {"prefix": str(spec.out_prefix)}


def check_binary() -> None:
    """A ``batsim`` binary on PATH, checked once before a grid's runs."""
    if shutil.which("batsim") is None:
        raise EngineError("engine batsim needs a `batsim` binary on PATH (Batsim 4.2), or use the docker engine")


# -- the run record -----------------------------------------------------------------------
def write_run_record(spec, engine, wall_time_s, error=None, batsim_image=None):
    """PREFIX_run.json for a run on real Batsim, with the embedded engine's keys."""
    platform = read_platform(spec)
    files = [spec.platform, *spec.workloads] + ([] if is_batsched(spec.scheduler) else [spec.scheduler])
    record = {
        "batio_version": __version__,
        "engine": engine,
        "batsim_image": batsim_image,
        "spec": asdict(spec),
        "inputs_sha256": {str(path): file_digest(path) for path in files},
        "nb_compute_resources": len(platform.compute),
        "nb_storage_resources": len(platform.storage),
        "storage_names": [resource.name for resource in platform.storage],
        "completed": error is None,
        "error": error,
        "wall_time_s": wall_time_s,
    }
    Path(f"{spec.out_prefix}_run.json").write_text(json.dumps(record, indent=1))
