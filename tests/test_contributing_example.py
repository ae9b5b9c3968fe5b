"""The policy CONTRIBUTING.md walks through (tests/schedulers/bandwidth/):
its folder, put among batio's schedulers, is all it takes for the catalog to
serve its name; on the bundled demo, the jobs running at any instant never
need more storage bandwidth than its option allows, a limit plain
conservative backfilling crosses; and CONTRIBUTING.md shows its files as
they are."""

import json
from pathlib import Path
import re
import sys

import pandas as pd
import pytest

from batio import catalog
from batio.cli import main
import batio.schedulers
from batio.schedulers.jobio import bytes_moved

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "tests" / "schedulers" / "bandwidth"
POLICY = PAPER / "bandwidthBackfill.py"
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
def paper_folder():
    """The catalog as if the example's folder sat in schedulers/: it is found, not named anywhere."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batio.schedulers, "__path__", [*batio.schedulers.__path__, str(PAPER.parent)])
        for table, value in zip(("SCHEDULERS", "BUNDLED_INPUTS", "BUNDLED_INPUTS_OF_NAME"), catalog.discover()):
            patch.setattr(catalog, table, value)
        yield
    sys.modules.pop(f"batio.schedulers.{PAPER.name}")


@pytest.fixture(scope="module")
def demo_runs(paper_folder, tmp_path_factory):
    """The example by its catalog name and conservative backfilling, through `batio run`."""
    folder = tmp_path_factory.mktemp("contributing")
    platform, workload = catalog.bundled_inputs("bandwidth")
    runs = {}
    for name in ("bandwidth", "conservative"):
        assert main(["run", "--platform", platform, "--workload", workload, "--scheduler", name,
                     "--out", str(folder / name), "--quiet"]) == 0
        runs[name] = pd.read_csv(folder / name / "out_jobs.csv")
    return runs, needs_of(json.loads(catalog.workload_path(workload).read_text()))


def test_the_catalog_serves_the_folders_names(paper_folder):
    path, options = catalog.scheduler_file_and_options("bandwidth")
    assert path == POLICY and options == {"bandwidth": CAP}
    assert catalog.bundled_inputs("bandwidth") == ("cluster16_pfs", "demo")


def test_the_running_jobs_never_need_more_than_the_bandwidth_option(demo_runs):
    runs, needs = demo_runs
    capped, plain = runs["bandwidth"], runs["conservative"]
    assert max(needs.values()) < CAP
    assert (capped["final_state"] == "COMPLETED_SUCCESSFULLY").all() and len(capped) == len(needs) == 48
    assert peak_need(capped, needs) <= CAP * (1 + 1e-9)
    assert peak_need(plain, needs) > CAP  # without the reservation of bandwidth, the limit is crossed
    assert capped["waiting_time"].mean() > plain["waiting_time"].mean()


def test_contributing_shows_the_folders_files_and_the_policys_length():
    guide = (ROOT / "CONTRIBUTING.md").read_text()
    source = POLICY.read_text()
    assert re.findall(r"```python\n(.*?)```", guide, re.S) == [source, (PAPER / "__init__.py").read_text()]
    assert f"{len(source.splitlines())} lines" in guide
