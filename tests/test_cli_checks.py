"""One set of checks before anything runs, for every way in (issue 57): options an engine
cannot honour, a used --out, and the hints of a mistyped scheduler or workload."""

import json
from pathlib import Path

from conftest import TINY
import pytest

from batio.cli import main
from batio.workloads.demo import demo_workload


def small_workload(folder, nb_jobs=4, seed=1):
    path = folder / f"w{nb_jobs}-{seed}.json"
    path.write_text(json.dumps(demo_workload(seed=seed, nb_jobs=nb_jobs)))
    return path


@pytest.mark.parametrize("flags, named", [(["--io-exclusive"], "--io-exclusive"),
                                          (["--timeout", "5"], "--timeout"),
                                          (["--io-sample-period", "2"], "--io-sample-period")])
@pytest.mark.parametrize("engine", ["batsim", "docker"])
def test_run_refuses_an_option_its_engine_cannot_honour_before_anything_runs(tmp_path, capsys, flags, named,
                                                                             engine):
    out = tmp_path / "out"
    code = main(["run", "--platform", str(TINY), "--workload", str(small_workload(tmp_path)), "--scheduler", "easy",
                 "--engine", engine, "--out", str(out), "--quiet", *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and f"--engine {engine}: {named} is an option of the embedded engine only" in err
    assert not out.exists()  # nothing ran, nothing recorded


def test_compare_and_sweep_refuse_an_option_their_engine_cannot_honour(tmp_path, capsys):
    workload = small_workload(tmp_path)
    code = main(["compare", "--platform", str(TINY), "--workload", str(workload), "--schedulers", "easy,fcfs",
                 "--engine", "batsim", "--timeout", "5", "--out", str(tmp_path / "cmp"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--engine batsim: --timeout is an option of the embedded engine only" in err
    assert not (tmp_path / "cmp" / "runs").exists()
    config = tmp_path / "s.yaml"
    config.write_text(f"platforms: [{TINY}]\nworkloads: [{workload}]\nschedulers: [easy]\nengines: [batsim]\n"
                      "run_options: {max_idle: 100}\n")
    assert main(["sweep", str(config), "--out", str(tmp_path / "sweep"), "--workers", "0", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "field 'run_options.max_idle': max_idle is an option of the embedded engine only" in err
