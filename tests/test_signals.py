"""Stopping `batio run` by a signal leaves no process behind, and quickly.

The scheduler is busy (an endless loop in a callback) when the signal comes:
the engine's child process, multiprocessing's resource tracker and, in socket
mode, the pybatsim process must all be gone within seconds.
"""

import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import time

from conftest import TESTS, TINY, found, workload
import pandas as pd
import pytest

from batio.engines import processes

MISBEHAVING = TESTS / "schedulers" / "misbehaving.py"


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _as_in_a_terminal():
    """Ctrl-C's default disposition in the child: a suite started in the
    background by a shell without job control inherits SIGINT ignored, which
    Python then keeps (as it should for a background command)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _busy_run(tmp_path, mode):
    work = tmp_path / "w.json"
    work.write_text(json.dumps(workload([{"id": "A", "subtime": 0, "res": 1, "profile": "d"}],
                                        {"d": {"type": "delay", "delay": 10}}, 4)))
    command = [sys.executable, "-m", "batio", "run", "--platform", str(TINY), "--workload", str(work),
               "--scheduler", str(MISBEHAVING), "--options", json.dumps({"do": "loop_forever"}),
               "--out", str(tmp_path / "out"), "--mode", mode, "--quiet"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, preexec_fn=_as_in_a_terminal)
    # Busy once the engine child (and in socket mode pybatsim) run and the scheduler got the job.
    wanted = 3 if mode == "socket" else 2  # resource tracker, engine child (, pybatsim)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if len(processes.descendants(process.pid)) >= wanted and (tmp_path / "out" / "out_run.json").exists() is False:
            time.sleep(3)  # the scheduler is in its endless loop by now
            break
        time.sleep(0.2)
    descendants = processes.descendants(process.pid)
    assert len(descendants) >= wanted, descendants
    return process, descendants


@pytest.mark.parametrize("mode", ["inprocess", "socket"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
def test_a_signal_leaves_no_process_behind(tmp_path, mode, signum):
    process, descendants = _busy_run(tmp_path, mode)
    sent = time.monotonic()
    os.kill(process.pid, signum)
    process.wait(30)
    while any(_alive(pid) for pid in descendants) and time.monotonic() - sent < 10:
        time.sleep(0.1)
    left = [pid for pid in descendants if _alive(pid)]
    for pid in left:  # do not leave them to the next tests either
        os.kill(pid, signal.SIGKILL)
    assert not left, f"left behind after {signum.name}: {left}"
    assert time.monotonic() - sent < 5
    err = process.stderr.read()  # the children's too, had one printed anything
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    if signum != signal.SIGKILL:
        assert process.returncode == 128 + signum or (signum == signal.SIGINT and process.returncode == 130)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_a_sweep_leaves_no_process_behind(tmp_path, signum):
    """Dask's worker and nanny, the engine child of the busy run: all gone, and no traceback."""
    work = tmp_path / "w.json"
    work.write_text(json.dumps(workload([{"id": "A", "subtime": 0, "res": 1, "profile": "d"}],
                                        {"d": {"type": "delay", "delay": 10}}, 4)))
    config = tmp_path / "loop.yaml"
    config.write_text(f"platforms: [{TINY}]\nworkloads: [{work}]\nio_slowdown: false\n"
                      f"schedulers: [{{scheduler: {MISBEHAVING}, options: {{do: loop_forever}}}}]\n")
    process = subprocess.Popen([sys.executable, "-m", "batio", "sweep", str(config), "--out", str(tmp_path / "sweep"),
                                "--workers", "1", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, preexec_fn=_as_in_a_terminal)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not list((tmp_path / "sweep" / "runs").glob(".tmp-*/out_scheduler.log")):
        time.sleep(0.5)
    time.sleep(2)
    descendants = processes.descendants(process.pid)
    assert len(descendants) >= 3, descendants  # nanny, worker, engine child (and trackers)
    sent = time.monotonic()
    os.kill(process.pid, signum)
    process.wait(60)
    while any(_alive(pid) for pid in descendants) and time.monotonic() - sent < 20:
        time.sleep(0.2)
    left = [pid for pid in descendants if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"left behind after {signum.name}: {left}"
    assert time.monotonic() - sent < 10
    err = found(process.stderr).read()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


@pytest.mark.parametrize("mode", ["inprocess", "socket"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_group_ends_in_one_line_and_keeps_the_partial_outputs(tmp_path, mode, signum):
    """As Ctrl-C or `kill -TERM -PGID` from a script: every process of the group gets it."""
    process, descendants = _busy_run(tmp_path, mode)
    os.killpg(process.pid, signum)
    process.wait(30)
    err = process.stderr.read()
    assert process.returncode == 128 + signum, err
    assert err.startswith(f"batio: interrupted by {signum.name}: ") and len(err.strip().splitlines()) == 1, err
    assert "engine process died" not in err and "partial: " in err
    record = json.loads((tmp_path / "out" / "out_run.json").read_text())
    assert record["completed"] is False
    assert record["error"].startswith(f"interrupted by {signum.name}: at simulated time")
    assert (tmp_path / "out" / "out_jobs.csv").exists()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in descendants) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in descendants if _alive(pid)]


def _sleeps(marker):
    """The processes running `sleep MARKER`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")[:2] if entry.name.isdigit() else None
            if command == [b"sleep", marker.encode()]:
                found.append(int(entry.name))
        except OSError:
            continue
    return [pid for pid in found if _alive(pid)]


@pytest.mark.parametrize("mode", ["inprocess", "socket"])
@pytest.mark.parametrize("daemonise", [False, True])
def test_a_schedulers_children_end_with_the_run(tmp_path, mode, daemonise):
    from batio.cli import main
    marker = f"{300 + os.getpid() % 1000 / 1000 + daemonise / 10000 + (mode == 'socket') / 100000:.5f}"
    work = tmp_path / "w.json"
    work.write_text(json.dumps(workload([{"id": "A", "subtime": 0, "res": 1, "profile": "d"}],
                                        {"d": {"type": "delay", "delay": 10}}, 4)))
    options = {"do": "spawn", "command": ["sleep", marker], "daemonise": daemonise}
    try:
        code = main(["run", "--platform", str(TINY), "--workload", str(work), "--scheduler", str(MISBEHAVING),
                     "--options", json.dumps(options), "--out", str(tmp_path / "out"), "--mode", mode, "--quiet"])
        assert code == 0
        assert not _sleeps(marker), "the scheduler's child outlived the run"
    finally:
        for pid in _sleeps(marker):
            os.kill(pid, signal.SIGKILL)


def test_sigint_to_a_sweeps_group_marks_its_runs_interrupted_and_the_resume_redoes_them(tmp_path):
    """Two runs in flight on two workers when Ctrl-C reaches every process: neither is a failure,
    results.csv says interrupted, and the same command then runs both."""
    work = tmp_path / "w.json"
    work.write_text(json.dumps(workload([{"id": str(i), "subtime": i, "res": 1, "profile": "d"} for i in range(3)],
                                        {"d": {"type": "delay", "delay": 1}}, 4)))
    config = tmp_path / "slow.yaml"
    config.write_text(f"platforms: [{TINY}]\nworkloads: [{work}]\nio_slowdown: false\n"
                      f"schedulers: [{{scheduler: {MISBEHAVING}, options: {{do: slow, seconds: 2}}, label: a}},\n"
                      f"             {{scheduler: {MISBEHAVING}, options: {{do: slow, seconds: 2.5}}, label: b}}]\n")
    command = [sys.executable, "-m", "batio", "sweep", str(config), "--out", str(tmp_path / "sweep"), "--quiet"]
    process = subprocess.Popen([*command, "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, preexec_fn=_as_in_a_terminal)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list((tmp_path / "sweep" / "runs").glob(".tmp-*/out_*.log"))) < 2:
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(process.pid, signal.SIGINT)
    process.wait(60)
    err = found(process.stderr).read()
    assert process.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("batio: interrupted by SIGINT: 0 of 2 runs finished"), err
    results = pd.read_csv(tmp_path / "sweep" / "results.csv")
    assert list(results["status"]) == ["interrupted", "interrupted"]
    assert not list((tmp_path / "sweep" / "runs").glob("*/result.json"))

    resumed = subprocess.run([*command, "--workers", "0"], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "2 run now, 0 already finished" in resumed.stdout
    results = pd.read_csv(tmp_path / "sweep" / "results.csv")
    assert list(results["status"]) == ["ok", "ok"] and list(results["jobs"]) == [3, 3]
