"""A file-system twin from TOKIO-ABC: each benchmark run simulated against the
background traffic measured while it ran.

Design notes: docs/internals.md.
"""

from dataclasses import dataclass, field
import json
import logging
import math
from pathlib import Path
import xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr

import numpy as np
import pandas as pd

from batio.errors import InputError
from batio.readings import trace_date, trace_label
from batio.twin.accuracy import STATS, error_stats, spearman
from batio.twin.fstwin_read import GIB, MIB, read_runs

log = logging.getLogger(__name__)


@dataclass
class Twin:
    """One file system's fitted model (bytes/s throughout)."""
    curve: tuple  # ((clients, capacity), ...): the batio:contention curve of the storage link
    background_client: float  # l_bg: the rate of one background client
    client_limits: dict = field(default_factory=dict)  # configuration -> l_c

    def capacity(self, clients):
        """C(k), linear between the curve's points and flat outside (as the engine reads it)."""
        ks, cs = zip(*self.curve)
        return np.interp(clients, ks, cs)

    def background_clients(self, background):
        return np.ceil(np.asarray(background, dtype=float) / self.background_client)

    def predict(self, runs):
        """The benchmark's bandwidth for each run (NaN for a configuration not fitted)."""
        limit = runs["config"].map(self.client_limits).to_numpy(dtype=float)
        return share(runs["clients"].to_numpy(dtype=float), limit, runs["background"].to_numpy(dtype=float),
                     self.background_clients(runs["background"]), self.capacity)


def share(n, limit, background, m, capacity):
    """Max-min fair share of n clients capped at ``limit`` each, beside m clients
    carrying ``background`` bytes/s in all, on a link of capacity C(n + m)."""
    link = capacity(n + m)
    level = link / (n + m)  # every client's share when no cap binds
    per_background = np.divide(background, m, out=np.zeros_like(background), where=m > 0)
    return np.where(limit <= level, n * limit,  # the benchmark is capped below the fair share
                    np.where(per_background <= level, np.minimum(n * limit, link - background),
                             n * level))


def _limits(runs, curve, background_client, factors):
    """Per configuration, the l_c among median(measured / n) x factors with the
    lowest mean |log(predicted / measured)|, given the rest of the model (an
    L1 fit in log: with no contention it picks the configuration's median)."""
    twin = Twin(curve, background_client)
    m = twin.background_clients(runs["background"])
    limits = {}
    for config, group in runs.groupby("config"):
        index = group.index.to_numpy()
        n = runs["clients"].to_numpy(dtype=float)[index]
        measured = runs["measured"].to_numpy()[index]
        base = np.median(measured / n)
        candidates = base * factors[:, None]
        predicted = share(n[None, :], candidates, runs["background"].to_numpy()[index][None, :], m[index][None, :],
                          twin.capacity)
        error = np.mean(np.abs(np.log(predicted / measured)), axis=1)
        limits[config] = float(candidates[int(np.argmin(error)), 0])
    return limits


