"""`batio import --darshan`: the bytes of PyDarshan's sample logs become the jobs' file-system phase.

Skipped without PyDarshan (`pip install -e '.[darshan]'`); its wheel ships the logs used here.
"""

from pathlib import Path

import pandas as pd
import pytest

from batio.cli import main
from batio.errors import InputError
from batio.importers import import_trace
from batio.schedulers.jobio import bytes_moved

darshan = pytest.importorskip("darshan")
GRAPH_LOGS = Path(darshan.__file__).parent / "examples" / "darshan-graph"
# Jobs 71317 (1 host) and 71326 (2 hosts) have logs among the six of darshan-graph; job 99 has none.
SWF = ("71317 0 0 5 1 -1 -1 1 9 -1 1 1 1 -1 -1 -1 -1 -1\n"
       "71326 2 0 3 2 -1 -1 2 9 -1 1 1 1 -1 -1 -1 -1 -1\n"
       "99 4 0 5 1 -1 -1 1 9 -1 1 1 1 -1 -1 -1 -1 -1\n")


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "jobs.swf"
    path.write_text(SWF)
    return path


def test_darshan_bytes_become_the_profile_the_io_aware_policies_read(trace):
    workload = import_trace("swf", trace, darshan=[GRAPH_LOGS])
    jobs = {job["id"]: job for job in workload["jobs"]}
    profiles = workload["profiles"]
    # 71317 (./app_read, 1 process): POSIX read 10,000 bytes; STDIO wrote 348.
    # 71326 (./app_readAB_writeC, 4 processes): POSIX read 20,000 and wrote 40; STDIO wrote 1,064.
    assert (jobs[71317]["darshan_bytes_read"], jobs[71317]["darshan_bytes_written"]) == (10000, 348)
    assert (jobs[71326]["darshan_bytes_read"], jobs[71326]["darshan_bytes_written"]) == (20000, 1104)
    assert bytes_moved(profiles[jobs[71317]["profile"]], profiles, 1) == (10000, 348)
    assert bytes_moved(profiles[jobs[71326]["profile"]], profiles, 2) == (20000, 1104)  # 10,000 and 552 per host
    # computation first: the run time minus Darshan's I/O time of the slowest rank, then the transfer
    composed = profiles[jobs[71326]["profile"]]
    assert composed["type"] == "composed" and profiles[composed["seq"][0]]["delay"] == pytest.approx(
        3 - jobs[71326]["darshan_io_seconds"])
    assert profiles[composed["seq"][1]] == {"type": "parallel_homogeneous_pfs", "storage": "pfs",
                                            "bytes_to_read": 10000, "bytes_to_write": 552}
    assert jobs[99]["profile"] == "delay5" and "darshan_bytes_read" not in jobs[99]  # no log: no I/O
    block = workload["trace"]["darshan"]
    assert {key: block[key] for key in ("logs", "logs_matched", "logs_unmatched", "jobs_with_io", "jobs_without_log",
                                        "bytes_read", "bytes_written")} == {
        "logs": 6, "logs_matched": 2, "logs_unmatched": 4, "jobs_with_io": 2, "jobs_without_log": 1,
        "bytes_read": 30000, "bytes_written": 1452}
    assert block["unmatched_job_ids"] == ["71296", "71303", "71310", "71344"]


def test_darshan_io_runs_at_the_platforms_file_system_speed(trace, tmp_path, capsys):
    workload, platform = tmp_path / "io.json", tmp_path / "slow.xml"
    assert main(["import", "swf", str(trace), "--darshan", str(GRAPH_LOGS), "--out", str(workload)]) == 0
    assert "darshan: 6 logs, 2 matched; 2 jobs with I/O (30000 bytes read, 1452 written)" in capsys.readouterr().out
    assert main(["platform", "--nodes", "2", "--speed", "1Gf", "--node-link", "1GBps", "--pfs-bandwidth", "10000",
                 "--latency", "0", "--out", str(platform)]) == 0
    assert main(["run", "--platform", str(platform), "--workload", str(workload), "--scheduler", "fcfs",
                 "--out", str(tmp_path / "run"), "--quiet"]) == 0
    capsys.readouterr()
    jobs = pd.read_csv(tmp_path / "run" / "out_jobs.csv").set_index("job_id")
    io_71317 = (10000 + 348) / 10000            # reads and writes share pfs_link at 10,000 B/s
    io_71326 = 2 * (10000 + 552) / 10000        # two hosts
    assert jobs.loc[71317, "execution_time"] == pytest.approx(5 - 0.000087 + io_71317, abs=2e-6)
    assert jobs.loc[71326, "execution_time"] == pytest.approx(3 - 0.005747 + io_71326, abs=2e-6)
    assert jobs.loc[99, "execution_time"] == 5


def test_a_file_that_is_not_a_darshan_log_is_a_one_line_error(trace, tmp_path):
    bogus = tmp_path / "bogus.darshan"
    bogus.write_text("not a log")
    with pytest.raises(InputError, match=r"bogus.darshan: not a Darshan log PyDarshan can read"):
        import_trace("swf", trace, darshan=[bogus])
    with pytest.raises(InputError, match=r"field '--darshan': no such Darshan log or folder"):
        import_trace("swf", trace, darshan=[tmp_path / "missing"])
