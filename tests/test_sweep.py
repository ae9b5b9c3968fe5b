"""`batio sweep`: a YAML grid run on local Dask workers, resumed, with failed runs kept as rows."""

import json
from pathlib import Path
import subprocess
import sys

from conftest import script
import pandas as pd
import pytest

from batio.cli import main
from batio.errors import InputError
from batio.inputs.spec import file_digest
from batio.sweep import alone_workload, load_config, plan, read_results, run_grid

ROOT = Path(__file__).resolve().parent.parent

SMALL_DEMO = {"generator": "batio.workloads.demo:demo_workload", "name": "small", "args": {"nb_jobs": 6}}


def write_config(folder, config, name="sweep.yaml"):
    import yaml
    path = Path(folder) / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_grid_of_two_schedulers_and_two_seeds_on_two_workers_then_resume(tmp_path):
    config = write_config(tmp_path, {"platforms": ["cluster16_pfs"], "workloads": [SMALL_DEMO], "seeds": 2,
                                     "schedulers": ["fcfs", "easy"], "baseline": "fcfs"})
    out = tmp_path / "out"
    table, counts, report = run_grid(load_config(config), out, workers=2, progress=False)
    # 2 seeds x (2 schedulers + 1 reference run for the I/O slowdown)
    assert counts == {"planned": 6, "ran": 6, "skipped": 0, "failed": 0}
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 4 and set(results["status"]) == {"ok"}
    assert sorted(zip(results["policy"], results["seed"])) == [("easy", 1), ("easy", 2), ("fcfs", 1), ("fcfs", 2)]
    for row in results.itertuples():
        assert row.platform_sha256 == file_digest(row.platform_file)
        assert row.workload_sha256 == file_digest(row.workload_file)
        assert row.scheduler_sha256 == file_digest(row.scheduler)
        assert json.loads(row.options) == {"backfill_max": 0 if row.policy == "fcfs" else 1}
        assert row.batio_version and row.jobs == 6 and row.mean_io_slowdown >= 1 - 1e-9
        assert Path(out / row.run_dir / "out_jobs.csv").exists()
    assert len(set(results["workload_sha256"])) == 2  # one generated workload per seed
    assert report.exists() and (out / "report" / "figures" / "gantt-fcfs.png").exists()

    # Rerunning simulates nothing; losing a run (a crash) reruns that one only.
    finished = {path: path.stat().st_mtime_ns for path in (out / "runs").glob("*/result.json")}
    _, counts, _ = run_grid(load_config(config), out, workers=2, progress=False)
    assert counts == {"planned": 6, "ran": 0, "skipped": 6, "failed": 0}
    assert {path: path.stat().st_mtime_ns for path in (out / "runs").glob("*/result.json")} == finished
    lost = out / results["run_dir"][0]
    import shutil
    shutil.rmtree(lost)
    (out / "runs" / ".tmp-left-by-a-crash").mkdir()
    table, counts, _ = run_grid(load_config(config), out, workers=0, progress=False)
    assert counts["ran"] == 1 and (lost / "result.json").exists()
    assert not list((out / "runs").glob(".tmp-*")) and len(table) == 4


BOOM = '''
from batsim.batsim import BatsimScheduler


class Boom(BatsimScheduler):
    def onJobSubmission(self, job):
        raise RuntimeError("boom on purpose")
'''


