"""Delay jobs ending from timers (engines/embedded/timers.py) give the job times of
delay jobs sleeping in SimGrid's model, as in Batsim, to the last digit written:
on a workload whose jobs keep ending in the same instant, under EASY and
conservative backfilling, against the engine's reference path and against real
Batsim 4.2.1 when a ``batsim`` binary is on PATH."""

import filecmp
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
    """Waves that fill the 16 hosts at once with jobs of equal durations, then jobs queued behind
    them, so that each decision starts, and each instant ends, many jobs together; some fail,
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
        jobs += [{"subtime": start + 1, "res": 4, "profile": "d100", "walltime": 200.0} for _ in range(4)]
        jobs += [{"subtime": start + 2, "res": 2, "profile": "d60", "walltime": 120.0} for _ in range(3)]
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
        run_with_batsim_binary(spec, timeout_s=600)
    else:
        simulate(spec)
    return f"{prefix}_jobs.csv"


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_delay_ends_from_timers_are_the_model_sleeps_to_the_last_digit(tmp_path, policy):
    fast = run(tmp_path, "timers", policy)
    reference = run(tmp_path, "model", policy, delays_in_model=True)
    ends = pd.read_csv(fast).finish_time.value_counts()
    assert (ends > 1).sum() >= 20 and ends.max() >= 4, "the workload must end many jobs in one instant"
    assert set(pd.read_csv(fast).final_state) == {"COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED",
                                                  "COMPLETED_WALLTIME_REACHED"}
    assert filecmp.cmp(fast, reference, shallow=False)
    assert filecmp.cmp(fast.replace("_jobs", "_machine_states"), reference.replace("_jobs", "_machine_states"),
                       shallow=False)


@pytest.mark.skipif(shutil.which("batsim") is None, reason="no batsim binary on PATH: real Batsim 4.2.1 not compared")
@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_delay_ends_from_timers_are_real_batsims(tmp_path, policy):
    """Row for row, in Batsim's order of completion, every number as written."""
    fast = pd.read_csv(run(tmp_path, "timers", policy), dtype=str)
    batsim = pd.read_csv(run(tmp_path, "batsim", policy, engine="batsim"), dtype=str)
    columns = ["job_id", "final_state", "allocated_resources", "starting_time", "execution_time", "finish_time"]
    assert len(fast) == len(batsim) == len(same_instant_workload()["jobs"])
    pd.testing.assert_frame_equal(fast[columns], batsim[columns])
