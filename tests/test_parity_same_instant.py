"""Jobs ending in the same instant reach the scheduler as on real Batsim 4.2.1: grouped in
one call, in Batsim's order. A workload generated here keeps ending jobs by the dozen in one
instant, under EASY and conservative backfilling; the embedded engine's _jobs.csv must be real
Batsim's row for row (skipped without a ``batsim`` binary on PATH), and the case must indeed end
many jobs together (checked without Batsim too)."""

import json
import shutil

import pandas as pd
import pytest

from batio.catalog import scheduler_file_and_options
from batio.engines.batsim import run_with_batsim_binary
from batio.engines.embedded.run import simulate
from batio.inputs.spec import RunSpec
from batio.platform_builder import platform_xml


def same_instant_workload(nb_waves=10):
    """Waves that fill the 16 hosts at once with jobs of equal durations, then jobs submitted when
    they end, so that each decision starts, and each instant ends, many jobs together; some fail,
    some reach their walltime."""
    profiles = {"d60": {"type": "delay", "delay": 60.0}, "d90": {"type": "delay", "delay": 90.0},
                "d100": {"type": "delay", "delay": 100.0}, "fails": {"type": "delay", "delay": 60.0, "ret": 2},
                "long": {"type": "delay", "delay": 400.0}}
    jobs = []
    for wave in range(nb_waves):
        start = wave * 500.0
        for index in range(16):
            name = "fails" if index == 5 else "long" if index == 11 else "d60" if index % 2 else "d90"
            jobs.append({"subtime": start, "res": 1, "profile": name, "walltime": 300.0 if name == "long" else 200.0})
        # Submitted in the instants the wave's jobs end: submissions and ends meet in one scheduler call.
        jobs += [{"subtime": start + 60, "res": 4, "profile": "d100", "walltime": 200.0} for _ in range(4)]
        jobs += [{"subtime": start + 90, "res": 2, "profile": "d60", "walltime": 120.0} for _ in range(3)]
    return {"nb_res": 16, "jobs": [dict(job, id=index) for index, job in enumerate(jobs)], "profiles": profiles}


def run(tmp_path, name, policy, engine="embedded", **options):
    platform, workload = tmp_path / "platform.xml", tmp_path / "workload.json"
    if not platform.exists():
        platform.write_text(platform_xml(16, 1, "1Gf", "10GBps", "1GBps"))
        workload.write_text(json.dumps(same_instant_workload()))
    scheduler, scheduler_options = scheduler_file_and_options(policy)
    prefix = tmp_path / name / "out"
    prefix.parent.mkdir()
    spec = RunSpec(str(platform), [str(workload)], str(scheduler), str(prefix), options=scheduler_options,
                   mode="socket" if engine == "batsim" else "inprocess", **options)
    if engine == "batsim":
        run_with_batsim_binary(spec, wall_timeout_s=600)
    else:
        simulate(spec)
    return f"{prefix}_jobs.csv"


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_the_workload_ends_many_jobs_in_one_instant(tmp_path, policy):
    jobs = pd.read_csv(run(tmp_path, "embedded", policy))
    ends = jobs.finish_time.value_counts()
    assert (ends > 1).sum() >= 20 and ends.max() >= 4, "the workload must end many jobs in one instant"
    assert set(jobs.final_state) == {"COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED"}


@pytest.mark.skipif(shutil.which("batsim") is None, reason="no batsim binary on PATH: real Batsim 4.2.1 not compared")
@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_jobs_ending_together_are_real_batsims(tmp_path, policy):
    """Row for row, in Batsim's order of completion, every number as written."""
    embedded = pd.read_csv(run(tmp_path, "embedded", policy), dtype=str)
    batsim = pd.read_csv(run(tmp_path, "batsim", policy, engine="batsim"), dtype=str)
    columns = ["job_id", "final_state", "allocated_resources", "starting_time", "execution_time", "finish_time"]
    assert len(embedded) == len(batsim) == len(same_instant_workload()["jobs"])
    pd.testing.assert_frame_equal(embedded[columns], batsim[columns])
