"""Bad input gets one clear line naming the file, job or field, and exit code 2."""

import json
import socket
import subprocess
import threading
import time

import pytest
import zmq

from batio.cli import main
from batio.engine.transport import SocketTransport
from batio.errors import SchedulerError
from conftest import CLUSTER512, SCRIPTED, TINY, workload

DELAY = {"d": {"type": "delay", "delay": 10}}


def run_cli(tmp_path, capsys, work, platform=TINY, scheduler=SCRIPTED, options=None, extra=()):
    path = tmp_path / "w.json"
    path.write_text(work if isinstance(work, str) else json.dumps(work))
    code = main(["run", "--platform", str(platform), "--workload", str(path), "--scheduler", str(scheduler),
                 "--options", json.dumps(options or {}), "--out", str(tmp_path / "out"), "--quiet", *extra])
    captured = capsys.readouterr()
    return code, captured.err, captured.out


def one_job(**fields):
    job = {"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"}
    job.update(fields)
    return workload([job], dict(DELAY), 4)


def test_malformed_workload_json(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, '{"nb_res": 4, "jobs": [')
    assert code == 2 and "w.json: malformed JSON" in err and "Traceback" not in err


def test_malformed_platform_xml(tmp_path, capsys):
    platform = tmp_path / "broken.xml"
    platform.write_text("<platform><zone id='z'>")
    code, err, _ = run_cli(tmp_path, capsys, one_job(), platform=platform)
    assert code == 2 and "broken.xml: malformed XML" in err


@pytest.mark.parametrize("fields, expected", [
    ({"profile": "nope"}, "job 'A', field 'profile': unknown profile 'nope'"),
    ({"res": 0}, "job 'A', field 'res': must be an integer >= 1"),
    ({"walltime": 0}, "job 'A', field 'walltime'"),
    ({"res": 5}, "job 'w0!A', field 'res': requests 5 hosts but the platform has only 4 compute hosts"),
])
def test_bad_job_fields(tmp_path, capsys, fields, expected):
    code, err, _ = run_cli(tmp_path, capsys, one_job(**fields))
    assert code == 2 and expected in err


def test_missing_field_and_bad_profile(tmp_path, capsys):
    work = one_job()
    del work["jobs"][0]["subtime"]
    code, err, _ = run_cli(tmp_path, capsys, work)
    assert code == 2 and "job 'A', field 'subtime': missing required field" in err
    work = one_job()
    work["profiles"]["d"] = {"type": "sleep", "delay": 3}
    code, err, _ = run_cli(tmp_path, capsys, work)
    assert code == 2 and "profile 'd', field 'type': unknown profile type 'sleep'" in err


def test_pfs_profile_without_storage_host(tmp_path, capsys):
    work = workload([{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "io"}],
                    {"io": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e6}}, 4)
    code, err, _ = run_cli(tmp_path, capsys, work)
    assert code == 2 and "has storage profiles but platform" in err and "no storage host" in err


def test_scheduler_crash_keeps_what_was_simulated(tmp_path, capsys):
    work = workload([{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"},
                     {"id": "B", "subtime": 20, "walltime": 100, "res": 1, "profile": "d"}], DELAY, 4)
    code, err, _ = run_cli(tmp_path, capsys, work, options={"execute": {"w0!A": {"alloc": "0"}}, "crash_on": "w0!B"})
    assert code == 2 and "the scheduler crashed: RuntimeError: scripted crash on w0!B" in err
    rows = (tmp_path / "out" / "out_jobs.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].startswith("A,w0,d,")


def test_stalled_scheduler_is_stopped(tmp_path, capsys):
    started = time.monotonic()
    code, err, _ = run_cli(tmp_path, capsys, one_job(), options={"stall_on": "w0!A"},
                           extra=("--mode", "socket", "--timeout", "1"))
    assert code == 2 and "did not answer within 1 s" in err
    assert time.monotonic() - started < 20
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path / "w.json")], capture_output=True, text=True)
    scheduler_left = subprocess.run(["pgrep", "-f", f"scripted.py.*{tmp_path.name}"], capture_output=True)
    assert leftovers.stdout == "" and scheduler_left.stdout == b""


