"""The packages of the wheel, found rather than listed: every folder under
each folder of pyproject.toml's ``package-dir`` (the top-level
``schedulers/``, ``platforms/``, ``workloads/`` installed under ``batio``,
see CONTRIBUTING.md), so a new paper's folder ships without an edit here.
Folders without an ``__init__.py`` count too (namespace packages): a data
folder such as ``platforms/calibrations/`` ships its files as every
package does (package-data), where setuptools would otherwise warn that it
drops them. Everything else is in pyproject.toml."""

from pathlib import Path
import tomllib

from setuptools import find_namespace_packages, setup

ROOT = Path(__file__).resolve().parent
FOLDERS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

setup(packages=[name for package, folder in FOLDERS.items()
                for name in (package, *(f"{package}.{found}" for found in
                                       find_namespace_packages(str(ROOT / folder), exclude=["*__pycache__"])))])
