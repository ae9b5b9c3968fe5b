"""``batio calibrate``: a contention curve from a measurement of a real file system.

Design notes: docs/internals.md.
"""

import csv
import json
import logging
import math
from pathlib import Path
import re
import statistics
import tempfile

from batio.errors import InputError
from batio.importers.common import read_text
from batio.outfiles import write_text, writing, written
from batio.quantities import decimal

UNITS = {"B/s": 1.0, "MB/s": 1e6, "GB/s": 1e9, "MiB/s": 2.0 ** 20, "GiB/s": 2.0 ** 30}
SIMGRID_UNITS = {"B/s": "", "MB/s": "MBps", "GB/s": "GBps", "MiB/s": "MiBps", "GiB/s": "GiBps"}
PROPERTIES = {"both": "batio:contention", "read": "batio:contention_read", "write": "batio:contention_write"}
PROBE_SECONDS = 10.0  # each wave of writers lasts about this long at the declared rate
# The probe simulates one host and one job per client of every measured count:
# past this many clients it would take hours and thousands of threads.
MAX_CLIENTS = 4096
MAX_PROBE_JOBS = 16384   # clients summed over the measured counts
# An aggregate throughput outside these bounds (bytes/s) is a unit or typing
# mistake: no file system serves less than 1 kB/s or more than 1 PB/s.
THROUGHPUT_BOUNDS = (1e3, 1e15)
# A declared bandwidth this many times the measured peak is most likely a unit slip (Gbps for GBps, MB for GB).
UNIT_SLIP_FACTOR = 10.0

logger = logging.getLogger(__name__)