def fit(runs, *, grid=12):
    """The twin of one file system fitted on ``runs``: a grid search on the median
    absolute % error, then a finer grid around the best point.

    Parameters: the capacity C1 at the smallest benchmark's client count and
    C2 = ratio x C1 at 8x the largest (the curve in between), the background
    client rate, and each configuration's per-client limit. With one client
    count the curve cannot be identified: the capacity is flat (a warning).
    """
    if runs.empty:
        raise InputError("fit", "no usable run to fit")
    measured = runs["measured"].to_numpy()
    n_min, n_max = int(runs["clients"].min()), int(runs["clients"].max())
    falling = [1.0, 0.8, 0.6, 0.4, 0.25] if n_min < n_max else [1.0]
    if n_min == n_max:
        where = runs["file_system"].iloc[0] if "file_system" in runs else "fit"
        log.warning("%s: every run uses %d clients: no contention curve can be identified from one client count; "
                    "the link's capacity is fitted flat", where, n_min)
    factors = np.geomspace(0.5, 4.0, 25)

    def search(capacities, ratios, rates):
        best: tuple[float, Twin | None, tuple | None] = (math.inf, None, None)
        for c1 in capacities:
            for ratio in ratios:
                # Two points even when flat: the platform's nodes reach the curve's last (8x the largest run).
                curve = ((n_min, c1), (8 * n_max, c1 * ratio))
                for rate in rates:
                    twin = Twin(curve, float(rate), _limits(runs, curve, rate, factors))
                    score = float(np.median(np.abs(twin.predict(runs) - measured) / measured))
                    if score < best[0]:
                        best = (score, twin, (c1, ratio, rate))
        return best

    # Capacities around what the runs achieved with their background, up to far
    # beyond it (a link that never saturates); background client rates likewise.
    top = float(np.percentile(measured + runs["background"].to_numpy(), 99))
    typical = float(np.percentile(runs["background"], 50)) + 1.0
    _, _, (c1, ratio, rate) = search(top * np.geomspace(0.5, 64.0, grid), falling,
                                     typical * np.geomspace(1 / 64, 64, grid))
    step = np.geomspace(1 / 1.6, 1.6, 9)
    ratios = np.unique(np.clip(ratio * step[2:-2], 0.05, 1.0)) if len(falling) > 1 else falling
    score, twin, _ = search(c1 * step, ratios, rate * step)
    log.info("fit: median abs error %.1f %% on %d runs", 100 * score, len(runs))
    return twin


def contention_curve(runs):
    """What the runs of one file system tell of its contention curve (fit.json)."""
    counts = sorted(int(n) for n in runs["clients"].unique())
    if len(counts) == 1:
        return f"not identifiable: every run uses {counts[0]} clients"
    return f"fitted on {len(counts)} client counts, {counts[0]} to {counts[-1]}"


def per_config_median(train, runs):
    """Baseline: each configuration's median bandwidth in ``train``."""
    return runs["config"].map(train.groupby("config")["measured"].median()).to_numpy(dtype=float)


def background_share(train):
    """Baseline: predict(runs) = median_c x ((1 + B_c / b) / (1 + B / b))^a, with B_c
    the configuration's median background; a and b fitted on ``train``."""
    medians = train.groupby("config")["measured"].median()
    typical = train.groupby("config")["background"].median()

    def predictor(a, b):
        def predict(runs):
            b_c = runs["config"].map(typical).to_numpy(dtype=float)
            ratio = (1 + b_c / b) / (1 + runs["background"].to_numpy() / b)
            return runs["config"].map(medians).to_numpy(dtype=float) * ratio ** a
        return predict

    measured = train["measured"].to_numpy()
    scale = max(float(train["background"].median()), 1.0)
    candidates = [(a, b) for a in np.linspace(0.0, 1.5, 16) for b in scale * np.geomspace(1 / 32, 32, 21)]
    a, b = min(candidates, key=lambda p: np.median(np.abs(predictor(*p)(train) - measured) / measured))
    return predictor(a, b), {"a": float(a), "b_GiBps": float(b / GIB)}


def split(runs, fit_until):
    """(first part, second part) at a date ('YYYY-MM-DD'); default: the middle of the time range."""
    if fit_until is None:
        cut = runs["start"].min() + (runs["start"].max() - runs["start"].min()) / 2
    else:
        # The runs' start times are naive UTC: the date is read so (ASCII digits, 1970 to 2100).
        cut = pd.Timestamp(trace_date(fit_until, "--fit-until", None, example="2017-07-18"), unit="s")
    first, second = runs[runs["start"] < cut], runs[runs["start"] >= cut]
    if first.empty or second.empty:
        raise InputError("--fit-until", f"{cut.date()} leaves no run on one side "
                                        f"(runs from {runs['start'].min().date()} to {runs['start'].max().date()})")
    return first.reset_index(drop=True), second.reset_index(drop=True), cut


