"""A comparison's report.md and report.html: the verdict first with every parameter that
shaped it, every policy's tests kept when another fails, DEGRADED wherever degraded results appear."""

import contextlib
import io
import json
import math
from pathlib import Path
import re
import sys

import numpy as np
import pandas as pd
import pytest

from batio.cli import main
from batio.report.html_report import distributions, write_run_page
from batio.report.shown import shown_difference
from batio.report.verdict import parameters

sys.path.insert(0, str(Path(__file__).parent))
from test_compare import _windowed_trace  # noqa: E402

MISBEHAVING = Path(__file__).parent / "schedulers" / "misbehaving.py"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """fcfs, easy, equilibrio (degraded: no I/O, no fields) and a scheduler that fails on every window,
    over the 3 windows of test_compare's trace, tau 60 s: (console, out folder, exit code)."""
    folder = tmp_path_factory.mktemp("findings")
    out = folder / "cmp"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["compare", "--platform", "cluster16_pfs", "--workload", str(_windowed_trace(folder / "t.json")),
                     "--schedulers", f"fcfs,easy,equilibrio,{MISBEHAVING}",
                     "--options-of", f'{MISBEHAVING}={{"do": "raise_in_init"}}', "--windows", "100",
                     "--no-io-slowdown", "--bsld-tau", "60", "--allow-unfit", "--out", str(out), "--quiet"])
    return printed.getvalue(), out, code


def _reports(out):
    return (out / "report" / "report.md").read_text(), (out / "report" / "report.html").read_text()


def test_a_failed_policy_leaves_the_others_tests_and_shows_its_error(compared):
    printed, out, code = compared
    text, page = _reports(out)
    assert code == 1  # the failed runs still fail the command
    # easy's paired test (test_compare's numbers) on the console, in report.md and on the page.
    assert re.search(r"easy +mean wait \(s\) +-22\.7 ± 8\.3 +3 .* significantly lower \(better\)", printed)
    assert "| easy | mean wait (s) | -22.7 ± 8.3 | 3 |" in text
    assert "<td>easy</td><td>mean wait (s)</td><td>-22.7 ± 8.3</td>" in page
    assert "No successful run of misbehaving" in printed and "no uncertainty estimate" not in printed
    error = "misbehaving on purpose in __init__"
    assert text.count(error) == 3 and "## Failed runs" in text
    assert "<h2>Failed runs</h2>" in page and page.count(error) == 3


def test_the_reports_lead_with_the_verdict_and_name_what_shaped_it(compared):
    printed, out, _ = compared
    text, page = _reports(out)
    group = "t-100-windows on cluster16_pfs"
    assert text.index("## Findings") < text.index("## Parameters") < text.index(f"## {group}")
    assert page.index("<h2>Findings</h2>") < page.index("<h2>Parameters</h2>") < page.index(f"<h2>{group}")
    assert "| easy | 3 | no significant difference: 0 ± 0 | significantly lower (better): -22.7 ± 8.3 |" in text
    assert "<td>significantly lower (better): -22.7 ± 8.3</td>" in page
    for shown in (text, page):
        assert "unless" not in shown and "tau = 60 s" in shown  # the definitions name the tau used
        assert "seed 2" not in shown  # windows are windows, with their trace seconds
        for command_part in ("--no-io-slowdown", "--bsld-tau 60", f"--out {out}", "--allow-unfit"):
            assert command_part in shown.replace("&#x27;", "'")
    assert "| replicas | 3 windows of the trace (listed below) |" in text
    assert "| bounded slowdown tau | 60 s |" in text and "<td>bounded slowdown tau</td><td>60 s</td>" in page
    assert "| t-100-windows | 2 | t.json | 100 to 200 | (the trace has no dates) |" in text
    assert "<td>t-100-windows</td><td>2</td><td>t.json</td><td>100 to 200</td>" in page
    summary = pd.read_csv(out / "report" / "summary.csv")
    assert set(summary["bsld_tau"]) == {60.0}
    assert "reference runs included" not in printed and "runs: 12 planned," in printed


