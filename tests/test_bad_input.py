"""Bad input gets one clear line naming the file, job or field, and exit code 2."""

import json
from pathlib import Path
import re
import shutil
import socket
import subprocess
import threading
import time

from conftest import CLUSTER512, SCRIPTED, TESTS, TINY, workload
import pytest
import zmq

from batio.cli import main
from batio.engines.embedded.transport import SocketTransport
from batio.errors import SchedulerError

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
    ({"res": 0}, "job 'A', field 'res': must be an integer from 1 to"),
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
    assert processes_matching(re.escape(str(tmp_path / "w.json"))) == []
    assert processes_matching(f"scripted.py.*{re.escape(tmp_path.name)}") == []


def processes_matching(pattern):
    """Command lines of live processes that match, as `pgrep -f` (minimal systems lack procps)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended meanwhile
            continue
        if re.search(pattern, line):
            found.append(line)
    return found


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


@pytest.mark.parametrize("speed, expected", [
    ("0f", "host 'h1' has speed 0; a compute host's speed must be finite and > 0"),
    ("-1Gf", "<host id='h1'>: speed '-1Gf' is out of bounds")])
def test_compute_host_without_a_positive_speed_is_rejected_as_by_batsim(tmp_path, capsys, speed, expected):
    platform = tmp_path / "slow.xml"
    platform.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
                        "<platform version='4.1'><zone id='z' routing='Full'>"
                        "<host id='master_host' speed='1Gf'/><host id='h0' speed='1Gf'/>"
                        f"<host id='h1' speed='{speed}'/></zone></platform>")
    code, err, _ = run_cli(tmp_path, capsys, one_job(), platform=platform)
    assert code == 2 and "slow.xml" in err and expected in err


@pytest.mark.parametrize("extra, expected", [
    (["--port", "70000"], "--port: must be a TCP port from 1 to 65535, got 70000"),
    (["--port", "-1"], "--port: expected a whole number in ASCII digits, got '-1'"),
    (["--timeout", "0"], "--timeout: must be a finite number of seconds > 0, got 0.0"),
    (["--timeout", "nan"], "--timeout: value 'nan' is not a number in ASCII decimal digits"),
    (["--max-idle", "0"], "--max-idle: must be a finite number of seconds > 0, got 0.0"),
    (["--max-idle", "inf"], "--max-idle: value 'inf' is not a number in ASCII decimal digits"),
])
def test_unusable_numbers_are_refused_before_any_run(tmp_path, capsys, extra, expected):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), extra=["--mode", "socket", *extra])
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [
    ["compare", "--platform", "x", "--workload", "y", "--schedulers", "fcfs", "--out", "o", "--workers", "-1"],
    ["sweep", "config.yaml", "--workers", "-1"],
    ["run", "--platform", "x", "--workload", "y", "--scheduler", "fcfs", "--out", ""],
    ["parity", "--out", "o", "--max-jobs", "0"],
])
def test_worker_counts_job_limits_and_empty_out_are_refused(capsys, command):
    assert main(command) == 2
    err = capsys.readouterr().err
    assert any(text in err for text in ("--workers: expected a whole number in ASCII digits, got '-1'",
                                        "--out: must name a folder",
                                        "--max-jobs: must be at least 1, got 0")) and "Traceback" not in err


def test_a_scheduler_path_that_is_not_python_is_refused(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=tmp_path / "w.json")
    assert code == 2 and "w.json: a scheduler file is a Python file (.py)" in err and "Traceback" not in err


# -- the first fuzz campaign's cases -----------------------------------------------------------
MISBEHAVING = TESTS / "schedulers" / "misbehaving.py"


def one_line(err):
    return len([line for line in err.splitlines() if line.strip()]) == 1 and "Traceback" not in err


@pytest.mark.parametrize("job_id", ["A\nB", "A,B", 'A"B'])
def test_job_ids_that_would_break_out_jobs_csv_are_refused(tmp_path, capsys, job_id):
    code, err, _ = run_cli(tmp_path, capsys, one_job(id=job_id))
    assert code == 2 and "field 'id'" in err and "writes unquoted into out_jobs.csv" in err


def test_profile_names_that_would_break_out_jobs_csv_are_refused(tmp_path, capsys):
    work = workload([{"id": "A", "subtime": 0, "res": 1, "profile": "d,x"}], {"d,x": DELAY["d"]}, 4)
    code, err, _ = run_cli(tmp_path, capsys, work)
    assert code == 2 and "profile 'd,x'" in err and "writes unquoted into out_jobs.csv" in err and one_line(err)


def test_ids_round_trip_through_the_csv_as_text(tmp_path, capsys):
    work = workload([{"id": "Ä", "subtime": 0, "res": 1, "profile": "d"},
                     {"id": "007", "subtime": 0, "res": 1, "profile": "d"}], DELAY, 4)
    code, err, out = run_cli(tmp_path, capsys, work,
                             options={"execute": {"w0!Ä": {"alloc": "0"}, "w0!007": {"alloc": "1"}}})
    assert code == 0, err
    from batio.report.metrics import read_jobs
    assert sorted(read_jobs(tmp_path / "out" / "out")["job_id"]) == ["007", "Ä"]


def test_options_nested_too_deep(tmp_path, capsys):
    (tmp_path / "w.json").write_text(json.dumps(one_job()))
    code = main(["run", "--platform", str(TINY), "--workload", str(tmp_path / "w.json"), "--scheduler",
                 str(SCRIPTED), "--options", '{"a": ' + "[" * 10000 + "]" * 10000 + "}", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "--options: malformed JSON: nested too deeply" in err and one_line(err)


@pytest.mark.parametrize("raw, expected", [
    (b'{"nb_res": 4, "jobs": [], "profiles": {"\xff": {}}}', "not UTF-8 text (byte 0xff at offset 40)"),
    (b'{"nb_res": 4, "x": ' + b"[" * 100000 + b"]" * 100000 + b"}", "malformed JSON: nested too deeply"),
    (b'{"nb_res": ' + b"9" * 5000 + b"}", "malformed JSON: a number is too long"),
])
def test_workload_files_json_cannot_read(tmp_path, capsys, raw, expected):
    path = tmp_path / "bad.json"
    path.write_bytes(raw)
    code = main(["run", "--platform", str(TINY), "--workload", str(path), "--scheduler", str(SCRIPTED),
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and f"bad.json: {expected}" in err and one_line(err)


@pytest.mark.parametrize("job_profile, profiles, expected", [
    (["d"], DELAY, "job 'A', field 'profile': must be a profile name (a string), got ['d']"),
    ({"a": 1}, DELAY, "job 'A', field 'profile': must be a profile name (a string)"),
    ("c", {**DELAY, "c": {"type": "composed", "seq": [["d"]]}}, "profile 'c', field 'seq': must be a non-empty list "
                                                               "of profile names (strings)"),
])
def test_profile_references_that_are_not_names(tmp_path, capsys, job_profile, profiles, expected):
    work = workload([{"id": "A", "subtime": 0, "res": 1, "profile": job_profile}], profiles, 4)
    code, err, _ = run_cli(tmp_path, capsys, work)
    assert code == 2 and expected in err and one_line(err)


@pytest.mark.parametrize("fields, expected", [
    ({"nb_res": 10**30}, "field 'nb_res': must be an integer from 1 to 2147483647"),
    ({"profiles": {"d": {"type": "delay", "delay": 3, "ret": -1}}}, "profile 'd', field 'ret': must be an integer "
                                                                   "return code >= 0, got -1"),
    ({"profiles": {"d": {"type": "delay", "delay": 3, "ret": -2}}}, "field 'ret': must be an integer return code >= 0"),
])
def test_workload_values_batsim_cannot_mean(tmp_path, capsys, fields, expected):
    code, err, _ = run_cli(tmp_path, capsys, {**one_job(), **fields})
    assert code == 2 and expected in err and one_line(err)


def test_unusable_out_folders(tmp_path, capsys):
    work = tmp_path / "w.json"
    work.write_text(json.dumps(one_job()))
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [(afile, "exists and is not a folder"), (afile / "sub", "Not a directory"),
             (tmp_path / ("x" * 300), "File name too long"), (tmp_path / "/".join(["y" * 200] * 25), "too long"),
             ("/dev/null", "/dev/null exists and is not a folder")]
    immutable = tmp_path / "immutable"
    immutable.mkdir()
    # chattr is e2fsprogs', which a minimal Debian 13 lacks: the case is then left out.
    made_immutable = shutil.which("chattr") and subprocess.run(["chattr", "+i", str(immutable)],
                                                               capture_output=True).returncode == 0
    if made_immutable:
        cases.append((immutable / "o", "Operation not permitted"))  # as root, chmod would not stop us
    try:
        for out, expected in cases:
            code = main(["run", "--platform", str(TINY), "--workload", str(work), "--scheduler", str(SCRIPTED),
                         "--out", str(out), "--quiet"])
            err = capsys.readouterr().err
            assert code == 2 and "--out: " in err and expected in err and one_line(err), (out, err)
    finally:
        if made_immutable:
            subprocess.run(["chattr", "-i", str(immutable)], capture_output=True)


@pytest.mark.parametrize("name", ["out_jobs.csv", "out_scheduler.log"])
def test_an_output_file_that_is_a_folder(tmp_path, capsys, name):
    (tmp_path / "out" / name).mkdir(parents=True)
    code, err, _ = run_cli(tmp_path, capsys, one_job(), options={"execute": {"w0!A": {"alloc": "0"}}},
                           extra=("--force",))  # --out is not empty: the folder is there
    assert code == 2 and "--out: " in err and name in err and one_line(err)


@pytest.mark.parametrize("do, expected", [
    ("raise_in_init", "scheduler misbehaving.py failed: ValueError: misbehaving on purpose in __init__"),
    ("raise_in_begins", "scheduler misbehaving.py failed: ValueError: misbehaving on purpose in onSimulationBegins"),
    ("exit_in_callback", "scheduler misbehaving.py: the scheduler process exited without answering, exit code 3"),
])
def test_socket_mode_puts_the_schedulers_own_error_first(tmp_path, capsys, do, expected):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING, options={"do": do},
                           extra=("--mode", "socket"))
    assert code == 2 and err.startswith(f"batio: error: {expected}") and one_line(err)


NOT_A_SCHEDULER = "class Broken:\n    def __init__(self, options):\n        pass\n"


@pytest.mark.parametrize("mode, source, expected", [
    ("socket", "import no_such_module_xyz\n", "scheduler broken.py failed: ModuleNotFoundError: No module named "
                                               "'no_such_module_xyz'"),
    ("socket", NOT_A_SCHEDULER, "scheduler broken.py failed: TypeError: 'Broken' object is not callable (class "
                                "Broken is not a subclass of pybatsim's BatsimScheduler)"),
    ("inprocess", NOT_A_SCHEDULER, "scheduler broken.py failed to start: TypeError: 'Broken' object is not callable "
                                   "(class Broken is not a subclass of pybatsim's BatsimScheduler)"),
])
def test_a_scheduler_that_cannot_start(tmp_path, capsys, mode, source, expected):
    scheduler = tmp_path / "broken.py"
    scheduler.write_text(source)
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=scheduler, extra=("--mode", mode))
    assert code == 2 and err.startswith(f"batio: error: {expected}") and one_line(err)


def test_sys_exit_in_an_in_process_callback(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING, options={"do": "exit_in_callback"})
    assert code == 2 and "the scheduler called sys.exit(3) in a callback" in err and one_line(err)


def test_data_staging_between_labels_mapped_to_nothing(tmp_path, capsys):
    work = workload([{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "s"}],
                    {"s": {"type": "data_staging", "nb_bytes": 1e6, "from": "a", "to": "b"}}, 512)
    code, err, _ = run_cli(tmp_path, capsys, work, platform=CLUSTER512, options={"execute": {"w0!A": {"alloc": "0"}}})
    assert code == 2 and "job 'w0!A', profile 's', field 'from': needs storage label 'a'" in err
    assert "internal engine error" not in err and "partial" in err and one_line(err)


@pytest.mark.parametrize("target", [float("nan"), float("inf")])
def test_call_me_later_at_a_date_that_is_not_finite(tmp_path, capsys, target):
    events = [{"timestamp": 0, "type": "CALL_ME_LATER", "data": {"timestamp": target}}]
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING, options={"do": "raw", "events": events})
    assert code == 2 and f"CALL_ME_LATER asks to be called at {target}, which is not a finite date after the " \
                         "decision's (0.0)" in err
    assert "engine process died" not in err and one_line(err)


@pytest.mark.parametrize("date", [-5, -1e9])
def test_events_dated_before_time_zero(tmp_path, capsys, date):
    events = [{"timestamp": date, "type": "EXECUTE_JOB", "data": {"job": "submitted", "alloc": "0"}}]
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING, options={"do": "raw", "events": events})
    assert code == 2 and f"event 0 (EXECUTE_JOB) is dated {float(date)}" in err and one_line(err)


def test_many_call_me_later_in_one_reply_are_valid(tmp_path, capsys):
    """Handling each event takes a message's simulated time: dates still ahead when the scheduler asked
    may have passed when the server handles them (each 1.2 ms here): they fire at once."""
    work = workload([{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"}], DELAY, 512)
    code, err, _ = run_cli(tmp_path, capsys, work, platform=CLUSTER512, scheduler=MISBEHAVING,
                           options={"do": "many_calls", "count": 500, "first": 0.1, "span": 0.1})
    assert code == 0, err
    rows = (tmp_path / "out" / "out_jobs.csv").read_text().splitlines()
    assert len(rows) == 2 and ",COMPLETED_SUCCESSFULLY," in rows[1]


def test_pending_call_me_laters_are_not_a_thread_each(tmp_path, capsys):
    """5,000 calls pending at once: past the first 1,000 (a waiter actor each, as in Batsim) one waiter
    actor for the others, not a thread each."""
    threads = tmp_path / "threads.txt"
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING,
                           options={"do": "many_calls", "count": 5000, "first": 5, "span": 0,
                                    "threads_file": str(threads)})
    assert code == 0, err
    assert int(threads.read_text()) < 1100


def test_change_job_state_cannot_end_an_executing_job(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING, options={"do": "complete_running"})
    assert code == 2 and "CHANGE_JOB_STATE: job 'w0!A' is being executed by the engine" in err and one_line(err)


def _platform(tmp_path, host_speed="1Gf", bandwidth="1GBps", latency="0us", pfs_speed="1Gf", extra_host=""):
    path = tmp_path / "p.xml"
    path.write_text(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n<platform version='4.1'>"
        f"<zone id='z' routing='Full'><host id='master_host' speed='1Gf'/><host id='h0' speed='{host_speed}'/>"
        f"{extra_host}<host id='pfs' speed='{pfs_speed}'><prop id='role' value='storage'/></host>"
        f"<link id='l' bandwidth='{bandwidth}' latency='{latency}'/>"
        "<route src='h0' dst='pfs'><link_ctn id='l'/></route></zone></platform>")
    return path


WRITE = workload([{"id": "A", "subtime": 0, "res": 1, "profile": "w"}],
                 {"w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e6}}, 1)


@pytest.mark.parametrize("element, expected", [
    ({"bandwidth": "nanBps"}, "field 'bandwidth': <link id='l'>: bandwidth 'nanBps' is not a number in ASCII"),
    ({"bandwidth": "-1GBps"}, "field 'bandwidth': <link id='l'>: bandwidth '-1GBps' is out of bounds"),
    ({"bandwidth": "0Bps"}, "field 'bandwidth': <link id='l'>: bandwidth '0Bps' is out of bounds"),
    ({"latency": "nans"}, "field 'latency': <link id='l'>: latency 'nans' is not a number in ASCII"),
    ({"latency": "-1s"}, "field 'latency': <link id='l'>: latency '-1s' is out of bounds"),
    ({"pfs_speed": "nanf"}, "field 'speed': <host id='pfs'>: speed 'nanf' is not a number in ASCII"),
    ({"host_speed": "nanf"}, "field 'speed': <host id='h0'>: speed 'nanf' is not a number in ASCII"),
])
def test_platform_numbers_no_run_can_use(tmp_path, capsys, element, expected):
    code, err, _ = run_cli(tmp_path, capsys, WRITE, platform=_platform(tmp_path, **element),
                           options={"execute": {"w0!A": {"alloc": "0"}}})
    assert code == 2 and f"p.xml, {expected}" in err and one_line(err)


def test_a_full_zone_without_a_route_moves_no_bytes_for_free(tmp_path, capsys):
    work = workload([{"id": "A", "subtime": 0, "walltime": 100, "res": 2, "profile": "p"}],
                    {"p": {"type": "parallel_homogeneous", "cpu": 0, "com": 1e6}}, 2)
    platform = _platform(tmp_path, extra_host="<host id='h1' speed='1Gf'/>")
    code, err, _ = run_cli(tmp_path, capsys, work, platform=platform, options={"execute": {"w0!A": {"alloc": "0-1"}}})
    assert code == 2 and "p.xml, field 'route': zone 'z' (routing Full) has no route from 'h0' to 'h1'" in err
    assert "job 'w0!A' (profile 'p')" in err and one_line(err)


def test_a_deadlock_is_an_error_naming_the_jobs_left(tmp_path, capsys):
    """h0's speed drops to 0 at t=1: SimGrid stops with A running and B waiting."""
    (tmp_path / "drop.trace").write_text("0 1.0\n1 0.0\n")
    platform = tmp_path / "drop.xml"
    platform.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
                        "<platform version='4.1'><zone id='z' routing='Full'><host id='master_host' speed='1Gf'/>"
                        "<host id='h0' speed='1Gf' speed_file='drop.trace'/></zone></platform>")
    work = workload([{"id": "A", "subtime": 0, "res": 1, "profile": "c"}, {"id": "B", "subtime": 0, "res": 1,
                     "profile": "c"}], {"c": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0}}, 1)
    code, err, _ = run_cli(tmp_path, capsys, work, platform=platform, scheduler=MISBEHAVING)
    assert code == 2 and "the simulation deadlocked at t=1.000000" in err
    assert "1 running (w0!A), 1 waiting (w0!B)" in err
    assert "partial" in err and one_line(err)
    assert "Deadlock detected" in (tmp_path / "out" / "out_scheduler.log").read_text()
    assert json.loads((tmp_path / "out" / "out_run.json").read_text())["completed"] is False


