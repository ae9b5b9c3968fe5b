"""The report page: one self-contained HTML file for a run, a comparison or a sweep.

    RUN/report.html              beside a run's out_* files (`batio run`)
    OUT/report/report.html       beside report.md (`batio compare`, `batio sweep`)

It opens offline: plotly.js is inlined, no CDN. It shows, from the output
files only: the Gantt chart over the storage throughput and its capacity
(one zoomable time axis), utilisation and queue length per policy,
per-job (bounded) slowdown and I/O slowdown distributions, the summary
table (with comparison.py's intervals and paired differences where replicas
exist), the inputs with their SHA-256, and what could not be shown.

The charts are Plotly figures drawn from ``schedule_data.Run``s. Up to
``DETAIL_LIMIT`` jobs the Gantt chart draws one bar per job and host
interval, with a tooltip per job. Beyond, it draws host rows x time bins
(a heatmap: one image, whatever the number of jobs): the fraction of each
cell's host-time that jobs used, or their mean I/O intensity. Long series
(throughput, utilisation, queue) are averaged over at most ``MAX_POINTS``
time bins, exactly (time-weighted means of the step functions).
"""

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from batio.report import metrics
from batio.report.html_page import PAGE, Page, closing, inputs, made_by, markdown_html, opening, table
from batio.report.plots import host_intervals
from batio.report.schedule_data import CLASSES, COLOURS, load_run, time_unit
from batio.report.shown import DEGRADED, JUDGED, SCALE, SHOWN, policy_label

# -- charts ----------------------------------------------------------------------------------
DETAIL_LIMIT = 5000
MAX_POINTS = 2000
HEATMAP_BINS = 800
HEATMAP_ROWS = 200
HOVER = ("<b>job %{customdata[0]}</b><br>profile %{customdata[1]}<br>submit %{customdata[2]} s<br>"
         "wait %{customdata[3]} s<br>hosts %{customdata[8]}<br>bytes %{customdata[4]}<br>"
         "I/O slowdown %{customdata[5]}<br>backfilled %{customdata[6]}<br>%{customdata[7]}<extra></extra>")


def span_of(runs):
    """The longest run's last finish time (s), for a common time axis."""
    return max([float(run.jobs["finish_time"].max()) for run in runs.values() if len(run.jobs)] + [1.0])


def step_means(times, values, end, bins=MAX_POINTS):
    """A step function (value i from times[i] on) as (bin starts, exact means per bin) when it
    has more than ``bins`` steps, else as it is, closed at ``end``."""
    times, values = np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    if len(times) <= bins:
        return np.append(times, end), np.append(values, values[-1])
    edges = np.linspace(0.0, end, bins + 1)
    # The integral of the step function at each change point, then at the bin edges.
    integral = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(times))])
    at_edges = np.interp(edges, times, integral, right=integral[-1]) + np.where(
        edges > times[-1], (edges - times[-1]) * values[-1], 0.0)
    means = np.diff(at_edges) / np.diff(edges)
    return np.append(edges[:-1], end), np.append(means, means[-1])


def _number(value, digits):
    """A number for the page's JSON: rounded, an integer when whole (shorter), None (null) for NaN."""
    if value is None or math.isnan(value):
        return None
    value = round(float(value), digits)
    return int(value) if value.is_integer() else value


