"""One set of checks before anything runs, for every way in: options an engine
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


ROOT = Path(__file__).resolve().parents[1]
SWF = ROOT / ".." / "shared" / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf"


def own_trace_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Your own trace", 1)[1].split("\n## ", 1)[0]
    return section, [line.strip() for line in section.splitlines() if line.startswith("    .venv/bin/batio ")]


def test_the_readme_says_where_its_own_trace_comes_from():
    section, commands = own_trace_commands()
    trace = commands[0].split()[3]
    assert commands[0].startswith(".venv/bin/batio import swf ") and trace == "KTH-SP2-1996-2.1-cln.swf"
    assert f"`{trace}.gz` from the Parallel Workloads Archive" in section and "https://" in section
    assert "kth_sp2_first300" in section and (ROOT / "workloads" / "kth_sp2_first300.json").is_file()


@pytest.mark.skipif(not SWF.is_file(), reason="needs ../shared/data/swf/KTH-SP2-1996-2.1-cln.swf")
def test_the_readme_own_trace_commands_run_as_written(tmp_path, monkeypatch, capsys):
    (tmp_path / SWF.name).symlink_to(SWF.resolve())
    monkeypatch.chdir(tmp_path)
    for command in own_trace_commands()[1]:
        args = command.split("#")[0].split()[1:]
        assert main(args + (["--quiet"] if args[0] == "run" else [])) == 0, (command, capsys.readouterr().err)
    assert (tmp_path / "out" / "kth" / "out_jobs.csv").is_file()


def test_a_misspelt_scheduler_platform_or_workload_gets_a_suggestion(tmp_path, capsys):
    common = ["run", "--out", str(tmp_path / "o"), "--quiet"]
    for wrong, right, flags in (("eazy", "easy", ["--platform", "cluster16_pfs", "--workload", "demo",
                                                  "--scheduler", "eazy"]),
                                ("cluster16_pfz", "cluster16_pfs", ["--platform", "cluster16_pfz", "--workload",
                                                                    "demo", "--scheduler", "easy"]),
                                ("dmeo", "demo", ["--platform", "cluster16_pfs", "--workload", "dmeo",
                                                  "--scheduler", "easy"])):
        assert main(common + flags) == 2
        err = capsys.readouterr().err
        assert f"{wrong}: unknown " in err and f"(did you mean {right!r}?)" in err and err.count("\n") == 1


@pytest.mark.parametrize("name", ["trace.swf", "trace"])
def test_an_swf_trace_given_as_a_workload_gets_the_import_command(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    Path(name).write_text("; Version: 2.2\n; Computer: IBM SP2\n"
                          "1 0 100 3600 8 -1 -1 8 7200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["run", "--platform", "cluster16_pfs", "--workload", name, "--scheduler", "easy",
                 "--out", "o", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "malformed JSON" not in err and "neither a file" not in err
    assert f"looks like an SWF trace: make a workload of it with `batio import swf {name} --out W.json`" in err


def test_an_existing_workload_file_given_by_bare_name_is_read(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("jobs").write_text(small_workload(tmp_path).read_text())
    assert main(["run", "--platform", "cluster16_pfs", "--workload", "jobs", "--scheduler", "easy",
                 "--out", "o", "--quiet"]) == 0, capsys.readouterr().err


def test_list_and_describe_credit_every_policy_alike(capsys):
    """Classic baselines are nobody's paper; each paper is 'paper NNN (its authors...)'; never 'seed'."""
    assert main(["list"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
    for name in ("fcfs", "easy", "conservative"):
        assert "classic baseline" in lines[name] and "paper 000" not in lines[name] and "II-A" not in lines[name]
    assert "paper 000 (Goponenko, Allan, Brandt, Dechev): " in lines["adaptive"]
    assert "paper 004 (Gonthier, Marchal, Thibault, Larsson, Nettelblad): " in lines["lea"]
    assert "paper 002 (Tseng, Kawai, Takahashi, Takizawa): " in lines["catios"]
    assert not [line for line in lines.values() if "seed " in line]
    assert main(["describe", "easy"]) == 0
    assert capsys.readouterr().out.startswith("easy: classic baseline: EASY backfilling")
    assert main(["describe", "eazy"]) == 2
    assert "(did you mean 'easy'?)" in capsys.readouterr().err


def compare(workload, out, schedulers, *extra):
    return main(["compare", "--platform", "cluster16_pfs", "--workload", str(workload), "--schedulers", schedulers,
                 "--no-io-slowdown", "--out", str(out), "--quiet", *extra])


def test_compare_into_a_folder_of_another_comparison_is_refused_unless_forced(tmp_path, capsys, caplog):
    workload = small_workload(tmp_path)
    out = tmp_path / "cmp"
    assert compare(workload, out, "easy,fcfs") == 0
    assert "2 run now, 0 already finished" in capsys.readouterr().out
    assert compare(workload, out, "easy,fcfs") == 0  # the same comparison resumes
    assert "0 run now, 2 already finished" in capsys.readouterr().out
    results = (out / "results.csv").read_text()

    assert compare(workload, out, "easy,conservative") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out} holds another comparison (policies: easy, fcfs there, " in err
    assert "easy, conservative now" in err and "--force" in err
    assert compare(small_workload(tmp_path, nb_jobs=5), out, "easy,fcfs") == 2
    assert "workloads: w4-1 (sha256" in capsys.readouterr().err
    assert (out / "results.csv").read_text() == results  # untouched

    assert compare(workload, out, "easy,conservative", "--force") == 0
    said = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert len(said) == 1 and said[0].startswith(f"--force: the earlier comparison in {out} (policies: ")
    assert sorted(run.name.split("-")[0] for run in (out / "runs").iterdir()) == ["conservative", "easy"]


def test_a_sweep_folder_resumes_its_own_grid_and_refuses_another(tmp_path, capsys):
    workload = small_workload(tmp_path)
    config = tmp_path / "s.yaml"
    out = tmp_path / "sweep"
    sweep = ["sweep", str(config), "--out", str(out), "--workers", "0", "--quiet"]
    config.write_text(f"platforms: [cluster16_pfs]\nworkloads: [{workload}]\nschedulers: [easy]\nio_slowdown: false\n")
    assert main(sweep) == 0 and main(sweep) == 0
    assert "0 run now, 1 already finished" in capsys.readouterr().out
    config.write_text(f"platforms: [cluster16_pfs]\nworkloads: [{workload}]\nschedulers: [fcfs]\nio_slowdown: false\n")
    assert main(sweep) == 2
    assert "holds another sweep (policies: easy there, fcfs now): batio sweep --force" in capsys.readouterr().err
    assert main(sweep + ["--force"]) == 0


def test_the_demo_command_runs_twice(tmp_path, capsys, caplog):
    """scripts/demo.sh's own batio command, into a folder of the test's."""
    line = [line for line in (ROOT / "scripts" / "demo.sh").read_text().splitlines() if "bin/batio run" in line][0]
    args = line.split("bin/batio ", 1)[1].replace('"$@"', "").replace("out/demo", str(tmp_path / "demo")).split()
    for _ in range(2):
        assert main(args + ["--quiet"]) == 0, capsys.readouterr().err
    said = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert len(said) == 1 and said[0].startswith("--force: the earlier run's outputs in")


def test_ctrl_c_while_an_engine_process_starts_is_one_line(tmp_path):
    """Ctrl-C to batio's group while a run's engine process is still importing: one line saying
    how to resume, no KeyboardInterrupt traceback from that process."""
    import os
    import signal
    import subprocess
    import sys
    import time

    # The console script, as a user runs it: the engine process re-runs it, importing batio.cli.
    command = [str(Path(sys.executable).parent / "batio"), "compare", "--platform", "cluster16_pfs",
               "--workload", "demo", "--schedulers", "fcfs,easy", "--out", str(tmp_path / "cmp"), "--quiet"]
    batio = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        children = Path(f"/proc/{batio.pid}/task/{batio.pid}/children").read_text().split()
        if any(b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes() for child in children
               if Path(f"/proc/{child}/cmdline").exists()):
            break
        time.sleep(0.005)
    time.sleep(0.3)  # into its imports (before them, Python has no SIGINT handler yet: it dies silently)
    os.killpg(batio.pid, signal.SIGINT)  # as the terminal does: to every process of the group
    err = batio.communicate(timeout=60)[1]
    assert batio.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.count("\n") == 1 and "interrupted by SIGINT" in err and "run the same command again" in err
