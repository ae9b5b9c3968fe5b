"""The contention model (batio:contention) against hand-computed job times.

The platforms have no latency and a storage link that is the only
bottleneck, so a transfer of b bytes at r bytes/s takes exactly b / r.
"""

import shutil

from conftest import workload
import pytest

from batio.errors import InputError
from batio.inputs.contention import Curve, parse_curve

CURVE = "1:1e9 2:1.8e9 4:3e9 8:2.4e9"


def platform(disk_props="", storage_props="", disk_policy="SHARED", host_role="storage"):
    """8 compute hosts (10 GB/s each) reach host 'pfs' through link 'disk' (3 GB/s)."""
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
  <cluster id="compute" prefix="n" suffix="" radical="0-7" speed="1Gf" bw="10GBps" lat="0us"/>
  <zone id="mz" routing="Full"><host id="master_host" speed="1Gf"/></zone>
  <zone id="sz" routing="Full">
    <host id="pfs" speed="1Gf"><prop id="role" value="{host_role}"/>{storage_props}</host>
  </zone>
  <link id="disk" bandwidth="3GBps" latency="0" sharing_policy="{disk_policy}">{disk_props}</link>
  <link id="service" bandwidth="10GBps" latency="0"/>
  <zoneRoute src="compute" dst="sz" gw_src="ncompute_router" gw_dst="pfs"><link_ctn id="disk"/></zoneRoute>
  <zoneRoute src="compute" dst="mz" gw_src="ncompute_router" gw_dst="master_host"><link_ctn id="service"/></zoneRoute>
  <zoneRoute src="mz" dst="sz" gw_src="master_host" gw_dst="pfs"><link_ctn id="service"/></zoneRoute>
</zone></platform>
"""


def prop(value, name="batio:contention"):
    return f'<prop id="{name}" value="{value}"/>'


def write_platform(tmp_path, **kwargs):
    path = tmp_path / "platform.xml"
    path.write_text(platform(**kwargs))
    return path


def waves(sizes, bytes_each=6e9, gap=100):
    """A wave of k one-host writers every `gap` seconds, for each k of `sizes`; each job on its own host."""
    jobs, plan = [], {}
    for wave, k in enumerate(sizes):
        for i in range(k):
            job_id = f"k{k}_{i}"
            jobs.append({"id": job_id, "subtime": wave * gap, "walltime": 1000, "res": 1, "profile": "write"})
            plan[f"w0!{job_id}"] = {"alloc": str(i)}
    profiles = {"write": {"type": "parallel_homogeneous_pfs", "bytes_to_write": bytes_each}}
    return workload(jobs, profiles, 8), {"execute": plan}


def aggregate_by_wave(run, bytes_each=6e9):
    jobs = run.jobs
    jobs["k"] = jobs["job_id"].str.extract(r"k(\d+)_")[0].astype(int)
    return {k: k * bytes_each / (wave["finish_time"].max() - wave["starting_time"].min())
            for k, wave in jobs.groupby("k")}


def test_k_writers_reach_the_declared_aggregate(tmp_path, simulate_workload):
    """For every k from 1 to 8, k concurrent writers move C(k) bytes/s together: the table's
    points, and linear interpolation between them (3: 2.4e9, 5: 2.85e9, 6: 2.7e9, 7: 2.55e9)."""
    work, options = waves(range(1, 9))
    run = simulate_workload(work, platform=write_platform(tmp_path, disk_props=prop(CURVE)), options=options)
    expected = {1: 1e9, 2: 1.8e9, 3: 2.4e9, 4: 3e9, 5: 2.85e9, 6: 2.7e9, 7: 2.55e9, 8: 2.4e9}
    measured = aggregate_by_wave(run)
    for k, value in expected.items():
        assert measured[k] == pytest.approx(value, rel=0.01), k
    assert set(run.jobs["final_state"]) == {"COMPLETED_SUCCESSFULLY"}


def test_without_the_property_writers_share_the_link_fairly(tmp_path, simulate_workload):
    """No curve: k writers of 6 GB share the 3 GB/s link (slower than a host's 10 GB/s), 2k s each."""
    work, options = waves([1, 2, 8])
    run = simulate_workload(work, platform=write_platform(tmp_path), options=options)
    assert list(run.jobs["execution_time"]) == [2.0] + [4.0] * 2 + [16.0] * 8


def test_curve_on_a_storage_host_regulates_its_link(tmp_path, simulate_workload):
    """On the host, the curve applies to the narrowest link all compute routes share: 'disk'."""
    work, options = waves([1, 4, 8])
    run = simulate_workload(work, platform=write_platform(tmp_path, storage_props=prop(CURVE)), options=options)
    measured = aggregate_by_wave(run)
    for k, value in {1: 1e9, 4: 3e9, 8: 2.4e9}.items():
        assert measured[k] == pytest.approx(value, rel=1e-6)


def test_bandwidth_follows_the_number_of_writers(tmp_path, simulate_workload):
    """Curve 1:1e9 2:0.5e9. A writes 2e9 from 0, B 0.5e9 from 1: A alone 0-1 (1e9 done); two
    writers share 0.5e9, 0.25e9 each: B ends at 3, when A has 0.5e9 left at 1e9 alone: A ends at 3.5."""
    path = write_platform(tmp_path, disk_props=prop("1:1e9 2:0.5e9"))
    profiles = {"a": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 2e9},
                "b": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 5e8}}
    jobs = [{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "a"},
            {"id": "B", "subtime": 1, "walltime": 100, "res": 1, "profile": "b"}]
    run = simulate_workload(workload(jobs, profiles, 2), platform=path,
                            options={"execute": {"w0!A": {"alloc": "0"}, "w0!B": {"alloc": "1"}}})
    assert run.jobs.loc["B", "finish_time"] == pytest.approx(3.0, abs=1e-6)
    assert run.jobs.loc["A", "finish_time"] == pytest.approx(3.5, abs=1e-6)
    io = run.csv("io")
    assert list(io["write_bytes_per_s"]) == pytest.approx([1e9, 5e8, 1e9, 0])


