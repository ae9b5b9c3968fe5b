"""The report page: one self-contained HTML file for a run, a comparison or a sweep.

    RUN/report.html              beside a run's out_* files (`batio run`)
    OUT/report/report.html       beside report.md (`batio compare`, `batio sweep`)

It opens offline: plotly.js is inlined, no CDN. It shows, from the output
files only: the Gantt chart over the storage throughput and its capacity
(one zoomable time axis), utilisation and queue length per policy,
per-job (bounded) slowdown and I/O slowdown distributions, the summary
table (with report.py's intervals and paired differences where replicas
exist), the inputs with their SHA-256, and what could not be shown.
"""

import html
import logging
from pathlib import Path

import pandas as pd
import plotly.io
from plotly.offline import get_plotlyjs

from batio import __version__, metrics
from batio.html_charts import distributions, gantt_figure, small_multiples, span_of
from batio.schedule_data import load_run

log = logging.getLogger(__name__)
PAGE = "report.html"
STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1400px;color:#222}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px}
td:not(:first-child){text-align:right}code,pre{font-size:.85em}.note{color:#8a4b00}.chart{margin:1em 0}"""
# Renders every chart, then marks the page rendered (the browser test and the benchmark wait for it).
# The Gantt chart's bar traces start empty: the page fills them with the jobs of the visible window
# when it holds at most `limit` bars (all jobs of a small run), on load and at each zoom (level of
# detail), formatting their tooltips as html_charts.HOVER reads them.
SCRIPT = """function levelOfDetail(chart, detail) {
  const job = detail.jobs, bar = detail.bars, ok = 'COMPLETED_SUCCESSFULLY', unit = detail.unit;
  const state = j => detail.states[job.state[j]];
  const hosts = i => bar.hosts[i] > 1 ? `${bar.first[i]}-${bar.first[i] + bar.hosts[i] - 1}` : `${bar.first[i]}`;
  const tooltip = (i, j) => [job.id[j], detail.profiles[job.profile[j]], job.submit[j].toFixed(1),
    job.wait[j].toFixed(1), job.gb[j] === null ? 'unknown' : Number(job.gb[j].toPrecision(3)) + ' GB',
    j in detail.io ? detail.io[j].toFixed(3) : '-', job.backfilled[j] ? 'yes' : 'no',
    state(j) + (state(j) === ok ? '' : ' (did not succeed)'), hosts(i)];
  let shown = false;
  const update = () => {
    const [from, to] = chart._fullLayout.xaxis.range.map(t => t * unit), picked = [];
    for (let i = 0; i < bar.job.length && picked.length <= detail.limit; i++) {
      const j = bar.job[i];
      if (job.start[j] < to && job.start[j] + job.length[j] > from) picked.push(i);
    }
    const fill = picked.length <= detail.limit;
    if (!fill && !shown) return Promise.resolve();
    shown = fill;
    const per = detail.traces.map(() => ({base: [], x: [], y: [], width: [], customdata: [], edge: []}));
    if (fill) for (const i of picked) {
      const j = bar.job[i], bars = per[job.kind[j]];
      bars.base.push(job.start[j] / unit); bars.x.push(job.length[j] / unit);
      bars.y.push(bar.first[i] + bar.hosts[i] / 2); bars.width.push(bar.hosts[i]);
      bars.customdata.push(tooltip(i, j)); bars.edge.push(state(j) === ok ? '#333333' : '#b2182b');
    }
    const column = name => per.map(bars => bars[name]);
    return Plotly.restyle(chart, {base: column('base'), x: column('x'), y: column('y'), width: column('width'),
      customdata: column('customdata'), 'marker.line.color': column('edge'),
      showlegend: per.map(bars => bars.x.length > 0)}, detail.traces);
  };
  chart.on('plotly_relayout', update);
  return update();
}
const read = element => JSON.parse(element.textContent);
const figures = [...document.querySelectorAll('script.figure')];
Promise.all(figures.map(data => {const figure = read(data), target = data.dataset.target;
  return Plotly.newPlot(target, figure.data, figure.layout, {responsive: true, displaylogo: false}).then(chart => {
    const detail = document.querySelector(`script.detail[data-target="${target}"]`);
    return detail ? levelOfDetail(chart, read(detail)) : chart;
  });
})).then(() => { window.batioRendered = performance.now(); });"""


def _table(header, rows):
    cells = "".join(f"<th>{html.escape(str(cell))}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def _inputs(records):
    """The inputs of the drawn runs and their SHA-256, from their out_run.json."""
    rows = {}
    for record in records:
        spec = record["spec"]
        for kind, paths in (("platform", [spec["platform"]]), ("workload", spec["workloads"]),
                            ("scheduler", [spec["scheduler"]])):
            for path in paths:
                rows[(kind, str(path))] = record.get("inputs_sha256", {}).get(str(path), "-")
    return _table(["input", "file", "SHA-256"], [[kind, path, digest] for (kind, path), digest in rows.items()])


class Page:
    """Sections of HTML and figures, written as one file."""

    def __init__(self, title):
        self.title = title
        self.parts = [f"<h1>{html.escape(title)}</h1>"]
        self.figures = 0

    def add(self, text):
        self.parts.append(text)

    def figure(self, figure, detail=None):
        """A chart; ``detail``: its level-of-detail data (html_charts.gantt_figure)."""
        self.figures += 1
        target = f"chart{self.figures}"
        self.parts.append(f'<div class="chart" id="{target}"></div>' + self._json("figure", target, figure))
        if detail is not None:
            self.parts.append(self._json("detail", target, detail))

    @staticmethod
    def _json(kind, target, value):
        data = plotly.io.to_json(value, validate=False).replace("</", "<\\/")  # no early </script>
        return f'<script type="application/json" class="{kind}" data-target="{target}">{data}</script>'

    def notes(self, notes):
        for note in dict.fromkeys(notes):
            self.add(f'<p class="note">{html.escape(note)}</p>')

    def write(self, path):
        path = Path(path)
        text = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>{''.join(self.parts)}"
                f"<script>{SCRIPT}</script></body></html>")
        path.write_text(text, encoding="utf-8")
        log.info("report page %s (%.1f MB)", path, path.stat().st_size / 1e6)
        return path


def _made_by():
    return f"<p>Made by batio {__version__} from the output files only.</p>"


def write_run_page(folder, tau=metrics.DEFAULT_BSLD_TAU):
    """FOLDER/report.html for the outputs FOLDER/out_*; ``tau``: the bounded slowdown's. Returns its path."""
    prefix = Path(folder) / "out"
    run = load_run(prefix)
    # The scheduler as the user typed it (the marks of engines.run), not its file's name.
    label = run.record.get("scheduler_name") or Path(run.record["spec"]["scheduler"]).stem
    summary = metrics.summarize(prefix, run.nb_compute, tau=tau)
    jobs = metrics.measured_jobs(prefix)
    page = Page(f"batio run: {label} on {Path(run.record['spec']['platform']).name}")
    page.add(_made_by() + f"<h2>Summary</h2><pre>{html.escape(metrics.format_summary(summary))}</pre>")
    end = span_of({label: run})
    page.add("<h2>Schedule</h2>")
    page.notes(run.notes)
    page.figure(*gantt_figure(run, label, end, {}))
    page.figure(small_multiples({label: run}, end))
    page.figure(distributions({"slowdown": {label: jobs["stretch"].dropna()},
                               f"bounded slowdown (tau {tau:g} s)": {label: metrics.bounded_slowdowns(jobs, tau)}}))
    page.add("<p>No I/O slowdown: it needs a reference run of the jobs alone (`batio compare`).</p>")
    page.add("<h2>Inputs</h2>" + _inputs([run.record]))
    return page.write(Path(folder) / PAGE)


def _group_section(page, view, per_job, out, baseline):
    """One platform x workload x engine group (a report.GroupView): table, differences, charts."""
    platform, workload, engine = (html.escape(str(key)) for key in view.keys)
    page.add(f"<h2>{workload} on {platform} ({engine} engine)</h2><p>{html.escape(view.note)}</p>"
             + _table(*view.cells))
    if view.differences is not None:
        page.add(f"<p>Paired differences to {html.escape(baseline)}, replica by replica:</p>"
                 + _table(*view.differences))
    ok = view.runs[view.runs["status"] == "ok"]
    if ok.empty:
        page.add("<p>No successful run: no charts.</p>")
        return []
    shown = ok.sort_values("seed", na_position="first").groupby("policy", sort=False).head(1)
    runs = {row.policy: load_run(out / row.run_dir / "out") for row in shown.itertuples()}
    end = span_of(runs)
    samples = {"slowdown": {}, "bounded slowdown": {}, "I/O slowdown": {}}
    for policy, replicas in ok.groupby("policy", sort=False):
        values = [per_job[row.run_id] for row in replicas.itertuples()]
        for index, title in enumerate(samples):
            samples[title][policy] = pd.concat([value[index] for value in values]) if values else []
    seed_note = "" if shown["seed"].isna().all() else f", seed {shown['seed'].dropna().min()}"
    page.add("<h3>Schedules</h3>")
    for row in shown.itertuples():
        run = runs[row.policy]
        page.notes(run.notes)
        io = per_job[row.run_id][2]
        page.figure(*gantt_figure(run, f"{row.policy}{seed_note}", end, dict(zip(io.index.astype(str), io))))
    page.figure(small_multiples(runs, end))
    page.add("<p>Distributions over the evaluated jobs of all replicas.</p>")
    page.figure(distributions(samples))
    # The inputs of every run of the group (each seed's workload), not only of those drawn.
    return [record for record in (metrics.run_record(out / row.run_dir / "out") for row in view.runs.itertuples())
            if record is not None]


def write_folder_page(data, out, title="comparison"):
    """OUT/report/report.html from the report.ReportData of a comparison's or a sweep's results; returns its path."""
    out = Path(out)
    results, baseline = data.results, data.baseline
    page = Page(f"batio {title}")
    page.add(_made_by() + f"<p>{len(results)} runs, {int((results['status'] == 'ok').sum())} succeeded."
             + (f" Ratios (x) are to <b>{html.escape(baseline)}</b>." if baseline else "") + "</p>")
    records = []
    for view in data.groups:
        records += _group_section(page, view, data.per_job, out, baseline)
    page.add("<h2>Inputs</h2>" + _inputs(records))
    page.add(f"<h2>Definitions</h2><pre>{html.escape(metrics.DEFINITIONS)}</pre>")
    (out / "report").mkdir(parents=True, exist_ok=True)
    return page.write(out / "report" / PAGE)