def test_a_scheduler_looping_in_process_is_stopped_by_the_decision_bound(tmp_path, capsys):
    started = time.monotonic()
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING, options={"do": "loop_forever"},
                           extra=("--timeout", "1"))
    assert code == 2 and "the scheduler did not answer within 1 s" in err and "--timeout" in err and one_line(err)
    assert time.monotonic() - started < 15


def test_a_scheduler_blocked_in_process_is_stopped_too(tmp_path, capsys):
    """A sleep in C code does not see the interruption: the run ends from the watchdog."""
    started = time.monotonic()
    code, err, _ = run_cli(tmp_path, capsys, one_job(), options={"stall_on": "w0!A"}, extra=("--timeout", "1"))
    assert code == 2 and "the scheduler did not answer within 1 s" in err and "partial" in err
    assert time.monotonic() - started < 20 and (tmp_path / "out" / "out_jobs.csv").exists()


def test_a_scheduler_calling_itself_back_forever_is_stopped(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING, options={"do": "call_me_later_forever"},
                           extra=("--max-idle", "100"))
    assert code == 2 and "with 1 job(s) waiting and none running, e.g. w0!A; the bound is 100 s" in err
    assert "--max-idle" in err and one_line(err)


def test_calls_asked_before_the_last_job_ended_only_let_time_pass(tmp_path, capsys):
    # Five calls asked at the submission, due long after the job ends (as a
    # deadline a job's end made useless): not a scheduler calling itself back.
    code, err, _ = run_cli(tmp_path, capsys, one_job(), scheduler=MISBEHAVING,
                           options={"do": "many_calls", "count": 5, "first": 1000, "span": 5000},
                           extra=("--max-idle", "100"))
    assert code == 0, err


