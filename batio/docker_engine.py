"""Real Batsim for runs batio does not simulate itself: in Docker, or a local binary for batsched.

``--engine docker``: batio starts the Batsim image that docker-compose.yml
pins (``BATSIM_IMAGE``) through the Docker SDK, on the host's network
(``network_mode="host"``), so that Batsim connects to the scheduler batio
runs on this host at 127.0.0.1:PORT, as Batsim's docs prescribe (the
scheduler binds first, Batsim connects). The input files are mounted
read-only, the output folder read-write, and the container runs as the
calling user so that its output files are the user's. Host networking is a
Linux feature: on Docker Desktop use docker-compose.yml instead.

Schedulers are pybatsim files, or batsched's C++ variants named
``batsched:VARIANT`` (``batsched`` must be on PATH: it runs on the host
like every scheduler). ``run_with_batsim_binary`` runs them against a
local ``batsim`` binary (``batio.batsim_binary`` starts pybatsim only).

Each run writes ``PREFIX_run.json`` like the embedded engine's: the run
specification, the inputs' SHA-256, the batio version and the error, if any.
"""

from dataclasses import asdict, replace
import json
import os
from pathlib import Path
import shutil
import socket
import subprocess
import time

from batio import __version__, processes
from batio.batsim_binary import batsim_command
from batio.engine.run import file_digest
from batio.errors import BatioError, EngineError, SchedulerError

BATSIM_IMAGE = "oarteam/batsim:4.0.0"  # the image docker-compose.yml pins: Batsim 4's JSON protocol
CONTAINER_INPUTS = "/batio/inputs"
CONTAINER_OUTPUTS = "/batio/outputs"
BATSCHED_PREFIX = "batsched:"
# batsched options given as its own command-line flags; every other option
# goes to the variant as --variant_options JSON.
BATSCHED_FLAGS = {"queue_order": "--queue_order", "policy": "--policy", "rjms_delay": "--rjms_delay",
                  "verbosity": "--verbosity"}
BIND_TIMEOUT_S = 20.0  # how long the scheduler may take to bind its socket


# -- command lines ------------------------------------------------------------------------
def batsched_command(scheduler, options, endpoint):
    """``batsched`` bound on ``endpoint`` for ``batsched:VARIANT`` with batio-style options."""
    variant = scheduler[len(BATSCHED_PREFIX):]
    if not scheduler.startswith(BATSCHED_PREFIX) or not variant:
        raise EngineError(f"expected batsched:VARIANT (e.g. batsched:easy_bf), got {scheduler!r}")
    variant_options = dict(options)
    flags = {"verbosity": "quiet"}
    flags.update({key: variant_options.pop(key) for key in list(variant_options) if key in BATSCHED_FLAGS})
    command = ["batsched", "--variant", variant, "--socket-endpoint", endpoint]
    for key, value in flags.items():
        command += [BATSCHED_FLAGS[key], str(value)]
    return command + ["--variant_options", json.dumps(variant_options, sort_keys=True)]


def container_plan(spec, endpoint):
    """(the Batsim container's command, its mounts) for ``spec`` (a RunSpec)."""
    from docker.types import Mount

    mounts = []

    def mount_input(path, index):
        inside = f"{CONTAINER_INPUTS}/{index}/{Path(path).name}"
        mounts.append(Mount(inside, str(Path(path).resolve()), type="bind", read_only=True))
        return inside

    platform = mount_input(spec.platform, 0)
    workloads = [mount_input(path, index) for index, path in enumerate(spec.workloads, start=1)]
    out_dir = Path(spec.out_prefix).resolve().parent
    mounts.append(Mount(CONTAINER_OUTPUTS, str(out_dir), type="bind", read_only=False))
    inside = replace(spec, platform=platform, workloads=workloads,
                     out_prefix=f"{CONTAINER_OUTPUTS}/{Path(spec.out_prefix).name}")
    # The image's entry point is batsim itself (docker-compose.yml passes only its arguments).
    return batsim_command(inside, endpoint)[1:], mounts


# -- the scheduler on the host ------------------------------------------------------------
def start_scheduler(spec, endpoint, log):
    if spec.scheduler.startswith(BATSCHED_PREFIX):
        if shutil.which("batsched") is None:
            raise EngineError(f"{spec.scheduler} needs a `batsched` binary on PATH (batsched 1.4, for Batsim 4)")
        return processes.start(batsched_command(spec.scheduler, spec.options, endpoint), log)
    return processes.start_pybatsim(spec.scheduler, spec.options, endpoint, log)


