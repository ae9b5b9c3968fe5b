"""evalys (the Batsim ecosystem's analysis library) reads batio's out_jobs.csv and draws its Gantt chart.

Skipped without evalys (`pip install -e '.[ecosystem]'`).
"""

from conftest import TINY, workload
import pytest

evalys_jobset = pytest.importorskip("evalys.jobset")


# evalys 4.0.7 renames a column with pandas' deprecated inplace=True: its warning, not batio's.
@pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning")
def test_evalys_reads_out_jobs_and_draws_the_gantt_chart(simulate_workload, tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # Job "a" on hosts 0-1 from 0 to 10, "b" on host 3 from 2 to 7 with string metadata (as the locality
    # policies write), "r" rejected: batio leaves its times and allocation empty, as Batsim does.
    run = simulate_workload(
        workload([{"id": "a", "subtime": 0, "res": 2, "profile": "d10"},
                  {"id": "b", "subtime": 2, "res": 1, "profile": "d5"},
                  {"id": "r", "subtime": 3, "res": 1, "profile": "d5"}],
                 {"d10": {"type": "delay", "delay": 10}, "d5": {"type": "delay", "delay": 5}}, nb_res=4),
        platform=TINY, options={"execute": {"w0!a": {"alloc": "0-1"}, "w0!b": {"alloc": "3"}}, "reject": ["w0!r"],
                                "metadata": {"w0!b": "node=3;case=1"}})
    jobs = evalys_jobset.JobSet.from_csv(f"{run.prefix}_jobs.csv")
    frame = jobs.df.set_index("jobID")
    assert sorted(frame.index) == ["a", "b", "r"]
    assert str(frame.loc["a", "allocated_resources"]) == "0-1" and frame.loc["a", "proc_alloc"] == 2
    assert frame.loc["b", "starting_time"] == pytest.approx(2) and frame.loc["b", "finish_time"] == pytest.approx(7)
    assert frame.loc["r", "proc_alloc"] == 0  # rejected: an empty interval set
    assert frame.loc["b", "metadata"] == "node=3;case=1"
    assert (jobs.res_bounds.inf, jobs.res_bounds.sup) == (0, 3)
    # utilisation: 2 hosts from 0, 3 from 2 to 7, 2 again until 10
    load = jobs.utilisation["load"]
    assert [load.loc[t] for t in (0.0, 2.0, 7.0, 10.0)] == [2, 3, 2, 0]
    jobs.gantt()
    png = tmp_path / "gantt.png"
    plt.savefig(png)
    plt.close("all")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