def test_a_transfer_past_its_walltime_leaves_at_the_kill(tmp_path, simulate_workload):
    """As above, but B's walltime is 1 s: it is killed at 2, then A is alone again:
    A has 1e9 - 0.25e9 left at 2, which take 0.75 s: A ends at 2.75."""
    path = write_platform(tmp_path, disk_props=prop("1:1e9 2:0.5e9"))
    profiles = {"a": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 2e9},
                "b": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 5e8}}
    jobs = [{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "a"},
            {"id": "B", "subtime": 1, "walltime": 1, "res": 1, "profile": "b"}]
    run = simulate_workload(workload(jobs, profiles, 2), platform=path,
                            options={"execute": {"w0!A": {"alloc": "0"}, "w0!B": {"alloc": "1"}}})
    assert run.jobs.loc["B", "final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert run.jobs.loc["A", "finish_time"] == pytest.approx(2.75, abs=1e-6)


def test_a_job_of_n_hosts_is_n_clients_and_reads_use_the_read_curve(tmp_path, simulate_workload):
    """Write curve 1:1e9 4:2e9, read curve 1:3e9 4:0.5e9 on one SHARED link. A 4-host job
    writing 1e9 per host is 4 writing clients: 4e9 bytes at C_write(4) = 2e9, 2 s. A 2-host job
    reading 1e9 per host is 2 reading clients: 2e9 bytes at C_read(2) = 3e9 - 2.5e9 / 3.
    Both at once (from 10) are 6 clients, both curves read at 6 (flat beyond 4): the link
    gets (4 x 2e9 + 2 x 0.5e9) / 6 = 1.5e9, which ptask_L07 splits equally between the two
    transfers: R2's 2e9 end at 10 + 2e9 / 0.75e9 = 12.667; W2, alone again (4 clients: 2e9),
    writes its last 2e9 in 1 s, to 13.667."""
    props = prop("1:1e9 4:2e9", "batio:contention_write") + prop("1:3e9 4:0.5e9", "batio:contention_read")
    path = write_platform(tmp_path, disk_props=props)
    profiles = {"w4": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e9},
                "r2": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e9}}
    jobs = [{"id": "W", "subtime": 0, "walltime": 100, "res": 4, "profile": "w4"},
            {"id": "R", "subtime": 5, "walltime": 100, "res": 2, "profile": "r2"},
            {"id": "W2", "subtime": 10, "walltime": 100, "res": 4, "profile": "w4"},
            {"id": "R2", "subtime": 10, "walltime": 100, "res": 2, "profile": "r2"}]
    plan = {"w0!W": {"alloc": "0-3"}, "w0!R": {"alloc": "4-5"}, "w0!W2": {"alloc": "0-3"}, "w0!R2": {"alloc": "4-5"}}
    run = simulate_workload(workload(jobs, profiles, 8), platform=path, options={"execute": plan})
    assert run.jobs.loc["W", "execution_time"] == pytest.approx(2.0, abs=1e-6)
    assert run.jobs.loc["R", "execution_time"] == pytest.approx(2e9 / (3e9 - 2.5e9 / 3), abs=1e-6)
    assert run.jobs.loc["R2", "finish_time"] == pytest.approx(10 + 2 / 0.75, abs=1e-6)
    assert run.jobs.loc["W2", "finish_time"] == pytest.approx(10 + 2 / 0.75 + 1, abs=1e-6)


