"""The per-second I/O demand format (batio.schedulers.catios.iodemand), the Batsim profiles that
move it through the storage link, and the CATIOS workload generator."""

import json
from pathlib import Path

from batsim.batsim import Job
from conftest import workload
import numpy as np
import pytest

from batio.errors import InputError
from batio.inputs.platform import classify, read_properties
from batio.schedulers.catios.iodemand import command_of, decode, demand_of, encode, phase_profiles
from batio.schedulers.jobio import bytes_moved
from batio.workloads import catios

ROOT = Path(__file__).parent.parent
PLATFORM = ROOT / "platforms" / "catios_cluster.xml"


def profiles_of(name, demand, nodes, chunk_seconds=5, reads=None):
    return phase_profiles(name, np.asarray(demand, float), nodes, node_bandwidth=catios.NODE_BW,
                          storage_bandwidth=catios.STORAGE_BW, latency=catios.LATENCY, reads=reads,
                          chunk_seconds=chunk_seconds)


def run_together(simulate_workload, demands, nodes=4, chunk_seconds=5):
    """Start jobs with these demands at t = 0 on disjoint hosts; their execution times."""
    profiles, jobs, plan = {}, [], {}
    for number, demand in enumerate(demands):
        profiles.update(profiles_of(f"j{number}", demand, nodes, chunk_seconds))
        jobs.append({"id": number, "subtime": 0, "walltime": 10_000, "res": nodes, "profile": f"j{number}"})
        plan[f"w0!{number}"] = {"alloc": f"{number * nodes}-{number * nodes + nodes - 1}"}
    run = simulate_workload(workload(jobs, profiles, catios.NB_NODES), platform=PLATFORM,
                            options={"execute": plan})
    return run, [run.jobs.loc[number, "execution_time"] for number in range(len(demands))]


def test_encode_merges_equal_seconds_and_decode_restores_them():
    demand = np.array([0, 0, 5e8, 5e8, 5e8, 0, 1.5])
    runs = encode(demand)
    assert runs == [[2, 0], [3, 500000000], [1, 0], [1, 1.5]]
    assert decode(runs).dtype == np.float64
    np.testing.assert_array_equal(decode(runs), demand)
    assert encode(np.zeros(0)) == [] and decode([]).size == 0


@pytest.mark.parametrize("runs, problem", [
    ([[2, 1e9], [1.5, 0]], "seconds must be a positive integer"),
    ([[0, 1e9]], "seconds must be a positive integer"),
    ([[3, -1]], "bytes_per_second must be a finite number >= 0"),
    ([[3, "fast"]], "bytes_per_second"),
    ([[3]], "expected [seconds, bytes_per_second]"),
    ([], "non-empty list"),
])
def test_demand_of_names_job_and_field_of_malformed_demands(runs, problem):
    with pytest.raises(InputError) as error:
        demand_of({"id": 7, "io_demand": runs})
    assert "job '7'" in str(error.value) and "field 'io_demand'" in str(error.value)
    assert problem in str(error.value)


def test_demand_and_command_of_a_pybatsim_job():
    fields = {"id": "w0!3", "subtime": 0, "res": 2, "profile": "p",
              "io_demand": [[4, 0], [2, 3e9]], "command": "aprun -n 64 ./wrf.exe"}
    job = Job.from_json_dict(fields)
    np.testing.assert_array_equal(demand_of(job), [0, 0, 0, 0, 3e9, 3e9])
    assert command_of(job) == "aprun -n 64 ./wrf.exe"
    bare = Job.from_json_dict({key: fields[key] for key in ("id", "subtime", "res", "profile")})
    with pytest.raises(InputError, match=r"job 'w0!3', field 'io_demand': missing"):
        demand_of(bare)
    with pytest.raises(InputError, match=r"job 'w0!3', field 'command'"):
        command_of(bare)


def test_profiles_move_exactly_the_demand():
    demand = decode([[3, 0], [12, 2e9], [4, 0], [7, 5e8], [2, 1e9]])
    reads = np.arange(demand.size) < 15
    profiles = profiles_of("job", demand, nodes=4, reads=reads)
    read, written = bytes_moved(profiles["job"], profiles, 4)
    assert read == pytest.approx(12 * 2e9)
    assert written == pytest.approx(7 * 5e8 + 2 * 1e9)


def test_demand_above_what_the_nodes_move_alone_is_refused():
    with pytest.raises(ValueError, match="above what the platform gives"):
        profiles_of("job", [2.5e9], nodes=2)       # 2 nodes move 2 GB/s alone


def test_a_job_alone_lasts_its_demand_length_and_sees_the_bandwidth(simulate_workload):
    demand = decode([[3, 0], [12, 3e9], [4, 0], [7, 1e9], [1, 3.5e9]])   # n = 27 s, phases not multiples of 5
    run, (alone,) = run_together(simulate_workload, [demand])
    assert alone == pytest.approx(27, rel=1e-3)
    storage = next(event["storage"] for event in run.log if event["event"] == "begins")
    assert [resource["properties"]["bandwidth"] for resource in storage.values()] == ["6e9"]


def test_overlapping_bursts_beyond_the_bandwidth_slow_both_jobs(simulate_workload):
    # Two 4-node jobs at 3 GB/s for 10 s: each 5 s chunk moves 15 GB, 3.75 s
    # alone at 4 GB/s then a 1.25 s delay. Together the 6 GB/s storage link
    # gives each 3 GB/s: 5 s + 1.25 s per chunk, 12.5 s in all.
    _, times = run_together(simulate_workload, [np.full(10, 3e9)] * 2)
    assert times == pytest.approx([12.5, 12.5], rel=1e-3)


