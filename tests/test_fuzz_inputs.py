"""Fuzzing the input formats at their edges: platform XML, workload JSON,
contention curves, SWF and sacct traces.

Each format gets values at the edges (huge, tiny, NaN, infinity, hexadecimal,
other scripts' digits, negative), broken structure (depth, cycles, duplicates,
wrong types) and other encodings (binary noise, UTF-16). Every case ends in
one of the outcomes counted in ``CASES``: a clean error (one line naming the
file), an accepted input (a platform that then runs, a workload ``batio run``
would take), or a defect (a traceback, a messy error, a hang), which fails the
property. Settings and counting are tests/test_fuzz.py's.
"""

import json
import math
from pathlib import Path
import tempfile

from conftest import TESTS
from hypothesis import given
from hypothesis import strategies as st
import pytest
from test_fuzz import CASES, _hang_guard, count_cases, fuzz_settings, mostly

from batio.engines.embedded.run import simulate
from batio.errors import BatioError
from batio.importers import dumps, import_trace
from batio.inputs.contention import PROPERTIES, parse_curve
from batio.inputs.platform import read_properties
from batio.inputs.platform_check import check_platform_xml
from batio.inputs.spec import RunSpec
from batio.inputs.workload import load_workload

__all__ = ["count_cases"]  # the fixture that writes the counts, shared with test_fuzz.py

# -- edge values, shared by every format ----------------------------------------------------
EDGE_NUMBERS = st.sampled_from(["1e400", "1e-300", "nan", "inf", "-inf", "0x10", "-1", "0", "\u0661", "\u00b2",
                                "1e308", "9" * 300, "9" * 5000, "1_000", "+1", ".5", "5.", "1e", "", " ", "2.5",
                                "1e18", str(2 ** 63)])
GOOD_NUMBERS = st.sampled_from(["1", "2", "10", "100", "0.5"])
ENCODINGS = st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-16", "noise"])


def encoded(text, encoding, noise):
    return noise if encoding == "noise" else text.encode(encoding)


def outcome(name, action, source, accept=None):
    """Run ``action()``; count and check how it ended. ``accept(result)`` checks an accepted input."""
    CASES[name] += 1
    try:
        with _hang_guard(30):
            result = action()
    except BatioError as error:
        message = str(error)
        clean = "\n" not in message and Path(source).name in message and "engine process died" not in message
        CASES[f"{name}: {'clean error' if clean else 'messy error'}"] += 1
        assert clean, message
        return
    except AssertionError as hang:
        CASES[f"{name}: hang"] += 1
        raise hang
    except Exception as error:
        CASES[f"{name}: traceback {type(error).__name__}"] += 1
        raise
    CASES[f"{name}: accepted"] += 1
    if accept:
        accept(result)


# -- platform XML ----------------------------------------------------------------------------
def quantity(unit):
    return st.one_of(GOOD_NUMBERS.map(lambda n: n + unit), EDGE_NUMBERS.map(lambda n: n + unit), EDGE_NUMBERS)


