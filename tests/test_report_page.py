"""The report page of a real run: self-contained, complete, and read in headless Chromium."""

import json
import re
import shutil

import pytest

from batio.cli import main
from batio.report import headless, html_report
from batio.report.html_report import write_run_page
from batio.report.metrics import read_jobs
from batio.workloads.demo import demo_workload

NO_BROWSER = ("no Chromium on PATH: scripts/install.sh installs Debian's `chromium` when run as root "
              "(apt-get install chromium)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A 12-job run of the demo on cluster16_pfs with EASY backfilling; its folder."""
    folder = tmp_path_factory.mktemp("page")
    workload = folder / "demo12.json"
    workload.write_text(json.dumps(demo_workload(seed=1, nb_jobs=12)))
    assert main(["run", "--platform", "cluster16_pfs", "--workload", str(workload), "--scheduler", "easy",
                 "--out", str(folder / "run"), "--quiet"]) == 0
    return folder / "run"


def _expected(run):
    """A job that EASY backfilled and the values its tooltip must hold, computed here by hand."""
    jobs = read_jobs(run / "out").set_index("job_id")
    workload = json.loads((run.parent / "demo12.json").read_text())
    jumped = [job for job, row in jobs.iterrows()
              if ((jobs["submission_time"] < row.submission_time) & (jobs["starting_time"] > row.starting_time)).any()]
    assert jumped, "the demo's 12 jobs should make EASY backfill"
    job = jumped[0]
    row = jobs.loc[job]
    profile = workload["profiles"][row.profile]
    write = workload["profiles"][profile["seq"][1]]["bytes_to_write"]
    gigabytes = profile["repeat"] * row.requested_number_of_resources * write / 1e9
    return job, [f"job w0!{job}", f"profile {row.profile}", f"submit {row.submission_time:.1f} s",
                 f"wait {row.waiting_time:.1f} s", f"bytes {gigabytes:.3g} GB", "backfilled yes"]


def test_the_page_is_self_contained(run):
    text = (run / "report.html").read_text()
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=\"?http", text)  # nothing loaded from elsewhere
    assert "Plotly.newPlot" in text and text.count('<script type="application/json" class="figure"') == 3
    for heading in ("Summary", "Schedule", "Inputs"):
        assert f"<h2>{heading}</h2>" in text
    record = json.loads((run / "out_run.json").read_text())
    for path, digest in record["inputs_sha256"].items():
        assert f"<td>{path}</td><td>{digest}</td>" in text


def test_report_rewrites_the_page_and_names_what_is_missing(run, tmp_path, capsys):
    (run / "report.html").unlink()
    assert main(["report", str(run)]) == 0
    assert (run / "report.html").stat().st_size > 1_000_000  # plotly.js inlined
    assert main(["report", str(tmp_path)]) == 2
    assert "no out_jobs.csv (a run) and no results.csv" in capsys.readouterr().err
    incomplete = tmp_path / "incomplete"
    shutil.copytree(run, incomplete)
    (incomplete / "out_machine_states.csv").unlink()
    assert main(["report", str(incomplete)]) == 2
    message = capsys.readouterr().err.strip()
    assert "\n" not in message and message.endswith("incomplete run outputs: no out_machine_states.csv")


def test_no_io_leaves_out_the_storage_panel_and_says_so(run, tmp_path):
    from batio.report.html_report import gantt_figure, span_of
    from batio.report.schedule_data import load_run
    with_io = load_run(run / "out")
    figure, detail = gantt_figure(with_io, "easy", span_of({"easy": with_io}), {})
    assert len(detail["jobs"]["id"]) == 12 and detail["limit"] >= 12  # the page draws them all
    capacity = [trace for trace in figure.data if trace.name == "capacity (narrowest shared link)"]
    assert list(capacity[0].y) == [1.0, 1.0]  # cluster16_pfs's pfs link: 1 GB/s
    silent = tmp_path / "silent"
    shutil.copytree(run, silent)
    (silent / "out_io.csv").write_text("time,storage,read_bytes_per_s,write_bytes_per_s\n")
    without = load_run(silent / "out")
    figure, _ = gantt_figure(without, "easy", span_of({"easy": without}), {})
    assert "yaxis2" not in figure.layout and all(trace.type == "bar" for trace in figure.data)


