"""Fuzzing the real-machine surfaces: jobsio records (and their Darshan runs),
TOKIO-ABC summaries, a week's recorded and measured fields as `batio validate` reads them
back, a run folder as `batio report` reads it, and the numeric options of the command line.

Classes of generated inputs, not a list: every number of a record drawn from the edge
values every format shares (tests/test_fuzz_inputs.py), ids and week names from the ways
a name can fail (other scripts' digits, separators, paths), JSON values of every type, and
an output file cut, repeated or changed anywhere. Each case ends as counted in ``CASES``:
a clean error (one line naming the file or the option), or an accepted input checked to be
usable; a traceback or a messy error fails the property.
"""

from contextlib import redirect_stderr
import csv
import io
import json
import math
from pathlib import Path
import tempfile

from hypothesis import given
from hypothesis import strategies as st
import pytest
from test_fuzz import CASES, count_cases, fuzz_settings, mostly
from test_fuzz_inputs import DATES, EDGE_NUMBERS, GOOD_NUMBERS, _imported_loads, outcome

from batio.cli.parser import parser
from batio.importers import import_trace
from batio.report import output_check
from batio.twin import fstwin_read, iomodel

__all__ = ["count_cases"]

BAD_IDS = st.sampled_from(["\u0667", "\u00b2", "\uff17", "1,2", '1"2', "1\n2", "1!2", "", " ", "007", "7", "1\t2",
                           "a" * 300])
BAD_WEEKS = st.sampled_from(["", "..", ".", "../../x", "/abs", "a/b", "a\\b", "c:x", " w1", "w\n1", "5", "w" * 200])
JOBSIO_DATES = st.one_of(DATES, st.sampled_from(["2022-01-15 00:00:00", "9999-01-01 00:00:00", "\u0661\u0662",
                                                 "1970-01-01 00:00:00", "1642208677"]))
JOBSIO_COLUMNS = ["week", "id", "submissionTime", "startTime", "waitingTimeSeconds", "runtimeSeconds",
                  "walltimeSeconds", "nodesUsed", "sum_nprocs", "readBytes", "writtenBytes", "readTimeSeconds",
                  "writeTimeSeconds", "metaTimeSeconds", "runsCount"]
JOBSIO_GOOD = ["w1", None, "2022-01-15 00:00:00", "2022-01-15 00:01:40", "100", "1000", "1200", "2", "128",
               "2000000000", "4000000000", "1280", "2560", "640", "1"]


def _csv(rows):
    text = io.StringIO()
    csv.writer(text).writerows(rows)
    return text.getvalue()


@st.composite
def jobsio_texts(draw):
    header = list(JOBSIO_COLUMNS)
    if draw(mostly(st.just(False), st.just(True), odds=10)):
        header.append(draw(st.sampled_from(JOBSIO_COLUMNS)))  # a column given twice
    rows = [header]
    for number in range(1, draw(st.integers(1, 4)) + 1):
        row = []
        for column, good in zip(JOBSIO_COLUMNS, JOBSIO_GOOD):
            if column == "id":
                row.append(draw(mostly(st.just(str(number)), BAD_IDS, odds=6)))
            elif column == "week":
                row.append(draw(mostly(st.just(good), BAD_WEEKS, odds=10)))
            elif column.endswith("Time"):
                row.append(draw(mostly(st.just(good), JOBSIO_DATES, odds=10)))
            else:
                row.append(draw(mostly(st.just(good), EDGE_NUMBERS, odds=14)))
        rows.append(row + row[:len(header) - len(row)])
    return _csv(rows)


@st.composite
def runs_texts(draw):
    rows = [["week", "job_id", "nprocs", "dStartTime", "dEndTime"]]
    for _ in range(draw(st.integers(0, 3))):
        rows.append([draw(mostly(st.just("w1"), BAD_WEEKS)), draw(mostly(st.just("1"), BAD_IDS)),
                     draw(mostly(GOOD_NUMBERS, EDGE_NUMBERS, odds=4)),
                     draw(mostly(st.just("1642208677"), EDGE_NUMBERS, odds=6)),
                     draw(mostly(st.just("1642209677"), EDGE_NUMBERS, odds=6))])
    return _csv(rows)


@fuzz_settings(ci_examples=150)
@given(text=jobsio_texts(), runs=st.one_of(st.none(), runs_texts()), week=st.one_of(st.none(), BAD_WEEKS))
def test_jobsio_records_import_or_are_one_clean_line(text, runs, week):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "jobs.csv"
        path.write_text(text)
        runs_path = None
        if runs is not None:
            runs_path = Path(folder) / "runs.csv"
            runs_path.write_text(runs)

        def imported():
            try:
                return import_trace("jobsio", path, week=week, runs=runs_path)
            except Exception as error:  # a clean error may name --week or the runs file instead
                if "--week" in str(error) or (runs_path and str(runs_path) in str(error)):
                    return None
                raise
        outcome("jobsio records", imported, path,
                accept=lambda workload: workload is None or _imported_loads(folder)(workload))


SUMMARY_GOOD = {"_file_system": "cscratch", "darshan_app": "/bin/ior", "darshan_nprocs": "512",
                "darshan_start_time": "1500000000", "darshan_end_time": "1500000100",
                "darshan_agg_perf_by_slowest_posix": "1024", "darshan_tot_bytes_read_posix": "0",
                "darshan_tot_bytes_written_posix": str(100 * 2 ** 30), "darshan_biggest_read_api_files": "0",
                "darshan_biggest_write_api_files": "1", "fs_tot_gibs_read": "10", "fs_tot_gibs_written": "190"}


