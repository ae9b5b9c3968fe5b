"""``--engine docker``: real Batsim in the image docker-compose.yml pins.

batio starts the image (``BATSIM_IMAGE``) through the Docker SDK, on the
host's network (``network_mode="host"``), so that Batsim connects to the
scheduler batio runs on this host at 127.0.0.1:PORT. The input files are
mounted read-only, the output folder read-write, and the container runs as
the calling user so that its output files are the user's. Host networking
is a Linux feature: on Docker Desktop use docker-compose.yml instead.
"""

from dataclasses import replace
import os
from pathlib import Path

from batio.errors import EngineError
from batio.real_batsim import batsim_command, run_against_scheduler

BATSIM_IMAGE = "oarteam/batsim:4.0.0"  # the image docker-compose.yml pins: Batsim 4's JSON protocol
CONTAINER_INPUTS = "/batio/inputs"
CONTAINER_OUTPUTS = "/batio/outputs"


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

    run_against_scheduler(spec, "docker", run_batsim, batsim_image=BATSIM_IMAGE)


