"""Shared helpers: run a small simulation and read what it wrote."""

import importlib.util
import json
from pathlib import Path
from typing import TypeVar

import pandas as pd
import pytest

from batio.engines.embedded.run import _import_simgrid_quietly, simulate
from batio.errors import EngineError
from batio.inputs.spec import RunSpec

TESTS = Path(__file__).parent
DATA = TESTS / "data"
SCRIPTED = TESTS / "schedulers" / "scripted.py"
CLUSTER512 = DATA / "cluster512_pfs.xml"
TINY = DATA / "tiny.xml"


def pytest_configure(config):
    """Most tests run the embedded engine: on a SimGrid it refuses (one whose
    bindings hang on reading progress, and whose C function batio cannot
    find), stop in its one line rather than fail every test."""
    try:
        _import_simgrid_quietly()
    except EngineError as refused:
        if "hang" in str(refused):
            pytest.exit(f"the embedded engine cannot run here: {refused}", returncode=3)


class FakeBatsim:
    """The part of pybatsim's Batsim object a scheduler touches, for tests
    of one scheduling round without the engine."""

    def __init__(self, nb_hosts, storage_names=(), profiles=None):
        self.now = 0.0
        self.compute_resources = {host: {"id": host} for host in range(nb_hosts)}
        self.storage_resources = {nb_hosts + i: {"id": nb_hosts + i, "name": name}
                                  for i, name in enumerate(storage_names)}
        self.profiles = {"w0": profiles or {"p": {"type": "delay", "delay": 1}}}
        self.executed, self.rejected = [], []

    def time(self):
        return self.now

    def execute_jobs(self, jobs):
        self.executed.append((self.now, [(j.id, j.allocation) for j in jobs]))

    def reject_jobs(self, jobs):
        self.rejected += [j.id for j in jobs]


def script(name):
    """scripts/NAME.py loaded as a module (scripts/ is not a package)."""
    path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, f"{path} cannot be loaded"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workload(jobs, profiles, nb_res=16):
    return {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}


class Run:
    def __init__(self, prefix, log):
        self.prefix = prefix
        self.log_path = log

    @property
    def jobs(self):
        return pd.read_csv(f"{self.prefix}_jobs.csv", keep_default_na=False).set_index("job_id", drop=False)

    def csv(self, suffix):
        return pd.read_csv(f"{self.prefix}_{suffix}.csv")

    def text(self, suffix):
        return Path(f"{self.prefix}_{suffix}.csv").read_text()

    @property
    def log(self):
        if not Path(self.log_path).exists():
            return []
        return [json.loads(line) for line in Path(self.log_path).read_text().splitlines()]


@pytest.fixture
def simulate_workload(tmp_path):
    """simulate_workload(workload dict, platform=..., scheduler=..., options=..., **spec fields) -> Run"""
    counter = iter(range(1000))

    def run(work, platform=CLUSTER512, scheduler=SCRIPTED, options=None, name=None, **spec):
        name = name or f"run{next(counter)}"
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(work))
        log = tmp_path / f"{name}.log"
        options = dict(options or {})
        if scheduler == SCRIPTED:
            options.setdefault("log", str(log))
        prefix = tmp_path / name / "out"
        simulate(RunSpec(str(platform), [str(path)], str(scheduler), str(prefix), options=options, **spec))
        return Run(prefix, log)

    return run



# Hypothesis profiles of tests/test_fuzz.py (other tests keep their own settings):
# "ci" is seeded and short; "fuzz" is scripts/fuzz.py's long campaign.
def _register_hypothesis_profiles():
    from hypothesis import HealthCheck, settings
    slow = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=slow)
    settings.register_profile("fuzz", deadline=None, suppress_health_check=slow, print_blob=True)


_register_hypothesis_profiles()


T = TypeVar("T")


def found(value: T | None) -> T:
    """``value``, which the test knows is there (a tracker's slot, a match, a
    process's pipe...): its None fails the test here, as the type checker asks."""
    assert value is not None, "nothing found"
    return value
