"""The report page's frame: one HTML file that opens offline, and the sections a comparison's page
opens with (batio.report.verdict's findings, parameters, windows, failed and degraded runs)."""

import html
import logging
from pathlib import Path
import re

import plotly.io
from plotly.offline import get_plotlyjs

from batio import __version__
from batio.report.shown import DEGRADED
from batio.report.verdict import FAILED_HEADER

log = logging.getLogger(__name__)
PAGE = "report.html"
STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1400px;color:#222}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px}
td:not(:first-child){text-align:right}code,pre{font-size:.85em}.note{color:#8a4b00}.chart{margin:1em 0}"""
# Renders every chart, then marks the page rendered (the browser test and the benchmark wait for it).
# The Gantt chart's bar traces start empty: the page fills them with the jobs of the visible window
# when it holds at most `limit` bars (all jobs of a small run), on load and at each zoom (level of
# detail), formatting their tooltips as HOVER reads them.
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


def table(header, rows):
    cells = "".join(f"<th>{html.escape(str(cell))}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def inputs(records):
    """The inputs of the drawn runs and their SHA-256, from their out_run.json."""
    rows = {}
    for record in records:
        spec = record["spec"]
        for kind, paths in (("platform", [spec["platform"]]), ("workload", spec["workloads"]),
                            ("scheduler", [spec["scheduler"]])):
            for path in paths:
                rows[(kind, str(path))] = record.get("inputs_sha256", {}).get(str(path), "-")
    return table(["input", "file", "SHA-256"], [[kind, path, digest] for (kind, path), digest in rows.items()])


class Page:
    """Sections of HTML and figures, written as one file."""

    def __init__(self, title):
        self.title = title
        self.parts = [f"<h1>{html.escape(title)}</h1>"]
        self.figures = 0

    def add(self, text):
        self.parts.append(text)

    def figure(self, figure, detail=None):
        """A chart; ``detail``: its level-of-detail data (gantt_figure)."""
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


def made_by():
    return f"<p>Made by batio {__version__} from the output files only.</p>"


def markdown_html(text):
    """The few Markdown the reports' definitions use, as HTML: "- " items (continued on indented
    lines), **bold** and `code`; everything else escaped."""
    items = []
    for line in text.splitlines():
        if line.startswith("- "):
            items.append(line[2:])
        elif line.strip() and items:
            items[-1] += " " + line.strip()

    def inline(item):
        item = html.escape(item)
        item = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", item)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", item)
    return "<ul>" + "".join(f"<li>{inline(item)}</li>" for item in items) + "</ul>"


def opening(data):
    """The page's opening, as report.md's (report.opening_lines): findings, degraded and failed runs
    in one line each, parameters and windows."""
    parts = []
    if data.findings is not None:
        parts.append(f"<h2>Findings</h2><p>Each policy against <b>{html.escape(data.baseline)}</b>, on the same "
                     "replicas: the verdict of its paired difference (95 % interval; see the paired differences "
                     "below).</p>" + table(*data.findings))
    if data.degraded:
        parts.append(f'<p class="note"><b>{DEGRADED}</b>: ' + "; ".join(
            f"{html.escape(policy)} was run on inputs it does not fit ({html.escape(why)})"
            for policy, why in data.degraded) + ".</p>")
    if data.failed:
        parts.append(f'<p class="note"><b>{len(data.failed)} failed run{"s" if len(data.failed) != 1 else ""}'
                     "</b>: see Failed runs.</p>")
    rows = [[name, value] for name, value in data.parameters]
    parts.append("<h2>Parameters</h2>" + table(["parameter", "value"], rows))
    if data.windows is not None:
        parts.append("<p>Windows (the replicas):</p>" + table(*data.windows))
    return "".join(parts)


def closing(data):
    """The degraded policies with their reasons and the failed runs with their error, as report.md's."""
    parts = []
    if data.degraded:
        parts.append("<h2>Degraded: policies run on inputs they do not fit (--allow-unfit)</h2>"
                     + table(["policy", "what the inputs lack"], data.degraded))
    if data.failed:
        parts.append("<h2>Failed runs</h2>" + table(FAILED_HEADER, data.failed))
    return "".join(parts)
