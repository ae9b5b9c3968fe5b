"""docker-compose.yml and the Dockerfile, checked as far as possible without a Docker engine."""

from pathlib import Path
import subprocess
import sys

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_compose_services_and_ordering():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["batsim"]["image"].startswith("oarteam/batsim:4.")
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