@st.composite
def platform_texts(draw):
    """One compute host, a storage host and a link in one zone, each value sometimes at an edge."""
    def pick(good, bad):
        return draw(mostly(st.just(good), bad, odds=6))
    speed = pick("1Gf", st.one_of(quantity("f"), quantity("Gf").map(lambda s: f"1Gf,{s}")))
    core = pick("1", EDGE_NUMBERS)
    bandwidth = pick("1GBps", st.one_of(quantity("GBps"), st.just("1GBps,2GBps")))
    latency = pick("0s", quantity("us"))
    routing = pick("Full", st.sampled_from(["None", "Bogus", "Floyd", "Dijkstra", "", "full"]))
    version = pick("4.1", st.sampled_from(["3", "4", "4.2", "", "x"]))
    host_id = pick("h0", st.sampled_from(["", "pfs", "master_host"]))
    curve = pick("", st.lists(st.tuples(st.one_of(GOOD_NUMBERS, EDGE_NUMBERS), quantity("GBps")), max_size=3)
                 .map(lambda points: " ".join(f"{k}:{c}" for k, c in points)))
    prop_name = draw(st.sampled_from([*PROPERTIES, "batio:Contention", "batio:contention_reads", "role"]))
    props = f"<prop id='{prop_name}' value='{curve}'/>" * draw(st.integers(1, 2)) if curve else ""
    routes = ["<route src='h0' dst='pfs'><link_ctn id='l'/></route>"] * draw(st.integers(0, 2))
    text = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
            f"<platform version='{version}'><zone id='z' routing='{routing}'><host id='master_host' speed='1Gf'/>"
            f"<host id='{host_id}' speed='{speed}' core='{core}'/>"
            "<host id='pfs' speed='1Gf'><prop id='role' value='storage'/></host>"
            f"<link id='l' bandwidth='{bandwidth}' latency='{latency}'>{props}</link>"
            f"{''.join(routes)}</zone></platform>")
    return encoded(text, draw(ENCODINGS), draw(st.binary(max_size=30)))


