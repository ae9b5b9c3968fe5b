"""`batio platform`: a generated platform loads with Batsim's roles and runs jobs at hand-computed speeds."""

import json
import shutil

import pandas as pd
import pytest

from batio.cli import main
from batio.errors import InputError
from batio.inputs.platform import classify, read_properties
from batio.platform_builder import contention_value, platform_xml

needs_batsim = pytest.mark.skipif(shutil.which("batsim") is None, reason="no batsim binary on PATH")

# Two writers of 2e9 bytes at t=0 share the 1 GB/s pfs_link: 4 s each; a third one alone at t=10: 2 s.
# 4e9 flops on a 4-core 1 Gf host: 4 s (a Batsim job's parallel task uses one core per host).
JOBS = {"nb_res": 2, "jobs": [
    {"id": "a", "subtime": 0, "walltime": -1, "res": 1, "profile": "write"},
    {"id": "b", "subtime": 0, "walltime": -1, "res": 1, "profile": "write"},
    {"id": "c", "subtime": 10, "walltime": -1, "res": 1, "profile": "write"},
    {"id": "d", "subtime": 20, "walltime": -1, "res": 1, "profile": "compute"}],
    "profiles": {"write": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 2e9},
                 "compute": {"type": "parallel_homogeneous", "cpu": 4e9, "com": 0}}}
MACHINE = ["--nodes", "2", "--cores", "4", "--speed", "1Gf", "--node-link", "10GBps", "--pfs-bandwidth", "1GBps",
           "--latency", "0"]


def generate(tmp_path, capsys, *extra):
    platform = tmp_path / "machine.xml"
    assert main(["platform", *MACHINE, *extra, "--out", str(platform)]) == 0
    assert capsys.readouterr().out.endswith(f"written: {platform}\n")
    return platform


