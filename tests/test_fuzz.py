"""Property-based fuzzing of what users and schedulers hand batio.

Workloads, platforms and scheduler replies are drawn mostly valid with
nonsense mixed in (NaN, negative and huge numbers, wrong types, CSV-breaking
names, dangling references, missing routes, events dated anywhere). Whatever
comes in, batio either runs to a correct end (every job in a final state in
out_jobs.csv) or stops with one line naming the culprit: never a traceback,
an "internal engine error", a dead engine process, or a hang.

In CI the properties run seeded (Hypothesis' ``derandomize``) and few
(< 30 s in all); ``scripts/fuzz.py`` runs them long with random seeds
(``BATIO_FUZZ_PROFILE=fuzz``, ``BATIO_FUZZ_EXAMPLES=N``, ``BATIO_FUZZ_SIMULATIONS=M``). Every case run is
counted; with ``BATIO_FUZZ_REPORT=PATH`` the counts are written there.
"""

from collections import Counter
from contextlib import contextmanager, redirect_stderr, redirect_stdout
import io
import json
import logging
import math
import os
from pathlib import Path
import signal
import tempfile

from conftest import TESTS
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from batio.engines.embedded.run import simulate
from batio.errors import BatioError, InputError
from batio.inputs.spec import RunSpec
from batio.inputs.workload import load_workload

PROFILE = os.environ.get("BATIO_FUZZ_PROFILE", "ci")
EXAMPLES = int(os.environ["BATIO_FUZZ_EXAMPLES"]) if "BATIO_FUZZ_EXAMPLES" in os.environ else None
MISBEHAVING = TESTS / "schedulers" / "misbehaving.py"
CASES: Counter[str] = Counter()  # property -> cases run, and outcomes
FINAL_STATES = {"COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED",
                "REJECTED"}


def fuzz_settings(ci_examples, simulating=False):
    """CI's examples, or the campaign's; properties ``simulating`` (a SimGrid run per case,
    seconds each) take ``BATIO_FUZZ_SIMULATIONS`` in a campaign when it is set."""
    campaign = os.environ.get("BATIO_FUZZ_SIMULATIONS") if simulating else None
    return settings(settings.get_profile(PROFILE), max_examples=int(campaign or EXAMPLES or ci_examples))


@pytest.fixture(autouse=True)
def count_cases():
    """After each property, the counts so far (to the report too: a campaign cut short keeps them)."""
    yield
    logging.getLogger("batio.fuzz").warning("fuzz cases run: %s", dict(CASES))
    report = os.environ.get("BATIO_FUZZ_REPORT")
    if report:
        Path(report).parent.mkdir(parents=True, exist_ok=True)
        Path(report).write_text(json.dumps(dict(CASES), indent=1, sort_keys=True) + "\n")