def recalibrated(runs, test, predicted, days):
    """The twin with each configuration's level re-estimated before every run: its
    prediction x the median measured / predicted of the same configuration's runs in
    the ``days`` before (only earlier runs; the fixed fit where there are none)."""
    ratio = runs["measured"].to_numpy() / predicted(runs)
    result = predicted(test).copy()
    window = np.timedelta64(days, "D")
    for config, past in runs.assign(ratio=ratio).groupby("config"):
        times = past["start"].to_numpy()
        order = np.argsort(times, kind="stable")
        times, ratios = times[order], past["ratio"].to_numpy()[order]
        for i in np.flatnonzero((test["config"] == config).to_numpy()):
            start = test["start"].to_numpy()[i]
            chosen = ratios[np.searchsorted(times, start - window):np.searchsorted(times, start)]
            chosen = chosen[np.isfinite(chosen)]
            if len(chosen):
                result[i] *= np.median(chosen)
    return result


def predictions(runs, train, test, twins, days=28):
    """Per run of ``test``, each predictor's bandwidth (bytes/s); ``twins``: file system -> Twin."""
    share_predict, _ = background_share(train)

    def model(frame):
        values = np.full(len(frame), np.nan)
        for file_system, twin in twins.items():
            mine = (frame["file_system"] == file_system).to_numpy()
            values[mine] = twin.predict(frame[mine])
        return values

    recent, rolling = recent_names(days)
    return {"twin": model(test), recent: recalibrated(runs, test, model, days),
            rolling: recalibrated(runs, test, lambda frame: per_config_median(train, frame), days),
            "config median": per_config_median(train, test), "background share": share_predict(test)}


def recent_names(days):
    """The predictors that follow the recent level: the recalibrated twin, and the rolling
    median of each configuration (its first-part median where no run is that recent)."""
    return f"twin, recalibrated on the last {days} days", f"config median, rolling over the last {days} days"


def paired_gap(a, b, measured, rounds=4000, seed=0):
    """Median abs % error of ``a`` minus that of ``b`` on the runs both predict, with
    its 95 % paired bootstrap interval (runs drawn with replacement, each with its
    two errors; ``rounds`` draws, numpy's generator seeded with ``seed``)."""
    a, b, measured = (np.asarray(v, dtype=float) for v in (a, b, measured))
    keep = np.isfinite(a) & np.isfinite(b) & (measured > 0)
    first, second = (np.abs(v[keep] - measured[keep]) / measured[keep] * 100 for v in (a, b))
    n = len(first)
    if not n:
        return {"pairs": 0}
    rng = np.random.default_rng(seed)
    draws = []
    for done in range(0, rounds, 500):  # 500 draws at a time: memory stays small
        picks = rng.integers(0, n, (min(500, rounds - done), n))
        draws.append(np.median(first[picks], axis=1) - np.median(second[picks], axis=1))
    low, high = np.percentile(np.concatenate(draws), [2.5, 97.5])
    return {"pairs": n, "median_ape": [float(np.median(first)), float(np.median(second))],
            "difference_points": float(np.median(first) - np.median(second)),
            "ci95_points": [float(low), float(high)],
            "method": f"paired bootstrap of the difference of medians, {rounds} draws, seed {seed}"}


def table(test, predicted, label, groups=("all", "file_system", "app", "direction")):
    """Rows (group, predictor, STATS...): every predictor over all runs of ``test``,
    per file system (when there are several), app and direction; groups are
    prefixed with ``label``."""
    rows = []
    for by in groups:
        if by == "file_system" and test[by].nunique() < 2:
            continue
        keys = [("all", np.ones(len(test), dtype=bool))] if by == "all" else \
            [(f"{by}={key}", (test[by] == key).to_numpy()) for key in sorted(test[by].unique())]
        for key, mask in keys:
            for name, values in predicted.items():
                rows.append({"group": f"{label}: {key}", "predictor": name,
                             **error_stats(values[mask], test["measured"].to_numpy()[mask])})
    return pd.DataFrame(rows, columns=["group", "predictor", *STATS])


def fit_all(train):
    """file system -> Twin fitted on its runs of ``train``."""
    return {fs: fit(group.reset_index(drop=True)) for fs, group in train.groupby("file_system")}