def _detail(figure, jobs, unit, io_slowdowns):
    """An empty bar trace per intensity class, and the jobs the page fills them with (every job
    up to DETAIL_LIMIT bars, else those of a zoomed window that has that few). Jobs are columns
    of numbers and indices (the page formats the tooltips), their host intervals a second table,
    so that 100,000 jobs stay a few MB."""
    first = len(figure.data)
    for name in CLASSES:
        figure.add_trace(go.Bar(orientation="h", base=[], x=[], y=[], width=[], customdata=[], name=name,
                                marker={"color": COLOURS[name], "line": {"width": 0.6}}, hovertemplate=HOVER,
                                legendgroup="jobs", showlegend=False), row=1, col=1)
    profiles = {name: index for index, name in enumerate(dict.fromkeys(jobs["profile"]))}
    states = {name: index for index, name in enumerate(dict.fromkeys(jobs["final_state"]))}
    kinds = {name: index for index, name in enumerate(CLASSES)}
    columns: dict[str, list] = {key: [] for key in ("id", "kind", "profile", "state", "start", "length", "submit",
                                                    "wait", "gb", "backfilled")}
    bars: dict[str, list[int]] = {"job": [], "first": [], "hosts": []}
    slowdowns = {}
    for index, job in enumerate(jobs.itertuples(index=False)):
        for key, value in (("id", f"{job.workload_name}!{job.job_id}"), ("kind", kinds[job.intensity]),
                           ("profile", profiles[job.profile]), ("state", states[job.final_state]),
                           ("start", _number(job.starting_time, 3)), ("length", _number(job.execution_time, 3)),
                           ("submit", _number(job.submission_time, 1)), ("wait", _number(job.waiting_time, 1)),
                           ("gb", None if math.isnan(job.bytes) else float(f"{job.bytes / 1e9:.4g}")),
                           ("backfilled", int(job.backfilled))):
            columns[key].append(value)
        slowdown = io_slowdowns.get(str(job.job_id)) if job.workload_name == "w0" else None
        if slowdown is not None:
            slowdowns[index] = _number(slowdown, 3)  # only jobs with a reference run have one
        for first_host, count in host_intervals(job.allocated_resources):
            bars["job"].append(index)
            bars["first"].append(first_host)
            bars["hosts"].append(count)
    return {"limit": DETAIL_LIMIT, "unit": unit, "traces": list(range(first, first + len(CLASSES))),
            "profiles": list(profiles), "states": list(states), "jobs": columns, "io": slowdowns, "bars": bars}


