"""Behaviour identity across restructurings: the schedules of the
sweep configs' smallest grid points, re-run and compared with the
fingerprints recorded in tests/data/sweep_fingerprints.json (by
scripts/record_fingerprints.py, on the commit it names). Only the quick
set runs here; ``scripts/record_fingerprints.py --check --all`` runs every
recorded point."""

import json
from pathlib import Path

from conftest import script
import pytest

ROOT = Path(__file__).resolve().parent.parent
record_fingerprints = script("record_fingerprints")

RECORDED = json.loads(record_fingerprints.FINGERPRINTS.read_text())
QUICK = sorted(key for key, entry in RECORDED["points"].items() if entry["quick"])


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("fingerprints")


@pytest.fixture(scope="module")
def planned(out):
    return record_fingerprints.planned_points(out)


def test_the_fingerprint_is_the_schedule(tmp_path):
    """Row order does not matter; a start, a host or a state does."""
    header = "job_id,workload_name,final_state,starting_time,finish_time,allocated_resources,metadata,stretch\n"
    rows = ['2,w0,COMPLETED_SUCCESSFULLY,5,9,0-1,"",1.2\n', '10,w0,COMPLETED_SUCCESSFULLY,0,5,2,"",1\n']

    def fingerprint(*lines):
        path = tmp_path / "out_jobs.csv"
        path.write_text(header + "".join(lines))
        return record_fingerprints.schedule_fingerprint(path)

    reference = fingerprint(*rows)
    assert fingerprint(*reversed(rows)) == reference
    assert fingerprint(rows[0].replace(",1.2", ",1.3"), rows[1]) == reference  # not a schedule column
    for changed in (rows[0].replace(",5,9,", ",6,9,"), rows[0].replace("0-1", "0,2"),
                    rows[0].replace("COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED")):
        assert fingerprint(changed, rows[1]) != reference


def test_the_quick_set_runs_every_policy_file():
    points = RECORDED["points"]
    assert {points[key]["scheduler"] for key in QUICK} == {entry["scheduler"] for entry in points.values()}
    assert sum(points[key]["seconds"] for key in QUICK) <= RECORDED["quick_budget_s"]


@pytest.mark.slow
def test_every_smallest_point_is_recorded(planned):
    """A config, a scheduler entry or a workload added since the recording needs a new recording."""
    assert sorted(planned) == sorted(RECORDED["points"]), (
        "the configs' smallest points changed: record them again (scripts/record_fingerprints.py) "
        "on a commit whose schedules are trusted")
    assert {key: record_fingerprints.scheduler_name(run) for key, run in planned.items()} == {
        key: entry["scheduler"] for key, entry in RECORDED["points"].items()}


@pytest.mark.slow
@pytest.mark.parametrize("key", QUICK)
def test_the_schedule_is_the_recorded_one(planned, out, key):
    fingerprint, _ = record_fingerprints.fingerprint_run(planned[key], out)
    assert fingerprint == RECORDED["points"][key]["sha256"], (
        f"{key}: the schedule differs from the one recorded on {RECORDED['commit']}")
