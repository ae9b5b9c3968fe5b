"""The built wheel holds what batio serves: every catalog policy's file, every
bundled platform and workload, every package of the tree, the measured
contention curves the platforms' pages cite (platforms/calibrations/, a data
folder), the license texts, and a new paper's folder with nothing but its own
files added (setup.py finds packages; no list to forget). Built offline from
a copy of the tree, as pip builds it."""

from pathlib import Path
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

import batio
from batio import catalog

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FOLDERS = PYPROJECT["tool"]["setuptools"]["package-dir"]  # package -> its folder in the tree
DUMMY = {"__init__.py": '"""Paper 999, a paper folder added by tests/test_wheel.py."""\n',
         "dummy.py": "class Dummy:\n    pass\n",
         "history.json": "{}\n",
         "README.md": "# Paper 999\n"}


def in_wheel(package, path):
    """Where the file ``path`` of ``package``'s folder sits in the wheel."""
    return "/".join([*package.split("."), *Path(path).parts])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The names in a wheel built from a copy of the tree that has a new paper folder."""
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "setup.py", "README.md", *PYPROJECT["project"]["license-files"]):
        shutil.copy(ROOT / name, tree / name)
    for folder in FOLDERS.values():
        shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    paper = tree / FOLDERS["batio.schedulers"] / "paper999"
    paper.mkdir()
    for name, text in DUMMY.items():
        (paper / name).write_text(text)
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(out), str(tree)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    [found] = out.glob("batio-*.whl")
    with zipfile.ZipFile(found) as archive:
        return set(archive.namelist())


def test_every_catalog_policy_file_is_in_the_wheel(wheel):
    files = {entry[0] for entry in catalog.SCHEDULERS.values()}
    assert len(files) >= 10 and {in_wheel("batio.schedulers", file) for file in files} - wheel == set()


def test_every_bundled_platform_and_workload_is_in_the_wheel(wheel):
    bundled = [("batio.platforms", path) for path in catalog.bundled_platforms().values()]
    bundled += [("batio.workloads", path) for path in catalog.bundled_workloads().values()]
    pages = [(package, path.with_suffix(".md")) for package, path in bundled if path.with_suffix(".md").is_file()]
    assert len(bundled) >= 25 and len(pages) >= 10
    assert {in_wheel(package, path.name) for package, path in bundled + pages} - wheel == set()


def test_every_package_of_the_tree_is_in_the_wheel(wheel):
    packages = {in_wheel(package, init.relative_to(ROOT / folder))
                for package, folder in FOLDERS.items() for init in (ROOT / folder).rglob("__init__.py")}
    assert len(packages) >= 12 and packages - wheel == set()


def test_the_calibrations_the_platform_pages_cite_are_in_the_wheel(wheel):
    folder = ROOT / FOLDERS["batio.platforms"]
    files = [path.relative_to(folder) for path in (folder / "calibrations").rglob("*") if path.is_file()]
    cited = {Path(path) for page in folder.glob("*.md")
             for path in re.findall(r"platforms/(calibrations/[\w./-]+\.csv)", page.read_text())}
    assert len(files) >= 13 and len(cited) >= 2 and cited <= set(files)
    assert {in_wheel("batio.platforms", path) for path in files} - wheel == set()


def test_the_license_texts_are_in_the_wheel(wheel):
    names = PYPROJECT["project"]["license-files"]
    assert PYPROJECT["project"]["license"] == "LGPL-3.0-or-later" and names == ["LICENSE", "COPYING"]
    assert "GNU LESSER GENERAL PUBLIC LICENSE" in (ROOT / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in (ROOT / "COPYING").read_text()
    assert {f"batio-{batio.__version__}.dist-info/licenses/{name}" for name in names} - wheel == set()


def test_a_new_paper_folder_ships_with_its_files(wheel):
    assert {in_wheel("batio.schedulers.paper999", name) for name in DUMMY} - wheel == set()


def test_the_wheel_has_the_version_batio_reports(wheel):
    assert f"batio-{batio.__version__}.dist-info/METADATA" in wheel
    assert batio.__version__ == PYPROJECT["project"]["version"]
