"""Socket mode keeps its scheduler's log: the child writes unbuffered, and is given
time to exit by itself, even where PYTHONUNBUFFERED is unset in batio's environment."""

import time

from conftest import TINY
from test_cli import three_delay_jobs

from batio.cli import main
from batio.engines.processes import start_pybatsim, stop


def test_what_a_scheduler_printed_survives_its_sigterm(tmp_path, monkeypatch):
    """A scheduler that prints, then never ends: stop() signals it, and its line is in the log."""
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    ready = tmp_path / "ready"
    scheduler = tmp_path / "printsThenWaits.py"
    scheduler.write_text(f"import pathlib, time\nprint('loaded and waiting')\npathlib.Path({str(ready)!r}).touch()\n"
                         "time.sleep(60)\n")
    log_path = tmp_path / "scheduler.log"
    with open(log_path, "w") as log:
        process = start_pybatsim(scheduler, {}, "tcp://127.0.0.1:1", log)
        deadline = time.monotonic() + 20
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        stop(process)
    assert ready.exists() and "loaded and waiting" in log_path.read_text()


def test_socket_mode_keeps_the_schedulers_log_run_after_run(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    workload = three_delay_jobs(tmp_path)
    for run in range(5):
        out = tmp_path / f"socket{run}"
        assert main(["run", "--platform", str(TINY), "--workload", str(workload), "--scheduler", "fcfs",
                     "--mode", "socket", "--out", str(out), "--quiet"]) == 0, capsys.readouterr().err
        log = (out / "out_scheduler.log").read_text()
        assert "Scheduler: Backfill" in log, (run, log)