def test_degraded_results_are_marked_wherever_they_appear(compared):
    _, out, _ = compared
    text, page = _reports(out)
    label = "equilibrio (DEGRADED: does not fit)"
    assert f"| {label} | mean wait (s) | 0 ± 0 | 3 |" in text  # the paired-difference rows
    assert f"<td>{label}</td><td>mean wait (s)</td>" in page
    reason = "jobs lack fields (jobs lacking, of 3): &#x27;io_walltime_share&#x27; (3)"
    heading = "Degraded: policies run on inputs they do not fit (--allow-unfit)"
    assert f"<h2>{heading}</h2>" in page and reason in page
    assert f'"text":"{label}, window 1' in page  # the Gantt chart's title
    results = pd.read_csv(out / "results.csv").set_index("policy")
    run = out / results.loc["equilibrio", "run_dir"].iloc[0]
    run_page = write_run_page(run).read_text()
    assert "<title>batio run: equilibrio (DEGRADED: does not fit)" in run_page and "io_walltime_share" in run_page


def test_the_page_has_the_intervals_figure_and_definitions_as_html(compared):
    _, out, _ = compared
    _, page = _reports(out)
    assert "means and 95 % intervals over replicas" in page
    assert page.count('class="figure"') == 1 + 3 + 2  # intervals, 3 Gantt charts, usage, slowdowns
    definitions = page[page.index("<h2>Definitions</h2>"):]
    assert "<li><b>makespan</b>: the last job" in definitions and "**" not in definitions
    assert "<code>--bsld-tau</code>" in definitions


def test_a_box_plots_mean_above_the_whisker_stays_on_the_axis():
    values = [1.0] * 19 + [1000.0]  # mean 50.95, far above the upper whisker (1)
    figure = distributions({"slowdown": {"easy": values}})
    means = [trace for trace in figure.data if trace.type == "scatter" and trace.name == "mean"]
    assert len(means) == 1 and means[0].y[0] == pytest.approx(np.mean(values))
    box = next(trace for trace in figure.data if trace.type == "box")
    assert box.upperfence[0] == 1.0 and "mean" in figure.layout.title.text


def test_differences_are_printed_with_the_digits_their_test_needs():
    assert shown_difference("utilisation", 0.0003, 0.0005) == "+0.030% ± 0.050%"  # not 0.0% ± 0.0%
    assert shown_difference("makespan", 0.0, 0.0) == "0 ± 0"
    assert shown_difference("mean_wait", -22.667, 8.28) == "-22.7 ± 8.3"
    assert shown_difference("mean_slowdown", 0.5, math.nan) == "+0.500"


def test_bytes_and_colours_of_the_same_jobs_are_the_same_under_every_policy(tmp_path):
    from batio.report.schedule_data import load_run
    from batio.workloads.demo import demo_workload
    workload = tmp_path / "demo.json"
    work = demo_workload(seed=1, nb_jobs=10)
    workload.write_text(json.dumps(work))
    out = tmp_path / "cmp"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["compare", "--platform", "cluster16_pfs", "--workload", str(workload), "--schedulers",
                     "easy,fcfs", "--no-io-slowdown", "--out", str(out), "--quiet"]) == 0
    results = pd.read_csv(out / "results.csv").set_index("policy")
    assert results.loc["easy", "bytes_moved"] == results.loc["fcfs", "bytes_moved"] > 0
    runs = {policy: load_run(out / results.loc[policy, "run_dir"] / "out").jobs.set_index("job_id").sort_index()
            for policy in ("easy", "fcfs")}
    assert (runs["easy"]["execution_time"] != runs["fcfs"]["execution_time"]).any()  # runs differ, colours do not
    assert runs["easy"]["intensity"].to_dict() == runs["fcfs"]["intensity"].to_dict()
    assert results.loc["easy", "bytes_moved"] == pytest.approx(runs["easy"]["bytes"].sum())


def test_one_seed_is_counted_in_the_singular():
    one_seed = pd.DataFrame({"seed": [1], "engine": ["embedded"], "workload": ["w"], "workload_file": [None]})
    assert dict(parameters(one_seed, "easy", 10.0, ""))["replicas"] == (
        "1 seed of the workload generator (1)")
