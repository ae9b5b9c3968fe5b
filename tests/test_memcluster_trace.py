"""The 486-node memory-cluster trace (paper 004): converter, shipped slice, platform."""

import json
from pathlib import Path

import pytest

from batio.errors import InputError
from batio.inputs.platform import read_properties
from batio.inputs.workload import load_workload
from batio.platforms.memcluster486 import platform_xml
from batio.workloads.memcluster486 import Slice, convert, dumps, main, trace_lines

REPO = Path(__file__).parent.parent
PLATFORM = REPO / "platforms" / "memcluster486.xml"
SLICE = REPO / "workloads" / "memcluster486_slice.json"
SLICE_WINDOWS = Slice.parse("12,2,1,1")   # the command in the converter's docstring
TRACE = REPO.parent / "shared" / "data" / "memcluster486" / "2022-09-10_V10000_anonymous.txt"
NB_NODES, CORES, NODE_BYTES = 486, 20, 128e9


def line(id, subtime, delay=100, walltime=3600, cores=1, user="u", data=1, data_size=None, workload=0,
         start=None, node=1):
    data_size = cores / 20 * 128 if data_size is None else data_size
    start = subtime if start is None else start
    return (f"{{ id: {id} subtime: {subtime} delay: {delay} walltime: {walltime} cores: {cores} user: {user} "
            f"data: {data} data_size: {data_size:f} workload: {workload} start_time_from_history: {start} "
            f"start_node_from_history: {node} }}")