@st.composite
def summaries_texts(draw):
    rows = [list(SUMMARY_GOOD)]
    for _ in range(draw(st.integers(1, 4))):
        rows.append([draw(mostly(st.just(good), EDGE_NUMBERS, odds=20)) if column in fstwin_read.NUMERIC else good
                     for column, good in SUMMARY_GOOD.items()])
    return _csv(rows)


def _finite_runs(result):
    runs, _ = result
    for column in ("clients", "background", "measured"):
        assert all(math.isfinite(value) and value >= 0 for value in runs[column]), runs[column]


@fuzz_settings(ci_examples=150)
@given(text=summaries_texts())
def test_summaries_read_or_are_one_clean_line(text):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.csv"
        path.write_text(text)
        outcome("TOKIO-ABC summaries", lambda: fstwin_read.read_runs(path), path, accept=_finite_runs)


JSON_VALUES: st.SearchStrategy[object] = st.sampled_from([
    math.nan, math.inf, -math.inf, 1e308, -1, 0, True, False, None, "12", [], {}, 2.5, "w1", 10 ** 20])
FIELDS = ["id", "res", "recorded_start", "recorded_end", "read_bytes", "written_bytes", "nprocs", "io_ranks",
          "measured_read_s", "measured_write_s", "measured_meta_s", "measured_transfer_s"]
WEEK_JOB = {"id": 1, "res": 2, "recorded_start": 0, "recorded_end": 1000, "read_bytes": 2e9, "written_bytes": 4e9,
            "nprocs": 128, "io_ranks": 128, "measured_read_s": 10, "measured_write_s": 20, "measured_meta_s": 5,
            "measured_transfer_s": 30, "subtime": 0, "walltime": 1200, "profile": "1"}


@fuzz_settings(ci_examples=200)
@given(changes=st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=3),
       week=st.one_of(st.just("w1"), BAD_WEEKS, JSON_VALUES), trace=mostly(st.just(True), st.just(False)))
def test_a_weeks_recorded_fields_read_back_or_are_one_clean_line(changes, week, trace):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.json"
        workload = {"nb_res": 16, "jobs": [{**WEEK_JOB, **changes}], "profiles": {},
                    "trace": {"week": week} if trace else "x"}
        path.write_text(json.dumps(workload))

        def usable(result):
            _, name = result
            assert name and "/" not in name and name not in (".", "..")
            job = result[0]["jobs"][0]
            assert all(math.isfinite(job[key]) for key in FIELDS[1:]), job
        outcome("recorded fields", lambda: iomodel.read_week(path), path, accept=usable)


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    from batio.cli import main
    folder = tmp_path_factory.mktemp("fuzz_run") / "run"
    assert main(["run", "--platform", "cluster16_pfs", "--workload", "demo", "--scheduler", "fcfs", "--out",
                 str(folder), "--quiet"]) == 0
    return folder


OUTPUTS = ["out_jobs.csv", "out_machine_states.csv", "out_io.csv", "out_run.json"]


@st.composite
def damages(draw):
    """(file, edit): a file cut at any point, a line repeated or dropped, or a cell replaced."""
    name = draw(st.sampled_from(OUTPUTS))
    kind = draw(st.sampled_from(["cut", "repeat", "drop", "cell"]))
    where = draw(st.floats(0, 1))
    value = draw(EDGE_NUMBERS)

    def edit(text):
        lines = text.splitlines(True)
        at = min(int(where * len(lines)), len(lines) - 1)
        if kind == "cut":
            return text[:int(where * len(text))]
        if kind == "repeat":
            return "".join(lines + lines[at:at + 1])
        if kind == "drop":
            return "".join(lines[:at] + lines[at + 1:])
        cells = lines[at].split(",")
        cells[int(where * (len(cells) - 1))] = value
        return "".join(lines[:at] + [",".join(cells) + ("" if cells[-1].endswith("\n") else "\n")] + lines[at + 1:])
    return name, edit


@fuzz_settings(ci_examples=60)
@given(damage=damages())
def test_a_damaged_run_folder_is_refused_or_whole(run_folder, damage):
    name, edit = damage
    with tempfile.TemporaryDirectory() as folder:
        prefix = Path(folder) / "out"
        for output in OUTPUTS:
            text = (run_folder / output).read_text()
            Path(f"{prefix}{output[3:]}").write_text(edit(text) if output == name else text)
        outcome("damaged run folders", lambda: output_check.check_run(prefix), Path(folder) / name)


COUNT_OPTIONS = [["compare", "--platform", "p", "--workload", "w", "--schedulers", "a", "--out", "o", "--seeds"],
                 ["twin", "s.csv", "--out", "o", "--days"], ["twin", "s.csv", "--out", "o", "--engine-check"],
                 ["run", "--platform", "p", "--workload", "w", "--scheduler", "s", "--out", "o", "--timeout"],
                 ["import", "swf", "t", "--out", "o", "--sample"]]


@fuzz_settings(ci_examples=100)
@given(argv=st.sampled_from(COUNT_OPTIONS), value=st.one_of(EDGE_NUMBERS, GOOD_NUMBERS))
def test_numeric_options_parse_or_are_one_clean_line(argv, value):
    def parsed():
        stderr = io.StringIO()
        try:
            with redirect_stderr(stderr):
                return vars(parser().parse_args([*argv, value]))
        except SystemExit as exit:  # argparse's own refusal ('-inf' reads as an option): one line too
            lines = stderr.getvalue().strip().splitlines()
            assert exit.code == 2 and len(lines) == 1 and argv[-1] in lines[0], stderr.getvalue()
            CASES["numeric options: argparse's one line"] += 1
            return None

    def bounded(args):
        if args is None:
            return
        number = args[argv[-1].lstrip("-").replace("-", "_")]
        assert math.isfinite(number) and abs(number) <= 1e300
    outcome("numeric options", parsed, argv[-1], accept=bounded)
    assert CASES["numeric options"] > 0