def run(tmp_path, capsys, platform, engine="embedded"):
    workload = tmp_path / "io.json"
    workload.write_text(json.dumps(JOBS))
    out = tmp_path / engine
    assert main(["run", "--engine", engine, "--platform", str(platform), "--workload", str(workload),
                 "--scheduler", "easy", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    return pd.read_csv(out / "out_jobs.csv").set_index("job_id")


def test_generated_platform_has_batsims_roles(tmp_path, capsys):
    platform = generate(tmp_path, capsys)
    properties, _ = read_properties(platform)
    assert sorted(properties) == ["master_host", "node0", "node1", "pfs"]
    assert properties["master_host"] == {}  # no role property: Batsim's -m makes it the master
    assert properties["pfs"] == {"role": "storage", "bandwidth": "1000000000"}
    layout = classify(platform, list(properties))
    assert [r.name for r in layout.compute] == ["node0", "node1"] and [r.name for r in layout.storage] == ["pfs"]
    assert layout.master == "master_host" and layout.storage[0].id == 2


def test_generated_platform_carries_the_properties_the_policies_need(tmp_path, capsys):
    from batio import catalog, requirements
    without, with_memory = generate(tmp_path, capsys), tmp_path / "memory.xml"
    assert main(["platform", *MACHINE, "--memory", "128GB", "--out", str(with_memory)]) == 0
    properties, _ = read_properties(with_memory)
    assert properties["node1"] == {"cores": "4", "link_bandwidth": "1e+10", "memory_bytes": "1.28e+11"}
    workload = {"jobs": [{"id": 1, "subtime": 0, "walltime": 10, "res": 1, "profile": "w", "cores": 1,
                          "file": "F", "file_bytes": 1e9}],
                "profiles": {"w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e9}}}
    lea = catalog.declaration("lea")
    assert requirements.unmet(lea, requirements.InputFacts.of(with_memory, workload), {}) == []
    # Without --memory, the one property the locality policies still lack.
    assert requirements.unmet(lea, requirements.InputFacts.of(without, workload), {}) == [
        "compute hosts lack numeric properties (hosts lacking, of 2): 'memory_bytes' (2)"]
    catios = catalog.declaration("catios-oracle")  # B is pfs's bandwidth property
    assert not any("storage host with property" in reason
                   for reason in requirements.unmet(catios, requirements.InputFacts.of(without, workload), {}))


def test_generated_platform_runs_jobs_at_hand_computed_speeds(tmp_path, capsys):
    jobs = run(tmp_path, capsys, generate(tmp_path, capsys))
    assert jobs["final_state"].eq("COMPLETED_SUCCESSFULLY").all()
    assert jobs["execution_time"].to_dict() == pytest.approx({"a": 4.0, "b": 4.0, "c": 2.0, "d": 4.0}, abs=1e-6)


def test_contention_curve_on_the_pfs_link(tmp_path, capsys):
    # Two clients get 0.5 GB/s in aggregate: 4e9 bytes in 8 s; one alone still 1 GB/s.
    jobs = run(tmp_path, capsys, generate(tmp_path, capsys, "--contention", "1:1GBps 2:0.5GBps"))
    assert jobs["execution_time"].to_dict() == pytest.approx({"a": 8.0, "b": 8.0, "c": 2.0, "d": 4.0}, abs=1e-6)


def test_contention_from_a_measurement_or_a_calibration(tmp_path):
    measured = tmp_path / "ior.csv"
    measured.write_text("clients,GB/s\n1,1.0\n1,1.2\n2,0.5\n")
    assert contention_value(str(measured)) == "1:1.1GBps 2:0.5GBps"  # the median of each client count
    prop = tmp_path / "property.xml"
    prop.write_text('<prop id="batio:contention" value="1:2GBps 4:1GBps"/>\n')
    assert contention_value(str(prop)) == "1:2GBps 4:1GBps"
    assert '<prop id="batio:contention" value="1:2GBps 4:1GBps"/>' in platform_xml(
        2, 1, "1Gf", "1GBps", "1GBps", contention=contention_value(str(prop)))


@pytest.mark.parametrize("kwargs, message", [
    ({"speed": "fast"}, "--speed: speed 'fast' is not a number in ASCII decimal digits and an optional unit (f, "),
    ({"speed": "0x10f"}, "--speed: speed '0x10f' is not a number in ASCII decimal digits"),
    ({"speed": "\u0661Gf"}, "--speed: speed '\u0661Gf' is not a number in ASCII decimal digits"),
    ({"speed": "1e400"}, "--speed: speed '1e400' is out of bounds: expected 0.001f to 1e+30f"),
    ({"pfs_bandwidth": "0GBps"}, "--pfs-bandwidth: bandwidth '0GBps' is out of bounds"),
    ({"pfs_bandwidth": "1e400Bps"}, "--pfs-bandwidth: bandwidth '1e400Bps' is out of bounds"),
    ({"node_link": "10Gf"}, "--node-link: bandwidth '10Gf' has an unknown unit 'Gf' (known: Bps, "),
    ({"nodes": 0}, "--nodes: must be from 1 to 1048576, got 0"),
    ({"nodes": 1099511627776}, "--nodes: must be from 1 to 1048576, got 1099511627776"),
    ({"latency": "-1us"}, "--latency: latency '-1us' is out of bounds: expected 0s to 1e+06s"),
])
def test_bad_description_is_a_one_line_error(kwargs, message):
    args = {"nodes": 2, "cores": 1, "speed": "1Gf", "node_link": "1GBps", "pfs_bandwidth": "1GBps", **kwargs}
    with pytest.raises(InputError) as error:
        platform_xml(**args)
    assert str(error.value).startswith(message)


def test_bad_contention_curve_names_the_property(tmp_path, capsys):
    assert main(["platform", *MACHINE, "--contention", "4:1GBps 2:1GBps", "--out", str(tmp_path / "p.xml")]) == 2
    assert capsys.readouterr().err == ("batio: error: --contention, field 'batio:contention': pfs_link: point "
                                       "'2:1GBps': clients must increase from point to point (after 4)\n")


@needs_batsim
@pytest.mark.batsim
def test_generated_platform_and_imported_trace_run_on_real_batsim(tmp_path, capsys):
    platform = generate(tmp_path, capsys)
    embedded, batsim = run(tmp_path, capsys, platform), run(tmp_path, capsys, platform, "batsim")
    assert batsim["final_state"].eq("COMPLETED_SUCCESSFULLY").all()
    assert batsim["execution_time"].to_dict() == pytest.approx(embedded["execution_time"].to_dict(), abs=1e-6)
    # and an imported trace on a platform generated for its machine
    from conftest import DATA
    workload = tmp_path / "small.json"
    assert main(["import", "swf", str(DATA / "small.swf"), "--cores-per-node", "2", "--out", str(workload)]) == 0
    assert main(["platform", "--nodes", "4", "--speed", "1Gf", "--node-link", "10GBps", "--pfs-bandwidth", "1GBps",
                 "--out", str(tmp_path / "m4.xml")]) == 0
    assert main(["run", "--engine", "batsim", "--platform", str(tmp_path / "m4.xml"), "--workload", str(workload),
                 "--scheduler", "easy", "--out", str(tmp_path / "swf"), "--quiet"]) == 0
    capsys.readouterr()
    jobs = pd.read_csv(tmp_path / "swf" / "out_jobs.csv").set_index("job_id")
    assert jobs.loc[[1, 2, 9, 10], "execution_time"].tolist() == [50, 30, 15, 80]
    assert jobs.loc[3, "final_state"] == "COMPLETED_WALLTIME_REACHED"
