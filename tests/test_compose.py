"""docker-compose.yml, its host-network override and the services' entry point (batio.compose),
checked without a container engine; tests/test_containers.py runs them in containers."""

import os
from pathlib import Path
import shutil
import subprocess
import sys

import pytest
import yaml

from batio import cli
from batio.compose import DEFAULTS, main, run_arguments, settings
from batio.engines.batsim import batsim_command

ROOT = Path(__file__).resolve().parents[1]


def compose_file(name="docker-compose.yml"):
    return yaml.safe_load((ROOT / name).read_text())


def test_services_start_in_order_without_health_checks_or_registry_images():
    services = compose_file()["services"]
    # Health checks never run without systemd (Podman here): ordering is start order only.
    assert all("healthcheck" not in service for service in services.values())
    assert services["batsim"]["depends_on"] == ["scheduler"]
    assert services["scheduler"]["environment"]["SCHEDULER_HOST"] == "scheduler"
    # One image, built here: no registry holds it.
    assert {service["image"] for service in services.values()} == {"${BATIO_IMAGE:-batio-batsim:4.2.1}"}
    assert all(service["build"] == "." for service in services.values())
    for name in ("scheduler", "batsim"):
        assert services[name]["command"] == ["python", "-m", "batio.compose", name]


def test_host_override_puts_every_service_on_the_host_network():
    services, override = compose_file()["services"], compose_file("docker-compose.host.yml")["services"]
    assert set(override) == set(services)
    assert all(service["network_mode"] == "host" for service in override.values())
    assert override["batsim"]["environment"] == {"SCHEDULER_HOST": "127.0.0.1"}


def test_compare_service_runs_batio_compare_on_batsim():
    compare = compose_file()["services"]["compare"]
    assert compare["profiles"] == ["compare"]
    command = compare["command"][-1]
    # The image check first: `batio compare` imports every dependency before it could say why one is missing.
    assert command.startswith("python -m batio.image_check && exec batio compare --engine batsim ")
    assert '--schedulers "$$SCHEDULERS"' in command


def test_every_service_names_its_image_for_the_image_check():
    """batio/image_check.py refuses an image built from another pyproject.toml, and one built before
    it recorded which: it knows it runs in the image (and which) by this variable."""
    for service in compose_file()["services"].values():
        assert service["environment"]["BATIO_CONTAINER_IMAGE"] == service["image"]


def test_dockerfile_builds_from_debian_and_pins_batsim_4_2_1():
    dockerfile = (ROOT / "Dockerfile").read_text()
    froms = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("FROM ")]
    assert froms == ["debian:bookworm", "debian:bookworm", "batsim"]
    versions = dict(line.split("=", 1) for line in (ROOT / "containers/versions.env").read_text().splitlines()
                    if line and not line.startswith("#"))
    assert versions["BATSIM_REV"] == "v4.2.1"
    assert versions["BATSCHED_REV"] == "17072778995100fc90214ea4910bf5b171adfd0d"  # Batsim 4.2.1's default.nix


def test_defaults_and_empty_values():
    assert settings({}) == DEFAULTS
    assert settings({"OPTIONS": "", "SCHEDULER": "conservative"})["OPTIONS"] == "{}"
    assert settings({"SCHEDULER": "conservative"})["SCHEDULER"] == "conservative"


def test_batsim_gets_the_command_line_of_batio_run(tmp_path):
    """Byte-identical outputs need the same flags as `batio run --engine batsim` (roles, master host...)."""
    values = settings({"PLATFORM": "stria15_lustre", "WORKLOAD": "stria_w2", "SCHEDULER": "adaptive",
                       "OUT": str(tmp_path), "RUN_ARGS": "--sg-cfg maxmin/precision:1e-9"})
    compose_spec = cli.run_spec(cli.parser().parse_args(run_arguments(values)))
    by_hand = cli.run_spec(cli.parser().parse_args(
        ["run", "--platform", "stria15_lustre", "--workload", "stria_w2", "--scheduler", "adaptive", "--out",
         str(tmp_path), "--engine", "batsim", "--sg-cfg", "maxmin/precision:1e-9"]))
    assert batsim_command(compose_spec, "tcp://h:1") == batsim_command(by_hand, "tcp://h:1")
    assert "--sg-cfg" in batsim_command(compose_spec, "tcp://h:1")


@pytest.mark.parametrize("service", ["scheduler", "batsim"])
@pytest.mark.parametrize("environ, named", [
    ({"PLATFORM": "platforms/no_such.xml"}, "no_such.xml"),
    ({"SCHEDULER": "no_such_scheduler"}, "no_such_scheduler"),
    ({"OPTIONS": "{not json"}, "--options"),
])
def test_bad_input_is_one_line_and_exit_2(service, environ, named, tmp_path, capsys):
    assert main([service], environ={**environ, "OUT": str(tmp_path)}) == 2
    error = capsys.readouterr().err
    assert error.startswith("batio: error: ") and named in error and len(error.strip().splitlines()) == 1


@pytest.mark.skipif(shutil.which("batsim") is None, reason="needs a `batsim` binary (Batsim 4.2.1) on PATH")
def test_batsim_may_connect_before_the_scheduler_binds(tmp_path):
    """No health check: Batsim's ZeroMQ socket waits for the scheduler, which here starts 3 s later."""
    environ = {**os.environ, "OUT": str(tmp_path / "compose"), "PORT": "28431"}
    batsim = subprocess.Popen([sys.executable, "-m", "batio.compose", "batsim"], env=environ,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        batsim.wait(3)
    except subprocess.TimeoutExpired:
        pass
    assert batsim.returncode is None, batsim.stdout.read()
    scheduler = subprocess.run([sys.executable, "-m", "batio.compose", "scheduler"], env=environ, timeout=120,
                               capture_output=True, text=True)
    output = batsim.communicate(timeout=60)[0]
    assert scheduler.returncode == 0 and batsim.returncode == 0, output + scheduler.stdout + scheduler.stderr
    assert "(batsim engine)" in output and "makespan" in output
    reference = tmp_path / "reference"
    assert cli.main(["run", "--platform", "cluster16_pfs", "--workload", "demo", "--scheduler", "easy",
                     "--engine", "batsim", "--out", str(reference), "--quiet"]) == 0
    assert (tmp_path / "compose" / "out_jobs.csv").read_bytes() == (reference / "out_jobs.csv").read_bytes()