def occupancy(jobs, nb_hosts, end, bins=HEATMAP_BINS, rows=HEATMAP_ROWS):
    """(bin edges, row first hosts, busy fraction[row, bin], mean I/O rate in B/s[row, bin]) of the
    jobs' host intervals: exact overlaps of each interval with each cell."""
    group = math.ceil(nb_hosts / rows)
    firsts = np.arange(0, nb_hosts, group)
    edges = np.linspace(0.0, end, bins + 1)
    pieces = [(job.starting_time, job.starting_time + job.execution_time, host,
               0.0 if math.isnan(job.bytes) else job.bytes / max(job.execution_time, 1e-9))
              for job in jobs.itertuples(index=False)
              for first, count in host_intervals(job.allocated_resources) for host in range(first, first + count)]
    start, stop, host, rate = np.array(pieces, dtype=float).reshape(-1, 4).T
    busy = np.zeros((len(firsts), bins))
    moved = np.zeros((len(firsts), bins))
    row_of = (host // group).astype(int)
    for row in range(len(firsts)):
        mine = row_of == row
        busy[row] = np.diff(_covered(start[mine], stop[mine], np.ones(mine.sum()), edges))
        moved[row] = np.diff(_covered(start[mine], stop[mine], rate[mine], edges))
    capacity = np.outer(np.minimum(firsts + group, nb_hosts) - firsts, np.diff(edges))
    with np.errstate(invalid="ignore", divide="ignore"):
        return edges, firsts, busy / capacity, np.where(busy > 0, moved / busy, np.nan)


def _covered(start, stop, weight, edges):
    """Sum over intervals of weight x their length before each edge: sum w (min(t, stop) - start)+."""
    result = np.zeros(len(edges))
    for times, sign in ((start, 1.0), (stop, -1.0)):
        order = np.argsort(times)
        ordered, weights = times[order], weight[order]
        count = np.searchsorted(ordered, edges, side="right")
        weight_sum = np.concatenate([[0.0], np.cumsum(weights)])[count]
        weighted_times = np.concatenate([[0.0], np.cumsum(weights * ordered)])[count]
        result += sign * (edges * weight_sum - weighted_times)
    return result


def _gantt_heatmap(figure, jobs, nb_hosts, end, unit):
    """Host rows x time bins: busy fraction, or mean I/O intensity (a button switches)."""
    edges, firsts, busy, rate = occupancy(jobs, nb_hosts, end)
    middles = (edges[:-1] + edges[1:]) / 2 / unit
    step = firsts[1] - firsts[0] if len(firsts) > 1 else 1
    hosts = [f"{first}-{min(first + step, nb_hosts) - 1}" if step > 1 else str(first) for first in firsts]
    common = {"x": middles, "y": firsts + step / 2, "customdata": np.array(hosts)[:, None].repeat(len(middles), 1)}
    figure.add_trace(go.Heatmap(z=busy, colorscale="Blues", zmin=0, zmax=1, name="busy fraction",
                                colorbar={"title": "busy", "len": 0.5, "y": 0.75, "x": 1.02},
                                hovertemplate="hosts %{customdata}<br>t %{x:.3g}<br>busy %{z:.0%}<extra></extra>",
                                **common), row=1, col=1)
    figure.add_trace(go.Heatmap(z=np.log10(rate.clip(min=1e6)), colorscale="YlOrRd", zmin=6, zmax=10,
                                visible=False, name="I/O intensity",
                                colorbar={"title": "log10 B/s", "len": 0.5, "y": 0.75, "x": 1.02},
                                hovertemplate="hosts %{customdata}<br>t %{x:.3g}<br>"
                                              "log10 I/O rate %{z:.2f}<extra></extra>", **common), row=1, col=1)
    figure.update_layout(updatemenus=[{"type": "buttons", "direction": "right", "x": 0, "y": 1.08,
                                       "xanchor": "left", "buttons": [
                                           {"label": "busy fraction", "method": "restyle",
                                            "args": [{"visible": [True, False]}, [0, 1]]},
                                           {"label": "I/O intensity", "method": "restyle",
                                            "args": [{"visible": [False, True]}, [0, 1]]}]}])


def gantt_figure(run, title, end, io_slowdowns):
    """The Gantt chart above the storage throughput and its capacity, on one zoomable time axis;
    returns (figure, the jobs the page draws as bars: ``_detail``)."""
    name, unit = time_unit(end)
    has_io = run.throughput is not None and float(np.max(run.throughput[1] + run.throughput[2])) > 0
    figure = make_subplots(rows=2 if has_io else 1, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                           row_heights=[0.72, 0.28] if has_io else [1.0])
    detailed = len(run.jobs) <= DETAIL_LIMIT
    if not detailed:
        _gantt_heatmap(figure, run.jobs, run.nb_compute, end, unit)
    detail = _detail(figure, run.jobs, unit, io_slowdowns)
    figure.update_yaxes(title_text="compute host", range=[0, run.nb_compute], row=1, col=1)
    if has_io:
        times, read, write = run.throughput
        for label, values, colour in (("read", read, "#4575b4"), ("write", write, "#f46d43")):
            x, y = step_means(times, values, end)
            figure.add_trace(go.Scatter(x=x / unit, y=y / 1e9, name=label, mode="lines", line_shape="hv",
                                        stackgroup="io", line={"color": colour, "width": 0.8},
                                        hovertemplate=f"{label} %{{y:.3g}} GB/s<extra></extra>"), row=2, col=1)
        if run.capacity is not None:
            figure.add_trace(go.Scatter(x=[0, end / unit], y=[run.capacity / 1e9] * 2, mode="lines",
                                        name="capacity (narrowest shared link)",
                                        line={"color": "black", "dash": "dash", "width": 1.2}), row=2, col=1)
        figure.update_yaxes(title_text="storage GB/s", rangemode="tozero", row=2, col=1)
    figure.update_xaxes(title_text=f"time ({name})", range=[0, end / unit], row=2 if has_io else 1, col=1)
    mode = ("one bar per job" if detailed else f"{len(run.jobs):,} jobs: host rows x time bins; zoom in to "
            f"{DETAIL_LIMIT:,} bars or fewer for one bar per job")
    figure.update_layout(title=f"{title} ({mode})", barmode="overlay", height=640 if has_io else 480,
                         hovermode="closest", bargap=0, legend={"orientation": "h", "y": -0.12})
    return figure, detail


def small_multiples(runs, end):
    """Utilisation and queue length over time, one row per policy, on one time axis."""
    name, unit = time_unit(end)
    figure = make_subplots(rows=len(runs), cols=2, shared_xaxes=True, vertical_spacing=0.06 / max(len(runs), 1),
                           column_titles=["compute hosts busy (fraction)", "jobs waiting"],
                           row_titles=list(runs))
    for row, run in enumerate(runs.values(), start=1):
        for col, (times, values) in enumerate((run.utilisation, run.queue), start=1):
            x, y = step_means(times, values, end)
            figure.add_trace(go.Scatter(x=x / unit, y=y, mode="lines", line_shape="hv", showlegend=False,
                                        line={"width": 1, "color": "#2166ac" if col == 1 else "#762a83"}),
                             row=row, col=col)
        figure.update_yaxes(range=[0, 1.05], row=row, col=1)
    figure.update_xaxes(title_text=f"time ({name})", range=[0, end / unit], row=len(runs))
    figure.update_layout(height=max(260, 170 * len(runs)), title="utilisation and queue length",
                         margin={"r": 120})
    return figure


def _box(values):
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    low = values[values >= q1 - 1.5 * (q3 - q1)].min()
    high = values[values <= q3 + 1.5 * (q3 - q1)].max()
    return {"q1": [q1], "median": [median], "q3": [q3], "lowerfence": [low], "upperfence": [high],
            "mean": [values.mean()]}


def distributions(panels):
    """``panels``: {title: {policy: per-job values}}; box plots from precomputed quartiles (so the
    page does not hold every job's value). The mean is a dashed line in the box and a diamond too:
    a precomputed box's mean does not widen the axis, and a mean above the whisker (a few very slow
    jobs) would fall off it."""
    shown = {title: samples for title, samples in panels.items() if any(len(v) for v in samples.values())}
    figure = make_subplots(rows=1, cols=max(len(shown), 1), subplot_titles=list(shown))
    for col, samples in enumerate(shown.values(), start=1):
        values = np.concatenate([np.asarray(v, dtype=float) for v in samples.values() if len(v)])
        for policy, sample in samples.items():
            if len(sample):
                box = _box(sample)
                figure.add_trace(go.Box(name=policy, x=[policy], boxmean=True, showlegend=False,
                                        marker={"color": "#4d4d4d"}, **box), row=1, col=col)
                figure.add_trace(go.Scatter(x=[policy], y=box["mean"], mode="markers", name="mean",
                                            showlegend=False, marker={"symbol": "diamond", "color": "#b2182b"},
                                            hovertemplate="mean %{y:.4g}<extra></extra>"), row=1, col=col)
        if values.min() > 0 and values.max() / values.min() > 30:
            figure.update_yaxes(type="log", row=1, col=col)
    figure.update_layout(height=420, title="per-job distributions: box = quartiles, whiskers = 1.5 IQR, "
                                           "dashed line and red diamond = mean")
    return figure


def write_run_page(folder, tau=metrics.DEFAULT_BSLD_TAU):
    """FOLDER/report.html for the outputs FOLDER/out_*; ``tau``: the bounded slowdown's. Returns its path."""
    prefix = Path(folder) / "out"
    run = load_run(prefix)
    # The scheduler as the user typed it (the marks of engines.run), not its file's name.
    name = run.record.get("scheduler_name") or Path(run.record["spec"]["scheduler"]).stem
    degraded = "; ".join(run.record.get("degraded") or [])
    label = policy_label(name, degraded)
    summary = metrics.summarize(prefix, run.nb_compute, tau=tau)
    jobs = metrics.measured_jobs(prefix)
    page = Page(f"batio run: {label} on {Path(run.record['spec']['platform']).name}")
    if degraded:
        page.add(f'<p class="note"><b>{DEGRADED}</b>: {html.escape(name)} was run on inputs it does not fit '
                 f"(--allow-unfit): {html.escape(degraded)}. Its results are not those of the policy "
                 "it implements.</p>")
    page.add(made_by() + f"<h2>Summary</h2><pre>{html.escape(metrics.format_summary(summary))}</pre>")
    end = span_of({label: run})
    page.add("<h2>Schedule</h2>")
    page.notes(run.notes)
    page.figure(*gantt_figure(run, label, end, {}))
    page.figure(small_multiples({label: run}, end))
    page.figure(distributions({"slowdown": {label: jobs["stretch"].dropna()},
                               f"bounded slowdown (tau {tau:g} s)": {label: metrics.bounded_slowdowns(jobs, tau)}}))
    page.add("<p>No I/O slowdown: it needs a reference run of the jobs alone (`batio compare`).</p>")
    page.add("<h2>Inputs</h2>" + inputs([run.record]))
    return page.write(Path(folder) / PAGE)


def intervals_figure(summary, judged, title):
    """Each policy's mean of each judged metric with its 95 % interval (report.md's intervals.png)."""
    shown = [metric for metric in judged if summary[metric].notna().any()]
    figure = make_subplots(rows=1, cols=max(len(shown), 1), subplot_titles=[SHOWN[m][0] for m in shown])
    for col, metric in enumerate(shown, start=1):
        scale = SCALE.get(metric, 1)
        figure.add_trace(go.Scatter(x=list(summary["policy"]), y=summary[metric] * scale, mode="markers",
                                    showlegend=False, marker={"color": "#2166ac", "size": 8},
                                    error_y={"type": "data", "array": summary[f"{metric}_ci"].fillna(0) * scale}),
                         row=1, col=col)
    figure.update_layout(height=380, title=title)
    return figure


def _group_section(page, view, per_job, out, baseline, replica="seed"):
    """One platform x workload x engine group (a report.GroupView): table, differences, charts."""
    platform, workload, engine = (html.escape(str(key)) for key in view.keys)
    page.add(f"<h2>{workload} on {platform} ({engine} engine)</h2><p>{html.escape(view.note)}</p>"
             + table(*view.cells))
    if view.differences is not None:
        page.add(f"<p>Paired differences to {html.escape(baseline)}, replica by replica:</p>"
                 + table(*view.differences))
        page.figure(intervals_figure(view.summary, JUDGED, f"{workload} on {platform}: means and 95 % intervals "
                                                           "over replicas"))
        page.add("<p>Intervals of two policies' means may overlap while their paired difference excludes 0: "
                 "the verdicts come from the paired differences.</p>")
    ok = view.runs[view.runs["status"] == "ok"]
    if ok.empty:
        page.add("<p>No successful run: no charts.</p>")
        return []
    degraded = dict(zip(view.summary["policy"], view.summary["degraded"]))
    shown = ok.sort_values("seed", na_position="first").groupby("policy", sort=False).head(1)
    runs = {row.policy: load_run(out / row.run_dir / "out") for row in shown.itertuples()}
    end = span_of(runs)
    samples: dict[str, dict] = {"slowdown": {}, "bounded slowdown": {}, "I/O slowdown": {}}
    for policy, replicas in ok.groupby("policy", sort=False):
        values = [per_job[row.run_id] for row in replicas.itertuples()]
        for index, title in enumerate(samples):
            samples[title][policy] = pd.concat([value[index] for value in values]) if values else []
    seed_note = "" if shown["seed"].isna().all() else f", {replica} {shown['seed'].dropna().min()}"
    page.add("<h3>Schedules</h3>")
    for row in shown.itertuples():
        run = runs[row.policy]
        page.notes(run.notes)
        io = per_job[row.run_id][2]
        page.figure(*gantt_figure(run, f"{policy_label(row.policy, degraded.get(row.policy))}{seed_note}", end,
                                  dict(zip(io.index.astype(str), io))))
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
    page.add(made_by() + f"<p>{len(results)} runs, {int((results['status'] == 'ok').sum())} succeeded."
             + (f" Ratios (x) are to <b>{html.escape(baseline)}</b>." if baseline else "") + "</p>")
    page.add(opening(data))
    records = []
    for view in data.groups:
        records += _group_section(page, view, data.per_job, out, baseline,
                                  "window" if data.windows is not None else "seed")
    page.add(closing(data))
    page.add("<h2>Inputs</h2>" + inputs(records))
    page.add("<h2>Definitions</h2>" + markdown_html(metrics.definitions(data.tau)))
    (out / "report").mkdir(parents=True, exist_ok=True)
    return page.write(out / "report" / PAGE)