def test_complementary_bursts_do_not_slow_each_other(simulate_workload):
    burst, quiet = np.full(10, 3e9), np.zeros(10)
    _, times = run_together(simulate_workload, [np.r_[burst, quiet], np.r_[quiet, burst]])
    assert times == pytest.approx([20, 20], rel=1e-3)


def test_generator_constants_are_the_platforms():
    properties, _ = read_properties(PLATFORM)
    compute = [properties[host.name] for host in classify(PLATFORM, list(properties)).compute]
    assert len(compute) == catios.NB_NODES
    assert {float(props["node_bandwidth"]) for props in compute} == {catios.NODE_BW}
    assert float(properties["pfs"]["bandwidth"]) == catios.STORAGE_BW


def test_generator_is_deterministic_per_seed():
    assert catios.catios_workload(seed=4, nb_jobs=30) == catios.catios_workload(seed=4, nb_jobs=30)
    assert catios.catios_workload(seed=4, nb_jobs=30) != catios.catios_workload(seed=5, nb_jobs=30)


def test_generated_jobs_carry_valid_demand_command_and_profile():
    work = catios.catios_workload(seed=3, nb_jobs=120)
    families = {job["family"] for job in work["jobs"]}
    assert families == {family.name for family in catios.FAMILIES}
    for job in work["jobs"]:
        demand = demand_of(job)
        assert command_of(job).startswith("aprun ")
        assert 1 <= job["res"] <= catios.NB_NODES
        assert job["walltime"] >= 2 * demand.size
        assert demand.max() <= 0.9 * min(job["res"] * catios.NODE_BW, catios.STORAGE_BW)
        assert sum(bytes_moved(work["profiles"][job["profile"]], work["profiles"], job["res"])) == \
            pytest.approx(demand.sum())
    assert [job["subtime"] for job in work["jobs"]] == sorted(job["subtime"] for job in work["jobs"])


def test_one_run_of_each_family_alone_lasts_its_demand_length(simulate_workload):
    work = catios.catios_workload(seed=1, nb_jobs=60)
    firsts: dict = {}
    for job in work["jobs"]:
        firsts.setdefault(job["family"], job)
    jobs, start = [], 0.0
    for job in firsts.values():
        jobs.append(dict(job, subtime=start))
        start += len(demand_of(job)) + 10      # one at a time
    run = simulate_workload(dict(work, jobs=jobs), platform=PLATFORM, scheduler=ROOT / "schedulers" / "backfill.py",
                            options={"backfill_max": 0})
    for job in jobs:
        assert run.jobs.loc[job["id"], "execution_time"] == pytest.approx(len(demand_of(job)), rel=0.01)


@pytest.mark.parametrize("path, seed, jobs, name", [
    ("catios_bw.json", 1, 200, "catios_bw"),
    ("catios_bw_history.json", 2, 400, "catios_bw_history"),
])
def test_bundled_workloads_are_the_generators_output(path, seed, jobs, name):
    bundled = json.loads((ROOT / "workloads" / path).read_text())
    assert bundled == json.loads(json.dumps(catios.catios_workload(seed=seed, nb_jobs=jobs, name=name)))


def test_io_scale_lengthens_bursts_and_raises_stream_rates():
    # A burst given by its size keeps its rate and lasts io_scale times longer.
    for io_scale, seconds in ((1.0, 4), (2.0, 8), (2.5, 10)):
        line = catios.Timeline(np.random.default_rng(0), 4, 100, io_scale)
        line.burst(10, 4e9, 1e9)
        np.testing.assert_array_equal(np.flatnonzero(line.demand), np.arange(10, 10 + seconds))
        assert set(line.demand[line.demand > 0]) == {1e9}
    # A phase given by its duration moves io_scale times the rate (same draw, on the 50 MB/s grid).
    plain = catios.Timeline(np.random.default_rng(7), 2, 100).stream_rate(0.1)
    doubled = catios.Timeline(np.random.default_rng(7), 2, 100, 2.0).stream_rate(0.1)
    assert abs(doubled - 2 * plain) <= catios.RATE_STEP


def test_io_scale_changes_the_bytes_only():
    plain = catios.catios_workload(seed=6, nb_jobs=60)
    intense = catios.catios_workload(seed=6, nb_jobs=60, io_scale=3)
    same = ("id", "subtime", "walltime", "res", "command", "family")
    assert [[job[key] for key in same] for job in intense["jobs"]] == \
        [[job[key] for key in same] for job in plain["jobs"]]
    before_bytes, after_bytes = [], []
    for before, after in zip(plain["jobs"], intense["jobs"]):
        D, D3 = demand_of(before), demand_of(after)
        assert D3.size == D.size
        assert D3.max() <= 0.9 * min(after["res"] * catios.NODE_BW, catios.STORAGE_BW)
        assert sum(bytes_moved(intense["profiles"][after["profile"]], intense["profiles"], after["res"])) == \
            pytest.approx(D3.sum())
        before_bytes.append(D.sum())
        after_bytes.append(D3.sum())
    # No job moves less; caps (rate ceiling, run end) keep the total below x3.
    assert all(after >= before for before, after in zip(before_bytes, after_bytes))
    assert 1.5 < sum(after_bytes) / sum(before_bytes) <= 3


@pytest.mark.parametrize("io_scale", [0, -1, float("nan"), float("inf")])
def test_io_scale_must_be_positive_and_finite(io_scale):
    with pytest.raises(ValueError, match="io_scale must be a finite number > 0"):
        catios.catios_workload(seed=1, nb_jobs=5, io_scale=io_scale)