def test_a_failing_run_is_a_row_with_its_error_and_the_sweep_finishes(tmp_path, capsys, caplog):
    (tmp_path / "boom.py").write_text(BOOM)
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "d"},
        {"id": 2, "subtime": 1, "walltime": 100, "res": 4, "profile": "d"}],
        "profiles": {"d": {"type": "delay", "delay": 20}}}))
    config = write_config(tmp_path, {"platforms": ["cluster16_pfs"], "workloads": ["w.json"],
                                     "schedulers": ["fcfs", "boom.py"], "io_slowdown": False})
    code = main(["sweep", str(config), "--workers", "2", "--out", str(tmp_path / "out"), "--quiet"])
    captured = capsys.readouterr()
    assert code == 1 and "1 of 2 runs failed" in captured.err
    results = pd.read_csv(tmp_path / "out" / "results.csv", keep_default_na=False).set_index("policy")
    assert results.loc["fcfs", "status"] == "ok" and results.loc["fcfs", "makespan"] != ""
    assert results.loc["boom", "status"] == "failed" and "boom on purpose" in results.loc["boom", "error"]
    assert results.loc["boom", "seed"] == ""  # a workload file: no seed
    report = (tmp_path / "out" / "report" / "report.md").read_text()
    assert "## Failed runs" in report and "boom on purpose" in report
    # What a paper's table step reads: the same split from results.csv and,
    # for a sweep still going, from each run's result.json.
    for partial in (False, True):
        ok, failed = read_results(tmp_path / "out", partial=partial)
        assert list(ok["policy"]) == ["fcfs"] and list(failed["policy"]) == ["boom"]
        assert ok["error"][0] == "" and pd.isna(ok["seed"][0]) and ok["makespan"][0] > 0
        assert "boom on purpose" in failed["error"][0]
    assert "run boom" in caplog.text and "boom on purpose" in caplog.text
    with pytest.raises(InputError, match="no results.csv: run `batio sweep my.yaml --out"):
        read_results(tmp_path / "elsewhere", "my.yaml")


# The demo workload on the 16-node platform: the keys a configuration needs besides its schedulers.
ON_DEMO = {"platforms": ["cluster16_pfs"], "workloads": ["demo"]}


@pytest.mark.parametrize("config, key, message", [
    ({"platfroms": ["cluster16_pfs"]}, "platfroms", "unknown key"),
    ({"platforms": ["cluster16_pfs"], "workloads": ["demo"]}, "schedulers", "missing"),
    ({"platforms": ["cluster16_pfs"], "workloads": ["demo"], "schedulers": [{"scheduler": "easy", "optoins": {}}]},
     "schedulers[0].optoins", "unknown key"),
    ({"platforms": ["cluster16_pfs"], "workloads": [{"args": {}}], "schedulers": ["easy"]},
     "workloads[0].generator", "missing"),
    ({"platforms": ["nowhere"], "workloads": ["demo"], "schedulers": ["easy"]}, "platforms[0]", "unknown platform"),
    ({**ON_DEMO, "schedulers": ["nosuch"]}, "schedulers", "unknown scheduler"),
    ({**ON_DEMO, "schedulers": ["easy"], "baseline": "fcfs"}, "baseline", "not a policy"),
    ({**ON_DEMO, "schedulers": [{"scheduler": "easy", "grid": {"order": "sjf"}}]},
     "schedulers[0].grid.order", "non-empty list"),
    ({**ON_DEMO, "schedulers": ["easy"], "run_options": {"mode": "fast"}}, "run_options.mode", "inprocess or socket"),
    ({**ON_DEMO, "schedulers": ["batsched:easy_bf"]}, "engines", "real Batsim"),
])
def test_config_errors_name_the_file_and_the_key(tmp_path, config, key, message):
    path = write_config(tmp_path, config, "bad.yaml")
    with pytest.raises(InputError, match=message) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}, field '{key}': ")


def test_malformed_yaml_and_cli_error(tmp_path, capsys):
    path = tmp_path / "broken.yaml"
    path.write_text("platforms: [cluster16_pfs\nworkloads: demo\n")
    with pytest.raises(InputError, match=r"broken.yaml: not valid YAML at line \d+"):
        load_config(path)
    assert main(["sweep", str(write_config(tmp_path, {"platfroms": []}, "typo.yaml"))]) == 2
    assert "typo.yaml, field 'platfroms': unknown key" in capsys.readouterr().err