def _sweep(tmp_path, capsys, text):
    config = tmp_path / "sweep.yaml"
    config.write_text(text)
    code = main(["sweep", str(config), "--out", str(tmp_path / "sweep"), "--workers", "1", "--quiet"])
    return code, capsys.readouterr().err


def test_sweep_naming_a_malformed_workload(tmp_path, capsys):
    (tmp_path / "bad.json").write_text('{"nb_res": 4, "jobs": [')
    code, err = _sweep(tmp_path, capsys, f"platforms: [{TINY}]\nworkloads: [{tmp_path / 'bad.json'}]\n"
                                         "schedulers: [fcfs]\n")
    assert code == 2 and "sweep.yaml, field 'workloads'" in err and "bad.json: malformed JSON" in err
    assert one_line(err)


def test_compare_naming_a_workload_that_is_not_utf8(tmp_path, capsys):
    (tmp_path / "bad.json").write_bytes(b'{"nb_res": 4, "jobs": [], "profiles": {"\xff": {}}}')
    code = main(["compare", "--platform", str(TINY), "--workload", str(tmp_path / "bad.json"), "--schedulers", "fcfs",
                 "--out", str(tmp_path / "cmp"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "batio compare, field 'workloads': " in err and "bad.json: not UTF-8 text" in err
    assert one_line(err)


def test_sweep_seeds_with_only_workload_files(tmp_path, capsys):
    (tmp_path / "w.json").write_text(json.dumps(one_job()))
    code, err = _sweep(tmp_path, capsys, f"platforms: [{TINY}]\nworkloads: [{tmp_path / 'w.json'}]\n"
                                         "schedulers: [fcfs]\nseeds: 5\n")
    assert code == 2 and "sweep.yaml, field 'seeds': seeds apply to workload generators only" in err


def test_sweep_generator_whose_arguments_make_no_jobs(tmp_path, capsys):
    code, err = _sweep(tmp_path, capsys, f"platforms: [{TINY}]\nworkloads: [{{generator: "
                                         "'batio.workloads.demo:demo_workload', args: {nb_jobs: -5}}]\n"
                                         "schedulers: [fcfs]\nio_slowdown: false\n")
    assert code == 2 and "args {'nb_jobs': -5} made a workload without jobs" in err and one_line(err)


@pytest.mark.parametrize("text, expected", [
    ('{"now": ' + "9" * 5000 + ', "events": []}', "malformed JSON (a number is too long"),
    ('{"now": 0, "events": ' + "[" * 100000 + "]" * 100000 + "}", "malformed JSON (nested too deeply)"),
    ('{"now": NaN, "events": []}', "the scheduler's reply has 'now' nan"),
])
def test_replies_json_cannot_hold(text, expected):
    from batio.engines.embedded.transport import decode_reply
    with pytest.raises(SchedulerError, match=re.escape(expected)):
        decode_reply(text)


@pytest.mark.parametrize("value, expected", [("9" * 5000, "not usable YAML: a number is too long"),
                                             ("[" * 10000 + "]" * 10000, "not usable YAML: nested too deeply")])
def test_sweep_config_yaml_cannot_hold(tmp_path, capsys, value, expected):
    code, err = _sweep(tmp_path, capsys, f"platforms: [{TINY}]\nworkloads: [demo]\nschedulers: [fcfs]\nx: {value}\n")
    assert code == 2 and f"sweep.yaml: {expected}" in err and one_line(err)


def test_options_with_an_integer_too_long(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), extra=("--options", '{"a": ' + "9" * 5000 + "}"))
    assert code == 2 and "--options: malformed JSON: a number is too long" in err and one_line(err)


@pytest.mark.parametrize("option, expected", [
    ("maxmin/precision:abc", "maxmin/precision must be a number > 0 and < 1, got 'abc'"),
    ("maxmin/precision:-1", "maxmin/precision must be a number > 0 and < 1, got '-1'"),
    ("network/model:Bogus", "network/model must be one of LV08, CM02, SMPI, IB, Constant, got 'Bogus'"),
    ("network/crosstraffic:maybe", "network/crosstraffic must be one of yes, no, on, off, true, false, 1, 0"),
    ("no/such:1", "expected NAME:VALUE with NAME among maxmin/precision, "),
    ("host/model:L07", "expected NAME:VALUE with NAME among maxmin/precision, ")])
def test_simgrid_options_checked_before_simgrid(tmp_path, capsys, option, expected):
    """SimGrid aborts on an unknown model and takes a negative precision: batio refuses both first."""
    code, err, _ = run_cli(tmp_path, capsys, one_job(), extra=("--sg-cfg", option))
    assert code == 2 and f"--sg-cfg: '{option}': {expected}" in err and one_line(err)


def test_acknowledging_dynamic_jobs_needs_them(tmp_path, capsys):
    """Batsim 4.2.1 takes --acknowledge-dynamic-jobs alone and ignores it; batio refuses the no-op."""
    code, err, _ = run_cli(tmp_path, capsys, one_job(), extra=("--acknowledge-dynamic-jobs",))
    assert code == 2 and "--acknowledge-dynamic-jobs: acknowledges the jobs the scheduler registers, which needs " \
                         "--enable-dynamic-jobs" in err and one_line(err)


def test_io_sample_period_must_be_finite(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, capsys, one_job(), extra=("--io-sample-period", "inf"))
    assert code == 2 and "--io-sample-period: value 'inf' is not a number in ASCII decimal digits" in err


def test_a_failed_sweep_run_names_its_final_folder(tmp_path):
    """A run's outputs are written in a temporary folder, renamed when it ends: the error names the final one."""
    from batio.sweep import load_config, run_grid
    (tmp_path / "w.json").write_text(json.dumps(one_job()))
    config = tmp_path / "s.yaml"
    config.write_text(f"platforms: [{TINY}]\nworkloads: [{tmp_path / 'w.json'}]\nio_slowdown: false\n"
                      f"schedulers: [{{scheduler: {MISBEHAVING}, options: {{do: exit_in_callback}}}}]\n")
    table, counts, _ = run_grid(load_config(config), tmp_path / "out", workers=0, progress=False)
    error = table.loc[0, "error"]
    assert "sys.exit(3)" in error and f"partial: {tmp_path / 'out' / 'runs' / table.loc[0, 'run_id']}/out_jobs.csv" \
        in error and ".tmp-" not in error
