"""The policy CONTRIBUTING.md walks through (tests/schedulers/bandwidthBackfill.py):
on the bundled demo, the jobs running at any instant never need more storage
bandwidth than its option allows, a limit plain conservative backfilling
crosses; and CONTRIBUTING.md shows the file as it is."""

import json
from pathlib import Path
import re

import pandas as pd
import pytest

from batio import catalog
from batio.engines.embedded.run import simulate
from batio.inputs.spec import RunSpec
from batio.jobio import bytes_moved

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "tests" / "schedulers" / "bandwidthBackfill.py"
CAP = 60e6  # bytes/s: above every demo job's own need (59.2 MB/s at most), below what they need together


def needs_of(workload):
    """Job id -> bytes moved over walltime, in bytes/s, from the workload file."""
    profiles = workload["profiles"]
    return {str(job["id"]): sum(bytes_moved(profiles[job["profile"]], profiles, job["res"])) / job["walltime"]
            for job in workload["jobs"]}


def peak_need(jobs, needs):
    """The largest sum of needs over the jobs running at one instant (a job
    runs over [start, finish); the sum only grows when a job starts)."""
    spans = list(zip(jobs["starting_time"], jobs["finish_time"], jobs["job_id"].astype(str)))
    return max(sum(needs[other] for begin, end, other in spans if begin <= start < end) for start, _, _ in spans)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("contributing")
    platform, workload = catalog.platform_path("cluster16_pfs"), catalog.workload_path("demo")
    runs = {}
    for name, scheduler, options in (("capped", POLICY, {"bandwidth": CAP}),
                                     ("plain", *catalog.scheduler_file_and_options("conservative"))):
        simulate(RunSpec(str(platform), [str(workload)], str(scheduler), str(folder / name / "out"), options=options))
        runs[name] = pd.read_csv(folder / name / "out_jobs.csv")
    return runs, needs_of(json.loads(workload.read_text()))


def test_the_running_jobs_never_need_more_than_the_bandwidth_option(demo_runs):
    runs, needs = demo_runs
    capped, plain = runs["capped"], runs["plain"]
    assert max(needs.values()) < CAP
    assert (capped["final_state"] == "COMPLETED_SUCCESSFULLY").all() and len(capped) == len(needs) == 48
    assert peak_need(capped, needs) <= CAP * (1 + 1e-9)
    assert peak_need(plain, needs) > CAP  # without the reservation of bandwidth, the limit is crossed
    assert capped["waiting_time"].mean() > plain["waiting_time"].mean()


def test_contributing_shows_the_policy_file_and_its_length():
    guide = (ROOT / "CONTRIBUTING.md").read_text()
    source = POLICY.read_text()
    shown = re.search(r"```python\n(.*?)```", guide, re.S)
    assert shown and shown.group(1) == source
    assert f"{len(source.splitlines())} lines" in guide