def test_option_grid_makes_one_policy_per_combination(tmp_path):
    config = write_config(tmp_path, {"platforms": ["cluster16_pfs"], "workloads": ["demo"], "io_slowdown": False,
                                     "schedulers": [{"scheduler": "backfill", "options": {"backfill_max": 1},
                                                     "grid": {"order": ["fcfs", "sjf"]}}]})
    grid = load_config(config)
    assert [(p.label, p.options) for p in grid.policies] == [
        ('backfill[order="fcfs"]', {"backfill_max": 1, "order": "fcfs"}),
        ('backfill[order="sjf"]', {"backfill_max": 1, "order": "sjf"})]
    runs = plan(grid, tmp_path / "out")
    assert len(runs) == 2 and len({run.run_id for run in runs}) == 2 and runs[0].seed is None


# A generator whose workloads carry a top-level field for "{workload.FIELD}".
PERIOD_GENERATOR = """
from batio.workloads.demo import demo_workload

def make(seed, nb_jobs):
    workload = demo_workload(seed, nb_jobs)
    workload["sample_period"] = 10.0 * seed
    workload["flag"] = "yes"
    return workload
"""


def per_run_config(tmp_path, seeds, seed_option, period, name="per_run.yaml", workload=None):
    (tmp_path / "gen.py").write_text(PERIOD_GENERATOR)
    return write_config(tmp_path, {
        # iopack's default bandwidth describes periodic_rack, not cluster16_pfs: allowed, as a test of per-run values
        "platforms": ["cluster16_pfs"], "io_slowdown": False, "seeds": seeds, "allow_unfit": True,
        "workloads": [workload or {"generator": "gen.py:make", "args": {"nb_jobs": 4}, "name": "small"}],
        "schedulers": [{"scheduler": "iopack", "label": "Random", "options": {"packs": "Random", "seed": seed_option}}],
        "run_options": {"io_sample_period": period}}, name)


def test_per_run_values_are_the_runs_seed_and_workload_field_and_hashed_as_such(tmp_path):
    from batio.sweep import gather
    from batio.sweep.run import _spec
    runs = plan(load_config(per_run_config(tmp_path, [3, 4], "{seed}", "{workload.sample_period}")), tmp_path / "out")
    assert [(run.seed, run.options, run.run_options) for run in runs] == [
        (3, {"packs": "Random", "seed": 3}, {"io_sample_period": 30.0}),
        (4, {"packs": "Random", "seed": 4}, {"io_sample_period": 40.0})]
    assert [_spec(run, tmp_path / "p").io_sample_period for run in runs] == [30.0, 40.0]
    assert gather(runs, tmp_path / "out")["opt_seed"].tolist() == [3, 4]  # the table says the value
    # A run id is the hash of the resolved run: the same as the run written with the values themselves,
    # and another one as soon as a value differs.
    written = plan(load_config(per_run_config(tmp_path, [3], 3, 30.0, "written.yaml")), tmp_path / "out")
    assert written[0].run_id == runs[0].run_id
    for seed_option, period in ((4, 30.0), (3, 40.0)):
        other = plan(load_config(per_run_config(tmp_path, [3], seed_option, period, "other.yaml")), tmp_path / "out")
        assert other[0].run_id != runs[0].run_id


@pytest.mark.parametrize("seed_option, period, key, message", [
    ("{sede}", 1.0, "schedulers[0].options.seed", "unknown per-run value '{sede}'"),
    ("{seed}", "{workload}", "run_options.io_sample_period", "unknown per-run value"),
    ("{seed}", "{workload.a b}", "run_options.io_sample_period", "unknown per-run value"),
])
def test_misspelt_per_run_values_are_errors_when_the_config_is_read(tmp_path, seed_option, period, key, message):
    path = per_run_config(tmp_path, [1], seed_option, period)
    with pytest.raises(InputError, match=message) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}, field '{key}': ")


