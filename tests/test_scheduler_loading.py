"""One module per scheduler file, whichever way it is named (batio/launcher.py):
a catalog name, a file path (relative, absolute, through a link) and an import
give the same class object, and pybatsim's own ``schedulers`` stay pybatsim's.
Catalog names come from the scheduler folders' own declarations."""

import importlib
from pathlib import Path
import subprocess
import sys
import time

from conftest import TINY, found
import pytest
from test_cli import three_delay_jobs

from batio import catalog, launcher
from batio.cli import main
from batio.engines.embedded.scheduler_side import load_scheduler
from batio.errors import InputError, InvalidConfiguration
import batio.schedulers

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name, file, cls", [("catios", "catios/catios", "Catios"),
                                             ("easy", "backfill", "Backfill"),
                                             ("lea", "locality/locality", "Locality"),
                                             ("tioas", "catios/tioas", "Tioas")])
def test_catalog_name_file_path_and_import_give_the_same_class(tmp_path, monkeypatch, name, file, cls):
    module = "batio.schedulers." + file.replace("/", ".")
    imported = getattr(importlib.import_module(module), cls)
    from_catalog, _ = catalog.scheduler_file_and_options(name)
    link = tmp_path / f"{Path(file).name}.py"
    link.symlink_to(ROOT / "schedulers" / f"{file}.py")
    monkeypatch.chdir(ROOT)
    for path in (from_catalog, ROOT / "schedulers" / f"{file}.py", f"schedulers/{file}.py", link):
        assert launcher.scheduler_class(path) is imported, path
    assert imported.__module__ == module


def test_each_folder_declares_its_names():
    assert catalog.SCHEDULERS["lea-bf"] == ("locality/locality.py", {"policy": "lea", "backfill": True},
                                            ("dynamic_jobs", "compute_sharing"))
    assert catalog.SCHEDULERS["easy"] == ("backfill.py", {"backfill_max": 1})
    assert catalog.bundled_inputs("tioas") == ("catios_cluster", "catios_bw")
    assert catalog.bundled_inputs("easy-ljf") == ("catios_cluster", "catios_bw")
    assert catalog.batsim_features("catios") == {} and catalog.batsim_features("lem") == {
        "dynamic_jobs": True, "compute_sharing": True}


def test_two_folders_cannot_declare_one_name(tmp_path, monkeypatch):
    (tmp_path / "twice").mkdir()
    (tmp_path / "twice" / "__init__.py").write_text('SCHEDULERS = {"easy": ("mine.py", {})}\n')
    monkeypatch.setattr(batio.schedulers, "__path__", [*batio.schedulers.__path__, str(tmp_path)])
    try:
        with pytest.raises(InvalidConfiguration, match="^batio.schedulers.twice declares the scheduler name 'easy', "
                                                       "which backfill.py already has$"):
            catalog.discover()
    finally:
        sys.modules.pop("batio.schedulers.twice", None)


def test_a_loaded_scheduler_is_an_instance_of_the_imported_class():
    from batio.schedulers.backfill import QueueScheduler
    from batio.schedulers.catios.catios import Catios
    path, options = catalog.scheduler_file_and_options("catios-oracle")
    scheduler = load_scheduler(path, options)
    assert type(scheduler) is Catios and isinstance(scheduler, QueueScheduler)


def test_pybatsim_bundled_schedulers_keep_the_name_schedulers(monkeypatch):
    # The old order of trouble: a batio file loaded by path from the repository root, then pybatsim's.
    monkeypatch.chdir(ROOT)
    launcher.scheduler_class("schedulers/catios/catios.py")
    path, _ = catalog.scheduler_file_and_options("easyBackfill")
    loaded = launcher.scheduler_class(path)
    # pybatsim's `schedulers`, by name: mypy would take it for the checkout's folder (batio.schedulers).
    assert loaded is importlib.import_module("schedulers.easyBackfill").EasyBackfill
    assert Path(found(sys.modules["schedulers"].__file__)).parent == launcher.pybatsim_schedulers_folder()
    assert "schedulers.catios" not in sys.modules and "schedulers.backfill" not in sys.modules


