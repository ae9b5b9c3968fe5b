"""batio/image_check.py: a container image built from another pyproject.toml than the checkout
mounted over it is refused in one line, before a missing package could fail an import.
Checked without containers; tests/test_containers.py checks it in the image."""

import hashlib
from pathlib import Path
import subprocess
import sys

from batio import image_check
from batio.compose import main
from batio.image_check import image_error, recorded_sha256, stale_image_error

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "batio-batsim:4.2.1"


def pyprojects(folder):
    """(the pyproject.toml an image was built from, its record as the Dockerfile writes it, an edited one)."""
    built, edited = folder / "built" / "pyproject.toml", folder / "edited" / "pyproject.toml"
    for path in (built, edited):
        path.parent.mkdir()
    built.write_text('[project]\nname = "batio"\ndependencies = ["pandas>=2.0"]\n')
    edited.write_text('[project]\nname = "batio"\ndependencies = ["pandas>=2.0", "plotly>=6.0"]\n')
    record = folder / "pyproject.sha256"
    record.write_text(f"{hashlib.sha256(built.read_bytes()).hexdigest()}  pyproject.toml\n")  # sha256sum's line
    return built, record, edited


def test_the_pyproject_the_image_was_built_from_passes(tmp_path):
    built, record, _ = pyprojects(tmp_path)
    assert recorded_sha256(record) == hashlib.sha256(built.read_bytes()).hexdigest()
    assert stale_image_error(record, built, IMAGE) is None


def test_another_pyproject_is_one_line_naming_the_image_and_the_rebuild(tmp_path):
    _, record, edited = pyprojects(tmp_path)
    error = stale_image_error(record, edited, IMAGE)
    assert error == (f"image {IMAGE} was built from another pyproject.toml than {edited}: rebuild it with "
                     f"`docker compose build` (or `podman build -t {IMAGE} .`)")


def test_an_image_without_the_record_is_one_line_too(tmp_path):
    _, _, edited = pyprojects(tmp_path)
    for record in (tmp_path / "absent.sha256", tmp_path / "empty.sha256"):
        if record.name.startswith("empty"):
            record.write_text("")
        error = stale_image_error(record, edited, "mine:1")
        assert error.startswith(f"image mine:1 records no hash of the pyproject.toml it was built from ({record})")
        assert "\n" not in error and error.endswith("`docker compose build` (or `podman build -t mine:1 .`)")


def test_the_check_runs_only_in_the_image(tmp_path):
    """Where there is a record, or where docker-compose.yml names the image (an older image has none);
    a host with neither (a developer's, CI's) is never refused."""
    built, record, edited = pyprojects(tmp_path)
    absent = tmp_path / "absent.sha256"
    assert image_error({}, absent, edited) is None
    assert image_error({}, record, built) is None
    assert image_error({}, record, edited).startswith(f"image {image_check.DEFAULT_IMAGE} was built from another")
    assert image_error({"BATIO_CONTAINER_IMAGE": "mine:2"}, absent, edited).startswith("image mine:2 records no hash")
    assert image_error({"BATIO_CONTAINER_IMAGE": "mine:2"}, record, built) is None
    assert image_error({"BATIO_CONTAINER_IMAGE": "mine:2"}, record, tmp_path / "none.toml") is None  # a wheel


def test_the_dockerfile_writes_the_record_the_check_reads():
    dockerfile = (ROOT / "Dockerfile").read_text()
    batio_stage = dockerfile.split("FROM batsim AS batio")[1]
    install = batio_stage.index("pip install -q --no-cache-dir -e .")
    assert batio_stage.index(f"sha256sum pyproject.toml > {image_check.RECORD}") > install
    assert "WORKDIR /batio" in batio_stage and image_check.PYPROJECT == ROOT / "pyproject.toml"


def test_compose_entry_point_refuses_a_stale_image_in_one_line(tmp_path, capsys, monkeypatch):
    """The batsim service says it; the scheduler service says nothing until compose would have stopped
    it (batio.compose: one line in all), then the same line (run alone)."""
    # No record on this machine: as in an image built before it was written.
    assert not image_check.RECORD.exists()
    before_the_wait = []
    monkeypatch.setattr("batio.compose.wait_to_be_stopped", lambda seconds: before_the_wait.append(capsys.readouterr()))
    for service in ("scheduler", "batsim"):
        assert main([service], environ={"BATIO_CONTAINER_IMAGE": "old:1", "OUT": str(tmp_path)}) == 2
        said = capsys.readouterr()
        assert said.out == ""
        assert said.err.startswith("batio: error: image old:1 records no hash") and len(said.err.splitlines()) == 1
    assert before_the_wait == [("", "")]  # the scheduler service's wait, in silence
    assert not list(tmp_path.iterdir())  # refused before anything ran


def test_the_check_comes_before_any_dependency_is_imported():
    """A stale image lacks a package the checkout needs: the one line, not the ImportError's traceback."""
    missing = "import sys; sys.modules.update(dict.fromkeys(['pandas', 'numpy', 'zmq', 'yaml', 'simgrid'])); "
    for module, argument in (("batio.compose", "batsim"), ("batio.image_check", None)):
        argv = ["x"] + ([argument] if argument else [])
        code = missing + f"sys.argv = {argv!r}; import runpy; runpy.run_module({module!r}, run_name='__main__')"
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                             env={"BATIO_CONTAINER_IMAGE": "old:1", "PATH": "/usr/bin:/bin",
                                  "PYTHONPATH": str(ROOT)})
        assert run.returncode == 2, run.stderr
        assert run.stderr.startswith("batio: error: image old:1 records no hash") and len(run.stderr.splitlines()) == 1