@pytest.mark.parametrize("seed_option, period, workload, key, message", [
    ("{seed}", 1.0, "demo", "schedulers[0].options.seed", "seed of a generated workload, and workload demo is a file"),
    (1, "{seed}", "demo", "run_options.io_sample_period", "workload demo is a file"),
    (1, "{workload.nothere}", None, "run_options.io_sample_period", "workload small seed 0 .* no top-level field"),
    (1, "{workload.flag}", None, "run_options.io_sample_period", "a number of seconds > 0, got 'yes'"),
    (1, "{workload.sample_period}", None, "run_options.io_sample_period", "a number of seconds > 0, got 0.0"),
])
def test_per_run_values_that_do_not_resolve_are_errors_before_any_run(tmp_path, seed_option, period, workload,
                                                                       key, message):
    path = per_run_config(tmp_path, [0], seed_option, period, workload=workload)  # seed 0: a sample period of 0
    if workload:  # a file workload takes no seeds
        import yaml
        config = yaml.safe_load(path.read_text())
        del config["seeds"]
        path = write_config(tmp_path, config, "file.yaml")
    grid = load_config(path)
    with pytest.raises(InputError, match=message) as raised:
        plan(grid, tmp_path / "out")
    assert str(raised.value).startswith(f"{path}, field '{key}': ")
    assert not (tmp_path / "out" / "runs").exists()


def test_reference_workload_runs_every_job_alone():
    workload: dict = {"nb_res": 4, "profiles": {}, "jobs": [
        {"id": 2, "subtime": 5, "walltime": 30, "res": 1, "profile": "p"},
        {"id": 1, "subtime": 0, "walltime": 10, "res": 4, "profile": "p"}]}
    alone = alone_workload(workload)
    assert [(job["id"], job["subtime"]) for job in alone["jobs"]] == [(1, 0.0), (2, 11.0)]
    workload["jobs"][0]["walltime"] = -1
    assert alone_workload(workload) is None


def test_a_scheduler_address_that_is_no_address_is_one_line(tmp_path, capsys):
    config = write_config(tmp_path, {"platforms": ["cluster16_pfs"], "workloads": [SMALL_DEMO], "schedulers": ["fcfs"],
                                     "io_slowdown": False})
    code = main(["sweep", str(config), "--out", str(tmp_path / "out"), "--scheduler-address", "garbage", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--scheduler-address: 'garbage' is not a Dask scheduler address" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


DAEMONIC_CLUSTER = """
import logging
from dask.distributed import LocalCluster
from batio.errors import EngineError
from batio.sweep import dask_client
with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                  silence_logs=logging.ERROR) as cluster:
    try:
        with dask_client(scheduler_address=cluster.scheduler_address):
            pass
    except EngineError as error:
        print(error)
"""


def test_an_existing_cluster_with_daemonic_workers_is_a_clear_error():
    # Dask's default workers are daemonic processes, which may not start the simulations' processes.
    # In a fresh interpreter: after this file's other Dask clusters, a new LocalCluster in the same
    # process sometimes failed to start its IO loop within Dask's 10 s (not batio's refusal).
    done = subprocess.run([sys.executable, "-c", DAEMONIC_CLUSTER], capture_output=True, text=True, timeout=120)
    assert "DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker" in done.stdout, done.stdout + done.stderr


TWO_WRITERS = {"nb_res": 16, "profiles": {"write": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e10,
                                                     "storage": "pfs"}},
               "jobs": [{"id": 1, "subtime": 0, "walltime": 1000, "res": 1, "profile": "write"},
                        {"id": 2, "subtime": 0, "walltime": 1000, "res": 1, "profile": "write"}]}


def test_io_exclusive_run_option_serialises_the_transfers(tmp_path):
    (tmp_path / "w.json").write_text(json.dumps(TWO_WRITERS))
    times = {}
    for exclusive in (False, True):
        config = write_config(tmp_path, {"platforms": ["cluster16_pfs"], "workloads": ["w.json"],
                                         "schedulers": ["fcfs"], "io_slowdown": False,
                                         "run_options": {"io_exclusive": exclusive}},
                              f"exclusive-{exclusive}.yaml")
        table, _, _ = run_grid(load_config(config), tmp_path / f"out-{exclusive}", workers=0, progress=False)
        jobs = pd.read_csv(tmp_path / f"out-{exclusive}" / table["run_dir"][0] / "out_jobs.csv")
        times[exclusive] = sorted(jobs["execution_time"])
    # Two 10 GB writes through the 1 GB/s storage link, started together: fair
    # sharing ends both at 20 s; exclusive I/O (FIFO) ends one at 10 s, then the other at 20 s.
    assert times[False] == pytest.approx([20, 20], rel=0.02)
    assert times[True] == pytest.approx([10, 20], rel=0.02)


@pytest.mark.parametrize("config, key, message", [
    ({"run_options": {"io_exclusive": "yes"}}, "run_options.io_exclusive", "true or false"),
    ({"run_options": {"io_exclusive": True}, "engines": ["docker"]}, "run_options.io_exclusive",
     "embedded engine only"),
])
def test_io_exclusive_errors(tmp_path, config, key, message):
    path = write_config(tmp_path, {"platforms": ["cluster16_pfs"], "workloads": ["demo"], "schedulers": ["easy"],
                                   **config}, "bad.yaml")
    with pytest.raises(InputError, match=message) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}, field '{key}': ")


