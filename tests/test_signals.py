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

import pytest

from conftest import TESTS, TINY, workload

MISBEHAVING = TESTS / "schedulers" / "misbehaving.py"


def _children(pid):
    """Every descendant of ``pid`` now, from /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        for child in parents.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


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
        if len(_children(process.pid)) >= wanted and (tmp_path / "out" / "out_run.json").exists() is False:
            time.sleep(3)  # the scheduler is in its endless loop by now
            break
        time.sleep(0.2)
    descendants = _children(process.pid)
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
    descendants = _children(process.pid)
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
    err = process.stderr.read()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
