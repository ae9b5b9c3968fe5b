"""docker-compose.yml and the Dockerfile, checked as far as possible without a Docker engine."""

from pathlib import Path
import subprocess
import sys

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_compose_services_and_ordering():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["batsim"]["image"].startswith("${BATSIM_IMAGE:-oarteam/batsim:4.")
    assert services["batsim"]["depends_on"]["scheduler"]["condition"] == "service_healthy"
    command = services["batsim"]["command"]
    assert "-s tcp://scheduler:28000" in command and "-e /data/out/batsim/out" in command
    for default in ("platforms/cluster16_pfs.xml", "workloads/demo.json"):
        assert default in command and (ROOT / default).is_file()


def test_dockerfile_command_resolves_the_default_scheduler():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "scripts/install.sh" in dockerfile and "python -m batio.serve" in dockerfile
    result = subprocess.run([sys.executable, "-m", "batio.serve", "no_such_scheduler"], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 2 and "unknown scheduler" in result.stderr


def test_compose_can_run_batsched_instead_of_a_batio_scheduler():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["batsched"]["profiles"] == ["batsched"]
    assert "--variant ${VARIANT:-easy_bf}" in services["batsched"]["command"]
    against = services["batsim-vs-batsched"]
    assert against["profiles"] == ["batsched"] and against["image"] == services["batsim"]["image"]
    assert "-s tcp://batsched:28000" in against["command"]
    # The same inputs as the batio pair: only the scheduler's address differs.
    assert against["command"].replace("batsched:28000", "scheduler:28000") == services["batsim"]["command"]