def test_a_sweep_turns_on_the_batsim_features_its_schedulers_need(tmp_path):
    from batio.sweep.run import _spec
    config = tmp_path / "locality.yaml"
    # easy would run the jobs without their file loads: allowed here, as a test of the features alone.
    config.write_text("platforms: [memcluster486]\nworkloads: [memcluster486_slice]\n"
                      "io_slowdown: false\nallow_unfit: true\nschedulers: [lea, easy]\n")
    specs = {run.policy: _spec(run, tmp_path / "p") for run in plan(load_config(config), tmp_path)}
    assert specs["lea"].dynamic_jobs and specs["lea"].compute_sharing
    assert not (specs["easy"].dynamic_jobs or specs["easy"].compute_sharing)


@pytest.mark.parametrize("config, exclusive, policies, workloads, volume_scaling", [
    ("periodic_lessons", True, ["LS", "Random", "Max", "Char"], 4, "hosts"),
    ("periodic_fair", False, ["LS", "Random", "Max", "Char"], 4, "hosts"),
    ("periodic_control_exclusive", True, ["LS-LJF", "LS-noIO"], 4, "hosts"),
    ("periodic_control_fair", False, ["LS-LJF", "LS-noIO"], 4, "hosts"),
    ("periodic_vnone", True, ["LS", "LS-noIO", "Random", "Max", "Char"], 2, "none"),
])
def test_periodic_configs_make_the_experiments_runs(tmp_path, config, exclusive, policies, workloads, volume_scaling):
    """Each run is the one scripts/periodic_experiments.py made when it ran its own (before the sweeps):
    its workload, Random's seed (the workload index) and the storage's sample period (lower bound / 2000)."""
    from batio.schedulers.list_vs_pack.metrics import lower_bound
    from batio.sweep.run import _spec
    from batio.workloads import periodic
    runs = plan(load_config(ROOT / "scripts" / "sweeps" / f"{config}.yaml"), tmp_path)
    # 4 families x 7 alphas x the workloads x the policies, no reference runs
    assert len(runs) == 4 * 7 * workloads * len(policies) and {run.kind for run in runs} == {"policy"}
    assert sorted({run.policy for run in runs}) == sorted(policies)
    assert {run.seed for run in runs} == set(range(workloads))
    for run in runs:
        if run.policy in ("Random", "Max", "Char"):
            assert run.options == {"packs": run.policy, "seed": run.seed}
        spec = _spec(run, tmp_path / "p")
        assert spec.io_exclusive is exclusive
        made = json.loads(Path(run.workload_file).read_text())
        assert spec.io_sample_period == max(1.0, lower_bound(made, 96) / 2000)
    options = {run.policy: run.options for run in runs}
    assert options.get("LS-LJF", {"order": "ljf"}) == {"order": "ljf"}
    assert options.get("LS-noIO", {"bandwidth": 1e30}) == {"bandwidth": 1e30}
    run = next(run for run in runs if run.workload.startswith("U-BN_a0.7") and run.seed == 1)
    made = json.loads(Path(run.workload_file).read_text())
    assert made["experiment"] == {"family": "U-BN", "alpha": 0.7, "index": 1}
    # The script's seed: 1000 x the family's number (U-BN: 2) + 10 x alpha x 10 + the index + 1.
    expected = periodic.generate("U-BN", 0.7, 60, 2072, volume_scaling=volume_scaling)
    assert made["jobs"] == expected["jobs"] and made["profiles"] == expected["profiles"]


