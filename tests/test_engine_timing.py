"""Job times against Batsim 4.2's, measured on the same platform and inputs.

shared/reference/batsim4.md: on cluster512_pfs, one host per job, compute
1e10 flops (10 s) then read 1.5e8 bytes from pfs0 (10 s alone at 15 MB/s):
one job takes 20.0 s; two together 30.0 s each (the reads share the storage
link); the second 5 s later, 25.0 s each; 15 s apart, 20.0 s each.
"""

from conftest import workload
import pytest

PROFILES = {
    "compute": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0},
    "read": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1.5e8, "bytes_to_write": 0, "storage": "pfs"},
    "compute_then_read": {"type": "composed", "seq": ["compute", "read"]},
}


def jobs_at(*subtimes):
    return [{"id": name, "subtime": t, "walltime": 1000, "res": 1, "profile": "compute_then_read"}
            for name, t in zip("AB", subtimes)]


def plan(count):
    return {f"w0!{name}": {"alloc": str(i)} for i, name in enumerate("AB"[:count])}


@pytest.mark.parametrize("subtimes, duration", [((0,), 20.0), ((0, 0), 30.0), ((0, 5), 25.0), ((0, 15), 20.0)])
def test_reference_durations(simulate_workload, subtimes, duration):
    run = simulate_workload(workload(jobs_at(*subtimes), PROFILES, 512),
                            options={"execute": plan(len(subtimes))})
    assert list(run.jobs["final_state"]) == ["COMPLETED_SUCCESSFULLY"] * len(subtimes)
    for execution_time in run.jobs["execution_time"]:
        assert execution_time == pytest.approx(duration, abs=0.01)


def test_captured_timeline_of_fillersched(simulate_workload):
    """The captured Batsim run (pybatsim's fillerSched, 5 ms decisions): JOB_SUBMITTED
    at 0.0018, starts at 0.0074 and 0.0124 (decision + one 0.6 ms master message),
    ends at 30.0040 and 30.0090; the first completion reaches the scheduler at
    30.0056 (1.6 ms from a compute host), SIMULATION_ENDS at 30.0168."""
    from batio.catalog import scheduler_file_and_options
    filler, _ = scheduler_file_and_options("fillerSched")
    run = simulate_workload(workload(jobs_at(0, 0), PROFILES, 512), scheduler=filler)
    jobs = run.jobs.sort_values("starting_time")
    assert list(jobs["starting_time"]) == pytest.approx([0.0074, 0.0124], abs=1e-6)
    assert list(jobs["finish_time"]) == pytest.approx([30.0040, 30.0090], abs=1e-4)


def test_resource_ids_follow_batsim_name_order(simulate_workload):
    """Batsim numbers hosts in SimGrid's order, names sorted as strings: a2 is not id 2."""
    run = simulate_workload(workload(jobs_at(0), PROFILES, 512), options={"execute": plan(1)})
    begins = run.log[0]
    names = {int(k): v["name"] for k, v in begins["compute"].items()}
    assert [names[i] for i in range(4)] == ["a0", "a1", "a10", "a100"]
    assert names[112] == "a2"
    assert {int(k): v["name"] for k, v in begins["storage"].items()} == {512: "pfs0"}
    assert begins["storage"]["512"]["properties"] == {"role": "storage"}
    assert begins["compute"]["0"]["properties"] == {"role": ""}
