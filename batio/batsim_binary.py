"""Running a scheduler against a real ``batsim`` binary found on PATH.

The scheduler binds its socket first (``pybatsim FILE -s tcp://*:PORT``),
then Batsim connects (``batsim -p ... -w ... -e PREFIX -s tcp://...``), as
Batsim's docs prescribe. Both processes are ended with the run.
"""

import shutil
import subprocess
import time

from batio import processes
from batio.errors import EngineError, SchedulerError


def batsim_command(spec, endpoint):
    command = ["batsim", "-p", str(spec.platform), "-e", str(spec.out_prefix), "-s", endpoint,
               "-m", spec.master_host]
    for workload in spec.workloads:
        command += ["-w", str(workload)]
    flags = [(spec.forward_profiles, "--forward-profiles-on-submission"),
             (spec.dynamic_jobs, "--enable-dynamic-jobs"),
             (spec.acknowledge_dynamic_jobs, "--acknowledge-dynamic-jobs"),
             (spec.compute_sharing, "--enable-compute-sharing"),
             (not spec.storage_sharing, "--disable-storage-sharing")]
    command += [flag for enabled, flag in flags if enabled]
    for host, role in spec.roles.items():
        command += ["-r", f"{host}:{role}"]
    return command


def run_with_batsim(spec, timeout_s=None):
    """Run ``spec`` (a RunSpec) on real Batsim; return when both processes end."""
    if shutil.which("batsim") is None:
        raise EngineError("--engine batsim needs a `batsim` binary on PATH (Batsim 4.2), "
                          "or use docker-compose (see README)")
    endpoint = f"tcp://127.0.0.1:{processes.choose_port(spec.port)}"
    prefix = spec.out_prefix
    with open(f"{prefix}_scheduler.log", "w") as sched_log, open(f"{prefix}_batsim.log", "w") as batsim_log:
        scheduler = processes.start_pybatsim(spec.scheduler, spec.options, endpoint, sched_log)
        time.sleep(0.5)  # the scheduler must bind before Batsim connects
        batsim = processes.start(batsim_command(spec, endpoint), batsim_log)
        try:
            batsim_code = batsim.wait(timeout_s)
            scheduler_code = scheduler.wait(30)
        except subprocess.TimeoutExpired:
            raise EngineError(f"Batsim did not finish within {timeout_s} s") from None
        finally:
            processes.stop(batsim)
            processes.stop(scheduler)
    if batsim_code != 0:
        raise EngineError(f"batsim exited with code {batsim_code}; see {prefix}_batsim.log")
    if scheduler_code != 0:
        raise SchedulerError(f"the scheduler exited with code {scheduler_code}; see {prefix}_scheduler.log")