def test_equilibrio_config_is_the_scripts_grid(tmp_path):
    experiments = script("equilibrio_experiments")
    runs = plan(load_config(ROOT / "scripts" / "sweeps" / "equilibrio_alpha.yaml"), tmp_path)
    policies = [run for run in runs if run.kind == "policy"]
    assert len(runs) == 51 and len(policies) == 48  # 16 configurations x 3 seeds, 3 reference runs
    for seed in (1, 2, 3):
        # every configuration of the script, once, on a workload of 1,290 jobs
        options = sorted(json.dumps(run.options, sort_keys=True) for run in policies if run.seed == seed)
        assert options == sorted(json.dumps(known, sort_keys=True)
                                 for _, _, known in experiments.configurations([seed], 0.5))
    assert {len(json.loads(Path(run.workload_file).read_text())["jobs"]) for run in policies} == {1290}


def test_a_sweep_pairs_a_traces_windows_and_takes_the_bounded_slowdowns_tau(tmp_path):
    # tests/test_compare.py's trace: window k has A (12 hosts, a = 50 + 10k s) at 0, B (8 hosts, 40 s) at 1,
    # C (4 hosts, 10 s) at 2. Under FCFS, B waits a - 1 and C a - 2. With tau 50 s the bounded slowdowns are
    # A 1, B (a + 39) / 50, C (a + 8) / 50: window 1 (a = 60) 1, 1.98, 1.36; window 2 (a = 70) 1, 2.18, 1.56.
    # Mean over the two windows: (4.34 / 3 + 4.74 / 3) / 2 = 1.51333.
    from test_compare import _windowed_trace
    trace = _windowed_trace(tmp_path / "trace.json")
    config = write_config(tmp_path, {
        "platforms": ["cluster16_pfs"], "schedulers": ["fcfs", "easy"], "baseline": "fcfs", "seeds": 2,
        "workloads": [{"generator": "batio.windows:trace_window", "name": "weeks",
                       "args": {"path": str(trace), "length": 100}}],
        "io_slowdown": False, "bsld_tau": 50})
    table, _, report = run_grid(load_config(config), tmp_path / "out", workers=0, progress=False)
    fcfs = table[table["policy"] == "fcfs"].set_index("seed")
    assert list(fcfs["bsld_tau"]) == [50, 50]
    assert fcfs.loc[1, "mean_bounded_slowdown"] == pytest.approx(4.34 / 3, abs=1e-3)
    summary = pd.read_csv(tmp_path / "out" / "report" / "summary.csv").set_index("policy")
    assert summary.loc["fcfs", "mean_bounded_slowdown"] == pytest.approx(1.51333, abs=1e-3)
    assert summary.loc["easy", "pairs"] == 2 and "mean_bounded_slowdown_diff_ci" in summary
    with pytest.raises(InputError, match="field 'bsld_tau': expected the bounded slowdown's threshold"):
        load_config(write_config(tmp_path, {"platforms": ["cluster16_pfs"], "schedulers": ["fcfs"],
                                            "workloads": ["demo"], "bsld_tau": 0}, "bad.yaml"))


def test_a_generator_file_not_named_py_is_one_clear_error(tmp_path):
    from batio.sweep.plan import load_generator
    (tmp_path / "gen").write_text("def make(nb_jobs):\n    return {}\n")
    with pytest.raises(InputError, match=r"generator file .*/gen is not a Python file \(\.py\)"):
        load_generator(f"{tmp_path}/gen:make", "my.yaml", "workloads[0].generator")
