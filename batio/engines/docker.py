"""``--engine docker``: real Batsim in the image docker-compose.yml builds.

batio starts the image (``BATSIM_IMAGE``, or ``$BATIO_IMAGE`` as in
docker-compose.yml: batio, Batsim 4.2.1 and batsched, built by the
project's Dockerfile) through the Docker SDK, on the
host's network (``network_mode="host"``), so that Batsim connects to the
scheduler batio runs on this host at 127.0.0.1:PORT. The input files are
mounted read-only, the output folder read-write, and the container runs as
the calling user so that its output files are the user's. Host networking
is a Linux feature: on Docker Desktop use docker-compose.yml instead.
"""

from collections.abc import Callable
from dataclasses import replace
import os
from pathlib import Path
from typing import Any

from batio.engines.batsim import batsim_command, run_against_scheduler
from batio.errors import EngineError
from batio.inputs.spec import RunSpec

BATSIM_IMAGE = "batio-batsim:4.2.1"  # docker-compose.yml's default image
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
    return batsim_command(inside, endpoint), mounts


# -- Batsim in Docker ---------------------------------------------------------------------
def _short(error):
    return str(error).splitlines()[0][:300] if str(error) else type(error).__name__


def _reason(error):
    """Why a socket did not answer, in a few words when the cause is a common one."""
    for cause, reason in (("FileNotFoundError", "no such socket"), ("ConnectionRefusedError", "refused"),
                          ("PermissionError", "permission denied")):
        if cause in str(error):
            return reason
    return _short(error)


# Where a Docker API answers when DOCKER_HOST is not set: Docker's socket, then rootful and rootless Podman's.
DEFAULT_SOCKETS = ("unix:///var/run/docker.sock", "unix:///run/podman/podman.sock",
                   f"unix:///run/user/{os.getuid()}/podman/podman.sock")


def connect(environ=os.environ):
    """A Docker client that answers (Docker, or Podman's Docker API), or a clear error."""
    import docker
    import requests
    places = [environ["DOCKER_HOST"]] if environ.get("DOCKER_HOST") else DEFAULT_SOCKETS
    tried = []
    for where in places:
        try:
            client = docker.DockerClient(base_url=where)
            client.ping()
            return client
        except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
            tried.append(f"{where} ({_reason(error)})")
    raise EngineError(f"--engine docker: no container engine: tried {', '.join(tried)}; start Docker or Podman's "
                      "Docker API (`podman system service`; DOCKER_HOST names another socket), "
                      "or use --engine embedded")


def image_name(environ=os.environ):
    return environ.get("BATIO_IMAGE") or BATSIM_IMAGE


def ensure_image(client, image):
    """No registry has the image: it must have been built here."""
    import docker
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise EngineError(f"--engine docker: no image {image}; build it with `docker compose build` "
                          "(docs/containers.md)") from None


def _run_container(client, image, command, mounts, log_path, timeout_s):
    import docker
    import requests
    try:
        container = client.containers.run(image, command, detach=True, network_mode="host", mounts=mounts,
                                          user=f"{os.getuid()}:{os.getgid()}")
    except docker.errors.APIError as error:
        raise EngineError(f"Docker could not start {image}: {_short(error)}") from None
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


def run_with_docker(spec: RunSpec, on_progress: Callable | None = None, wall_timeout_s: float | None = None,
                    client: Any = None) -> dict:
    """Run ``spec`` on real Batsim in Docker, within ``wall_timeout_s`` seconds when given; return when
    both sides end. ``on_progress``: never called (as batio.engines.batsim's); ``client``: a Docker
    client (default: ``connect()``)."""
    client = client or connect()
    image = image_name()
    ensure_image(client, image)

    def run_batsim(endpoint, log_path):
        command, mounts = container_plan(spec, endpoint)
        return _run_container(client, image, command, mounts, log_path, wall_timeout_s)

    run_against_scheduler(spec, "docker", run_batsim, batsim_image=image)
    return {"prefix": str(spec.out_prefix)}


def check_daemon() -> None:
    """A container engine that answers, checked once before a grid's runs."""
    connect().close()