# -- strategies -----------------------------------------------------------------------------
def mostly(good, bad, odds=15):
    """``good``, and about one time in ``odds`` ``bad``: most cases then get past the first check.
    (Hypothesis favours the bounds of a range: the bad branch is a value in the middle.)"""
    return st.integers(0, odds - 1).flatmap(lambda draw: bad if draw == odds // 2 else good)


def rarely(draw, odds):
    return draw(st.integers(0, odds - 1)) == odds // 2


GOOD_NUMBERS = st.sampled_from([0, 1, 2, 5, 10, 2.5, 1e6])
BAD_NUMBERS = st.one_of(st.sampled_from([-1, -5, 10**30, 10**400, math.nan, math.inf, -math.inf, True, "3", None,
                                         [1], {"a": 1}]), st.floats(allow_nan=True, allow_infinity=True))
NUMBERS = mostly(GOOD_NUMBERS, BAD_NUMBERS)
GOOD_NAMES = st.sampled_from(["a", "b", "c", "Ä", "007"])
BAD_NAMES = st.sampled_from(["a,b", 'q"', "x\ny", ""])


@st.composite
def profiles(draw, name, names, odds):
    numbers = mostly(GOOD_NUMBERS, BAD_NUMBERS, odds)
    labels = mostly(st.sampled_from(["pfs", "pfs", "other"]), st.sampled_from(["", 3]), odds)
    kind = draw(mostly(st.sampled_from(["delay", "delay", "parallel_homogeneous", "parallel_homogeneous_total",
                                        "parallel", "parallel_homogeneous_pfs", "data_staging", "composed"]),
                       st.sampled_from(["sleep", 3, None]), odds))
    profile = {"type": kind}
    width = draw(st.integers(1, 2))  # hosts a "parallel" profile describes
    vector = mostly(st.lists(numbers, min_size=width, max_size=width), st.lists(numbers, max_size=3), odds)
    others = [other for other in names if other != name] or names
    fields = {"delay": mostly(st.sampled_from([1, 2.5, 10]), numbers, odds),
              "cpu": vector if kind == "parallel" else numbers,
              "com": (mostly(st.lists(numbers, min_size=width ** 2, max_size=width ** 2), vector, odds)
                      if kind == "parallel" else numbers),
              "bytes_to_read": numbers, "bytes_to_write": numbers, "storage": labels, "nb_bytes": numbers,
              "from": labels, "to": labels,
              "seq": mostly(st.lists(st.sampled_from(others), min_size=1, max_size=3),
                            st.lists(st.one_of(BAD_NAMES, st.lists(GOOD_NAMES, max_size=1)), max_size=2), odds),
              "repeat": mostly(st.integers(1, 3), numbers, odds),
              "ret": mostly(st.sampled_from([0, 0, 1]), numbers, odds)}
    wanted = {"delay": ["delay"], "parallel_homogeneous": ["cpu", "com"], "parallel_homogeneous_total": ["cpu", "com"],
              "parallel": ["cpu", "com"], "parallel_homogeneous_pfs": ["bytes_to_read", "bytes_to_write"],
              "data_staging": ["nb_bytes", "from", "to"], "composed": ["seq", "repeat"]}.get(kind, [])
    for key in wanted + draw(st.lists(st.sampled_from(sorted(fields)), max_size=1)):
        if not rarely(draw, odds):  # now and then a field is missing
            profile[key] = draw(fields[key])
    if kind == "delay" and draw(st.booleans()):
        profile["delay"] = draw(st.sampled_from([1, 3, 20]))
    return profile


@st.composite
def workloads(draw, nb_hosts=4, odds=15):
    """A workload, each of its values wrong one time in ``odds``."""
    numbers = mostly(GOOD_NUMBERS, BAD_NUMBERS, odds)
    names = draw(st.lists(mostly(GOOD_NAMES, BAD_NAMES, odds), min_size=1, max_size=3, unique=True))
    profile_set = {name: draw(profiles(name, names, odds)) for name in names}
    if rarely(draw, odds):
        profile_set[names[0]] = draw(st.sampled_from([[1, 2], "delay", None, 3]))
    jobs = []
    for _ in range(draw(st.integers(0, 4))):
        job = {"id": draw(mostly(st.integers(0, 99), st.one_of(BAD_NAMES, BAD_NUMBERS), odds)),
               "subtime": draw(numbers),
               "res": draw(mostly(st.integers(1, nb_hosts), numbers, odds)),
               "profile": draw(mostly(st.sampled_from(names), st.one_of(BAD_NAMES, BAD_NUMBERS), odds)),
               "walltime": draw(mostly(st.sampled_from([-1, 5, 100]), numbers, odds))}
        for key in list(job):
            if rarely(draw, 2 * odds):
                del job[key]
        jobs.append(job)
    workload = {"nb_res": draw(mostly(st.just(nb_hosts), numbers, odds)), "jobs": jobs, "profiles": profile_set}
    if rarely(draw, 2 * odds):
        del workload[draw(st.sampled_from(sorted(workload)))]
    return workload


def _as_file(folder, workload, raw=None):
    path = Path(folder) / "w.json"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(json.dumps(workload))  # NaN and Infinity as Python writes them
    return path


HANG_S = 90  # wall-clock seconds after which a run counts as hung (each decision is bounded at 20 s)


@contextmanager
def _hang_guard(seconds):
    """Fail, rather than wait forever, if the run does not end (simulate then kills its child)."""
    def hung(_signum, _frame):
        raise AssertionError(f"the run did not end within {seconds} s of wall-clock time: a hang")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _check_one_line(error, *culprits):
    message = str(error)
    assert isinstance(error, BatioError)
    assert "\n" not in message and "Traceback" not in message, message
    assert "internal engine error" not in message and "engine process died" not in message, message
    assert any(culprit in message for culprit in culprits), message


# -- properties -----------------------------------------------------------------------------------
@fuzz_settings(ci_examples=150)
@given(workload=workloads(), raw=st.one_of(st.none(), st.none(), st.none(), st.binary(max_size=40)))
def test_any_workload_file_loads_or_is_one_line_naming_it(workload, raw):
    CASES["workload files"] += 1
    with tempfile.TemporaryDirectory() as folder:
        path = _as_file(folder, workload, raw)
        try:
            loaded = load_workload(path, "w0")
        except InputError as error:
            CASES["workload files refused"] += 1
            _check_one_line(error, str(path))
            return
        CASES["workload files loaded"] += 1
        for job in loaded.jobs:
            assert job.profile in loaded.profiles and job.res >= 1 and job.subtime >= 0


EVENT_TYPES = st.sampled_from(["EXECUTE_JOB", "EXECUTE_JOB", "REJECT_JOB", "CALL_ME_LATER", "KILL_JOB",
                               "CHANGE_JOB_STATE", "SET_JOB_METADATA", "NOTIFY", "REGISTER_JOB", "BOGUS"])
DATES = st.sampled_from([0, 0, 0.5, 2, -5, math.nan, math.inf, 1e9])


@st.composite
def events(draw):
    kind = draw(EVENT_TYPES)
    data = {"job": "submitted"} if not rarely(draw, 10) else {"job_id": draw(st.sampled_from(["w0!zz", 3, ""]))}
    extras: dict[str, dict] = {
        "EXECUTE_JOB": {"alloc": st.sampled_from(["0", "0", "0-1", "1", "5", "", "x", "3-2"]),
                        "storage_mapping": st.sampled_from([{"pfs": 2}, {"pfs": 0}, {"other": 2}, {}])},
        "CALL_ME_LATER": {"timestamp": st.one_of(DATES, NUMBERS)},
        "KILL_JOB": {"job_ids": st.sampled_from([[], ["w0!zz"], [3]])},
        "CHANGE_JOB_STATE": {"job_state": st.sampled_from(["RUNNING", "REJECTED", "COMPLETED_SUCCESSFULLY",
                                                           "COMPLETED_KILLED", "BOGUS"])},
        "SET_JOB_METADATA": {"metadata": st.sampled_from(["ok", 'a"b', "a,b"])},
        "NOTIFY": {"type": st.sampled_from(["registration_finished", "bogus"])}}
    extra = extras.get(kind, {})
    for key, values in extra.items():
        if not rarely(draw, 6):
            data[key] = draw(values)
    return {"timestamp": draw(DATES), "type": kind, "data": data}


SPEEDS = mostly(st.sampled_from(["1Gf", "2Gf"]), st.sampled_from(["0f", "nanf", "-1Gf"]), 20)
BANDWIDTHS = mostly(st.sampled_from(["1GBps", "10MBps"]), st.sampled_from(["0Bps", "nanBps", "-1GBps"]), 20)
LATENCIES = mostly(st.sampled_from(["0us", "1ms"]), st.sampled_from(["nans", "-1s"]), 20)


@st.composite
def platforms(draw):
    """Two compute hosts and a storage host in one Full zone; links and routes may be missing or broken."""
    hosts = "".join(f"<host id='h{i}' speed='{draw(SPEEDS)}'/>" for i in range(2))
    links = "".join(f"<link id='l{i}' bandwidth='{draw(BANDWIDTHS)}' latency='{draw(LATENCIES)}'/>" for i in range(3))
    routes = "".join(f"<route src='{src}' dst='{dst}'><link_ctn id='l{index}'/></route>"
                     for index, (src, dst) in enumerate([("h0", "pfs"), ("h1", "pfs"), ("h0", "h1")])
                     if not rarely(draw, 20))
    return ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
            "<platform version='4.1'><zone id='z' routing='Full'><host id='master_host' speed='1Gf'/>"
            f"{hosts}<host id='pfs' speed='{draw(SPEEDS)}'><prop id='role' value='storage'/></host>"
            f"{links}{routes}</zone></platform>")


