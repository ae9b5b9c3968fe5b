"""`batio compare`: the table (checked against each run's own metrics), ratios, I/O slowdown and report."""

import json
from pathlib import Path
import re

import pandas as pd
import pytest

from batio.cli import main
from batio.compare import comparison_grid
from batio.errors import InputError
from batio.report.metrics import METRICS, read_jobs, summarize
from batio.sweep import plan
from batio.workloads.demo import demo_workload


def test_two_schedulers_table_ratios_and_report(tmp_path, capsys):
    workload = tmp_path / "small.json"
    workload.write_text(json.dumps(demo_workload(seed=1, nb_jobs=10)))
    out = tmp_path / "cmp"
    code = main(["compare", "--platform", "cluster16_pfs", "--workload", str(workload), "--schedulers", "easy,fcfs",
                 "--baseline", "fcfs", "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "fcfs (baseline)" in printed and "mean I/O slowdown" in printed

    results = pd.read_csv(out / "results.csv").set_index("policy")
    summary = pd.read_csv(out / "report" / "summary.csv").set_index("policy")
    own = {policy: summarize(out / results.loc[policy, "run_dir"] / "out") for policy in ("easy", "fcfs")}
    for metric in [metric for metric in METRICS if metric in own["easy"]]:
        value = own["easy"][metric]
        assert summary.loc["easy", metric] == pytest.approx(value, rel=1e-9)
        ratio = value / own["fcfs"][metric]
        assert summary.loc["easy", f"{metric}_ratio"] == pytest.approx(ratio, rel=1e-9)
        assert summary.loc["fcfs", f"{metric}_ratio"] == pytest.approx(1.0)
    assert summary.loc["easy", "mean_wait"] < summary.loc["fcfs", "mean_wait"]  # backfilling helps here

    # I/O slowdown by hand: execution time over the same job's time in the reference run (jobs alone).
    run = read_jobs(out / results.loc["easy", "run_dir"] / "out").set_index("job_id")
    alone = read_jobs(out / "runs" / results.loc["easy", "reference_run"] / "out").set_index("job_id")
    assert alone["waiting_time"].max() < 0.1  # every reference job started on submission: it ran alone
    by_hand = run["execution_time"] / alone.loc[run.index, "execution_time"]
    assert summary.loc["easy", "mean_io_slowdown"] == pytest.approx(by_hand.mean())
    assert summary.loc["easy", "max_io_slowdown"] == pytest.approx(by_hand.max())
    assert by_hand.max() > 1.0  # jobs share the PFS link

    # The report folder stands alone: every figure it links is inside it.
    report = out / "report"
    text = (report / "report.md").read_text()
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert sorted(links) == ["figures/gantt-easy.png", "figures/gantt-fcfs.png", "figures/slowdown.png",
                             "figures/utilisation.png"]
    for link in links:
        assert (report / link).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (report / "results.csv").exists() and "| fcfs (baseline) |" in text and "## Definitions" in text
    assert re.search(r"\| mean wait \(s\) \| [0-9.]+ \([0-9.]+x\) \| [0-9.]+ \|", text)  # easy's ratio, fcfs's value
    page = (report / "report.html").read_text()  # the HTML page, beside report.md
    assert "<th>fcfs (baseline)</th>" in page and page.count('class="figure"') == 4  # 2 Gantt, usage, slowdowns
    assert "<td>mean I/O slowdown</td>" in page and "<h2>Definitions</h2>" in page


def test_seeds_apply_to_workload_generators(tmp_path):
    grid = comparison_grid("cluster16_pfs", "batio.workloads.demo:demo_workload", "fcfs,easy", seeds=2,
                           io_slowdown=False)
    runs = plan(grid, tmp_path)
    assert sorted((run.policy, run.seed) for run in runs) == [("easy", 1), ("easy", 2), ("fcfs", 1), ("fcfs", 2)]
    files = {run.seed: Path(run.workload_file) for run in runs}
    # seed 1 is the bundled demo workload, byte for byte
    assert files[1].read_bytes() == (Path(__file__).parents[1] / "workloads" / "demo.json").read_bytes()
    assert files[1].read_bytes() != files[2].read_bytes()


@pytest.mark.parametrize("arguments, message", [
    (["--workload", "demo", "--seeds", "2"], "--seeds: workload 'demo' is a file"),
    (["--workload", "demo", "--options-of", "conservative={}"], "'conservative' is not one of --schedulers"),
    (["--workload", "demo", "--options-of", "easy=[1]"], "easy: must be a JSON object"),
    (["--workload", "demo", "--baseline", "sjf"], "--baseline: 'sjf' is not one of --schedulers"),
    (["--workload", "nowhere.json"], "no such workload file"),
    (["--workload", "batio.workloads.nowhere:make"], "cannot import generator module"),
    (["--workload", "demo", "--schedulers", "fcfs,batsched:easy_bf"], "runs only against real Batsim"),
    (["--workload", "demo", "--window-count", "2"], "--window-count: applies to the windows of a trace"),
    (["--workload", "demo", "--windows", "1w", "--seeds", "2"], "give one of --windows and --seeds"),
    (["--workload", "batio.workloads.demo:demo_workload", "--windows", "1d"], "its replicas are --seeds"),
    (["--workload", "demo", "--windows", "1w"], "shorter than one window of 604800 s"),
    (["--workload", "demo", "--windows", "7 days"], "--windows: expected a duration"),
    (["--workload", "demo", "--bsld-tau", "0"], "--bsld-tau: must be a finite number of seconds > 0"),
    (["--workload", "demo", "--options-of", "easy={}", "--options-of", 'easy={"order": "sjf"}'],
     "--options-of: 'easy' is given twice"),
    (["--workload", "demo", "--workers", "100000"], "--workers: must be from 0 (one run after the other) to 256"),
])
def test_argument_errors_are_one_clear_line(tmp_path, capsys, arguments, message):
    if "--schedulers" not in arguments:
        arguments = arguments + ["--schedulers", "fcfs,easy"]
    code = main(["compare", "--platform", "cluster16_pfs", *arguments, "--out", str(tmp_path / "o"), "--quiet"])
    error = capsys.readouterr().err
    assert code == 2 and message in error and len(error.strip().splitlines()) == 1


def test_scheduler_files_are_labelled_by_their_name(tmp_path):
    grid = comparison_grid("cluster16_pfs", "demo", f"fcfs,{Path(__file__).parent / 'schedulers' / 'greedy.py'}")
    assert [policy.label for policy in grid.policies] == ["fcfs", "greedy"] and grid.baseline == "fcfs"
    with pytest.raises(InputError, match="given twice"):
        comparison_grid("cluster16_pfs", "demo", "easy,easy")
    assert set(METRICS) >= {"makespan", "mean_io_slowdown", "bytes_moved", "utilisation"}


def _windowed_trace(path):
    """Three 100 s windows, each: A (12 hosts, 50 + 10k s) at 0, B (8 hosts, 40 s) at 1, C (4 hosts, 10 s) at 2;
    and a job at 300 s, past the last whole window."""
    jobs, profiles = [], {"tail": {"type": "delay", "delay": 1}, "b": {"type": "delay", "delay": 40},
                          "c": {"type": "delay", "delay": 10}}
    for k in (1, 2, 3):
        start = 100 * (k - 1)
        profiles[f"a{k}"] = {"type": "delay", "delay": 50 + 10 * k}
        jobs += [{"id": f"A{k}", "subtime": start, "walltime": 200, "res": 12, "profile": f"a{k}"},
                 {"id": f"B{k}", "subtime": start + 1, "walltime": 200, "res": 8, "profile": "b"},
                 {"id": f"C{k}", "subtime": start + 2, "walltime": 200, "res": 4, "profile": "c"}]
    jobs.append({"id": "T", "subtime": 300, "walltime": 10, "res": 1, "profile": "tail"})
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    return path


def test_windows_of_a_trace_are_replicas_with_intervals_and_paired_verdicts(tmp_path, capsys):
    # Window k, A lasting a = 50 + 10k s: FCFS keeps C (4 hosts) behind B until A ends, waits 0, a - 1, a - 2;
    # EASY backfills C at once: 0, a - 1, 0. Mean waits: FCFS (2a - 3) / 3 = 39, 45.667, 52.333; EASY
    # (a - 1) / 3 = 19.667, 23, 26.333. Differences -(a - 2) / 3 = -19.333, -22.667, -26: mean -22.667,
    # sd 3.333, half-width 4.3027 x 3.333 / sqrt(3) = 8.28: significantly lower. FCFS: 45.667 +- 16.56.
    workload = _windowed_trace(tmp_path / "trace.json")
    out = tmp_path / "cmp"
    code = main(["compare", "--platform", "cluster16_pfs", "--workload", str(workload), "--schedulers", "fcfs,easy",
                 "--windows", "100", "--no-io-slowdown", "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    summary = pd.read_csv(out / "report" / "summary.csv").set_index("policy")
    assert list(summary["runs_ok"]) == [3, 3] and summary.loc["easy", "pairs"] == 3
    assert summary.loc["fcfs", "mean_wait"] == pytest.approx(45.667, abs=0.05)
    assert summary.loc["fcfs", "mean_wait_ci"] == pytest.approx(4.302653 * 6.6667 / 3 ** 0.5, abs=0.05)
    assert summary.loc["easy", "mean_wait_diff"] == pytest.approx(-22.667, abs=0.05)
    assert summary.loc["easy", "mean_wait_diff_ci"] == pytest.approx(8.28, abs=0.05)
    assert summary.loc["easy", "mean_wait_verdict"] == "significantly lower (better)"
    # The tail job at 300 s is in no window; every window evaluates its own 3 jobs.
    assert list(summary["evaluated_jobs"]) == [3, 3] and set(summary["window"]) == {"category 1"}
    assert re.search(r"mean wait \(s\) +45\.7 ± 16\.6 +23\.0 ± 8\.3 \(0\.50x\)", printed)
    assert "Means over 3 replicas" in printed and "significantly lower (better)" in printed
    text = (out / "report" / "report.md").read_text()
    assert "| 45.7 ± 16.6 |" in text and "Paired differences to **fcfs**" in text
    assert (out / "report" / "figures" / "intervals.png").read_bytes()[:4] == b"\x89PNG"
    page = (out / "report" / "report.html").read_text()  # the same intervals and verdicts as report.md
    assert "<td>45.7 ± 16.6</td>" in page and "<td>significantly lower (better)</td>" in page
    assert page.count("<td>workload</td>") == 3  # each window's workload and its digest, not only the drawn one
