"""In-process and socket modes give identical output files; the run record
names the SimGrid build that ran the simulation, and a build known not to run
the engine is refused in one line."""

import importlib.util
import json
from pathlib import Path
import re
import sys
from types import SimpleNamespace

from conftest import found, workload
import pytest

from batio.engines.embedded.run import check_simgrid, run_here
from batio.errors import EngineError
from batio.inputs.spec import RunSpec

PROFILES = {
    "c": {"type": "parallel_homogeneous", "cpu": 2e10, "com": 1e7},
    "w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 3e7},
    "cw": {"type": "composed", "seq": ["c", "w"], "repeat": 3},
    "d": {"type": "delay", "delay": 30},
}


def test_inprocess_and_socket_outputs_are_identical(simulate_workload):
    jobs: list[dict] = [{"id": i, "subtime": 2 * i, "walltime": 200 if i != 3 else 50, "res": 1 + i % 3,
             "profile": "cw" if i % 2 else "d"} for i in range(8)]
    plan = {}
    next_host = 0
    for job in jobs:
        plan[f"w0!{job['id']}"] = {"alloc": f"{next_host}-{next_host + job['res'] - 1}", "at": job["subtime"] + 1}
        next_host += job["res"]
    options = {"execute": plan, "kill": {"w0!5": 60.5}, "call_me_later": [7.25]}
    runs = {mode: simulate_workload(workload(jobs, PROFILES, 512), options=options, mode=mode, name=mode)
            for mode in ("inprocess", "socket")}
    for suffix in ("jobs", "machine_states", "io"):
        assert runs["inprocess"].text(suffix) == runs["socket"].text(suffix), suffix
    schedules = {mode: run.csv("schedule").drop(columns=["scheduling_time", "simulation_time"])
                 for mode, run in runs.items()}
    assert schedules["inprocess"].equals(schedules["socket"])
    states = set(runs["inprocess"].jobs["final_state"])
    assert states == {"COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED", "COMPLETED_WALLTIME_REACHED"}
    assert [e["event"] for e in runs["inprocess"].log] == [e["event"] for e in runs["socket"].log]


def test_the_run_record_names_the_simgrid_build_that_ran_it(simulate_workload):
    """Two SimGrid builds of one version can run at different speeds
    (docs/performance.md): the record says which file the engine loaded."""
    work = workload([{"id": "1", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"}], PROFILES)
    run = simulate_workload(work, options={"execute": {"w0!1": {"alloc": "0", "at": 0}}})
    record = json.loads(Path(f"{run.prefix}_run.json").read_text())
    assert record["simgrid_module"] == found(importlib.util.find_spec("simgrid")).origin
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", record["simgrid_version"])


def test_a_simgrid_known_to_hang_is_refused_in_one_line_and_the_tested_ones_pass():
    """PyPI's SimGrid 4.1, Debian 13's 4.0 and Ubuntu 24.04's 3.35 hang at the first I/O sample."""
    for hangs in ("3.35.0", "4.0.0", "4.1.0"):
        with pytest.raises(EngineError) as refused:
            check_simgrid(SimpleNamespace(simgrid_version=hangs, __file__="/site-packages/simgrid.so"))
        message = str(refused.value)
        assert message.startswith(f"SimGrid {hangs} (/site-packages/simgrid.so): ") and "remaining_ratio" in message
        assert "\n" not in message and "--engine batsim" in message
    for tested in ("3.32.0", "4.1.1"):  # Debian's, and the development branch's (docs/performance.md)
        check_simgrid(SimpleNamespace(simgrid_version=tested, __file__="simgrid.so"))


def test_without_simgrids_bindings_the_embedded_engine_says_so_in_one_line(monkeypatch, tmp_path):
    """Not "an internal engine error": the user lacks a package, and --engine batsim still works."""
    monkeypatch.setitem(sys.modules, "simgrid", None)  # what `import simgrid` sees where it is not installed
    with pytest.raises(EngineError) as refused:
        run_here(RunSpec("platform.xml", ["workload.json"], "scheduler.py", str(tmp_path / "out")))
    message = str(refused.value)
    assert message.startswith("the embedded engine needs SimGrid's Python bindings") and "python3-simgrid" in message
    assert "--engine batsim" in message and "\n" not in message
