"""The engines as records (batio.engines), and a run's names resolved once (batio.resolve): one
resolver for every way in, and an option the chosen engine cannot honour refused in one line
wherever it is given."""

import inspect
import json
from pathlib import Path
import subprocess
import sys

from conftest import TINY
import pytest

from batio import engines
from batio.cli import main
from batio.compose import main as compose_main
from batio.engines import DEFAULT_ENGINE, ENGINES, IO_TIMELINE, MAX_IDLE, Engine
from batio.errors import InputError, InvalidConfiguration
from batio.resolve import refuse_unsupported, resolve
from batio.sweep import load_config
from batio.workloads.demo import demo_workload

REFUSED = ("--max-idle is an option of the embedded engine only: the batsim engine would ignore it "
           "(drop it, or use the embedded engine)")


def small_workload(folder):
    path = folder / "w.json"
    path.write_text(json.dumps(demo_workload(seed=1, nb_jobs=4)))
    return path


# -- the registry ----------------------------------------------------------------------------
def test_every_engine_is_a_record_whose_runner_takes_one_signature():
    assert DEFAULT_ENGINE in ENGINES
    for name, engine in ENGINES.items():
        assert engine.name == name
        parameters = list(inspect.signature(engine.runner_function()).parameters)
        assert parameters[:3] == ["spec", "on_progress", "wall_timeout_s"], name


def test_a_record_names_only_known_capabilities():
    with pytest.raises(ValueError, match="unknown capabilities"):
        Engine("batsim5", "batio.engines.batsim5:run", frozenset({"teleportation"}), "Batsim 5")


def test_no_engine_module_is_imported_before_its_engine_runs():
    """SimGrid's bindings and the Docker SDK are loaded only by the engine that needs them."""
    runners = [engine.runner.partition(":")[0] for engine in ENGINES.values()]
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, batio.cli, batio.compose, batio.resolve, batio.sweep, batio.parity; "
         "print(' '.join(sys.modules))"], capture_output=True, text=True, check=True).stdout.split()
    assert not {"simgrid", "docker", *runners} & set(loaded)


def lite_run(spec, on_progress=None, wall_timeout_s=None):
    """A stand-in engine's runner: writes the run record only."""
    Path(f"{spec.out_prefix}_run.json").write_text(json.dumps({"engine": "lite"}))
    return {"prefix": spec.out_prefix, "called_with": (on_progress, wall_timeout_s)}


@pytest.fixture
def lite(monkeypatch):
    """A new engine, registered as batio.engines' docstring says: one record."""
    record = Engine("lite", "test_engines:lite_run", frozenset({MAX_IDLE}), "a stand-in")
    monkeypatch.setitem(ENGINES, "lite", record)
    return record