WRITE_JOB = {"nb_res": 1, "jobs": [{"id": "A", "subtime": 0, "walltime": 50, "res": 1, "profile": "w"}],
             "profiles": {"w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e6}}}


def _checked_platform(path):
    read_properties(path)
    check_platform_xml(path)


@fuzz_settings(ci_examples=60, simulating=True)
@given(raw=platform_texts())
def test_platform_files_run_or_are_one_clean_line(raw):
    """Refused before SimGrid, or accepted and then run to the end: never an engine that dies."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.xml"
        path.write_bytes(raw)

        def runs(_):
            work = Path(folder) / "w.json"
            work.write_text(json.dumps(WRITE_JOB))
            spec = RunSpec(str(path), [str(work)], str(TESTS / "schedulers" / "scripted.py"),
                           str(Path(folder) / "out" / "out"), options={"execute": {"w0!A": {"alloc": "0"}}})
            outcome("platforms run", lambda: simulate(spec), path)
        outcome("platform files", lambda: _checked_platform(path), path, accept=runs)


# -- contention curves -----------------------------------------------------------------------
@fuzz_settings(ci_examples=300)
@given(points=st.lists(st.tuples(st.one_of(GOOD_NUMBERS, EDGE_NUMBERS), quantity("GBps"),
                                 st.sampled_from([":", ":", "::", ""])), max_size=4),
       separator=st.sampled_from([" ", ",", ";", "\n", "\u3000"]))
def test_contention_curves_parse_or_are_one_clean_line(points, separator):
    text = separator.join(f"{k}{colon}{c}" for k, c, colon in points)

    def valid(curve):
        assert all(k >= 1 and 0 < c < math.inf for k, c in curve.points)
        assert [k for k, _ in curve.points] == sorted({k for k, _ in curve.points})
    outcome("contention curves", lambda: parse_curve(text, "p.xml", "batio:contention", "link 'l'"), "p.xml",
            accept=valid)


# -- workload JSON: structure ----------------------------------------------------------------
@st.composite
def workload_structures(draw):
    """Composed profiles nested deep or wide, in cycles, repeated at the edges, of wrong types."""
    depth = draw(st.sampled_from([1, 2, 5, 40, 101, 2000]))
    width = draw(st.sampled_from([1, 1, 2, 3]))
    cycle = draw(st.booleans()) and draw(st.booleans())
    repeat = draw(st.one_of(st.sampled_from([1, 2, 1000, 10 ** 9, 10 ** 18, 2 ** 63, 0, -1, 1.5, True, "2", None]),
                            st.integers(1, 5)))
    profiles: dict[str, dict] = {f"p{i}": {"type": "composed", "seq": [f"p{i + 1}"] * width} for i in range(depth)}
    profiles[f"p{depth}"] = ({"type": "composed", "seq": ["p0"]} if cycle else {"type": "delay", "delay": 1})
    profiles["p0"]["repeat"] = repeat
    if draw(mostly(st.just(False), st.just(True), odds=5)):
        profiles[f"p{draw(st.integers(0, depth))}"]["type"] = draw(st.sampled_from([{"a": 1}, [1], 3, None, "x"]))
    job = {"id": "A", "subtime": 0, "res": 1, "profile": "p0"}
    text = json.dumps({"nb_res": 1, "jobs": [job] * draw(st.integers(1, 2)), "profiles": profiles})
    return encoded(text, draw(ENCODINGS), draw(st.binary(max_size=30)))


@fuzz_settings(ci_examples=100)
@given(raw=workload_structures())
def test_workload_structures_load_or_are_one_clean_line(raw):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.json"
        path.write_bytes(raw)
        outcome("workload structures", lambda: load_workload(path, "w0"), path)


# -- traces: SWF and sacct -------------------------------------------------------------------
@st.composite
def swf_texts(draw):
    def field(good):
        return draw(mostly(st.just(good), EDGE_NUMBERS, odds=12))
    lines = [f"; {key}: {draw(mostly(GOOD_NUMBERS, EDGE_NUMBERS, odds=3))}"
             for key in draw(st.lists(st.sampled_from(["UnixStartTime", "MaxProcs", "MaxNodes"]), max_size=2))]
    for number in range(1, draw(st.integers(1, 3)) + 1):
        values = [str(number), field("0"), field("5"), field("100"), field("4"), "-1", "-1", field("4"),
                  field("200"), "-1", field("1"), "1", "1", "1", "1", "1", "-1", "-1"]
        lines.append(" ".join(values))
    return encoded("\n".join(lines) + "\n", draw(ENCODINGS), draw(st.binary(max_size=30)))


DATES = st.sampled_from(["2024-03-01T00:00:00", "0001-01-01T00:00:00", "9999-12-31T23:59:59", "2024-13-01T00:00:00",
                         "Unknown", "", "\u0662024-03-01T00:00:00"])


@st.composite
def sacct_texts(draw):
    lines = ["JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|State"]
    for number in range(1, draw(st.integers(1, 3)) + 1):
        job_id = draw(mostly(st.just(str(number)), st.sampled_from(["1,2", '1"2', "\u00b2", "", "1!2", "1.0",
                                                                     "\u0661"]), odds=6))
        dates = [draw(mostly(st.just(good), DATES, odds=8)) for good in
                 ("2024-03-01T00:00:00", "2024-03-01T00:01:00", "2024-03-01T00:11:00")]
        elapsed = draw(mostly(st.just("00:10:00"), st.sampled_from(["99999999999-00:00:00", "\u0661:00", "-1",
                                                                     "1e400", "10"]), odds=8))
        nodes = draw(mostly(st.just("2"), EDGE_NUMBERS, odds=8))
        lines.append("|".join([job_id, *dates, elapsed, "01:00:00", nodes, "COMPLETED"]))
    return encoded("\n".join(lines) + "\n", draw(ENCODINGS), draw(st.binary(max_size=30)))


def _imported_loads(folder):
    """An accepted trace gives a workload that batio run loads (refused at import otherwise)."""
    def check(workload):
        path = Path(folder) / "w.json"
        path.write_text(dumps(workload))
        load_workload(path, "w0")
    return check


@pytest.mark.parametrize("format, texts", [("swf", swf_texts()), ("sacct", sacct_texts())])
def test_traces_import_or_are_one_clean_line(format, texts):
    @fuzz_settings(ci_examples=150)
    @given(raw=texts)
    def imports(raw):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"t.{format}"
            path.write_bytes(raw)
            outcome(f"{format} traces", lambda: import_trace(format, path), path, accept=_imported_loads(folder))
    imports()