HOVER_JOB = """(() => {{
    const chart = document.getElementById('chart1');
    let hovered;
    chart.data.forEach((trace, curve) => (trace.customdata || []).forEach((data, point) => {{
        if (data[0] === 'w0!{job}' && hovered === undefined) hovered = [curve, point];
    }}));
    Plotly.Fx.hover(chart, [{{curveNumber: hovered[0], pointNumber: hovered[1]}}]);
    return chart.querySelector('.hoverlayer .hovertext').textContent;
}})()"""


def test_the_page_renders_in_chromium_with_a_known_jobs_tooltip(run, tmp_path):
    if headless.chromium() is None:
        pytest.skip(NO_BROWSER)
    job, expected = _expected(run)
    with headless.Page() as page:
        seconds = page.open(run / "report.html")
        assert seconds > 0
        plots = page.evaluate("[...document.querySelectorAll('.js-plotly-plot')].map(p => "
                              "p.querySelectorAll('.trace, .boxlayer path, .barlayer path').length)")
        assert len(plots) == 3 and all(count > 0 for count in plots), plots
        text = page.evaluate(HOVER_JOB.format(job=job))
        page.screenshot(tmp_path / "page.png")
        assert page.errors == []
    for line in expected:
        assert line in text, (line, text)
    assert (tmp_path / "page.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_beyond_the_limit_the_page_aggregates_and_zooming_in_draws_jobs(run, tmp_path, monkeypatch):
    if headless.chromium() is None:
        pytest.skip(NO_BROWSER)
    monkeypatch.setattr(html_report, "DETAIL_LIMIT", 10)  # 12 jobs (16 bars): aggregated, as 100,000 would be
    folder = tmp_path / "big"
    shutil.copytree(run, folder)
    write_run_page(folder)
    job, expected = _expected(run)
    jobs = read_jobs(run / "out").set_index("job_id")
    start = jobs.loc[job, "starting_time"]
    with headless.Page() as page:
        page.open(folder / "report.html")
        kinds = page.evaluate("document.getElementById('chart1').data.map(t => t.type === 'bar' ? "
                              "'bar:' + t.x.length : t.type)")
        assert kinds[:2] == ["heatmap", "heatmap"] and kinds[2:8] == ["bar:0"] * 6  # one per class, empty
        bars = page.evaluate(f"Plotly.relayout('chart1', {{'xaxis.range': [{start - 1}, {start + 1}]}}).then(c => "
                             "c.data.filter(t => t.type === 'bar').reduce((n, t) => n + t.x.length, 0))")
        assert 1 <= bars <= 10  # the jobs running around the job's start, one bar each
        text = page.evaluate(HOVER_JOB.format(job=job))
        zoomed_out = page.evaluate("Plotly.relayout('chart1', {'xaxis.autorange': true}).then(c => "
                                   "c.data.filter(t => t.type === 'bar').reduce((n, t) => n + t.x.length, 0))")
        page.screenshot(tmp_path / "zoomed.png")
        assert page.errors == []
    for line in expected:
        assert line in text, (line, text)
    assert zoomed_out == 0


def test_ubuntus_snap_launcher_without_the_snap_is_no_browser(tmp_path, monkeypatch):
    """Ubuntu 24.04's chromium-browser only runs the snap, which a chroot lacks."""
    stub = tmp_path / "chromium-browser"
    stub.write_text('#!/bin/sh\nif ! [ -x /snap/bin/chromium ]; then\n  echo "Command requires the chromium snap"\n'
                    '  exit 1\nfi\nexec /snap/bin/chromium "$@"\n')
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert headless.chromium() is None
    (tmp_path / "chromium").write_text("#!/bin/sh\nexec /usr/lib/chromium/chromium \"$@\"\n")
    (tmp_path / "chromium").chmod(0o755)
    assert headless.chromium() == str(tmp_path / "chromium")