@fuzz_settings(ci_examples=40, simulating=True)
@given(workload=workloads(nb_hosts=2, odds=60), platform=platforms(),
       replies=mostly(st.just([]), st.lists(events(), min_size=1, max_size=3), odds=2),
       queue=st.booleans())
def test_any_run_ends_correctly_or_in_one_line(workload, platform, replies, queue):
    """The scheduler starts jobs one at a time (FCFS) after sending ``replies`` on the first submission."""
    CASES["runs"] += 1
    with tempfile.TemporaryDirectory() as folder:
        work = _as_file(folder, workload)
        platform_path = Path(folder) / "p.xml"
        platform_path.write_text(platform)
        options = {"do": "raw", "events": replies, "queue": queue}
        spec = RunSpec(str(platform_path), [str(work)], str(MISBEHAVING), str(Path(folder) / "out" / "out"),
                       options=json.loads(json.dumps(options)), timeout_s=20.0, max_idle_s=1e4)
        try:
            with _hang_guard(HANG_S):
                simulate(spec)
        except BatioError as error:
            CASES["runs stopped by an error"] += 1
            CASES[f"runs stopped by an error: {type(error).__name__}"] += 1
            _check_one_line(error, "w.json", "p.xml", "scheduler", "EXECUTE_JOB", "CALL_ME_LATER", "KILL_JOB",
                            "CHANGE_JOB_STATE", "SET_JOB_METADATA", "NOTIFY", "REGISTER_JOB", "REJECT_JOB",
                            "event", "deadlocked", "job '")
            return
        CASES["runs to the end"] += 1
        rows = (Path(folder) / "out" / "out_jobs.csv").read_text(encoding="utf-8").splitlines()
        assert len(rows) == 1 + len(workload["jobs"])
        assert all(row.split(",")[7] in FINAL_STATES for row in rows[1:]), rows