def read_measurement(path, unit="GB/s", option="--unit"):
    """[(clients, bytes/s)] sorted by clients, the median of each client count's rows;
    ``option`` is the command line's name for ``unit``."""
    if unit not in UNITS:
        raise InputError(option, f"unknown unit {unit!r} (known: {', '.join(UNITS)})")
    rows: dict[int, list[float]] = {}
    header_seen = False
    for number, row in enumerate(csv.reader(read_text(path, "measurement file").splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        try:
            clients, value = decimal(row[0]), decimal(row[1])
        except (ValueError, IndexError):
            if not rows and not header_seen:
                header_seen = True  # a header: the first line that is not a comment
                continue
            raise InputError(path, f"line {number}: expected 'clients,throughput', got {','.join(row)!r}",
                             field="clients") from None
        if not (math.isfinite(clients) and 1 <= clients <= MAX_CLIENTS and clients == int(clients)):
            raise InputError(path, f"line {number}: clients must be a whole number from 1 to {MAX_CLIENTS} "
                                   f"(the probe simulates one host per client), got {row[0]}", field="clients")
        low, high = THROUGHPUT_BOUNDS
        if not low <= value * UNITS[unit] <= high:
            raise InputError(path, f"line {number}: the aggregate throughput must be from {low:g} to "
                                   f"{high:g} B/s (1 kB/s to 1 PB/s), got {row[1]} {unit}", field="throughput")
        rows.setdefault(int(clients), []).append(value * UNITS[unit])
    if not rows:
        raise InputError(path, "no measurement rows (expected lines 'clients,throughput')")
    if sum(rows) > MAX_PROBE_JOBS:
        raise InputError(path, f"the measured client counts add up to {sum(rows)}; the probe simulates one job per "
                               f"client of each count, at most {MAX_PROBE_JOBS} in all (keep fewer counts)",
                         field="clients")
    return [(clients, statistics.median(values)) for clients, values in sorted(rows.items())]


def _number(text):
    """A CSV number: ASCII digits only (Python's float also reads '١٢' and 'nan')."""
    text = text.strip()
    if not text.isascii() or not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        raise ValueError(text)
    return float(text)


def property_value(points, unit="B/s"):
    """The property's value, in the measurement's unit as SimGrid spells it (GB/s: GBps)."""
    return " ".join(f"{clients}:{throughput / UNITS[unit]:.10g}{SIMGRID_UNITS[unit]}" for clients, throughput in points)


def probe_platform(value, nb_hosts, prop="batio:contention"):
    """nb_hosts compute hosts whose own links never limit, a storage host 'pfs' behind
    'pfs_link', the regulated link; no latency anywhere."""
    from batio.inputs.contention import parse_curve
    peak = max(c for _, c in parse_curve(value, "probe", prop, "probe").points)
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="probe" routing="Full">
  <cluster id="compute" prefix="client" suffix="" radical="0-{nb_hosts - 1}" speed="1Gf"
           bw="{2 * peak:.10g}Bps" lat="0us"/>
  <zone id="master_zone" routing="Full"><host id="master_host" speed="1Gf"/></zone>
  <zone id="pfs_zone" routing="Full">
    <host id="pfs" speed="1Gf"><prop id="role" value="storage"/></host>
  </zone>
  <link id="pfs_link" bandwidth="{peak:.10g}Bps" latency="0us">
    <prop id="{prop}" value="{value}"/>
  </link>
  <link id="service" bandwidth="{2 * peak:.10g}Bps" latency="0us"/>
  <zoneRoute src="compute" dst="pfs_zone" gw_src="clientcompute_router" gw_dst="pfs"><link_ctn id="pfs_link"/></zoneRoute>
  <zoneRoute src="compute" dst="master_zone" gw_src="clientcompute_router" gw_dst="master_host"><link_ctn id="service"/></zoneRoute>
  <zoneRoute src="master_zone" dst="pfs_zone" gw_src="master_host" gw_dst="pfs"><link_ctn id="service"/></zoneRoute>
</zone></platform>
"""


def probe_workload(points, direction="write"):
    """One wave of k one-host transfers per measured k, each wave alone on the machine."""
    jobs, profiles, start = [], {}, 0.0
    key = "bytes_to_read" if direction == "read" else "bytes_to_write"
    for clients, throughput in points:
        size = throughput * PROBE_SECONDS / clients
        profiles[f"k{clients}"] = {"type": "parallel_homogeneous_pfs", key: size}
        jobs += [{"id": f"k{clients}_{i}", "subtime": start, "walltime": -1, "res": 1, "profile": f"k{clients}",
                  "clients": clients, "bytes": size} for i in range(clients)]
        start += 2 * PROBE_SECONDS
    return {"nb_res": max(k for k, _ in points), "jobs": jobs, "profiles": profiles}


def simulate_curve(points, value, workdir, direction="write"):
    """{clients: aggregate bytes/s the engine gives k concurrent clients}."""
    import pandas as pd

    from batio import engines
    from batio.resolve import resolve
    workdir = Path(workdir)
    prop = PROPERTIES["both" if direction == "write" else "read"]
    (workdir / "probe.xml").write_text(probe_platform(value, max(k for k, _ in points), prop))
    work = probe_workload(points, direction)
    (workdir / "probe.json").write_text(json.dumps(work))
    engines.run(resolve("fcfs", {}, str(workdir / "probe.xml"), [str(workdir / "probe.json")],
                        workdir / "probe" / "out").spec)
    jobs = pd.read_csv(workdir / "probe" / "out_jobs.csv")
    jobs["clients"] = jobs["job_id"].str.extract(r"^k(\d+)_")[0].astype(int)
    size = {job["id"]: job["bytes"] for job in work["jobs"]}
    result = {}
    for clients, wave in jobs.groupby("clients"):
        moved = sum(size[job_id] for job_id in wave["job_id"])
        result[int(clients)] = moved / (wave["finish_time"].max() - wave["starting_time"].min())
    return result


def _opening_tag(text, element_id, source):
    opening = re.compile(r"<(link|host|cluster)\b[^>]*?\bid\s*=\s*['\"]" + re.escape(element_id) + r"['\"][^>]*?(/?)>")
    match = opening.search(text)
    if not match:
        raise InputError(source, f"no <link>, <host> or <cluster> with id '{element_id}'", field="--element")
    return match


def check_element(platform, element_id):
    """The element exists and, when a host, is a storage host: `batio run` refuses a curve on any
    other host, so the calibrated platform would not run."""
    try:
        text = Path(platform).read_text()
    except OSError as error:
        raise InputError(platform, f"cannot read the platform: {error.strerror}") from None
    if _opening_tag(text, element_id, platform).group(1) == "host":
        from batio.inputs.platform import read_properties
        role = read_properties(platform)[0].get(element_id, {}).get("role", "")
        if role != "storage":
            raise InputError("--element", f"host '{element_id}' of {platform} is not a storage host (role "
                                          f"{role!r}): a contention curve goes on a storage host, its <cluster> "
                                          "or a <link>")


def contradiction(text, element_id, points, source):
    """Why the measured curve contradicts the bandwidth the element declares (a link's
    ``bandwidth``, a cluster's ``bw``), or None: a peak above it, which real Batsim (ignoring
    the curve) caps at the declared value, or a declared value far above every measurement."""
    from batio.inputs.contention import parse_curve
    found = re.search(r"\b(?:bandwidth|bw)\s*=\s*['\"]([^'\"]*)['\"]", _opening_tag(text, element_id, source).group(0))
    if found is None:
        return None
    # Read as a one-point curve: the same SimGrid units, and a one-line error on a bad value.
    declared = parse_curve(f"1:{found.group(1)}", source, "bandwidth", element_id).points[0][1]
    clients, peak = max(points, key=lambda point: point[1])
    where = f"'{element_id}' declares {declared / 1e9:.4g} GB/s"
    if peak > declared * 1.01:
        return (f"the curve reaches {peak / 1e9:.4g} GB/s at {clients} clients, above what {where}: real Batsim, "
                "which ignores the curve, caps it there (check the unit or the platform's bandwidth)")
    if declared > UNIT_SLIP_FACTOR * peak:
        return (f"{where}, over {UNIT_SLIP_FACTOR:g} times the curve's peak ({peak / 1e9:.4g} GB/s at {clients} "
                "clients): check the unit (--unit) or the platform's bandwidth")
    return None


def insert_property(text, element_id, prop, value, source):
    """The platform text with <prop id=prop value=value/> added to the element of that id."""
    match = _opening_tag(text, element_id, source)
    tag, closed = match.group(1), match.group(2)
    indent = " " * (match.start() - text.rfind("\n", 0, match.start()) - 1)
    line = f'<prop id="{prop}" value="{value}"/>'
    if closed:
        replacement = match.group(0)[:-2].rstrip() + f">\n{indent}  {line}\n{indent}</{tag}>"
    else:
        end = text.find(f"</{tag}>", match.end())
        if f'id="{prop}"' in text[match.end():end]:
            raise InputError(source, f"{tag} '{element_id}' already has a {prop} property; remove it first",
                             field=prop)
        replacement = match.group(0) + f"\n{indent}  {line}"
    return text[:match.start()] + replacement + text[match.end():]


def figure(rows, curve, path, title, unit="GB/s"):
    """Measured, declared and simulated aggregate against clients, in the measurement's unit."""
    scale = 1e9 / UNITS[unit]
    from matplotlib.figure import Figure
    import numpy as np
    fig = Figure(figsize=(6.4, 4.2))
    axis = fig.add_subplot()
    clients = [r["clients"] for r in rows]
    dense = sorted(set(int(k) for k in np.geomspace(min(clients), max(clients), 200)) | set(clients))
    axis.plot(dense, [curve(k) / UNITS[unit] for k in dense], "-", color="0.6",
              label="declared curve (linear in clients between points)")
    axis.plot(clients, [r["measured_GBps"] * scale for r in rows], "o", color="tab:blue", label="measured")
    axis.plot(clients, [r["simulated_GBps"] * scale for r in rows], "x", color="tab:red", markersize=9,
              label="simulated (k concurrent clients, embedded engine)")
    if max(clients) / min(clients) > 16:
        axis.set_xscale("log", base=2)
    axis.set_xlabel("concurrent clients")
    axis.set_ylabel(f"aggregate throughput ({unit})")
    axis.set_ylim(bottom=0)
    axis.set_title(title, fontsize=10)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    fig.tight_layout()
    with written(path):
        fig.savefig(path, dpi=110)


def calibrate(measurement, out, unit="GB/s", direction="both", platform=None, element=None):
    """Write the property, the comparison table and figure (and a calibrated platform); return the rows."""
    if direction not in PROPERTIES:
        raise InputError("--direction", f"unknown direction {direction!r} (known: {', '.join(PROPERTIES)})")
    if (platform is None) != (element is None):
        raise InputError("--platform", "--platform and --element go together (the element to put the curve on)")
    if platform is not None:
        check_element(platform, element)
    points = read_measurement(measurement, unit)
    value = property_value(points, unit)
    prop = PROPERTIES[direction]
    from batio.inputs.contention import parse_curve
    curve = parse_curve(value, measurement, prop, "measurement")  # before the probe: errors name the CSV
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as workdir:
        simulated = simulate_curve(points, value, workdir, "read" if direction == "read" else "write")
    rows = [{"clients": k, "measured_GBps": c / 1e9, "declared_GBps": curve(k) / 1e9,
             "simulated_GBps": simulated[k] / 1e9, "error_percent": 100 * (simulated[k] / c - 1)}
            for k, c in points]
    line = f'<prop id="{prop}" value="{value}"/>'
    write_text(out / "property.xml", line + "\n")
    with writing(out / "calibration.csv", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({key: (f"{v:.6g}" if isinstance(v, float) else v) for key, v in row.items()} for row in rows)
    figure(rows, curve, out / "calibration.png", f"{Path(measurement).name}: measured vs simulated", unit)
    if platform is not None:
        text = Path(platform).read_text()
        problem = contradiction(text, element, points, platform)
        if problem:
            logger.warning("%s: %s", platform, problem)
        calibrated = insert_property(text, element, prop, value, platform)
        write_text(out / f"{Path(platform).stem}_calibrated.xml", calibrated)
    return rows, line