def test_allocation_naming_a_storage_host(tmp_path, capsys):
    work = workload([{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"}], DELAY, 512)
    code, err, _ = run_cli(tmp_path, capsys, work, platform=CLUSTER512,
                           options={"execute": {"w0!A": {"alloc": "512"}}})
    assert code == 2 and "job 'w0!A' is allocated resource 512 ('pfs0'), a storage host" in err


def test_allocation_naming_an_unknown_resource(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), options={"execute": {"w0!A": {"alloc": "7"}}})
    assert code == 2 and "job 'w0!A' is allocated resource 7, which does not exist (resources are 0-3)" in err


def test_port_already_in_use(tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, err, _ = run_cli(tmp_path, capsys, one_job(), extra=("--mode", "socket", "--port", str(port)))
    assert code == 2 and f"port {port} is already in use" in err


def test_unknown_scheduler_and_bad_options(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler="no_such_policy")
    assert code == 2 and "unknown scheduler" in err
    path = tmp_path / "w.json"
    code = main(["run", "--platform", str(TINY), "--workload", str(path), "--scheduler", str(SCRIPTED),
                 "--options", "{not json", "--out", str(tmp_path / "o2")])
    assert code == 2 and "--options: malformed JSON" in capsys.readouterr().err


def test_garbage_reply_is_a_protocol_error():
    context = zmq.Context()
    server = context.socket(zmq.REP)
    port = server.bind_to_random_port("tcp://127.0.0.1")

    def answer():
        server.recv_string()
        server.send_string("this is not JSON")

    thread = threading.Thread(target=answer)
    thread.start()
    transport = SocketTransport(f"tcp://127.0.0.1:{port}", 5)
    with pytest.raises(SchedulerError, match="malformed JSON"):
        transport.request({"now": 0.0, "events": []})
    thread.join()
    transport.close()
    server.close()
    context.term()


def test_scheduler_that_never_starts_a_job(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), options={})
    assert code == 2 and "left 1 job(s) neither started nor rejected" in err and "w0!A" in err


@pytest.mark.parametrize("speed", ["0f", "-1Gf"])
def test_compute_host_without_a_positive_speed_is_rejected_as_by_batsim(tmp_path, capsys, speed):
    platform = tmp_path / "slow.xml"
    platform.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
                        "<platform version='4.1'><zone id='z' routing='Full'>"
                        "<host id='master_host' speed='1Gf'/><host id='h0' speed='1Gf'/>"
                        f"<host id='h1' speed='{speed}'/></zone></platform>")
    code, err, _ = run_cli(tmp_path, capsys, one_job(), platform=platform)
    assert code == 2 and "slow.xml" in err and "host 'h1'" in err and "speed must be finite and > 0" in err


@pytest.mark.parametrize("extra, expected", [
    (["--port", "70000"], "--port: must be a TCP port from 1 to 65535, got 70000"),
    (["--port", "-1"], "--port: must be a TCP port"),
    (["--timeout", "0"], "--timeout: must be a finite number of seconds > 0, got 0.0"),
    (["--timeout", "nan"], "--timeout: must be a finite number"),
])
def test_unusable_numbers_are_refused_before_any_run(tmp_path, capsys, extra, expected):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), extra=["--mode", "socket", *extra])
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [
    ["compare", "--platform", "x", "--workload", "y", "--schedulers", "fcfs", "--out", "o", "--workers", "-1"],
    ["sweep", "config.yaml", "--workers", "0"],
    ["run", "--platform", "x", "--workload", "y", "--scheduler", "fcfs", "--out", ""],
    ["parity", "--out", "o", "--max-jobs", "0"],
])
def test_worker_counts_job_limits_and_empty_out_are_refused(capsys, command):
    assert main(command) == 2
    err = capsys.readouterr().err
    assert any(text in err for text in ("--workers: must be", "--out: must name a folder",
                                        "--max-jobs: must be at least 1, got 0")) and "Traceback" not in err


def test_a_scheduler_path_that_is_not_python_is_refused(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=tmp_path / "w.json")
    assert code == 2 and "w.json: a scheduler file is a Python file (.py)" in err and "Traceback" not in err