def wait_until_listening(port, scheduler, log_path, timeout_s=BIND_TIMEOUT_S):
    """Batsim gives up if nobody listens: wait until the scheduler has bound its port."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if scheduler.poll() is not None:
            raise SchedulerError(f"the scheduler exited with code {scheduler.returncode} before Batsim "
                                 f"connected; see {log_path}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SchedulerError(f"the scheduler did not listen on port {port} within {timeout_s:.0f} s; see {log_path}")


def _against_scheduler(spec, engine, run_batsim):
    """Start the scheduler, let ``run_batsim(endpoint, log_path)`` run Batsim to its exit
    code, check both, and write the run record."""
    prefix = spec.out_prefix
    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    port = processes.choose_port(spec.port)
    endpoint = f"tcp://127.0.0.1:{port}"
    started = time.perf_counter()
    try:
        with open(f"{prefix}_scheduler.log", "w") as log:
            scheduler = start_scheduler(spec, endpoint, log)
            try:
                wait_until_listening(port, scheduler, f"{prefix}_scheduler.log")
                batsim_code = run_batsim(endpoint, f"{prefix}_batsim.log")
                if batsim_code != 0:  # the scheduler may never hear from Batsim: do not wait for it
                    raise EngineError(f"batsim exited with code {batsim_code}; see {prefix}_batsim.log")
                try:
                    scheduler_code = scheduler.wait(30)  # Batsim's SIMULATION_ENDS makes it exit
                except subprocess.TimeoutExpired:
                    raise SchedulerError(f"the scheduler did not exit after Batsim ended; see {prefix}_scheduler.log") from None
            finally:
                processes.stop(scheduler)
        if scheduler_code != 0:
            raise SchedulerError(f"the scheduler exited with code {scheduler_code}; see {prefix}_scheduler.log")
    except BatioError as error:
        write_run_record(spec, engine, time.perf_counter() - started, error=str(error))
        raise
    write_run_record(spec, engine, time.perf_counter() - started)


# -- Batsim in Docker ---------------------------------------------------------------------
def _short(error):
    return str(error).splitlines()[0][:300] if str(error) else type(error).__name__


def connect():
    """A Docker client that answers, or a clear error."""
    import docker
    import requests
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        raise EngineError(f"--engine docker: no Docker engine answers at {where} ({_short(error)}); start Docker "
                          "(`docker info` must work for this user) or use --engine embedded") from None
    return client


def ensure_image(client, image=BATSIM_IMAGE):
    import docker
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        repository, _, tag = image.rpartition(":")
        try:
            client.images.pull(repository, tag=tag)
        except docker.errors.APIError as error:
            raise EngineError(f"cannot pull the Batsim image {image}: {_short(error)}") from None


def _run_container(client, command, mounts, log_path, timeout_s):
    import docker
    import requests
    try:
        container = client.containers.run(BATSIM_IMAGE, command, detach=True, network_mode="host", mounts=mounts,
                                          user=f"{os.getuid()}:{os.getgid()}")
    except docker.errors.APIError as error:
        raise EngineError(f"Docker could not start {BATSIM_IMAGE}: {_short(error)}") from None
    try:
        try:
            return container.wait(timeout=timeout_s)["StatusCode"]
        except requests.exceptions.RequestException:
            raise EngineError(f"Batsim did not finish within {timeout_s} s") from None
    finally:
        try:
            Path(log_path).write_bytes(container.logs())
        finally:
            container.remove(force=True)


def run_with_docker(spec, timeout_s=None, client=None):
    """Run ``spec`` (a RunSpec) on real Batsim in Docker; return when both sides end."""
    client = client or connect()
    ensure_image(client)

    def run_batsim(endpoint, log_path):
        command, mounts = container_plan(spec, endpoint)
        return _run_container(client, command, mounts, log_path, timeout_s)

    _against_scheduler(spec, "docker", run_batsim)


# -- Batsim as a local binary (for batsched) ----------------------------------------------
def run_with_batsim_binary(spec, timeout_s=None):
    """Like ``batio.batsim_binary.run_with_batsim``, for any scheduler, batsched included."""
    if shutil.which("batsim") is None:
        raise EngineError("--engine batsim needs a `batsim` binary on PATH (Batsim 4.2), or use --engine docker")

    def run_batsim(endpoint, log_path):
        with open(log_path, "w") as log:
            batsim = processes.start(batsim_command(spec, endpoint), log)
            try:
                return batsim.wait(timeout_s)
            except subprocess.TimeoutExpired:
                raise EngineError(f"Batsim did not finish within {timeout_s} s") from None
            finally:
                processes.stop(batsim)

    _against_scheduler(spec, "batsim", run_batsim)


# -- the run record -----------------------------------------------------------------------
def write_run_record(spec, engine, wall_time_s, error=None):
    """PREFIX_run.json for a run on real Batsim, with the embedded engine's keys."""
    from batio.engine.platform import classify, read_properties
    properties, _ = read_properties(spec.platform)
    platform = classify(spec.platform, list(properties), spec.roles, spec.master_host)
    files = [spec.platform, *spec.workloads] + ([] if spec.scheduler.startswith(BATSCHED_PREFIX) else [spec.scheduler])
    record = {
        "batio_version": __version__,
        "engine": engine,
        "batsim_image": BATSIM_IMAGE if engine == "docker" else None,
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
