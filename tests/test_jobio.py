"""A job's I/O as its profile describes it, and storage mapping by host name."""

import json

import pandas as pd
import pytest

from batio.cli import main
from batio.schedulers.jobio import bytes_moved, delay_seconds, storage_labels, storage_mapping_by_name

PROFILES = {
    "c": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
    "r": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 2e9, "storage": "ost1"},
    "w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e9, "storage": "ost0"},
    "s": {"type": "data_staging", "nb_bytes": 5e8, "from": "ost0", "to": "archive"},
    "job": {"type": "composed", "seq": ["r", "c", "w"], "repeat": 3},
    "d": {"type": "delay", "delay": 7},
    "outer": {"type": "composed", "seq": ["job", "s", "d"], "repeat": 2},
}


def test_bytes_and_labels_of_nested_composed_profiles():
    assert storage_labels(PROFILES["outer"], PROFILES) == ["ost1", "ost0", "archive"]
    # 2 x (3 x (2e9 read + 1e9 written) on 4 hosts + 5e8 staged)
    assert bytes_moved(PROFILES["outer"], PROFILES, 4) == (2 * (3 * 4 * 2e9 + 5e8), 2 * (3 * 4 * 1e9 + 5e8))
    # The delay runs twice; the computation's time is the hosts', not the profile's.
    assert delay_seconds(PROFILES["outer"], PROFILES) == 14


def test_mapping_keeps_only_labels_naming_storage_hosts():
    storage = {8: {"id": 8, "name": "ost0"}, 9: {"id": 9, "name": "ost1"}}
    assert storage_mapping_by_name(["ost1", "pfs", "ost0"], storage) == {"ost1": 9, "ost0": 8}


def test_backfill_maps_storage_labels_on_a_two_ost_platform(tmp_path, capsys):
    platform = tmp_path / "p.xml"
    platform.write_text("""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
  <host id="master_host" speed="1Gf"/><host id="n0" speed="1Gf"/>
  <host id="ost0" speed="1Gf"><prop id="role" value="storage"/></host>
  <host id="ost1" speed="1Gf"><prop id="role" value="storage"/></host>
  <link id="l0" bandwidth="100MBps" latency="0"/><link id="l1" bandwidth="200MBps" latency="0"/>
  <route src="n0" dst="ost0"><link_ctn id="l0"/></route><route src="n0" dst="ost1"><link_ctn id="l1"/></route>
</zone></platform>""")
    work = {"nb_res": 1, "profiles": {k: PROFILES[k] for k in ("r", "c", "w")} | {
        "job": {"type": "composed", "seq": ["r", "c", "w"]}},
        "jobs": [{"id": 1, "subtime": 0, "walltime": 100, "res": 1, "profile": "job"}]}
    (tmp_path / "w.json").write_text(json.dumps(work))
    assert main(["run", "--platform", str(platform), "--workload", str(tmp_path / "w.json"), "--scheduler",
                 "easy", "--out", str(tmp_path / "out"), "--quiet"]) == 0
    jobs = pd.read_csv(tmp_path / "out" / "out_jobs.csv")
    # 2e9 read from ost1 at 200 MB/s (10 s), 1 s of compute, 1e9 written to ost0 at 100 MB/s (10 s)
    assert jobs["execution_time"][0] == pytest.approx(21.0, abs=1e-6)