def test_a_fresh_process_resolves_every_name_to_one_module():
    """No earlier import to lean on: `python -c` from the repository root,
    where a plain `import schedulers` would find batio's folder first."""
    check = ("from batio import catalog, launcher; import sys;"
             "import batio.schedulers.catios.catios as c;"
             "assert launcher.load_module('schedulers/catios/catios.py') is c;"
             "assert launcher.load_module(catalog.scheduler_file_and_options('catios')[0]) is c;"
             "e = launcher.load_module(catalog.scheduler_file_and_options('easyBackfill')[0]);"
             "import schedulers.easyBackfill as again; assert again is e;"
             "print(sys.modules['schedulers'].__file__)")
    done = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent == launcher.pybatsim_schedulers_folder()


def test_a_file_of_ones_own_is_one_module_per_path_and_sees_its_neighbours(tmp_path, monkeypatch):
    for folder, rate in (("a", 1), ("b", 2)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "helper.py").write_text(f"RATE = {rate}\n")
        (tmp_path / folder / "mine.py").write_text(
            "import dataclasses\nimport helper\nfrom batsim.batsim import BatsimScheduler\n\n\n"
            "@dataclasses.dataclass\nclass Plan:\n    rate: int = helper.RATE\n\n\n"
            "class Mine(BatsimScheduler):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    first = launcher.scheduler_class(tmp_path / "a" / "mine.py")
    assert launcher.scheduler_class("a/mine.py") is first
    assert launcher.scheduler_class(tmp_path / "a" / ".." / "a" / "mine.py") is first
    assert sys.modules[first.__module__].Plan().rate == 1  # a dataclass needs its module in sys.modules
    other = launcher.scheduler_class(tmp_path / "b" / "mine.py")
    assert other is not first and other.__module__ != first.__module__
    assert str(tmp_path / "a") not in sys.path  # the neighbours' folder is on sys.path only while loading


def test_a_file_without_the_class_named_after_it(tmp_path):
    path = tmp_path / "mySched.py"
    path.write_text("class Other:\n    pass\n")
    with pytest.raises(InputError, match=r"mySched\.py: no scheduler class in this file .*: MySched\)"):
        load_scheduler(path, {})


def test_socket_mode_loads_the_file_through_batio_launcher(tmp_path, capsys):
    """`--mode socket` runs batio.launcher in a child process: same schedule as in process."""
    workload = three_delay_jobs(tmp_path)
    for mode in ("inprocess", "socket"):
        assert main(["run", "--platform", str(TINY), "--workload", str(workload), "--scheduler", "fcfs",
                     "--mode", mode, "--out", str(tmp_path / mode), "--quiet"]) == 0, capsys.readouterr().err
    assert ((tmp_path / "inprocess" / "out_jobs.csv").read_text()
            == (tmp_path / "socket" / "out_jobs.csv").read_text())
    log = (tmp_path / "socket" / "out_scheduler.log").read_text()
    assert "Scheduler: Backfill" in log, log


@pytest.mark.parametrize("mode, expected", [
    ("inprocess", "batio: error: {path}: no scheduler class in this file (pybatsim expects a class named after "
                  "the file: MySched)"),
    ("socket", "batio: error: scheduler mySched.py failed: InputError: {path}: no scheduler class in this file "
               "(pybatsim expects a class named after the file: MySched)"),
])
def test_a_file_without_its_class_is_one_line_in_both_modes(tmp_path, capsys, mode, expected):
    path = tmp_path / "mySched.py"
    path.write_text("class Other:\n    pass\n")
    code = main(["run", "--platform", str(TINY), "--workload", str(three_delay_jobs(tmp_path)), "--scheduler",
                 str(path), "--mode", mode, "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(expected.format(path=path)) and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("mode", ["inprocess", "socket"])
def test_timeout_stops_a_scheduler_that_loops_while_imported(tmp_path, capsys, mode):
    """In process too: the import is bounded as a decision is (it used to run forever)."""
    scheduler = Path(__file__).parent / "schedulers" / "loopsAtImport.py"
    started = time.monotonic()
    code = main(["run", "--platform", str(TINY), "--workload", str(three_delay_jobs(tmp_path)), "--scheduler",
                 str(scheduler), "--mode", mode, "--timeout", "2", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - started < 30, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert ("loopsAtImport.py did not finish loading (its import and constructor) within 2 s" in err
            if mode == "inprocess" else "did not answer within 2 s" in err), err