def platform_text(twins, source):
    """A platform with one storage host per file system behind its link, which carries the
    fitted curve (batio:contention) and the rest of the fit (batio:twin, JSON)."""
    nodes = max(int(k) for twin in twins.values() for k, _ in twin.curve)
    node_link = max(v for twin in twins.values() for v in twin.client_limits.values())
    storage, routes = [], []
    for fs, twin in sorted(twins.items()):
        fit_json = json.dumps({"file_system": fs, "background_client_Bps": twin.background_client,
                               "client_limits_Bps": twin.client_limits}, sort_keys=True)
        curve = " ".join(f"{k}:{c:.6g}" for k, c in twin.curve)
        storage.append(f"""    <zone id="{fs}_zone" routing="Full">
      <host id="{fs}" speed="1Gf"><prop id="role" value="storage"/></host>
    </zone>
    <link id="{fs}_link" bandwidth="{max(c for _, c in twin.curve):.6g}Bps" latency="0us">
      <prop id="batio:contention" value="{curve}"/>
      <prop id="batio:twin" value={quoteattr(fit_json)}/>
    </link>""")
        routes.append(f"""    <zoneRoute src="compute" dst="{fs}_zone" gw_src="nodecompute_router" gw_dst="{fs}">
      <link_ctn id="{fs}_link"/>
    </zoneRoute>""")
    newline = "\n"
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- File-system twin fitted by batio twin on {Path(source).name}: per file system, a storage host behind its
     link; the link carries the fitted contention curve (embedded engine only; real Batsim shares the link
     fairly at its XML bandwidth, the curve's peak) and the fit (batio:twin: the background client rate and
     each configuration's per-client limit, bytes/s). Compute nodes node0..node{nodes - 1}: one per client,
     each behind a link of the largest per-client limit. -->
<platform version="4.1">
  <zone id="machine" routing="Full">
    <cluster id="compute" prefix="node" suffix="" radical="0-{nodes - 1}" speed="1Gf"
             bw="{node_link:.6g}Bps" lat="0us"/>
    <zone id="master_zone" routing="Full"><host id="master_host" speed="1Gf"/></zone>
    <link id="service" bandwidth="{node_link:.6g}Bps" latency="0us"/>
{newline.join(storage)}
    <zoneRoute src="compute" dst="master_zone" gw_src="nodecompute_router" gw_dst="master_host">
      <link_ctn id="service"/>
    </zoneRoute>
{newline.join(routes)}
  </zone>
</platform>
"""


def read_platform(path):
    """file system -> Twin, from the links of a platform that ``platform_text`` wrote."""
    from batio.inputs.contention import PROPERTY, link_properties, parse_curve
    try:
        links = link_properties(path)
    except FileNotFoundError:
        raise InputError(path, "no such platform file") from None
    except ET.ParseError as error:
        raise InputError(path, f"not a platform (XML: {error})") from None
    twins = {}
    for link, props in links.items():
        if "batio:twin" not in props:
            continue
        try:
            fit_json = json.loads(props["batio:twin"])
            fs, rate, limits = (fit_json["file_system"], float(fit_json["background_client_Bps"]),
                                {k: float(v) for k, v in fit_json["client_limits_Bps"].items()})
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise InputError(path, f"link '{link}': unreadable fit ({error!r})", field="batio:twin") from None
        if PROPERTY not in props:
            raise InputError(path, f"link '{link}': a fit without its contention curve", field=PROPERTY)
        curve = parse_curve(props[PROPERTY], path, PROPERTY, f"link '{link}'")
        twins[fs] = Twin(curve.points, rate, limits)
    if not twins:
        raise InputError(path, "no link carries a fit (batio:twin); make one with batio twin")
    return twins


def validate_benchmarks(path, *, platform=None, out=None, fit_until=None, days=28):
    """Held-out error of the twin and of both baselines (STATS per group and predictor).

    The twin is fitted on the runs before ``fit_until`` (default: the middle of the
    file's time range), or read from ``platform``; the baselines are always fitted
    on those runs. Rows 'held-out: ...' are the runs from ``fit_until`` on, rows
    'fitted half: all' the runs before it. ``out``: a folder for validation.csv.
    """
    return _validation(path, platform, out, fit_until, days)[0]


def _validation(path, platform, out, fit_until, days):
    """(validate_benchmarks' table, the recalibrated twin's held-out ``paired_gap`` to
    the rolling configuration median)."""
    runs, _ = read_runs(path)
    train, test, _ = split(runs, fit_until)
    twins = read_platform(platform) if platform is not None else fit_all(train)
    held_out = predictions(runs, train, test, twins, days)
    frame = pd.concat([table(test, held_out, "held-out"),
                       table(train, predictions(runs, train, train, twins, days), "fitted half", groups=("all",))],
                      ignore_index=True)
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        frame.to_csv(Path(out) / "validation.csv", index=False, float_format="%.4g")
    recent, rolling = recent_names(days)
    return frame, paired_gap(held_out[recent], held_out[rolling], test["measured"])


def system_name(system, path):
    """``--system``, else the summaries file's name up to its first '-' or '.': a plain name
    (it names the platform file under --out, never a path elsewhere)."""
    if system is None:
        system = Path(path).name.split("-")[0].split(".")[0]
    return trace_label(system, "--system", None, "system name")


def make_twin(path, out, *, system=None, fit_until=None, days=28):
    """Fit, validate and write DIR/SYSTEM.xml, DIR/fit.json and DIR/validation.csv; return the table.
    fit.json holds the held-out ``paired_gap`` of the recalibrated twin to the rolling median."""
    system = system_name(system, path)
    runs, skipped = read_runs(path)
    train, test, cut = split(runs, fit_until)
    twins = fit_all(train)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{system}.xml").write_text(platform_text(twins, path))
    _, share_params = background_share(train)
    fit_record = {
        "source": str(path), "fit_until": str(cut.date()), "runs_used": len(runs), "runs_fitted": len(train),
        "runs_held_out": len(test), "skipped": dict(skipped), "background_share": share_params,
        "what_limits_it": what_limits(runs, train, test),
        "twins": {fs: {"contention_curve": contention_curve(train[train["file_system"] == fs]),
                       "curve_GiBps": [[k, c / GIB] for k, c in twin.curve],
                       "background_client_GiBps": twin.background_client / GIB,
                       "client_limits_MiBps": {k: v / MIB for k, v in sorted(twin.client_limits.items())}}
                  for fs, twin in sorted(twins.items())}}
    frame, gap = _validation(path, out / f"{system}.xml", out, str(cut.date()), days)
    fit_record["recalibrated_twin_minus_rolling_median"] = gap
    (out / "fit.json").write_text(json.dumps(fit_record, indent=1) + "\n")
    return frame


def what_limits(runs, train, test):
    """What bounds any predictor fitted on ``train``: the variance of log bandwidth
    within configurations (whole file), the share of it that the shift between
    ``train`` and ``test`` explains (configuration means per part), the share
    that background traffic explains within a configuration and part (R^2 of a
    line in log(1 + B / 1 GiB/s)), and the held-out median abs % error of the
    held-out part's own configuration medians (a predictor that knew the shift);
    and the rank correlation of OST fullness with log bandwidth within a
    configuration and part."""
    both = pd.concat([train.assign(part=0), test.assign(part=1)], ignore_index=True)
    y = np.log(both["measured"])
    within = y - y.groupby(both["config"]).transform("mean")
    within_part = y - y.groupby([both["config"], both["part"]]).transform("mean")
    x = np.log1p(both["background"] / GIB)
    x = x - x.groupby([both["config"], both["part"]]).transform("mean")
    slope = float((x * within_part).sum() / (x * x).sum()) if (x * x).sum() > 0 else 0.0
    explained = 1 - float(((within_part - slope * x) ** 2).sum() / (within_part ** 2).sum())
    own = test["config"].map(test.groupby("config")["measured"].median()).to_numpy()
    return {"variance_log_bw_within_config": float(within.var()),
            "share_explained_by_the_shift_between_parts": 1 - float(within_part.var() / within.var()),
            "share_explained_by_background_within_config_and_part": explained,
            "background_slope_dlogbw_dlog1pB": slope,
            "held_out_error_of_its_own_config_medians": error_stats(own, test["measured"])["median_ape"],
            "spearman_fullness_within_config_and_part": spearman(both["fullness"][both["fullness"].notna()],
                                                                 within_part[both["fullness"].notna()])}
