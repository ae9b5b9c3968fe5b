"""`batio run` end to end, with bundled names, pybatsim's own schedulers and the summary."""

from conftest import TINY
import pandas as pd
import pytest

from batio.cli import main
from batio.report.metrics import summarize


def three_delay_jobs(folder):
    workload = folder / "w.json"
    workload.write_text('{"nb_res": 4, "jobs": ['
                        '{"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "d"},'
                        '{"id": 2, "subtime": 1, "walltime": 100, "res": 4, "profile": "d"},'
                        '{"id": 3, "subtime": 2, "walltime": 50, "res": 1, "profile": "d"}],'
                        '"profiles": {"d": {"type": "delay", "delay": 20}}}')
    return workload


def test_list_names_bundled_inputs(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "cluster16_pfs" in out and "demo" in out and "easyBackfill" in out and "conservative" in out


@pytest.mark.parametrize("scheduler, platform", [("fillerSched", "cluster16_pfs"), ("easyBackfill", str(TINY))])
def test_pybatsim_reference_schedulers_run(tmp_path, capsys, scheduler, platform):
    workload = three_delay_jobs(tmp_path)
    code = main(["run", "--platform", platform, "--workload", str(workload), "--scheduler", scheduler,
                 "--out", str(tmp_path / "out"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    jobs = pd.read_csv(tmp_path / "out" / "out_jobs.csv")
    assert list(jobs["final_state"]) == ["COMPLETED_SUCCESSFULLY"] * 3
    assert "makespan" in out and "utilisation" in out


def test_summary_metrics_by_hand(tmp_path):
    """Three delay jobs on tiny.xml (no message latency): FCFS starts job 1 (2 hosts, 20 s) at 0,
    job 2 (4 hosts) waits until 20 and ends at 40; job 3 (1 host, submitted at 2) would fit
    at 2 but FCFS stops at job 2, so it runs 40-60."""
    workload = three_delay_jobs(tmp_path)
    assert main(["run", "--platform", str(TINY), "--workload", str(workload), "--scheduler", "fcfs",
                 "--out", str(tmp_path / "out"), "--quiet"]) == 0
    summary = summarize(tmp_path / "out" / "out")
    assert summary["makespan"] == pytest.approx(60, abs=1e-6)
    assert summary["mean_wait"] == pytest.approx((0 + 19 + 38) / 3, abs=1e-6)
    assert summary["mean_slowdown"] == pytest.approx((1 + 39 / 20 + 58 / 20) / 3, abs=1e-6)
    assert summary["utilisation"] == pytest.approx((2 * 20 + 4 * 20 + 1 * 20) / (4 * 60), abs=1e-6)
    assert summary["bytes_moved"] == 0


def test_a_scheduler_name_turns_on_the_batsim_features_it_needs():
    from batio.cli import parser, resolved_run
    common = ["run", "--platform", "memcluster486", "--workload", "memcluster486_slice", "--out", "o"]
    lea = resolved_run(parser().parse_args(common + ["--scheduler", "lea"])).spec
    assert lea.dynamic_jobs and lea.compute_sharing and not lea.acknowledge_dynamic_jobs
    easy = resolved_run(parser().parse_args(common + ["--scheduler", "easy"])).spec
    assert not easy.dynamic_jobs and not easy.compute_sharing


def test_batsched_names_are_accepted_by_run_and_need_real_batsim(tmp_path, capsys, monkeypatch):
    workload = three_delay_jobs(tmp_path)
    common = ["run", "--platform", str(TINY), "--workload", str(workload), "--scheduler", "batsched:easy_bf",
              "--out", str(tmp_path / "out"), "--quiet"]
    assert main(common) == 2
    assert "batsched:easy_bf is batsched's C++ scheduler: it runs only against real Batsim" in capsys.readouterr().err
    monkeypatch.setenv("PATH", str(tmp_path))  # neither batsim nor batsched here
    assert main(common + ["--engine", "batsim"]) == 2
    err = capsys.readouterr().err
    assert "unknown scheduler" not in err and "needs a `batsim` binary on PATH" in err
