"""The backfill family end to end through the embedded engine."""

import json

from conftest import TINY
import numpy as np
import pandas as pd
import pytest

from batio.cli import main

# On tiny.xml (4 hosts, no message latency), five delay jobs:
#   J1 2 hosts, runs 100 s, walltime 101, t=0    J2 4 hosts, runs 50, walltime 51, t=1
#   J3 2 hosts, runs 50, walltime 51, t=2        J4 1 host, runs 10, walltime 200, t=3
#   J5 1 host,  runs 40, walltime 41, t=4
# FCFS: J2 waits for J1 (100); everything else waits for J2 (150).
# EASY: J2's reservation is at 101 (J1's walltime). J3 fits before it on the two
#   free hosts (start 2). At 52 (J3 ends) J5 can end by 93 < 101: starts at 52;
#   J4 would end after 101 on a host J2 needs: waits. J1 ends at 100: J2 runs
#   100-150, then J4.
# Conservative: the same here (J4's reservation is after J2, J5's at 53, then 52).
JOBS = [(1, 2, 100, 101, 0), (2, 4, 50, 51, 1), (3, 2, 50, 51, 2), (4, 1, 10, 200, 3), (5, 1, 40, 41, 4)]
EXPECTED = {"fcfs": [0, 100, 150, 150, 150], "easy": [0, 100, 2, 150, 52], "conservative": [0, 100, 2, 150, 52]}


def hand_workload(path):
    jobs = [{"id": i, "subtime": t, "walltime": wall, "res": res, "profile": f"d{run}"}
            for i, res, run, wall, t in JOBS]
    profiles = {f"d{run}": {"type": "delay", "delay": run} for _, _, run, _, _ in JOBS}
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))


def run(tmp_path, scheduler, workload, platform=TINY):
    out = tmp_path / scheduler
    assert main(["run", "--platform", str(platform), "--workload", str(workload), "--scheduler", scheduler,
                 "--out", str(out), "--quiet"]) == 0
    return pd.read_csv(out / "out_jobs.csv").set_index("job_id").sort_index()


@pytest.mark.parametrize("scheduler", sorted(EXPECTED))
def test_hand_computed_schedules(tmp_path, scheduler):
    workload = tmp_path / "w.json"
    hand_workload(workload)
    jobs = run(tmp_path, scheduler, workload)
    assert list(jobs["starting_time"]) == pytest.approx(EXPECTED[scheduler], abs=1e-6)
    assert set(jobs["final_state"]) == {"COMPLETED_SUCCESSFULLY"}


def test_easy_matches_pybatsim_easybackfill_on_single_host_jobs(tmp_path):
    """Cross-check with pybatsim's easyBackfill. With one-host jobs its
    contiguous-range allocation cannot fragment, and both give the same start
    times. (With larger jobs they differ: easyBackfill needs contiguous hosts,
    and it shortens only the free spaces at the edges of the head job's future
    range, so it backfills jobs that delay the head, which EASY forbids.)"""
    platform = tmp_path / "p16.xml"
    hosts = "".join(f'<host id="n{i:02d}" speed="1Gf"/>' for i in range(16))
    platform.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                        f'<platform version="4.1"><zone id="z" routing="Full"><host id="master_host" speed="1Gf"/>'
                        f"{hosts}</zone></platform>")
    rng = np.random.default_rng(11)
    subtimes = np.cumsum(rng.exponential(8, 150))
    runtimes = rng.integers(10, 300, 150)
    jobs = [{"id": i, "subtime": round(float(s), 2), "walltime": float(np.ceil(r * rng.uniform(1, 3))),
             "res": 1, "profile": f"p{i}"} for i, (s, r) in enumerate(zip(subtimes, runtimes))]
    profiles = {f"p{i}": {"type": "delay", "delay": float(r)} for i, r in enumerate(runtimes)}
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    ours, theirs = run(tmp_path, "easy", workload, platform), run(tmp_path, "easyBackfill", workload, platform)
    assert (ours["starting_time"] - theirs["starting_time"]).abs().max() < 1e-6
    assert ours["waiting_time"].max() > 100  # the queue did build up