def trace_file(tmp_path, lines, name="trace.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


# A day in miniature: t0 (first category-0 subtime) = 1000.
DAY = [
    line(1, 100, delay=5000, walltime=9000, cores=20, data=1, workload=-2, start=400, node=1),        # host 0
    line(2, 200, delay=5000, walltime=9000, cores=4, data=2, workload=-2, start=700, node=487),       # host 0 again
    line(3, 300, delay=50, cores=2, data=3, workload=-1, start=2000, node=1250),
    line(4, 1000, delay=0, cores=5, data=4, workload=0, start=1100, node=9),
    line(5, 1500, delay=50, cores=5, data=4, workload=1, start=1600, node=9),
    line(6, 1600, delay=60, cores=1, data=5, workload=1, start=1700, node=10),
    line(7, 2500, delay=70, walltime=60, cores=1, data=6, workload=2, start=2600, node=10),
]


def by_id(workload):
    return {job["id"]: job for job in workload["jobs"]}


def test_a_day_becomes_batsim_jobs_with_replayed_history(tmp_path):
    workload = convert(trace_file(tmp_path, DAY))
    jobs = by_id(workload)
    trace = workload["trace"]
    assert workload["nb_res"] == NB_NODES
    assert trace["origin"] == 400 and trace["cut"] == 1000 - 400
    # -2: submitted at its history start, on the authors' node (n - 1) % 486.
    assert (jobs[1]["subtime"], jobs[1]["history_node"]) == (0, 0)
    assert (jobs[2]["subtime"], jobs[2]["history_node"]) == (300, 0)
    # -1: submitted at the cut, as the authors make it available at t0.
    assert jobs[3]["subtime"] == 600 and "history_node" not in jobs[3]
    assert [jobs[i]["subtime"] for i in (4, 5, 6, 7)] == [600, 1100, 1200, 2100]
    assert [jobs[i]["category"] for i in range(1, 8)] == [-2, -2, -1, 0, 1, 1, 2]
    assert trace["evaluated_window"] == [1500 - 400, 2500 - 400]
    assert trace["jobs_per_category"] == {"-2": 2, "-1": 1, "0": 1, "1": 2, "2": 1}
    assert jobs[2]["file"] == "f2" and jobs[2]["file_bytes"] == 4 / 20 * 128e9
    assert jobs[4]["file"] == jobs[5]["file"] == "f4"
    assert all(job["res"] == 1 for job in jobs.values())
    assert jobs[7]["walltime"] == 60 and workload["profiles"][jobs[7]["profile"]] == {"type": "delay", "delay": 70}


def test_restarted_running_jobs_keep_what_is_left_of_their_run_from_t0(tmp_path):
    workload = convert(trace_file(tmp_path, DAY), running_at_cut="restart")
    jobs = by_id(workload)
    trace = workload["trace"]
    # Time 0 is t0 = 1000; job 1 ran since 400, job 2 since 700.
    assert trace["origin"] == 1000 and trace["cut"] == 0 and trace["running_at_cut"] == "restart"
    assert [(jobs[i]["subtime"], jobs[i]["walltime"], jobs[i]["history_start"]) for i in (1, 2)] == \
        [(0, 9000 - 600, -600), (0, 9000 - 300, -300)]
    assert [workload["profiles"][jobs[i]["profile"]]["delay"] for i in (1, 2)] == [5000 - 600, 5000 - 300]
    assert [jobs[i]["subtime"] for i in range(3, 8)] == [0, 0, 500, 600, 1500]


def test_a_restarted_job_keeps_at_least_one_second(tmp_path):
    old = line(1, 100, delay=300, walltime=500, cores=1, workload=-2, start=400, node=1)
    workload = convert(trace_file(tmp_path, [old] + DAY[3:]), running_at_cut="restart")
    job = by_id(workload)[1]
    assert job["walltime"] == 1 and workload["profiles"][job["profile"]]["delay"] == 1


def test_the_trace_format_writes_the_kept_jobs_with_their_categories(tmp_path):
    path = trace_file(tmp_path, DAY)
    assert trace_lines(path) == path.read_text()
    # Evaluated window [1400, 1760), cut at 1040: the job of 1000 still runs then.
    day = [line(i, 1000 + 200 * i, workload=(0, 0, 1, 1, 2, 2)[i]) for i in range(6)]
    sliced = trace_lines(trace_file(tmp_path, day), Slice.parse("0,0.1,0.1,0.1"))
    assert [text.split()[18] for text in sliced.splitlines()] == ["-2", "0", "1", "1", "2", "2"]


@pytest.mark.skipif(not TRACE.exists(), reason="needs ../shared/data/memcluster486")
def test_the_whole_trace_round_trips_through_the_trace_format():
    assert trace_lines(TRACE) == TRACE.read_text()


def test_oddities_are_decided_and_counted(tmp_path):
    workload = convert(trace_file(tmp_path, DAY))
    jobs = by_id(workload)
    oddities = workload["trace"]["oddities"]
    assert workload["profiles"][jobs[4]["profile"]]["delay"] == 1
    assert oddities["zero_duration_raised_to_1s"] == 1
    assert oddities["duration_above_walltime"] == 1
    # Jobs 1 (20 cores) and 2 (4 cores) both land on host 0 while both run.
    assert oddities["history_starts_without_free_cores"] == 1
    assert oddities["queued_jobs_started_before_cut"] == 0 and oddities["running_jobs_ended_before_cut"] == 0


def test_jobs_of_one_duration_share_a_profile_and_jobs_are_in_submission_order(tmp_path):
    lines = [line(1, 0, workload=0), line(2, 50, delay=100, workload=1), line(3, 50, delay=100, workload=2)]
    workload = convert(trace_file(tmp_path, lines))
    assert list(workload["profiles"]) == ["delay100"]
    assert [job["id"] for job in workload["jobs"]] == [1, 2, 3]


def test_a_slice_derives_the_categories_again_from_the_history(tmp_path):
    # First category-1 subtime 10000: START 1 h, WARMUP 1 h, EVALUATED 1 h, TAIL 1 h
    # -> cut 10000, evaluated [13600, 17200), tail until 20800.
    lines = [
        line(1, 1000, workload=0),                                          # t0 = 1000
        line(2, 5000, delay=8000, walltime=9000, workload=0, start=6000, node=3),           # running at the cut -> -2
        line(3, 5000, delay=100, workload=0, start=6000),                    # ended before -> left out
        line(4, 9000, delay=100, workload=0, start=11000),                   # queued at the cut -> -1
        line(5, 10000, workload=1),                                         # warm-up -> 0
        line(6, 13600, workload=1),                                         # evaluated -> 1
        line(7, 17199, workload=1),                                         # evaluated -> 1
        line(8, 17200, workload=2),                                         # tail -> 2
        line(9, 20800, workload=2),                                         # after the tail -> left out
    ]
    workload = convert(trace_file(tmp_path, lines), Slice(1, 1, 1, 1))
    jobs = by_id(workload)
    assert {i: job["category"] for i, job in jobs.items()} == {2: -2, 4: -1, 5: 0, 6: 1, 7: 1, 8: 2}
    assert workload["trace"]["origin"] == 6000 and workload["trace"]["cut"] == 4000
    assert jobs[2]["subtime"] == 0 and jobs[2]["history_node"] == 2
    assert jobs[4]["subtime"] == 4000
    assert workload["trace"]["evaluated_window"] == [7600, 11200]


def test_a_slice_cannot_start_before_the_trace_is_complete(tmp_path):
    lines = [line(1, 1000, workload=0), line(2, 2000, workload=1)]
    with pytest.raises(InputError, match="--slice.*before the first day"):
        convert(trace_file(tmp_path, lines), Slice(0, 1, 1, 0))


def test_a_slice_must_evaluate_some_job(tmp_path):
    lines = [line(1, 1000, workload=0), line(2, 2000, workload=1)]
    with pytest.raises(InputError, match="--slice.*no job"):
        convert(trace_file(tmp_path, lines), Slice(1, 0, 1, 0))


@pytest.mark.parametrize("text", ["1,2,3", "a,b,c,d", "1,1,0,1", "1,-1,1,1"])
def test_a_bad_slice_is_a_clear_error(text):
    with pytest.raises(InputError, match="--slice"):
        Slice.parse(text)


GOOD = line(2, 50, workload=1)


@pytest.mark.parametrize("bad, field, problem", [
    (GOOD.replace("cores: 1 ", ""), "cores", "missing"),
    (GOOD.replace("delay: 100", "delay: 1e2"), "delay", "not an integer"),
    (GOOD.replace("data_size: 6.400000", "data_size: six"), "data_size", "not a number"),
    (GOOD.replace("data_size: 6.400000", "data_size: nan"), "data_size", "not a finite number"),
    (GOOD.replace("user: u ", "user: "), "user", "no value"),
    (GOOD.replace(" }", " start_node_from_history: 3 }"), "start_node_from_history", "given twice"),
    (GOOD.replace("id: 2", "id: 2 queue: 4"), "queue", "unknown field"),
    (GOOD.replace("walltime:", "walltime"), "walltime", "expected 'name:'"),
    (GOOD.replace("cores: 1", "cores: 21").replace("6.400000", "134.400000"), "cores", "1 to 20 cores"),
    (GOOD.replace("cores: 1", "cores: 0"), "cores", "1 to 20 cores"),
    (GOOD.replace("workload: 1", "workload: 3"), "workload", "category 3"),
    (GOOD.replace("walltime: 3600", "walltime: 0"), "walltime", "not > 0"),
    (GOOD.replace("delay: 100", "delay: -5"), "delay", "negative"),
    (GOOD.replace("start_node_from_history: 1", "start_node_from_history: 0"), "start_node_from_history",
     "numbers nodes from 1"),
    (GOOD.replace("data: 1", "data: 9").replace("6.400000", "0.000000"), "data_size", "not > 0"),
    (GOOD.replace("id: 2", "id: 1"), "id", "already on line 1"),
    (GOOD.replace("cores: 1", "cores: 2").replace("6.400000", "12.800000"), "data_size", "file 1 is 12.8 GB"),
])
def test_a_bad_line_is_an_error_naming_file_line_and_field(tmp_path, bad, field, problem):
    path = trace_file(tmp_path, [line(1, 0), bad])
    with pytest.raises(InputError) as error:
        convert(path)
    message = str(error.value)
    assert message.startswith(f"{path}, line 2, field '{field}': ") and problem in message


def test_a_line_without_braces_is_an_error_naming_the_line(tmp_path):
    path = trace_file(tmp_path, [line(1, 0), GOOD[2:]])
    with pytest.raises(InputError, match=rf"^{path}, line 2: .*between braces"):
        convert(path)


def test_the_command_reports_errors_in_one_line(tmp_path, capsys):
    path = trace_file(tmp_path, [line(1, 0), GOOD.replace("delay: 100", "delay: x")])
    assert main([str(path)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{path}, line 2, field 'delay': 'x' is not an integer")


# --- the shipped platform and slice ------------------------------------------------


def test_the_committed_platform_is_what_the_generator_writes():
    assert PLATFORM.read_text() == platform_xml()


def test_the_platform_has_486_numbered_nodes_with_their_properties_and_one_storage_host():
    properties, _ = read_properties(PLATFORM)
    nodes = sorted(name for name in properties if name.startswith("node"))
    assert nodes == [f"node{i:03d}" for i in range(NB_NODES)]
    assert all(properties[name] == {"cores": "20", "memory_bytes": "128000000000", "link_bandwidth": "100000000"}
               for name in nodes)
    assert properties["pfs"] == {"role": "storage"}
    assert properties["master_host"] == {}  # the master by Batsim's default -m
    assert len(properties) == NB_NODES + 2


def test_a_128_gb_load_takes_1280_s_alone_and_2560_s_when_two_share_a_node(simulate_workload):
    load = {"type": "parallel_homogeneous_pfs", "bytes_to_read": NODE_BYTES, "bytes_to_write": 0, "storage": "pfs"}
    registrations = [{"at": 1, "profile": "load", "profile_def": load,
                      "job": {"id": "dyn!alone", "res": 1, "walltime": -1, "profile": "load"}}]
    registrations += [{"at": 1, "profile": "load", "job": {"id": f"dyn!{name}", "res": 1, "walltime": -1,
                                                           "profile": "load"}} for name in ("a", "b")]
    registrations[-1]["last"] = True
    pfs = NB_NODES   # storage ids follow the compute ones
    execute = {"w0!j": {"alloc": "485"}, "dyn!alone": {"alloc": "0", "storage_mapping": {"pfs": pfs}},
               "dyn!a": {"alloc": "7", "storage_mapping": {"pfs": pfs}},
               "dyn!b": {"alloc": "7", "storage_mapping": {"pfs": pfs}}}
    work = {"nb_res": NB_NODES, "jobs": [{"id": "j", "subtime": 0, "walltime": 10, "res": 1, "profile": "d"}],
            "profiles": {"d": {"type": "delay", "delay": 1}}}
    run = simulate_workload(work, platform=PLATFORM, dynamic_jobs=True, acknowledge_dynamic_jobs=True,
                            compute_sharing=True, options={"execute": execute, "register": registrations})
    times = run.jobs.set_index("job_id")["execution_time"]
    assert times["alone"] == pytest.approx(1280, abs=1e-6)
    assert times["a"] == pytest.approx(2560, abs=1e-6) and times["b"] == pytest.approx(2560, abs=1e-6)


@pytest.fixture(scope="module")
def shipped():
    return json.loads(SLICE.read_text())


def test_the_shipped_slice_is_small_and_loads_as_a_batsim_workload(shipped):
    assert SLICE.stat().st_size < 1_000_000
    workload = load_workload(SLICE, "w0")
    assert len(workload.jobs) == len(shipped["jobs"])
    assert shipped["nb_res"] == NB_NODES


def test_every_shipped_job_fits_a_node_and_has_the_papers_file_size(shipped):
    for job in shipped["jobs"]:
        assert job["res"] == 1 and 1 <= job["cores"] <= CORES
        assert job["file_bytes"] == job["cores"] / CORES * NODE_BYTES   # Section 5.1's Size(File)
        assert shipped["profiles"][job["profile"]]["delay"] > 0
        assert job["walltime"] > 0
        assert ("history_node" in job) == (job["category"] == -2)
        if job["category"] == -2:
            assert 0 <= job["history_node"] < NB_NODES
    sizes: dict = {}
    for job in shipped["jobs"]:
        assert sizes.setdefault(job["file"], job["file_bytes"]) == job["file_bytes"]


def test_the_shipped_slice_keeps_the_structure_of_fig_1(shipped):
    trace = shipped["trace"]
    jobs = shipped["jobs"]
    counts = {category: sum(job["category"] == category for job in jobs) for category in (-2, -1, 0, 1, 2)}
    assert {str(c): n for c, n in counts.items()} == trace["jobs_per_category"]
    assert all(n > 0 for n in counts.values())
    assert [job["subtime"] for job in jobs] == sorted(job["subtime"] for job in jobs)
    start, end = trace["evaluated_window"]
    cut = trace["cut"]
    for job in jobs:
        if job["category"] == -2:
            assert job["subtime"] < cut
        elif job["category"] == -1:
            assert job["subtime"] == cut
        elif job["category"] == 0:
            assert cut <= job["subtime"] < start
        elif job["category"] == 1:
            assert start <= job["subtime"] < end
        else:
            assert job["subtime"] >= end


@pytest.mark.skipif(not TRACE.exists(), reason="the full trace lives in ../shared")
def test_the_shipped_slice_is_what_its_command_writes():
    assert dumps(convert(TRACE, SLICE_WINDOWS)) == SLICE.read_text()


@pytest.mark.skipif(not TRACE.exists(), reason="the full trace lives in ../shared")
def test_the_full_day_has_the_readmes_counts():
    workload = convert(TRACE)
    jobs = workload["jobs"]
    assert len(jobs) == 21_819
    assert sum(job["category"] == 1 for job in jobs) == 1_511
    assert workload["trace"]["jobs_per_category"]["1"] == 1_511
    assert len({job["id"] for job in jobs}) == len(jobs)
    assert all(job["file_bytes"] == job["cores"] / CORES * NODE_BYTES for job in jobs)