def test_curve_interpolates_and_is_flat_outside():
    curve = Curve(((2, 10.0), (4, 6.0)))
    assert [curve(k) for k in (1, 2, 3, 4, 9)] == [10.0, 10.0, 8.0, 6.0, 6.0]


def test_curve_units():
    assert parse_curve("1:4GiBps 3:10GBps, 8:8e9", "p.xml", "batio:contention", "link 'x'").points == \
        ((1, 4 * 2 ** 30), (3, 1e10), (8, 8e9))


@pytest.mark.parametrize("value, problem", [
    ("1:1e9 4:2e9 2:3e9", "clients must increase from point to point (after 4)"),
    ("1:1e9 2:-2e9", "throughput '-2e9' is out of bounds"),
    ("0:1e9", "the number of clients '0' is not a whole number from 1"),
    ("9" * 5000 + ":1e9", "the number of clients '99999"),  # no int() of 5,000 digits
    ("1:1e9 two:2e9", "is not 'clients:throughput'"),
    ("1:1e9 2:3furlongs", "unknown unit 'furlongs'"),
    ("1:1e400", "throughput '1e400' is out of bounds"),  # infinity
    ("1:1e-300", "throughput '1e-300' is out of bounds"),  # SimGrid aborts on it
    ("\u0661:1GBps", "whole number of clients in ASCII digits"),  # an Arabic-Indic one
    ("", "is empty"),
])
def test_bad_points_are_one_line_errors(tmp_path, simulate_workload, value, problem):
    path = write_platform(tmp_path, disk_props=prop(value))
    work, options = waves([1])
    with pytest.raises(InputError) as error:
        simulate_workload(work, platform=path, options=options)
    message = str(error.value)
    assert "\n" not in message and problem in message
    assert message.startswith(f"{path}, field 'batio:contention': link 'disk'")


def test_a_curve_on_a_host_that_is_not_storage_is_an_error(tmp_path, simulate_workload):
    path = tmp_path / "platform.xml"
    path.write_text(platform(disk_props="").replace(
        '<host id="master_host" speed="1Gf"/>',
        f'<host id="master_host" speed="1Gf">{prop(CURVE)}</host>'))
    work, options = waves([1])
    with pytest.raises(InputError, match=r"field 'batio:contention': host 'master_host' is not a storage host"):
        simulate_workload(work, platform=path, options=options)


def test_a_misspelt_property_is_an_error(tmp_path, simulate_workload):
    path = write_platform(tmp_path, disk_props=prop(CURVE, "batio:contention_writes"))
    work, options = waves([1])
    with pytest.raises(InputError, match=r"field 'batio:contention_writes': link 'disk': unknown property"):
        simulate_workload(work, platform=path, options=options)


@pytest.mark.skipif(shutil.which("batsim") is None, reason="no batsim binary on PATH")
def test_real_batsim_ignores_the_curve_and_says_so(tmp_path, caplog):
    # Batsim accepts the property and shares fairly: the same job times as
    # on the platform without it, and batio warns that the loss is not simulated.
    from batio.catalog import platform_path, scheduler_file_and_options, workload_path
    from batio.engines.batsim import run_with_batsim_binary
    from batio.inputs.spec import RunSpec
    scheduler, options = scheduler_file_and_options("iolist")
    times = {}
    for name in ("periodic_rack", "periodic_rack_degrading"):
        spec = RunSpec(str(platform_path(name)), [str(workload_path("periodic_mbn_a06"))], str(scheduler),
                       str(tmp_path / name / "out"), options=options)
        run_with_batsim_binary(spec, wall_timeout_s=300)
        times[name] = (tmp_path / name / "out_jobs.csv").read_text()
    assert times["periodic_rack"] == times["periodic_rack_degrading"]
    assert "declares batio:contention, which Batsim ignores" in caplog.text