CLI_VALUES = {
    "--timeout": ["5", "0", "-1", "nan", "inf", "1e-9"],
    "--max-idle": ["100", "0", "-3", "nan", "inf"],
    "--io-sample-period": ["1", "0", "nan", "inf", "-2", "1e-300"],
    "--port": ["0", "70000", "-1", "1"],
    "--sg-cfg": ["maxmin/precision:1e-9", "maxmin/precision:abc", "no/such:1", "host/model:L07", "x"],
    "--role": ["h0:storage", "h9:storage", "h0", ":x", "h0:bogus"],
    "--master-host": ["h0", "nope", ""],
    "--mode": ["socket", "inprocess"],
    "--options": ['{"execute": {"w0!A": {"alloc": "0"}}}', "[]", "{", '{"a": ' + "[" * 5000 + "]" * 5000 + "}"],
}


@fuzz_settings(ci_examples=15, simulating=True)
@given(flags=st.dictionaries(st.sampled_from(sorted(CLI_VALUES)), st.integers(0, 9), max_size=3),
       out=mostly(st.just("out"), st.sampled_from(["", "/dev/null", "afile", "afile/sub", "x" * 300])))
def test_any_command_line_runs_or_is_one_line(flags, out):
    """`batio run` with odd option values: exit 0, or 2 with one line (argparse's own usage errors aside)."""
    from batio.cli import main
    CASES["command lines"] += 1
    with tempfile.TemporaryDirectory() as folder:
        work = _as_file(folder, {"nb_res": 4, "jobs": [{"id": "A", "subtime": 0, "res": 1, "profile": "d"}],
                                 "profiles": {"d": {"type": "delay", "delay": 1}}})
        Path(folder, "afile").write_text("x")
        argv = ["run", "--platform", str(TESTS / "data" / "tiny.xml"), "--workload", str(work), "--scheduler",
                str(TESTS / "schedulers" / "scripted.py"), "--out", str(Path(folder, out)) if out else "", "--quiet"]
        if "--options" not in flags:
            argv += ["--options", CLI_VALUES["--options"][0]]
        for flag, index in flags.items():
            argv += [flag, CLI_VALUES[flag][index % len(CLI_VALUES[flag])]]
        stderr = io.StringIO()
        try:
            with redirect_stderr(stderr), redirect_stdout(io.StringIO()):
                code = main(argv)
        except SystemExit as exit:  # argparse: a value its type refuses, with its usage line
            CASES["command lines refused by argparse"] += 1
            assert exit.code == 2
            return
        err = stderr.getvalue()
        CASES[f"command lines ending with {code}"] += 1
        assert code in (0, 2), err
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
            assert "internal engine error" not in err and "engine process died" not in err, err