def test_a_new_engine_is_one_record(lite, tmp_path, capsys):
    spec = resolve("fcfs", {}, str(TINY), [small_workload(tmp_path)], tmp_path / "out", "lite").spec
    assert engines.run(spec, "lite", progress=True, marks={"degraded": []})["called_with"] == (None, None)
    assert json.loads((tmp_path / "out_run.json").read_text()) == {"engine": "lite", "degraded": []}
    assert "lite: a stand-in" in engines.engines_help()
    # Every rule that only some engines follow reads the records: here, who honours --max-idle.
    assert main(["run", "--platform", str(TINY), "--workload", str(small_workload(tmp_path)), "--scheduler", "fcfs",
                 "--engine", "docker", "--max-idle", "5", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == ("batio: error: --engine docker: --max-idle is an option of the embedded and "
                                       "lite engines only: the docker engine would ignore it (drop it, or use the "
                                       "embedded or lite engine)\n")
    assert main(["run", "--platform", str(TINY), "--workload", str(small_workload(tmp_path)), "--scheduler", "fcfs",
                 "--engine", "lite", "--io-exclusive", "--out", str(tmp_path / "o")]) == 2
    assert "--engine lite: --io-exclusive is an option of the embedded engine only" in capsys.readouterr().err


def test_a_wall_timeout_goes_only_to_an_engine_that_bounds_a_run(lite, tmp_path):
    spec = resolve("fcfs", {}, str(TINY), [small_workload(tmp_path)], tmp_path / "out", "lite").spec
    with pytest.raises(engines.EngineError, match="no bound on a run's wall time"):
        engines.run(spec, "lite", wall_timeout_s=5)


# -- one resolver ----------------------------------------------------------------------------
def test_a_name_resolves_once_to_its_declaration_and_its_spec(tmp_path):
    workload = small_workload(tmp_path)
    easy = resolve("easy", {"order": "sjf"}, "cluster16_pfs", [str(workload)], tmp_path / "out")
    assert easy.declaration.name == "easy" and easy.given == {"order": "sjf"}
    # The name's presets, then the user's options.
    assert easy.spec.options == easy.declaration.options == {"backfill_max": 1, "order": "sjf"}
    assert easy.spec.scheduler == easy.declaration.path and easy.spec.workloads == [str(workload)]
    assert easy.spec.out_prefix == str(tmp_path / "out")
    lea = resolve("lea", {}, "memcluster486", ["memcluster486_slice"], "o", mode="socket").spec
    assert lea.dynamic_jobs and lea.compute_sharing and lea.mode == "socket"  # the Batsim features it needs
    batsched = resolve("batsched:easy_bf", {}, str(TINY), [str(workload)], "o", "batsim")
    assert batsched.spec.scheduler == "batsched:easy_bf" and batsched.declaration.file is None


def test_an_option_is_checked_once_the_inputs_are_read(tmp_path):
    """A broken input file is reported before a refused option: the resolver leaves the options to
    the requirements check (batio.requirements.check_run), which reads the inputs first."""
    resolved = resolve("easy", {"limt": 2}, str(TINY), [small_workload(tmp_path)], "o")
    with pytest.raises(InvalidConfiguration, match="unknown option 'limt'"):
        resolved.declaration.check_options()


def test_the_engine_is_checked_before_the_inputs_are_looked_up():
    with pytest.raises(InputError, match="batsched:easy_bf is batsched's C.. scheduler: it runs only against "
                                         r"real Batsim \(--engine batsim, or --engine docker\)"):
        resolve("batsched:easy_bf", {}, "no_such_platform", ["w.json"], "o", "embedded")
    with pytest.raises(InputError, match="unknown engine 'batsim5'"):
        resolve("easy", {}, "no_such_platform", ["w.json"], "o", "batsim5")
    with pytest.raises(InputError, match="unknown platform"):  # no engine named: its caller checks it
        resolve("batsched:easy_bf", {}, "no_such_platform", ["w.json"], "o", None)


# -- refused in one line, every way in ------------------------------------------------------
def _run(tmp_path, workload):
    return main(["run", "--platform", str(TINY), "--workload", str(workload), "--scheduler", "easy",
                 "--engine", "batsim", "--max-idle", "100", "--out", str(tmp_path / "run"), "--quiet"])


def _compare(tmp_path, workload):
    return main(["compare", "--platform", str(TINY), "--workload", str(workload), "--schedulers", "easy,fcfs",
                 "--engine", "batsim", "--max-idle", "100", "--out", str(tmp_path / "cmp"), "--quiet"])


def _compose(tmp_path, workload):
    return compose_main(["batsim"], environ={"PLATFORM": str(TINY), "WORKLOAD": str(workload), "SCHEDULER": "easy",
                                             "RUN_ARGS": "--max-idle 100", "OUT": str(tmp_path / "compose")})


@pytest.mark.parametrize("way_in", [_run, _compare, _compose])
def test_an_option_the_engine_ignores_is_refused_in_one_line(way_in, tmp_path, capsys):
    assert way_in(tmp_path, small_workload(tmp_path)) == 2
    assert capsys.readouterr().err == f"batio: error: --engine batsim: {REFUSED}\n"
    assert not [*tmp_path.rglob("*_run.json"), *tmp_path.rglob("runs")]  # nothing ran, nothing recorded


def test_a_sweep_file_option_the_engine_ignores_is_refused_in_one_line(tmp_path):
    config = tmp_path / "s.yaml"
    config.write_text(f"platforms: [{TINY}]\nworkloads: [{small_workload(tmp_path)}]\nschedulers: [easy]\n"
                      "engines: [embedded, batsim]\nrun_options: {max_idle: 100}\n")
    with pytest.raises(InputError) as refused:
        load_config(config)
    assert str(refused.value) == f"{config}, field 'run_options.max_idle': {REFUSED.replace('--max-idle', 'max_idle')}"


def test_refusals_name_several_options_at_once():
    with pytest.raises(InputError) as refused:
        refuse_unsupported(ENGINES["docker"], {"timeout": 5, "io_exclusive": True, "max_idle": None})
    assert str(refused.value) == ("--engine docker: --io-exclusive, --timeout are options of the embedded engine only: "
                                  "the docker engine would ignore them (drop them, or use the embedded engine)")


def test_the_io_timeline_is_listed_for_the_engines_that_write_it():
    assert [name for name, engine in ENGINES.items() if IO_TIMELINE in engine.supports] == ["embedded"]
