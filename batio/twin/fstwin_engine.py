"""The file-system twin's model of one run, simulated by the embedded engine.

``batio.twin.fstwin`` fits and validates with an analytic evaluation of the model
(``fstwin.share``); this module runs the same model as a SimGrid simulation, to
show that both give the same bandwidth. One run becomes a platform and a
workload: the benchmark's n clients (hosts ``a*``, each behind a link of its
configuration's per-client limit) and m background clients (hosts ``b*``,
each behind a link of B/m) transfer to one storage host at the same time
through ``pfs_link`` with the twin's contention curve. The benchmark's
bandwidth is its bytes over its time.
"""

import json
import logging
from pathlib import Path
import tempfile

import numpy as np
import pandas as pd

from batio.errors import EngineError

log = logging.getLogger(__name__)

BENCH_SECONDS = 10.0  # the benchmark's transfer lasts about this long at the predicted rate


def probe_platform(n, limit, m, per_background, curve):
    """n benchmark hosts and m background hosts, all to ``pfs`` through ``pfs_link``."""
    value = " ".join(f"{k}:{c:.10g}" for k, c in curve)
    peak = max(c for _, c in curve)
    cluster = routes = ""
    if m:
        cluster = f"""
    <cluster id="bg" prefix="b" suffix="" radical="0-{m - 1}" speed="1Gf" bw="{per_background:.10g}Bps" lat="0us"/>"""
        routes = """
    <zoneRoute src="bg" dst="pfs_zone" gw_src="bbg_router" gw_dst="pfs"><link_ctn id="pfs_link"/></zoneRoute>
    <zoneRoute src="bg" dst="master_zone" gw_src="bbg_router" gw_dst="master_host">
      <link_ctn id="service"/></zoneRoute>"""
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="probe" routing="Full">
    <cluster id="bench" prefix="a" suffix="" radical="0-{n - 1}" speed="1Gf" bw="{limit:.10g}Bps" lat="0us"/>{cluster}
    <zone id="master_zone" routing="Full"><host id="master_host" speed="1Gf"/></zone>
    <zone id="pfs_zone" routing="Full"><host id="pfs" speed="1Gf"><prop id="role" value="storage"/></host></zone>
    <link id="pfs_link" bandwidth="{peak:.10g}Bps" latency="0us"><prop id="batio:contention" value="{value}"/></link>
    <link id="service" bandwidth="{peak:.10g}Bps" latency="0us"/>
    <zoneRoute src="bench" dst="pfs_zone" gw_src="abench_router" gw_dst="pfs"><link_ctn id="pfs_link"/></zoneRoute>
    <zoneRoute src="bench" dst="master_zone" gw_src="abench_router" gw_dst="master_host">
      <link_ctn id="service"/></zoneRoute>
    <zoneRoute src="master_zone" dst="pfs_zone" gw_src="master_host" gw_dst="pfs">
      <link_ctn id="service"/></zoneRoute>{routes}
</zone></platform>
"""


def probe_workload(n, direction, size, m):
    """n benchmark clients and m background clients, each a one-host job moving
    ``size`` bytes. SimGrid shares a saturated link equally between parallel
    tasks (measured: an n-host job gets what one one-host job gets), so a client
    is a job, as in the analytic model. Benchmark ids sort first: FCFS gives
    them hosts a*."""
    key = "bytes_to_read" if direction == "read" else "bytes_to_write"
    jobs = [{"id": f"a_bench{i:05d}", "subtime": 0.0, "walltime": -1, "res": 1, "profile": "bench"}
            for i in range(n)]
    jobs += [{"id": f"b_background{i:05d}", "subtime": 0.0, "walltime": -1, "res": 1, "profile": "background"}
             for i in range(m)]
    profiles = {"bench": {"type": "parallel_homogeneous_pfs", key: size},
                "background": {"type": "parallel_homogeneous_pfs", "bytes_to_write": size}}
    return {"nb_res": n + m, "jobs": jobs, "profiles": profiles}


def simulate_run(twin, run, workdir):
    """The benchmark's bandwidth (bytes/s) for one run, from the embedded engine."""
    from batio import engines
    from batio.resolve import resolve
    n = int(run["clients"])
    limit = twin.client_limits[run["config"]]
    m = int(twin.background_clients(run["background"]))
    per_background = run["background"] / m if m else 0.0
    size = float(twin.predict(pd.DataFrame([run]))[0]) * BENCH_SECONDS / n
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "probe.xml").write_text(probe_platform(n, limit, m, per_background, twin.curve))
    (workdir / "probe.json").write_text(json.dumps(probe_workload(n, run["direction"], size, m)))
    engines.run(resolve("fcfs", {}, str(workdir / "probe.xml"), [str(workdir / "probe.json")], workdir / "out").spec)
    jobs = pd.read_csv(workdir / "out_jobs.csv")
    bench = jobs[jobs["job_id"].astype(str).str.startswith("a_bench")]
    if len(bench) != n or not (pd.to_numeric(bench["allocated_resources"]) < n).all():
        raise EngineError(f"the benchmark's clients did not all run on their own hosts a0..a{n - 1}")
    return n * size / float(bench["finish_time"].max() - bench["starting_time"].min())


def engine_check(twins, runs, sample=8, seed=0, max_hosts=2600):
    """For ``sample`` runs (at most ``max_hosts`` clients in all, one per
    configuration drawn at random), the analytic and the engine's bandwidth and
    their gap in %. A run of 512 clients takes seconds, 2,248 about 40 s: the
    cost grows faster than the clients."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    sizes: list[tuple[int, int, int]]
    candidates, sizes = [], []
    for fs, twin in twins.items():
        mine = runs[(runs["file_system"] == fs) & runs["config"].isin(list(twin.client_limits))]
        m = twin.background_clients(mine["background"])
        candidates.append(mine[(mine["clients"] + m) <= max_hosts].assign(twin_fs=fs))
        sizes += zip(mine["clients"] + m, mine["clients"], m)
    pool = pd.concat(candidates, ignore_index=True)
    if pool.empty:
        _, n, m = min(sizes, default=(0, 0, 0))
        log.warning("engine check: compared nothing: %s", "no run is of a fitted configuration" if not sizes else
                    f"no run of a fitted configuration has at most {max_hosts} clients with its background clients "
                    f"(the smallest has {int(n)} + {int(m)})")
        return pd.DataFrame(rows)
    # One run per configuration (shuffled), then ``sample`` of those.
    picked = pool.sample(frac=1, random_state=rng).drop_duplicates("config")
    picked = picked.head(sample)
    with tempfile.TemporaryDirectory() as workdir:
        for i, (_, run) in enumerate(picked.iterrows()):
            twin = twins[run["twin_fs"]]
            analytic = float(twin.predict(pd.DataFrame([run]))[0])
            engine = simulate_run(twin, run, Path(workdir) / str(i))
            rows.append({"line": int(run["line"]), "config": run["config"], "clients": int(run["clients"]),
                         "background_clients": int(twin.background_clients(run["background"])),
                         "background_GiBps": run["background"] / 2 ** 30, "analytic_MiBps": analytic / 2 ** 20,
                         "engine_MiBps": engine / 2 ** 20, "gap_percent": 100 * (engine / analytic - 1)})
    return pd.DataFrame(rows)
